//! What one transcript line tells about tool calls and tokens: its `tool_use` blocks
//! (assistant lines), its `tool_result` blocks (user lines) and its `message.usage`.
//!
//! Read apart from [`crate::transcript::entry`] (which says what a line means as a turn), borrowing the
//! big fields (tool inputs, results) as raw JSON and parsing only what a step needs. A line
//! that names neither a tool nor a usage is not parsed at all.

use crate::time::Timestamp;
use crate::transcript::mend;
use crate::usage::step::{outcome_of_result, StepOutcome};
use crate::usage::Tokens;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// A `tool_use` block.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse {
    /// Its id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its input.
    pub input: Option<Value>,
}

/// A `tool_result` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub tool_use_id: String,
    /// How the call ended ([`outcome_of_result`]).
    pub outcome: StepOutcome,
    /// False when the outcome is a guess (an over-long line whose `is_error` was cut out):
    /// it then weighs less than a hook's.
    pub certain: bool,
}

/// The usage of the line's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineUsage {
    /// `message.id`, else the line's `requestId`, else its `uuid` (as
    /// [`crate::usage::message_usage`] names a message).
    pub message_id: String,
    /// `message.model`.
    pub model: String,
    /// Its tokens.
    pub tokens: Tokens,
}

/// Everything a line tells about steps and usage.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LineFacts {
    /// The line's timestamp.
    pub timestamp: Option<Timestamp>,
    /// Its tool calls.
    pub uses: Vec<ToolUse>,
    /// Its tool results.
    pub results: Vec<ToolResult>,
    /// Its message's usage.
    pub usage: Option<LineUsage>,
    /// The model the lines after it use, when the line names one for them and its usage
    /// lines do not name their own (Codex CLI's `turn_context`).
    pub model: Option<String>,
}

impl LineFacts {
    /// True when the line tells nothing about steps or usage.
    pub fn is_empty(&self) -> bool {
        self.uses.is_empty() && self.results.is_empty() && self.usage.is_none()
    }
}

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(rename = "requestId", borrow, default)]
    request_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<RawMessage<'a>>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// The characters of a result's text read for its outcome markers.
const MARKER_CHARS: usize = 200;

/// The start of a result's text read for its outcome markers (its first [`MARKER_CHARS`]
/// characters).
pub(crate) fn marker_prefix(text: &str) -> &str {
    match text.char_indices().nth(MARKER_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A line's usage, when it has one (an object): counted under the message's id, else the
/// request's, else the line's uuid (`ids`, in that order); `None` without any of them.
pub(crate) fn line_usage(
    usage: &RawValue,
    ids: [Option<&str>; 3],
    model: Option<&str>,
) -> Option<LineUsage> {
    let usage: Value = serde_json::from_str(usage.get()).ok()?;
    usage.is_object().then_some(())?;
    Some(LineUsage {
        message_id: ids.into_iter().flatten().next()?.to_string(),
        model: model.unwrap_or_default().to_string(),
        tokens: Tokens::of_usage(&usage),
    })
}

/// Reads one transcript line. Lines that are not JSON, or name no tool and no usage, tell
/// nothing.
pub fn read_line(line: &[u8]) -> LineFacts {
    if !contains(line, b"\"tool_use") && !contains(line, b"\"usage\"") {
        return LineFacts::default();
    }
    let (line, _) = mend::repair_lone_surrogates(line);
    let Ok(raw) = serde_json::from_slice::<RawLine>(&line) else {
        return LineFacts::default();
    };
    let timestamp = raw
        .timestamp
        .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
        .and_then(|v| Timestamp::from_json(&v));
    let mut facts = LineFacts {
        timestamp,
        ..LineFacts::default()
    };
    let Some(message) = raw.message.as_ref() else {
        return facts;
    };
    facts.usage = message.usage.and_then(|u| {
        let ids = [&message.id, &raw.request_id, &raw.uuid].map(|c| c.as_deref());
        line_usage(u, ids, message.model.as_deref())
    });
    let blocks = message
        .content
        .filter(|c| c.get().starts_with('['))
        .and_then(|c| serde_json::from_str::<Vec<RawBlock>>(c.get()).ok())
        .unwrap_or_default();
    let kind = raw.kind.as_deref();
    for b in blocks {
        match (kind, b.kind.as_deref()) {
            (Some("assistant"), Some("tool_use")) => {
                let (Some(id), Some(name)) = (b.id, b.name) else {
                    continue;
                };
                facts.uses.push(ToolUse {
                    id: id.into_owned(),
                    name: name.into_owned(),
                    input: b.input.and_then(|i| serde_json::from_str(i.get()).ok()),
                });
            }
            (Some("user"), Some("tool_result")) => {
                let Some(id) = b.tool_use_id else { continue };
                let text = b.content.map(result_text).unwrap_or_default();
                facts.results.push(ToolResult {
                    tool_use_id: id.into_owned(),
                    outcome: outcome_of_result(b.is_error == Some(true), &text),
                    certain: true,
                });
            }
            _ => {}
        }
    }
    facts
}

/// The start of a result's text: a string, or the text of its first text block.
fn result_text(content: &RawValue) -> String {
    #[derive(Deserialize)]
    struct TextBlock<'a> {
        #[serde(borrow, default)]
        text: Option<Cow<'a, str>>,
    }
    let s = content.get();
    let text: String = if s.starts_with('"') {
        serde_json::from_str::<String>(s).unwrap_or_default()
    } else if s.starts_with('[') {
        serde_json::from_str::<Vec<TextBlock>>(s)
            .ok()
            .and_then(|v| v.into_iter().find_map(|b| b.text.map(Cow::into_owned)))
            .unwrap_or_default()
    } else {
        String::new()
    };
    marker_prefix(&text).to_string()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
