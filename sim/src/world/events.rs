//! The simulated database's shared `events` table, as PostgreSQL behaves for it
//! (`shell/src/server/pgstore/events.rs`, docs/multi-machine.md "Events across processes"):
//! an edge's transaction takes its events' ids when it inserts them, and the rows become
//! visible only when it commits — later, by a random delay, so ids commit out of order
//! across edges — or never, when the commit fails or the edge dies first (the ids are burnt,
//! as a sequence's are). The sequencer gives visible rows without a position the next
//! positions in id order, one at a time; readers read by position. Each commit notifies the
//! hubs listening, and a notification may be lost or late (drawn from the seed).

use crate::rng::Rng;
use headspace::server::event_log::EventLog;
use headspace::server::pgstore::events::StoredEvent;
use headspace::server::store::{BoxFuture, StoreError};
use headspace_core::Event;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// What ties an edge's world to the shared table.
#[derive(Clone)]
pub struct EdgeLink {
    /// The edge's machine name (the rows' `machine`).
    pub machine: &'static str,
    /// The shared table.
    pub events: SimEvents,
    /// A transaction commits up to this many ms after it took its ids.
    pub commit_delay_ms: u64,
}

/// One row of the table.
#[derive(Clone, Debug)]
struct Row {
    id: i64,
    pos: Option<i64>,
    machine: String,
    kind: String,
    data: serde_json::Value,
}

/// How notifications fare.
#[derive(Clone, Debug, Default)]
pub struct NotifyFaults {
    /// Probability a notification is lost.
    pub lost: f64,
    /// Probability a notification is late.
    pub late: f64,
    /// A late notification comes up to this many ms after its commit.
    pub late_ms: u64,
}

/// The table, its listeners and its counters.
pub struct Table {
    next_id: i64,
    /// Committed rows, in commit order.
    rows: Vec<Row>,
    last_pos: i64,
    listeners: BTreeMap<String, Arc<Notify>>,
    late: Vec<(u64, String)>,
    rng: Rng,
    faults: NotifyFaults,
    /// False once the liveness phase starts: notifications are then delivered on time.
    pub hostile: bool,
    /// Commits whose smallest id was below an id already visible: out of id order.
    pub out_of_order: u64,
    /// Event ids taken by transactions that never committed.
    pub burnt: u64,
    /// Notifications lost, and delivered late.
    pub lost: u64,
    /// Notifications delivered late.
    pub delayed: u64,
    /// Each hub's outages (sim ms from..to): the database unreachable for it alone.
    cut_off: BTreeMap<String, Vec<(u64, u64)>>,
    /// Reads a hub tried while cut off (each failed).
    pub failed_reads: u64,
}

impl Table {
    /// Whether `hub` cannot reach the database at `now_ms` (only while hostile).
    fn is_cut_off(&self, hub: &str, now_ms: u64) -> bool {
        self.hostile
            && self
                .cut_off
                .get(hub)
                .is_some_and(|w| w.iter().any(|(a, b)| (*a..*b).contains(&now_ms)))
    }
}

/// The shared table: cheap to clone, one per run.
#[derive(Clone)]
pub struct SimEvents(Arc<Mutex<Table>>);

impl SimEvents {
    /// An empty table whose notifications fare as `faults` say, drawn from `rng`.
    pub fn new(rng: Rng, faults: NotifyFaults) -> SimEvents {
        SimEvents(Arc::new(Mutex::new(Table {
            next_id: 1,
            rows: Vec::new(),
            last_pos: 0,
            listeners: BTreeMap::new(),
            late: Vec::new(),
            rng,
            faults,
            hostile: true,
            out_of_order: 0,
            burnt: 0,
            lost: 0,
            delayed: 0,
            cut_off: BTreeMap::new(),
            failed_reads: 0,
        })))
    }

    /// The table, locked (one thread; never contended).
    pub fn lock(&self) -> MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Inserts `n` events in a transaction: their ids, taken now (`bigserial`).
    pub fn take_ids(&self, n: usize) -> Vec<i64> {
        let mut t = self.lock();
        let first = t.next_id;
        t.next_id += n as i64;
        (first..first + n as i64).collect()
    }

    /// The transaction that took `ids` rolled back: they are never seen.
    pub fn roll_back(&self, ids: &[i64]) {
        self.lock().burnt += ids.len() as u64;
    }

    /// The transaction that took `ids` for `events` commits: the rows become visible and the
    /// listening hubs are notified (some notifications lost or late).
    pub fn commit(&self, machine: &str, ids: &[i64], events: &[&Event], now_ms: u64) {
        let mut t = self.lock();
        if ids.is_empty() {
            return;
        }
        let newest = t.rows.iter().map(|r| r.id).max().unwrap_or(0);
        if ids[0] < newest {
            t.out_of_order += 1;
        }
        for (id, e) in ids.iter().zip(events) {
            t.rows.push(Row {
                id: *id,
                pos: None,
                machine: machine.to_string(),
                kind: e.name.to_string(),
                data: e.data.to_value(),
            });
        }
        let hubs: Vec<String> = t.listeners.keys().cloned().collect();
        for hub in hubs {
            let f = t.faults.clone();
            if t.is_cut_off(&hub, now_ms) {
                // Its listening connection is down with the rest of its access.
                t.lost += 1;
            } else if t.hostile && t.rng.chance(f.lost) {
                t.lost += 1;
            } else if t.hostile && t.rng.chance(f.late) {
                let due = now_ms + t.rng.range(1, f.late_ms.max(1) + 1);
                t.delayed += 1;
                t.late.push((due, hub));
            } else {
                t.listeners[&hub].notify_one();
            }
        }
    }

    /// A hub (re)starts listening: its wake-up, woken once now (whatever came while no one
    /// listened is looked at), as `pgstore/listen.rs` does.
    pub fn listen(&self, hub: &str) -> Arc<Notify> {
        let wake = Arc::new(Notify::new());
        wake.notify_one();
        self.lock().listeners.insert(hub.to_string(), wake.clone());
        wake
    }

    /// Delivers the late notifications due by `now_ms` (the harness calls it every step).
    pub fn deliver_due(&self, now_ms: u64) {
        let mut t = self.lock();
        let (due, later): (Vec<_>, Vec<_>) = t.late.drain(..).partition(|(at, _)| *at <= now_ms);
        t.late = later;
        for (_, hub) in due {
            if let Some(w) = t.listeners.get(&hub) {
                w.notify_one();
            }
        }
    }

    /// Every sequenced event still held, in position order: (position, name, data as sent).
    pub fn sequenced(&self) -> Vec<(u64, String, String)> {
        let t = self.lock();
        let mut out: Vec<(u64, String, String)> = t
            .rows
            .iter()
            .filter_map(|r| Some((r.pos? as u64, r.kind.clone(), r.data.to_string())))
            .collect();
        out.sort_by_key(|e| e.0);
        out
    }

    /// Whether `hub` cannot reach the database now (one of its windows, while hostile).
    pub fn is_cut_off(&self, hub: &str) -> bool {
        let now = turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64;
        self.lock().is_cut_off(hub, now)
    }

    /// `hub` cannot reach the database during `windows` (sim ms from..to).
    pub fn cut_off(&self, hub: &str, windows: Vec<(u64, u64)>) {
        self.lock().cut_off.insert(hub.to_string(), windows);
    }

    /// Committed events the sequencer has not numbered yet.
    pub fn unsequenced(&self) -> usize {
        self.lock().rows.iter().filter(|r| r.pos.is_none()).count()
    }
}

impl EventLog for SimEvents {
    fn sequence(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        // Under the lock, in one step: one sequencer at a time, each seeing the last's work.
        let mut t = self.lock();
        let mut fresh: Vec<usize> = (0..t.rows.len())
            .filter(|&i| t.rows[i].pos.is_none())
            .collect();
        fresh.sort_by_key(|&i| t.rows[i].id);
        for &i in &fresh {
            t.last_pos += 1;
            let pos = t.last_pos;
            t.rows[i].pos = Some(pos);
        }
        let n = fresh.len() as u64;
        Box::pin(async move { Ok(n) })
    }

    fn last_pos(&self) -> BoxFuture<'_, Result<i64, StoreError>> {
        let p = self.lock().last_pos;
        Box::pin(async move { Ok(p) })
    }

    fn events_after(
        &self,
        after: i64,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        let t = self.lock();
        let mut page: Vec<StoredEvent> = t
            .rows
            .iter()
            .filter(|r| r.pos.is_some_and(|p| p > after))
            .map(|r| StoredEvent {
                id: r.id,
                pos: r.pos.unwrap_or_default(),
                machine: r.machine.clone(),
                kind: r.kind.clone(),
                data: r.data.clone(),
            })
            .collect();
        page.sort_by_key(|e| e.pos);
        page.truncate(limit.max(0) as usize);
        Box::pin(async move { Ok(page) })
    }

    fn prune(&self, keep: i64) -> BoxFuture<'_, Result<u64, StoreError>> {
        let mut t = self.lock();
        let bound = t.last_pos - keep;
        let before = t.rows.len();
        t.rows.retain(|r| r.pos.is_none_or(|p| p > bound));
        let n = (before - t.rows.len()) as u64;
        Box::pin(async move { Ok(n) })
    }
}

/// One hub's access to the table: fails while the hub is cut off from the database, as a
/// hub's pool does when its network to PostgreSQL is down.
#[derive(Clone)]
pub struct HubLog {
    /// The hub's host name.
    pub hub: &'static str,
    /// The shared table.
    pub events: SimEvents,
}

impl HubLog {
    fn reachable(&self) -> Result<(), StoreError> {
        let now = turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64;
        let mut t = self.events.lock();
        if t.is_cut_off(self.hub, now) {
            t.failed_reads += 1;
            return Err(StoreError::Unavailable("simulated outage".into()));
        }
        Ok(())
    }
}

impl EventLog for HubLog {
    fn sequence(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        match self.reachable() {
            Ok(()) => self.events.sequence(),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn last_pos(&self) -> BoxFuture<'_, Result<i64, StoreError>> {
        match self.reachable() {
            Ok(()) => self.events.last_pos(),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn events_after(
        &self,
        after: i64,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        match self.reachable() {
            Ok(()) => self.events.events_after(after, limit),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn prune(&self, keep: i64) -> BoxFuture<'_, Result<u64, StoreError>> {
        match self.reachable() {
            Ok(()) => self.events.prune(keep),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}
