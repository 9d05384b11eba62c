//! Commands to panes on another machine (docs/multi-machine.md, "Commands to panes"): the
//! pane routes ask [`forward`] first; for a pane another machine holds it writes a command
//! row, waits for that machine's result and answers with it (or 503 at once when the machine
//! is offline). The machine that holds the pane runs it with the routes' own code
//! (`pane_executor.rs`). The rules are the core's ([`headspace_core::cluster::pane_commands`]).

use super::body::{json_response, Body};
use super::App;
use crate::server::machines::presence_of;
use crate::server::pane_queue::{await_result, Awaited, PaneQueue};
use headspace_core::cluster::machines::holder;
use headspace_core::cluster::pane_commands::{
    no_result_error, not_taken_error, route, unsure_error, PaneCommandKind, PaneRoute,
};
use headspace_core::view::AgentView;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use tracing::{debug, warn};

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
        // Written, then the database went away: the other machine may still run it.
        Err(e) => fail(
            StatusCode::GATEWAY_TIMEOUT,
            unsure_error(machine, &e.to_string()),
        ),
    }
}

/// True when the agent's pane is not this server's to read (another machine's, or a hub's
/// agent).
pub(super) fn pane_is_elsewhere(app: &App, view: &AgentView) -> bool {
    app.pane_queue.is_some() && route(&view.machine, &app.machine, None) != PaneRoute::Here
}
