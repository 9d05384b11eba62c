//! Gemini CLI's screen (its TUI, 0.61), read into the common [`PaneReading`].
//!
//! What it draws, bottom up: a footer (`workspace (/directory) … sandbox … /model` and the
//! folder, sandbox and model), the composer line (` > ` and the typed text, or the placeholder
//! `Type your message or @path/to/file`; ` * ` in YOLO mode), a hint (` Shift+Tab to accept
//! edits` or ` YOLO Ctrl+Y`), a `────` rule, and above it the conversation (prompts as
//! ` > text`, replies as `✦ …`). While it works a spinner line sits right above the rule:
//! ` ⠙ Thinking... (esc to cancel, 3s)` or ` ⠼ Executing Hooks: … (esc to cancel, 1s)`; it
//! stays while a reply streams. A stale `Executing Hook: …` without `esc to cancel` may
//! linger after the turn: that is idle. An approval replaces the composer with a box: its
//! tool (`? Shell  touch x`), `Allow execution of [Shell]?` and numbered options.
//! The trust dialog asks `Do you trust the files in this folder?`.

use super::{is_rule, strip_box, PaneReading, PaneState};
use serde_json::json;

/// The composer's placeholder (grey, which a plain capture loses).
const PLACEHOLDER: &str = "Type your message or @path/to/file";

/// Reads a capture of Gemini CLI's screen.
pub fn read_pane(text: &str) -> PaneReading {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    if let Some(dialog) = dialog(&lines) {
        return PaneReading {
            state: dialog,
            input: None,
        };
    }
    let Some(rule) = lines.iter().rposition(|l| is_rule(l)) else {
        return unknown(&lines);
    };
    let Some(composer) = lines[rule + 1..]
        .iter()
        .find_map(|l| l.strip_prefix(" > ").or_else(|| l.strip_prefix(" * ")))
    else {
        return unknown(&lines);
    };
    let typed = composer.trim();
    let input = (!typed.is_empty() && typed != PLACEHOLDER).then(|| typed.to_string());
    // The spinner sits right above the rule (the `? for shortcuts` hint may share its line).
    let spinning = lines[..rule]
        .iter()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .any(|l| l.contains("(esc to cancel") || starts_with_spinner(l));
    PaneReading {
        state: if spinning {
            PaneState::Busy
        } else {
            PaneState::Idle
        },
        input,
    }
}

/// A line led by a braille spinner glyph (`⠙ Thinking...`): a long list of running hooks
/// can push its `(esc to cancel` past the pane's edge.
fn starts_with_spinner(line: &str) -> bool {
    let mut chars = line.trim_start().chars();
    matches!(chars.next(), Some('\u{2801}'..='\u{28ff}')) && chars.next() == Some(' ')
}

/// Starting (its banner, no composer yet) or something else.
fn unknown(lines: &[&str]) -> PaneReading {
    let starting = lines.iter().any(|l| l.contains("Gemini CLI v"));
    PaneReading {
        state: if starting {
            PaneState::Starting
        } else {
            PaneState::Unknown
        },
        input: None,
    }
}

/// A line inside one or more boxes, without their borders.
fn unboxed(line: &str) -> &str {
    let mut t = strip_box(line);
    loop {
        let inner = strip_box(t);
        if inner == t {
            return t;
        }
        t = inner;
    }
}

/// A dialog option line (`● 1. Allow once`, `  2. …`): its text.
fn option(line: &str) -> Option<String> {
    let t = unboxed(line).trim_start_matches('●').trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    let rest = t[digits..].strip_prefix(". ")?;
    (digits > 0).then(|| rest.trim().to_string())
}

/// The approval or trust dialog at the bottom of the screen: the last question line with
/// numbered options under it and no composer after them.
fn dialog(lines: &[&str]) -> Option<PaneState> {
    let q = lines.iter().rposition(|l| {
        let t = unboxed(l);
        t.ends_with('?') && !t.starts_with('>') && !t.starts_with("? ")
    })?;
    let options: Vec<String> = lines[q + 1..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with('╰'))
        .filter_map(|l| option(l))
        .collect();
    let composer_after = lines[q + 1..]
        .iter()
        .any(|l| l.starts_with(" > ") || l.starts_with(" * "));
    if options.is_empty() || composer_after {
        return None;
    }
    let question = unboxed(lines[q]);
    if question.contains("trust the files in this folder") {
        return Some(PaneState::Trust);
    }
    // The box's first lines: the tool and what it would run.
    let top = lines[..q].iter().rposition(|l| {
        let t = l.trim_start();
        t.starts_with('╭') && !l.trim_start_matches([' ', '│']).is_empty()
    });
    let detail: Vec<String> = top
        .map(|t| &lines[t..q])
        .unwrap_or(&[])
        .iter()
        .map(|l| unboxed(l).trim_start_matches("? ").trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('╭') && !l.starts_with('╰'))
        .collect();
    Some(PaneState::Permission(json!({
        "question": question, "detail": detail, "options": options
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = "────────────────────────────────────────";
    const FOOTER: &str = " workspace (/directory)          sandbox          /model\n /home/u/proj                    no sandbox       gemini-2.5-pro";

    fn screen(body: &str, composer: &str) -> String {
        format!(" ▝▜▄     Gemini CLI v0.61.0\n\n{body}\n{RULE}\n Shift+Tab to accept edits\n {composer}\n{FOOTER}\n")
    }

    #[test]
    fn idle_busy_and_lingering_hook_screens() {
        let idle = read_pane(&screen(
            " > hello\n✦ Hello!\n                       ? for shortcuts",
            ">   Type your message or @path/to/file",
        ));
        assert_eq!((idle.state, idle.input), (PaneState::Idle, None));
        let busy = read_pane(&screen(
            " > slow please\n✦ This is a slow\n ⠙ Thinking... (esc to cancel, 3s)            ? for shortcuts",
            ">   Type your message or @path/to/file",
        ));
        assert_eq!(busy.state, PaneState::Busy);
        let hooks = read_pane(&screen(
            " > hi\n ⠼ Executing Hooks: hs-BeforeAgent (esc to cancel, 1s)",
            ">   Type your message or @path/to/file",
        ));
        assert_eq!(hooks.state, PaneState::Busy);
        let cut = read_pane(&screen(
            " > hi\n ⠴ Executing Hooks: hs-BeforeAgent, hs-BeforeTool, hs-AfterTool, hs-Notification,",
            ">   Type your message or @path/to/file",
        ));
        assert_eq!(cut.state, PaneState::Busy, "its (esc to cancel cut off");
        let lingering = read_pane(&screen(
            " > hi\n✦ Done.\n  Executing Hook: hs-AfterAgent",
            ">   Type your message or @path/to/file",
        ));
        assert_eq!(lingering.state, PaneState::Idle);
        let typed = read_pane(&screen("", "> fix the build"));
        assert_eq!(typed.input.as_deref(), Some("fix the build"));
        let yolo = read_pane(&screen("", "*   Type your message or @path/to/file"));
        assert_eq!(yolo.state, PaneState::Idle);
        assert_eq!(
            read_pane(" ▝▜▄     Gemini CLI v0.61.0\n").state,
            PaneState::Starting
        );
        assert_eq!(read_pane("bash-5.2# ").state, PaneState::Unknown);
    }

    #[test]
    fn an_approval_is_a_permission_with_its_tool_and_options_and_trust_is_trust() {
        let dialog = " > please create a file\n✦ I'll create a file.\n╭──────────────────────────────╮\n│ ? Shell  touch approved-marker.txt && echo created │\n│ ╭──────────────────────────╮ │\n│ │ touch approved-marker.txt && echo created │ │\n│ ╰──────────────────────────╯ │\n│ Allow execution of [Shell]? │\n│                              │\n│ ● 1. Allow once              │\n│   2. Allow for this session  │\n│   3. No, suggest changes (esc) │\n╰──────────────────────────────╯\n";
        let PaneState::Permission(q) = read_pane(dialog).state else {
            panic!("not a permission: {:?}", read_pane(dialog));
        };
        assert_eq!(q["question"], "Allow execution of [Shell]?");
        assert_eq!(q["options"][0], "Allow once");
        assert_eq!(q["options"].as_array().unwrap().len(), 3);
        assert!(
            q["detail"]
                .to_string()
                .contains("touch approved-marker.txt"),
            "{q}"
        );
        let trust = " ╭────────╮\n │ Do you trust the files in this folder? │\n │ ● 1. Trust folder (proj) │\n │   2. Trust parent folder (run3) │\n │   3. Don't trust │\n ╰────────╯\n";
        assert_eq!(read_pane(trust).state, PaneState::Trust);
        // A question the agent wrote in its reply is not a dialog.
        let asked = screen(
            "✦ Shall I go on?\n1. yes\n2. no",
            ">   Type your message or @path/to/file",
        );
        assert_eq!(read_pane(&asked).state, PaneState::Idle);
    }
}
