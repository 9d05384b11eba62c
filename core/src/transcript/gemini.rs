//! Gemini CLI's transcript (its chat file,
//! `~/.gemini/tmp/<project>/chats/session-<time>-<8 hex>.jsonl`) read into the common
//! vocabulary ([`LineReading`]).
//!
//! The file is a log of edits to one conversation: a metadata line, then messages
//! (`{"id", "timestamp", "type", "content", …}`, a later line with the same `id` replacing
//! the earlier one), `{"$set": {…}}` merges into the metadata (`"messages"` replaces the whole
//! list) and `{"$rewindTo": id}`. Headspace never takes a turn back, so what it reads is each
//! message the first time its id appears:
//!
//! | line | becomes |
//! |---|---|
//! | `user`, text parts (`displayContent` when present) | a user prompt, keyed by its `id` |
//! | `user`, only a `functionResponse` part, or the session context | nothing (a tool's result is on the reply's `toolCalls`) |
//! | `gemini` with text | the agent's text, keyed by its `id` (written once the reply has streamed) |
//! | `gemini` with `toolCalls` | their steps and outcomes (the same `id` again, after the tool ran) |
//! | `gemini` `tokens`, `model` | one response's usage |
//! | `info` `Request cancelled.` | the turn was interrupted, and a restatement may follow |
//! | `error` (an API error the CLI does not retry) | the turn ended |
//! | `$set` with `messages` | a restatement (if one was open) ends |
//! | `$rewindTo` (`/rewind`) | that message's turn and every later one are marked rewound, never removed |
//!
//! **Restatements.** After a refused approval Gemini CLI writes `Request cancelled.`, then
//! appends every earlier message again under new ids, then the `$set` of the new list
//! (lab notes §4). Read as news those copies would show every turn twice, so the lines
//! between the two are no turns ([`Restating`]; the engine keeps which files are inside one).
//! An interrupted reply is written nowhere, so it is no turn; its prompt was read when it
//! was written.

use crate::hook::gemini::SHELL_TOOL;
use crate::time::Timestamp;
use crate::transcript::entry::{Entry, LineError, LinePlace, Signal};
use crate::transcript::line_read::{LineReading, Restating};
use crate::transcript::mend::{self, Mended};
use crate::transcript::step_line::{LineFacts, LineUsage, ToolResult, ToolUse};
use crate::usage::step::StepOutcome;
use crate::usage::Tokens;
use serde_json::Value;

/// The id Gemini CLI gives the session context it sends before the first prompt, the same
/// in every session.
pub const SESSION_CONTEXT_ID: &str = "d04923d38bb0f6017037e74183378ef4";

/// What Gemini CLI writes when a turn is cancelled (Escape, Ctrl-C, a refused approval).
pub const CANCELLED: &str = "Request cancelled.";

/// Reads one whole chat-file line.
pub fn read_line(line: &[u8]) -> LineReading {
    let (mended_bytes, surrogates) = mend::repair_lone_surrogates(line);
    let value: Value = match serde_json::from_slice(&mended_bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return unread(LineError("not a JSON object".into())),
        Err(e) => return unread(LineError(e.to_string())),
    };
    let timestamp = value.get("timestamp").and_then(Timestamp::from_json);
    let mut facts = LineFacts {
        timestamp,
        ..LineFacts::default()
    };
    let mut restating = Restating::No;
    let rewinds_to = str_of(&value, "$rewindTo")
        .filter(|id| !id.is_empty())
        .map(str::to_string);
    let id = str_of(&value, "id").filter(|id| !id.is_empty());
    let mut entry = match (str_of(&value, "type"), id) {
        (Some("user"), Some(id)) if id != SESSION_CONTEXT_ID => {
            let shown = value.get("displayContent").filter(|c| !c.is_null());
            let text = typed_text(shown.unwrap_or(&value["content"]));
            if text.is_empty() {
                Entry::Ignored
            } else {
                Entry::UserPrompt {
                    uuid: id.to_string(),
                    timestamp,
                    text,
                    prompt_id: None,
                }
            }
        }
        (Some("gemini"), Some(id)) => {
            read_tool_calls(&value, &mut facts);
            facts.usage = usage_of(&value, id);
            let text = reply_text(&value["content"]);
            if !text.is_empty() {
                Entry::AgentText {
                    uuid: id.to_string(),
                    timestamp,
                    text,
                }
            } else if !facts.uses.is_empty() {
                Entry::Signal {
                    timestamp,
                    signal: Signal::ToolUse,
                }
            } else {
                Entry::Ignored
            }
        }
        (Some("info"), _) if value["content"].as_str().map(str::trim) == Some(CANCELLED) => {
            restating = Restating::Begins;
            Entry::Signal {
                timestamp,
                signal: Signal::Interrupt,
            }
        }
        (Some("error"), _) => Entry::Signal {
            timestamp,
            signal: Signal::TurnDuration,
        },
        _ => {
            if value
                .get("$set")
                .is_some_and(|set| set.get("messages").is_some())
            {
                restating = Restating::Ends;
            }
            Entry::Ignored
        }
    };
    let nuls = entry.replace_nul();
    LineReading {
        entry: Ok((entry, Mended { nuls, surrogates })),
        facts,
        place: LinePlace::default(),
        restating,
        rewinds_to,
    }
}

/// What a line too long to read whole says of restatements, from its first bytes: the
/// `$set` of the whole message list (which holds the whole history, so it is the line that
/// grows past any limit) ends one; nothing else that long does.
pub fn restating_of_head(head: &[u8]) -> Restating {
    let start: String = String::from_utf8_lossy(&head[..head.len().min(64)])
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if start.starts_with("{\"$set\":{\"messages\"") {
        Restating::Ends
    } else {
        Restating::No
    }
}

/// A line that is not a JSON object: no entry, nothing else.
fn unread(e: LineError) -> LineReading {
    LineReading {
        entry: Err(e),
        facts: LineFacts::default(),
        place: LinePlace::default(),
        restating: Restating::No,
        rewinds_to: None,
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The text parts of a user message the user typed, joined: not the session context Gemini
/// sends before the first prompt (a restated first prompt carries it in the same message),
/// not a compression's `<state_snapshot>`.
fn typed_text(content: &Value) -> String {
    let parts: Vec<&str> = match content {
        Value::String(s) => vec![s.as_str()],
        Value::Array(parts) => parts.iter().filter_map(|p| str_of(p, "text")).collect(),
        _ => Vec::new(),
    };
    parts
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .filter(|t| !t.starts_with("<session_context>") && !t.starts_with("<state_snapshot>"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A reply's text: the string Gemini writes live, or the text parts (not thoughts) of a
/// message restated as parts.
fn reply_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.trim().to_string(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
            .filter_map(|p| str_of(p, "text"))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// The reply's `toolCalls`, each a step begun and, once it has a status, ended. The shell
/// tool is `Bash {command}`, as its hooks are read ([`crate::hook::gemini`]).
fn read_tool_calls(value: &Value, facts: &mut LineFacts) {
    let Some(calls) = value.get("toolCalls").and_then(Value::as_array) else {
        return;
    };
    for call in calls {
        let Some(id) = str_of(call, "id").filter(|id| !id.is_empty()) else {
            continue;
        };
        let name = str_of(call, "name").unwrap_or("tool");
        let args = call.get("args").cloned();
        let (name, input) = match (name, &args) {
            (SHELL_TOOL, Some(a)) => (
                "Bash".to_string(),
                Some(
                    serde_json::json!({ "command": a.get("command").cloned().unwrap_or(Value::Null) }),
                ),
            ),
            _ => (name.to_string(), args),
        };
        facts.uses.push(ToolUse {
            id: id.to_string(),
            name,
            input,
        });
        let outcome = match str_of(call, "status") {
            Some("success") => StepOutcome::Ok,
            Some("error") => StepOutcome::Error,
            Some("cancelled") if call.to_string().contains("User denied") => StepOutcome::Denied,
            Some("cancelled") => StepOutcome::Interrupted,
            _ => continue,
        };
        facts.results.push(ToolResult {
            tool_use_id: id.to_string(),
            outcome,
            certain: true,
        });
    }
}

/// One response's tokens (`tokens`, with the reply's `model`): Gemini counts cached input
/// inside the input and bills thinking as output.
fn usage_of(value: &Value, id: &str) -> Option<LineUsage> {
    let tokens = value.get("tokens").filter(|t| t.is_object())?;
    let n = |k: &str| tokens.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(LineUsage {
        message_id: id.to_string(),
        model: str_of(value, "model").unwrap_or("").to_string(),
        tokens: Tokens {
            input: n("input").saturating_sub(n("cached")),
            output: n("output") + n("thoughts"),
            cache_creation: 0,
            cache_read: n("cached"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> LineReading {
        read_line(&serde_json::to_vec(&v).unwrap())
    }

    fn entry(v: Value) -> Entry {
        read(v).entry.unwrap().0
    }

    #[test]
    fn prompts_and_replies_are_turns_keyed_by_their_ids_and_the_rest_is_not() {
        let at = "2026-11-27T17:35:56.304Z";
        assert!(matches!(
            entry(json!({"id": "u1", "timestamp": at, "type": "user", "content": [{"text": "hello gemini"}]})),
            Entry::UserPrompt { uuid, text, .. } if uuid == "u1" && text == "hello gemini"
        ));
        assert!(matches!(
            entry(json!({"id": "g1", "timestamp": at, "type": "gemini", "content": "Hello!", "model": "gemini-2.5-pro",
                "tokens": {"input": 100, "output": 7, "cached": 40, "thoughts": 3, "tool": 0, "total": 110}})),
            Entry::AgentText { uuid, text, .. } if uuid == "g1" && text == "Hello!"
        ));
        // The session context, a tool's result, metadata and `$set` lines are no turns.
        for v in [
            json!({"id": SESSION_CONTEXT_ID, "type": "user", "content": [{"text": "<session_context>\nThis is the Gemini CLI.</session_context>"}]}),
            json!({"id": "u2", "type": "user", "content": [{"functionResponse": {"id": "x", "name": "run_shell_command", "response": {}}}]}),
            json!({"sessionId": "3dd3ebf6-0000", "projectHash": "ab", "startTime": at, "kind": "main"}),
            json!({"$set": {"lastUpdated": at}}),
            json!({"id": "i1", "type": "info", "content": ""}),
        ] {
            assert_eq!(entry(v.clone()), Entry::Ignored, "{v}");
        }
        let usage = read(
            json!({"id": "g1", "type": "gemini", "content": "Hi", "model": "gemini-2.5-pro",
            "tokens": {"input": 100, "output": 7, "cached": 40, "thoughts": 3}}),
        )
        .facts
        .usage
        .unwrap();
        assert_eq!(usage.model, "gemini-2.5-pro");
        assert_eq!(
            (
                usage.tokens.input,
                usage.tokens.output,
                usage.tokens.cache_read
            ),
            (60, 10, 40)
        );
    }

    #[test]
    fn a_rewind_names_the_message_it_goes_back_to_and_is_no_turn() {
        let r = read(json!({"$rewindTo": "u2"}));
        assert_eq!(r.rewinds_to.as_deref(), Some("u2"));
        assert_eq!(r.entry.unwrap().0, Entry::Ignored);
        assert_eq!(read(json!({"$set": {"lastUpdated": "x"}})).rewinds_to, None);
    }

    #[test]
    fn a_reply_with_tool_calls_is_its_steps_and_their_outcomes() {
        let r = read(
            json!({"id": "g2", "type": "gemini", "content": "I'll run a command.", "toolCalls": [
                {"id": "run_shell_command__run_shell_command_1_0", "name": "run_shell_command",
                 "args": {"command": "echo hi", "description": "d"}, "status": "success"},
                {"id": "run_shell_command__run_shell_command_2_0", "name": "run_shell_command",
                 "args": {"command": "touch x"}, "status": "cancelled",
                 "result": [{"functionResponse": {"response": {"error": "[Operation Cancelled] Reason: User denied execution."}}}]}
            ]}),
        );
        assert_eq!(r.facts.uses.len(), 2);
        assert_eq!(r.facts.uses[0].name, "Bash");
        assert_eq!(r.facts.uses[0].input, Some(json!({"command": "echo hi"})));
        let outcomes: Vec<StepOutcome> = r.facts.results.iter().map(|x| x.outcome).collect();
        assert_eq!(outcomes, [StepOutcome::Ok, StepOutcome::Denied]);
    }

    #[test]
    fn a_cancelled_request_opens_a_restatement_and_the_new_list_closes_it() {
        let cancelled = read(json!({"id": "i1", "type": "info", "content": "Request cancelled."}));
        assert_eq!(cancelled.restating, Restating::Begins);
        assert!(matches!(
            cancelled.entry.unwrap().0,
            Entry::Signal {
                signal: Signal::Interrupt,
                ..
            }
        ));
        let list = read(json!({"$set": {"messages": []}}));
        assert_eq!(list.restating, Restating::Ends);
        assert_eq!(
            restating_of_head(
                br#"{"$set": {"messages": [{"id": "c1", "type": "user", "content": [{"text": "ve"#
            ),
            Restating::Ends,
            "a list too long to read whole still ends the restatement"
        );
        assert_eq!(
            restating_of_head(br#"{"id":"g1","type":"gemini","content":"a"#),
            Restating::No
        );
        // A restated first prompt carries the session context: only the prompt is text.
        assert!(matches!(
            entry(json!({"id": "c1", "type": "user", "content": [
                {"text": "<session_context>\nctx\n</session_context>"}, {"text": "please create a file"}]})),
            Entry::UserPrompt { text, .. } if text == "please create a file"
        ));
        assert!(matches!(
            entry(json!({"id": "e1", "type": "error", "content": "[API Error: 400]"})),
            Entry::Signal {
                signal: Signal::TurnDuration,
                ..
            }
        ));
    }
}
