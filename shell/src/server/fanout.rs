//! A hub's fan-out (`--role hub`): the events every edge commits into the shared database,
//! numbered by the sequencer and served to this hub's SSE clients under their global
//! positions, so a client may reconnect to any hub with `Last-Event-ID` and miss nothing
//! (docs/multi-machine.md, "Events across processes").
//!
//! Woken by `NOTIFY hs_events` on a connection of its own, and once a second whatever
//! happens (a notification can be lost with its connection). Each round sequences what has
//! committed, then reads every event after the last one it served, in position order.

use crate::server::pgstore::events::{StoredEvent, CHANNEL};
use crate::server::pgstore::listen::wake_on;
use crate::server::pgstore::PgStore;
use crate::server::sse::Hub;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, warn};

/// Events read per query.
const PAGE: i64 = 1_000;
/// How long the fan-out sleeps when no notification comes.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// Events kept in the database behind the newest: what a reconnecting client can be served
/// from. The hubs' rings hold as many.
pub const RETAINED: usize = 65_536;
/// How often a hub prunes events older than [`RETAINED`].
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// A hub fed from the database, holding the last [`RETAINED`] events already committed (so a
/// client reconnecting after this hub restarted, or from another hub, gets what it missed).
pub async fn preloaded_hub(store: &PgStore) -> Result<Arc<Hub>, String> {
    store.sequence_events().await.map_err(|e| e.to_string())?;
    let last = store.last_event_pos().await.map_err(|e| e.to_string())?;
    let from = (last - RETAINED as i64).max(0);
    let hub = Arc::new(Hub::fed(from as u64, RETAINED));
    let newest = round(store, &hub, from).await?;
    info!("[FANOUT] serving events from position {from}; the newest is {newest}");
    Ok(hub)
}

/// Starts the fan-out loop and its listener.
pub fn start(store: PgStore, url: String, hub: Arc<Hub>) {
    let wake = wake_on(url, CHANNEL, None);
    tokio::spawn(async move {
        let mut cursor = hub.last_id() as i64;
        let mut pruned = tokio::time::Instant::now();
        let mut failing = false;
        loop {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(POLL_EVERY) => {}
            }
            match round(&store, &hub, cursor).await {
                Ok(c) => {
                    cursor = c;
                    if failing {
                        info!("[FANOUT] the database is back; serving from position {cursor}");
                    }
                    failing = false;
                }
                Err(e) if !failing => {
                    failing = true;
                    warn!("[FANOUT] cannot read events (retrying every second): {e}");
                }
                Err(_) => {}
            }
            if pruned.elapsed() >= PRUNE_EVERY {
                pruned = tokio::time::Instant::now();
                match store.prune_events(RETAINED as i64).await {
                    Ok(n) if n > 0 => debug!("[FANOUT] pruned {n} old events"),
                    Ok(_) => {}
                    Err(e) => debug!("[FANOUT] prune failed: {e}"),
                }
            }
        }
    });
}

/// Sequences, then serves every event after `cursor`; returns the new cursor.
async fn round(store: &PgStore, hub: &Hub, mut cursor: i64) -> Result<i64, String> {
    store.sequence_events().await.map_err(|e| e.to_string())?;
    loop {
        let page = store
            .events_after(cursor, PAGE)
            .await
            .map_err(|e| e.to_string())?;
        let full = page.len() as i64 == PAGE;
        if let Some(c) = serve(hub, &page) {
            cursor = c;
        }
        if !full {
            return Ok(cursor);
        }
    }
}

/// Publishes a page under its positions; returns the last position, if any.
fn serve(hub: &Hub, page: &[StoredEvent]) -> Option<i64> {
    for e in page {
        hub.publish_at(e.pos as u64, &e.kind, &e.data);
    }
    page.last().map(|e| e.pos)
}
