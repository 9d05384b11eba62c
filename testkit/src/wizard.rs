//! A model of Claude Code's AskUserQuestion dialog, keys in and screen out, as far as it is
//! known from published measurements of Claude Code 2.x in tmux (a numbered row per option,
//! then "Type something." and "Chat about this"; for multi-select questions checkboxes and a
//! "Next"/"Submit" row; several questions as a wizard with one tab each and a review page;
//! no review for one single-select question). The stand-in agent draws it in its pane and
//! the core's answer driver is tested against it.

use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// A key the dialog reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WizardKey {
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Enter.
    Enter,
    /// Space.
    Space,
    /// Escape: the dialog is cancelled.
    Escape,
    /// A printable character.
    Char(char),
}

#[derive(Clone, Debug)]
struct Q {
    text: String,
    header: String,
    options: Vec<(String, String)>,
    multi: bool,
}

/// The dialog's state.
#[derive(Clone, Debug)]
pub struct Wizard {
    questions: Vec<Q>,
    /// The question shown (== len: the review page).
    at: usize,
    cursor: usize,
    checked: Vec<BTreeSet<usize>>,
    typed: Vec<String>,
    answers: Vec<Option<String>>,
    /// Set once the answers are submitted (`Some`) or the dialog cancelled (`None` inside).
    outcome: Option<Option<Value>>,
}

impl Wizard {
    /// The dialog for an AskUserQuestion input (`{"questions": [...]}`).
    pub fn new(input: &Value) -> Wizard {
        let questions: Vec<Q> = input["questions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|q| Q {
                text: q["question"].as_str().unwrap_or_default().to_string(),
                header: q["header"].as_str().unwrap_or("Question").to_string(),
                options: q["options"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|o| {
                        (
                            o["label"].as_str().unwrap_or_default().to_string(),
                            o["description"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect(),
                multi: q["multiSelect"].as_bool() == Some(true),
            })
            .collect();
        let n = questions.len();
        Wizard {
            questions,
            at: 0,
            cursor: 0,
            checked: vec![BTreeSet::new(); n],
            typed: vec![String::new(); n],
            answers: vec![None; n],
            outcome: None,
        }
    }

    /// Whether the dialog has a review page: several questions or a multi-select one.
    fn reviews(&self) -> bool {
        self.questions.len() > 1 || self.questions.iter().any(|q| q.multi)
    }

    /// The rows of the page shown: (label, kind).
    fn rows(&self) -> Vec<(String, Row)> {
        let Some(q) = self.questions.get(self.at) else {
            return vec![
                ("Submit answers".into(), Row::Submit),
                ("Cancel".into(), Row::Cancel),
            ];
        };
        let mut rows: Vec<(String, Row)> = q
            .options
            .iter()
            .enumerate()
            .map(|(i, (label, _))| {
                let label = if q.multi {
                    let mark = if self.checked[self.at].contains(&i) {
                        "[✔]"
                    } else {
                        "[ ]"
                    };
                    format!("{mark} {label}")
                } else {
                    label.clone()
                };
                (label, Row::Option(i))
            })
            .collect();
        let typed = &self.typed[self.at];
        rows.push((
            if typed.is_empty() {
                "Type something.".into()
            } else {
                typed.clone()
            },
            Row::Other,
        ));
        if q.multi {
            let last = self.at + 1 == self.questions.len();
            rows.push((if last { "Submit" } else { "Next" }.into(), Row::Next));
        }
        rows.push(("Chat about this".into(), Row::Chat));
        rows
    }

    /// Reads one key.
    pub fn press(&mut self, key: WizardKey) {
        if self.outcome.is_some() {
            return;
        }
        let rows = self.rows();
        let row = rows[self.cursor.min(rows.len() - 1)].1;
        match key {
            WizardKey::Escape => self.outcome = Some(None),
            WizardKey::Up => self.cursor = self.cursor.saturating_sub(1),
            WizardKey::Down => self.cursor = (self.cursor + 1).min(rows.len() - 1),
            WizardKey::Char(c) if row == Row::Other => self.typed[self.at].push(c),
            WizardKey::Char(c) => {
                // A number picks its row, as Enter on it would.
                if let Some(n) = c
                    .to_digit(10)
                    .filter(|n| (1..=rows.len() as u32).contains(n))
                {
                    self.cursor = n as usize - 1;
                    self.press(WizardKey::Enter);
                }
            }
            // In the free-text row a space is text.
            WizardKey::Space if row == Row::Other => self.typed[self.at].push(' '),
            WizardKey::Space => {
                if let Row::Option(i) = row {
                    if self.questions[self.at].multi {
                        self.toggle(i);
                    }
                }
            }
            WizardKey::Enter => match row {
                Row::Option(i) if self.questions[self.at].multi => self.toggle(i),
                Row::Option(i) => {
                    self.answers[self.at] = Some(self.questions[self.at].options[i].0.clone());
                    self.advance();
                }
                Row::Other if !self.typed[self.at].is_empty() => {
                    let typed = self.typed[self.at].clone();
                    self.answers[self.at] = Some(match self.answers[self.at].take() {
                        Some(picked) if self.questions[self.at].multi => {
                            format!("{picked}, {typed}")
                        }
                        _ => typed,
                    });
                    if !self.questions[self.at].multi {
                        self.advance();
                    }
                }
                Row::Other | Row::Chat => {}
                Row::Next => self.advance(),
                Row::Submit => self.submit(),
                Row::Cancel => self.outcome = Some(None),
            },
        }
    }

    fn toggle(&mut self, i: usize) {
        let set = &mut self.checked[self.at];
        if !set.remove(&i) {
            set.insert(i);
        }
        let q = &self.questions[self.at];
        let labels: Vec<&str> = set.iter().map(|&i| q.options[i].0.as_str()).collect();
        self.answers[self.at] = (!labels.is_empty()).then(|| labels.join(", "));
    }

    fn advance(&mut self) {
        self.at += 1;
        self.cursor = 0;
        if self.at == self.questions.len() && !self.reviews() {
            self.submit();
        }
    }

    fn submit(&mut self) {
        let mut answers = Map::new();
        for (q, a) in self.questions.iter().zip(&self.answers) {
            answers.insert(q.text.clone(), json!(a.clone().unwrap_or_default()));
        }
        self.outcome = Some(Some(Value::Object(answers)));
    }

    /// The answers once submitted (`{question: answer}`, several options joined by ", "),
    /// `Some(None)` when cancelled, `None` while the dialog is open.
    pub fn outcome(&self) -> Option<Option<&Value>> {
        self.outcome.as_ref().map(Option::as_ref)
    }

    /// The dialog's lines, as the pane shows them.
    pub fn screen(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.reviews() {
            let mut tabs = String::from("←  ");
            for (i, q) in self.questions.iter().enumerate() {
                let mark = if self.answers[i].is_some() {
                    "☒"
                } else {
                    "☐"
                };
                tabs.push_str(&format!("{mark} {}  ", q.header));
            }
            tabs.push_str("✔ Submit  →");
            out.push(tabs);
            out.push(String::new());
        }
        match self.questions.get(self.at) {
            Some(q) => {
                out.push(q.text.clone());
                out.push(String::new());
                for (i, (label, row)) in self.rows().into_iter().enumerate() {
                    let mark = if i == self.cursor { "❯" } else { " " };
                    out.push(format!("{mark} {}. {label}", i + 1));
                    if let Row::Option(o) = row {
                        let description = &q.options[o].1;
                        if !description.is_empty() {
                            out.push(format!("     {description}"));
                        }
                    }
                }
                out.push(String::new());
                out.push("Enter to select · ↑/↓ to navigate · Esc to cancel".into());
            }
            None => {
                out.push("Review your answers".into());
                out.push(String::new());
                for (q, a) in self.questions.iter().zip(&self.answers) {
                    out.push(format!(" ● {}", q.text));
                    out.push(format!("   → {}", a.clone().unwrap_or_default()));
                }
                out.push(String::new());
                out.push("Ready to submit your answers?".into());
                out.push(String::new());
                for (i, (label, _)) in self.rows().into_iter().enumerate() {
                    let mark = if i == self.cursor { "❯" } else { " " };
                    out.push(format!("{mark} {}. {label}", i + 1));
                }
            }
        }
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Row {
    Option(usize),
    Other,
    Next,
    Chat,
    Submit,
    Cancel,
}
