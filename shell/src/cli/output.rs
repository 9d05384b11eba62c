//! What the commands print: never a terminal's control sequence from text they did not write,
//! and never a panic when the reader of their output goes away.
//!
//! Project names, agents' words, search snippets and a repository's `.specflow` files all
//! reach the terminal through these commands. Any of them can hold escape sequences: OSC 52
//! writes the clipboard, others set the window title, move the cursor or overwrite a line
//! (so a shown command is not the one that runs). [`terminal_safe`] turns every control
//! character (C0 but newline and tab, DEL, C1) and every bidirectional override into a space.
//! [`outln!`] prints a line through it and ends the process quietly (exit 0) when stdout is
//! a closed pipe (`headspace hooks print | head`).

use std::borrow::Cow;
use std::io::Write;

/// Whether `c` must not reach a terminal as is.
pub(crate) fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every control character (but newline and tab) and bidirectional override
/// replaced by a space.
pub(crate) fn terminal_safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| if unsafe_char(c) { ' ' } else { c })
            .collect(),
    )
}

/// Writes `line` and a newline to stdout as is (the caller made every piece safe); exits
/// quietly when stdout is a closed pipe.
pub(crate) fn write_line(line: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("headspace: cannot write the output: {e}");
        std::process::exit(2);
    }
}

/// `println!` for text that may hold what others wrote: made [`terminal_safe`], and quiet on
/// a closed pipe.
macro_rules! outln {
    () => { $crate::cli::output::write_line("") };
    ($($arg:tt)*) => {
        $crate::cli::output::write_line(&$crate::cli::output::terminal_safe(&format!($($arg)*)))
    };
}
pub(crate) use outln;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_become_spaces_and_lines_stay_lines() {
        let osc52 = "title\x1b]52;c;cm0gLXJmIH4=\x07 done";
        assert_eq!(terminal_safe(osc52), "title ]52;c;cm0gLXJmIH4=  done");
        assert_eq!(terminal_safe("a\rb\u{9b}2Jc"), "a b 2Jc");
        assert_eq!(terminal_safe("one\ntwo\tthree"), "one\ntwo\tthree");
        assert_eq!(terminal_safe("ok \u{202E}txt.exe"), "ok  txt.exe");
        assert!(matches!(terminal_safe("plain"), Cow::Borrowed(_)));
    }
}
