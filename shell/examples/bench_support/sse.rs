//! A server's SSE stream (`/api/events`) read in the background: when each `turn_created`
//! text arrived, to time hooks and transcript lines against.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When each `turn_created` text was read from the stream.
pub type Seen = Arc<Mutex<HashMap<String, Instant>>>;

/// Reads the SSE stream of the server at `addr` into `seen`; reconnects with Last-Event-ID
/// when the server drops it, as the dashboard does. Ends when the server is gone.
pub fn follow(addr: &str, seen: Seen) {
    let addr = addr.to_string();
    std::thread::spawn(move || {
        let mut last: Option<String> = None;
        loop {
            let Ok(mut s) = TcpStream::connect(&addr) else {
                return;
            };
            let resume = last
                .as_ref()
                .map(|l| format!("Last-Event-ID: {l}\r\n"))
                .unwrap_or_default();
            if s.write_all(
                format!(
                    "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n{resume}\r\n",
                    super::server::TOKEN
                )
                .as_bytes(),
            )
            .is_err()
            {
                return;
            }
            let mut created = false;
            for line in BufReader::new(s).lines() {
                let Ok(line) = line else { break };
                if let Some(id) = line.strip_prefix("id: ") {
                    last = Some(id.to_string());
                } else if line.starts_with("event: ") {
                    created = line == "event: turn_created";
                    if line == "event: gap" {
                        eprintln!("bench: SSE gap on {addr} (fell behind)");
                    }
                } else if let Some(data) = line.strip_prefix("data: ") {
                    if created {
                        if let Ok(v) = serde_json::from_str::<serde_json::Value>(data) {
                            if let Some(t) = v["text"].as_str() {
                                seen.lock().unwrap().insert(t.to_string(), Instant::now());
                            }
                        }
                    }
                }
            }
            eprintln!("bench: SSE connection to {addr} closed; reconnecting from {last:?}");
        }
    });
}

/// A new [`Seen`] fed by [`follow`] from the server at `addr`.
pub fn stream(addr: &str) -> Seen {
    let seen = Seen::default();
    follow(addr, seen.clone());
    seen
}

/// Waits up to `wait` for every text of `sent` to be seen; returns the latencies in
/// milliseconds (sorted) and how many never came.
pub fn latencies(
    sent: &HashMap<String, Instant>,
    seen: &Seen,
    wait: Duration,
) -> (Vec<f64>, usize) {
    let end = Instant::now() + wait;
    loop {
        let got = seen.lock().unwrap();
        if sent.keys().all(|k| got.contains_key(k)) || Instant::now() > end {
            let mut l: Vec<f64> = sent
                .iter()
                .filter_map(|(k, t0)| {
                    got.get(k)
                        .map(|t| t.saturating_duration_since(*t0).as_secs_f64() * 1000.0)
                })
                .collect();
            l.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let missing = sent.len() - l.len();
            return (l, missing);
        }
        drop(got);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `p` percentile (0.0–1.0) of `sorted` milliseconds, the nearest rank; NaN if empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}
