//! The store boundary: what the server asks of a durable store ([`Store`]) and how a store
//! fails ([`StoreError`]). PostgreSQL ([`PgStore`](crate::server::pgstore::PgStore)) implements it in
//! production, the simulator's world in memory; both answer with the core's
//! [`AgentView`], whose card the core computes.

use headspace_core::model::{AgentRow, Snapshot, TurnRow};
use headspace_core::transcript::audit::StoredTurn;
use headspace_core::usage::step::StepRow;
use headspace_core::usage::sum::{ModelUsage, UsageBy};
use headspace_core::view::AgentView;
use headspace_core::{Event, Reply, Write};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

/// A boxed future, as the object-safe adapter traits return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a store could not answer. Its text is what the API shows in a 503.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed or refused a statement: its own message (and SQLSTATE).
    #[error("{0}")]
    Database(String),
    /// No connection to the database could be had.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A stored value the server cannot read back (a state or intent it does not know).
    #[error("bad stored value {value:?}: {reason}")]
    BadValue {
        /// The value as stored.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// The database URL does not parse.
    #[error("bad database url: {0}")]
    BadUrl(String),
    /// The connection pool could not be built.
    #[error("{0}")]
    Pool(String),
}

/// How a reconcile that ran under the lock ended.
#[derive(Debug)]
pub enum Waited {
    /// The core answered.
    Reply(Reply),
    /// The core's loop is gone.
    CoreStopped,
    /// The budget ran out; the reconcile goes on behind.
    StillRunning,
}

/// The durable store: applies the core's writes and answers the API's reads.
pub trait Store: Send + Sync {
    /// Checks the store answers.
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Commits a batch of writes in one transaction (idempotent; all or nothing).
    fn apply<'a>(&'a self, writes: &'a [Write]) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Commits writes and the events they cause in one transaction, when the store keeps
    /// events for hubs (an edge's); otherwise the writes alone.
    fn apply_announcing<'a>(
        &'a self,
        writes: &'a [Write],
        events: &'a [&'a Event],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = events;
        self.apply(writes)
    }
    /// Everything the store holds for this machine's core (agents, tasks, turns, offsets).
    fn snapshot(&self) -> BoxFuture<'_, Result<Snapshot, StoreError>>;
    /// What the core rebuilds itself from after a restart: the agents heard of since
    /// `live_since` and not ended whole, the others as dormant rows only
    /// ([`Snapshot::split_dormant`]); every offset. By default from [`Store::snapshot`]; a
    /// store with many agents reads only what it returns.
    fn restore_snapshot(
        &self,
        live_since: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Snapshot, StoreError>> {
        Box::pin(async move { Ok(self.snapshot().await?.split_dormant(live_since)) })
    }
    /// Some agents' rows, tasks and turns (no offsets), for `Input::AgentsLoaded`.
    fn load_agents<'a>(&'a self, ids: &'a [u64]) -> BoxFuture<'a, Result<Snapshot, StoreError>>;
    /// All agents with what their cards show (the facts [`AgentView::from_rows`] defines).
    fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentView>, StoreError>>;
    /// The folders agents worked in, each with its agent's machine, once: what orchestration
    /// looks through. By default from [`Store::agents`]; a store with many agents reads only
    /// the folders (a start-up must not build every agent's card).
    fn agent_folders(&self) -> BoxFuture<'_, Result<Vec<(String, String)>, StoreError>> {
        Box::pin(async move {
            let mut folders: Vec<(String, String)> = self
                .agents()
                .await?
                .into_iter()
                .filter_map(|v| Some((v.machine, v.agent.cwd?)))
                .collect();
            folders.sort();
            folders.dedup();
            Ok(folders)
        })
    }
    /// One agent by id.
    fn agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>>;
    /// One agent by id, as [`Store::agent`] but with `turn_count` 0: counting an agent's
    /// turns reads all of them, and what reads a card after every event (the notices) never
    /// looks at the count.
    fn agent_uncounted(
        &self,
        agent_id: u64,
    ) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>> {
        self.agent(agent_id)
    }
    /// Gives an agent a name (`None` clears it); false when there is no such agent.
    fn rename(
        &self,
        agent_id: u64,
        name: Option<String>,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// The panes of agents still running.
    fn panes(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;
    /// Every agent `reference` names ([`names`](headspace_core::view::names): its id, a
    /// session id current or past, or its pane), each with its machine (empty for this
    /// server's own): what [`resolve_reference`](headspace_core::view::resolve_reference)
    /// chooses from, and what tells a pane held on two machines
    /// ([`ambiguous_pane`](headspace_core::view::ambiguous_pane)).
    fn named<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(AgentRow, String)>, StoreError>>;
    /// Runs `f` holding the agent's store-wide reconcile lock; `None` when another holds it.
    fn with_reconcile_lock<'a>(
        &'a self,
        agent_id: u64,
        f: BoxFuture<'a, Waited>,
    ) -> BoxFuture<'a, Result<Option<Waited>, StoreError>>;
    /// An agent's turns ordered by (timestamp, id), after the turn `after` in that order.
    fn turns(
        &self,
        agent_id: u64,
        after: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>>;
    /// At most `limit` of an agent's turns around one of them, ordered by (timestamp, id):
    /// the `limit / 2` before it, it, and those after; empty when the turn is not the
    /// agent's. What opens a conversation at a search result. By default from [`turns`].
    ///
    /// [`turns`]: Store::turns
    fn turns_around(
        &self,
        agent_id: u64,
        turn_id: u64,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        Box::pin(async move {
            let all = self.turns(agent_id, None, i64::MAX).await?;
            let Some(at) = all.iter().position(|t| t.id == turn_id) else {
                return Ok(Vec::new());
            };
            let limit = limit.max(1) as usize;
            let start = at.saturating_sub(limit / 2);
            Ok(all.into_iter().skip(start).take(limit).collect())
        })
    }
    /// At most `limit` of an agent's turns just before the turn `before` in (timestamp, id)
    /// order, or its newest turns without `before`; ordered by (timestamp, id), oldest first.
    /// What opens a conversation at its end and pages back from there; empty when `before`
    /// is not one of the agent's turns. By default from [`turns`].
    ///
    /// [`turns`]: Store::turns
    fn turns_before(
        &self,
        agent_id: u64,
        before: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        Box::pin(async move {
            let mut all = self.turns(agent_id, None, i64::MAX).await?;
            let end = match before {
                None => all.len(),
                Some(b) => match all.iter().position(|t| t.id == b) {
                    Some(at) => at,
                    None => return Ok(Vec::new()),
                },
            };
            all.truncate(end);
            let start = end.saturating_sub(limit.max(0) as usize);
            Ok(all.split_off(start))
        })
    }
    /// The transcript files (relative to the claude dir) read for an agent's sessions, in
    /// path order, for the audit. By default from the snapshot; a store may answer faster.
    fn agent_files(&self, agent_id: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            let snap = self.snapshot().await?;
            let Some(agent) = snap.agents.iter().find(|a| a.id == agent_id) else {
                return Ok(Vec::new());
            };
            let mut files: Vec<String> = snap
                .offsets
                .iter()
                .filter(|o| {
                    o.session_id == agent.session_id || agent.sessions.contains(&o.session_id)
                })
                .map(|o| o.path.clone())
                .collect();
            files.sort();
            Ok(files)
        })
    }
    /// An agent's steps (tool calls) started in `[from, until)` (either end open when
    /// `None`; steps without a start time only when both are), by start.
    fn steps(
        &self,
        agent_id: u64,
        from: Option<headspace_core::Timestamp>,
        until: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<StepRow>, StoreError>>;
    /// An agent's usage rows written in `[from, until)` (either end open when `None`), by
    /// time then message id.
    fn usage_rows(
        &self,
        agent_id: u64,
        from: Option<headspace_core::Timestamp>,
        until: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<headspace_core::usage::sum::UsageRow>, StoreError>>;
    /// Each agent's current step, by agent ([`headspace_core::usage::step::current_step`] since its
    /// current task's start).
    fn current_steps(&self) -> BoxFuture<'_, Result<BTreeMap<u64, StepRow>, StoreError>>;
    /// Token usage summed by group and model ([`headspace_core::usage::sum::sum_by_model`]),
    /// of one agent or of all.
    fn usage(
        &self,
        by: UsageBy,
        agent_id: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<ModelUsage>, StoreError>>;
    /// Every machine writing into the store: none for a store only one server writes (it
    /// is the only machine).
    fn machines(
        &self,
    ) -> BoxFuture<'_, Result<Vec<crate::server::machines::MachineRow>, StoreError>>;
    /// Every stored turn, under any agent, holding one of these entry uuids (for the audit).
    fn entry_turns<'a>(
        &'a self,
        uuids: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<StoredTurn>, StoreError>> {
        Box::pin(async move {
            let wanted: std::collections::BTreeSet<&str> =
                uuids.iter().map(String::as_str).collect();
            let snap = self.snapshot().await?;
            Ok(snap
                .turns
                .into_iter()
                .filter_map(|t| {
                    let uuid = t.entry_uuid?;
                    wanted.contains(uuid.as_str()).then_some(StoredTurn {
                        turn_id: t.id,
                        agent_id: t.agent_id,
                        entry_uuid: uuid,
                    })
                })
                .collect())
        })
    }
}
