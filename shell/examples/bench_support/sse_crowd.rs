//! Many SSE clients on one server at once (the hub fan-out figure): each a connection of its
//! own on one tokio thread, noting when each marked `turn_created` reaches it. A marker is
//! a turn whose text starts with the given prefix and ends with its number.

use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// What one client got: (marker number, arrival) in the order read, and how many events.
#[derive(Default, Clone)]
pub struct Got {
    /// Each marker's arrival.
    pub markers: Vec<(u64, Instant)>,
    /// Events of any kind read.
    pub events: u64,
    /// Whether the stream ended or failed before the crowd was told to stop.
    pub dropped: bool,
}

/// A crowd of SSE clients running on a thread of its own.
pub struct Crowd {
    stop: watch::Sender<bool>,
    thread: std::thread::JoinHandle<Vec<Got>>,
    /// How many are connected and reading (their first bytes came).
    pub connected: Arc<std::sync::atomic::AtomicUsize>,
}

impl Crowd {
    /// Opens `n` SSE connections to `addr` (a few at a time, so the server's accept queue is
    /// never the test), each noting markers `{prefix}{number}`.
    pub fn open(addr: &str, n: usize, prefix: &str) -> Crowd {
        let (stop, stopped) = watch::channel(false);
        let connected = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (addr, prefix, up) = (addr.to_string(), prefix.to_string(), connected.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let mut tasks = Vec::with_capacity(n);
                for i in 0..n {
                    let (addr, prefix, up) = (addr.clone(), prefix.clone(), up.clone());
                    let stopped = stopped.clone();
                    tasks.push(tokio::spawn(client(addr, prefix, up, stopped)));
                    if i % 50 == 49 {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                }
                let mut all = Vec::with_capacity(n);
                for t in tasks {
                    all.push(t.await.unwrap_or_default());
                }
                all
            })
        });
        Crowd {
            stop,
            thread,
            connected,
        }
    }

    /// Closes every connection and returns what each client got.
    pub fn close(self) -> Vec<Got> {
        let _ = self.stop.send(true);
        self.thread.join().expect("the SSE crowd's thread")
    }
}

/// One client: reads until told to stop; a marker's number is parsed from its text without
/// decoding the whole event, so that a thousand clients cost the bench little.
async fn client(
    addr: String,
    prefix: String,
    up: Arc<std::sync::atomic::AtomicUsize>,
    mut stopped: watch::Receiver<bool>,
) -> Got {
    let mut got = Got::default();
    let Ok(mut s) = TcpStream::connect(&addr).await else {
        got.dropped = true;
        return got;
    };
    let request = format!(
        "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\r\n",
        super::server::TOKEN
    );
    if s.write_all(request.as_bytes()).await.is_err() {
        got.dropped = true;
        return got;
    }
    let needle = format!("\"text\":\"{prefix}");
    let mut lines = BufReader::new(s).lines();
    let mut counted = false;
    let mut created = false;
    loop {
        tokio::select! {
            _ = stopped.changed() => return got,
            line = lines.next_line() => {
                let Ok(Some(line)) = line else {
                    got.dropped = !*stopped.borrow();
                    return got;
                };
                if !counted {
                    counted = true;
                    up.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                if let Some(name) = line.strip_prefix("event: ") {
                    got.events += 1;
                    created = name == "turn_created";
                } else if created {
                    if let Some(at) = line.find(&needle) {
                        let digits: String = line[at + needle.len()..]
                            .chars()
                            .take_while(char::is_ascii_digit)
                            .collect();
                        if let Ok(m) = digits.parse() {
                            got.markers.push((m, Instant::now()));
                        }
                    }
                }
            }
        }
    }
}

/// The crowd's deliveries of the markers sent at `sent` (marker `m` at `sent[m]`).
pub struct Deliveries {
    /// Each marker's arrival at each client, ms after it was sent, sorted.
    pub per_delivery: Vec<f64>,
    /// Each marker's arrival at the last client to get it, ms after it was sent, sorted.
    pub to_all: Vec<f64>,
    /// Each marker's arrival at the last client, ms after the first client got it, sorted:
    /// what serving a thousand costs over serving one.
    pub spread: Vec<f64>,
    /// Marker arrivals counted.
    pub delivered: usize,
    /// Clients whose stream ended early.
    pub dropped: usize,
    /// The most events one client read.
    pub events_per_client: u64,
}

/// Sorts out what the clients got against when each marker was sent.
pub fn deliveries(got: &[Got], sent: &[Instant]) -> Deliveries {
    let mut per_delivery = Vec::new();
    let mut last_at: Vec<Option<Instant>> = vec![None; sent.len()];
    let mut first_at: Vec<Option<Instant>> = vec![None; sent.len()];
    for g in got {
        for &(m, at) in &g.markers {
            if let Some(t0) = sent.get(m as usize) {
                per_delivery.push(at.saturating_duration_since(*t0).as_secs_f64() * 1e3);
                let l = &mut last_at[m as usize];
                *l = Some(l.map_or(at, |x| x.max(at)));
                let f = &mut first_at[m as usize];
                *f = Some(f.map_or(at, |x| x.min(at)));
            }
        }
    }
    let mut to_all: Vec<f64> = last_at
        .iter()
        .zip(sent)
        .filter_map(|(l, t0)| l.map(|at| at.saturating_duration_since(*t0).as_secs_f64() * 1e3))
        .collect();
    let mut spread: Vec<f64> = last_at
        .iter()
        .zip(&first_at)
        .filter_map(|(l, f)| Some(l.as_ref()?.duration_since(*f.as_ref()?).as_secs_f64() * 1e3))
        .collect();
    spread.sort_by(|a, b| a.partial_cmp(b).unwrap());
    per_delivery.sort_by(|a, b| a.partial_cmp(b).unwrap());
    to_all.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Deliveries {
        delivered: per_delivery.len(),
        per_delivery,
        to_all,
        spread,
        dropped: got.iter().filter(|g| g.dropped).count(),
        events_per_client: got.iter().map(|g| g.events).max().unwrap_or(0),
    }
}
