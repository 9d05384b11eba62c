//! Prometheus counters of the server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// The server's counters.
#[derive(Default)]
pub struct Metrics {
    hooks: Mutex<BTreeMap<String, u64>>,
    /// Turns created from hooks.
    pub turns_hook: AtomicU64,
    /// Turns created from transcript entries.
    pub turns_transcript: AtomicU64,
    /// Reconcile requests.
    pub reconciles: AtomicU64,
    /// Gaps detected (SSE clients that fell behind, transcript gaps).
    pub gaps: AtomicU64,
    /// Store batches retried.
    pub store_retries: AtomicU64,
    /// Hooks refused as malformed.
    pub hooks_rejected: AtomicU64,
    /// Requests refused by the access checks (foreign host, cross-site, no token, …).
    pub requests_refused: AtomicU64,
    /// Idle connections closed to make room for new ones.
    pub connections_evicted: AtomicU64,
    /// Connections open now.
    pub connections_open: AtomicU64,
}

impl Metrics {
    /// Counts a hook by event.
    pub fn hook(&self, event: &str) {
        *self
            .hooks
            .lock()
            .expect("metrics")
            .entry(event.to_string())
            .or_default() += 1;
    }

    /// The text exposition.
    pub fn render(&self, sse_clients: i64, healthy: bool) -> String {
        let mut s = String::new();
        family(
            &mut s,
            "headspace_hooks_total",
            "counter",
            Some("Hooks received, by event."),
        );
        for (e, n) in self.hooks.lock().expect("metrics").iter() {
            sample(
                &mut s,
                &format!("headspace_hooks_total{{event=\"{e}\"}}"),
                n,
            );
        }
        let rejected = "headspace_hooks_rejected_total";
        family(
            &mut s,
            rejected,
            "counter",
            Some("Hooks refused as malformed."),
        );
        sample(&mut s, rejected, self.hooks_rejected.load(Relaxed));
        let turns = "headspace_turns_created_total";
        family(
            &mut s,
            turns,
            "counter",
            Some("Turns created, by what made them."),
        );
        sample(
            &mut s,
            &format!("{turns}{{source=\"hook\"}}"),
            self.turns_hook.load(Relaxed),
        );
        sample(
            &mut s,
            &format!("{turns}{{source=\"transcript\"}}"),
            self.turns_transcript.load(Relaxed),
        );
        for (name, kind, value) in [
            (
                "headspace_reconciles_total",
                "counter",
                self.reconciles.load(Relaxed) as i64,
            ),
            (
                "headspace_gaps_detected_total",
                "counter",
                self.gaps.load(Relaxed) as i64,
            ),
            ("headspace_sse_clients", "gauge", sse_clients),
            (
                "headspace_store_retries_total",
                "counter",
                self.store_retries.load(Relaxed) as i64,
            ),
            ("headspace_store_healthy", "gauge", i64::from(healthy)),
            (
                "headspace_requests_refused_total",
                "counter",
                self.requests_refused.load(Relaxed) as i64,
            ),
            (
                "headspace_connections_evicted_total",
                "counter",
                self.connections_evicted.load(Relaxed) as i64,
            ),
            (
                "headspace_connections_open",
                "gauge",
                self.connections_open.load(Relaxed) as i64,
            ),
        ] {
            family(&mut s, name, kind, None);
            sample(&mut s, name, value);
        }
        s
    }
}

/// A metric family's `# HELP` (when given) and `# TYPE` lines.
fn family(s: &mut String, name: &str, kind: &str, help: Option<&str>) {
    if let Some(h) = help {
        s.push_str(&format!("# HELP {name} {h}\n"));
    }
    s.push_str(&format!("# TYPE {name} {kind}\n"));
}

/// One sample line.
fn sample(s: &mut String, name: &str, value: impl std::fmt::Display) {
    s.push_str(&format!("{name} {value}\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_is_prometheus_text() {
        let m = Metrics::default();
        m.hook("Stop");
        m.hook("Stop");
        m.hooks_rejected.store(1, Relaxed);
        m.turns_hook.store(3, Relaxed);
        m.turns_transcript.store(4, Relaxed);
        m.reconciles.store(5, Relaxed);
        m.gaps.store(6, Relaxed);
        m.store_retries.store(8, Relaxed);
        assert_eq!(
            m.render(7, true),
            "# HELP headspace_hooks_total Hooks received, by event.\n# TYPE headspace_hooks_total counter\n\
             headspace_hooks_total{event=\"Stop\"} 2\n\
             # HELP headspace_hooks_rejected_total Hooks refused as malformed.\n# TYPE headspace_hooks_rejected_total counter\n\
             headspace_hooks_rejected_total 1\n\
             # HELP headspace_turns_created_total Turns created, by what made them.\n# TYPE headspace_turns_created_total counter\n\
             headspace_turns_created_total{source=\"hook\"} 3\n\
             headspace_turns_created_total{source=\"transcript\"} 4\n\
             # TYPE headspace_reconciles_total counter\nheadspace_reconciles_total 5\n\
             # TYPE headspace_gaps_detected_total counter\nheadspace_gaps_detected_total 6\n\
             # TYPE headspace_sse_clients gauge\nheadspace_sse_clients 7\n\
             # TYPE headspace_store_retries_total counter\nheadspace_store_retries_total 8\n\
             # TYPE headspace_store_healthy gauge\nheadspace_store_healthy 1\n\
             # TYPE headspace_requests_refused_total counter\nheadspace_requests_refused_total 0\n\
             # TYPE headspace_connections_evicted_total counter\nheadspace_connections_evicted_total 0\n\
             # TYPE headspace_connections_open gauge\nheadspace_connections_open 0\n"
        );
    }
}
