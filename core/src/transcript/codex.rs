//! Codex CLI's transcript (its rollout, `$CODEX_HOME/sessions/Y/M/D/rollout-<time>-<id>.jsonl`)
//! read into the common vocabulary ([`LineReading`]).
//!
//! Each line is `{"timestamp", "ordinal", "type", "payload"}`. What the reader takes:
//!
//! | line | becomes |
//! |---|---|
//! | `response_item` `message`, role `user`, typed text | a user prompt, keyed by its `id` (`msg_…`) |
//! | `response_item` `message`, role `user`, injected context (`<environment_context>…`, `<turn_aborted>…`, AGENTS.md) | nothing |
//! | `response_item` `message`, role `assistant`, with text | the agent's text, keyed by its `id` |
//! | `response_item` `function_call` / `custom_tool_call` | a tool step begins (the agent works) |
//! | `response_item` `function_call_output` / `custom_tool_call_output` | the step's outcome |
//! | `event_msg` `task_complete` | the turn ended |
//! | `event_msg` `turn_aborted` | the turn was interrupted |
//! | `token_usage_record` | one response's tokens |
//! | `session_meta`, `turn_context` | the session's folder (and branch) |
//!
//! Everything else (the `event_msg` copies of items, `world_state`, reasoning, developer
//! messages) is not a turn. An interrupted reply is never written by Codex, so it is no turn.
//! A message without an `id` (older rollouts) is keyed by a hash of its whole line, which
//! holds its millisecond timestamp and ordinal: two identical prompts are two turns.

use crate::time::Timestamp;
use crate::transcript::entry::{Entry, LineError, LinePlace, Signal};
use crate::transcript::line_read::{LineReading, Restating};
use crate::transcript::mend::{self, Mended};
use crate::transcript::step_line::{LineFacts, LineUsage, ToolResult, ToolUse};
use crate::usage::step::StepOutcome;
use crate::usage::Tokens;
use serde_json::Value;

/// Reads one whole rollout line.
pub fn read_line(line: &[u8]) -> LineReading {
    read_line_taking(line, typed_by_the_user)
}

/// [`read_line`] with the planted bug `codex-context-as-prompt`: every user message is
/// taken for a typed prompt (simulator builds only).
#[cfg(feature = "planted-bugs")]
pub fn read_line_with_context_as_prompt(line: &[u8]) -> LineReading {
    read_line_taking(line, |_, _| true)
}

/// [`read_line`], with `typed` saying which user messages are prompts.
fn read_line_taking(line: &[u8], typed: fn(&Value, &str) -> bool) -> LineReading {
    let (mended_bytes, surrogates) = mend::repair_lone_surrogates(line);
    let value: Value = match serde_json::from_slice(&mended_bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return unread(LineError("not a JSON object".into())),
        Err(e) => return unread(LineError(e.to_string())),
    };
    let timestamp = value.get("timestamp").and_then(Timestamp::from_json);
    let payload = value.get("payload").unwrap_or(&Value::Null);
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    let ptype = payload.get("type").and_then(Value::as_str).unwrap_or("");
    let mut facts = LineFacts {
        timestamp,
        ..LineFacts::default()
    };
    let mut place = LinePlace::default();
    let mut entry = match (kind, ptype) {
        ("response_item", "message") => message_entry(payload, line, timestamp, typed),
        ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
            if let Some(id) = str_of(payload, "call_id").or_else(|| str_of(payload, "id")) {
                let (name, input) = as_hooks_name_it(
                    str_of(payload, "name").unwrap_or("shell"),
                    tool_input(payload),
                );
                facts.uses.push(ToolUse {
                    id: id.to_string(),
                    name,
                    input,
                });
            }
            Entry::Signal {
                timestamp,
                signal: Signal::ToolUse,
            }
        }
        ("response_item", "function_call_output" | "custom_tool_call_output") => {
            if let Some(id) = str_of(payload, "call_id") {
                facts.results.push(ToolResult {
                    tool_use_id: id.to_string(),
                    outcome: outcome_of_output(payload.get("output")),
                    certain: true,
                });
            }
            Entry::Ignored
        }
        ("event_msg", "task_complete") => Entry::Signal {
            timestamp,
            signal: Signal::TurnDuration,
        },
        ("event_msg", "turn_aborted") => Entry::Signal {
            timestamp,
            signal: Signal::Interrupt,
        },
        ("token_usage_record", _) => {
            facts.usage = usage_of(payload);
            Entry::Ignored
        }
        ("session_meta" | "turn_context", _) => {
            facts.model = str_of(payload, "model")
                .filter(|m| !m.trim().is_empty())
                .map(str::to_string);
            place = LinePlace::from_fields(
                str_of(payload, "cwd"),
                payload
                    .get("git")
                    .and_then(|g| g.get("branch"))
                    .and_then(Value::as_str),
            );
            Entry::Ignored
        }
        _ => Entry::Ignored,
    };
    let nuls = entry.replace_nul();
    LineReading {
        restating: Restating::No,
        rewinds_to: None,
        entry: Ok((entry, Mended { nuls, surrogates })),
        facts,
        place,
    }
}

/// A line that is not a JSON object: no entry, nothing else.
fn unread(e: LineError) -> LineReading {
    LineReading {
        restating: Restating::No,
        rewinds_to: None,
        entry: Err(e),
        facts: LineFacts::default(),
        place: LinePlace::default(),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A `message` item: a typed prompt, the agent's text, or nothing (context Codex injects,
/// developer and system messages, a message without text).
fn message_entry(
    payload: &Value,
    line: &[u8],
    timestamp: Option<Timestamp>,
    typed: fn(&Value, &str) -> bool,
) -> Entry {
    let role = str_of(payload, "role").unwrap_or("");
    let text = message_text(
        payload,
        if role == "user" {
            "input_text"
        } else {
            "output_text"
        },
    );
    let text = text.trim();
    if text.is_empty() {
        return Entry::Ignored;
    }
    let uuid = match str_of(payload, "id").filter(|id| !id.is_empty()) {
        Some(id) => id.to_string(),
        None => format!("codex-line-{:032x}", crate::hook::matching::hash128(line)),
    };
    match role {
        "user" if typed(payload, text) => Entry::UserPrompt {
            uuid,
            timestamp,
            text: text.to_string(),
            // The turn it starts: its hooks' `turn_id`.
            prompt_id: payload
                .get("internal_chat_message_metadata_passthrough")
                .and_then(|m| str_of(m, "turn_id"))
                .map(str::to_string),
        },
        "assistant" => Entry::AgentText {
            uuid,
            timestamp,
            text: text.to_string(),
        },
        _ => Entry::Ignored,
    }
}

/// The text blocks of a message's `content` of the given type, joined by blank lines.
fn message_text(payload: &Value, block_type: &str) -> String {
    let Some(blocks) = payload.get("content").and_then(Value::as_array) else {
        return String::new();
    };
    blocks
        .iter()
        .filter(|b| str_of(b, "type") == Some(block_type))
        .filter_map(|b| str_of(b, "text"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Whether a user message is text the user typed: Codex 0.171 says so itself
/// (`internal_chat_message_metadata_passthrough.content_item_kinds` is `["user.text"]`;
/// context it injects is `environments.environment_context`, `agents_md.instructions`,
/// `generic.turn_aborted`, …); without that field (older rollouts) the text's shape decides
/// ([`is_injected_context`]).
fn typed_by_the_user(payload: &Value, text: &str) -> bool {
    let kinds = payload
        .get("internal_chat_message_metadata_passthrough")
        .and_then(|m| m.get("content_item_kinds"))
        .and_then(Value::as_array);
    match kinds {
        Some(kinds) if !kinds.is_empty() => kinds.iter().all(|k| k.as_str() == Some("user.text")),
        _ => !is_injected_context(text),
    }
}

/// True for a user message Codex wrote itself: a block of context wrapped in one tag
/// (`<environment_context>…</environment_context>`, `<turn_aborted>…`, `<user_instructions>…`)
/// or the AGENTS.md instructions it sends before the first prompt.
pub fn is_injected_context(text: &str) -> bool {
    let t = text.trim();
    if t.starts_with("# AGENTS.md instructions for ") {
        return true;
    }
    let Some(rest) = t.strip_prefix('<') else {
        return false;
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || *c == '_' || *c == '-')
        .collect();
    !name.is_empty() && rest[name.len()..].starts_with('>') && t.ends_with(&format!("</{name}>"))
}

/// A tool call's input: its `arguments` parsed when they are JSON (function calls), else
/// the `input` text (custom tools such as `apply_patch`), else the `action` (local shell).
fn tool_input(payload: &Value) -> Option<Value> {
    if let Some(args) = str_of(payload, "arguments") {
        return Some(serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.into())));
    }
    payload
        .get("input")
        .or_else(|| payload.get("action"))
        .cloned()
}

/// A tool call as Codex's hooks name it: its shell tools (`exec_command` with `cmd`, `shell`
/// with a `command` list) are `Bash` with a `command` string there, so a step reads the same
/// from the hook and from the line.
fn as_hooks_name_it(name: &str, input: Option<Value>) -> (String, Option<Value>) {
    let command = match (name, &input) {
        ("exec_command", Some(i)) => i.get("cmd").and_then(Value::as_str).map(str::to_string),
        ("shell" | "local_shell_call", Some(i)) => {
            i.get("command").and_then(Value::as_array).map(|parts| {
                let words: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                // `["bash", "-lc", "echo hi"]`: the script is the command.
                match words.as_slice() {
                    [_, "-lc" | "-c", script] => script.to_string(),
                    _ => words.join(" "),
                }
            })
        }
        _ => None,
    };
    match command {
        Some(c) => ("Bash".into(), Some(serde_json::json!({ "command": c }))),
        None => (name.to_string(), input),
    }
}

/// How a tool call ended, from its output: Codex reports a command's exit code in the text
/// (`Process exited with code N`, or `Exit code: N`); a refused approval is denied, an
/// aborted call interrupted.
fn outcome_of_output(output: Option<&Value>) -> StepOutcome {
    let text = match output {
        Some(Value::String(s)) => s.as_str(),
        Some(v) => v.get("content").and_then(Value::as_str).unwrap_or(""),
        None => "",
    };
    let exit = ["Process exited with code ", "Exit code: "]
        .iter()
        .find_map(|p| text.split(p).nth(1))
        .and_then(|r| {
            r.chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect::<String>()
                .parse::<i64>()
                .ok()
        });
    let lower = text.to_ascii_lowercase();
    if lower.contains("rejected by user") || lower.contains("declined by user") {
        StepOutcome::Denied
    } else if lower.starts_with("aborted") {
        StepOutcome::Interrupted
    } else if exit.is_some_and(|c| c != 0) {
        StepOutcome::Error
    } else {
        StepOutcome::Ok
    }
}

/// One response's tokens (`token_usage_record`): OpenAI counts cached input inside the
/// input, the usage table apart from it. The model is not on this line: the engine takes the
/// one the turn's `turn_context` named (`LineFacts::model`).
fn usage_of(payload: &Value) -> Option<LineUsage> {
    let usage = payload.get("usage")?;
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let id = str_of(payload, "response_id")?;
    Some(LineUsage {
        message_id: id.to_string(),
        model: String::new(),
        tokens: Tokens {
            input: n("input_tokens").saturating_sub(n("cached_input_tokens")),
            output: n("output_tokens"),
            cache_creation: n("cache_write_input_tokens"),
            cache_read: n("cached_input_tokens"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str, payload: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "timestamp": "2026-11-27T17:10:48.229Z", "ordinal": 7, "type": kind, "payload": payload
        }))
        .unwrap()
    }

    fn entry(l: &[u8]) -> Entry {
        read_line(l).entry.unwrap().0
    }

    #[test]
    fn typed_prompts_and_replies_are_turns_and_injected_context_is_not() {
        let prompt = line(
            "response_item",
            serde_json::json!({"type": "message", "id": "msg_1", "role": "user",
                "content": [{"type": "input_text", "text": "fix the build"}]}),
        );
        assert!(
            matches!(entry(&prompt), Entry::UserPrompt { uuid, text, .. } if uuid == "msg_1" && text == "fix the build")
        );
        let reply = line(
            "response_item",
            serde_json::json!({"type": "message", "id": "msg_2", "role": "assistant",
                "content": [{"type": "output_text", "text": "Done."}]}),
        );
        assert!(
            matches!(entry(&reply), Entry::AgentText { uuid, text, .. } if uuid == "msg_2" && text == "Done.")
        );
        for injected in [
            "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>",
            "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>",
            "# AGENTS.md instructions for /p\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>",
        ] {
            let l = line(
                "response_item",
                serde_json::json!({"type": "message", "id": "msg_3", "role": "user",
                    "content": [{"type": "input_text", "text": injected}]}),
            );
            assert_eq!(entry(&l), Entry::Ignored, "{injected}");
        }
        // Codex's own word wins over the text's shape.
        let tagged = line(
            "response_item",
            serde_json::json!({"type": "message", "id": "msg_5", "role": "user",
                "content": [{"type": "input_text", "text": "<b>x</b>"}],
                "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["user.text"]}}),
        );
        assert!(matches!(entry(&tagged), Entry::UserPrompt { .. }));
        let context = line(
            "response_item",
            serde_json::json!({"type": "message", "id": "msg_6", "role": "user",
                "content": [{"type": "input_text", "text": "plain words"}],
                "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["agents_md.instructions"]}}),
        );
        assert_eq!(entry(&context), Entry::Ignored);
        // A prompt that only starts with a tag is typed text.
        assert!(!is_injected_context("<b>bold</b> is not rendered, why?"));
        let developer = line(
            "response_item",
            serde_json::json!({"type": "message", "id": "msg_4", "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions>…</permissions>"}]}),
        );
        assert_eq!(entry(&developer), Entry::Ignored);
    }

    #[test]
    fn a_message_without_an_id_is_keyed_by_its_line() {
        let a = line(
            "response_item",
            serde_json::json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "ok?"}]}),
        );
        let mut b = a.clone();
        b.splice(b.len() - 1..b.len() - 1, b",\"x\":1".iter().copied());
        let (ua, ub) = (
            entry(&a).uuid().map(str::to_string),
            entry(&b).uuid().map(str::to_string),
        );
        assert!(ua.is_some() && ua != ub, "{ua:?} {ub:?}");
        assert_eq!(ua, entry(&a).uuid().map(str::to_string), "stable");
    }

    #[test]
    fn tools_ends_of_turns_and_usage_are_read() {
        let call = read_line(&line(
            "response_item",
            serde_json::json!({"type": "function_call", "name": "exec_command",
                "arguments": "{\"cmd\": \"echo hi\"}", "call_id": "call_1"}),
        ));
        assert_eq!(call.facts.uses[0].id, "call_1");
        assert_eq!(call.facts.uses[0].name, "Bash", "as its hooks name it");
        assert_eq!(
            call.facts.uses[0].input,
            Some(serde_json::json!({"command": "echo hi"}))
        );
        let out = |text: &str| {
            read_line(&line(
                "response_item",
                serde_json::json!({"type": "function_call_output", "call_id": "call_1", "output": text}),
            ))
            .facts
            .results[0]
                .outcome
        };
        assert_eq!(
            out("Process exited with code 0\nOutput:\nhi\n"),
            StepOutcome::Ok
        );
        assert_eq!(
            out("Process exited with code 2\nOutput:\n"),
            StepOutcome::Error
        );
        assert!(matches!(
            entry(&line(
                "event_msg",
                serde_json::json!({"type": "task_complete"})
            )),
            Entry::Signal {
                signal: Signal::TurnDuration,
                ..
            }
        ));
        assert!(matches!(
            entry(&line(
                "event_msg",
                serde_json::json!({"type": "turn_aborted", "reason": "interrupted"})
            )),
            Entry::Signal {
                signal: Signal::Interrupt,
                ..
            }
        ));
        let usage = read_line(&line(
            "token_usage_record",
            serde_json::json!({"response_id": "resp_1", "usage": {"input_tokens": 100,
                "cached_input_tokens": 40, "output_tokens": 7}}),
        ))
        .facts
        .usage
        .unwrap();
        assert_eq!(
            (
                usage.tokens.input,
                usage.tokens.cache_read,
                usage.tokens.output
            ),
            (60, 40, 7)
        );
        let meta = read_line(&line(
            "session_meta",
            serde_json::json!({"id": "s", "cwd": "/home/u/app", "git": {"branch": "main"}}),
        ));
        assert_eq!(meta.place.cwd.as_deref(), Some("/home/u/app"));
        assert_eq!(meta.place.git_branch.as_deref(), Some("main"));
        let context = read_line(&line(
            "turn_context",
            serde_json::json!({"turn_id": "t", "cwd": "/home/u/app", "model": "gpt-5-codex"}),
        ));
        assert_eq!(context.facts.model.as_deref(), Some("gpt-5-codex"));
        assert!(read_line(b"not json").entry.is_err());
    }
}
