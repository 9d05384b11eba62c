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
        s.push_str("# HELP headspace_hooks_total Hooks received, by event.\n# TYPE headspace_hooks_total counter\n");
        for (e, n) in self.hooks.lock().expect("metrics").iter() {
            s.push_str(&format!("headspace_hooks_total{{event=\"{e}\"}} {n}\n"));
        }
        s.push_str("# HELP headspace_hooks_rejected_total Hooks refused as malformed.\n# TYPE headspace_hooks_rejected_total counter\n");
        s.push_str(&format!(
            "headspace_hooks_rejected_total {}\n",
            self.hooks_rejected.load(Relaxed)
        ));
        s.push_str("# HELP headspace_turns_created_total Turns created, by what made them.\n# TYPE headspace_turns_created_total counter\n");
        s.push_str(&format!(
            "headspace_turns_created_total{{source=\"hook\"}} {}\n",
            self.turns_hook.load(Relaxed)
        ));
        s.push_str(&format!(
            "headspace_turns_created_total{{source=\"transcript\"}} {}\n",
            self.turns_transcript.load(Relaxed)
        ));
        s.push_str("# TYPE headspace_reconciles_total counter\n");
        s.push_str(&format!(
            "headspace_reconciles_total {}\n",
            self.reconciles.load(Relaxed)
        ));
        s.push_str("# TYPE headspace_gaps_detected_total counter\n");
        s.push_str(&format!(
            "headspace_gaps_detected_total {}\n",
            self.gaps.load(Relaxed)
        ));
        s.push_str("# TYPE headspace_sse_clients gauge\n");
        s.push_str(&format!("headspace_sse_clients {sse_clients}\n"));
        s.push_str("# TYPE headspace_store_retries_total counter\n");
        s.push_str(&format!(
            "headspace_store_retries_total {}\n",
            self.store_retries.load(Relaxed)
        ));
        s.push_str("# TYPE headspace_store_healthy gauge\n");
        s.push_str(&format!("headspace_store_healthy {}\n", u8::from(healthy)));
        s
    }
}
