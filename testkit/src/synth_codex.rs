//! Synthetic Codex CLI sessions: rollout lines and hook bodies shaped like the ones Codex
//! 0.171 writes and sends (`{timestamp, ordinal, type, payload}` lines; hooks with
//! `session_id`, `turn_id`, `transcript_path`), written by the project for tests that run
//! without the real CLI. Pure and deterministic.

use crate::synth::Line;
use headspace_core::Timestamp;
use serde_json::{json, Value};

/// Codex CLI's folder as the simulated agents' hooks name it (`$CODEX_HOME`).
pub const CODEX_DIR: &str = "/home/u/.codex";

/// Writes the rollout of one Codex session, with increasing timestamps and ordinals.
#[derive(Clone, Debug)]
pub struct CodexSessionWriter {
    /// The session id (the uuid that ends the rollout's name, its hooks' `session_id`).
    pub session_id: String,
    /// The working directory.
    pub cwd: String,
    /// The turn the next lines belong to (its hooks' `turn_id`).
    pub turn_id: String,
    ordinal: u64,
    seq: u64,
    salt: u64,
    /// The time of the next line.
    pub clock: Timestamp,
    started: Timestamp,
}

impl CodexSessionWriter {
    /// A writer for session number `n` starting at `start`.
    pub fn new(n: u64, start: Timestamp) -> CodexSessionWriter {
        CodexSessionWriter {
            session_id: format!("01a2c0de-{n:04x}-7000-8000-{:012x}", n),
            cwd: format!("/home/u/codex{n}"),
            turn_id: String::new(),
            ordinal: 0,
            seq: 0,
            salt: n,
            clock: start,
            started: start,
        }
    }

    /// The rollout's path relative to the codex dir.
    pub fn path(&self) -> String {
        let t = self.started.to_string();
        let (y, m, d) = (&t[0..4], &t[5..7], &t[8..10]);
        let stamp = t[..19].replace(':', "-");
        format!(
            "sessions/{y}/{m}/{d}/rollout-{stamp}-{}.jsonl",
            self.session_id
        )
    }

    /// Advances the clock by `ms`.
    pub fn wait(&mut self, ms: i64) {
        self.clock = self.clock.add_millis(ms);
    }

    fn next_id(&mut self, prefix: &str) -> String {
        self.seq += 1;
        format!("{prefix}_{:08x}{:016x}", self.salt as u32, self.seq)
    }

    fn line(&mut self, kind: &str, payload: Value, uuid: String, is_turn: bool) -> Line {
        self.clock = self.clock.add_millis(1);
        let v = json!({
            "timestamp": self.clock.to_string(),
            "ordinal": self.ordinal,
            "type": kind,
            "payload": payload,
        });
        self.ordinal += 1;
        Line {
            uuid,
            json: v.to_string(),
            is_turn,
        }
    }

    /// The first line: the session's id and folder.
    pub fn meta(&mut self) -> Line {
        let payload = json!({
            "session_id": self.session_id, "id": self.session_id,
            "timestamp": self.clock.to_string(), "cwd": self.cwd,
            "originator": "codex-tui", "cli_version": "0.171.0",
        });
        self.line("session_meta", payload, String::new(), false)
    }

    /// A new turn begins (`task_started`, `turn_context` and the context Codex injects).
    pub fn start_turn(&mut self) -> Vec<Line> {
        self.turn_id = format!(
            "01a2{:04x}-{:04x}-7000-8000-000000000000",
            self.salt, self.seq
        );
        self.seq += 1;
        let turn = self.turn_id.clone();
        let context = format!(
            "<environment_context>\n  <cwd>{}</cwd>\n  <shell>bash</shell>\n</environment_context>",
            self.cwd
        );
        let id = self.next_id("msg");
        vec![
            self.line(
                "event_msg",
                json!({"type": "task_started", "turn_id": turn}),
                String::new(),
                false,
            ),
            self.line(
                "turn_context",
                json!({"turn_id": turn, "cwd": self.cwd, "model": "gpt-5-codex"}),
                String::new(),
                false,
            ),
            self.line(
                "response_item",
                json!({"type": "message", "id": id, "role": "user",
                       "content": [{"type": "input_text", "text": context}]}),
                String::new(),
                false,
            ),
        ]
    }

    /// A typed prompt (one turn), in the current turn.
    pub fn prompt(&mut self, text: &str) -> Line {
        let id = self.next_id("msg");
        let payload = json!({
            "type": "message", "id": id, "role": "user",
            "content": [{"type": "input_text", "text": text}],
            "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id},
        });
        self.line("response_item", payload, id, true)
    }

    /// The agent's text (one turn).
    pub fn agent_text(&mut self, text: &str) -> Line {
        let id = self.next_id("msg");
        let payload = json!({
            "type": "message", "status": "completed", "id": id, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        });
        self.line("response_item", payload, id, true)
    }

    /// A shell command and its output (no turn); the call's id.
    pub fn shell(&mut self, command: &str, output: &str, exit_code: i32) -> (Vec<Line>, String) {
        let call = self.next_id("call");
        let fc = self.next_id("fc");
        let args = json!({ "cmd": command }).to_string();
        let lines = vec![
            self.line(
                "response_item",
                json!({"type": "function_call", "id": fc, "name": "exec_command",
                       "arguments": args, "call_id": call}),
                String::new(),
                false,
            ),
            self.line(
                "response_item",
                json!({"type": "function_call_output", "call_id": call,
                       "output": format!("Process exited with code {exit_code}\nOutput:\n{output}")}),
                String::new(),
                false,
            ),
        ];
        (lines, call)
    }

    /// One response's tokens.
    pub fn usage(&mut self, input: u64, cached: u64, output: u64) -> Line {
        let id = self.next_id("resp");
        let payload = json!({
            "session_id": self.session_id, "turn_id": self.turn_id, "response_id": id,
            "usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output},
        });
        self.line("token_usage_record", payload, String::new(), false)
    }

    /// The turn ended (`task_complete`).
    pub fn complete(&mut self, last: &str) -> Line {
        let payload =
            json!({"type": "task_complete", "turn_id": self.turn_id, "last_agent_message": last});
        self.line("event_msg", payload, String::new(), false)
    }

    /// The user pressed Escape: the aborted-turn notice Codex injects and `turn_aborted` (the
    /// reply being streamed is never written).
    pub fn interrupted(&mut self) -> Vec<Line> {
        let id = self.next_id("msg");
        let notice =
            "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>";
        let turn = self.turn_id.clone();
        vec![
            self.line(
                "response_item",
                json!({"type": "message", "id": id, "role": "user",
                       "content": [{"type": "input_text", "text": notice}]}),
                String::new(),
                false,
            ),
            self.line(
                "event_msg",
                json!({"type": "turn_aborted", "turn_id": turn, "reason": "interrupted"}),
                String::new(),
                false,
            ),
        ]
    }

    /// A hook body as Codex sends it for `event` (the rollout at `codex_dir`), with `extra`
    /// fields.
    pub fn hook(&self, codex_dir: &str, event: &str, extra: Value) -> Vec<u8> {
        let mut body = json!({
            "session_id": self.session_id,
            "transcript_path": format!("{}/{}", codex_dir.trim_end_matches('/'), self.path()),
            "cwd": self.cwd,
            "hook_event_name": event,
            "model": "gpt-5-codex",
        });
        if !self.turn_id.is_empty() && !matches!(event, "SessionStart" | "SessionEnd") {
            body["turn_id"] = json!(self.turn_id);
        }
        crate::synth::hook_body(body, extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headspace_core::kind::AgentKind;
    use headspace_core::transcript::entry::Entry;

    #[test]
    fn its_lines_read_as_codex_turns_and_its_path_names_the_session() {
        let mut w =
            CodexSessionWriter::new(3, Timestamp::parse_rfc3339("2026-11-27T10:00:00Z").unwrap());
        let rel = format!("codex/{}", w.path());
        assert_eq!(AgentKind::of_transcript(&rel), AgentKind::Codex);
        assert_eq!(
            AgentKind::Codex.session_of_path(&rel),
            Some(w.session_id.clone())
        );
        let mut lines = vec![w.meta()];
        lines.extend(w.start_turn());
        lines.push(w.prompt("ok?"));
        lines.push(w.agent_text("Yes."));
        lines.push(w.complete("Yes."));
        let turns: Vec<Entry> = lines
            .iter()
            .map(|l| {
                AgentKind::Codex
                    .read_line(l.json.as_bytes())
                    .entry
                    .unwrap()
                    .0
            })
            .filter(|e| matches!(e, Entry::UserPrompt { .. } | Entry::AgentText { .. }))
            .collect();
        assert_eq!(turns.len(), 2);
        assert_eq!(lines.iter().filter(|l| l.is_turn).count(), 2);
        for (l, e) in lines.iter().filter(|l| l.is_turn).zip(&turns) {
            assert_eq!(e.uuid(), Some(l.uuid.as_str()));
        }
    }
}
