//! The seam for agent kinds: everything the core reads that is specific to one agent CLI.
//!
//! The engine keeps its promise (no turn lost or shown twice) over a common vocabulary: a
//! [`Hook`], a transcript line's [`LineReading`] (its turn, steps, usage and signals), a
//! screen's [`PaneReading`]. What turns one CLI's bytes into that vocabulary is here, one
//! method per thing read, each a `match` over [`AgentKind`]:
//!
//! | method | reads | Claude Code's reader |
//! |---|---|---|
//! | [`AgentKind::parse_hook`] | a hook's JSON body | [`crate::hook`] |
//! | [`AgentKind::read_line`] | one transcript line | [`crate::transcript::line_read`] |
//! | [`AgentKind::read_screen`] | a tmux capture of its screen | [`crate::pane`] |
//! | [`AgentKind::is_machinery_prompt`] | a prompt that announces no turn (its own commands) | `transcript::commands` |
//! | [`AgentKind::is_agent_process`] | a pane's process: is this the agent? | [`crate::pane::discovery`] |
//!
//! Adding a kind (Codex CLI, Gemini CLI: docs/agent-kinds.md) is a variant and one reader
//! module per row, not an edit of the engine: the compiler lists every `match` that needs
//! the new arm. Today every hook route, transcript root and pane is Claude Code's, so the
//! engine asks [`AgentKind::Claude`]; a second kind brings the field that says which.

use crate::hook::{Hook, HookError};
use crate::pane::discovery::PaneProcess;
use crate::pane::PaneReading;
use crate::transcript::line_read::LineReading;
use crate::transcript::mend::Mended;

/// An agent CLI whose hooks, transcript and screen the core can read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AgentKind {
    /// Anthropic's Claude Code (npm `@anthropic-ai/claude-code`).
    #[default]
    Claude,
}

impl AgentKind {
    /// Every kind, in the order the CLI and the page list them.
    pub const ALL: [AgentKind; 1] = [AgentKind::Claude];

    /// The kind's name as `--agent` and the API take it (`claude`).
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
        }
    }

    /// The kind named `name`, or an error that lists the known names.
    pub fn from_name(name: &str) -> Result<AgentKind, String> {
        AgentKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = AgentKind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown agent kind {name:?}: known kinds are {}",
                    known.join(", ")
                )
            })
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
        }
    }

    /// Read one whole transcript line (without its newline) in one pass.
    pub fn read_line(self, line: &[u8]) -> LineReading {
        match self {
            AgentKind::Claude => crate::transcript::line_read::read_whole_line(line),
        }
    }

    /// Read a capture of the agent's screen: idle, busy, a dialog, a question.
    pub fn read_screen(self, text: &str) -> PaneReading {
        match self {
            AgentKind::Claude => crate::pane::read_pane(text),
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
        }
    }

    /// Whether a pane's process is this kind's CLI (how a pane no hook named is found).
    pub fn is_agent_process(self, process: &PaneProcess) -> bool {
        match self {
            AgentKind::Claude => crate::pane::discovery::is_claude_process(process),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AgentKind;

    #[test]
    fn names_round_trip_and_an_unknown_name_lists_the_known_ones() {
        for kind in AgentKind::ALL {
            assert_eq!(AgentKind::from_name(kind.name()), Ok(kind));
        }
        let err = AgentKind::from_name("gpt").unwrap_err();
        assert!(err.contains("\"gpt\"") && err.contains("claude"), "{err}");
    }

    #[test]
    fn claude_code_local_commands_announce_no_turn_but_skills_do() {
        let claude = AgentKind::Claude;
        assert!(claude.is_machinery_prompt("/clear"));
        assert!(!claude.is_machinery_prompt("/flow.plan add a cache"));
        assert!(!claude.is_machinery_prompt("fix the build"));
    }
}
