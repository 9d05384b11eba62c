//! What an over-long transcript line (see [`crate::transcript::truncated`]) still tells about steps and
//! usage, from its head and tail: a huge tool result or a huge `Write` must still end or
//! start its step, and its message's tokens still count.
//!
//! Claude Code writes a line's keys in a fixed order, so a block's `type`, `id`,
//! `tool_use_id`, `name` and the first input fields are near the head, and `is_error` (after
//! a result's content), the message's `usage` and the line's `timestamp` are near the tail.
//! The reading is lenient and expects Claude Code's compact JSON.

use crate::time::Timestamp;
use crate::transcript::step_line::{LineFacts, LineUsage, ToolResult, ToolUse};
use crate::usage::step::StepOutcome;
use crate::usage::Tokens;
use serde_json::{json, Map, Value};

/// The facts of a line of which only `head` and `tail` were kept.
pub fn read_truncated(head: &[u8], tail: &[u8]) -> LineFacts {
    let mut facts = LineFacts {
        timestamp: last_string(tail, b"\"timestamp\":\"")
            .and_then(|t| Timestamp::parse_rfc3339(&t)),
        ..LineFacts::default()
    };
    if let Some(at) = find(head, b"\"type\":\"tool_result\"") {
        let id = string_after(head, b"\"tool_use_id\":\"", 0)
            .or_else(|| string_after(head, b"\"tool_use_id\":\"", at));
        if let Some(id) = id {
            // A refusal or an interrupt is a short text, never an over-long line. `is_error`
            // follows the content, and Claude Code repeats a big output in `toolUseResult`
            // after it: it is often cut out, and the outcome is then a guess that a tool
            // hook's outcome outweighs.
            let (outcome, certain) = if find(tail, b"\"is_error\":true").is_some() {
                (StepOutcome::Error, true)
            } else if find(tail, b"\"is_error\":false").is_some() {
                (StepOutcome::Ok, true)
            } else {
                (StepOutcome::Ok, false)
            };
            facts.results.push(ToolResult {
                tool_use_id: id,
                outcome,
                certain,
            });
        }
    }
    if let Some(at) = find(head, b"\"type\":\"tool_use\"") {
        let id = string_after(head, b"\"id\":\"", at);
        let name = string_after(head, b"\"name\":\"", at);
        if let (Some(id), Some(name)) = (id, name) {
            let mut input = Map::new();
            for key in ["file_path", "notebook_path", "command", "pattern", "url"] {
                let pattern = format!("\"{key}\":\"");
                if let Some(v) = string_after(head, pattern.as_bytes(), at) {
                    input.insert(key.to_string(), json!(v));
                }
            }
            facts.uses.push(ToolUse {
                id,
                name,
                input: Some(Value::Object(input)),
            });
        }
    }
    facts.usage = usage(head, tail);
    facts
}

/// The message's usage: its id and model from the head, its `usage` object from the tail.
fn usage(head: &[u8], tail: &[u8]) -> Option<LineUsage> {
    // Claude Code writes `usage` after the content: in the tail; a line written otherwise
    // may have it in the head.
    let object = |bytes: &[u8]| -> Option<Value> {
        let at = find(bytes, b"\"usage\":{")?;
        serde_json::Deserializer::from_slice(&bytes[at + b"\"usage\":".len()..])
            .into_iter::<Value>()
            .next()?
            .ok()
    };
    let usage = object(tail).or_else(|| object(head))?;
    let message = find(head, b"\"message\":{")?;
    Some(LineUsage {
        message_id: string_after(head, b"\"id\":\"", message)
            .or_else(|| string_after(head, b"\"requestId\":\"", 0))?,
        model: string_after(head, b"\"model\":\"", message).unwrap_or_default(),
        tokens: Tokens::of_usage(&usage),
    })
}

/// The JSON string that starts right after the first `pattern` at or after `from`.
fn string_after(bytes: &[u8], pattern: &[u8], from: usize) -> Option<String> {
    let at = from + find(bytes.get(from..)?, pattern)? + pattern.len();
    // Back to the opening quote, which the pattern ends with.
    let quoted = bytes.get(at - 1..)?;
    serde_json::Deserializer::from_slice(quoted)
        .into_iter::<String>()
        .next()?
        .ok()
}

/// The JSON string after the last `pattern`.
fn last_string(bytes: &[u8], pattern: &[u8]) -> Option<String> {
    let at = bytes.windows(pattern.len()).rposition(|w| w == pattern)?;
    string_after(bytes, pattern, at)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
