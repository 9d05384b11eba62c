//! Answering the question an agent waits on, in its pane: one number key for a permission
//! dialog or a single single-select question; for a wizard (several questions, multi-select,
//! free text) the core's [`AnswerDriver`] reads each capture and says which keys to press.

use super::agents::{agent_view, no_pane};
use super::body::Body;
use super::remote_panes::{fail, forward, respond, Outcome};
use super::App;
use headspace_core::cluster::pane_commands::PaneCommandKind;
use headspace_core::pane::dialog::{needs_driving, Answer, AnswerDriver, Step};
use headspace_core::view::AgentView;
use hyper::{Response, StatusCode};
use serde_json::json;
use std::time::Duration;

/// How long the pane is left to redraw after keys before it is captured again.
const REDRAW: Duration = Duration::from_millis(150);
/// How long a whole wizard may take before the answer gives up (the keys pressed stay).
const DRIVE_LIMIT: Duration = Duration::from_secs(20);
/// Lines captured: a dialog with its descriptions fits.
const CAPTURE_LINES: u32 = 80;

/// Picks option `n` of the question the agent waits on. The question clears when the agent
/// goes on (its answer line or PostToolUse hook, or the dialog leaving the pane). A dialog
/// of one multi-select question takes `n` as its only pick; one of several questions needs
/// [`answer_questions`].
/// `expect`: the label the user saw for option `n` (a notification's button): the answer is
/// refused (409) when the question now offers another.
pub(super) async fn answer(
    app: &App,
    reference: &str,
    n: usize,
    expect: Option<&str>,
) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let kind = PaneCommandKind::Answer;
    let body = json!({"option": n, "expect": expect});
    if let Some(r) = forward(app, &view, reference, kind, body).await {
        return r;
    }
    respond(answer_here(app, &view, reference, n, expect).await)
}

/// Picks option `n` in a pane of this machine: the answer route's work, also run for a
/// command forwarded from another server.
pub(super) async fn answer_here(
    app: &App,
    view: &AgentView,
    reference: &str,
    n: usize,
    expect: Option<&str>,
) -> Outcome {
    let Some(question) = view.open_question() else {
        return not_waiting(reference);
    };
    if let Some(Err(e)) = expect.map(|e| question.still_offers(n, e)) {
        return fail(StatusCode::CONFLICT, e);
    }
    if let Some(input) = question
        .question
        .as_ref()
        .filter(|q| !question.permission && needs_driving(q))
    {
        let several = input["questions"].as_array().map_or(0, Vec::len);
        if several > 1 {
            return fail(
                StatusCode::BAD_REQUEST,
                format!("the question asks {several} questions; send {{\"answers\": [...]}}, one answer for each"),
            );
        }
        return answer_questions_here(app, view, reference, vec![Answer::Options(vec![n])]).await;
    }
    let label = match question.choose(n) {
        Ok(l) => l,
        Err(e) => return fail(StatusCode::BAD_REQUEST, e),
    };
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return no_pane(reference);
    };
    match app.panes.choose(&pane, n, &label).await {
        Ok(s) => (
            StatusCode::OK,
            json!({"status": "answered", "pane": pane, "option": n, "label": label, "question": question.text, "verified": s.verified, "retried_enter": s.retried_enter}),
        ),
        Err(e) => fail(
            StatusCode::BAD_GATEWAY,
            format!("could not answer in pane {pane}: {e}"),
        ),
    }
}

/// Answers every question of the AskUserQuestion the agent waits on (`answers` in order),
/// driving its dialog in the pane until it is gone.
pub(super) async fn answer_questions(
    app: &App,
    reference: &str,
    answers: Vec<Answer>,
) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let kind = PaneCommandKind::AnswerQuestions;
    let body = json!({"answers": answers.iter().map(Answer::to_json).collect::<Vec<_>>()});
    if let Some(r) = forward(app, &view, reference, kind, body).await {
        return r;
    }
    respond(answer_questions_here(app, &view, reference, answers).await)
}

/// Drives a question wizard in a pane of this machine: the route's work, also run for a
/// command forwarded from another server.
pub(super) async fn answer_questions_here(
    app: &App,
    view: &AgentView,
    reference: &str,
    answers: Vec<Answer>,
) -> Outcome {
    let Some(question) = view.open_question() else {
        return not_waiting(reference);
    };
    let input = match (&question.question, question.permission) {
        (Some(input), false) => input.clone(),
        _ => {
            return fail(
                StatusCode::BAD_REQUEST,
                "the agent waits on a permission dialog; answer it with {\"option\": N}",
            )
        }
    };
    let mut driver = match AnswerDriver::new(&input, answers.clone()) {
        Ok(d) => d,
        Err(e) => return fail(StatusCode::BAD_REQUEST, e),
    };
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return no_pane(reference);
    };
    let started = crate::clock::instant();
    let mut keys = 0;
    loop {
        if crate::clock::since(started) > DRIVE_LIMIT {
            return fail(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the dialog in pane {pane} was not answered within {}s ({keys} keys pressed)",
                    DRIVE_LIMIT.as_secs()
                ),
            );
        }
        let Some(screen) = app.panes.capture(&pane, CAPTURE_LINES).await else {
            return fail(
                StatusCode::BAD_GATEWAY,
                format!("could not capture pane {pane}"),
            );
        };
        match driver.next(&screen) {
            Step::Done => break,
            Step::Failed(why) => {
                return fail(
                    StatusCode::BAD_GATEWAY,
                    format!("could not answer in pane {pane}: {why}"),
                )
            }
            Step::Press(press) => {
                keys += press.len();
                if let Err(e) = app.panes.press(&pane, &press).await {
                    return fail(
                        StatusCode::BAD_GATEWAY,
                        format!("could not press keys in pane {pane}: {e}"),
                    );
                }
                tokio::time::sleep(REDRAW).await;
            }
        }
    }
    (
        StatusCode::OK,
        json!({"status": "answered", "pane": pane, "question": question.text,
                "answers": answers.iter().map(Answer::to_json).collect::<Vec<_>>(), "keys": keys, "verified": true}),
    )
}

fn not_waiting(reference: &str) -> Outcome {
    fail(
        StatusCode::CONFLICT,
        format!("agent {reference} is not waiting on a question"),
    )
}
