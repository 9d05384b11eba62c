//! Agents' hooks: installing Headspace's into Claude Code's settings file or Codex CLI's
//! hooks file (with Codex's trust entries), and the hook command
//! that forwards each payload to the server without ever blocking Claude Code.

pub mod codex_trust;
pub mod forward;
pub mod install;
