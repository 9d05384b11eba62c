//! Codex CLI's screen (its TUI, 0.171), read into the common [`PaneReading`].
//!
//! What it draws, bottom up: a footer (`  <model> · <folder>`, `  ← for agents · ? for
//! shortcuts`), the input line (`› ` and the typed text, or a grey placeholder such as
//! `Ask Codex to do anything`), and above it the conversation: each prompt as `› text`, the
//! agent's text and tool calls as `• …`, and when a turn ends `  Worked for 3s • 17:10`
//! (or `■ Conversation interrupted …` after Escape). While it works a line
//! `• Working (5s • esc to interrupt)` sits above the input line — but not while a reply
//! streams (the text grows there instead). So the agent works when a spinner shows, or when
//! the conversation's last prompt has no end-of-turn line under it yet; it is idle at its
//! input line otherwise. A permission is a numbered list under `Would you like to …?`
//! ending in `Press enter to confirm or esc to cancel`.

use super::{PaneReading, PaneState};
use serde_json::json;

/// The placeholders Codex shows in an empty input line (grey, which a plain capture loses).
const PLACEHOLDERS: [&str; 8] = [
    "Ask Codex to do anything",
    "Explain this codebase",
    "Summarize recent commits",
    "Implement {feature}",
    "Find and fix a bug in @filename",
    "Write tests for @filename",
    "Improve documentation in @filename",
    "Run /review on my current changes",
];

/// Reads a capture of Codex CLI's screen.
pub fn read_pane(text: &str) -> PaneReading {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    if let Some(q) = lines.iter().rposition(|l| {
        let t = l.trim();
        t.starts_with("Would you like to ") && t.ends_with('?')
    }) {
        let end = lines[q..]
            .iter()
            .position(|l| l.contains("Press enter to confirm"))
            .map(|i| q + i);
        if let Some(end) = end {
            let options: Vec<String> = lines[q + 1..end].iter().filter_map(|l| option(l)).collect();
            let detail: Vec<String> = lines[q + 1..end]
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty() && option(l).is_none())
                .map(str::to_string)
                .collect();
            if !options.is_empty() {
                return PaneReading {
                    state: PaneState::Permission(json!({
                        "question": lines[q].trim(), "detail": detail, "options": options
                    })),
                    input: None,
                };
            }
        }
    }
    let Some(at) = input_line(&lines) else {
        let starting = lines.iter().any(|l| l.contains("OpenAI Codex"));
        return PaneReading {
            state: if starting {
                PaneState::Starting
            } else {
                PaneState::Unknown
            },
            input: None,
        };
    };
    let typed = lines[at].trim_start().trim_start_matches('›').trim();
    let input = (!PLACEHOLDERS.contains(&typed)).then(|| typed.to_string());
    let conversation = &lines[..at];
    let spinning = conversation
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.contains("esc to interrupt"));
    let last_prompt = conversation.iter().rposition(|l| l.starts_with("› "));
    let ended = last_prompt.is_none_or(|p| {
        conversation[p + 1..].iter().any(|l| {
            let t = l.trim_start();
            t.starts_with("Worked for ") || t.starts_with("■ ")
        })
    });
    PaneReading {
        state: if spinning || !ended {
            PaneState::Busy
        } else {
            PaneState::Idle
        },
        input,
    }
}

/// The input line: the last line starting with `›` that has only footer lines (indented
/// text, no `•`) below it.
fn input_line(lines: &[&str]) -> Option<usize> {
    let at = lines.iter().rposition(|l| l.starts_with('›'))?;
    let footer = lines[at + 1..]
        .iter()
        .all(|l| l.trim().is_empty() || (l.starts_with("  ") && !l.trim_start().starts_with('•')));
    (footer
        && !lines[at]
            .trim_start_matches('›')
            .trim()
            .starts_with(|c: char| c.is_ascii_digit()))
    .then_some(at)
}

/// A dialog option line (`› 1. Yes, proceed (y)`, `  2. …`): its text.
fn option(line: &str) -> Option<String> {
    let t = line.trim().trim_start_matches('›').trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    let rest = t[digits..].strip_prefix(". ")?;
    (digits > 0).then(|| rest.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOOTER: &str = "  stand-in default · ~/proj\n  ← for agents · ? for shortcuts";

    fn screen(body: &str, input: &str) -> String {
        format!("  >_ OpenAI Codex (v0.171.0)\n     ~/proj\n\n{body}\n\n› {input}\n\n{FOOTER}\n")
    }

    #[test]
    fn idle_busy_streaming_and_interrupted_screens() {
        let idle = read_pane(&screen("", "Ask Codex to do anything"));
        assert_eq!((idle.state, idle.input), (PaneState::Idle, None));
        let working = screen(
            "› hello\n\n◦ Working (0s • esc to interrupt) · Running hook",
            "Ask Codex to do anything",
        );
        assert_eq!(read_pane(&working).state, PaneState::Busy);
        // A reply streaming: no spinner, no end-of-turn line yet.
        let streaming = screen(
            "› slow please\n\n• This is a slow reply that streams",
            "Ask Codex to do anything",
        );
        assert_eq!(read_pane(&streaming).state, PaneState::Busy);
        let done = screen(
            "› hello\n\n• Hello.\n\n  Worked for 3s • 17:10",
            "Ask Codex to do anything",
        );
        assert_eq!(read_pane(&done).state, PaneState::Idle);
        let interrupted = screen(
            "› slow please\n\n• This is a slow\n\n■ Conversation interrupted - use /feedback if something went wrong",
            "",
        );
        assert_eq!(read_pane(&interrupted).state, PaneState::Idle);
        let typed = read_pane(&screen("", "fix the build"));
        assert_eq!(typed.input.as_deref(), Some("fix the build"));
        assert_eq!(read_pane("bash-5.2# ").state, PaneState::Unknown);
    }

    #[test]
    fn an_approval_is_a_permission_with_its_options() {
        let dialog = "› needs approval\n\n• I need to run a command.\n\n  Would you like to run the following command?\n\n  Reason: it asks\n\n  $ echo approved-run\n\n› 1. Yes, proceed (y)\n  2. Yes, and don't ask again for commands that start with `echo approved-run` (p)\n  3. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel\n";
        let PaneState::Permission(q) = read_pane(dialog).state else {
            panic!("not a permission");
        };
        assert_eq!(
            q["question"],
            "Would you like to run the following command?"
        );
        assert_eq!(q["options"][0], "Yes, proceed (y)");
        assert_eq!(q["options"].as_array().unwrap().len(), 3);
        assert!(q["detail"].to_string().contains("echo approved-run"));
    }
}
