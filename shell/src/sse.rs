//! The SSE hub: increasing event ids, a replay buffer for `Last-Event-ID`, `gap` events, and
//! bounded per-client queues so a slow client is dropped and never blocks anyone.

use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, mpsc};

/// One event, framed once for every client.
#[derive(Debug)]
struct SseEvent {
    id: u64,
    frame: Bytes,
}

struct Ring {
    next_id: u64,
    events: VecDeque<Arc<SseEvent>>,
}

/// Fans events out to every connected client.
pub struct Hub {
    ring: Mutex<Ring>,
    tx: broadcast::Sender<Arc<SseEvent>>,
    capacity: usize,
    /// Connected clients.
    pub clients: std::sync::atomic::AtomicI64,
}

/// Frames queued towards one client's socket.
const CLIENT_QUEUE: usize = 1024;
/// How long a client may take to make room before it is dropped (it reconnects with
/// Last-Event-ID and is served from the ring, or gets a gap).
const CLIENT_STALL: std::time::Duration = std::time::Duration::from_secs(10);

impl Hub {
    /// A hub whose ids start after `first_id` and which keeps the last `capacity` events.
    pub fn new(first_id: u64, capacity: usize) -> Hub {
        // The live channel holds as much as the ring: a client behind by more gets a gap.
        let (tx, _) = broadcast::channel(capacity.max(16));
        Hub {
            ring: Mutex::new(Ring {
                next_id: first_id + 1,
                events: VecDeque::new(),
            }),
            tx,
            capacity,
            clients: 0.into(),
        }
    }

    /// Publishes an event; returns its id.
    pub fn publish(&self, name: &'static str, data: &serde_json::Value) -> u64 {
        let mut ring = self.ring.lock().expect("hub lock");
        let id = ring.next_id;
        ring.next_id += 1;
        let ev = Arc::new(SseEvent {
            id,
            frame: Bytes::from(format!("id: {id}\nevent: {name}\ndata: {data}\n\n")),
        });
        ring.events.push_back(ev.clone());
        if ring.events.len() > self.capacity {
            ring.events.pop_front();
        }
        let _ = self.tx.send(ev);
        id
    }

    /// The id of the last event published.
    pub fn last_id(&self) -> u64 {
        self.ring.lock().expect("hub lock").next_id - 1
    }

    /// Starts a client: what it missed since `last_id` (or a `gap` when that is no longer
    /// held), then live events, heartbeats every `heartbeat`. Returns the frames to send.
    pub fn connect(
        self: &Arc<Self>,
        last_id: Option<u64>,
        heartbeat: std::time::Duration,
    ) -> mpsc::Receiver<Bytes> {
        let (out, rx) = mpsc::channel::<Bytes>(CLIENT_QUEUE);
        let (replay, gap, mut live) = {
            let ring = self.ring.lock().expect("hub lock");
            let live = self.tx.subscribe();
            let newest = ring.next_id - 1;
            let oldest = ring.events.front().map_or(ring.next_id, |e| e.id);
            match last_id {
                None => (Vec::new(), false, live),
                Some(l) if l > newest || l + 1 < oldest => (Vec::new(), true, live),
                Some(l) => (
                    ring.events
                        .iter()
                        .filter(|e| e.id > l)
                        .cloned()
                        .collect::<Vec<_>>(),
                    false,
                    live,
                ),
            }
        };
        let hub = self.clone();
        hub.clients
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tokio::spawn(async move {
            let _ = out.send(Bytes::from_static(b"retry: 1000\n\n")).await;
            if gap {
                let _ = out.try_send(
                    hub.gap_frame("events since Last-Event-ID are no longer held; refetch"),
                );
            }
            for ev in replay {
                if !send(&out, ev.frame.clone()).await {
                    hub.clients
                        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    return;
                }
            }
            let mut beat = tokio::time::interval(heartbeat);
            beat.tick().await;
            loop {
                tokio::select! {
                    r = live.recv() => match r {
                        Ok(ev) => {
                            if !send(&out, ev.frame.clone()).await {
                                break; // stuck or gone: dropped, it reconnects with Last-Event-ID
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            if !send(&out, hub.gap_frame("client fell behind; refetch")).await {
                                break;
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => break,
                    },
                    _ = beat.tick() => {
                        if out.try_send(Bytes::from_static(b": heartbeat\n\n")).is_err() {
                            break;
                        }
                    }
                    _ = out.closed() => break,
                }
            }
            hub.clients
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
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
