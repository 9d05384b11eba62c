//! Synthetic Gemini CLI sessions: chat-file lines and hook bodies shaped like the ones Gemini
//! CLI 0.61 writes and sends (docs/research/gemini-cli-0.61.md §4–5: a metadata line, messages
//! keyed by `id`, `$set` edits; after a refused approval, every earlier message written again
//! under new ids before the new list), written by the project for tests that run without the
//! real CLI. Pure and deterministic.

use crate::synth::Line;
use headspace_core::Timestamp;
use serde_json::{json, Value};

/// Gemini CLI's folder as the simulated agents' hooks name it (`~/.gemini`).
pub const GEMINI_DIR: &str = "/home/u/.gemini";

/// The id Gemini gives the session context it sends before the first prompt.
const CONTEXT_ID: &str = "d04923d38bb0f6017037e74183378ef4";

/// Writes the chat file of one Gemini session, with increasing timestamps.
#[derive(Clone, Debug)]
pub struct GeminiChatWriter {
    /// The session id (its first 8 characters name the chat file and key the session).
    pub session_id: String,
    /// The working directory.
    pub cwd: String,
    seq: u64,
    salt: u64,
    /// The time of the next line.
    pub clock: Timestamp,
    started: Timestamp,
    /// The conversation as Gemini keeps it: (type, text) of each prompt and reply.
    history: Vec<(&'static str, String)>,
}

impl GeminiChatWriter {
    /// A writer for session number `n` starting at `start`.
    pub fn new(n: u64, start: Timestamp) -> GeminiChatWriter {
        GeminiChatWriter {
            session_id: format!("9e{n:06x}-5a1b-4c2d-8e3f-{:012x}", n),
            cwd: format!("/home/u/gemini{n}"),
            seq: 0,
            salt: n,
            clock: start,
            started: start,
            history: Vec::new(),
        }
    }

    /// The session's key: the first 8 characters of its id.
    pub fn key(&self) -> String {
        self.session_id[..8].to_string()
    }

    /// The chat file's path relative to the gemini dir.
    pub fn path(&self) -> String {
        let t = self.started.to_string();
        let stamp = t[..16].replace(':', "-");
        let project = self.cwd.rsplit('/').next().unwrap_or("project");
        format!("tmp/{project}/chats/session-{stamp}-{}.jsonl", self.key())
    }

    fn next_id(&mut self) -> String {
        self.seq += 1;
        format!("{:08x}-0000-4000-8000-{:012x}", self.salt as u32, self.seq)
    }

    fn line(&mut self, v: Value, uuid: String, is_turn: bool) -> Line {
        Line {
            uuid,
            json: v.to_string(),
            is_turn,
        }
    }

    fn at(&mut self) -> String {
        self.clock = self.clock.add_millis(1);
        self.clock.to_string()
    }

    /// The first lines, written when the CLI starts: the metadata and the session context.
    pub fn start(&mut self) -> Vec<Line> {
        let at = self.at();
        let meta = json!({"sessionId": self.session_id, "projectHash": format!("{:064x}", self.salt),
            "startTime": at, "lastUpdated": at, "kind": "main"});
        let context = json!({"$set": {"messages": [{"id": CONTEXT_ID, "timestamp": at, "type": "user",
            "content": [{"text": format!("<session_context>\nThis is the Gemini CLI.\nWorkspace: {}\n</session_context>", self.cwd)}]}]}});
        vec![
            self.line(meta, String::new(), false),
            self.line(context, String::new(), false),
        ]
    }

    fn touched(&mut self) -> Line {
        let at = self.clock.to_string();
        self.line(json!({"$set": {"lastUpdated": at}}), String::new(), false)
    }

    /// A typed prompt (one turn), then the `$set` of the time.
    pub fn prompt(&mut self, text: &str) -> Vec<Line> {
        let id = self.next_id();
        let at = self.at();
        self.history.push(("user", text.to_string()));
        let l = self.line(
            json!({"id": id, "timestamp": at, "type": "user", "content": [{"text": text}]}),
            id.clone(),
            true,
        );
        vec![l, self.touched()]
    }

    /// A reply (one turn), written once it has streamed; its id, for a tool call on it.
    pub fn reply(&mut self, text: &str) -> (Vec<Line>, String) {
        let id = self.next_id();
        let at = self.at();
        self.history.push(("gemini", text.to_string()));
        let l = self.line(
            json!({"id": id, "timestamp": at, "type": "gemini", "content": text, "thoughts": [],
                "tokens": {"input": 1200, "output": 40, "cached": 1000, "thoughts": 8, "tool": 0, "total": 1248},
                "model": "gemini-2.5-pro"}),
            id.clone(),
            true,
        );
        (vec![l, self.touched()], id)
    }

    /// A shell command on reply `reply` (`text`) that ran: the reply again with its tool call,
    /// and the tool's result as Gemini records it (no turn).
    pub fn shell(&mut self, reply: &str, text: &str, command: &str, output: &str) -> Vec<Line> {
        let response = json!({"output": format!("Output: {output}")});
        let (again, call, at) = self.with_call(reply, text, command, "success", response);
        let result_id = self.next_id();
        let result = json!({"id": result_id, "timestamp": at, "type": "user",
            "content": [{"functionResponse": {"id": call, "name": "run_shell_command",
                "response": {"output": format!("Output: {output}")}}}]});
        let b = self.line(result, String::new(), false);
        vec![again, b, self.touched()]
    }

    /// Reply `reply` (`text`) written again with its shell call (`command`) ended with
    /// `status` and `response`; the call's id and the time.
    fn with_call(
        &mut self,
        reply: &str,
        text: &str,
        command: &str,
        status: &str,
        response: Value,
    ) -> (Line, String, String) {
        let call = format!(
            "run_shell_command__run_shell_command_{}_{}",
            self.salt, self.seq
        );
        let at = self.at();
        let again = json!({"id": reply, "timestamp": at, "type": "gemini", "content": text, "thoughts": [],
            "tokens": {"input": 1200, "output": 40, "cached": 1000, "thoughts": 8, "tool": 0, "total": 1248},
            "model": "gemini-2.5-pro",
            "toolCalls": [{"id": call, "name": "run_shell_command", "args": {"command": command},
                "status": status, "timestamp": at,
                "result": [{"functionResponse": {"id": call, "name": "run_shell_command", "response": response}}]}]});
        (self.line(again, String::new(), false), call, at)
    }

    /// The user pressed Escape: `Request cancelled.` and the list without the prompt (the
    /// reply being streamed is written nowhere).
    pub fn interrupted(&mut self) -> Vec<Line> {
        let id = self.next_id();
        let at = self.at();
        if self.history.last().is_some_and(|(t, _)| *t == "user") {
            self.history.pop();
        }
        let cancelled = self.line(
            json!({"id": id, "timestamp": at, "type": "info", "content": "Request cancelled."}),
            String::new(),
            false,
        );
        let list = self.list(Vec::new());
        vec![cancelled, list]
    }

    /// The user refused a shell command on reply `reply` (`text`): the reply again with the
    /// call cancelled, `Request cancelled.`, then every earlier message written again under
    /// new ids (the first prompt with the session context), then the new list: the refused
    /// prompt and its reply are not in it. None of these lines is a turn.
    pub fn refused(&mut self, reply: &str, text: &str, command: &str) -> Vec<Line> {
        let refusal = json!({"error": "[Operation Cancelled] Reason: User denied execution."});
        let (again, _, at) = self.with_call(reply, text, command, "cancelled", refusal);
        let mut lines = vec![again];
        let id = self.next_id();
        lines.push(self.line(
            json!({"id": id, "timestamp": at, "type": "info", "content": "Request cancelled."}),
            String::new(),
            false,
        ));
        // The refused exchange leaves the history: its prompt and reply.
        self.history.truncate(self.history.len().saturating_sub(2));
        let mut ids = Vec::new();
        let earlier = self.history.clone();
        for (i, (kind, text)) in earlier.iter().enumerate() {
            let id = self.next_id();
            ids.push(id.clone());
            let v = match *kind {
                "user" if i == 0 => json!({"id": id, "timestamp": at, "type": "user", "content": [
                    {"text": format!("<session_context>\nThis is the Gemini CLI.\nWorkspace: {}\n</session_context>", self.cwd)},
                    {"text": text}]}),
                "user" => {
                    json!({"id": id, "timestamp": at, "type": "user", "content": [{"text": text}]})
                }
                _ => {
                    json!({"id": id, "timestamp": at, "type": "gemini", "content": [{"text": text}],
                    "thoughts": [], "tokens": null})
                }
            };
            lines.push(self.line(v, String::new(), false));
            lines.push(self.touched());
        }
        lines.push(self.list(ids));
        lines
    }

    /// The user ran `/rewind` back to the last prompt (`id`): the `$rewindTo` and the list
    /// without it and what followed it (no turn: the turns stay, marked rewound).
    pub fn rewind(&mut self, id: &str) -> Vec<Line> {
        if let Some(at) = self.history.iter().rposition(|(t, _)| *t == "user") {
            self.history.truncate(at);
        }
        let to = self.line(json!({ "$rewindTo": id }), String::new(), false);
        vec![to, self.list(Vec::new())]
    }

    /// The `$set` of the whole message list (ids only: the reader needs no more).
    fn list(&mut self, ids: Vec<String>) -> Line {
        let messages: Vec<Value> = ids.into_iter().map(|id| json!({ "id": id })).collect();
        self.line(
            json!({"$set": {"messages": messages}}),
            String::new(),
            false,
        )
    }

    /// A hook body as Gemini sends it for `event` (the chat file under `gemini_dir`), with
    /// `extra` fields; the pane is added by `hook-forward`, as for Claude Code.
    pub fn hook(&self, gemini_dir: &str, event: &str, extra: Value) -> Vec<u8> {
        let body = json!({
            "session_id": self.session_id,
            "transcript_path": format!("{}/{}", gemini_dir.trim_end_matches('/'), self.path()),
            "cwd": self.cwd,
            "hook_event_name": event,
            "timestamp": self.clock.to_string(),
        });
        crate::synth::hook_body(body, extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headspace_core::kind::AgentKind;
    use headspace_core::transcript::entry::Entry;
    use headspace_core::transcript::line_read::Restatement;

    #[test]
    fn its_lines_read_as_gemini_turns_and_its_copies_as_none() {
        let mut w =
            GeminiChatWriter::new(3, Timestamp::parse_rfc3339("2026-11-27T10:00:00Z").unwrap());
        let rel = format!("gemini/{}", w.path());
        assert_eq!(AgentKind::of_transcript(&rel), AgentKind::Gemini);
        assert_eq!(AgentKind::Gemini.session_of_path(&rel), Some(w.key()));
        let mut lines = w.start();
        lines.extend(w.prompt("ok?"));
        let (reply, id) = w.reply("Yes.");
        lines.extend(reply);
        lines.extend(w.shell(&id, "Yes.", "ls", "a b"));
        lines.extend(w.prompt("create a file"));
        let (reply, id) = w.reply("Creating it.");
        lines.extend(reply);
        lines.extend(w.refused(&id, "Creating it.", "touch x"));
        lines.extend(w.prompt("slow"));
        lines.extend(w.interrupted());
        let mut restatement = Restatement::default();
        let turns: Vec<Entry> = lines
            .iter()
            .filter_map(|l| {
                let reading = AgentKind::Gemini.read_line(l.json.as_bytes());
                if restatement.restates(reading.restating) {
                    return None;
                }
                Some(reading.entry.unwrap().0)
            })
            .filter(|e| matches!(e, Entry::UserPrompt { .. } | Entry::AgentText { .. }))
            .collect();
        // A reply written again with its tool call is the same turn (one id).
        let mut turns = turns;
        let mut seen = std::collections::HashSet::new();
        turns.retain(|e| seen.insert(e.uuid().unwrap_or_default().to_string()));
        let marked: Vec<&Line> = lines.iter().filter(|l| l.is_turn).collect();
        assert_eq!(turns.len(), 5, "{turns:?}");
        assert_eq!(marked.len(), 5);
        for (l, e) in marked.iter().zip(&turns) {
            assert_eq!(e.uuid(), Some(l.uuid.as_str()));
        }
    }
}
