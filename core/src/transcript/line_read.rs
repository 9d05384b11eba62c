//! One borrowed pass over a whole transcript line, for everything the core reads from it:
//! its entry ([`crate::transcript::entry::classify_mended`]), its steps and usage
//! (`crate::transcript::step_line::read_line`) and its place ([`crate::transcript::entry::line_place`]).
//!
//! Those three readers each parse the line on their own, and parse its content and a tool
//! result's output again (one into a `serde_json::Value`): ingest ran at 0.4× a plain `Value`
//! parse of the same lines. Here the line is parsed once (`crate::transcript::line_shape`), borrowing
//! its strings and skipping what no reader uses, and the three answers are made from that.
//!
//! The answers are exactly theirs: a line this pass is not sure to read as they do (not
//! UTF-8, blank, a lone surrogate to mend, a wrong type or a repeated key anywhere they look,
//! an AskUserQuestion's answers) is read by them instead ([`read_apart`]), and
//! `core/tests/line_read.rs` compares both on generated and real lines. The rules applied
//! once a line is parsed are theirs, shared (`entry::system_entry`, `prompt_text`,
//! `assistant_blocks_entry`, `LinePlace::from_fields`, `step_line::line_usage`,
//! `marker_prefix`); only the parsing differs, which is what that test guards.

use crate::time::Timestamp;
use crate::transcript::entry::{self, user_text_entry, Entry, LineError, LinePlace};
use crate::transcript::line_shape::{BlockShape, Content, LineShape, Object, ResultContent};
use crate::transcript::mend::{self, Mended};
use crate::transcript::step_line::{self, LineFacts, ToolResult, ToolUse};
use crate::usage::step::outcome_of_result;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// Everything the core reads from one whole transcript line.
#[derive(Debug, PartialEq)]
pub struct LineReading {
    /// What [`entry::classify_mended`] says of it.
    pub entry: Result<(Entry, Mended), LineError>,
    /// What `step_line::read_line` says of it.
    /// The empty default when it tells nothing about steps or usage.
    pub facts: LineFacts,
    /// What [`entry::line_place`] says of it.
    pub place: LinePlace,
    /// Whether it opens or closes a restatement (always [`Restating::No`] for Claude Code).
    pub restating: Restating,
    /// The id of the message from which the CLI took its conversation back (Gemini CLI's
    /// `$rewindTo` after `/rewind`): that message's turn and every later one of the session
    /// are marked rewound, never removed.
    pub rewinds_to: Option<String>,
}

/// A line that opens or closes a stretch of lines in which the CLI writes earlier messages
/// again under new ids (Gemini CLI, after a refused approval, re-appends its whole history
/// before it states the list): nothing read inside such a stretch is a new turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restating {
    /// Neither.
    #[default]
    No,
    /// The lines after this one restate earlier messages.
    Begins,
    /// The restatement (if any) ends with this line.
    Ends,
}

/// Whether a transcript's reading is inside a restatement, line after line: the one rule the
/// engine and the audit both follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Restatement {
    inside: bool,
}

impl Restatement {
    /// Takes the next line's mark; true when that line restates an earlier message (it lies
    /// after a [`Restating::Begins`] and before the next [`Restating::Ends`]).
    pub fn restates(&mut self, mark: Restating) -> bool {
        let inside = self.inside;
        self.inside = match mark {
            Restating::Begins => true,
            Restating::Ends => false,
            Restating::No => inside,
        };
        inside
    }

    /// True inside a restatement (after its first line, before its last).
    pub fn is_open(&self) -> bool {
        self.inside
    }
}

/// Reads one whole transcript line in one pass (or, for an odd line, with [`read_apart`]).
pub fn read_whole_line(line: &[u8]) -> LineReading {
    read_in_one_pass(line).unwrap_or_else(|| read_apart(line))
}

/// Reads one whole transcript line with the three readers, each on its own: what
/// [`read_whole_line`] answers, by definition.
pub fn read_apart(line: &[u8]) -> LineReading {
    let facts = step_line::read_line(line);
    LineReading {
        restating: Restating::No,
        rewinds_to: None,
        entry: entry::classify_mended(line),
        facts: if facts.is_empty() {
            LineFacts::default()
        } else {
            facts
        },
        place: entry::line_place(line),
    }
}

/// The one-pass reading, or `None` when the line must be read apart ([`read_apart`]).
pub fn read_in_one_pass(line: &[u8]) -> Option<LineReading> {
    let text = std::str::from_utf8(line).ok()?;
    if line.trim_ascii().is_empty() {
        return None;
    }
    // A lone surrogate makes the readers parse a mended copy (and the place reader the
    // original): rare enough to leave to them.
    if text.contains("\\u") && mend::repair_lone_surrogates(line).1 > 0 {
        return None;
    }
    let Object(shape) = serde_json::from_str::<Object<LineShape<'_>>>(text).ok()?;
    let timestamp = timestamp_of(shape.timestamp);
    let facts = facts_of(&shape, text, timestamp);
    let place = place_of(&shape);
    // Last, as it takes a tool result's text out of the line.
    let mut entry = entry_of(shape, timestamp);
    let nuls = entry.replace_nul();
    let mended = Mended {
        nuls,
        surrogates: 0,
    };
    Some(LineReading {
        restating: Restating::No,
        rewinds_to: None,
        entry: Ok((entry, mended)),
        facts,
        place,
    })
}

/// The line's `timestamp`, as the readers take it ([`Timestamp::from_json`]).
fn timestamp_of(raw: Option<&RawValue>) -> Option<Timestamp> {
    let raw = raw?.get();
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        // A string without escapes is its own text: no need to build a `Value`.
        Some(plain) if !plain.contains('\\') => Timestamp::from_json_str(plain),
        _ => serde_json::from_str::<Value>(raw)
            .ok()
            .and_then(|v| Timestamp::from_json(&v)),
    }
}

/// What [`entry::classify_mended`] makes of the line (before NULs are replaced).
fn entry_of(raw: LineShape<'_>, timestamp: Option<Timestamp>) -> Entry {
    if raw.is_sidechain == Some(true) {
        return Entry::Ignored;
    }
    let uuid = entry::non_empty(raw.uuid.as_deref());
    match raw.kind.as_deref() {
        Some("system") => entry::system_entry(raw.subtype.as_deref(), timestamp),
        Some("user") => user_entry(raw, uuid, timestamp),
        Some("assistant") => assistant_entry(&raw, uuid, timestamp),
        _ => Entry::Ignored,
    }
}

fn content_of<'s, 'a>(raw: &'s LineShape<'a>) -> Option<&'s Content<'a>> {
    raw.message.as_ref()?.0.content.as_ref()
}

fn user_entry(raw: LineShape<'_>, uuid: Option<String>, timestamp: Option<Timestamp>) -> Entry {
    if raw.is_meta == Some(true) || raw.is_compact_summary == Some(true) {
        return Entry::Ignored;
    }
    let text: Cow<'_, str> = match raw.message.and_then(|m| m.0.content) {
        None | Some(Content::Other) => return Entry::Ignored,
        Some(Content::Text(t)) => t,
        Some(Content::Blocks(mut blocks)) => {
            if let Some(at) = blocks
                .iter()
                .position(|b| b.kind.as_deref() == Some("tool_result"))
            {
                let Some(uuid) = uuid else {
                    return Entry::Ignored;
                };
                let result = blocks.swap_remove(at);
                return Entry::ToolResult {
                    uuid,
                    timestamp,
                    tool_use_id: result.tool_use_id.map(Cow::into_owned),
                    // A `toolUseResult` with answers was left to the entry reader.
                    answers: None,
                    text: result.content.map(whole_text).unwrap_or_default(),
                };
            }
            Cow::Owned(entry::prompt_text(
                blocks
                    .iter()
                    .filter(|b| b.kind.as_deref() == Some("text"))
                    .filter_map(|b| b.text.as_deref()),
            ))
        }
    };
    user_text_entry(
        &text,
        uuid,
        timestamp,
        entry::non_empty(raw.prompt_id.as_deref()),
    )
}

fn assistant_entry(
    raw: &LineShape<'_>,
    uuid: Option<String>,
    timestamp: Option<Timestamp>,
) -> Entry {
    let message = raw.message.as_ref().map(|m| &m.0);
    if message.and_then(|m| m.model.as_deref()) == Some("<synthetic>") {
        return Entry::Ignored;
    }
    let Some(Content::Blocks(blocks)) = content_of(raw) else {
        return Entry::Ignored;
    };
    let Some(uuid) = uuid else {
        return Entry::Ignored;
    };
    let question = blocks.iter().find(|b| {
        b.kind.as_deref() == Some("tool_use") && b.name.as_deref() == Some("AskUserQuestion")
    });
    entry::assistant_blocks_entry(
        uuid,
        timestamp,
        question.map(|q| (q.id.as_deref(), q.input)),
        blocks
            .iter()
            .filter(|b| b.kind.as_deref() == Some("text"))
            .filter_map(|b| b.text.as_deref()),
        blocks.iter().any(|b| b.kind.as_deref() == Some("tool_use")),
    )
}

/// A tool result's whole text, as the entry reader takes it: the string, or its items'
/// texts joined by newlines.
fn whole_text(content: ResultContent<'_>) -> String {
    match content {
        ResultContent::Text(t) => t.into_owned(),
        ResultContent::Items(items) => items
            .iter()
            .filter_map(|t| t.as_deref())
            .collect::<Vec<_>>()
            .join("\n"),
        ResultContent::Other => String::new(),
    }
}

/// The start of a tool result's text, as the step reader takes it: the string, or its first
/// item's text.
fn marker_text<'a>(content: &'a ResultContent<'_>) -> &'a str {
    let text: &str = match content {
        ResultContent::Text(t) => t,
        ResultContent::Items(items) => items.iter().find_map(|t| t.as_deref()).unwrap_or(""),
        ResultContent::Other => "",
    };
    step_line::marker_prefix(text)
}

/// What [`step_line::read_line`] makes of the line, except that a reading that tells nothing
/// is always the empty default (the step reader's keeps the line's timestamp when the line
/// names a tool or a usage; the engine ignores a reading that tells nothing either way).
fn facts_of(raw: &LineShape<'_>, line: &str, timestamp: Option<Timestamp>) -> LineFacts {
    let Some(Object(message)) = raw.message.as_ref() else {
        return LineFacts::default();
    };
    let usage = message.usage.and_then(|u| {
        let ids = [&message.id, &raw.request_id, &raw.uuid].map(|c| c.as_deref());
        step_line::line_usage(u, ids, message.model.as_deref())
    });
    let (mut uses, mut results) = (Vec::new(), Vec::new());
    if let Some(Content::Blocks(blocks)) = message.content.as_ref() {
        let kind = raw.kind.as_deref();
        for b in blocks {
            match (kind, b.kind.as_deref()) {
                (Some("assistant"), Some("tool_use")) => uses.extend(tool_use_of(b)),
                (Some("user"), Some("tool_result")) => {
                    let Some(id) = b.tool_use_id.as_deref() else {
                        continue;
                    };
                    let text = b.content.as_ref().map(marker_text).unwrap_or_default();
                    results.push(ToolResult {
                        tool_use_id: id.to_string(),
                        outcome: outcome_of_result(b.is_error == Some(true), text),
                        certain: true,
                    });
                }
                _ => {}
            }
        }
    }
    // The step reader reads only lines that name a tool or a usage (an escaped key does not).
    let named = || line.contains("\"tool_use") || line.contains("\"usage\"");
    if (uses.is_empty() && results.is_empty() && usage.is_none()) || !named() {
        return LineFacts::default();
    }
    LineFacts {
        timestamp,
        uses,
        results,
        usage,
        model: None,
    }
}

fn tool_use_of(b: &BlockShape<'_>) -> Option<ToolUse> {
    Some(ToolUse {
        id: b.id.as_deref()?.to_string(),
        name: b.name.as_deref()?.to_string(),
        input: b.input.and_then(|i| serde_json::from_str(i.get()).ok()),
    })
}

/// What [`entry::line_place`] makes of the line.
fn place_of(raw: &LineShape<'_>) -> LinePlace {
    LinePlace::from_fields(raw.cwd.as_deref(), raw.git_branch.as_deref())
}
