//! The simulated store: the core's writes into an in-memory store, with the run's faults
//! (failed commits, outages) and the checker looking at every commit.

use super::{sim_now, SimWorld};
use headspace::server::store::{BoxFuture, Store, StoreError, Waited};
use headspace_core::model::{Snapshot, TurnRow};
use headspace_core::view::AgentView;
use headspace_core::Write;
use std::collections::BTreeSet;

fn unavailable() -> StoreError {
    StoreError::Unavailable("simulated outage".into())
}

impl Store for SimWorld {
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        let down = self.lock().down(sim_now());
        Box::pin(async move {
            if down {
                Err(unavailable())
            } else {
                Ok(())
            }
        })
    }

    fn apply<'a>(&'a self, writes: &'a [Write]) -> BoxFuture<'a, Result<(), StoreError>> {
        let now = sim_now();
        let mut s = self.lock();
        let result = if s.down(now) {
            Err(unavailable())
        } else if s.hostile && {
            let p = s.faults.store_fail;
            s.rng.chance(p)
        } {
            Err(StoreError::Database("simulated commit failure".into()))
        } else {
            for w in writes {
                s.store.apply(w);
            }
            s.commits += 1;
            let st = &mut *s;
            st.checker.after_commit(now, &st.store, writes);
            let has_turn = writes.iter().any(|w| matches!(w, Write::Turn(_)));
            if has_turn && s.hostile && {
                let p = s.faults.crash_after_turn;
                s.rng.chance(p)
            } {
                s.crash_requested = true;
            }
            Ok(())
        };
        Box::pin(async move { result })
    }

    fn snapshot(&self) -> BoxFuture<'_, Result<Snapshot, StoreError>> {
        let mut s = self.lock();
        let r = if s.down(sim_now()) {
            Err(unavailable())
        } else {
            Ok(s.store.snapshot())
        };
        Box::pin(async move { r })
    }

    fn load_agents<'a>(&'a self, ids: &'a [u64]) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
        let mut s = self.lock();
        let r = if s.down(sim_now()) {
            Err(unavailable())
        } else {
            Ok(s.store.load_agents(ids))
        };
        Box::pin(async move { r })
    }

    fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentView>, StoreError>> {
        let s = self.lock();
        let r = s
            .store
            .agents()
            .filter_map(|a| s.store.agent_view(a.id))
            .collect();
        Box::pin(async move { Ok(r) })
    }

    fn agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>> {
        let r = self.lock().store.agent_view(agent_id);
        Box::pin(async move { Ok(r) })
    }

    fn steps(
        &self,
        agent_id: u64,
        from: Option<headspace_core::Timestamp>,
        until: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<headspace_core::step::StepRow>, StoreError>> {
        let r = self.lock().store.steps_of(agent_id, from, until);
        Box::pin(async move { Ok(r) })
    }

    fn usage_rows(
        &self,
        agent_id: u64,
        from: Option<headspace_core::Timestamp>,
        until: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<headspace_core::usage_sum::UsageRow>, StoreError>> {
        let r = self.lock().store.usage_of(agent_id, from, until);
        Box::pin(async move { Ok(r) })
    }

    fn current_steps(
        &self,
    ) -> BoxFuture<
        '_,
        Result<std::collections::BTreeMap<u64, headspace_core::step::StepRow>, StoreError>,
    > {
        let r = self.lock().store.current_steps();
        Box::pin(async move { Ok(r) })
    }

    fn usage(
        &self,
        by: headspace_core::usage_sum::UsageBy,
        agent_id: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<headspace_core::usage_sum::ModelUsage>, StoreError>> {
        let r = self.lock().store.usage_by(by, agent_id);
        Box::pin(async move { Ok(r) })
    }

    fn panes(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let s = self.lock();
        let set: BTreeSet<String> = s
            .store
            .agents()
            .filter(|a| !a.ended)
            .filter_map(|a| a.tmux_pane.clone())
            .collect();
        Box::pin(async move { Ok(set.into_iter().collect()) })
    }

    fn resolve<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        let r = self.lock().store.resolve(reference);
        Box::pin(async move { Ok(r) })
    }

    fn with_reconcile_lock<'a>(
        &'a self,
        agent_id: u64,
        f: BoxFuture<'a, Waited>,
    ) -> BoxFuture<'a, Result<Option<Waited>, StoreError>> {
        Box::pin(async move {
            if !self.lock().held_locks.insert(agent_id) {
                return Ok(None);
            }
            let out = f.await;
            self.lock().held_locks.remove(&agent_id);
            Ok(Some(out))
        })
    }

    fn turns(
        &self,
        agent_id: u64,
        after: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        let s = self.lock();
        let mut turns: Vec<TurnRow> = s
            .store
            .turns()
            .filter(|t| t.agent_id == agent_id)
            .cloned()
            .collect();
        turns.sort_by_key(|t| (t.timestamp, t.id));
        if let Some(a) = after {
            if let Some(pos) = turns.iter().position(|t| t.id == a) {
                turns.drain(..=pos);
            }
        }
        turns.truncate(limit.max(0) as usize);
        Box::pin(async move { Ok(turns) })
    }
}
