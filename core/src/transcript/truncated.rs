//! A turn from an over-long line: what its head and tail still tell.
//!
//! The framer keeps the first `max_line_bytes` of a longer line and its last 64 KiB
//! ([`Line::Truncated`](crate::transcript::framing::Line)). Claude Code writes a line's keys in a fixed
//! order — `parentUuid`, `isSidechain`, …, `type` (user lines), `message`, then
//! `toolUseResult`, `type` (assistant lines), `uuid`, `timestamp` — so the head holds the
//! keys before `message` and the start of the message, and the tail holds the keys after it.
//! [`recover`] reads both leniently:
//!
//! - the complete top-level pairs of the head (everything before the pair that was cut) and
//!   of the tail (everything after the first top-level comma in it) are parsed as JSON;
//! - when `message` is among them (the cut was in a later field), the line is classified
//!   as usual from those pairs, with its whole text;
//! - when the cut was inside `message`, its role, the type of its first content block and
//!   the start of its text are read from the head, and the text is marked
//!   `… [truncated: N bytes]`.
//!
//! Anything it cannot tell (no `uuid`, the message dropped whole) gives no turn. The lenient
//! reading expects Claude Code's compact JSON (no spaces between tokens).

use crate::time::Timestamp;
use crate::transcript::entry::{self, Entry, Signal};
use crate::transcript::mend::{self, Mended};
use serde_json::{Map, Value};

/// What could be made of an over-long line.
#[derive(Clone, Debug, PartialEq)]
pub struct Recovered {
    /// The line's uuid, when it was found (even for a line that makes no turn).
    pub uuid: Option<String>,
    /// The entry: a turn with its text marked as truncated, a signal, or `Ignored`.
    pub entry: Entry,
    /// What was mended in the recovered text.
    pub mended: Mended,
    /// True when the turn's text is only the start of the line's text.
    pub text_cut: bool,
}

/// The mark put after the recovered start of a truncated text.
pub fn truncation_mark(len: u64) -> String {
    format!("… [truncated: {len} bytes]")
}

/// Makes what it can of a line of `len` bytes of which only `head` (its first bytes) and
/// `tail` (its last bytes) were kept. Pure and total: any bytes give some answer.
pub fn recover(head: &[u8], tail: &[u8], len: u64) -> Recovered {
    let top = head_top(head);
    let mut pairs = match top {
        Some((open, sep)) => {
            let mut json = head[open..sep].to_vec();
            if sep == open {
                json.push(b'{');
            }
            json.push(b'}');
            parse_pairs(&json)
        }
        None => Map::new(),
    };
    if let Some(c) = tail_top(tail) {
        let end = tail.trim_ascii_end().len();
        let mut json = b"{".to_vec();
        json.extend_from_slice(&tail[c + 1..end]);
        for (k, v) in parse_pairs(&json) {
            pairs.entry(k).or_insert(v);
        }
    }
    let uuid = pairs
        .get("uuid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .map(str::to_string);
    // The cut was in a field after `message`: the message is whole.
    if pairs.contains_key("message") {
        let line = serde_json::to_vec(&Value::Object(pairs)).unwrap_or_default();
        let (entry, mended) =
            entry::classify_mended(&line).unwrap_or((Entry::Ignored, Mended::default()));
        return Recovered {
            uuid,
            entry,
            mended,
            text_cut: false,
        };
    }
    let message = top
        .and_then(|(_, sep)| cut_pair(head, sep))
        .filter(|(key, _)| *key == "message")
        .map(|(_, value)| value);
    let mut entry = match (message, uuid.clone()) {
        (Some(m), Some(uuid)) => entry_of(&pairs, m, uuid, len),
        _ => Entry::Ignored,
    };
    let nuls = entry.replace_nul();
    let text_cut = entry.uuid().is_some();
    Recovered {
        uuid,
        entry,
        mended: Mended {
            nuls,
            surrogates: 0,
        },
        text_cut,
    }
}

/// The entry of a line whose `message` was cut: `m` is the start of the message's JSON.
fn entry_of(pairs: &Map<String, Value>, m: &[u8], uuid: String, len: u64) -> Entry {
    let flag = |k: &str| pairs.get(k).and_then(Value::as_bool) == Some(true);
    if flag("isSidechain") {
        return Entry::Ignored;
    }
    let timestamp = pairs.get("timestamp").and_then(Timestamp::from_json);
    let role = string_after(m, b"\"role\":\"");
    let kind = pairs
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(role);
    let Some(content) = find(m, b"\"content\":").map(|i| &m[i + 10..]) else {
        return Entry::Ignored;
    };
    let marked = |text: String| format!("{} {}", text.trim(), truncation_mark(len));
    match kind.as_deref() {
        Some("user") => {
            if flag("isMeta") || flag("isCompactSummary") {
                return Entry::Ignored;
            }
            let text = match content.first() {
                Some(b'"') => mend::decode_string_prefix(&content[1..]),
                Some(b'[') => {
                    if first_block_type(content).as_deref() == Some("tool_result") {
                        let tool_use_id = string_after(content, b"\"tool_use_id\":\"");
                        let text = find(content, b"\"content\":")
                            .map(|i| &content[i + 10..])
                            .and_then(|c| match c.first() {
                                Some(b'"') => Some(mend::decode_string_prefix(&c[1..])),
                                _ => string_after(c, b"\"text\":\""),
                            })
                            .unwrap_or_default();
                        return Entry::ToolResult {
                            uuid,
                            timestamp,
                            tool_use_id,
                            answers: None,
                            text: marked(text),
                        };
                    }
                    string_after(content, b"\"text\":\"").unwrap_or_default()
                }
                _ => return Entry::Ignored,
            };
            let prompt_id = pairs
                .get("promptId")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
                .map(str::to_string);
            match entry::user_text_entry(&text, Some(uuid), timestamp, prompt_id) {
                Entry::UserPrompt {
                    uuid,
                    timestamp,
                    text,
                    prompt_id,
                } => Entry::UserPrompt {
                    uuid,
                    timestamp,
                    text: marked(text),
                    prompt_id,
                },
                other => other,
            }
        }
        Some("assistant") => {
            if string_after(m, b"\"model\":\"").as_deref() == Some("<synthetic>")
                || content.first() != Some(&b'[')
            {
                return Entry::Ignored;
            }
            match first_block_type(content).as_deref() {
                Some("text") => match string_after(content, b"\"text\":\"") {
                    Some(t) if !t.trim().is_empty() => Entry::AgentText {
                        uuid,
                        timestamp,
                        text: marked(t),
                    },
                    _ => Entry::Ignored,
                },
                Some("tool_use") => Entry::Signal {
                    timestamp,
                    signal: Signal::ToolUse,
                },
                _ => Entry::Ignored,
            }
        }
        _ => Entry::Ignored,
    }
}

/// The `type` of the first block of a content array starting at `content`.
fn first_block_type(content: &[u8]) -> Option<String> {
    string_after(content, b"\"type\":\"")
}

/// The (lenient) string value after the first occurrence of `pattern` (which ends with the
/// value's opening quote).
fn string_after(bytes: &[u8], pattern: &[u8]) -> Option<String> {
    let i = find(bytes, pattern)?;
    Some(mend::decode_string_prefix(&bytes[i + pattern.len()..]))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parses a JSON object's pairs, mending surrogates; nothing when it does not parse.
fn parse_pairs(json: &[u8]) -> Map<String, Value> {
    let (json, _) = mend::repair_lone_surrogates(json);
    serde_json::from_slice(&json).unwrap_or_default()
}

/// In the head of a JSON object: the offset of its opening brace and of the last top-level
/// separator (the brace itself or a `,` between pairs). The pairs before the separator are
/// complete; the pair after it was cut. `None` when the head does not start an object.
fn head_top(head: &[u8]) -> Option<(usize, usize)> {
    let open = head.iter().position(|b| !b.is_ascii_whitespace())?;
    if head[open] != b'{' {
        return None;
    }
    let (mut depth, mut in_str, mut esc, mut sep) = (0i64, false, false, open);
    for (i, &b) in head.iter().enumerate().skip(open) {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b',' if depth == 1 => sep = i,
            _ => {}
        }
    }
    Some((open, sep))
}

/// The key of the pair cut by the end of the head, and the start of its value.
fn cut_pair(head: &[u8], sep: usize) -> Option<(&str, &[u8])> {
    let rest = head.get(sep + 1..)?.trim_ascii_start();
    let rest = rest.strip_prefix(b"\"")?;
    let close = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    let key = std::str::from_utf8(&rest[..close]).ok()?;
    let value = rest[close + 1..].trim_ascii_start().strip_prefix(b":")?;
    Some((key, value.trim_ascii_start()))
}

/// In the tail of a JSON object: the offset of the first `,` between its top-level pairs.
/// Read backwards from the object's closing brace, where the state is known: a quote is a
/// string's edge unless an odd number of backslashes precedes it.
fn tail_top(tail: &[u8]) -> Option<usize> {
    let t = tail.trim_ascii_end();
    if t.last() != Some(&b'}') {
        return None;
    }
    let escaped = |i: usize| t[..i].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1;
    let (mut depth, mut in_str, mut first) = (0i64, false, None);
    for i in (0..t.len()).rev() {
        let b = t[i];
        if in_str {
            if b == b'"' && !escaped(i) {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'}' | b']' => depth += 1,
            b'{' | b'[' => {
                depth -= 1;
                if depth == 0 {
                    break; // the object's own opening brace: the tail holds it whole
                }
            }
            b',' if depth == 1 => first = Some(i),
            _ => {}
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A line cut the way the framer cuts it: the first `h` bytes and the last `t`.
    fn cut(line: &str, h: usize, t: usize) -> Recovered {
        let b = line.as_bytes();
        assert!(h + t < b.len(), "nothing dropped");
        recover(&b[..h], &b[b.len() - t..], b.len() as u64)
    }

    fn user_line(text: &str) -> String {
        json!({"parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/w",
            "sessionId": "s", "version": "2.1.33", "type": "user",
            "message": {"role": "user", "content": text},
            "uuid": "64d2a49d-651b-47c2-bdf0-10913cc23a22", "timestamp": "2026-02-07T00:21:40.512Z"})
        .to_string()
    }

    fn assistant_line(block: serde_json::Value) -> String {
        json!({"parentUuid": "p", "isSidechain": false, "cwd": "/w", "sessionId": "s",
            "message": {"model": "claude-opus-4-6", "id": "msg_1", "type": "message",
                "role": "assistant", "content": [block], "stop_reason": null},
            "requestId": "req_1", "type": "assistant",
            "uuid": "5aff7b53-113e-44b9-9832-66eca81a29ca", "timestamp": "2026-02-07T00:21:43.977Z"})
        .to_string()
    }

    #[test]
    fn a_cut_user_prompt_keeps_its_uuid_time_and_start_of_text() {
        let text = format!("please look at this log:\n{}", "x".repeat(10_000));
        let line = user_line(&text);
        let r = cut(&line, 400, 200);
        assert_eq!(
            r.uuid.as_deref(),
            Some("64d2a49d-651b-47c2-bdf0-10913cc23a22")
        );
        assert!(r.text_cut);
        match r.entry {
            Entry::UserPrompt {
                uuid,
                timestamp,
                text: got,
                ..
            } => {
                assert_eq!(uuid, "64d2a49d-651b-47c2-bdf0-10913cc23a22");
                assert_eq!(
                    timestamp,
                    Timestamp::parse_rfc3339("2026-02-07T00:21:40.512Z")
                );
                assert!(got.starts_with("please look at this log:\nxxx"), "{got}");
                let mark = truncation_mark(line.len() as u64);
                assert!(got.ends_with(&mark), "{got}");
                assert!(got.len() < 400 + mark.len(), "{}", got.len());
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_cut_assistant_text_takes_its_type_from_the_tail() {
        let line = assistant_line(
            json!({"type": "text", "text": format!("Here is the report. {}", "y".repeat(5000))}),
        );
        let r = cut(&line, 300, 150);
        match r.entry {
            Entry::AgentText { uuid, text, .. } => {
                assert_eq!(uuid, "5aff7b53-113e-44b9-9832-66eca81a29ca");
                assert!(text.starts_with("Here is the report. yyy"), "{text}");
                assert!(text.ends_with("bytes]"), "{text}");
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_cut_tool_call_or_thinking_is_no_turn() {
        let call = assistant_line(json!({"type": "tool_use", "id": "toolu_1", "name": "Write",
                "input": {"file_path": "/w/big", "content": "z".repeat(5000)}}));
        let r = cut(&call, 300, 150);
        assert!(
            matches!(
                r.entry,
                Entry::Signal {
                    signal: Signal::ToolUse,
                    ..
                }
            ),
            "{:?}",
            r.entry
        );
        let thinking = assistant_line(json!({"type": "thinking", "thinking": "w".repeat(5000)}));
        assert_eq!(cut(&thinking, 300, 150).entry, Entry::Ignored);
    }

    #[test]
    fn a_cut_tool_result_is_a_tool_result() {
        let line = json!({"type": "user", "isSidechain": false,
            "message": {"role": "user", "content": [{"tool_use_id": "toolu_9", "type": "tool_result",
                "content": format!("Found 2 files\n{}", "f".repeat(5000))}]},
            "uuid": "u-9", "timestamp": "2026-02-07T00:21:44Z"})
        .to_string();
        match cut(&line, 200, 100).entry {
            Entry::ToolResult {
                uuid,
                tool_use_id,
                text,
                answers,
                ..
            } => {
                assert_eq!(uuid, "u-9");
                assert_eq!(tool_use_id.as_deref(), Some("toolu_9"));
                assert!(text.starts_with("Found 2 files\nfff"), "{text}");
                assert_eq!(answers, None);
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_cut_after_the_message_keeps_the_whole_text() {
        // The huge field is `toolUseResult`, after `message`: the message is whole.
        let line = json!({"type": "user",
            "message": {"role": "user", "content": "a short prompt"},
            "toolUseResult": {"stdout": "o".repeat(5000)},
            "uuid": "u-2", "timestamp": "2026-02-07T00:21:44Z"})
        .to_string();
        let r = cut(&line, 120, 80);
        assert!(!r.text_cut);
        match r.entry {
            Entry::UserPrompt { uuid, text, .. } => {
                assert_eq!((uuid.as_str(), text.as_str()), ("u-2", "a short prompt"));
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn what_cannot_be_told_gives_no_turn() {
        // The uuid fell in the dropped middle.
        let line = json!({"type": "user", "uuid": "u-3",
            "message": {"role": "user", "content": "q".repeat(5000)}, "timestamp": "2026-02-07T00:21:44Z"})
        .to_string();
        let r = recover(
            &line.as_bytes()[..20],
            &line.as_bytes()[line.len() - 100..],
            line.len() as u64,
        );
        assert_eq!((r.uuid, r.entry), (None, Entry::Ignored));
        // Garbage, a sparse file's NULs, a sidechain, machinery text.
        for (head, tail) in [
            (&b"\0\0\0\0"[..], &b"\0\0"[..]),
            (&b"not json at all"[..], &b"}}}}"[..]),
            (&b"{\"a\":\"\\\\\\\""[..], &b"\\\"},\"uuid\":\"u\"}"[..]),
        ] {
            assert_eq!(recover(head, tail, 1 << 30).entry, Entry::Ignored);
        }
        let side =
            user_line(&"s".repeat(5000)).replace("\"isSidechain\":false", "\"isSidechain\":true");
        assert_eq!(cut(&side, 300, 100).entry, Entry::Ignored);
        let machinery = user_line(&format!("<local-command-stdout>{}", "m".repeat(5000)));
        assert_eq!(cut(&machinery, 300, 100).entry, Entry::Ignored);
    }

    #[test]
    fn nul_and_lone_surrogates_in_a_cut_text_are_mended() {
        let line = user_line(&format!("a\u{0}b{}", "c".repeat(5000)))
            .replace("a\\u0000b", "a\\u0000b\\ud800");
        let r = cut(&line, 300, 100);
        assert_eq!(r.mended.nuls, 1);
        match r.entry {
            Entry::UserPrompt { text, .. } => {
                assert!(text.starts_with("a\u{FFFD}b\u{FFFD}ccc"), "{text}")
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn the_tail_scan_knows_escaped_quotes() {
        // `\"` inside a string and `\\` before a closing quote.
        let tail = br#"xx\",\"no\":1,\"deep\":{\"a\":\"b\\"},"uuid":"u-4","timestamp":"2026-02-07T00:21:44Z"}"#;
        let c = tail_top(tail).unwrap();
        assert_eq!(&tail[c..c + 8], b",\"uuid\":");
        let line_head = br#"{"type":"user","message":{"role":"user","content":"hi \"there\" ..."#;
        let r = recover(line_head, tail, 1 << 20);
        assert_eq!(r.uuid.as_deref(), Some("u-4"));
        match r.entry {
            Entry::UserPrompt { text, .. } => {
                assert!(text.starts_with("hi \"there\" ..."), "{text}")
            }
            e => panic!("{e:?}"),
        }
    }
}
