//! The pane commands of the simulated shared database (the `cluster` scenario): the
//! `pane_commands` table as PostgreSQL keeps it (`shell/src/server/pgstore/pane_commands.rs`),
//! behind the server's own [`PaneQueue`]. Deadlines are on the database's clock (simulated
//! time); a claim takes a pending command before its deadline, once; a withdraw refuses a
//! pending one. A host cut off from the database gets errors, and a wake-up may be lost (an
//! executor also looks every second), as a `NOTIFY` may.

use super::events::SimEvents;
use super::{sim_now, SimWorld};
use crate::rng::Rng;
use headspace::server::pane_queue::{Look, PaneCommand, PaneQueue, Signed};
use headspace::server::store::{BoxFuture, StoreError};
use headspace_core::cluster::pane_commands::{CommandState, PaneCommandKind, CLAIM_WITHIN_MS};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// One row.
#[derive(Clone, Debug)]
struct Row {
    command: PaneCommand,
    machine: String,
    state: CommandState,
    result: Option<Value>,
    deadline_ms: i64,
}

/// The table, and what it went through.
pub struct Table {
    rows: BTreeMap<i64, Row>,
    next_id: i64,
    wakes: BTreeMap<String, Arc<Notify>>,
    rng: Rng,
    /// The chance that a wake-up is lost.
    lose_wakes: f64,
    /// False once the liveness phase starts: wake-ups are then never lost.
    pub hostile: bool,
    /// Commands written (pending or refused at once), taken, and wake-ups lost.
    pub submitted: u64,
    /// Commands an executor took.
    pub taken: u64,
    /// Wake-ups lost.
    pub wakes_lost: u64,
}

/// The shared table: cheap to clone, one per run.
#[derive(Clone)]
pub struct SimPaneQueue(Arc<Mutex<Table>>);

impl SimPaneQueue {
    /// An empty table whose wake-ups are lost with chance `lose_wakes` while hostile.
    pub fn new(rng: Rng, lose_wakes: f64) -> SimPaneQueue {
        SimPaneQueue(Arc::new(Mutex::new(Table {
            rows: BTreeMap::new(),
            next_id: 1,
            wakes: BTreeMap::new(),
            rng,
            lose_wakes,
            hostile: true,
            submitted: 0,
            taken: 0,
            wakes_lost: 0,
        })))
    }

    /// The table, locked.
    pub fn lock(&self) -> MutexGuard<'_, Table> {
        self.0.lock().expect("pane command table")
    }

    /// `host`'s connection to the table, which fails while `reach` says the host cannot
    /// reach the database.
    pub fn link(&self, reach: Reach) -> QueueLink {
        QueueLink {
            queue: self.clone(),
            reach,
        }
    }
}

/// How a host reaches the database.
#[derive(Clone)]
pub enum Reach {
    /// An edge: through its world's store, down during its outages.
    Edge(SimWorld),
    /// A hub: cut off during its windows in the events table.
    Hub(SimEvents, &'static str),
}

/// One host's connection to the shared table.
#[derive(Clone)]
pub struct QueueLink {
    queue: SimPaneQueue,
    reach: Reach,
}

/// Milliseconds on the database's clock.
fn db_now() -> i64 {
    sim_now().millis()
}

impl QueueLink {
    /// The table, when this host reaches the database now.
    fn table(&self) -> Result<MutexGuard<'_, Table>, StoreError> {
        let down = match &self.reach {
            Reach::Edge(world) => world.lock().down(sim_now()),
            Reach::Hub(events, hub) => events.is_cut_off(hub),
        };
        if down {
            return Err(StoreError::Unavailable("simulated outage".into()));
        }
        Ok(self.queue.lock())
    }

    fn insert(
        &self,
        machine: &str,
        command: PaneCommand,
        state: CommandState,
        result: Option<Value>,
        deadline_ms: i64,
    ) -> Result<i64, StoreError> {
        let mut t = self.table()?;
        let id = t.next_id;
        t.next_id += 1;
        t.submitted += 1;
        t.rows.insert(
            id,
            Row {
                command: PaneCommand { id, ..command },
                machine: machine.to_string(),
                state,
                result,
                deadline_ms,
            },
        );
        if state == CommandState::Pending {
            let lost = t.hostile && {
                let p = t.lose_wakes;
                t.rng.chance(p)
            };
            if lost {
                t.wakes_lost += 1;
            } else if let Some(w) = t.wakes.get(machine) {
                w.notify_one();
            }
        }
        Ok(id)
    }
}

/// The command a new row holds (its id is given when it is inserted).
fn row_command(
    agent_id: u64,
    kind: PaneCommandKind,
    body: &Value,
    signed: Option<&Signed>,
) -> PaneCommand {
    PaneCommand {
        id: 0,
        agent_id,
        kind,
        body: body.clone(),
        envelope: signed.map(|s| s.envelope.clone()),
        signature: signed.map(|s| s.signature.clone()),
        signer: signed.map(|s| s.signer.clone()),
    }
}

fn ready<'a, T: Send + 'a>(v: T) -> BoxFuture<'a, T> {
    Box::pin(async move { v })
}

impl PaneQueue for QueueLink {
    fn submit<'a>(
        &'a self,
        machine: &'a str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &'a Value,
        signed: Option<&'a Signed>,
    ) -> BoxFuture<'a, Result<i64, StoreError>> {
        let command = row_command(agent_id, kind, body, signed);
        let deadline = db_now() + CLAIM_WITHIN_MS;
        ready(self.insert(machine, command, CommandState::Pending, None, deadline))
    }

    fn refuse<'a>(
        &'a self,
        machine: &'a str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &'a Value,
        result: &'a Value,
    ) -> BoxFuture<'a, Result<i64, StoreError>> {
        let command = row_command(agent_id, kind, body, None);
        let refused = CommandState::Refused;
        ready(self.insert(machine, command, refused, Some(result.clone()), db_now()))
    }

    fn claim<'a>(
        &'a self,
        machine: &'a str,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<PaneCommand>, StoreError>> {
        let now = db_now();
        let taken = self.table().map(|mut t| {
            let mut taken = Vec::new();
            for row in t.rows.values_mut() {
                if taken.len() as i64 >= limit {
                    break;
                }
                if row.machine == machine
                    && row.state == CommandState::Pending
                    && row.deadline_ms > now
                {
                    row.state = CommandState::Running;
                    taken.push(row.command.clone());
                }
            }
            t.taken += taken.len() as u64;
            taken
        });
        ready(taken)
    }

    fn finish<'a>(&'a self, id: i64, result: &'a Value) -> BoxFuture<'a, Result<(), StoreError>> {
        let done = self.table().map(|mut t| {
            if let Some(row) = t.rows.get_mut(&id) {
                if row.state == CommandState::Running {
                    row.state = CommandState::Done;
                    row.result = Some(result.clone());
                }
            }
        });
        ready(done)
    }

    fn look(&self, id: i64) -> BoxFuture<'_, Result<Option<Look>, StoreError>> {
        let now = db_now();
        let look = self.table().map(|t| {
            t.rows
                .get(&id)
                .map(|r| (r.state, r.result.clone(), now - r.deadline_ms))
        });
        ready(look)
    }

    fn withdraw(&self, id: i64) -> BoxFuture<'_, Result<bool, StoreError>> {
        let withdrawn = self.table().map(|mut t| match t.rows.get_mut(&id) {
            Some(row) if row.state == CommandState::Pending => {
                row.state = CommandState::Refused;
                true
            }
            _ => false,
        });
        ready(withdrawn)
    }

    fn prune(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        // A run is far shorter than the day a row is kept.
        ready(self.table().map(|_| 0))
    }

    fn wake_for(&self, machine: &str) -> Arc<Notify> {
        let wake = self
            .queue
            .lock()
            .wakes
            .entry(machine.to_string())
            .or_insert_with(|| Arc::new(Notify::new()))
            .clone();
        // Once at the start, as a listening connection does: what came while no one
        // listened is looked at.
        wake.notify_one();
        wake
    }
}
