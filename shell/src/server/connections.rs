//! The server's open connections, capped: a full table makes room by closing the connection
//! that has been idle longest (one that sent nothing, or waits between requests), so a flood
//! of half-open connections can never lock out `/healthz` or the user's own requests, and the
//! process never runs out of file descriptors.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The open connections and how many may be open at once.
pub struct Connections {
    cap: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    open: BTreeMap<u64, Entry>,
    /// Connections closed to make room, for the metrics.
    evicted: u64,
}

struct Entry {
    /// Requests (or streamed bodies) in progress.
    busy: u32,
    /// When it last became idle (or was accepted).
    idle_since: Instant,
    /// Closes the connection when sent to (or dropped).
    close: Option<oneshot::Sender<()>>,
}

/// A connection's place in the table; leaving the table when dropped.
pub struct Admitted {
    id: u64,
    conns: Arc<Connections>,
    /// Resolves when the server wants this connection closed.
    pub closed: oneshot::Receiver<()>,
}

/// Marks a connection busy while it lives (a request, or a response body still streaming).
pub struct Busy {
    id: u64,
    conns: Arc<Connections>,
}

impl Connections {
    /// A table of at most `cap` connections (at least 1).
    pub fn new(cap: usize) -> Arc<Connections> {
        Arc::new(Connections {
            cap: cap.max(1),
            table: Mutex::new(Table::default()),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.table.lock().expect("connections").open.len()
    }

    /// Connections closed so far to make room.
    pub fn evicted(&self) -> u64 {
        self.table.lock().expect("connections").evicted
    }

    /// Admits a new connection, closing the longest-idle one when the table is full. `None`
    /// when every open connection is busy: the new one is turned away.
    pub fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut t = self.table.lock().expect("connections");
        if t.open.len() >= self.cap && !t.evict_idlest() {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let id = t.next_id;
        t.next_id += 1;
        t.open.insert(
            id,
            Entry {
                busy: 0,
                idle_since: crate::clock::instant(),
                close: Some(tx),
            },
        );
        Some(Admitted {
            id,
            conns: self.clone(),
            closed: rx,
        })
    }

    /// Closes the longest-idle connection, if any is idle (to free a file descriptor).
    pub fn shed_one(&self) -> bool {
        self.table.lock().expect("connections").evict_idlest()
    }
}

impl Table {
    fn evict_idlest(&mut self) -> bool {
        let idlest = self
            .open
            .iter()
            .filter(|(_, e)| e.busy == 0 && e.close.is_some())
            .min_by_key(|(id, e)| (e.idle_since, **id))
            .map(|(id, _)| *id);
        match idlest.and_then(|id| self.open.remove(&id)) {
            Some(mut e) => {
                if let Some(close) = e.close.take() {
                    let _ = close.send(());
                }
                self.evicted += 1;
                true
            }
            None => false,
        }
    }
}

impl Admitted {
    /// Marks the connection busy until the returned guard is dropped.
    pub fn busy(&self) -> Busy {
        busy(&self.conns, self.id)
    }

    /// What [`Admitted::busy`] needs, to move into a per-request closure.
    pub fn handle(&self) -> (Arc<Connections>, u64) {
        (self.conns.clone(), self.id)
    }
}

/// Marks connection `id` busy until the guard is dropped.
pub fn busy(conns: &Arc<Connections>, id: u64) -> Busy {
    if let Some(e) = conns.table.lock().expect("connections").open.get_mut(&id) {
        e.busy += 1;
    }
    Busy {
        id,
        conns: conns.clone(),
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(e) = self
            .conns
            .table
            .lock()
            .expect("connections")
            .open
            .get_mut(&self.id)
        {
            e.busy = e.busy.saturating_sub(1);
            if e.busy == 0 {
                e.idle_since = crate::clock::instant();
            }
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.conns
            .table
            .lock()
            .expect("connections")
            .open
            .remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_table_closes_the_longest_idle_connection_never_a_busy_one() {
        let conns = Connections::new(2);
        let mut first = conns.admit().unwrap();
        let second = conns.admit().unwrap();
        let working = second.busy();
        let third = conns.admit().expect("room made");
        assert!(first.closed.try_recv().is_ok(), "the idle one was closed");
        assert_eq!(conns.evicted(), 1);
        drop(first);
        // Now the busy one and the fresh idle one: the fresh one goes.
        let _fourth = conns.admit().expect("room made");
        assert_eq!(conns.evicted(), 2);
        drop(third);
        let all_busy = Connections::new(1);
        let only = all_busy.admit().unwrap();
        let _b = only.busy();
        assert!(
            all_busy.admit().is_none(),
            "every connection busy: turned away"
        );
        drop(working);
    }
}
