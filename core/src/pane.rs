//! Reading a tmux capture of Claude Code's screen: idle prompt, busy, permission dialog,
//! startup. Pure: the shell captures, the core reads.
//!
//! Only the block right above the input box counts as "busy": finished spinner lines stay in
//! scrollback and must not make an idle agent look busy.

use serde_json::{json, Value};

/// What the screen shows.
#[derive(Clone, Debug, PartialEq)]
pub enum PaneState {
    /// The input box with no spinner above it: the agent waits for a prompt.
    Idle,
    /// A spinner or "esc to interrupt" right above the input box: the agent works.
    Busy,
    /// A permission dialog; its question and numbered options.
    Permission(Value),
    /// The startup "trust this folder" dialog.
    Trust,
    /// Claude Code is starting (welcome box, no input box yet).
    Starting,
    /// Nothing recognisable (another program, a shell, a dead pane).
    Unknown,
}

/// A reading of one capture.
#[derive(Clone, Debug, PartialEq)]
pub struct PaneReading {
    /// What the screen shows.
    pub state: PaneState,
    /// Text typed (or suggested) in the input box, when there is one.
    pub input: Option<String>,
}

fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.chars().count() >= 10 && t.chars().all(|c| c == '─' || c == '━')
}

fn strip_box(line: &str) -> &str {
    line.trim()
        .trim_start_matches(['│', '┃'])
        .trim_end_matches(['│', '┃'])
        .trim_matches(|c: char| c.is_whitespace() || c == '\u{a0}')
}

const SPINNER_WORDS: [&str; 2] = ["esc to interrupt", "ctrl+c to interrupt"];

fn is_spinner(line: &str) -> bool {
    let t = line.trim();
    if SPINNER_WORDS.iter().any(|w| t.contains(w)) {
        return true;
    }
    // "✳ Simplifying… (2m 18s · ↓ 4.8k tokens)": a glyph, a word, an ellipsis.
    let mut chars = t.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    !first.is_alphanumeric()
        && first != '>'
        && first != '❯'
        && t.contains('…')
        && t.split_whitespace().nth(1).is_some_and(|w| w.contains('…'))
}

/// Finds the input box: (index of its prompt line, index of its top edge, typed text).
fn input_box(lines: &[&str]) -> Option<(usize, usize, String)> {
    for i in (1..lines.len()).rev() {
        let t = lines[i].trim_start();
        // Newer style: ❯ between two rules.
        if let Some(rest) = t.strip_prefix('❯') {
            if is_rule(lines[i - 1])
                && lines
                    .get(i + 1)
                    .is_none_or(|l| is_rule(l) || l.trim().is_empty())
            {
                return Some((
                    i,
                    i - 1,
                    rest.trim_matches(|c: char| c.is_whitespace() || c == '\u{a0}')
                        .to_string(),
                ));
            }
        }
        // Older style: │ > … │ inside a rounded box.
        if t.starts_with('│')
            && lines[i - 1].trim_start().starts_with('╭')
            && lines
                .get(i + 1)
                .is_some_and(|l| l.trim_start().starts_with('╰'))
        {
            let inner = strip_box(t);
            if let Some(rest) = inner.strip_prefix('>') {
                let typed = rest.trim_matches(|c: char| c.is_whitespace() || c == '\u{a0}');
                // `Try "…"` is a placeholder, not typed text.
                let typed = if typed.starts_with("Try \"") {
                    ""
                } else {
                    typed
                };
                return Some((i, i - 1, typed.to_string()));
            }
        }
    }
    None
}

/// A dialog's numbered option on `line`: its number and text, with the box edges and the
/// selection marker taken off. A line such as ". text" counts as an option without a
/// number, as it always has.
fn numbered_option(line: &str) -> Option<(Option<usize>, String)> {
    let t = strip_box(line).trim_start_matches(['❯', '>', ' ', '\u{a0}']);
    let (num, rest) = t.split_once(". ")?;
    (num.len() <= 2 && num.chars().all(|c| c.is_ascii_digit()))
        .then(|| (num.parse().ok(), rest.trim().to_string()))
}

/// The texts of the numbered options among `lines` (a dialog's, below its question), in
/// screen order.
fn numbered_options(lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| numbered_option(l))
        .map(|(_, text)| text)
        .collect()
}

/// True when `screen` shows option `n` of a dialog and its text starts with `label` (the
/// label a hook gave may be cut shorter than the screen's). "1. Yes" is not found in
/// "11. Yes": the number is read whole.
pub fn shows_option(screen: &str, n: usize, label: &str) -> bool {
    screen
        .lines()
        .filter_map(numbered_option)
        .any(|(num, text)| num == Some(n) && text.starts_with(label.trim()))
}

/// Reads a capture.
pub fn read_pane(text: &str) -> PaneReading {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end()).collect();
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let lines = &lines[..end];
    let boxed = input_box(lines);
    let box_at = boxed.as_ref().map_or(0, |b| b.1);

    // A dialog below the last input box (or with none) is what the agent waits on.
    if let Some(q) = lines.iter().rposition(|l| {
        l.contains("Do you want to proceed?") || l.contains("Do you want to make this edit")
    }) {
        if boxed.is_none() || q > box_at {
            let options = numbered_options(&lines[q + 1..]);
            let question = strip_box(lines[q]).to_string();
            let detail: Vec<String> = lines[q.saturating_sub(3)..q]
                .iter()
                .map(|l| strip_box(l).to_string())
                .filter(|l| !l.is_empty() && !l.starts_with('╭'))
                .collect();
            return PaneReading {
                state: PaneState::Permission(
                    json!({"question": question, "detail": detail, "options": options}),
                ),
                input: None,
            };
        }
    }
    if lines
        .iter()
        .any(|l| l.contains("Do you trust the files in this folder?"))
        && boxed.is_none()
    {
        return PaneReading {
            state: PaneState::Trust,
            input: None,
        };
    }
    let Some((_, top, typed)) = boxed else {
        let starting = lines.iter().any(|l| l.contains("Welcome to Claude Code"));
        return PaneReading {
            state: if starting {
                PaneState::Starting
            } else {
                PaneState::Unknown
            },
            input: None,
        };
    };
    // The block right above the box: up to one blank line, then the nearest text line.
    let above = lines[..top]
        .iter()
        .rev()
        .take(3)
        .find(|l| !l.trim().is_empty());
    let busy = above.is_some_and(|l| is_spinner(l));
    PaneReading {
        state: if busy {
            PaneState::Busy
        } else {
            PaneState::Idle
        },
        input: Some(typed),
    }
}

/// The last few non-empty lines of a capture, for DEBUG telemetry (sm#240).
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" ⏎ ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = "────────────────────────────────────────";

    #[test]
    fn newer_idle_prompt_with_nbsp_and_hints() {
        let s = format!("⏺ Done.\n\n{RULE}\n❯\u{a0}\n{RULE}\n  ? for shortcuts\n");
        assert_eq!(
            read_pane(&s),
            PaneReading {
                state: PaneState::Idle,
                input: Some(String::new())
            }
        );
        let s = format!("{RULE}\n❯ fix the bu\n{RULE}\n  ⏵⏵ auto-accept edits on\n");
        assert_eq!(read_pane(&s).input.as_deref(), Some("fix the bu"));
    }

    #[test]
    fn spinner_right_above_the_box_is_busy() {
        let s = format!("⏺ Reading files\n\n✳ Simplifying… (2m 18s · ↓ 4.8k tokens · esc to interrupt)\n\n{RULE}\n❯ \n{RULE}\n");
        assert_eq!(read_pane(&s).state, PaneState::Busy);
        let s = format!("✻ Thinking… (ctrl+c to interrupt)\n{RULE}\n❯ \n{RULE}\n");
        assert_eq!(read_pane(&s).state, PaneState::Busy);
    }

    #[test]
    fn stale_spinner_in_scrollback_is_not_busy() {
        let s = format!("✳ Simplifying… (2m 18s · esc to interrupt)\n⏺ All done, tests pass.\n\n{RULE}\n❯ \n{RULE}\n");
        assert_eq!(read_pane(&s).state, PaneState::Idle);
    }

    #[test]
    fn permission_dialog_becomes_a_question() {
        let s = "╭──────────────────────────╮\n│ Bash command              │\n│   rm -rf target           │\n│ Do you want to proceed?   │\n│ ❯ 1. Yes                  │\n│   2. No, and tell Claude what to do differently (esc) │\n╰──────────────────────────╯\n";
        let r = read_pane(s);
        let PaneState::Permission(q) = r.state else {
            panic!("{r:?}")
        };
        assert_eq!(q["question"], "Do you want to proceed?");
        assert_eq!(
            q["options"],
            json!(["Yes", "No, and tell Claude what to do differently (esc)"])
        );
    }

    #[test]
    fn an_option_is_found_by_its_whole_number_and_its_label() {
        let s = "│ Do you want to proceed?   │\n│ ❯ 1. Yes                  │\n│   2. No, and tell Claude what to do differently (esc) │\n";
        assert!(shows_option(s, 1, "Yes"));
        assert!(shows_option(s, 2, "No, and tell Claude"));
        assert!(!shows_option(s, 2, "Yes"), "another option's label");
        assert!(!shows_option(s, 3, "Yes"), "no third option");
        assert!(!shows_option("  11. Yes\n", 1, "Yes"), "11 is not 1");
        assert!(shows_option("  11. Yes\n", 11, "Yes"));
        assert!(!shows_option(". Yes\n", 1, "Yes"));
        assert!(
            !shows_option("Step 1. Yes\n", 1, "Yes"),
            "text, not an option"
        );
        assert!(shows_option(
            "┃ > 3. Type something. ┃\n",
            3,
            "Type something."
        ));
    }

    #[test]
    fn trust_and_other_screens() {
        assert_eq!(
            read_pane("Do you trust the files in this folder?\n❯ 1. Yes, proceed\n  2. No, exit\n")
                .state,
            PaneState::Trust
        );
        assert_eq!(read_pane("$ ls\nCargo.toml\n$ ").state, PaneState::Unknown);
        assert_eq!(read_pane("").state, PaneState::Unknown);
    }
}
