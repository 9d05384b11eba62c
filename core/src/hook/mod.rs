//! Claude Code hook payloads: every field optional, unknown events and fields ignored.

pub mod codex;
pub mod gemini;
pub mod matching;

use crate::time::Timestamp;
use crate::transcript::mend::Mended;
use serde_json::Value;

/// The hook events the core acts on; everything else is `Other` and only marks the agent seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookEvent {
    /// A session started (`source`: startup, resume, clear, compact).
    SessionStart,
    /// A session ended (`reason`: clear, logout, prompt_input_exit, other).
    SessionEnd,
    /// The user submitted a prompt.
    UserPromptSubmit,
    /// A tool is about to run.
    PreToolUse,
    /// A tool finished.
    PostToolUse,
    /// The main agent finished its turn.
    Stop,
    /// A sub-agent finished; never a turn of the main conversation.
    SubagentStop,
    /// A notification (permission prompt, idle prompt, …).
    Notification,
    /// A permission dialog is shown.
    PermissionRequest,
    /// The turn ended on an API error.
    StopFailure,
    /// Compaction is about to run.
    PreCompact,
    /// Any other event, by its PascalCase name.
    Other(String),
}

impl HookEvent {
    /// Reads an event name in PascalCase (`UserPromptSubmit`) or kebab/snake form
    /// (`user-prompt-submit`, `user_prompt_submit`); case and separators are ignored.
    pub fn from_name(name: &str) -> HookEvent {
        let key: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match key.as_str() {
            "sessionstart" => HookEvent::SessionStart,
            "sessionend" => HookEvent::SessionEnd,
            "userpromptsubmit" => HookEvent::UserPromptSubmit,
            "pretooluse" => HookEvent::PreToolUse,
            "posttooluse" => HookEvent::PostToolUse,
            "stop" => HookEvent::Stop,
            "subagentstop" => HookEvent::SubagentStop,
            "notification" => HookEvent::Notification,
            "permissionrequest" => HookEvent::PermissionRequest,
            "stopfailure" => HookEvent::StopFailure,
            "precompact" => HookEvent::PreCompact,
            _ => HookEvent::Other(pascal_case(name)),
        }
    }

    /// The PascalCase name, as Claude Code spells it.
    pub fn name(&self) -> &str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Notification => "Notification",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Other(n) => n,
        }
    }
}

fn pascal_case(name: &str) -> String {
    if !name.contains(['-', '_']) {
        return name.to_string();
    }
    name.split(['-', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// Why a hook body was refused. Nothing is lost: the caller answers 4xx and logs it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HookError {
    /// The body is not JSON.
    #[error("body is not valid JSON: {0}")]
    NotJson(String),
    /// The body is JSON but not an object.
    #[error("body must be a JSON object")]
    NotAnObject,
    /// No event was named by the route or by `hook_event_name`.
    #[error("no hook event: name it in the route or in hook_event_name")]
    NoEvent,
    /// A field has the wrong JSON type.
    #[error("field `{0}` has the wrong type")]
    WrongType(&'static str),
}

/// A parsed hook: the fields the core uses, each optional.
#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    /// The event (the caller's name wins over `hook_event_name`).
    pub event: HookEvent,
    /// Claude Code's session id (`session_id`, or `headspace_session_id` of the Python script).
    pub session_id: Option<String>,
    /// Absolute path of the session's transcript.
    pub transcript_path: Option<String>,
    /// Working directory (`cwd` or `working_directory`).
    pub cwd: Option<String>,
    /// The tmux pane (`%N`).
    pub tmux_pane: Option<String>,
    /// When the hook script stamped the payload (`emitted_at` or `sm_hook_emitted_at`).
    pub emitted_at: Option<Timestamp>,
    /// UserPromptSubmit: the prompt text.
    pub prompt: Option<String>,
    /// Claude Code ≥ 2.1.196: the prompt this hook belongs to.
    pub prompt_id: Option<String>,
    /// Stop (≥ 2.1.47): the final assistant text.
    pub last_assistant_message: Option<String>,
    /// Tool hooks: the tool's name.
    pub tool_name: Option<String>,
    /// Tool hooks: the tool's input.
    pub tool_input: Option<Value>,
    /// Tool hooks: the tool call's id, the same as the transcript's `tool_use` block id.
    pub tool_use_id: Option<String>,
    /// Notification: its type (`permission_prompt`, `idle_prompt`, …).
    pub notification_type: Option<String>,
    /// Notification: its message.
    pub message: Option<String>,
    /// SessionStart: `source`.
    pub source: Option<String>,
    /// SessionEnd: `reason`.
    pub reason: Option<String>,
}

impl Hook {
    /// Parses a hook body. `route_event`, the event named by the URL, wins over the body's
    /// `hook_event_name`. Unknown fields are ignored; a known field of the wrong type is an
    /// error, so a client bug is reported instead of silently dropping data.
    pub fn parse(route_event: Option<&str>, body: &[u8]) -> Result<Hook, HookError> {
        Hook::parse_mended(route_event, body).map(|(hook, _)| hook)
    }

    /// As [`Hook::parse`], mending what would lose the hook or its turn: unpaired surrogate
    /// escapes (which `serde_json` refuses) become `\uFFFD` before parsing, and NUL
    /// characters (which PostgreSQL refuses) become U+FFFD in every string. Says what was
    /// mended, for the log.
    pub fn parse_mended(
        route_event: Option<&str>,
        body: &[u8],
    ) -> Result<(Hook, Mended), HookError> {
        let (body, surrogates) = crate::transcript::mend::repair_lone_surrogates(body);
        let mut v: Value =
            serde_json::from_slice(&body).map_err(|e| HookError::NotJson(e.to_string()))?;
        let nuls = crate::transcript::mend::replace_nul_in_json(&mut v);
        Hook::from_value(route_event, &v).map(|h| (h, Mended { nuls, surrogates }))
    }

    /// As [`Hook::parse`], from an already parsed JSON value.
    pub fn from_value(route_event: Option<&str>, v: &Value) -> Result<Hook, HookError> {
        let obj = v.as_object().ok_or(HookError::NotAnObject)?;
        let s = |k: &'static str| -> Result<Option<String>, HookError> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(HookError::WrongType(k)),
            }
        };
        let route = route_event.map(str::trim).filter(|e| !e.is_empty());
        let event = match (route, s("hook_event_name")?) {
            (Some(r), _) => HookEvent::from_name(r),
            (None, Some(n)) if !n.trim().is_empty() => HookEvent::from_name(&n),
            _ => return Err(HookError::NoEvent),
        };
        let stamp = |k: &'static str| -> Result<Option<Timestamp>, HookError> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(v @ (Value::String(_) | Value::Number(_))) => Timestamp::from_json(v)
                    .map(Some)
                    .ok_or(HookError::WrongType(k)),
                Some(_) => Err(HookError::WrongType(k)),
            }
        };
        let non_empty = |o: Option<String>| o.filter(|x| !x.trim().is_empty());
        Ok(Hook {
            event,
            session_id: non_empty(s("session_id")?).or(non_empty(s("headspace_session_id")?)),
            transcript_path: non_empty(s("transcript_path")?),
            cwd: non_empty(s("cwd")?).or(non_empty(s("working_directory")?)),
            tmux_pane: non_empty(s("tmux_pane")?),
            emitted_at: match stamp("emitted_at")? {
                Some(t) => Some(t),
                None => stamp("sm_hook_emitted_at")?,
            },
            prompt: s("prompt")?,
            prompt_id: non_empty(s("prompt_id")?),
            last_assistant_message: s("last_assistant_message")?,
            tool_name: non_empty(s("tool_name")?),
            tool_input: obj.get("tool_input").cloned().filter(|v| !v.is_null()),
            tool_use_id: non_empty(s("tool_use_id")?),
            notification_type: non_empty(s("notification_type")?),
            message: s("message")?,
            source: non_empty(s("source")?),
            reason: non_empty(s("reason")?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_event_wins_over_body() {
        let h = Hook::parse(Some("stop"), br#"{"hook_event_name":"UserPromptSubmit"}"#).unwrap();
        assert_eq!(h.event, HookEvent::Stop);
        let h = Hook::parse(None, br#"{"hook_event_name":"user-prompt-submit"}"#).unwrap();
        assert_eq!(h.event, HookEvent::UserPromptSubmit);
    }

    #[test]
    fn unknown_events_and_fields_are_accepted() {
        let h = Hook::parse(
            Some("worktree-create"),
            br#"{"zzz":[1,2],"session_id":"s"}"#,
        )
        .unwrap();
        assert_eq!(h.event, HookEvent::Other("WorktreeCreate".into()));
        assert_eq!(h.session_id.as_deref(), Some("s"));
    }

    #[test]
    fn malformed_input_is_a_typed_error() {
        assert!(matches!(
            Hook::parse(None, b"{not json"),
            Err(HookError::NotJson(_))
        ));
        assert_eq!(Hook::parse(None, b"[1]"), Err(HookError::NotAnObject));
        assert_eq!(Hook::parse(None, b"{}"), Err(HookError::NoEvent));
        assert_eq!(
            Hook::parse(Some("Stop"), br#"{"session_id":5}"#),
            Err(HookError::WrongType("session_id"))
        );
        assert_eq!(
            Hook::parse(Some("Stop"), br#"{"emitted_at":"yesterday"}"#),
            Err(HookError::WrongType("emitted_at"))
        );
    }

    #[test]
    fn python_script_shape_and_sm_stamp() {
        let h = Hook::parse(
            Some("stop"),
            br#"{"working_directory":"/w","tmux_pane":"%3","headspace_session_id":"abc","sm_hook_emitted_at":"2026-02-18T10:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(h.cwd.as_deref(), Some("/w"));
        assert_eq!(h.tmux_pane.as_deref(), Some("%3"));
        assert_eq!(h.session_id.as_deref(), Some("abc"));
        assert!(h.emitted_at.is_some());
    }
}
