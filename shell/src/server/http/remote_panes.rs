//! Commands to panes on another machine (docs/multi-machine.md, "Commands to panes"): the
//! pane routes ask [`forward`] first; for a pane another machine holds it writes a command
//! row, waits for that machine's result and answers with it (or 503 at once when the machine
//! is offline). Every server whose database is shared (it has a
//! [`PaneQueue`]) runs an executor ([`start_pane_executor`]) that takes its machine's
//! commands and runs them with the routes' own code (`send_here`, `interrupt_here`,
//! `answer_here`, `answer_questions_here`). The rules are the core's
//! ([`headspace_core::pane_commands`]).

use super::agents::{interrupt_here, reconcile_here, send_here};
use super::answer::{answer_here, answer_questions_here};
use super::body::{json_response, Body};
use super::orchestration::orchestrate_forwarded;
use super::App;
use crate::clock;
use crate::server::backoff::Backoff;
use crate::server::machines::presence_of;
use crate::server::pane_queue::{await_result, Awaited, PaneCommand, PaneQueue};
use headspace_core::dialog::answers_of;
use headspace_core::machines::holder;
use headspace_core::pane_commands::{
    no_result_error, not_taken_error, route, PaneCommandKind, PaneRoute,
};
use headspace_core::view::AgentView;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, error, info, warn};

/// A route's answer before it is a response: its status and JSON body (what a forwarded
/// command's result carries back).
pub(super) type Outcome = (StatusCode, Value);

/// The error answer `{"error": message}`, as [`error`] makes it.
pub(super) fn fail(status: StatusCode, message: impl std::fmt::Display) -> Outcome {
    (status, json!({"error": message.to_string()}))
}

/// The response of an outcome.
pub(super) fn respond((status, body): Outcome) -> Response<Body> {
    json_response(status, &body)
}

/// `None` when the agent's pane is this machine's (the caller types into it); otherwise the
/// answer: the other machine's result, or 503 when it is offline (the command is then written
/// as refused, so it can never run later).
pub(super) async fn forward(
    app: &App,
    view: &AgentView,
    reference: &str,
    kind: PaneCommandKind,
    mut body: Value,
) -> Option<Response<Body>> {
    // The edge words its errors with the reference the client used, as a local route does.
    body["reference"] = json!(reference);
    forward_to(app, &view.machine, view.agent.id, kind, body).await
}

/// [`forward_outcome`] as a response.
pub(super) async fn forward_to(
    app: &App,
    row_machine: &str,
    agent: u64,
    kind: PaneCommandKind,
    body: Value,
) -> Option<Response<Body>> {
    forward_outcome(app, row_machine, agent, kind, body)
        .await
        .map(respond)
}

/// `None` when `row_machine` (an agent row's machine, empty for this server's) is this
/// machine; otherwise the answer of machine `row_machine` to the command, run there for
/// `agent`, or 503 at once when that machine is offline (the command then written as
/// refused).
pub(super) async fn forward_outcome(
    app: &App,
    row_machine: &str,
    agent: u64,
    kind: PaneCommandKind,
    body: Value,
) -> Option<Outcome> {
    let queue = app.pane_queue.as_deref()?;
    let holder = holder(row_machine, &app.machine);
    // Only a machine elsewhere needs the machines list.
    let presence = if holder == app.machine {
        None
    } else {
        match app.store.machines().await {
            Ok(rows) => Some(presence_of(&rows, &app.machine, holder)),
            Err(e) => return Some(fail(StatusCode::SERVICE_UNAVAILABLE, e)),
        }
    };
    match route(row_machine, &app.machine, presence.as_ref()) {
        PaneRoute::Here => None,
        PaneRoute::Offline { machine, error } => {
            let answer = json!({ "error": error });
            let result = json!({"status": 503, "body": answer});
            if let Err(e) = queue.refuse(&machine, agent, kind, &body, &result).await {
                warn!(
                    "[PANE_COMMANDS] could not record the refused {} for machine {machine}: {e}",
                    kind.as_str()
                );
            }
            Some((StatusCode::SERVICE_UNAVAILABLE, answer))
        }
        PaneRoute::Forward { machine } => {
            Some(run_elsewhere(app, queue, &machine, agent, kind, &body).await)
        }
    }
}

/// Writes the command for `machine`, signed with this server's key, waits for its result
/// and answers with it.
async fn run_elsewhere(
    app: &App,
    queue: &dyn PaneQueue,
    machine: &str,
    agent: u64,
    kind: PaneCommandKind,
    body: &Value,
) -> Outcome {
    let now = app.clock.now().millis();
    let signed = app.pane_keys.sign(machine, agent, kind, body, now);
    let id = match queue
        .submit(machine, agent, kind, body, Some(&signed))
        .await
    {
        Ok(id) => id,
        Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    debug!(
        "[PANE_COMMANDS] {} for agent {agent} sent to machine {machine} (command {id})",
        kind.as_str()
    );
    match await_result(queue, id, &app.rules).await {
        Ok(Awaited::Result(result)) => {
            let status = result["status"]
                .as_u64()
                .and_then(|s| StatusCode::from_u16(s as u16).ok())
                .unwrap_or(StatusCode::BAD_GATEWAY);
            (status, result["body"].clone())
        }
        Ok(Awaited::NotTaken) => fail(StatusCode::GATEWAY_TIMEOUT, not_taken_error(machine)),
        Ok(Awaited::NoResult) => fail(StatusCode::GATEWAY_TIMEOUT, no_result_error(machine)),
        Err(e) => fail(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// True when the agent's pane is not this server's to read (another machine's, or a hub's
/// agent).
pub(super) fn pane_is_elsewhere(app: &App, view: &AgentView) -> bool {
    app.pane_queue.is_some() && route(&view.machine, &app.machine, None) != PaneRoute::Here
}

/// How often the executor looks for commands when no notification came (one may be lost:
/// the listening connection dropped, or the command was written while it was down).
const POLL_EVERY: Duration = Duration::from_secs(1);
/// How often old commands are deleted (any server may; a day's rows are kept).
const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// Most commands taken at one look.
const CLAIM_BATCH: i64 = 16;

/// Runs, for as long as the server runs, the commands other servers write for this machine:
/// woken by the queue ([`PaneQueue::wake_for`]: `NOTIFY pane_commands` on PostgreSQL), and
/// every second without a wake-up. Nothing when the server has no queue.
pub fn start_pane_executor(app: Arc<App>) {
    let Some(store) = app.pane_queue.clone() else {
        return;
    };
    tokio::spawn(async move {
        info!(
            "[PANE_COMMANDS] running commands for machine {:?}",
            app.machine
        );
        let wake = store.wake_for(&app.machine);
        let mut prune_at = clock::instant();
        loop {
            if clock::instant() >= prune_at {
                prune_at = clock::instant() + PRUNE_EVERY;
                if let Err(e) = store.prune().await {
                    debug!("[PANE_COMMANDS] cannot prune old commands: {e}");
                }
            }
            run_claimed(&app, &store).await;
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(POLL_EVERY) => {}
            }
        }
    });
}

/// Takes this machine's pending commands and runs each on its own task (a question wizard
/// may take seconds; it must not hold up a send to another pane).
async fn run_claimed(app: &Arc<App>, store: &Arc<dyn PaneQueue>) {
    loop {
        let taken = match store.claim(&app.machine, CLAIM_BATCH).await {
            Ok(t) => t,
            Err(e) => {
                debug!("[PANE_COMMANDS] cannot look for commands: {e}");
                return;
            }
        };
        let full = taken.len() as i64 == CLAIM_BATCH;
        for command in taken {
            let app = app.clone();
            let store = store.clone();
            tokio::spawn(async move {
                // The claim took it before its deadline (on the database's clock); it runs
                // only if the user's server signed it (a database client alone cannot).
                let now = app.clock.now().millis();
                let (status, body) = match app.pane_keys.check(&command, &app.machine, now) {
                    Ok(envelope) => {
                        let signed = PaneCommand {
                            body: envelope.body,
                            ..command.clone()
                        };
                        run_here(&app, &signed).await
                    }
                    Err(why) => {
                        warn!(
                            "[PANE_COMMANDS] refused command {} ({} for agent {}): {why}",
                            command.id,
                            command.kind.as_str(),
                            command.agent_id
                        );
                        fail(
                            StatusCode::FORBIDDEN,
                            format!("machine {} refused the command: {why}", app.machine),
                        )
                    }
                };
                let result = json!({"status": status.as_u16(), "body": body});
                finish(store.as_ref(), command.id, &result).await;
            });
        }
        if !full {
            return;
        }
    }
}

/// Writes a result, retrying a while: the asking server waits for it.
async fn finish(store: &dyn PaneQueue, id: i64, result: &Value) {
    let mut pause = Backoff::new(Duration::from_millis(100), Duration::from_secs(13));
    for _ in 0..8 {
        match store.finish(id, result).await {
            Ok(()) => return,
            Err(e) => {
                warn!("[PANE_COMMANDS] could not write the result of command {id} (retrying): {e}");
                pause.pause().await;
            }
        }
    }
    error!("[PANE_COMMANDS] gave up writing the result of command {id}: its asker answers 504");
}

/// Runs a command taken for this machine with the routes' own code.
async fn run_here(app: &App, command: &PaneCommand) -> Outcome {
    let reference = command.body["reference"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| command.agent_id.to_string());
    let view = match app.store.agent(command.agent_id).await {
        Ok(Some(v)) => v,
        Ok(None) => return fail(StatusCode::NOT_FOUND, format!("no agent {reference}")),
        Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let body = &command.body;
    match command.kind {
        PaneCommandKind::Send => match body["text"].as_str() {
            Some(text) => send_here(app, &view, &reference, text).await,
            None => fail(StatusCode::BAD_REQUEST, "the command has no text"),
        },
        PaneCommandKind::Clear => send_here(app, &view, &reference, "/clear").await,
        PaneCommandKind::Interrupt => interrupt_here(app, &view, &reference).await,
        PaneCommandKind::Answer => match body["option"].as_u64() {
            Some(n) => answer_here(app, &view, &reference, n as usize).await,
            None => fail(StatusCode::BAD_REQUEST, "the command has no option"),
        },
        PaneCommandKind::AnswerQuestions => match answers_of(body) {
            Ok(answers) => answer_questions_here(app, &view, &reference, answers).await,
            Err(e) => fail(StatusCode::BAD_REQUEST, e),
        },
        PaneCommandKind::Reconcile => reconcile_here(app, view.agent.id, &reference).await,
        PaneCommandKind::Orchestrate => orchestrate_forwarded(app, body).await,
    }
}
