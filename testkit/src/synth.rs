//! Synthetic Claude Code sessions: transcript lines and hook bodies shaped like the real ones
//! in `../shared/corpus/` (one content block per assistant line, tool results as user lines,
//! AskUserQuestion answers with `toolUseResult.answers`). Pure and deterministic, for tests,
//! benchmarks and the simulation.

use headspace_core::Timestamp;
use serde_json::{json, Value};

/// One transcript line and the uuid that keys it.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The line's `uuid`.
    pub uuid: String,
    /// The JSON text, without the newline.
    pub json: String,
    /// True when the line is a turn of the main conversation.
    pub is_turn: bool,
}

/// Writes the lines of one session, with increasing timestamps and chained parents.
#[derive(Clone, Debug)]
pub struct SessionWriter {
    /// The Claude session id (also the file name).
    pub session_id: String,
    /// The working directory.
    pub cwd: String,
    /// The folder under `projects/` (Claude Code's encoding of the working directory).
    pub dir: String,
    seq: u64,
    salt: u64,
    parent: Option<String>,
    /// The time of the next line.
    pub clock: Timestamp,
}

impl SessionWriter {
    /// A writer for session number `n` starting at `start`.
    pub fn new(n: u64, start: Timestamp) -> SessionWriter {
        SessionWriter {
            session_id: format!("5e55{n:04x}-0000-4000-8000-{:012x}", n),
            cwd: format!("/home/u/project{n}"),
            dir: format!("-home-u-project{n}"),
            seq: 0,
            salt: n,
            parent: None,
            clock: start,
        }
    }

    /// The transcript path relative to the claude dir.
    pub fn path(&self) -> String {
        format!("projects/{}/{}.jsonl", self.dir, self.session_id)
    }

    /// Advances the clock by `ms`.
    pub fn wait(&mut self, ms: i64) {
        self.clock = self.clock.add_millis(ms);
    }

    fn next_uuid(&mut self) -> String {
        self.seq += 1;
        format!(
            "{:08x}-{:04x}-4000-8000-{:012x}",
            self.salt as u32,
            (self.seq >> 48) as u16,
            self.seq & 0xffff_ffff_ffff
        )
    }

    fn line(&mut self, mut v: Value, is_turn: bool) -> Line {
        let uuid = self.next_uuid();
        self.clock = self.clock.add_millis(1);
        let obj = v.as_object_mut().expect("object");
        obj.insert("parentUuid".into(), json!(self.parent));
        obj.insert("isSidechain".into(), json!(false));
        obj.insert("userType".into(), json!("external"));
        obj.insert("cwd".into(), json!(self.cwd));
        obj.insert("sessionId".into(), json!(self.session_id));
        obj.insert("version".into(), json!("2.1.33"));
        obj.insert("uuid".into(), json!(uuid));
        obj.insert("timestamp".into(), json!(self.clock.to_string()));
        self.parent = Some(uuid.clone());
        Line {
            uuid,
            json: v.to_string(),
            is_turn,
        }
    }

    /// A typed prompt.
    pub fn prompt(&mut self, text: &str, prompt_id: Option<&str>) -> Line {
        let mut v = json!({"type": "user", "message": {"role": "user", "content": text}});
        if let Some(p) = prompt_id {
            v["promptId"] = json!(p);
        }
        self.line(v, true)
    }

    /// An assistant text line.
    pub fn agent_text(&mut self, text: &str) -> Line {
        let v = json!({"type": "assistant", "message": {"model": "claude-opus-4-6", "id": format!("msg_{}", self.seq), "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": text}], "stop_reason": null}});
        self.line(v, true)
    }

    /// An assistant thinking line (not a turn).
    pub fn thinking(&mut self, text: &str) -> Line {
        let v = json!({"type": "assistant", "message": {"model": "claude-opus-4-6", "role": "assistant",
            "content": [{"type": "thinking", "thinking": text, "signature": "x"}]}});
        self.line(v, false)
    }

    /// A tool call and its result (two lines, neither a turn).
    pub fn tool(&mut self, name: &str, input: Value, output: &str) -> [Line; 2] {
        let id = format!("toolu_{:016x}", self.seq + 1);
        let call = json!({"type": "assistant", "message": {"model": "claude-opus-4-6", "role": "assistant",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}});
        let call = self.line(call, false);
        let result = json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output}]},
            "toolUseResult": {"stdout": output}});
        [call, self.line(result, false)]
    }

    /// An AskUserQuestion call; returns the line and its tool_use id.
    pub fn question(&mut self, question: &str, options: &[&str]) -> (Line, String, Value) {
        let input = json!({"questions": [{"question": question, "header": "Choice", "multiSelect": false,
            "options": options.iter().map(|o| json!({"label": o, "description": ""})).collect::<Vec<_>>()}]});
        let (line, id) = self.ask(&input);
        (line, id, input)
    }

    /// An AskUserQuestion with the tool input `input` (`{"questions": [...]}`), and its
    /// tool-use id.
    pub fn ask(&mut self, input: &Value) -> (Line, String) {
        let id = format!("toolu_q{:015x}", self.seq + 1);
        let v = json!({"type": "assistant", "message": {"model": "claude-opus-4-6", "role": "assistant",
            "content": [{"type": "tool_use", "id": id, "name": "AskUserQuestion", "input": input}]}});
        (self.line(v, true), id)
    }

    /// The user's answers to an AskUserQuestion of several questions (`{question: answer}`).
    pub fn answered(&mut self, tool_use_id: &str, answers: &Value) -> Line {
        let said: Vec<String> = answers
            .as_object()
            .into_iter()
            .flatten()
            .map(|(q, a)| format!("\"{q}\"=\"{}\"", a.as_str().unwrap_or_default()))
            .collect();
        let v = json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id,
            "content": format!("User has answered your questions: {}. You can now continue with the user's answers in mind.", said.join(", "))}]},
            "toolUseResult": {"questions": [], "answers": answers}});
        self.line(v, true)
    }

    /// The user's answer to an AskUserQuestion.
    pub fn answer(&mut self, tool_use_id: &str, question: &str, answer: &str) -> Line {
        let v = json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id,
            "content": format!("User has answered your questions: \"{question}\"=\"{answer}\". You can now continue with the user's answers in mind.")}]},
            "toolUseResult": {"questions": [], "answers": {question: answer}}});
        self.line(v, true)
    }

    /// The `system/turn_duration` line written when a turn ends.
    pub fn turn_duration(&mut self) -> Line {
        self.line(
            json!({"type": "system", "subtype": "turn_duration", "durationMs": 1234}),
            false,
        )
    }

    /// The `system/stop_hook_summary` line Claude Code writes after its Stop hooks ran.
    pub fn stop_hook_summary(&mut self) -> Line {
        self.line(
            json!({"type": "system", "subtype": "stop_hook_summary", "hookCount": 1, "hookInfos": [{"command": "headspace hook-forward"}], "preventedContinuation": false}),
            false,
        )
    }

    /// What the user typed, as the transcript records it: a custom command or skill
    /// (`/flow.design args`) as Claude Code writes one (its `<command-name>` line, a turn),
    /// anything else as a plain prompt.
    pub fn typed(&mut self, text: &str, prompt_id: Option<&str>) -> Line {
        let Some(name) = headspace_core::transcript::entry::slash_command(text)
            .filter(|n| !headspace_core::transcript::entry::is_local_command(n))
        else {
            return self.prompt(text, prompt_id);
        };
        let args = text.trim_start()[name.len() + 1..].trim();
        let content = format!("<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n<command-args>{args}</command-args>");
        let mut v = json!({"type": "user", "message": {"role": "user", "content": content}});
        if let Some(p) = prompt_id {
            v["promptId"] = json!(p);
        }
        self.line(v, true)
    }

    /// A local slash command as the transcript records it (e.g. `/clear`; not a turn).
    pub fn local_command(&mut self, name: &str) -> Line {
        let content = format!("<command-name>/{name}</command-name>\n<command-message>{name}</command-message>\n<command-args></command-args>");
        self.line(
            json!({"type": "user", "message": {"role": "user", "content": content}}),
            false,
        )
    }

    /// Starts a new session in the same pane (after `/clear` or compaction): a new id and
    /// transcript file, the same project and clock.
    pub fn next_session(&mut self, n: u64) -> SessionWriter {
        let mut s = SessionWriter::new(self.salt, self.clock);
        s.session_id = format!("5e55{:04x}-{n:04x}-4000-8000-{:012x}", self.salt, self.salt);
        s.seq = self.seq + 1_000;
        s
    }

    /// `[Request interrupted by user]`.
    /// Claude Code's notice in place of a prompt a UserPromptSubmit hook blocked (a turn:
    /// the user saw it).
    pub fn blocked_by_hook(&mut self, reason: &str) -> Line {
        self.line(
            json!({"type": "user", "message": {"role": "user", "content": format!("Operation stopped by hook: {reason}")}}),
            true,
        )
    }

    /// `[Request interrupted by user]`.
    pub fn interrupt(&mut self) -> Line {
        self.line(json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}}), false)
    }
}

/// Short prompts where identical texts come often (two "yes" are two turns), for generated
/// conversations.
pub const SHORT_PROMPTS: &[&str] = &[
    "yes",
    "yes",
    "go on",
    "fix it",
    "run the tests",
    "Which one is faster?",
];

/// The claude dir the synthetic hooks name.
pub const CLAUDE_DIR: &str = "/home/u/.claude";

impl SessionWriter {
    /// The body the installed hook script posts for this session (pane and emission stamp
    /// added by the script), with `extra` fields merged in.
    pub fn hook(
        &self,
        event: &str,
        pane: Option<&str>,
        emitted_at: Option<Timestamp>,
        extra: Value,
    ) -> Vec<u8> {
        let mut v = json!({
            "session_id": self.session_id,
            "hook_event_name": event,
            "cwd": self.cwd,
            "transcript_path": format!("{CLAUDE_DIR}/{}", self.path()),
        });
        if let Some(p) = pane {
            v["tmux_pane"] = json!(p);
        }
        if let Some(t) = emitted_at {
            v["emitted_at"] = json!(t.to_string());
        }
        hook_body(v, extra)
    }
}

/// A hook's body: its fields, with `extra`'s added over them (every kind's writer sends its
/// hooks this way).
pub fn hook_body(mut body: Value, extra: Value) -> Vec<u8> {
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    serde_json::to_vec(&body).expect("json")
}
