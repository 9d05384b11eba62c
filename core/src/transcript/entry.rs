//! What one transcript line means: a turn, an activity signal, or nothing.
//!
//! Claude Code's transcript format "is internal and changes between versions", so every field
//! is optional and unknown line types are ignored. Large fields (tool results, tool inputs)
//! are borrowed as raw JSON and never parsed unless needed.

use crate::time::Timestamp;
use crate::transcript::commands::{custom_command, BLOCKED_BY_HOOK};
pub use crate::transcript::commands::{is_local_command, is_machinery_text, slash_command};
use crate::transcript::mend::{self, Mended};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// A transcript line that is not JSON: reported and skipped, the lines around it are kept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("transcript line is not JSON: {0}")]
pub struct LineError(pub String);

/// The meaning of one transcript line.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// A typed user prompt (actor user; intent command or answer).
    UserPrompt {
        /// The line's `uuid`, the turn's durable key.
        uuid: String,
        /// The line's timestamp.
        timestamp: Option<Timestamp>,
        /// The prompt text, context blocks left out, trimmed.
        text: String,
        /// `promptId` (Claude Code ≥ 2.1.196).
        prompt_id: Option<String>,
    },
    /// An assistant text block (actor agent).
    AgentText {
        /// The line's `uuid`.
        uuid: String,
        /// The line's timestamp.
        timestamp: Option<Timestamp>,
        /// The text.
        text: String,
    },
    /// An AskUserQuestion tool call (actor agent, intent question).
    AgentQuestion {
        /// The line's `uuid`.
        uuid: String,
        /// The line's timestamp.
        timestamp: Option<Timestamp>,
        /// The `tool_use` block's id.
        tool_use_id: Option<String>,
        /// The questions joined by newlines.
        text: String,
        /// The tool input: questions and their options.
        question: serde_json::Value,
    },
    /// A tool result line; an answer when it answers an AskUserQuestion.
    ToolResult {
        /// The line's `uuid`.
        uuid: String,
        /// The line's timestamp.
        timestamp: Option<Timestamp>,
        /// The id of the tool call it answers.
        tool_use_id: Option<String>,
        /// The answer text when `toolUseResult.answers` is present.
        answers: Option<String>,
        /// The result's text content.
        text: String,
    },
    /// Claude Code's notice in place of a prompt a UserPromptSubmit hook blocked
    /// (`Operation stopped by hook: REASON`): the user saw it, so it is a turn (actor agent,
    /// intent end of task), and like an interrupt it ends the turn (the model never ran).
    Notice {
        /// The line's `uuid`.
        uuid: String,
        /// The line's timestamp.
        timestamp: Option<Timestamp>,
        /// The notice as Claude Code shows it.
        text: String,
    },
    /// A line that is not a turn but tells about the agent's activity.
    Signal {
        /// The line's timestamp.
        timestamp: Option<Timestamp>,
        /// What it signals.
        signal: Signal,
    },
    /// Anything else (unknown types, meta lines, sidechains, tool calls, blank text).
    Ignored,
}

impl Entry {
    /// The line's uuid, when the entry has one.
    pub fn uuid(&self) -> Option<&str> {
        match self {
            Entry::UserPrompt { uuid, .. }
            | Entry::AgentText { uuid, .. }
            | Entry::Notice { uuid, .. }
            | Entry::AgentQuestion { uuid, .. }
            | Entry::ToolResult { uuid, .. } => Some(uuid),
            Entry::Signal { .. } | Entry::Ignored => None,
        }
    }

    /// The line's timestamp, when it has one.
    pub fn timestamp(&self) -> Option<Timestamp> {
        match self {
            Entry::UserPrompt { timestamp, .. }
            | Entry::AgentText { timestamp, .. }
            | Entry::Notice { timestamp, .. }
            | Entry::AgentQuestion { timestamp, .. }
            | Entry::ToolResult { timestamp, .. }
            | Entry::Signal { timestamp, .. } => *timestamp,
            Entry::Ignored => None,
        }
    }

    /// Replaces NUL characters, which PostgreSQL's `TEXT` and `JSONB` refuse, with U+FFFD in
    /// every string the entry holds; returns how many there were.
    pub fn replace_nul(&mut self) -> usize {
        use mend::{replace_nul as nul, replace_nul_opt as opt};
        match self {
            Entry::UserPrompt {
                uuid,
                text,
                prompt_id,
                ..
            } => nul(uuid) + nul(text) + opt(prompt_id),
            Entry::AgentText { uuid, text, .. } | Entry::Notice { uuid, text, .. } => {
                nul(uuid) + nul(text)
            }
            Entry::AgentQuestion {
                uuid,
                tool_use_id,
                text,
                question,
                ..
            } => nul(uuid) + opt(tool_use_id) + nul(text) + mend::replace_nul_in_json(question),
            Entry::ToolResult {
                uuid,
                tool_use_id,
                answers,
                text,
                ..
            } => nul(uuid) + opt(tool_use_id) + opt(answers) + nul(text),
            Entry::Signal { .. } | Entry::Ignored => 0,
        }
    }
}

/// Activity signals found in transcripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// `[Request interrupted by user…]`: the turn ended without a Stop hook.
    Interrupt,
    /// `system/turn_duration`: the turn ended.
    TurnDuration,
    /// `system/stop_hook_summary`: the Stop hooks ran, the turn ended.
    StopHookSummary,
    /// `system/compact_boundary`: the conversation was compacted.
    CompactBoundary,
    /// An assistant tool call: the agent is working.
    ToolUse,
}

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    is_compact_summary: Option<bool>,
    #[serde(rename = "promptId", borrow, default)]
    prompt_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<RawMessage<'a>>,
    #[serde(rename = "toolUseResult", borrow, default)]
    tool_use_result: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// Classifies one transcript line. Blank lines are `Ignored`; a line that is not JSON is an
/// error the caller reports and skips. Text a store or parser would refuse is mended as in
/// [`classify_mended`].
pub fn classify(line: &[u8]) -> Result<Entry, LineError> {
    classify_mended(line).map(|(entry, _)| entry)
}

/// Classifies one transcript line, mending what would lose its turn: unpaired surrogate
/// escapes (which `serde_json` refuses) become `\uFFFD` before parsing, and NUL characters
/// (which PostgreSQL refuses) become U+FFFD in the entry. Says what was mended, for the log.
pub fn classify_mended(line: &[u8]) -> Result<(Entry, Mended), LineError> {
    if line.trim_ascii().is_empty() {
        return Ok((Entry::Ignored, Mended::default()));
    }
    let (line, surrogates) = mend::repair_lone_surrogates(line);
    let mut entry = parse_line(&line)?;
    let nuls = entry.replace_nul();
    Ok((entry, Mended { nuls, surrogates }))
}

fn parse_line(line: &[u8]) -> Result<Entry, LineError> {
    let raw: RawLine = serde_json::from_slice(line).map_err(|e| LineError(e.to_string()))?;
    if raw.is_sidechain == Some(true) {
        return Ok(Entry::Ignored);
    }
    let timestamp = raw
        .timestamp
        .and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok())
        .and_then(|v| Timestamp::from_json(&v));
    let uuid = non_empty(raw.uuid.as_deref());
    match raw.kind.as_deref() {
        Some("system") => Ok(system_entry(raw.subtype.as_deref(), timestamp)),
        Some("user") => Ok(classify_user(&raw, uuid, timestamp)),
        Some("assistant") => Ok(classify_assistant(&raw, uuid, timestamp)),
        _ => Ok(Entry::Ignored),
    }
}

fn signal(timestamp: Option<Timestamp>, signal: Signal) -> Entry {
    Entry::Signal { timestamp, signal }
}

// The rules both readers apply once a line is parsed: this one (whole lines, the fallback
// and the oracle) and the one-pass reader (`line_read`).

/// A field that counts only when not empty (`uuid`, `promptId`).
pub(crate) fn non_empty(field: Option<&str>) -> Option<String> {
    field.filter(|f| !f.is_empty()).map(str::to_string)
}

/// The signal a `system` line with `subtype` gives, if any.
pub(crate) fn system_entry(subtype: Option<&str>, timestamp: Option<Timestamp>) -> Entry {
    match subtype {
        Some("turn_duration") => signal(timestamp, Signal::TurnDuration),
        Some("stop_hook_summary") => signal(timestamp, Signal::StopHookSummary),
        Some("compact_boundary") => signal(timestamp, Signal::CompactBoundary),
        _ => Entry::Ignored,
    }
}

/// A user prompt's text from its text blocks: what the IDE and system reminders added is
/// left out.
pub(crate) fn prompt_text<'t>(texts: impl Iterator<Item = &'t str>) -> String {
    texts
        .filter(|t| {
            let t = t.trim_start();
            !t.starts_with("<ide_") && !t.starts_with("<system-reminder>")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What an assistant line with blocks says, from the parts both readers find in it: its
/// AskUserQuestion (`question`: the block's id and input), else its non-blank texts, else a
/// tool call (`calls_tool`).
pub(crate) fn assistant_blocks_entry<'t>(
    uuid: String,
    timestamp: Option<Timestamp>,
    question: Option<(Option<&str>, Option<&RawValue>)>,
    texts: impl Iterator<Item = &'t str>,
    calls_tool: bool,
) -> Entry {
    if let Some((id, input)) = question {
        let question: serde_json::Value = input
            .and_then(|i| serde_json::from_str(i.get()).ok())
            .unwrap_or(serde_json::Value::Null);
        return Entry::AgentQuestion {
            uuid,
            timestamp,
            tool_use_id: id.map(str::to_string),
            text: question_text(&question),
            question,
        };
    }
    let texts: Vec<&str> = texts.filter(|t| !t.trim().is_empty()).collect();
    if !texts.is_empty() {
        return Entry::AgentText {
            uuid,
            timestamp,
            text: texts.join("\n").trim().to_string(),
        };
    }
    if calls_tool {
        return signal(timestamp, Signal::ToolUse);
    }
    Entry::Ignored
}

enum Content<'a> {
    Text(String),
    Blocks(Vec<RawBlock<'a>>),
}

fn content<'a>(raw: &'a RawLine<'a>) -> Option<Content<'a>> {
    let c = raw.message.as_ref()?.content?;
    let s = c.get();
    if s.starts_with('"') {
        serde_json::from_str::<String>(s).ok().map(Content::Text)
    } else if s.starts_with('[') {
        serde_json::from_str::<Vec<RawBlock<'a>>>(s)
            .ok()
            .map(Content::Blocks)
    } else {
        None
    }
}

fn classify_user(raw: &RawLine<'_>, uuid: Option<String>, timestamp: Option<Timestamp>) -> Entry {
    if raw.is_meta == Some(true) || raw.is_compact_summary == Some(true) {
        return Entry::Ignored;
    }
    let Some(content) = content(raw) else {
        return Entry::Ignored;
    };
    let text = match content {
        Content::Text(t) => t,
        Content::Blocks(blocks) => {
            if let Some(result) = blocks
                .iter()
                .find(|b| b.kind.as_deref() == Some("tool_result"))
            {
                let Some(uuid) = uuid else {
                    return Entry::Ignored;
                };
                return Entry::ToolResult {
                    uuid,
                    timestamp,
                    tool_use_id: result.tool_use_id.as_deref().map(str::to_string),
                    answers: raw.tool_use_result.and_then(answers_text),
                    text: result.content.map(raw_text).unwrap_or_default(),
                };
            }
            prompt_text(
                blocks
                    .iter()
                    .filter(|b| b.kind.as_deref() == Some("text"))
                    .filter_map(|b| b.text.as_deref()),
            )
        }
    };
    user_text_entry(&text, uuid, timestamp, non_empty(raw.prompt_id.as_deref()))
}

/// Where a transcript line says its session works: its folder and git branch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinePlace {
    /// `cwd`, when it is an absolute path.
    pub cwd: Option<String>,
    /// `gitBranch`, when not empty (Claude Code writes "" outside a repository).
    pub git_branch: Option<String>,
}

impl LinePlace {
    /// The place a line's `cwd` and `gitBranch` fields say: a folder only when it is an
    /// absolute path, a branch only when not blank.
    pub fn from_fields(cwd: Option<&str>, git_branch: Option<&str>) -> LinePlace {
        LinePlace {
            cwd: cwd.filter(|c| c.starts_with('/')).map(str::to_string),
            git_branch: git_branch
                .filter(|b| !b.trim().is_empty())
                .map(str::to_string),
        }
    }
}

/// The folder and git branch a transcript line names, read on their own.
pub fn line_place(line: &[u8]) -> LinePlace {
    #[derive(Deserialize)]
    struct Place<'a> {
        #[serde(borrow, default)]
        cwd: Option<Cow<'a, str>>,
        #[serde(borrow, default, rename = "gitBranch")]
        git_branch: Option<Cow<'a, str>>,
    }
    let Ok(p) = serde_json::from_slice::<Place<'_>>(line) else {
        return LinePlace::default();
    };
    LinePlace::from_fields(p.cwd.as_deref(), p.git_branch.as_deref())
}

/// What the text of a user line (not a tool result) is: the end of a turn (an interrupt, or
/// a prompt a hook blocked), nothing (empty, or machinery), or a prompt. Whole and truncated
/// lines alike (`crate::transcript::truncated`).
pub fn user_text_entry(
    text: &str,
    uuid: Option<String>,
    timestamp: Option<Timestamp>,
    prompt_id: Option<String>,
) -> Entry {
    let typed = custom_command(text);
    let text = typed.as_deref().unwrap_or(text.trim());
    // A prompt a UserPromptSubmit hook blocked: Claude Code writes this notice as a user line
    // and the model never runs, so no Stop comes; like an interrupt, it ends the turn. The
    // user saw the notice in place of the prompt: it is a turn too.
    if text.starts_with(BLOCKED_BY_HOOK) {
        if let Some(uuid) = uuid {
            return Entry::Notice {
                uuid,
                timestamp,
                text: text.to_string(),
            };
        }
    }
    if text.starts_with("[Request interrupted by user") || text.starts_with(BLOCKED_BY_HOOK) {
        return signal(timestamp, Signal::Interrupt);
    }
    if text.is_empty() || is_machinery_text(text) {
        return Entry::Ignored;
    }
    let Some(uuid) = uuid else {
        return Entry::Ignored;
    };
    Entry::UserPrompt {
        uuid,
        timestamp,
        text: text.to_string(),
        prompt_id,
    }
}

fn classify_assistant(
    raw: &RawLine<'_>,
    uuid: Option<String>,
    timestamp: Option<Timestamp>,
) -> Entry {
    if raw.message.as_ref().and_then(|m| m.model.as_deref()) == Some("<synthetic>") {
        return Entry::Ignored;
    }
    let Some(Content::Blocks(blocks)) = content(raw) else {
        return Entry::Ignored;
    };
    let Some(uuid) = uuid else {
        return Entry::Ignored;
    };
    let question = blocks.iter().find(|b| {
        b.kind.as_deref() == Some("tool_use") && b.name.as_deref() == Some("AskUserQuestion")
    });
    assistant_blocks_entry(
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

/// The questions of an AskUserQuestion input, one per line.
pub fn question_text(input: &serde_json::Value) -> String {
    let qs: Vec<&str> = input
        .get("questions")
        .and_then(|q| q.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|q| q.get("question")?.as_str())
                .collect()
        })
        .unwrap_or_default();
    if qs.is_empty() {
        input
            .get("question")
            .and_then(|q| q.as_str())
            .unwrap_or("")
            .trim()
            .to_string()
    } else {
        qs.join("\n").trim().to_string()
    }
}

fn answers_text(r: &RawValue) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(r.get()).ok()?;
    let answers = v.get("answers")?.as_object()?;
    let parts: Vec<String> = answers
        .values()
        .map(|a| match a {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    Some(parts.join("\n"))
}

fn raw_text(r: &RawValue) -> String {
    match serde_json::from_str::<serde_json::Value>(r.get()) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ide_blocks_are_left_out_of_prompts() {
        let line = br#"{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"<ide_opened_file>x</ide_opened_file>"},{"type":"text","text":"  do it  "}]}}"#;
        match classify(line).unwrap() {
            Entry::UserPrompt { text, .. } => assert_eq!(text, "do it"),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn machinery_lines_are_not_prompts() {
        for t in [
            "<command-name>/clear</command-name>",
            "<local-command-stdout>x</local-command-stdout>",
            "   ",
        ] {
            let line =
                serde_json::json!({"type":"user","uuid":"u","message":{"content":t}}).to_string();
            assert_eq!(classify(line.as_bytes()).unwrap(), Entry::Ignored, "{t}");
        }
        let meta = br#"{"type":"user","uuid":"u","isMeta":true,"message":{"content":"hi"}}"#;
        assert_eq!(classify(meta).unwrap(), Entry::Ignored);
        let side = br#"{"type":"assistant","uuid":"u","isSidechain":true,"message":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(classify(side).unwrap(), Entry::Ignored);
    }

    #[test]
    fn interrupt_is_a_signal() {
        let line = br#"{"type":"user","uuid":"u","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#;
        assert!(matches!(
            classify(line).unwrap(),
            Entry::Signal {
                signal: Signal::Interrupt,
                ..
            }
        ));
    }

    #[test]
    fn synthetic_and_blank_assistant_text_are_not_turns() {
        let synth = br#"{"type":"assistant","uuid":"a","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error"}]}}"#;
        assert_eq!(classify(synth).unwrap(), Entry::Ignored);
        let blank = br#"{"type":"assistant","uuid":"a","message":{"model":"m","content":[{"type":"text","text":"\n\n"}]}}"#;
        assert_eq!(classify(blank).unwrap(), Entry::Ignored);
    }

    #[test]
    fn not_json_is_an_error() {
        assert!(classify(b"{oops").is_err());
        assert_eq!(classify(b"   ").unwrap(), Entry::Ignored);
        assert_eq!(
            classify(br#"{"type":"brand-new-kind","x":1}"#).unwrap(),
            Entry::Ignored
        );
    }
}
