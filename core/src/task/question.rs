//! The question an agent waits on, as the dashboard shows it and `answer` picks from: the
//! pane's permission dialog, else the task's open AskUserQuestion or plain-text question.

use serde_json::{json, Value};

/// How many characters of a text a card shows; the turn routes give the whole text.
pub const PREVIEW_CHARS: usize = 2000;

/// The first [`PREVIEW_CHARS`] characters of `text`, with `…` when it goes on; and whether
/// it was cut.
pub fn preview(text: &str) -> (String, bool) {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((at, _)) => (format!("{}…", &text[..at]), true),
        None => (text.to_string(), false),
    }
}

/// What the agent is asked right now.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenQuestion {
    /// The question's text.
    pub text: String,
    /// Its structure: a permission dialog (`{question, detail, options}`) or the
    /// AskUserQuestion tool's input (`{questions: [{question, options: [{label}]}]}`).
    pub question: Option<Value>,
    /// True for the pane's permission dialog.
    pub permission: bool,
}

impl OpenQuestion {
    /// The question as the API shows it: `{"text", "question"}`, its text a preview.
    pub fn to_json(&self) -> Value {
        json!({"text": preview(&self.text).0, "question": self.question})
    }

    /// The labels to pick from, in the order the terminal numbers them (the first question's,
    /// when the tool asks several). Empty for a plain-text question.
    pub fn options(&self) -> Vec<String> {
        let Some(q) = &self.question else {
            return Vec::new();
        };
        let first = q
            .get("questions")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .unwrap_or(q);
        option_labels(first)
    }

    /// Whether option `n` is still the one the user saw as `expected` (its label, or the
    /// start of it: a push cuts long labels): an answer given from a notification or a page
    /// drawn earlier must not pick an option of a question asked since.
    pub fn still_offers(&self, n: usize, expected: &str) -> Result<(), String> {
        match self.choose(n) {
            Ok(label) if !expected.is_empty() && label.starts_with(expected) => Ok(()),
            Ok(label) => Err(format!(
                "option {n} is now {label:?}, not {expected:?}: the question changed since; nothing was answered"
            )),
            Err(e) => Err(format!("{e}; the question changed since; nothing was answered")),
        }
    }

    /// The label of option `n` (numbered from 1, as on screen), or why it cannot be picked.
    pub fn choose(&self, n: usize) -> Result<String, String> {
        let options = self.options();
        if options.is_empty() {
            return Err(format!(
                "the question {:?} has no options to pick from; send the answer as text",
                self.text
            ));
        }
        if n > 9 {
            return Err(format!(
                "option {n} cannot be picked by its number key (the terminal takes 1 to 9)"
            ));
        }
        match n.checked_sub(1).and_then(|i| options.get(i)) {
            Some(label) => Ok(label.clone()),
            None => Err(format!(
                "option {n} does not exist: the question has options 1 to {}",
                options.len()
            )),
        }
    }
}

/// The labels of a question's `options`, in order: strings (a permission dialog's) or
/// `{"label"}` objects (AskUserQuestion's).
pub fn option_labels(question: &Value) -> Vec<String> {
    question
        .get("options")
        .and_then(Value::as_array)
        .map(|opts| {
            opts.iter()
                .filter_map(|o| o.as_str().or_else(|| o.get("label")?.as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The question an agent waits on: the pane's permission dialog first (it is what blocks
/// the agent right now), else the task's open question.
pub fn open_question(
    permission: Option<&Value>,
    task_question: Option<(&str, Option<&Value>)>,
) -> Option<OpenQuestion> {
    if let Some(p) = permission {
        return Some(OpenQuestion {
            text: p
                .get("question")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            question: Some(p.clone()),
            permission: true,
        });
    }
    task_question.map(|(text, q)| OpenQuestion {
        text: text.to_string(),
        question: q.cloned(),
        permission: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_dialog_outranks_the_task_question() {
        let dialog = json!({"question": "Do you want to proceed?", "options": ["Yes", "No"]});
        let tool = json!({"questions": [{"question": "Where?", "options": [{"label": "a/"}]}]});
        let q = open_question(Some(&dialog), Some(("Where?", Some(&tool)))).unwrap();
        assert!(q.permission);
        assert_eq!(q.text, "Do you want to proceed?");
        assert_eq!(q.options(), ["Yes", "No"]);
        let q = open_question(None, Some(("Where?", Some(&tool)))).unwrap();
        assert!(!q.permission);
        assert_eq!(q.options(), ["a/"]);
        assert_eq!(open_question(None, None), None);
    }

    #[test]
    fn an_answer_names_the_option_it_saw() {
        let dialog = json!({"question": "Do you want to proceed?", "options": ["Yes", "No"]});
        let q = open_question(Some(&dialog), None).unwrap();
        assert!(q.still_offers(1, "Yes").is_ok());
        assert!(q.still_offers(2, "No").is_ok());
        assert!(q
            .still_offers(1, "No")
            .unwrap_err()
            .contains("changed since"));
        assert!(q
            .still_offers(3, "Maybe")
            .unwrap_err()
            .contains("changed since"));
        assert!(q.still_offers(1, "").is_err());
    }

    #[test]
    fn choosing_checks_the_range_and_plain_questions_have_no_options() {
        let tool = json!({"questions": [{"question": "Where?", "options": [{"label": "a/"}, {"label": "b/"}]}]});
        let q = open_question(None, Some(("Where?", Some(&tool)))).unwrap();
        assert_eq!(q.choose(2).unwrap(), "b/");
        assert!(q.choose(0).unwrap_err().contains("options 1 to 2"));
        assert!(q.choose(3).unwrap_err().contains("options 1 to 2"));
        let many: Vec<Value> = (1..=12)
            .map(|i| json!({"label": format!("o{i}")}))
            .collect();
        let tool = json!({"questions": [{"question": "Which?", "options": many}]});
        let q = open_question(None, Some(("Which?", Some(&tool)))).unwrap();
        assert_eq!(q.choose(9).unwrap(), "o9");
        assert!(q.choose(10).unwrap_err().contains("1 to 9"));
        let plain = open_question(None, Some(("Shall I go on?", None))).unwrap();
        assert!(plain.choose(1).unwrap_err().contains("as text"));
    }
}
