//! The answer driver against a model of Claude Code's AskUserQuestion dialog
//! (`headspace_testkit::wizard`): any number of questions, single and multi-select, options
//! and free text, answered by reading the screen and pressing keys. No tmux, no clock.

use headspace_core::pane::dialog::{Answer, AnswerDriver, Key, Step};
use headspace_testkit::wizard::{Wizard, WizardKey};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Drives `wizard` with `driver` until it is done; the keys pressed, or why it failed.
fn drive(wizard: &mut Wizard, driver: &mut AnswerDriver, above: &str) -> Result<usize, String> {
    let mut pressed = 0;
    for _ in 0..300 {
        let screen = if wizard.outcome().is_some() {
            format!("{above}\n⏺ User answered Claude's questions\n\n❯ \n")
        } else {
            format!("{above}\n{}\n", wizard.screen().join("\n"))
        };
        match driver.next(&screen) {
            Step::Done => return Ok(pressed),
            Step::Failed(why) => return Err(why),
            Step::Press(keys) => {
                for k in keys {
                    pressed += 1;
                    match k {
                        Key::Up => wizard.press(WizardKey::Up),
                        Key::Down => wizard.press(WizardKey::Down),
                        Key::Enter => wizard.press(WizardKey::Enter),
                        Key::Space => wizard.press(WizardKey::Space),
                        Key::Text(t) => t.chars().for_each(|c| wizard.press(WizardKey::Char(c))),
                    }
                }
            }
        }
    }
    Err("the driver never finished".into())
}

fn question(text: &str, labels: &[&str], multi: bool) -> Value {
    json!({"question": text, "header": text.split(' ').next().unwrap(), "multiSelect": multi,
           "options": labels.iter().map(|l| json!({"label": l, "description": format!("about {l}")})).collect::<Vec<_>>()})
}

#[test]
fn a_wizard_of_three_questions_is_answered_with_an_option_several_and_free_text() {
    let input = json!({"questions": [
        question("Which database?", &["PostgreSQL", "SQLite", "MySQL"], false),
        question("Which features?", &["Search", "Export", "Login", "Billing"], true),
        question("Which name?", &["shop", "store"], false),
    ]});
    let mut wizard = Wizard::new(&input);
    let mut driver = AnswerDriver::new(
        &input,
        vec![
            Answer::Option(2),
            Answer::Options(vec![4, 1]),
            Answer::Other("market, the old name".into()),
        ],
    )
    .unwrap();
    // The conversation above repeats an older question's text: the dialog's is the one used.
    drive(
        &mut wizard,
        &mut driver,
        "⏺ Which name? was asked before\n  1. An older list",
    )
    .unwrap();
    assert_eq!(
        wizard.outcome(),
        Some(Some(
            &json!({"Which database?": "SQLite", "Which features?": "Search, Billing",
                          "Which name?": "market, the old name"})
        ))
    );
}

#[test]
fn answers_that_do_not_fit_the_questions_are_refused_with_the_reason() {
    let input = json!({"questions": [
        question("Which database?", &["PostgreSQL", "SQLite"], false),
        question("Which features?", &["Search", "Export"], true),
    ]});
    let err = |answers| AnswerDriver::new(&input, answers).unwrap_err();
    assert!(err(vec![Answer::Option(1)]).contains("asks 2 questions"));
    assert!(err(vec![Answer::Option(3), Answer::Options(vec![1])]).contains("options are 1 to 2"));
    assert!(
        err(vec![Answer::Options(vec![1]), Answer::Options(vec![1])]).contains("takes one option")
    );
    assert!(err(vec![Answer::Option(1), Answer::Options(vec![])]).contains("at least one"));
    assert!(err(vec![Answer::Other(" ".into()), Answer::Option(1)]).contains("empty"));
    assert!(err(vec![Answer::Other("a\nb".into()), Answer::Option(1)]).contains("one line"));
    assert!(AnswerDriver::new(&json!({}), vec![])
        .unwrap_err()
        .contains("as text"));
}

#[test]
fn a_dialog_that_does_not_react_is_given_up_on_and_none_on_screen_is_an_error() {
    let input =
        json!({"questions": [question("Which database?", &["PostgreSQL", "SQLite"], false)]});
    let mut driver = AnswerDriver::new(&input, vec![Answer::Option(2)]).unwrap();
    let frozen = Wizard::new(&input).screen().join("\n");
    let mut failed = None;
    for _ in 0..10 {
        if let Step::Failed(why) = driver.next(&frozen) {
            failed = Some(why);
            break;
        }
    }
    assert!(failed.expect("gives up").contains("did not change"));
    let mut driver = AnswerDriver::new(&input, vec![Answer::Option(2)]).unwrap();
    assert!(matches!(driver.next("❯ \n"), Step::Failed(w) if w.contains("no question dialog")));
}

fn answer_for(options: usize, multi: bool) -> impl Strategy<Value = Answer> {
    let one = (1..=options).prop_map(Answer::Option);
    let other = "[a-z]{1,6}( [a-z]{1,6})?".prop_map(Answer::Other);
    if multi {
        let several = proptest::sample::subsequence((1..=options).collect::<Vec<_>>(), 1..=options)
            .prop_shuffle()
            .prop_map(Answer::Options);
        prop_oneof![several, other].boxed()
    } else {
        prop_oneof![one, other].boxed()
    }
}

fn case() -> impl Strategy<Value = (Value, Vec<Answer>)> {
    proptest::collection::vec((2usize..=5, any::<bool>()), 1..=4).prop_flat_map(|shape| {
        let questions: Vec<Value> = shape
            .iter()
            .enumerate()
            .map(|(i, &(n, multi))| {
                let labels: Vec<String> = (0..n).map(|o| format!("q{i} option {o}")).collect();
                let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
                question(&format!("Question number {i}?"), &refs, multi)
            })
            .collect();
        let answers: Vec<_> = shape
            .iter()
            .map(|&(n, multi)| answer_for(n, multi))
            .collect();
        (Just(json!({"questions": questions})), answers)
    })
}

proptest! {
    #[test]
    fn every_shape_of_dialog_gets_exactly_the_answers_given((input, answers) in case()) {
        let mut wizard = Wizard::new(&input);
        let mut driver = AnswerDriver::new(&input, answers.clone()).unwrap();
        drive(&mut wizard, &mut driver, "").map_err(TestCaseError::fail)?;
        let mut want = serde_json::Map::new();
        for (q, a) in input["questions"].as_array().unwrap().iter().zip(&answers) {
            let label = |n: usize| q["options"][n - 1]["label"].as_str().unwrap().to_string();
            let text = match a {
                Answer::Option(n) => label(*n),
                Answer::Options(ns) => {
                    let mut ns = ns.clone();
                    ns.sort();
                    ns.into_iter().map(label).collect::<Vec<_>>().join(", ")
                }
                Answer::Other(t) => t.clone(),
            };
            want.insert(q["question"].as_str().unwrap().to_string(), json!(text));
        }
        prop_assert_eq!(wizard.outcome(), Some(Some(&Value::Object(want))));
    }
}

#[test]
fn a_request_body_reads_as_answers_or_says_what_is_wrong() {
    use headspace_core::pane::dialog::{answers_of, needs_driving};
    assert_eq!(
        answers_of(&json!({"answers": [{"option": 2}, {"options": [1, 3]}, {"other": "blue"}]})),
        Ok(vec![
            Answer::Option(2),
            Answer::Options(vec![1, 3]),
            Answer::Other("blue".into())
        ])
    );
    assert!(answers_of(&json!({"option": 2}))
        .unwrap_err()
        .contains("must be a list"));
    assert!(answers_of(&json!({"answers": [{"option": 0}]}))
        .unwrap_err()
        .contains("from 1"));
    assert!(answers_of(&json!({"answers": [{"pick": 1}]}))
        .unwrap_err()
        .contains("answer 1"));
    let one = json!({"questions": [question("Which?", &["a", "b"], false)]});
    let multi = json!({"questions": [question("Which?", &["a", "b"], true)]});
    let two = json!({"questions": [question("A?", &["a"], false), question("B?", &["b"], false)]});
    assert!(!needs_driving(&one));
    assert!(needs_driving(&multi));
    assert!(needs_driving(&two));
}
