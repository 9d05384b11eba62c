//! The store boundary ([`Store`]) on PostgreSQL: each method is the inherent one of the same
//! name, boxed.

use super::PgStore;
use crate::server::archive::Archive;
use crate::server::search::{HistoryAgent, PruneRequest, PrunedAgent, SearchHit, SearchQuery};
use crate::server::store::{BoxFuture, Store, StoreError, Waited};
use headspace_core::model::{AgentRow, Snapshot, TurnRow};
use headspace_core::transcript::audit::StoredTurn;
use headspace_core::usage::step::StepRow;
use headspace_core::usage::sum::{ModelUsage, UsageBy};
use headspace_core::view::AgentView;
use headspace_core::{Event, Write};
use std::collections::BTreeMap;
impl Store for PgStore {
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(PgStore::ping(self))
    }

    fn machines(
        &self,
    ) -> BoxFuture<'_, Result<Vec<crate::server::machines::MachineRow>, StoreError>> {
        Box::pin(PgStore::machines(self))
    }

    fn apply<'a>(&'a self, writes: &'a [Write]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(PgStore::apply(self, writes))
    }

    fn apply_announcing<'a>(
        &'a self,
        writes: &'a [Write],
        events: &'a [&'a Event],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(PgStore::apply_announcing(self, writes, events))
    }

    fn snapshot(&self) -> BoxFuture<'_, Result<Snapshot, StoreError>> {
        Box::pin(PgStore::snapshot(self))
    }

    fn restore_snapshot(
        &self,
        live_since: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Snapshot, StoreError>> {
        Box::pin(PgStore::restore_snapshot(self, live_since))
    }

    fn load_agents<'a>(&'a self, ids: &'a [u64]) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
        Box::pin(PgStore::load_agents(self, ids))
    }

    fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentView>, StoreError>> {
        Box::pin(PgStore::agents(self))
    }

    fn agent_folders(&self) -> BoxFuture<'_, Result<Vec<(String, String)>, StoreError>> {
        Box::pin(PgStore::agent_folders(self))
    }

    fn agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>> {
        Box::pin(PgStore::agent(self, agent_id))
    }

    fn agent_uncounted(
        &self,
        agent_id: u64,
    ) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>> {
        Box::pin(PgStore::agent_uncounted(self, agent_id))
    }

    fn panes(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(PgStore::panes(self))
    }

    fn rename(
        &self,
        agent_id: u64,
        name: Option<String>,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(PgStore::rename(self, agent_id, name))
    }

    fn named<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(AgentRow, String)>, StoreError>> {
        Box::pin(PgStore::named(self, reference))
    }

    fn with_reconcile_lock<'a>(
        &'a self,
        agent_id: u64,
        f: BoxFuture<'a, Waited>,
    ) -> BoxFuture<'a, Result<Option<Waited>, StoreError>> {
        Box::pin(PgStore::with_reconcile_lock(self, agent_id, f))
    }

    fn turns(
        &self,
        agent_id: u64,
        after: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        Box::pin(PgStore::turns(self, agent_id, after, limit))
    }

    fn turns_around(
        &self,
        agent_id: u64,
        turn_id: u64,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        Box::pin(PgStore::turns_around(self, agent_id, turn_id, limit))
    }

    fn turns_before(
        &self,
        agent_id: u64,
        before: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        Box::pin(PgStore::turns_before(self, agent_id, before, limit))
    }

    fn agent_files(&self, agent_id: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(PgStore::agent_files(self, agent_id))
    }

    fn entry_turns<'a>(
        &'a self,
        uuids: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<StoredTurn>, StoreError>> {
        Box::pin(PgStore::entry_turns(self, uuids))
    }

    fn steps(
        &self,
        agent_id: u64,
        from: Option<headspace_core::Timestamp>,
        until: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<StepRow>, StoreError>> {
        Box::pin(PgStore::steps(self, agent_id, from, until))
    }

    fn usage_rows(
        &self,
        agent_id: u64,
        from: Option<headspace_core::Timestamp>,
        until: Option<headspace_core::Timestamp>,
    ) -> BoxFuture<'_, Result<Vec<headspace_core::usage::sum::UsageRow>, StoreError>> {
        Box::pin(PgStore::usage_rows(self, agent_id, from, until))
    }

    fn current_steps(&self) -> BoxFuture<'_, Result<BTreeMap<u64, StepRow>, StoreError>> {
        Box::pin(PgStore::current_steps(self))
    }

    fn usage(
        &self,
        by: UsageBy,
        agent_id: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<ModelUsage>, StoreError>> {
        Box::pin(PgStore::usage(self, by, agent_id))
    }
}

impl Archive for PgStore {
    fn search<'a>(
        &'a self,
        query: &'a SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, StoreError>> {
        Box::pin(PgStore::search(self, query))
    }

    fn history<'a>(
        &'a self,
        project: Option<&'a str>,
        day: Option<headspace_core::Timestamp>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<HistoryAgent>, StoreError>> {
        Box::pin(PgStore::history(self, project, day, limit))
    }

    fn prune(&self, request: PruneRequest) -> BoxFuture<'_, Result<Vec<PrunedAgent>, StoreError>> {
        Box::pin(PgStore::prune(self, request))
    }
}
