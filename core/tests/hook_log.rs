//! The log a user follows (seed FR20–22, NFR12): each hook's DEBUG chain (arrival, match
//! attempt, outcome) and the last lines of a screen not recognised while its agent runs,
//! once per change. Captured with a tracing subscriber of the test's own: no I/O, no clock.

use headspace_core::harness::replay::Replayer;
use headspace_core::harness::trace::Step;
use headspace_core::Timestamp;
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::json;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Keeps every event's level and message, in order.
#[derive(Clone, Default)]
struct Captured {
    lines: Arc<Mutex<Vec<(Level, String)>>>,
    next_span: Arc<AtomicU64>,
}

/// Writes an event's fields into one line.
struct Message<'a>(&'a mut String);

impl Visit for Message<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl Subscriber for Captured {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = String::new();
        event.record(&mut Message(&mut line));
        self.lines
            .lock()
            .unwrap()
            .push((*event.metadata().level(), line));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Captured {
    /// The lines at `level` logged since the last call.
    fn take(&self, level: Level) -> Vec<String> {
        std::mem::take(&mut *self.lines.lock().unwrap())
            .into_iter()
            .filter(|(l, _)| *l == level)
            .map(|(_, m)| m)
            .collect()
    }
}

/// Runs `f` with the test thread's log captured.
fn captured(f: impl FnOnce(&Captured)) {
    let log = Captured::default();
    tracing::subscriber::with_default(log.clone(), || f(&log));
}

fn hook(r: &mut Replayer, s: &SessionWriter, at: Timestamp, event: &str, extra: serde_json::Value) {
    let body = s.hook(event, Some("%3"), Some(at), extra);
    r.step(
        at,
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some(event.into()),
            body,
        },
    );
}

fn append(r: &mut Replayer, s: &SessionWriter, at: Timestamp, json: &str) {
    r.step(
        at,
        Step::Append {
            path: s.path(),
            data: format!("{json}\n").into_bytes(),
        },
    );
}

fn any(lines: &[String], words: &[&str]) -> bool {
    lines.iter().any(|l| words.iter().all(|w| l.contains(w)))
}

#[test]
fn each_hook_logs_its_arrival_its_match_attempt_and_its_outcome_at_debug() {
    captured(|log| {
        let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
        let mut r = Replayer::new(CLAUDE_DIR);
        let mut s = SessionWriter::new(1, t0);
        // A prompt hook first: a new provisional turn.
        hook(
            &mut r,
            &s,
            t0,
            "UserPromptSubmit",
            json!({"prompt": "add retries"}),
        );
        let d = log.take(Level::DEBUG);
        assert!(
            any(
                &d,
                &["UserPromptSubmit hook arrived", &s.session_id, "pane %3"]
            ),
            "{d:#?}"
        );
        assert!(any(&d, &["matching hook key Prompt:"]), "{d:#?}");
        assert!(any(&d, &["no entry read yet for key Prompt:"]), "{d:#?}");
        assert!(any(&d, &["new turn", "provisional"]), "{d:#?}");

        // Its transcript line claims it.
        let prompt = s.prompt("add retries", None);
        append(&mut r, &s, t0.add_millis(100), &prompt.json);
        let d = log.take(Level::DEBUG);
        assert!(
            any(&d, &["claimed hook-made turn", "key Prompt:"]),
            "{d:#?}"
        );

        // The same hook again: a duplicate.
        hook(
            &mut r,
            &s,
            t0,
            "UserPromptSubmit",
            json!({"prompt": "add retries"}),
        );
        let d = log.take(Level::DEBUG);
        assert!(any(&d, &["duplicate UserPromptSubmit hook"]), "{d:#?}");

        // The reply's line before its Stop: the late hook matches the entry read first.
        let at = t0.add_millis(2_000);
        s.clock = at;
        let reply = s.agent_text("Retries added; the tests pass.");
        append(&mut r, &s, at, &reply.json);
        log.take(Level::DEBUG);
        hook(
            &mut r,
            &s,
            at.add_millis(100),
            "Stop",
            json!({"last_assistant_message": "Retries added; the tests pass."}),
        );
        let d = log.take(Level::DEBUG);
        assert!(any(&d, &["Stop hook arrived"]), "{d:#?}");
        assert!(any(&d, &["matching hook key AgentText:"]), "{d:#?}");
        assert!(
            any(&d, &["hook matched late entry", "no new turn"]),
            "{d:#?}"
        );
    });
}

#[test]
fn claiming_hooked_turns_logs_nothing_at_info() {
    captured(|log| {
        let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
        let mut r = Replayer::new(CLAUDE_DIR);
        let mut s = SessionWriter::new(2, t0);
        log.take(Level::INFO);
        // Many ordinary turns, every hook and line on time: INFO stays quiet (only the new
        // agent is said), so a log with many agents is not flooded.
        for i in 0..20 {
            let at = t0.add_millis(i * 10_000);
            s.clock = at;
            let text = format!("task {i}");
            hook(
                &mut r,
                &s,
                at,
                "UserPromptSubmit",
                json!({ "prompt": text }),
            );
            let p = s.prompt(&text, None);
            append(&mut r, &s, at.add_millis(50), &p.json);
            let reply = format!("done {i}");
            hook(
                &mut r,
                &s,
                at.add_millis(100),
                "Stop",
                json!({ "last_assistant_message": reply }),
            );
            let a = s.agent_text(&reply);
            append(&mut r, &s, at.add_millis(150), &a.json);
        }
        let info = log.take(Level::INFO);
        assert!(
            info.iter().all(|l| l.contains("New agent")),
            "INFO lines in ordinary operation: {info:#?}"
        );
    });
}

#[test]
fn an_unrecognised_screen_while_the_agent_runs_is_logged_once_per_change() {
    captured(|log| {
        let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
        let mut r = Replayer::new(CLAUDE_DIR);
        let s = SessionWriter::new(3, t0);
        hook(
            &mut r,
            &s,
            t0,
            "UserPromptSubmit",
            json!({"prompt": "run it"}),
        );
        let screen = |at: i64, text: &str, r: &mut Replayer| {
            r.step(
                t0.add_millis(at),
                Step::Pane {
                    pane: "%3".into(),
                    text: text.into(),
                },
            )
        };
        let unknown = |d: &[String]| {
            d.iter()
                .filter(|l| l.contains("not recognised while agent"))
                .cloned()
                .collect::<Vec<_>>()
        };
        log.take(Level::DEBUG);
        screen(1_000, "$ vim notes.txt\n~\n~\n-- INSERT --", &mut r);
        screen(2_000, "$ vim notes.txt\n~\n~\n-- INSERT --", &mut r);
        screen(3_000, "$ vim notes.txt\n~\n~\n-- INSERT --\n", &mut r);
        let d = unknown(&log.take(Level::DEBUG));
        assert_eq!(d.len(), 1, "once, not per capture: {d:#?}");
        assert!(
            d[0].contains("-- INSERT --") && d[0].contains("pane %3"),
            "{d:#?}"
        );
        screen(4_000, "$ vim notes.txt\nhello\n~\n-- INSERT --", &mut r);
        let d = unknown(&log.take(Level::DEBUG));
        assert_eq!(d.len(), 1, "again when it changed: {d:#?}");
        assert!(d[0].contains("hello"), "{d:#?}");
        // The agent's own screen is recognised: nothing of the kind.
        let rule = "─".repeat(40);
        screen(
            5_000,
            &format!("✳ Working… (3s · esc to interrupt)\n\n{rule}\n❯ \n{rule}\n"),
            &mut r,
        );
        assert!(unknown(&log.take(Level::DEBUG)).is_empty());
    });
}
