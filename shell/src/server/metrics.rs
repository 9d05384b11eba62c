//! Prometheus counters of the server.
//!
//! The exposition is written here rather than by `prometheus-client` (tried for issue 15):
//! that crate (0.24) writes label values and help text unescaped (its issue #151, open), so it
//! would not have fixed the one bug this file had, an `Other(name)` hook event carrying
//! quotes, backslashes or line feeds into a label value; and it writes OpenMetrics (family
//! names without `_total`, a closing `# EOF`), which would change the text scrapers and our
//! tests read today, for two more crates to compile. Eleven fixed families do not need it:
//! what they need is the escaping below, which the tests hold to the text format.

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
    /// Times the server shed what it held while the database was away (hooks to the spool).
    pub sheddings: AtomicU64,
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
                &format!("headspace_hooks_total{{event=\"{}\"}}", label_value(e)),
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
                "headspace_sheddings_total",
                "counter",
                self.sheddings.load(Relaxed) as i64,
            ),
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

/// A label value as the text format writes it: `\\`, `\"` and `\n` escaped, nothing else.
/// The token and cost families: what every model has used and cost so far, summed from the
/// store's usage rows (so every hub shows the same figures), at the server's price table.
pub fn render_usage(by_model: &BTreeMap<String, headspace_core::usage::sum::UsageTotal>) -> String {
    let mut s = String::new();
    let tokens = "headspace_tokens_total";
    family(
        &mut s,
        tokens,
        "counter",
        Some("Tokens used by all agents, by model and kind (input, output, cache_read, cache_creation)."),
    );
    for (model, t) in by_model {
        let kinds = [
            ("input", t.tokens.input),
            ("output", t.tokens.output),
            ("cache_read", t.tokens.cache_read),
            ("cache_creation", t.tokens.cache_creation),
        ];
        for (kind, n) in kinds {
            sample(
                &mut s,
                &format!(
                    "{tokens}{{model=\"{}\",kind=\"{kind}\"}}",
                    label_value(model)
                ),
                n,
            );
        }
    }
    let cost = "headspace_cost_usd_total";
    family(
        &mut s,
        cost,
        "counter",
        Some("Dollars spent by all agents at the price table, by model."),
    );
    for (model, t) in by_model {
        sample(
            &mut s,
            &format!("{cost}{{model=\"{}\"}}", label_value(model)),
            t.cost_usd,
        );
    }
    s
}

fn label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
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
             # TYPE headspace_sheddings_total counter\nheadspace_sheddings_total 0\n\
             # TYPE headspace_requests_refused_total counter\nheadspace_requests_refused_total 0\n\
             # TYPE headspace_connections_evicted_total counter\nheadspace_connections_evicted_total 0\n\
             # TYPE headspace_connections_open gauge\nheadspace_connections_open 0\n"
        );
    }

    /// Whether `text` is valid Prometheus text exposition, as far as our families use it:
    /// comments, and samples `name{label="value",…} number` with only `\\`, `\"` and `\n`
    /// escaped inside values.
    fn valid_exposition(text: &str) -> Result<(), String> {
        for line in text.lines() {
            if line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
                continue;
            }
            let bad = || Err(format!("not a sample line: {line:?}"));
            let name_end = line
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(line.len());
            if name_end == 0 {
                return bad();
            }
            let mut rest = line[name_end..].chars().peekable();
            if rest.peek() == Some(&'{') {
                rest.next();
                loop {
                    let label: String = rest.by_ref().take_while(|c| *c != '=').collect();
                    if label.is_empty()
                        || !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return bad();
                    }
                    if rest.next() != Some('"') {
                        return bad();
                    }
                    loop {
                        match rest.next() {
                            Some('\\') => match rest.next() {
                                Some('\\' | '"' | 'n') => {}
                                _ => return bad(),
                            },
                            Some('"') => break,
                            Some('\n') | None => return bad(),
                            Some(_) => {}
                        }
                    }
                    match rest.next() {
                        Some(',') => continue,
                        Some('}') => break,
                        _ => return bad(),
                    }
                }
            }
            let value: String = rest.collect();
            match value.strip_prefix(' ').map(str::parse::<f64>) {
                Some(Ok(_)) => {}
                _ => return bad(),
            }
        }
        Ok(())
    }

    #[test]
    fn tokens_and_cost_are_exposed_by_model() {
        let mut by_model = BTreeMap::new();
        by_model.insert(
            "claude-\"x\"".to_string(),
            headspace_core::usage::sum::UsageTotal {
                tokens: headspace_core::usage::Tokens {
                    input: 1,
                    output: 2,
                    cache_creation: 3,
                    cache_read: 4,
                },
                messages: 1,
                cost_usd: 0.5,
                models: Vec::new(),
            },
        );
        let text = super::render_usage(&by_model);
        valid_exposition(&text).unwrap();
        assert!(text.contains(
            "headspace_tokens_total{model=\"claude-\\\"x\\\"\",kind=\"cache_creation\"} 3\n"
        ));
        assert!(text.contains("headspace_cost_usd_total{model=\"claude-\\\"x\\\"\"} 0.5\n"));
    }

    #[test]
    fn a_hostile_event_name_is_escaped() {
        // An event name is whatever the hook's route or body said (`Other(name)`).
        let m = Metrics::default();
        m.hook("Stop");
        m.hook("evil\"} 1\nheadspace_store_healthy 0\n\\");
        let text = m.render(0, true);
        valid_exposition(&text).unwrap();
        assert!(text.contains(
            "headspace_hooks_total{event=\"evil\\\"} 1\\nheadspace_store_healthy 0\\n\\\\\"} 1\n"
        ));
        // The injected sample did not become a line of its own.
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("headspace_store_healthy "))
                .collect::<Vec<_>>(),
            ["headspace_store_healthy 1"]
        );
        assert_eq!(label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        // The checker itself rejects what the old code wrote.
        assert!(valid_exposition("headspace_hooks_total{event=\"a\"b\"} 1\n").is_err());
        assert!(valid_exposition("headspace_hooks_total{event=\"a\nb\"} 1\n").is_err());
        assert!(valid_exposition("headspace_hooks_total{event=\"a\\\"} 1\n").is_err());
    }
}
