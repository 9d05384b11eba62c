//! Reading a tmux capture of Claude Code's screen: idle prompt, busy, permission dialog,
//! startup. Pure: the shell captures, the core reads.
//!
//! Only the block right above the input box counts as "busy": finished spinner lines stay in
//! scrollback and must not make an idle agent look busy.

pub mod codex;
pub mod dialog;
pub mod discovery;
pub mod gemini;
pub mod process;
pub mod send_check;
pub(crate) mod tool;

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

pub(crate) fn strip_box(line: &str) -> &str {
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
pub(crate) fn numbered_option(line: &str) -> Option<(Option<usize>, String)> {
    let t = strip_box(line).trim_start_matches(['❯', '>', ' ', '\u{a0}']);
    let (num, rest) = t.split_once(". ")?;
    (num.len() <= 2 && num.chars().all(|c| c.is_ascii_digit()))
        .then(|| (num.parse().ok(), rest.trim().to_string()))
}

/// The numbered options among `lines` (a dialog's, below its question), in screen order,
/// each with its whole text: an option that wraps in a narrow pane goes on over the lines
/// below it, indented under its text (Claude Code's wrapping) or filling the pane's whole
/// width (the terminal's), and those lines are joined to it.
pub(crate) fn options_with_text(lines: &[&str]) -> Vec<(Option<usize>, String)> {
    // The pane's width, as far as the capture shows it: a line this long was cut by the
    // terminal and goes on at the start of the next.
    let width = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut out: Vec<(Option<usize>, String)> = Vec::new();
    // The indentation a continuation line needs, and whether the last line ran to the edge.
    let mut open: Option<(usize, bool)> = None;
    for line in lines {
        if let Some((num, text)) = numbered_option(line) {
            // Wrapped text lines up under the option's text, right of its number.
            let indent = indentation(strip_box_edges(line));
            open = Some((indent + 1, width >= 20 && line.chars().count() >= width));
            out.push((num, text));
            continue;
        }
        let inner = strip_box(line);
        let continues = match open {
            Some((indent, cut)) => {
                !inner.is_empty()
                    && !inner.starts_with(['╭', '╰'])
                    && !is_rule(line)
                    && !is_footer(inner)
                    && (cut || indentation(strip_box_edges(line)) >= indent)
            }
            None => false,
        };
        match out.last_mut() {
            Some((_, text)) if continues => {
                if !text.ends_with('-') {
                    text.push(' ');
                }
                text.push_str(inner);
                open =
                    open.map(|(indent, _)| (indent, width >= 20 && line.chars().count() >= width));
            }
            _ => open = None,
        }
    }
    out
}

/// `line` without its box edges, its indentation kept.
fn strip_box_edges(line: &str) -> &str {
    match line.trim_start().strip_prefix(['│', '┃']) {
        Some(inner) => inner.trim_end().trim_end_matches(['│', '┃']),
        None => line.trim_end(),
    }
}

/// How many characters come before the first letter or digit of `line`: its blanks and a
/// selection marker.
fn indentation(line: &str) -> usize {
    line.chars().take_while(|c| !c.is_alphanumeric()).count()
}

/// The texts of the numbered options among `lines`, wrapped ones whole.
fn numbered_options(lines: &[&str]) -> Vec<String> {
    options_with_text(lines)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

/// `text` with every blank taken out: a label compared with the screen, wherever the pane
/// wrapped it.
pub(crate) fn squashed(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '\u{a0}')
        .collect()
}

/// True when `screen` shows option `n` of a dialog and its text starts with `label` (the
/// label a hook gave may be cut shorter than the screen's). "1. Yes" is not found in
/// "11. Yes": the number is read whole. An option wrapped over several lines in a narrow
/// pane is read whole, and blanks do not count (a wrap may fall inside a word).
pub fn shows_option(screen: &str, n: usize, label: &str) -> bool {
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let label = squashed(label);
    options_with_text(&lines)
        .into_iter()
        .any(|(num, text)| num == Some(n) && squashed(&text).starts_with(&label))
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
        // Between a prompt and its reply Claude Code may draw its spinner with no input box
        // under it yet (2.1.332, right after Enter): that is work.
        let spinning = lines
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| is_spinner(l));
        return PaneReading {
            state: if starting {
                PaneState::Starting
            } else if spinning {
                PaneState::Busy
            } else {
                PaneState::Unknown
            },
            input: None,
        };
    };
    // The block right above the box: up to one blank line, then the nearest text line (a
    // note drawn at the right edge, such as the effort level, is not that line).
    let conversation: Vec<&str> = lines[..top]
        .iter()
        .copied()
        .filter(|l| !is_side_note(l))
        .collect();
    let above = conversation
        .iter()
        .rev()
        .take(3)
        .find(|l| !l.trim().is_empty());
    let busy = above.is_some_and(|l| is_spinner(l)) || shows_submitted_prompt(&conversation);
    PaneReading {
        state: if busy {
            PaneState::Busy
        } else {
            PaneState::Idle
        },
        input: Some(typed),
    }
}

/// A short note drawn at the right edge of the screen above the input box (Claude Code
/// 2.1.332 draws the effort level there, `● high`): not part of the conversation.
fn is_side_note(line: &str) -> bool {
    let indent = line.chars().take_while(|c| *c == ' ').count();
    let text = line.trim();
    indent >= 40 && !text.is_empty() && text.chars().count() <= 24
}

/// A line Claude Code draws about a hook (`⎿  UserPromptSubmit hook failed`, `… hook error`,
/// the HTTP status under it), not about the conversation.
fn is_hook_notice(line: &str) -> bool {
    let t = line.trim_start_matches(['⎿', ' ', '\u{a0}']);
    t.contains(" hook failed")
        || t.contains(" hook error")
        || (t.starts_with("HTTP ") && t.contains(" from http"))
}

/// True when a screen with no input box ends with a prompt the user just submitted (`❯ text`
/// or `> text` as its last line): the CLI took it in and has not drawn anything else yet.
pub fn ends_with_prompt_echo(text: &str) -> bool {
    let last = text.lines().rev().find(|l| !l.trim().is_empty());
    input_box(&text.lines().map(str::trim_end).collect::<Vec<_>>()).is_none()
        && last.is_some_and(|l| {
            let t = l.trim_start();
            ["❯ ", "> "].iter().any(|p| {
                t.strip_prefix(p)
                    .is_some_and(|rest| !rest.trim().is_empty())
            })
        })
}

/// True when the last block of the conversation (the lines above the input box, down to the
/// nearest blank line) is a prompt the user submitted, with no reply, tool output or notice
/// under it yet: Claude Code draws the prompt at once and its spinner a moment later, so the
/// agent already works (a `wait` called right after Enter must not see it idle).
fn shows_submitted_prompt(above_box: &[&str]) -> bool {
    let Some(last) = above_box.iter().rposition(|l| !l.trim().is_empty()) else {
        return false;
    };
    let first = above_box[..last]
        .iter()
        .rposition(|l| l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let block = &above_box[first..=last];
    // A hook's notice under the prompt (`⎿ UserPromptSubmit hook failed`) is no reply.
    let replied = block.iter().any(|l| {
        let t = l.trim_start();
        t.starts_with(['⏺', '●', '⎿', '✻', '✳', '╭', '│', '╰']) && !is_hook_notice(t)
    });
    let echoed = ["> ", "❯ "].iter().any(|p| {
        block[0]
            .strip_prefix(p)
            .is_some_and(|rest| !rest.trim().is_empty())
    });
    !replied && echoed
}

/// Footer hints Claude Code shows under its input box (or under a dialog): never output.
const FOOTER_WORDS: [&str; 12] = [
    "? for shortcuts",
    "shift+tab to",
    "auto-accept edits",
    "accept edits on",
    "plan mode on",
    "bypass permissions on",
    "Context left until auto-compact",
    "Enter to select",
    "Esc to cancel",
    "to navigate",
    "ctrl+t to",
    "esc to interrupt",
];

fn is_footer(line: &str) -> bool {
    FOOTER_WORDS.iter().any(|w| line.contains(w))
}

/// A tip Claude Code shows under its spinner ("⎿  Tip: …"): it changes as the spinner does.
fn is_spinner_tip(line: &str) -> bool {
    line.trim_start()
        .strip_prefix('⎿')
        .is_some_and(|rest| rest.trim_start().starts_with("Tip:"))
}

/// The top edge of the input box: the one `read_pane` finds, or else the last rule right
/// above a `❯` line (a box holding several typed lines, which `read_pane` does not read).
fn box_top(lines: &[&str]) -> Option<usize> {
    if let Some((_, top, _)) = input_box(lines) {
        return Some(top);
    }
    (0..lines.len().saturating_sub(1))
        .rev()
        .find(|&i| is_rule(lines[i]) && lines[i + 1].trim_start().starts_with('❯'))
}

/// A conversation line as compared: no indentation, no leading bullet (the tool bullet
/// `⏺` blinks while a tool runs) and no selection marker (`❯`, `>` move with the cursor).
fn comparable(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || c == '\u{a0}')
        .trim_start_matches(['⏺', '●', '❯', '>'])
        .trim_matches(|c: char| c.is_whitespace() || c == '\u{a0}')
}

/// The conversation a capture shows, normalised for comparison: what the watchdog compares
/// between captures to decide that new output appeared (seed AC8.1: a gap is output with no
/// matching turn). Left out, because they change with no output at all: the input box and
/// everything under it (typed text, mode and status lines, "? for shortcuts"), spinner
/// lines with their elapsed time and token counter, the tip under a spinner, footer hints
/// at the bottom of a screen without a box, rules and blank lines, and leading bullets and
/// selection markers. A screen Claude Code did not draw (a shell) is kept whole otherwise.
pub fn conversation_text(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = box_top(&lines).unwrap_or(lines.len());
    let mut kept: Vec<&str> = lines[..end]
        .iter()
        .filter(|l| !is_spinner(l) && !is_spinner_tip(l) && !is_rule(l))
        .map(|l| comparable(l))
        .filter(|l| !l.is_empty())
        .collect();
    while kept.last().is_some_and(|l| is_footer(l)) {
        kept.pop();
    }
    kept.join("\n")
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
    fn a_prompt_just_submitted_with_nothing_under_it_is_busy() {
        let s = format!("⏺ Done.\n\n> fix the flaky test in\n  src/lib.rs\n\n{RULE}\n❯\u{a0}\n{RULE}\n  ? for shortcuts\n");
        assert_eq!(read_pane(&s).state, PaneState::Busy);
        let answered = format!("> fix the flaky test\n\n⏺ Fixed.\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        assert_eq!(read_pane(&answered).state, PaneState::Idle);
        let interrupted = format!("> fix it\n  ⎿  Interrupted · What should Claude do instead?\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        assert_eq!(read_pane(&interrupted).state, PaneState::Idle);
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
    fn an_option_wrapped_in_a_narrow_pane_is_read_whole() {
        // Claude Code wraps a long option under its text; the hook's label is the whole text.
        let s = "☐ Where should the diagram go?\n\n❯ 1. docs/diagrams/, next to the other\n     request-flow pictures\n  2. docs/design/ (the design notes,\n     kept with the text)\n\nEnter to select · Esc to cancel\n";
        assert!(shows_option(
            s,
            1,
            "docs/diagrams/, next to the other request-flow pictures"
        ));
        assert!(shows_option(
            s,
            2,
            "docs/design/ (the design notes, kept with the text)"
        ));
        assert!(
            !shows_option(s, 1, "docs/design/"),
            "another option's label"
        );
        // The terminal's own wrap: the line fills the pane and goes on at its start, even
        // inside a word.
        let s = "Do you want to proceed?\n❯ 1. Yes\n  2. No, and tell Claude what to do diff\nerently (esc)\n";
        assert!(shows_option(
            s,
            2,
            "No, and tell Claude what to do differently (esc)"
        ));
        // A permission dialog's wrapped option is one option.
        let dialog = "│ Bash command            │\n│   rm -rf target         │\n│ Do you want to proceed? │\n│ ❯ 1. Yes                │\n│   2. No, and tell       │\n│      Claude what to do  │\n│      differently (esc)  │\n╰─────────────────────────╯\n";
        let PaneState::Permission(q) = read_pane(dialog).state else {
            panic!("a dialog")
        };
        assert_eq!(
            q["options"],
            json!(["Yes", "No, and tell Claude what to do differently (esc)"])
        );
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

    /// A capture from `core/tests/fixtures/panes/`, in a real screen's shape.
    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!("../../tests/fixtures/panes/", $name)).to_string()
        };
    }

    #[test]
    fn conversation_leaves_out_the_spinner_its_counters_and_the_box() {
        let screen = fixture!("working_spinner_newer.txt");
        assert_eq!(
            conversation_text(&screen),
            "run the tests\nBash(cargo test)"
        );
        // A second later: another glyph, time and token count, and a tip under the spinner.
        let later = screen
            .replace(
                "✢ Testing… (41s · ↑ 1.2k tokens",
                "✶ Testing… (42s · ↓ 1.4k tokens",
            )
            .replace(
                "ctrl+c to interrupt)\n",
                "ctrl+c to interrupt)\n  ⎿  Tip: press esc\n",
            );
        assert_ne!(later, screen);
        assert_eq!(conversation_text(&later), conversation_text(&screen));
        // The spinner gone, the turn still running: no new output either.
        let gone = screen.replace("✢ Testing… (41s · ↑ 1.2k tokens · ctrl+c to interrupt)", "");
        assert_eq!(conversation_text(&gone), conversation_text(&screen));
        // The older spinner shape, twice on screen.
        let older = fixture!("working_spinner.txt");
        assert_eq!(conversation_text(&older), "run the tests\nBash(cargo test)");
    }

    #[test]
    fn conversation_leaves_out_typed_text_and_the_status_lines() {
        let idle = fixture!("idle_prompt.txt");
        let expected =
            "add a retry option to the uploader\nAdded the option in src/retry.rs; the tests pass.";
        assert_eq!(conversation_text(&idle), expected);
        let typed = idle.replace("❯ \n", "❯ fix the retry cou\n");
        assert_ne!(typed, idle);
        assert_eq!(conversation_text(&typed), expected);
        let nbsp = fixture!("idle_prompt_nbsp.txt");
        assert_eq!(conversation_text(&nbsp), expected);
        let mode = idle.replace("? for shortcuts", "⏵⏵ accept edits on (shift+tab to cycle)");
        assert_eq!(conversation_text(&mode), expected);
        // Typed text over several lines: the box is still left out.
        let rule = "─".repeat(40);
        let long = format!("⏺ Done.\n\n{rule}\n❯ first line of a long\n  prompt, second line\n{rule}\n  ? for shortcuts\n");
        assert_eq!(conversation_text(&long), "Done.");
        assert_eq!(
            conversation_text(&fixture!("idle_typed_auto_accept.txt")),
            "Done."
        );
        // The older rounded box with its placeholder.
        let old = conversation_text(&fixture!("idle_old_box.txt"));
        assert!(
            old.ends_with("list the modules\nThere are three: upload, retry and queue."),
            "{old}"
        );
        assert!(!old.contains("Try") && !old.contains("shortcuts"), "{old}");
    }

    #[test]
    fn new_conversation_output_changes_the_conversation() {
        let screen = fixture!("working_spinner_newer.txt");
        let more = screen.replace(
            "  ⎿  Running…\n",
            "  ⎿  Running…\n\n⏺ 12 tests pass; fixing the last one.\n",
        );
        assert_ne!(conversation_text(&more), conversation_text(&screen));
        assert!(conversation_text(&more).ends_with("12 tests pass; fixing the last one."));
        // A blinking tool bullet is the same line.
        let blink = screen.replace("⏺ Bash(cargo test)", "  Bash(cargo test)");
        assert_eq!(conversation_text(&blink), conversation_text(&screen));
    }

    #[test]
    fn screens_without_a_box_keep_their_text_but_not_their_footer() {
        assert_eq!(
            conversation_text("$ ls\nCargo.toml\n$ "),
            "$ ls\nCargo.toml\n$"
        );
        let dialog = fixture!("ask_user_question.txt");
        let text = conversation_text(&dialog);
        assert!(
            text.contains("Which folder should the request flow diagram go in?"),
            "{text}"
        );
        assert!(!text.contains("Enter to select"), "{text}");
        // Moving the selection is no output.
        let moved = dialog
            .replace("❯ 1. docs/diagrams/", "  1. docs/diagrams/")
            .replace("  2. docs/design/", "❯ 2. docs/design/");
        assert_eq!(conversation_text(&moved), text);
        assert_eq!(conversation_text(""), "");
    }
}
