//! Agent kinds: which agent CLI an agent runs, and what names it, its transcripts' paths and
//! sessions. Which reader reads each kind's hooks, lines, screens and processes is in
//! [`crate::kind_readers`], the seam (docs/agent-kinds.md).
//!
//! Which kind an input is comes with it: a hook by its route (`Input::Hook::agent`), a
//! transcript by where it lies ([`AgentKind::of_transcript`]: Claude Code's paths are relative
//! to the claude dir, `projects/…`; Codex's are `codex/` and their path in the codex dir,
//! Gemini's `gemini/` and their path in the gemini dir), a
//! pane by its process ([`AgentKind::of_process`]), and an agent by its row
//! (`AgentRow::kind`). This module reads nothing of the crate: the rows name the kind.

use serde::{Deserialize, Serialize};

/// An agent CLI whose hooks, transcript and screen the core can read.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Anthropic's Claude Code (npm `@anthropic-ai/claude-code`).
    #[default]
    Claude,
    /// OpenAI's Codex CLI (npm `@openai/codex`).
    Codex,
    /// Google's Gemini CLI (npm `@google/gemini-cli`).
    Gemini,
}

/// Where Codex CLI's transcripts lie among the core's transcript paths: `codex/` and their
/// path in the codex dir (`sessions/YYYY/MM/DD/rollout-<time>-<session>.jsonl`).
pub const CODEX_PREFIX: &str = "codex/";

/// Where Gemini CLI's transcripts lie among the core's transcript paths: `gemini/` and their
/// path in the gemini dir (`tmp/<project>/chats/session-<time>-<session>.jsonl`).
pub const GEMINI_PREFIX: &str = "gemini/";

/// How much of a Gemini CLI session id names its session here: its chat file's name carries
/// only these first characters, so the hooks' full id is cut to them (one session key for
/// both; a clash needs two sessions among 4 billion keys, and then merges two agents' cards,
/// never their turns, whose ids are their own).
pub const GEMINI_SESSION_CHARS: usize = 8;

impl AgentKind {
    /// Every kind, in the order the CLI and the page list them.
    pub const ALL: [AgentKind; 3] = [AgentKind::Claude, AgentKind::Codex, AgentKind::Gemini];
    /// The kind's name as `--agent` and the API take it (`claude`).
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
        }
    }
    /// The CLI's name as people write it, for log lines and messages (`Claude Code`).
    pub fn title(self) -> &'static str {
        match self {
            AgentKind::Claude => "Claude Code",
            AgentKind::Codex => "Codex CLI",
            AgentKind::Gemini => "Gemini CLI",
        }
    }
    /// What starts a new conversation in the same pane when typed at the prompt, for
    /// `clear`: Claude Code's `/clear` (its new session joins the agent by the pane its hooks
    /// name). Codex CLI's `/new` starts a session whose hooks name no pane, which the server
    /// does not tie to the agent yet: none. Gemini CLI's `/clear` starts a new session whose
    /// hooks name the pane, as Claude Code's do.
    pub fn clear_text(self) -> Option<&'static str> {
        match self {
            AgentKind::Claude | AgentKind::Gemini => Some("/clear"),
            AgentKind::Codex => None,
        }
    }
    /// Whether a prompt its transcript shows while the turn still seems to run may belong to
    /// that turn (a bare "yes" then answers it): Claude Code takes text typed while it works
    /// into the running turn, and Codex CLI's `task_complete` ends each turn in its rollout.
    /// Gemini CLI queues what is typed while it works as the next turn, and its chat file
    /// never says a turn ended (that comes from its hooks and its screen): a turn that seems
    /// to run when its next prompt is written had ended (found by the simulation: with the
    /// hooks lost, a second "yes" joined the turn before it).
    pub fn prompt_may_join_running_turn(self) -> bool {
        match self {
            AgentKind::Claude | AgentKind::Codex => true,
            AgentKind::Gemini => false,
        }
    }
    /// How much earlier than its prompt hook's stamp a prompt's line may be dated, when the
    /// CLI always writes the line after the hook: Gemini CLI runs `BeforeAgent`, waits for
    /// it, then writes the prompt (300–400 ms after the hook's own time in the lab; the
    /// forwarder's stamp is later than that time, never later than the line). A line dated
    /// before a prompt hook's stamp (beyond this slack for clock granularity) is an earlier
    /// prompt with the same text, never that hook's (found by the simulation: the late line
    /// of an earlier "yes" took a later "yes"'s hook and its task, and the agent showed idle
    /// while it worked). `None`: no such order is known (Claude Code, Codex CLI: their prompt
    /// ids decide).
    pub fn prompt_line_after_hook_ms(self) -> Option<i64> {
        match self {
            AgentKind::Gemini => Some(250),
            AgentKind::Claude | AgentKind::Codex => None,
        }
    }
    /// The kind whose transcript a core transcript path names (see [`CODEX_PREFIX`]).
    pub fn of_transcript(rel: &str) -> AgentKind {
        if rel.starts_with(CODEX_PREFIX) {
            AgentKind::Codex
        } else if rel.starts_with(GEMINI_PREFIX) {
            AgentKind::Gemini
        } else {
            AgentKind::Claude
        }
    }
    /// The session a transcript path names, when it is a session's transcript of this kind:
    /// Claude Code's `projects/<dir>/<session>.jsonl` (not a sub-agent's, deeper), Codex's
    /// `codex/sessions/Y/M/D/rollout-<time>-<session>.jsonl` (the session id is the uuid
    /// that ends the name, as its hooks' `session_id`), Gemini's
    /// `gemini/tmp/<project>/chats/session-<time>-<8 hex>.jsonl` (the first
    /// [`GEMINI_SESSION_CHARS`] of the session id; not a sub-agent's, deeper).
    pub fn session_of_path(self, rel: &str) -> Option<String> {
        let parts: Vec<&str> = rel.split('/').collect();
        match self {
            AgentKind::Claude => match parts.as_slice() {
                ["projects", dir, file] if !dir.is_empty() && !dir.starts_with('.') => {
                    let stem = file.strip_suffix(".jsonl")?;
                    (!stem.is_empty()).then(|| stem.to_string())
                }
                _ => None,
            },
            AgentKind::Codex => match parts.as_slice() {
                ["codex", "sessions", y, m, d, file]
                    if [y, m, d]
                        .iter()
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
                {
                    let stem = file.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
                    let id = stem.get(stem.len().checked_sub(36)?..)?;
                    let uuid_like = id.len() == 36
                        && id.bytes().enumerate().all(|(i, b)| {
                            if [8, 13, 18, 23].contains(&i) {
                                b == b'-'
                            } else {
                                b.is_ascii_hexdigit()
                            }
                        });
                    uuid_like.then(|| id.to_ascii_lowercase())
                }
                _ => None,
            },
            AgentKind::Gemini => match parts.as_slice() {
                ["gemini", "tmp", project, "chats", file]
                    if !project.is_empty() && !project.starts_with('.') =>
                {
                    let stem = file.strip_prefix("session-")?.strip_suffix(".jsonl")?;
                    let id = stem.get(stem.len().checked_sub(GEMINI_SESSION_CHARS)?..)?;
                    let before = stem.len() - GEMINI_SESSION_CHARS;
                    // A uuid's first characters, or those of an id given with `--session-id`.
                    let named = before > 0
                        && stem.as_bytes()[before - 1] == b'-'
                        && id
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                    named.then(|| id.to_ascii_lowercase())
                }
                _ => None,
            },
        }
    }
    /// The session key of a Gemini CLI session id (its first [`GEMINI_SESSION_CHARS`],
    /// lower case); other kinds' ids are their keys.
    pub fn session_key(self, id: &str) -> String {
        match self {
            AgentKind::Gemini => id
                .chars()
                .take(GEMINI_SESSION_CHARS)
                .collect::<String>()
                .to_ascii_lowercase(),
            AgentKind::Claude | AgentKind::Codex => id.to_string(),
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
    fn a_transcript_path_names_its_kind_and_session() {
        let claude = "projects/-home-u-app/0e5c2a8e-1111-4222-8333-944445555666.jsonl";
        assert_eq!(AgentKind::of_transcript(claude), AgentKind::Claude);
        assert_eq!(
            AgentKind::Claude.session_of_path(claude).as_deref(),
            Some("0e5c2a8e-1111-4222-8333-944445555666")
        );
        let codex = "codex/sessions/2026/11/27/rollout-2026-11-27T10-00-00-019A2B3C-4D5E-7F60-8172-839405A6B7C8.jsonl";
        assert_eq!(AgentKind::of_transcript(codex), AgentKind::Codex);
        assert_eq!(
            AgentKind::Codex.session_of_path(codex).as_deref(),
            Some("019a2b3c-4d5e-7f60-8172-839405a6b7c8")
        );
        // Not sessions: another folder, a name without a uuid, a sub-agent's transcript.
        for rel in [
            "codex/sessions/2026/11/rollout-x-019a2b3c-4d5e-7f60-8172-839405a6b7c8.jsonl",
            "codex/sessions/2026/11/27/rollout-2026-11-27.jsonl",
            "codex/sessions/2026/11/27/history.jsonl",
            "codex/history.jsonl",
        ] {
            assert_eq!(AgentKind::Codex.session_of_path(rel), None, "{rel}");
        }
        assert_eq!(
            AgentKind::Claude.session_of_path("projects/d/s/subagents/a.jsonl"),
            None
        );
        let gemini = "gemini/tmp/proj/chats/session-2026-11-27T17-35-3DD3EBF6.jsonl";
        assert_eq!(AgentKind::of_transcript(gemini), AgentKind::Gemini);
        assert_eq!(
            AgentKind::Gemini.session_of_path(gemini).as_deref(),
            Some("3dd3ebf6")
        );
        assert_eq!(
            AgentKind::Gemini.session_key("3DD3EBF6-1111-4222-8333-944445555666"),
            "3dd3ebf6"
        );
        for rel in [
            "gemini/tmp/proj/chats/3dd3ebf6-1111/0e5c2a8e-1111-4222-8333-944445555666.jsonl",
            "gemini/tmp/proj/chats/session-2026-11-27T17-35-3dd3eb.f.jsonl",
            "gemini/tmp/proj/chats/session-3dd3ebf6.jsonl",
            "gemini/tmp/proj/logs.json",
            "gemini/history/proj/chats/session-2026-11-27T17-35-3dd3ebf6.jsonl",
        ] {
            assert_eq!(AgentKind::Gemini.session_of_path(rel), None, "{rel}");
        }
    }
}
