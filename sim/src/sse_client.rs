//! A dashboard's event stream in the multi-machine scenario: a turmoil client that reads
//! `GET /api/events` from a hub, and at random moments drops the connection and reconnects
//! to another hub (or the same one after it restarted) with `Last-Event-ID`, as a browser's
//! `EventSource` does behind a load balancer. What it receives is kept for E1.

use crate::rng::Rng;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The port every hub listens on.
pub const HUB_PORT: u16 = 5055;

/// What one client received.
#[derive(Clone, Debug, Default)]
pub struct Received {
    /// Every event, in arrival order: (SSE id, event name, data).
    pub events: Vec<(u64, String, String)>,
    /// The `gap` events' data (none may come while the events are retained).
    pub gaps: Vec<String>,
    /// Connections made (the first and every reconnection).
    pub connections: u32,
}

/// Every client's record, shared with the harness.
#[derive(Clone, Default)]
pub struct Streams(pub Arc<Mutex<Vec<Received>>>);

impl Streams {
    /// `n` clients with nothing received.
    pub fn new(n: usize) -> Streams {
        Streams(Arc::new(Mutex::new(vec![Received::default(); n])))
    }

    /// The records, locked.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Received>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// When the client should stop switching hubs, and when it should stop reading.
#[derive(Clone, Default)]
pub struct Phase(pub Arc<Mutex<(bool, bool)>>);

impl Phase {
    /// (calm: stay on one hub; over: stop).
    fn get(&self) -> (bool, bool) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// From now on, no more switching.
    pub fn calm(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0 = true;
    }

    /// The client stops.
    pub fn end(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
    }
}

/// Client `n`: reads from `hubs`, switching at random, until the phase ends.
pub async fn run_client(
    n: usize,
    hubs: Vec<&'static str>,
    streams: Streams,
    phase: Phase,
    mut rng: Rng,
) {
    let mut last: Option<u64> = Some(0);
    loop {
        let (calm, over) = phase.get();
        if over {
            return;
        }
        let hub = *rng.pick(&hubs);
        // Hostile: stay 0.5 to 12 s, then switch; calm: stay until the end.
        let stay = if calm {
            Duration::from_secs(3_600)
        } else {
            Duration::from_millis(rng.range(500, 12_000))
        };
        streams.lock()[n].connections += 1;
        let read = read_stream(hub, last, n, &streams, &phase, &mut last);
        let _ = tokio::time::timeout(stay, read).await;
        tokio::time::sleep(Duration::from_millis(rng.range(10, 500))).await;
    }
}

/// One connection: sends `Last-Event-ID`, then records every event until the stream ends,
/// breaks, or the phase changes; `last` follows the ids received.
async fn read_stream(
    hub: &str,
    from: Option<u64>,
    n: usize,
    streams: &Streams,
    phase: &Phase,
    last: &mut Option<u64>,
) {
    let connect = turmoil::net::TcpStream::connect((hub, HUB_PORT));
    let Ok(Ok(mut s)) = tokio::time::timeout(Duration::from_secs(2), connect).await else {
        return;
    };
    let resume = from
        .map(|id| format!("Last-Event-ID: {id}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "GET /api/events HTTP/1.1\r\nHost: {hub}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n{resume}\r\n",
        crate::net::TOKEN
    );
    if s.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let started = phase.get().0;
    let mut raw = Vec::new();
    let mut body = ChunkedBody::default();
    let mut buf = [0u8; 8192];
    let mut header_done = false;
    loop {
        // A stream quiet for longer than two heartbeats is dead (its hub crashed unheard).
        let got = tokio::time::timeout(Duration::from_secs(35), s.read(&mut buf)).await;
        let k = match got {
            Ok(Ok(k)) if k > 0 => k,
            _ => return,
        };
        raw.extend_from_slice(&buf[..k]);
        if !header_done {
            let Some(end) = find(&raw, b"\r\n\r\n") else {
                continue;
            };
            if !raw.starts_with(b"HTTP/1.1 200") {
                return;
            }
            raw.drain(..end + 4);
            header_done = true;
        }
        body.feed(&mut raw);
        while let Some(frame) = body.next_frame() {
            record(&frame, n, streams, last);
        }
        if phase.get() != (started, false) {
            return; // calm now (settle on one hub) or over
        }
    }
}

fn record(frame: &str, n: usize, streams: &Streams, last: &mut Option<u64>) {
    let (mut id, mut name, mut data) = (None, None, None);
    for line in frame.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.trim().parse::<u64>().ok();
        } else if let Some(v) = line.strip_prefix("event: ") {
            name = Some(v.to_string());
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = Some(v.to_string());
        }
    }
    let (Some(name), Some(data)) = (name, data) else {
        return; // `retry:` or a heartbeat
    };
    let mut s = streams.lock();
    if name == "gap" {
        s[n].gaps.push(data);
        return;
    }
    let Some(id) = id else { return };
    s[n].events.push((id, name, data));
    *last = Some(id);
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// HTTP/1.1 chunked transfer decoding, then SSE framing (`\n\n` between events).
#[derive(Default)]
struct ChunkedBody {
    text: Vec<u8>,
}

impl ChunkedBody {
    /// Moves every whole chunk of `raw` into the decoded text.
    fn feed(&mut self, raw: &mut Vec<u8>) {
        loop {
            let Some(eol) = find(raw, b"\r\n") else {
                return;
            };
            let size = std::str::from_utf8(&raw[..eol])
                .ok()
                .and_then(|h| usize::from_str_radix(h.trim(), 16).ok());
            let Some(size) = size else { return };
            if raw.len() < eol + 2 + size + 2 {
                return;
            }
            self.text.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
            raw.drain(..eol + 2 + size + 2);
        }
    }

    /// The next whole SSE frame.
    fn next_frame(&mut self) -> Option<String> {
        let end = find(&self.text, b"\n\n")?;
        let frame = String::from_utf8_lossy(&self.text[..end]).into_owned();
        self.text.drain(..end + 2);
        Some(frame)
    }
}
