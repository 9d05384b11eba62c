//! An AskUserQuestion of any shape (several questions, multi-select, free text), played as
//! Claude Code's dialog in the pane: the terminal in raw mode, arrow keys, Space, Enter and
//! typed text read key by key into [`Wizard`], which draws the screen.

use super::Agent;
use headspace_testkit::wizard::{Wizard, WizardKey};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::io::Read;
use std::process::{Command, Stdio};

/// The terminal in raw mode (no line editing, no echo) while it lives.
struct RawKeys {
    pending: VecDeque<u8>,
}

impl RawKeys {
    fn start() -> RawKeys {
        stty(&["-icanon", "-echo", "min", "1"]);
        RawKeys {
            pending: VecDeque::new(),
        }
    }

    /// The next key, or `None` when the input is closed.
    fn next_key(&mut self) -> Option<WizardKey> {
        loop {
            if let Some(key) = self.decode() {
                return Some(key);
            }
            let mut buf = [0u8; 64];
            match std::io::stdin().lock().read(&mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.pending.extend(&buf[..n]),
            }
        }
    }

    /// A key from the bytes read so far: an escape sequence whole, a UTF-8 character whole.
    fn decode(&mut self) -> Option<WizardKey> {
        let first = *self.pending.front()?;
        let key = match first {
            0x1b => match (self.pending.get(1), self.pending.get(2)) {
                (Some(b'['), Some(b'A')) => (3, WizardKey::Up),
                (Some(b'['), Some(b'B')) => (3, WizardKey::Down),
                (Some(b'['), Some(_)) => (3, WizardKey::Char('\u{fffd}')),
                (Some(b'['), None) => return None,
                _ => (1, WizardKey::Escape),
            },
            b'\r' | b'\n' => (1, WizardKey::Enter),
            b' ' => (1, WizardKey::Space),
            _ => {
                let len = match first {
                    0..=0x7f => 1,
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    _ => 4,
                };
                if self.pending.len() < len {
                    return None;
                }
                let bytes: Vec<u8> = self.pending.iter().take(len).copied().collect();
                let c = String::from_utf8_lossy(&bytes).chars().next()?;
                (len, WizardKey::Char(c))
            }
        };
        self.pending.drain(..key.0);
        Some(key.1)
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        stty(&["icanon", "echo"]);
    }
}

fn stty(args: &[&str]) {
    let _ = Command::new("stty")
        .args(args)
        .stdin(Stdio::inherit())
        .status();
}

impl Agent {
    /// Asks `input` (`{"questions": [...]}`) and waits for the dialog's answers; in `--auto`
    /// mode (unless told to wait) each question takes its first option.
    pub(super) fn ask_wizard(&mut self, input: &Value) {
        self.draw_busy("Thinking");
        self.think();
        self.stamp();
        let (line, id) = self.writer.ask(input);
        self.hook(
            "PreToolUse",
            json!({"tool_name": "AskUserQuestion", "tool_use_id": id, "tool_input": input}),
        );
        self.append(&line.json);
        let mut wizard = Wizard::new(input);
        let answers = if self.args.auto && !self.args.wait_on_questions {
            self.think();
            let mut first = Map::new();
            for q in input["questions"].as_array().into_iter().flatten() {
                first.insert(
                    q["question"].as_str().unwrap_or_default().into(),
                    q["options"][0]["label"].clone(),
                );
            }
            Value::Object(first)
        } else {
            let mut keys = RawKeys::start();
            loop {
                if let Some(outcome) = wizard.outcome() {
                    break outcome.cloned().unwrap_or_else(|| json!({}));
                }
                self.draw(&wizard.screen());
                match keys.next_key() {
                    Some(k) => wizard.press(k),
                    None => break json!({}),
                }
            }
        };
        self.stamp();
        let a = self.writer.answered(&id, &answers);
        self.append(&a.json);
        self.hook(
            "PostToolUse",
            json!({"tool_name": "AskUserQuestion", "tool_use_id": id}),
        );
        self.history
            .push("⏺ User answered Claude's questions:".into());
        for (q, a) in answers.as_object().into_iter().flatten() {
            self.history
                .push(format!("  ⎿  · {q} → {}", a.as_str().unwrap_or_default()));
        }
    }
}
