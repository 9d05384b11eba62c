//! A hub's fan-out (`--role hub`): the events every edge commits into the shared database,
//! numbered by the sequencer and served to this hub's SSE clients under their global
//! positions, so a client may reconnect to any hub with `Last-Event-ID` and miss nothing
//! (docs/multi-machine.md, "Events across processes").
//!
//! Woken by `NOTIFY hs_events` (in production a connection of its own, `pgstore/listen.rs`;
//! in the simulation the simulated store's notifications), and once a second whatever
//! happens (a notification can be lost with its connection). Each round sequences what has
//! committed, then reads every event after the last one it served, in position order; which
//! rows of a page it serves is the core's rule (`headspace_core::cluster::event_feed`). The log is any
//! [`EventLog`]: PostgreSQL, or the simulator's.

use crate::server::event_log::EventLog;
use crate::server::pgstore::events::StoredEvent;
use crate::server::sse::Hub;
use headspace_core::cluster::event_feed::{serve_page, FeedRow};
use headspace_core::Config;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
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

/// A hub fed from the log, holding the last [`RETAINED`] events already committed (so a
/// client reconnecting after this hub restarted, or from another hub, gets what it missed).
/// `config` carries the read rule's settings (the core's).
pub async fn preloaded_hub<L: EventLog>(log: &L, config: &Config) -> Result<Arc<Hub>, String> {
    log.sequence().await.map_err(|e| e.to_string())?;
    let last = log.last_pos().await.map_err(|e| e.to_string())?;
    let from = (last - RETAINED as i64).max(0);
    let hub = Arc::new(Hub::fed(from as u64, RETAINED));
    let newest = round(log, &hub, from, config).await?;
    info!("[FANOUT] serving events from position {from}; the newest is {newest}");
    Ok(hub)
}

/// Starts the fan-out loop: a round whenever `wake` is notified, and every second.
pub fn start<L: EventLog>(log: L, wake: Arc<Notify>, hub: Arc<Hub>, config: Config) {
    tokio::spawn(async move {
        let mut cursor = hub.last_id() as i64;
        let mut pruned = crate::clock::instant();
        let mut failing = false;
        loop {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(POLL_EVERY) => {}
            }
            match round(&log, &hub, cursor, &config).await {
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
            if crate::clock::since(pruned) >= PRUNE_EVERY {
                pruned = crate::clock::instant();
                match log.prune(RETAINED as i64).await {
                    Ok(n) if n > 0 => debug!("[FANOUT] pruned {n} old events"),
                    Ok(_) => {}
                    Err(e) => debug!("[FANOUT] prune failed: {e}"),
                }
            }
        }
    });
}

/// Sequences, then serves every event after `cursor`; returns the new cursor.
async fn round<L: EventLog>(
    log: &L,
    hub: &Hub,
    mut cursor: i64,
    config: &Config,
) -> Result<i64, String> {
    log.sequence().await.map_err(|e| e.to_string())?;
    loop {
        let page = log
            .events_after(cursor, PAGE)
            .await
            .map_err(|e| e.to_string())?;
        let full = page.len() as i64 == PAGE;
        let (c, hole) = serve(hub, &page, cursor, config);
        cursor = c;
        if !full || hole {
            return Ok(cursor);
        }
    }
}

/// Publishes what the core's rule serves of a page, under the ids it gives; returns the
/// cursor after them and whether the page stopped at a hole.
fn serve(hub: &Hub, page: &[StoredEvent], cursor: i64, config: &Config) -> (i64, bool) {
    let rows: Vec<FeedRow> = page
        .iter()
        .map(|e| FeedRow {
            id: e.id,
            pos: e.pos,
        })
        .collect();
    let served = serve_page(config, cursor, &rows);
    for (e, id) in page.iter().zip(&served.ids) {
        hub.publish_at(*id as u64, &e.kind, &e.data);
    }
    (served.cursor, served.hole)
}
