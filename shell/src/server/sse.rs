//! The SSE hub: increasing event ids, a replay buffer for `Last-Event-ID`, `gap` events, and
//! bounded per-client queues so a slow client is dropped and never blocks anyone.
//!
//! The replay ring is bounded by count and by bytes (a turn's text can be megabytes). New
//! events are announced to clients by id only (a `watch` of the newest id); each client then
//! copies what it has not sent yet out of the ring. So no event is held anywhere but the ring,
//! and a client that fell further behind than the ring reaches gets a `gap` and refetches.
//!
//! Passing events ([`Hub::publish_passing`], the `notice`s) are news of the moment: they
//! carry no id, are not kept in the ring, and reach only the clients connected when they
//! happen (a notice replayed after a reconnect would be stale, and an id of this server's
//! own would collide with the shared database's positions on a hub).

use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, mpsc, watch};

/// One event, framed once for every client.
#[derive(Debug)]
struct SseEvent {
    id: u64,
    frame: Bytes,
}

struct Ring {
    next_id: u64,
    events: VecDeque<Arc<SseEvent>>,
    bytes: usize,
}

/// Fans events out to every connected client.
pub struct Hub {
    ring: Mutex<Ring>,
    newest: watch::Sender<u64>,
    capacity: usize,
    max_bytes: usize,
    /// Fed from the shared database (a `--role hub`): ids are the events' global positions,
    /// and a client that asks for a position this hub has not read yet (it saw it on another
    /// hub a moment ago) waits for it instead of getting a `gap`.
    fed: bool,
    /// Connected clients.
    pub clients: AtomicI64,
    /// Passing events, framed, to the clients connected now.
    passing: broadcast::Sender<Bytes>,
}

/// Passing events a client may fall behind by before it misses some (they are news of the
/// moment; a client that slow misses them, and nothing else).
const PASSING_QUEUE: usize = 64;

/// Frames queued towards one client's socket.
const CLIENT_QUEUE: usize = 1024;
/// How long a client may take to make room before it is dropped (it reconnects with
/// Last-Event-ID and is served from the ring, or gets a gap).
const CLIENT_STALL: std::time::Duration = std::time::Duration::from_secs(10);
/// The replay ring's default size in bytes.
pub const DEFAULT_RING_BYTES: usize = 64 << 20;

impl Hub {
    /// A hub whose ids start after `first_id` and which keeps the last `capacity` events, at
    /// most [`DEFAULT_RING_BYTES`] of them.
    pub fn new(first_id: u64, capacity: usize) -> Hub {
        Hub::with_limits(first_id, capacity, DEFAULT_RING_BYTES)
    }

    /// As [`Hub::new`], with the ring's byte bound given.
    pub fn with_limits(first_id: u64, capacity: usize, max_bytes: usize) -> Hub {
        let (newest, _) = watch::channel(first_id);
        Hub {
            ring: Mutex::new(Ring {
                next_id: first_id + 1,
                events: VecDeque::new(),
                bytes: 0,
            }),
            newest,
            capacity: capacity.max(1),
            max_bytes,
            fed: false,
            clients: 0.into(),
            passing: broadcast::channel(PASSING_QUEUE).0,
        }
    }

    /// A hub fed from the shared database ([`Hub::publish_at`] with the events' positions),
    /// starting after position `first_id`.
    pub fn fed(first_id: u64, capacity: usize) -> Hub {
        Hub {
            fed: true,
            ..Hub::new(first_id, capacity)
        }
    }

    /// Publishes an event; returns its id.
    pub fn publish(&self, name: &str, data: &dyn std::fmt::Display) -> u64 {
        let ring = self.ring.lock().expect("hub lock");
        let id = ring.next_id;
        self.push(ring, id, name, data);
        id
    }

    /// Publishes an event under its global position `id` (a fed hub); an id not above the
    /// last one is a repeat and is dropped. Returns whether it was published.
    pub fn publish_at(&self, id: u64, name: &str, data: &dyn std::fmt::Display) -> bool {
        let ring = self.ring.lock().expect("hub lock");
        if id < ring.next_id {
            return false;
        }
        self.push(ring, id, name, data);
        true
    }

    fn push(
        &self,
        mut ring: std::sync::MutexGuard<'_, Ring>,
        id: u64,
        name: &str,
        data: &dyn std::fmt::Display,
    ) {
        ring.next_id = id + 1;
        let ev = Arc::new(SseEvent {
            id,
            frame: Bytes::from(format!("id: {id}\nevent: {name}\ndata: {data}\n\n")),
        });
        ring.bytes += ev.frame.len();
        ring.events.push_back(ev);
        // The newest event always stays, however large: a client must be able to get it.
        while ring.events.len() > 1
            && (ring.events.len() > self.capacity || ring.bytes > self.max_bytes)
        {
            if let Some(old) = ring.events.pop_front() {
                ring.bytes -= old.frame.len();
            }
        }
        drop(ring);
        self.newest.send_replace(id);
    }

    /// Publishes a passing event: no id, not kept, to the clients connected now.
    pub fn publish_passing(&self, name: &str, data: &dyn std::fmt::Display) {
        // No receiver (no client connected) is not an error: nobody was there to tell.
        let _ = self
            .passing
            .send(Bytes::from(format!("event: {name}\ndata: {data}\n\n")));
    }

    /// The id of the last event published.
    pub fn last_id(&self) -> u64 {
        self.ring.lock().expect("hub lock").next_id - 1
    }

    /// Bytes the replay ring holds now.
    pub fn ring_bytes(&self) -> usize {
        self.ring.lock().expect("hub lock").bytes
    }

    /// The events after `after` that the ring still holds, or `Err(newest)` when some of
    /// them are no longer held (the client must refetch).
    fn since(&self, after: u64) -> Result<Vec<Arc<SseEvent>>, u64> {
        let ring = self.ring.lock().expect("hub lock");
        let newest = ring.next_id - 1;
        let oldest = ring.events.front().map_or(ring.next_id, |e| e.id);
        if self.fed && after > newest {
            return Ok(Vec::new()); // not read here yet: it comes
        }
        if after > newest || after + 1 < oldest {
            return Err(newest);
        }
        let start = ring.events.partition_point(|e| e.id <= after);
        Ok(ring.events.range(start..).cloned().collect())
    }

    /// Starts a client: what it missed since `last_id` (or a `gap` when that is no longer
    /// held), then live events, heartbeats every `heartbeat`. Returns the frames to send.
    /// Counted in [`Hub::clients`] (the `headspace_sse_clients` gauge) while it lasts.
    pub fn connect(
        self: &Arc<Self>,
        last_id: Option<u64>,
        heartbeat: std::time::Duration,
    ) -> mpsc::Receiver<Bytes> {
        self.stream(last_id, heartbeat, true)
    }

    /// Like [`Hub::connect`] for a listener inside the server (the notifier): not a client,
    /// so the gauge of connected clients does not count it.
    pub fn listen(
        self: &Arc<Self>,
        last_id: Option<u64>,
        heartbeat: std::time::Duration,
    ) -> mpsc::Receiver<Bytes> {
        self.stream(last_id, heartbeat, false)
    }

    fn stream(
        self: &Arc<Self>,
        last_id: Option<u64>,
        heartbeat: std::time::Duration,
        counted: bool,
    ) -> mpsc::Receiver<Bytes> {
        let (out, rx) = mpsc::channel::<Bytes>(CLIENT_QUEUE);
        let mut news = self.newest.subscribe();
        let mut passing = self.passing.subscribe();
        let hub = self.clone();
        // A client without Last-Event-ID starts at the present.
        let start = last_id.unwrap_or_else(|| *news.borrow_and_update());
        let count = i64::from(counted);
        hub.clients.fetch_add(count, Relaxed);
        tokio::spawn(async move {
            let _ = out.send(Bytes::from_static(b"retry: 1000\n\n")).await;
            let mut sent = start;
            let mut beat = tokio::time::interval(heartbeat);
            beat.tick().await;
            'client: loop {
                match hub.since(sent) {
                    Ok(events) => {
                        for ev in events {
                            if !send(&out, ev.frame.clone()).await {
                                break 'client; // stuck or gone: it reconnects with Last-Event-ID
                            }
                            sent = ev.id;
                        }
                    }
                    Err(newest) => {
                        let why = if last_id == Some(sent) {
                            "events since Last-Event-ID are no longer held; refetch"
                        } else {
                            "client fell behind; refetch"
                        };
                        if !send(&out, hub.gap_frame(why)).await {
                            break 'client;
                        }
                        sent = newest;
                    }
                }
                tokio::select! {
                    changed = news.changed() => {
                        if changed.is_err() {
                            break 'client;
                        }
                    }
                    _ = beat.tick() => {
                        if out.try_send(Bytes::from_static(b": heartbeat\n\n")).is_err() {
                            break 'client;
                        }
                    }
                    event = passing.recv() => match event {
                        Ok(frame) => {
                            if !send(&out, frame).await {
                                break 'client;
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => break 'client,
                    },
                    _ = out.closed() => break 'client,
                }
            }
            hub.clients.fetch_sub(count, Relaxed);
        });
        rx
    }

    fn gap_frame(&self, message: &str) -> Bytes {
        let id = self.last_id();
        Bytes::from(format!(
            "id: {id}\nevent: gap\ndata: {}\n\n",
            serde_json::json!({"message": message, "last_event_id": id})
        ))
    }
}

/// Queues a frame for a client, waiting a bounded time for room; false when the client is
/// gone or stuck.
async fn send(out: &mpsc::Sender<Bytes>, frame: Bytes) -> bool {
    matches!(
        tokio::time::timeout(CLIENT_STALL, out.send(frame)).await,
        Ok(Ok(()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_ring_is_bounded_by_bytes_and_keeps_the_newest() {
        let hub = Hub::with_limits(0, 1000, 10_000);
        let big = "x".repeat(4_000);
        for _ in 0..10 {
            hub.publish("turn_created", &json!({ "text": big }));
        }
        assert!(hub.ring_bytes() <= 10_000, "{}", hub.ring_bytes());
        assert_eq!(hub.since(9).unwrap().len(), 1);
        assert!(hub.since(1).is_err(), "older events are gone: a gap");
        let huge = "y".repeat(50_000);
        let id = hub.publish("turn_created", &json!({ "text": huge }));
        assert_eq!(
            hub.since(id - 1).unwrap().len(),
            1,
            "a single huge event stays"
        );
    }

    #[tokio::test]
    async fn a_client_gets_what_it_missed_then_live_events() {
        let hub = Arc::new(Hub::new(100, 16));
        let first = hub.publish("a", &json!(1));
        hub.publish("b", &json!(2));
        let mut rx = hub.connect(Some(first), std::time::Duration::from_secs(60));
        assert_eq!(&rx.recv().await.unwrap()[..], b"retry: 1000\n\n");
        assert!(String::from_utf8_lossy(&rx.recv().await.unwrap()).contains("event: b"));
        hub.publish("c", &json!(3));
        assert!(String::from_utf8_lossy(&rx.recv().await.unwrap()).contains("event: c"));
        let mut late = hub.connect(Some(1), std::time::Duration::from_secs(60));
        late.recv().await.unwrap();
        assert!(String::from_utf8_lossy(&late.recv().await.unwrap()).contains("event: gap"));
    }

    #[tokio::test]
    async fn a_passing_event_reaches_connected_clients_only_and_takes_no_id() {
        let hub = Arc::new(Hub::fed(10, 16));
        let mut here = hub.connect(None, std::time::Duration::from_secs(60));
        assert_eq!(&here.recv().await.unwrap()[..], b"retry: 1000\n\n");
        // Let the client's task subscribe and wait.
        tokio::task::yield_now().await;
        hub.publish_passing("notice", &json!({"title": "shop needs you"}));
        let frame = here.recv().await.unwrap();
        assert_eq!(
            &frame[..],
            b"event: notice\ndata: {\"title\":\"shop needs you\"}\n\n"
        );
        assert_eq!(hub.last_id(), 10, "no id taken");
        assert!(
            hub.publish_at(11, "a", &json!(1)),
            "the database's next position is still free"
        );
        assert!(String::from_utf8_lossy(&here.recv().await.unwrap()).contains("id: 11"));
        // A client that connects later never sees it: it was news of the moment.
        let mut later = hub.connect(Some(10), std::time::Duration::from_secs(60));
        later.recv().await.unwrap();
        let next = String::from_utf8_lossy(&later.recv().await.unwrap()).to_string();
        assert!(
            next.contains("id: 11") && !next.contains("notice"),
            "{next}"
        );
    }

    #[tokio::test]
    async fn a_fed_hub_serves_positions_once_and_a_client_ahead_of_it_waits() {
        let hub = Arc::new(Hub::fed(10, 16));
        assert!(hub.publish_at(11, "a", &json!(1)));
        assert!(!hub.publish_at(11, "a", &json!(1)), "a repeat is dropped");
        assert!(hub.publish_at(12, "b", &json!(2)));
        // It saw position 13 on another hub; this one has not read it yet.
        let mut ahead = hub.connect(Some(13), std::time::Duration::from_secs(60));
        assert_eq!(&ahead.recv().await.unwrap()[..], b"retry: 1000\n\n");
        hub.publish_at(13, "c", &json!(3));
        hub.publish_at(14, "d", &json!(4));
        let next = String::from_utf8_lossy(&ahead.recv().await.unwrap()).to_string();
        assert!(
            next.starts_with("id: 14\nevent: d"),
            "no gap, no repeat: {next}"
        );
        let mut behind = hub.connect(Some(11), std::time::Duration::from_secs(60));
        behind.recv().await.unwrap();
        let first = String::from_utf8_lossy(&behind.recv().await.unwrap()).to_string();
        assert!(first.starts_with("id: 12\nevent: b"), "{first}");
        let mut pruned = hub.connect(Some(3), std::time::Duration::from_secs(60));
        pruned.recv().await.unwrap();
        let gap = String::from_utf8_lossy(&pruned.recv().await.unwrap()).to_string();
        assert!(gap.contains("event: gap"), "before the ring: {gap}");
    }
}
