//! Odd transcript lines and hook bodies still become turns, with text every store takes:
//! NUL characters (PostgreSQL refuses them), unpaired surrogate escapes (serde_json refuses
//! them) and lines longer than `max_line_bytes` (read in bounded memory).

use headspace_core::io::Write;
use headspace_core::model::TurnRow;
use headspace_core::{Command, Config, Core, Input, Timestamp};
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::json;

struct Rig {
    core: Core,
    now: Timestamp,
    s: SessionWriter,
    /// Where the next appended bytes start.
    at: u64,
    turns: Vec<TurnRow>,
    claims: Vec<(u64, String)>,
    offsets: Vec<u64>,
}

impl Rig {
    fn new(max_line_bytes: usize) -> Rig {
        let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
        let mut config = Config::new(CLAUDE_DIR);
        config.max_line_bytes = max_line_bytes;
        Rig {
            core: Core::new(config),
            now: t0,
            s: SessionWriter::new(7, t0),
            at: 0,
            turns: Vec::new(),
            claims: Vec::new(),
            offsets: Vec::new(),
        }
    }

    fn drain(&mut self) {
        while let Some(cmd) = self.core.poll_command() {
            match cmd {
                Command::Store(Write::Turn(t)) => self.turns.push(t),
                Command::Store(Write::Claim {
                    turn_id,
                    entry_uuid,
                    ..
                }) => self.claims.push((turn_id, entry_uuid)),
                Command::Store(Write::Offset(o)) => self.offsets.push(o.offset),
                _ => {}
            }
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        self.now = self.now.add_millis(5);
        self.core.handle(
            self.now,
            Input::Transcript {
                path: self.s.path(),
                offset: self.at,
                data: bytes.to_vec(),
                read: None,
            },
        );
        self.at += bytes.len() as u64;
        self.drain();
    }

    fn hook(&mut self, event: &str, extra: serde_json::Value) {
        self.now = self.now.add_millis(5);
        let body = self.s.hook(event, Some("%1"), Some(self.now), extra);
        self.core.handle(
            self.now,
            Input::Hook {
                agent: headspace_core::kind::AgentKind::Claude,
                event: Some(event.into()),
                body,
            },
        );
        self.drain();
    }
}

/// The JSON text of a string holding a NUL, as Claude Code writes it.
fn with_nul(json: &str, plain: &str, escaped: &str) -> String {
    assert!(json.contains(plain), "{json}");
    json.replace(plain, escaped)
}

#[test]
fn a_line_with_nul_gives_its_turn_with_the_nul_replaced() {
    let mut r = Rig::new(1 << 20);
    let p = r.s.prompt("before NULHERE after", None);
    let line = with_nul(&p.json, "NULHERE", "\\u0000");
    r.append(format!("{line}\n").as_bytes());
    let (q, _, _) = r.s.question("Pick QNUL one", &["a OPTNUL", "b"]);
    let qline = with_nul(&with_nul(&q.json, "QNUL", "\\u0000"), "OPTNUL", "\\u0000");
    r.append(format!("{qline}\n").as_bytes());
    assert_eq!(r.turns.len(), 2, "{:?}", r.turns);
    assert_eq!(r.turns[0].text, "before \u{FFFD} after");
    assert_eq!(r.turns[0].entry_uuid.as_deref(), Some(p.uuid.as_str()));
    assert_eq!(r.turns[1].text, "Pick \u{FFFD} one");
    let question = r.turns[1].question.as_ref().unwrap().to_string();
    assert!(!question.contains("\\u0000"), "{question}");
    assert!(question.contains("a \u{FFFD}"), "{question}");
}

#[test]
fn a_line_with_a_lone_surrogate_gives_its_turn() {
    let mut r = Rig::new(1 << 20);
    let a = r.s.prompt("lone HIGH and LOW, pair PAIR", None);
    let line = a
        .json
        .replace("HIGH", "\\ud800")
        .replace("LOW", "\\udfff")
        .replace("PAIR", "\\ud83d\\ude00");
    r.append(format!("{line}\n").as_bytes());
    assert_eq!(r.turns.len(), 1);
    assert_eq!(r.turns[0].text, "lone \u{FFFD} and \u{FFFD}, pair 😀");
    assert_eq!(r.turns[0].entry_uuid.as_deref(), Some(a.uuid.as_str()));
}

#[test]
fn a_hook_with_nul_or_a_lone_surrogate_gives_a_clean_turn_its_entry_claims() {
    let mut r = Rig::new(1 << 20);
    r.hook("UserPromptSubmit", json!({"prompt": "fix \u{0} this"}));
    assert_eq!(r.turns.len(), 1);
    assert_eq!(r.turns[0].text, "fix \u{FFFD} this");
    // The transcript's line for the same prompt claims it: one turn, not two.
    let p = r.s.prompt("fix NUL this", None);
    let line = with_nul(&p.json, "NUL", "\\u0000");
    r.append(format!("{line}\n").as_bytes());
    assert_eq!(r.turns.len(), 1, "{:?}", r.turns);
    assert_eq!(r.claims, vec![(r.turns[0].id, p.uuid.clone())]);

    // A Stop hook whose body holds a lone surrogate escape is not refused.
    let body = r.s.hook(
        "Stop",
        Some("%1"),
        Some(r.now),
        json!({"last_assistant_message": "done SUR"}),
    );
    let body = String::from_utf8(body).unwrap().replace("SUR", "\\udc00");
    assert!(serde_json::from_str::<serde_json::Value>(&body).is_err());
    assert!(headspace_core::hook::Hook::parse(None, body.as_bytes()).is_ok());
    r.core.handle(
        r.now,
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("Stop".into()),
            body: body.into_bytes(),
        },
    );
    r.drain();
    assert_eq!(r.turns.len(), 2, "{:?}", r.turns);
    assert_eq!(r.turns[1].text, "done \u{FFFD}");
}

#[test]
fn a_line_over_the_limit_gives_one_truncated_turn_and_the_offset_moves_past_it() {
    let limit = 64 << 10;
    let mut r = Rig::new(limit);
    let before = r.s.prompt("before the long one", None);
    r.append(format!("{}\n", before.json).as_bytes());
    let long_text = format!("START {}", "x".repeat(limit * 3));
    let long = r.s.agent_text(&long_text);
    let after = r.s.prompt("after the long one", None);
    let bytes = format!("{}\n{}\n", long.json, after.json).into_bytes();
    // Fed in pieces, as a reader would.
    for piece in bytes.chunks(10_000) {
        r.append(piece);
    }
    let texts: Vec<&str> = r.turns.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(r.turns[1].entry_uuid.as_deref(), Some(long.uuid.as_str()));
    let mark = format!("… [truncated: {} bytes]", long.json.len());
    assert!(texts[1].starts_with("START xxx"), "{}", &texts[1][..40]);
    assert!(
        texts[1].ends_with(&mark),
        "{}",
        &texts[1][texts[1].len() - 60..]
    );
    assert!(texts[1].len() < limit + mark.len());
    assert_eq!(texts[2], "after the long one");
    assert_eq!(r.offsets.last().copied(), Some(r.at));
}

#[test]
fn a_line_that_never_ends_does_not_move_the_offset() {
    let mut r = Rig::new(64 << 10);
    let p = r.s.prompt("a real prompt", None);
    r.append(format!("{}\n", p.json).as_bytes());
    let committed = r.at;
    for _ in 0..40 {
        r.append(&[0u8; 16 << 10]);
    }
    assert_eq!(r.offsets.last().copied(), Some(committed));
    assert_eq!(r.turns.len(), 1);
}
