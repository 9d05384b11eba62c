//! What only a store with search indexes and a long memory answers: search, the history of
//! ended agents, and pruning them. PostgreSQL ([`PgStore`](crate::server::pgstore::PgStore))
//! is one; a server without one (the simulation's in-memory store) has no archive, and its
//! routes say so (501) instead of the store pretending.

use crate::server::search::{HistoryAgent, PruneRequest, PrunedAgent, SearchHit, SearchQuery};
use crate::server::store::{BoxFuture, StoreError};
use headspace_core::Timestamp;

/// Search, history and prune over every stored turn and agent.
pub trait Archive: Send + Sync {
    /// The turns matching a search, best first (see [`SearchQuery`]).
    fn search<'a>(
        &'a self,
        query: &'a SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, StoreError>>;
    /// Ended agents, most recently seen first: of one project, of one day (its first
    /// millisecond, UTC), at most `limit`.
    fn history<'a>(
        &'a self,
        project: Option<&'a str>,
        day: Option<Timestamp>,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<HistoryAgent>, StoreError>>;
    /// Deletes (or, dry, lists) ended agents last heard of before a time, with their turns.
    fn prune(&self, request: PruneRequest) -> BoxFuture<'_, Result<Vec<PrunedAgent>, StoreError>>;
}
