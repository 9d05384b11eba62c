//! The simulated store: the core's writes into an in-memory store, with the run's faults
//! (failed commits, outages) and the checker looking at every commit.

use super::{sim_now, SimWorld};
use headspace::server::store::{BoxFuture, Store, StoreError, Waited};
use headspace_core::model::{Snapshot, TurnRow};
use headspace_core::view::AgentView;
use headspace_core::{Event, Write};
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
        if self.lock().edge.is_some() {
            return Box::pin(self.transact(writes, &[]));
        }
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

    fn apply_announcing<'a>(
        &'a self,
        writes: &'a [Write],
        events: &'a [&'a Event],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        if self.lock().edge.is_some() {
            Box::pin(self.transact(writes, events))
        } else {
            self.apply(writes)
        }
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
        // A slow store: the rows come late (the writer commits nothing meanwhile, so they are
        // as they were asked for).
        let late = if s.hostile && s.faults.slow_loads_ms > 0 {
            let max = s.faults.slow_loads_ms;
            s.rng.range(0, max)
        } else {
            0
        };
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(late)).await;
            r
        })
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
    ) -> BoxFuture<'_, Result<Vec<headspace_core::usage::step::StepRow>, StoreError>> {
        let r = self.lock().store.steps_of(agent_id, from, until);
        Box::pin(async move { Ok(r) })
    }

    fn usage_rows(
        &self,
        agent_id: u64,
        from: Option<headspace_core::Timestamp>,
        until: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<headspace_core::usage::sum::UsageRow>, StoreError>> {
        let r = self.lock().store.usage_of(agent_id, from, until);
        Box::pin(async move { Ok(r) })
    }

    fn current_steps(
        &self,
    ) -> BoxFuture<
        '_,
        Result<std::collections::BTreeMap<u64, headspace_core::usage::step::StepRow>, StoreError>,
    > {
        let r = self.lock().store.current_steps();
        Box::pin(async move { Ok(r) })
    }

    fn usage(
        &self,
        by: headspace_core::usage::sum::UsageBy,
        agent_id: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<headspace_core::usage::sum::ModelUsage>, StoreError>> {
        let r = self.lock().store.usage_by(by, agent_id);
        Box::pin(async move { Ok(r) })
    }

    fn machines(
        &self,
    ) -> BoxFuture<'_, Result<Vec<headspace::server::machines::MachineRow>, StoreError>> {
        // One server writes this store: it is the only machine, and lists none.
        Box::pin(async { Ok(Vec::new()) })
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

    fn rename(
        &self,
        agent_id: u64,
        name: Option<String>,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let r = self.lock().store.rename(agent_id, name);
        Box::pin(async move { Ok(r) })
    }

    fn named<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(headspace_core::model::AgentRow, String)>, StoreError>> {
        let r = self
            .lock()
            .store
            .agents()
            .filter(|a| headspace_core::view::names(a, reference))
            .map(|a| (a.clone(), String::new()))
            .collect();
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

impl SimWorld {
    /// An edge's transaction on the shared database: its events take their ids when it
    /// inserts them, and it commits after a random delay (another edge may commit later ids
    /// first), or fails and rolls back writes and events together (an outage that began
    /// meanwhile, a failed commit). An edge that dies before the commit rolls it back too:
    /// this future is dropped, and the ids it took are never seen.
    async fn transact(&self, writes: &[Write], events: &[&Event]) -> Result<(), StoreError> {
        let (link, delay) = {
            let mut s = self.lock();
            if s.down(sim_now()) {
                return Err(unavailable());
            }
            let link = s.edge.clone().expect("an edge's world");
            let most = if s.hostile { link.commit_delay_ms } else { 20 };
            let delay = s.rng.range(0, most + 1);
            (link, delay)
        };
        let ids = link.events.take_ids(events.len());
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        let now = sim_now();
        let mut s = self.lock();
        let failed = s.down(now)
            || s.hostile && {
                let p = s.faults.store_fail;
                s.rng.chance(p)
            };
        if failed {
            link.events.roll_back(&ids);
            return Err(StoreError::Database("simulated commit failure".into()));
        }
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
        let since_start = (now.millis() - super::EPOCH_MS).max(0) as u64;
        link.events.commit(link.machine, &ids, events, since_start);
        Ok(())
    }
}
