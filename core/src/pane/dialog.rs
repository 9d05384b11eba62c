//! Answering an AskUserQuestion dialog in its pane, whatever its shape: several questions
//! (a wizard, one tab each, then a review), multi-select questions (checkboxes, then a
//! "Submit"/"Next" row) and the free-text row ("Type something."). Pure: the shell captures
//! the pane, asks [`AnswerDriver::next`] what to press, presses it and captures again.
//!
//! The driver steers by what the screen shows, not by a fixed key sequence: it finds the
//! question on screen by its text, the wanted row by its label and the highlighted row by
//! its `❯`, and moves with the arrow keys. Rows that Claude Code adds and versions move
//! (the free-text row, "Chat about this", the multi-select confirm row) are found where they
//! are. A dialog that stops changing is given up on with the screen's reason, never guessed
//! past.

use crate::pane::{numbered_option, options_with_text, squashed, strip_box};
use crate::task::question::option_labels;
use serde_json::Value;
use std::collections::BTreeSet;

/// One question's answer, as `POST /api/agents/AGENT/answer` takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Option `n` (numbered from 1, as the tool lists them).
    Option(usize),
    /// These options of a multi-select question.
    Options(Vec<usize>),
    /// The free-text answer ("Other").
    Other(String),
}

impl Answer {
    /// The answer as a request body names it (the inverse of [`answers_of`]'s items).
    pub fn to_json(&self) -> Value {
        match self {
            Answer::Option(n) => serde_json::json!({"option": n}),
            Answer::Options(ns) => serde_json::json!({"options": ns}),
            Answer::Other(t) => serde_json::json!({"other": t}),
        }
    }
}

/// A key to press in the pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// Arrow down.
    Down,
    /// Arrow up.
    Up,
    /// Enter.
    Enter,
    /// Space (toggles a checkbox).
    Space,
    /// Text typed as it is.
    Text(String),
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Press these keys, then capture the pane and ask again.
    Press(Vec<Key>),
    /// Every answer is given and the dialog is gone.
    Done,
    /// The dialog cannot be answered as asked: why.
    Failed(String),
}

/// The answers of a request body: `{"answers": [{"option": N} | {"options": [N, …]} |
/// {"other": "text"}, …]}`, one per question in order; or why the body is not that.
pub fn answers_of(body: &Value) -> Result<Vec<Answer>, String> {
    const SHAPE: &str =
        "each answer is {\"option\": N}, {\"options\": [N, …]} or {\"other\": \"text\"}";
    let list = body
        .get("answers")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("\"answers\" must be a list, one per question; {SHAPE}"))?;
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            let number = |v: &Value| {
                v.as_u64()
                    .filter(|&n| n >= 1)
                    .map(|n| n as usize)
                    .ok_or_else(|| format!("answer {}: options are numbered from 1", i + 1))
            };
            if let Some(n) = a.get("option") {
                Ok(Answer::Option(number(n)?))
            } else if let Some(ns) = a.get("options").and_then(Value::as_array) {
                Ok(Answer::Options(
                    ns.iter().map(number).collect::<Result<_, _>>()?,
                ))
            } else if let Some(t) = a.get("other").and_then(Value::as_str) {
                Ok(Answer::Other(t.to_string()))
            } else {
                Err(format!("answer {}: {SHAPE}", i + 1))
            }
        })
        .collect()
}

/// Whether an AskUserQuestion input makes a dialog that one number key cannot answer:
/// several questions, or a multi-select one.
pub fn needs_driving(input: &Value) -> bool {
    let qs = asked_of(input);
    qs.len() > 1 || qs.iter().any(|q| q.multi)
}

/// A question of the tool's input, as the driver needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Asked {
    text: String,
    options: Vec<String>,
    multi: bool,
}

/// How many captures in a row may show the same screen after keys before the driver gives
/// up (the pane is slow, or the keys do nothing there).
const STALLS: u32 = 4;

/// Answers one AskUserQuestion, step by step.
#[derive(Clone, Debug)]
pub struct AnswerDriver {
    asked: Vec<Asked>,
    answers: Vec<Answer>,
    /// Options of multi-select questions already toggled, by question.
    toggled: BTreeSet<(usize, usize)>,
    /// Questions whose free text was typed, and sent with Enter.
    typed: BTreeSet<usize>,
    entered: BTreeSet<usize>,
    pressed: bool,
    last_screen: Option<String>,
    stalls: u32,
}

/// The questions of an AskUserQuestion input (`{"questions": [{question, options, multiSelect}]}`).
fn asked_of(input: &Value) -> Vec<Asked> {
    input
        .get("questions")
        .and_then(Value::as_array)
        .map(|qs| {
            qs.iter()
                .map(|q| Asked {
                    text: q
                        .get("question")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    options: option_labels(q),
                    multi: q.get("multiSelect").and_then(Value::as_bool) == Some(true),
                })
                .collect()
        })
        .unwrap_or_default()
}

impl AnswerDriver {
    /// A driver for `answers` (one per question, in order) to the tool input `input`, or why
    /// they do not fit its questions.
    pub fn new(input: &Value, answers: Vec<Answer>) -> Result<AnswerDriver, String> {
        let asked = asked_of(input);
        if asked.is_empty() {
            return Err(
                "the question has no structured questions to answer; send the answer as text"
                    .into(),
            );
        }
        if answers.len() != asked.len() {
            return Err(format!(
                "the dialog asks {} question{}; give one answer for each, in order (got {})",
                asked.len(),
                if asked.len() == 1 { "" } else { "s" },
                answers.len()
            ));
        }
        // One option of a multi-select question is a pick of one.
        let answers: Vec<Answer> = asked
            .iter()
            .zip(answers)
            .map(|(q, a)| match a {
                Answer::Option(n) if q.multi => Answer::Options(vec![n]),
                a => a,
            })
            .collect();
        for (i, (q, a)) in asked.iter().zip(&answers).enumerate() {
            let which = format!("answer {} ({:?})", i + 1, q.text);
            let in_range = |n: usize| {
                if (1..=q.options.len()).contains(&n) {
                    Ok(())
                } else {
                    Err(format!(
                        "{which}: option {n} does not exist; the options are 1 to {}",
                        q.options.len()
                    ))
                }
            };
            match a {
                Answer::Option(n) => in_range(*n)?,
                Answer::Options(ns) => {
                    if !q.multi {
                        return Err(format!(
                            "{which}: the question takes one option, not several (use \"option\")"
                        ));
                    }
                    if ns.is_empty() {
                        return Err(format!("{which}: pick at least one option"));
                    }
                    for n in ns {
                        in_range(*n)?;
                    }
                }
                Answer::Other(text) => {
                    if text.trim().is_empty() {
                        return Err(format!("{which}: the free-text answer is empty"));
                    }
                    if text.contains(['\n', '\r']) {
                        return Err(format!(
                            "{which}: the free-text answer must be one line (Enter ends it)"
                        ));
                    }
                }
            }
        }
        Ok(AnswerDriver {
            asked,
            answers,
            toggled: BTreeSet::new(),
            typed: BTreeSet::new(),
            entered: BTreeSet::new(),
            pressed: false,
            last_screen: None,
            stalls: 0,
        })
    }

    /// What to press on `screen` (the pane's capture now).
    pub fn next(&mut self, screen: &str) -> Step {
        if self.pressed && self.last_screen.as_deref() == Some(screen) {
            self.stalls += 1;
            if self.stalls >= STALLS {
                return Step::Failed(format!(
                    "the dialog did not change after the keys; the pane shows: {}",
                    crate::pane::tail(screen, 6)
                ));
            }
            // Give a slow pane another capture before pressing again.
            return Step::Press(Vec::new());
        }
        self.stalls = 0;
        self.last_screen = Some(screen.to_string());
        let step = self.decide(screen);
        if matches!(&step, Step::Press(keys) if !keys.is_empty()) {
            self.pressed = true;
        }
        step
    }

    fn decide(&mut self, screen: &str) -> Step {
        let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
        let Some(menu) = Menu::read(&lines) else {
            return if self.pressed {
                Step::Done
            } else {
                Step::Failed("no question dialog is on the pane's screen".into())
            };
        };
        // The review page of a wizard: its rows are "Submit answers" and "Cancel".
        if let Some(submit) = menu.row_starting("Submit answers") {
            return Step::Press(menu.go_to(submit, Key::Enter));
        }
        let Some(i) = self.current(&lines, menu.top) else {
            return if self.pressed {
                Step::Done
            } else {
                Step::Failed("the dialog on screen is not this question".into())
            };
        };
        let q = &self.asked[i];
        match self.answers[i].clone() {
            Answer::Option(n) => match menu.row_labelled(&q.options[n - 1], n) {
                Some(row) => Step::Press(menu.go_to(row, Key::Enter)),
                None => Step::Failed(format!(
                    "option {n} ({:?}) is not on screen",
                    q.options[n - 1]
                )),
            },
            Answer::Options(ns) => {
                if let Some(&n) = ns.iter().find(|n| !self.toggled.contains(&(i, **n))) {
                    let Some(row) = menu.row_labelled(&q.options[n - 1], n) else {
                        return Step::Failed(format!(
                            "option {n} ({:?}) is not on screen",
                            q.options[n - 1]
                        ));
                    };
                    self.toggled.insert((i, n));
                    return Step::Press(menu.go_to(row, Key::Space));
                }
                match menu
                    .row_starting("Submit")
                    .or_else(|| menu.row_starting("Next"))
                {
                    Some(row) => Step::Press(menu.go_to(row, Key::Enter)),
                    None => {
                        Step::Failed("the multi-select question shows no Submit or Next row".into())
                    }
                }
            }
            Answer::Other(text) => {
                // Sent in a multi-select question: it is one of the picks; go on.
                if self.entered.contains(&i) {
                    return match menu
                        .row_starting("Submit")
                        .or_else(|| menu.row_starting("Next"))
                    {
                        Some(row) => Step::Press(menu.go_to(row, Key::Enter)),
                        None => Step::Failed(
                            "the multi-select question shows no Submit or Next row".into(),
                        ),
                    };
                }
                // Typed: the row now shows the text, not its label; Enter sends it.
                if self.typed.contains(&i) {
                    self.entered.insert(i);
                    return Step::Press(vec![Key::Enter]);
                }
                let Some(row) = menu.row_starting("Type something") else {
                    return Step::Failed(
                        "the question shows no free-text row (\"Type something\")".into(),
                    );
                };
                if menu.highlighted != Some(row) {
                    return Step::Press(menu.go_to(row, Key::Text(String::new())));
                }
                self.typed.insert(i);
                Step::Press(vec![Key::Text(text)])
            }
        }
    }

    /// The question the dialog shows: the one whose text is on the nearest line above its
    /// rows (a wizard shows one at a time; the conversation above may repeat older ones).
    fn current(&self, lines: &[&str], top: usize) -> Option<usize> {
        lines[..top].iter().rev().take(12).find_map(|l| {
            let l = squashed(strip_box(l));
            self.asked
                .iter()
                .position(|q| !q.text.is_empty() && l.contains(&squashed(&q.text)))
        })
    }
}

/// The numbered rows of the dialog at the bottom of a screen.
struct Menu {
    /// The index of the line of its first row.
    top: usize,
    /// (number, text) of each row.
    rows: Vec<(usize, String)>,
    /// The index in `rows` of the row marked `❯`.
    highlighted: Option<usize>,
}

impl Menu {
    /// The last run of rows numbered from 1 on `lines`, if one has a highlighted row.
    fn read(lines: &[&str]) -> Option<Menu> {
        let top = lines.iter().rposition(|l| row_number(l) == Some(1))?;
        let rows: Vec<(usize, String)> = options_with_text(&lines[top..])
            .into_iter()
            .filter_map(|(n, t)| Some((n?, t)))
            .collect();
        let marked = lines[top..]
            .iter()
            .filter_map(|l| {
                strip_box(l)
                    .starts_with('❯')
                    .then(|| row_number(l))
                    .flatten()
            })
            .next();
        let highlighted = marked.and_then(|m| rows.iter().position(|(n, _)| *n == m));
        highlighted.map(|_| Menu {
            top,
            rows,
            highlighted,
        })
    }

    /// The row showing option `n` with `label` (by label first: added rows may shift numbers).
    fn row_labelled(&self, label: &str, n: usize) -> Option<usize> {
        let want = squashed(label);
        let text = |t: &str| {
            squashed(t.trim_start_matches(['[', ' ', '✔', 'x', 'X', ']', '☐', '☒', '◯', '◉', '●']))
        };
        self.rows
            .iter()
            .position(|(_, t)| text(t).starts_with(&want))
            .or_else(|| self.rows.iter().position(|(m, _)| *m == n))
    }

    /// The first row whose label begins with `prefix` (case-insensitive).
    fn row_starting(&self, prefix: &str) -> Option<usize> {
        let p = prefix.to_lowercase();
        self.rows.iter().position(|(_, t)| {
            t.trim_start_matches(['[', ' ', ']'])
                .to_lowercase()
                .starts_with(&p)
        })
    }

    /// The arrow keys from the highlighted row to `row`, then `then` (an empty text is no key).
    fn go_to(&self, row: usize, then: Key) -> Vec<Key> {
        let from = self.highlighted.unwrap_or(0);
        let mut keys = if row >= from {
            vec![Key::Down; row - from]
        } else {
            vec![Key::Up; from - row]
        };
        if then != Key::Text(String::new()) {
            keys.push(then);
        }
        keys
    }
}

/// The number of the row `line` shows ("❯ 2. Blue" → 2).
fn row_number(line: &str) -> Option<usize> {
    numbered_option(line)?.0
}
