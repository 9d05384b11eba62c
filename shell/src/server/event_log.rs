//! The shared events table as a hub's fan-out reads it ([`EventLog`]): PostgreSQL's
//! ([`PgStore`], `pgstore/events.rs`) in production, the simulator's in its multi-machine
//! scenario, so both drive the same fan-out (`fanout.rs`).

use crate::server::pgstore::events::StoredEvent;
use crate::server::pgstore::PgStore;
use crate::server::store::{BoxFuture, StoreError};

/// The events every edge commits, numbered by the sequencer and read by position.
pub trait EventLog: Send + Sync + 'static {
    /// Gives every committed event without a position the next positions, in id order, one
    /// sequencer at a time; returns how many it numbered.
    fn sequence(&self) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// The largest position given (0 when none).
    fn last_pos(&self) -> BoxFuture<'_, Result<i64, StoreError>>;
    /// The sequenced events after position `after`, in position order, at most `limit`.
    fn events_after(
        &self,
        after: i64,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>>;
    /// Deletes sequenced events more than `keep` positions behind the newest; returns how
    /// many went.
    fn prune(&self, keep: i64) -> BoxFuture<'_, Result<u64, StoreError>>;
}

impl EventLog for PgStore {
    fn sequence(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.sequence_events())
    }

    fn last_pos(&self) -> BoxFuture<'_, Result<i64, StoreError>> {
        Box::pin(self.last_event_pos())
    }

    fn events_after(
        &self,
        after: i64,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(PgStore::events_after(self, after, limit))
    }

    fn prune(&self, keep: i64) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.prune_events(keep))
    }
}
