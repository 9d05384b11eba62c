//! What a hub reads of the agents in the `cluster` scenario: every edge's rows, as the shared
//! database holds them (each view names its machine), and the machines' heartbeats. It is the
//! hub's store, so its routes resolve an agent anywhere and forward a command for its pane
//! through the shared pane-command table to the machine that holds it. Reads fail while the
//! hub is cut off from the database; the hub writes nothing.

use super::events::SimEvents;
use super::{sim_now, SimWorld};
use headspace::server::machines::MachineRow;
use headspace::server::store::{BoxFuture, Store, StoreError, Waited};
use headspace_core::cluster::machines::is_online;
use headspace_core::model::{Snapshot, TurnRow};
use headspace_core::usage::step::StepRow;
use headspace_core::usage::sum::{sum_by_model, ModelUsage, UsageBy, UsageRow};
use headspace_core::view::AgentView;
use headspace_core::{Timestamp, Write};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Each machine's last heartbeat (epoch ms), as the `machines` table holds it.
#[derive(Clone, Default)]
pub struct Heartbeats(Arc<Mutex<BTreeMap<String, (u16, i64)>>>);

impl Heartbeats {
    /// Machine `name` (id `id`) reported at `at_ms`.
    pub fn beat(&self, name: &str, id: u16, at_ms: i64) {
        self.0
            .lock()
            .expect("heartbeats")
            .insert(name.to_string(), (id, at_ms));
    }

    /// The machines as `GET /api/machines` reads them at `now_ms`.
    pub fn rows(&self, now_ms: i64) -> Vec<MachineRow> {
        self.0
            .lock()
            .expect("heartbeats")
            .iter()
            .map(|(name, (id, at))| MachineRow {
                name: name.clone(),
                id: *id,
                last_seen_ms: *at,
                online: is_online(*at, now_ms),
                version: String::new(),
                agents: 0,
            })
            .collect()
    }
}

/// A hub's view of the shared database.
#[derive(Clone)]
pub struct Directory {
    /// The hub it serves (its cut-off windows).
    pub hub: &'static str,
    /// The events table (which knows the hub's windows).
    pub events: SimEvents,
    /// Each edge's machine name and rows.
    pub edges: Vec<(&'static str, SimWorld)>,
    /// The machines' heartbeats.
    pub heartbeats: Heartbeats,
}

fn unavailable() -> StoreError {
    StoreError::Unavailable("simulated outage".into())
}

impl Directory {
    fn reachable(&self) -> Result<(), StoreError> {
        if self.events.is_cut_off(self.hub) {
            Err(unavailable())
        } else {
            Ok(())
        }
    }

    /// The agent's view, named with its machine, and the edge that holds it.
    async fn find(&self, agent_id: u64) -> Result<Option<(AgentView, &SimWorld)>, StoreError> {
        self.reachable()?;
        for (machine, world) in &self.edges {
            if let Some(mut v) = world.lock().store.agent_view(agent_id) {
                v.machine = machine.to_string();
                return Ok(Some((v, world)));
            }
        }
        Ok(None)
    }
}

fn refused<'a, T: Send + 'a>(what: &str) -> BoxFuture<'a, Result<T, StoreError>> {
    let e = StoreError::Database(format!("a hub does not {what}"));
    Box::pin(async move { Err(e) })
}

impl Store for Directory {
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        let r = self.reachable();
        Box::pin(async move { r })
    }

    fn apply<'a>(&'a self, _writes: &'a [Write]) -> BoxFuture<'a, Result<(), StoreError>> {
        refused("write agents' rows")
    }

    fn snapshot(&self) -> BoxFuture<'_, Result<Snapshot, StoreError>> {
        // A hub runs no core: it restores nothing.
        Box::pin(async { Ok(Snapshot::default()) })
    }

    fn load_agents<'a>(&'a self, _ids: &'a [u64]) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
        Box::pin(async { Ok(Snapshot::default()) })
    }

    fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentView>, StoreError>> {
        Box::pin(async move {
            self.reachable()?;
            let mut all = Vec::new();
            for (machine, world) in &self.edges {
                let s = world.lock();
                all.extend(s.store.agents().filter_map(|a| {
                    let mut v = s.store.agent_view(a.id)?;
                    v.machine = machine.to_string();
                    Some(v)
                }));
            }
            Ok(all)
        })
    }

    fn agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>> {
        Box::pin(async move { Ok(self.find(agent_id).await?.map(|(v, _)| v)) })
    }

    fn panes(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        // A hub holds no pane.
        Box::pin(async { Ok(Vec::new()) })
    }

    fn rename(
        &self,
        agent_id: u64,
        name: Option<String>,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            Ok(match self.find(agent_id).await? {
                Some((_, world)) => world.lock().store.rename(agent_id, name),
                None => false,
            })
        })
    }

    fn named<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(headspace_core::model::AgentRow, String)>, StoreError>> {
        Box::pin(async move {
            self.reachable()?;
            Ok(self
                .edges
                .iter()
                .flat_map(|(machine, w)| {
                    w.lock()
                        .store
                        .agents()
                        .filter(|a| headspace_core::view::names(a, reference))
                        .map(|a| (a.clone(), machine.to_string()))
                        .collect::<Vec<_>>()
                })
                .collect())
        })
    }

    fn with_reconcile_lock<'a>(
        &'a self,
        _agent_id: u64,
        f: BoxFuture<'a, Waited>,
    ) -> BoxFuture<'a, Result<Option<Waited>, StoreError>> {
        // A hub reconciles nothing itself (the edge holding the pane does, when forwarded).
        Box::pin(async move { Ok(Some(f.await)) })
    }

    fn turns(
        &self,
        agent_id: u64,
        after: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        Box::pin(async move {
            match self.find(agent_id).await? {
                Some((_, world)) => world.turns(agent_id, after, limit).await,
                None => Ok(Vec::new()),
            }
        })
    }

    fn steps(
        &self,
        agent_id: u64,
        from: Option<Timestamp>,
        until: Option<Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<StepRow>, StoreError>> {
        Box::pin(async move {
            Ok(match self.find(agent_id).await? {
                Some((_, world)) => world.lock().store.steps_of(agent_id, from, until),
                None => Vec::new(),
            })
        })
    }

    fn usage_rows(
        &self,
        agent_id: u64,
        from: Option<Timestamp>,
        until: Option<Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<UsageRow>, StoreError>> {
        Box::pin(async move {
            Ok(match self.find(agent_id).await? {
                Some((_, world)) => world.lock().store.usage_of(agent_id, from, until),
                None => Vec::new(),
            })
        })
    }

    fn current_steps(&self) -> BoxFuture<'_, Result<BTreeMap<u64, StepRow>, StoreError>> {
        Box::pin(async move {
            self.reachable()?;
            let mut all = BTreeMap::new();
            for (_, world) in &self.edges {
                all.extend(world.lock().store.current_steps());
            }
            Ok(all)
        })
    }

    fn usage(
        &self,
        by: UsageBy,
        agent_id: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<ModelUsage>, StoreError>> {
        Box::pin(async move {
            self.reachable()?;
            // The shared database sums every machine's rows at once, as PostgreSQL does.
            let mut rows = Vec::new();
            let mut projects = BTreeMap::new();
            for (_, world) in &self.edges {
                let s = world.lock();
                rows.extend(
                    s.store
                        .usage()
                        .filter(|u| agent_id.is_none_or(|a| u.agent_id == a))
                        .cloned(),
                );
                projects.extend(s.store.agents().map(|a| (a.id, a.project.clone())));
            }
            Ok(sum_by_model(&rows, by, |a| {
                projects.get(&a).cloned().flatten()
            }))
        })
    }

    fn machines(&self) -> BoxFuture<'_, Result<Vec<MachineRow>, StoreError>> {
        let rows = self
            .reachable()
            .map(|()| self.heartbeats.rows(sim_now().millis()));
        Box::pin(async move { rows })
    }
}
