//! Codex CLI's hook payloads, read into the common [`Hook`].
//!
//! Codex's hooks carry Claude Code's field names (`session_id`, `transcript_path`, `cwd`,
//! `prompt`, `tool_name`, `tool_input`, `tool_use_id`, `last_assistant_message`), with these
//! differences:
//!
//! - `turn_id` names the turn a hook belongs to: it is the prompt's id (the rollout's user
//!   message carries the same `turn_id`), so a prompt hook and its line match by it.
//! - `Interrupt` is sent instead of `Stop` when the user presses Escape: the turn ended
//!   without a reply (read as [`HookEvent::StopFailure`]).
//! - The pane cannot come from the hook: Codex runs hooks in an app-server daemon shared by
//!   every session, whose `$TMUX_PANE` is the first session's. A `tmux_pane` is dropped; the
//!   pane comes from process discovery.

use super::{Hook, HookError, HookEvent};
use crate::transcript::mend::Mended;
use serde_json::Value;

/// Parses a Codex hook body (the route's event name wins over the body's).
pub fn parse(route_event: Option<&str>, body: &[u8]) -> Result<(Hook, Mended), HookError> {
    let (mut hook, mended) = Hook::parse_mended(route_event, body)?;
    if hook.event == HookEvent::Other("Interrupt".into()) {
        hook.event = HookEvent::StopFailure;
    }
    hook.tmux_pane = None;
    if hook.prompt_id.is_none() {
        let v: Value =
            serde_json::from_slice(&crate::transcript::mend::repair_lone_surrogates(body).0)
                .map_err(|e| HookError::NotJson(e.to_string()))?;
        hook.prompt_id = match v.get("turn_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
            Some(_) => return Err(HookError::WrongType("turn_id")),
        };
    }
    Ok((hook, mended))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_payloads_read_as_hooks_without_their_daemons_pane() {
        let (h, _) = parse(
            Some("UserPromptSubmit"),
            br#"{"session_id":"01a2","turn_id":"t1","prompt":"hello","tmux_pane":"%0","cwd":"/p"}"#,
        )
        .unwrap();
        assert_eq!(h.event, HookEvent::UserPromptSubmit);
        assert_eq!(h.prompt_id.as_deref(), Some("t1"));
        assert_eq!(h.tmux_pane, None, "the daemon's pane is not the session's");
        let (h, _) = parse(
            None,
            br#"{"hook_event_name":"Interrupt","session_id":"01a2"}"#,
        )
        .unwrap();
        assert_eq!(h.event, HookEvent::StopFailure);
        assert_eq!(
            parse(Some("Stop"), br#"{"session_id":"s","turn_id":5}"#).map(|_| ()),
            Err(HookError::WrongType("turn_id"))
        );
    }
}
