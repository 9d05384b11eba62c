//! The seam for agent kinds: everything the core reads that is specific to one agent CLI.
//!
//! The engine keeps its promise (no turn lost or shown twice) over a common vocabulary: a
//! [`Hook`], a transcript line's [`LineReading`] (its turn, steps, usage and signals), a
//! screen's [`PaneReading`]. What turns one CLI's bytes into that vocabulary is here, one
//! method of [`AgentKind`] per thing read, each a `match` over the kinds:
//!
//! | method | reads | Claude Code's reader | Codex CLI's reader | Gemini CLI's reader |
//! |---|---|---|---|---|
//! | [`AgentKind::parse_hook`] | a hook's JSON body | [`crate::hook`] | [`crate::hook::codex`] | [`crate::hook::gemini`] |
//! | [`AgentKind::read_line`] | one transcript line | [`crate::transcript::line_read`] | [`crate::transcript::codex`] | [`crate::transcript::gemini`] |
//! | [`AgentKind::read_screen`] | a tmux capture of its screen | [`crate::pane`] | [`crate::pane::codex`] | [`crate::pane::gemini`] |
//! | [`AgentKind::is_machinery_prompt`] | a prompt that announces no turn (its own commands) | `transcript::commands` | none reach its hook | none reach its hook |
//! | [`AgentKind::is_agent_process`] | a pane's process: is this the agent? | [`crate::pane::process`] | [`crate::pane::process`] | [`crate::pane::process`] |
//!
//! Adding a kind is a variant of [`AgentKind`] and one reader module per row, not an edit of
//! the engine: the compiler lists every `match` that needs the new arm.

use crate::hook::{Hook, HookError};
use crate::kind::AgentKind;
use crate::pane::process::PaneProcess;
use crate::pane::PaneReading;
use crate::transcript::line_read::LineReading;
use crate::transcript::mend::Mended;

impl AgentKind {
    /// The kind of a pane's process, when it is an agent CLI's.
    pub fn of_process(process: &PaneProcess) -> Option<AgentKind> {
        AgentKind::ALL
            .into_iter()
            .find(|k| k.is_agent_process(process))
    }
    /// Parse a hook's body (the route's event name wins over the body's), with what had to
    /// be mended in its text.
    pub fn parse_hook(
        self,
        route_event: Option<&str>,
        body: &[u8],
    ) -> Result<(Hook, Mended), HookError> {
        match self {
            AgentKind::Claude => Hook::parse_mended(route_event, body),
            AgentKind::Codex => crate::hook::codex::parse(route_event, body),
            AgentKind::Gemini => crate::hook::gemini::parse(route_event, body),
        }
    }
    /// Read one whole transcript line (without its newline) in one pass.
    pub fn read_line(self, line: &[u8]) -> LineReading {
        match self {
            AgentKind::Claude => crate::transcript::line_read::read_whole_line(line),
            AgentKind::Codex => crate::transcript::codex::read_line(line),
            AgentKind::Gemini => crate::transcript::gemini::read_line(line),
        }
    }
    /// Read a capture of the agent's screen: idle, busy, a dialog, a question.
    pub fn read_screen(self, text: &str) -> PaneReading {
        match self {
            AgentKind::Claude => crate::pane::read_pane(text),
            AgentKind::Codex => crate::pane::codex::read_pane(text),
            AgentKind::Gemini => crate::pane::gemini::read_pane(text),
        }
    }
    /// A prompt hook's text that announces no turn: the CLI's own local commands and its
    /// machinery. A custom command or skill does announce one: without it the agent would
    /// show idle from its hook until its transcript is read (found by the orchestration
    /// simulation, whose steps are `/flow.*` skills).
    pub fn is_machinery_prompt(self, text: &str) -> bool {
        use crate::transcript::commands::{is_local_command, is_machinery_text, slash_command};
        match self {
            AgentKind::Claude => {
                slash_command(text).is_some_and(is_local_command) || is_machinery_text(text)
            }
            // Codex's and Gemini's own commands (`/new`, `/clear`, …) never reach their
            // prompt hooks.
            AgentKind::Codex | AgentKind::Gemini => false,
        }
    }
    /// Whether a pane's process is this kind's CLI (how a pane no hook named is found).
    pub fn is_agent_process(self, process: &PaneProcess) -> bool {
        match self {
            AgentKind::Claude => crate::pane::process::is_claude_process(process),
            AgentKind::Codex => crate::pane::process::is_codex_process(process),
            AgentKind::Gemini => crate::pane::process::is_gemini_process(process),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kind::AgentKind;

    #[test]
    fn claude_code_local_commands_announce_no_turn_but_skills_do() {
        let claude = AgentKind::Claude;
        assert!(claude.is_machinery_prompt("/clear"));
        assert!(!claude.is_machinery_prompt("/flow.plan add a cache"));
        assert!(!claude.is_machinery_prompt("fix the build"));
    }
}
