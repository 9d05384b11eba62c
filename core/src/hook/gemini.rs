//! Gemini CLI's hook payloads, read into the common [`Hook`].
//!
//! Gemini's hooks carry Claude Code's field names (`session_id`, `transcript_path`, `cwd`,
//! `prompt`, `tool_name`, `tool_input`, `notification_type`, `message`, `source`,
//! `reason`) under events of its own:
//!
//! | Gemini CLI | read as | why |
//! |---|---|---|
//! | `BeforeAgent` | `UserPromptSubmit` | a prompt was submitted (never for its `/` commands) |
//! | `AfterAgent` | `Stop` | the turn ended: a reply, Escape, Ctrl-C or an API error |
//! | `BeforeTool` / `AfterTool` | `PreToolUse` / `PostToolUse` | a tool starts / finished |
//! | `Notification` `ToolPermission` | `Notification` `permission_prompt` | an approval dialog shows |
//! | `SessionStart`, `SessionEnd` | themselves | (`SessionEnd` comes three times per exit) |
//! | anything else (`PreCompress` before every model call, `BeforeModel`, …) | not acted on | |
//!
//! A hook without the forwarder's `emitted_at` takes Gemini's own `timestamp` (when it
//! fired): Gemini writes a prompt's line only after its hook ran, and matching relies on that
//! order (`AgentKind::prompt_line_after_hook_ms`), which an arrival time would not keep.
//!
//! The session id is cut to its key ([`AgentKind::session_key`]): Gemini's chat files carry
//! only its first characters. `run_shell_command` is named `Bash`, as the transcript reader
//! names it, so a hook's step and its line are one step. `AfterAgent`'s `prompt_response`
//! is not read: Gemini joins the streamed pieces wrongly there (lab notes §5); the reply
//! comes from the chat file.

use super::{Hook, HookError, HookEvent};
use crate::kind::AgentKind;
use crate::transcript::mend::Mended;

/// Parses a Gemini CLI hook body (the route's event name wins over the body's).
pub fn parse(route_event: Option<&str>, body: &[u8]) -> Result<(Hook, Mended), HookError> {
    let (mut hook, mended) = Hook::parse_mended(route_event, body)?;
    if hook.emitted_at.is_none() {
        let v: serde_json::Value =
            serde_json::from_slice(&crate::transcript::mend::repair_lone_surrogates(body).0)
                .map_err(|e| HookError::NotJson(e.to_string()))?;
        hook.emitted_at = v
            .get("timestamp")
            .and_then(crate::time::Timestamp::from_json);
    }
    hook.event = match &hook.event {
        HookEvent::Other(name) => match name.to_ascii_lowercase().as_str() {
            "beforeagent" => HookEvent::UserPromptSubmit,
            "afteragent" => HookEvent::Stop,
            "beforetool" => HookEvent::PreToolUse,
            "aftertool" => HookEvent::PostToolUse,
            _ => HookEvent::Other(name.clone()),
        },
        other => other.clone(),
    };
    hook.session_id = hook.session_id.map(|id| AgentKind::Gemini.session_key(&id));
    if hook.notification_type.as_deref() == Some("ToolPermission") {
        hook.notification_type = Some("permission_prompt".into());
    }
    if let Some(name) = &hook.tool_name {
        if name == SHELL_TOOL {
            hook.tool_name = Some("Bash".into());
        }
    }
    Ok((hook, mended))
}

/// Gemini CLI's shell tool, read as Claude Code's `Bash` (its input is `{command, …}` too).
pub const SHELL_TOOL: &str = "run_shell_command";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_events_read_as_the_common_ones_with_the_session_key() {
        let (h, _) = parse(
            Some("BeforeAgent"),
            br#"{"session_id":"3DD3EBF6-0000-4000-8000-000000000001","prompt":"hello","cwd":"/p","tmux_pane":"%3"}"#,
        )
        .unwrap();
        assert_eq!(h.event, HookEvent::UserPromptSubmit);
        assert_eq!(h.session_id.as_deref(), Some("3dd3ebf6"));
        assert_eq!(
            h.tmux_pane.as_deref(),
            Some("%3"),
            "Gemini's hooks run in its pane"
        );
        let (h, _) = parse(
            None,
            br#"{"hook_event_name":"AfterAgent","session_id":"s"}"#,
        )
        .unwrap();
        assert_eq!(h.event, HookEvent::Stop);
        let (h, _) = parse(
            Some("BeforeTool"),
            br#"{"session_id":"s","tool_name":"run_shell_command","tool_input":{"command":"ls"}}"#,
        )
        .unwrap();
        assert_eq!(
            (h.event, h.tool_name.as_deref()),
            (HookEvent::PreToolUse, Some("Bash"))
        );
        let (h, _) = parse(
            Some("Notification"),
            br#"{"session_id":"s","notification_type":"ToolPermission","message":"m"}"#,
        )
        .unwrap();
        assert_eq!(h.notification_type.as_deref(), Some("permission_prompt"));
        let (h, _) = parse(Some("PreCompress"), br#"{"session_id":"s"}"#).unwrap();
        assert_eq!(h.event, HookEvent::Other("PreCompress".into()));
        // Without the forwarder's stamp, Gemini's own time of firing.
        let (h, _) = parse(
            Some("BeforeAgent"),
            br#"{"session_id":"s","prompt":"p","timestamp":"2026-11-27T17:35:55.902Z"}"#,
        )
        .unwrap();
        assert_eq!(
            h.emitted_at,
            crate::time::Timestamp::parse_rfc3339("2026-11-27T17:35:55.902Z")
        );
        let (h, _) = parse(
            Some("BeforeAgent"),
            br#"{"session_id":"s","timestamp":"2026-11-27T17:35:55.902Z","emitted_at":"2026-11-27T17:35:56.089Z"}"#,
        )
        .unwrap();
        assert_eq!(
            h.emitted_at,
            crate::time::Timestamp::parse_rfc3339("2026-11-27T17:35:56.089Z"),
            "the forwarder's stamp first"
        );
    }
}
