//! The agent routes: the list and one agent, turns, wait, send, clear, answer, interrupt
//! and reconcile.

use super::body::{error, json_response, Body};
use super::remote_panes::{fail, forward, pane_is_elsewhere, respond, Outcome};
use super::{query_param, App};
use crate::server::driver::{Msg, ReconcileProgress};
use crate::server::store::Waited;
use headspace_core::cluster::pane_commands::PaneCommandKind;
use headspace_core::task::wait::{WaitDebounce, WaitVerdict};
use headspace_core::view::{ambiguous_pane, resolve_reference, AgentView};
use headspace_core::Activity;
use headspace_core::{Input, Reply};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

pub(super) async fn resolve(app: &App, reference: &str) -> Result<u64, Response<Body>> {
    let named = match app.store.named(reference).await {
        Ok(named) => named,
        Err(e) => return Err(error(StatusCode::SERVICE_UNAVAILABLE, e)),
    };
    // Across machines a pane id names a pane on each: refuse it when more than one live
    // agent holds it (a database of one machine has none to confuse).
    if app.pane_queue.is_some() {
        let rows = named.iter().map(|(a, m)| (a, m.as_str()));
        if let Some(why) = ambiguous_pane(rows, reference, &app.machine) {
            return Err(error(StatusCode::CONFLICT, why));
        }
    }
    match resolve_reference(named.iter().map(|(a, _)| a), reference) {
        Some(id) => Ok(id),
        None => Err(error(
            StatusCode::NOT_FOUND,
            format!("no agent {reference}"),
        )),
    }
}

/// The agent a reference names, with its card; or the response that says why not.
pub(super) async fn agent_view(app: &App, reference: &str) -> Result<AgentView, Response<Body>> {
    let id = resolve(app, reference).await?;
    match app.store.agent(id).await {
        Ok(Some(view)) => Ok(view),
        Ok(None) => Err(error(
            StatusCode::NOT_FOUND,
            format!("no agent {reference}"),
        )),
        Err(e) => Err(error(StatusCode::SERVICE_UNAVAILABLE, e)),
    }
}

/// The most cards one `GET /api/agents?ids=` returns.
pub const MAX_CARDS_ASKED: usize = 100;

/// The ids of `GET /api/agents?ids=3,7`: one to [`MAX_CARDS_ASKED`] agent ids, each once,
/// in the order asked; `None` for anything else.
pub fn parse_ids(list: &str) -> Option<Vec<u64>> {
    let mut ids: Vec<u64> = Vec::new();
    for part in list.split(',') {
        let id: u64 = part.parse().ok()?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    (ids.len() <= MAX_CARDS_ASKED).then_some(ids)
}

/// `GET /api/agents?ids=3,7`: the cards of those agents, as `GET /api/agents/{id}` shows each
/// (an unknown id is left out): many cards in one request instead of one each.
pub(super) async fn cards_of(app: &App, list: &str) -> Response<Body> {
    let Some(ids) = parse_ids(list) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "ids: a comma-separated list of 1 to {MAX_CARDS_ASKED} agent ids, as in ids=3,7"
            ),
        );
    };
    let mut cards = Vec::with_capacity(ids.len());
    for id in ids {
        let view = match app.store.agent(id).await {
            Ok(Some(view)) => view,
            Ok(None) => continue,
            Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
        };
        // One at a time: a single agent's card reads only that agent's usage.
        match super::usage::cards(app, std::slice::from_ref(&view)).await {
            Ok(mut one) => cards.append(&mut one),
            Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
        }
    }
    json_response(StatusCode::OK, &Value::Array(cards))
}

/// The 409 for an agent with no tmux pane to type into.
pub(super) fn no_pane(reference: &str) -> Outcome {
    fail(
        StatusCode::CONFLICT,
        format!("agent {reference} has no tmux pane to type into"),
    )
}

/// The turns `around=TURN` returns when no limit is given.
const AROUND_LIMIT: i64 = 200;

pub(super) async fn turns(app: &App, reference: &str, query: Option<&str>) -> Response<Body> {
    let id = match resolve(app, reference).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let after = match query_param(query, "after").map(str::parse::<u64>) {
        None => None,
        Some(Ok(a)) => Some(a),
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "after must be a turn id"),
    };
    let limit = match query_param(query, "limit").map(str::parse::<i64>) {
        None => 100_000,
        Some(Ok(l)) if (1..=100_000).contains(&l) => l,
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "limit must be between 1 and 100000",
            )
        }
    };
    let around = match query_param(query, "around").map(str::parse::<u64>) {
        None => None,
        Some(Ok(_)) if after.is_some() => {
            return error(
                StatusCode::BAD_REQUEST,
                "around and after do not go together",
            )
        }
        Some(Ok(t)) => Some(t),
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "around must be a turn id"),
    };
    let before = match query_param(query, "before").map(str::parse::<u64>) {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "before must be a turn id"),
    };
    let newest = match query_param(query, "newest").map(str::parse::<i64>) {
        None => None,
        Some(Ok(n)) if (1..=100_000).contains(&n) => Some(n),
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "newest must be between 1 and 100000",
            )
        }
    };
    let modes = [
        after.is_some(),
        around.is_some(),
        before.is_some(),
        newest.is_some(),
    ];
    if modes.iter().filter(|m| **m).count() > 1 {
        return error(
            StatusCode::BAD_REQUEST,
            "after, around, before and newest do not go together",
        );
    }
    if before.is_some() || newest.is_some() {
        return turns_backwards(app, id, reference, before, newest.unwrap_or(limit)).await;
    }
    let (rows, next) = match around {
        // A window of `limit` turns (200 unless given) centred on one: a search result's.
        Some(turn) => {
            let limit = query_param(query, "limit").map_or(AROUND_LIMIT, |_| limit);
            match app.store.turns_around(id, turn, limit).await {
                Ok(rows) if rows.is_empty() => {
                    return error(
                        StatusCode::NOT_FOUND,
                        format!("turn {turn} is not one of agent {reference}'s turns"),
                    )
                }
                Ok(rows) => (rows, None),
                Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
            }
        }
        None => {
            // One turn more than asked: its time bounds the steps of the page's last turn.
            let mut rows = match app.store.turns(id, after, limit + 1).await {
                Ok(rows) => rows,
                Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
            };
            let next = (rows.len() as i64 > limit).then(|| rows.pop()).flatten();
            (rows, next)
        }
    };
    let not_first = after.is_some() || around.is_some();
    match super::usage::turns_json(app, id, &rows, not_first, next.as_ref()).await {
        Ok(turns) => json_response(StatusCode::OK, &Value::Array(turns)),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// `before=TURN` or `newest=N`: the `limit` turns just before a turn, or the agent's newest;
/// oldest first, like every page. A conversation opens at its end and pages back from there.
async fn turns_backwards(
    app: &App,
    id: u64,
    reference: &str,
    before: Option<u64>,
    limit: i64,
) -> Response<Body> {
    // The turn the page ends before: it bounds the steps of the page's last turn.
    let next = match before {
        None => None,
        Some(turn) => match app.store.turns_around(id, turn, 1).await {
            Ok(mut rows) if rows.len() == 1 => rows.pop(),
            Ok(_) => {
                return error(
                    StatusCode::NOT_FOUND,
                    format!("turn {turn} is not one of agent {reference}'s turns"),
                )
            }
            Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
        },
    };
    // One turn more than asked: when it is there, the page does not start the conversation.
    let mut rows = match app.store.turns_before(id, before, limit + 1).await {
        Ok(rows) => rows,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let not_first = rows.len() as i64 > limit;
    if not_first {
        rows.remove(0);
    }
    match super::usage::turns_json(app, id, &rows, not_first, next.as_ref()).await {
        Ok(turns) => json_response(StatusCode::OK, &Value::Array(turns)),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Re-reads an agent's transcripts, here or through the machine whose core holds it.
pub(super) async fn reconcile(app: &App, reference: &str) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let kind = PaneCommandKind::Reconcile;
    if let Some(r) = forward(app, &view, reference, kind, json!({})).await {
        return r;
    }
    respond(reconcile_here(app, view.agent.id, reference).await)
}

/// Re-reads the transcripts of agent `id` with this machine's core, under the reconcile lock
/// every process shares: the reconcile route's work, also run for a forwarded command.
pub(super) async fn reconcile_here(app: &App, id: u64, reference: &str) -> Outcome {
    let progress = Arc::new(ReconcileProgress::default());
    let run = Box::pin(async {
        let (tx, rx) = oneshot::channel();
        let _ = app.core.send(Msg::Reconcile {
            agent: id.to_string(),
            reply: tx,
            progress: progress.clone(),
        });
        match tokio::time::timeout(app.reconcile_budget, rx).await {
            Ok(Ok(reply)) => Waited::Reply(reply),
            Ok(Err(_)) => Waited::CoreStopped,
            Err(_) => Waited::StillRunning,
        }
    });
    let waited = app.store.with_reconcile_lock(id, run).await;
    let busy =
        json!({"status": "ok", "created": 0, "message": "Reconciliation already in progress"});
    match waited {
        Ok(None) | Ok(Some(Waited::Reply(Reply::ReconcileBusy))) => (StatusCode::OK, busy),
        Ok(Some(Waited::Reply(Reply::Reconciled { created, .. }))) => {
            (StatusCode::OK, json!({"status": "ok", "created": created}))
        }
        Ok(Some(Waited::Reply(Reply::UnknownAgent))) => {
            fail(StatusCode::NOT_FOUND, format!("no agent {reference}"))
        }
        Ok(Some(Waited::CoreStopped)) => fail(StatusCode::SERVICE_UNAVAILABLE, "the core stopped"),
        // Still running (a huge transcript, or the database is down): it goes on behind.
        // `remaining` is the transcript bytes it has still to read (0: all read, its turns
        // wait for the database).
        Ok(Some(Waited::StillRunning)) => (
            StatusCode::OK,
            json!({
                "status": "partial",
                "created": progress.created.load(Relaxed),
                "remaining": progress.remaining.load(Relaxed),
            }),
        ),
        Err(e) => fail(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// How much of the pane `wait` reads: the input box and the block above it are enough.
const WAIT_SCREEN_LINES: u32 = 60;

/// Long-polls until the agent is idle (finished its turn, waiting for input, or ended), as
/// the core's [`WaitDebounce`] decides: this loop only reads, sleeps and answers.
pub(super) async fn wait(app: &App, reference: &str, query: Option<&str>) -> Response<Body> {
    let mut id = match resolve(app, reference).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let timeout = match query_param(query, "timeout").map(str::parse::<f64>) {
        None => 600.0,
        Some(Ok(t)) if (0.0..=86_400.0).contains(&t) => t,
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "timeout must be a number of seconds",
            )
        }
    };
    // tokio's clock, so the simulation's virtual time drives it too.
    let started = crate::clock::instant();
    let mut debounce = WaitDebounce::new(Duration::from_secs_f64(timeout));
    loop {
        // A pane on another machine cannot be read from here: its activity comes from the
        // store alone (what that machine's hooks, transcripts and watchdog wrote).
        let (kind, stored, pane) = match app.store.agent(id).await {
            Ok(Some(v)) if pane_is_elsewhere(app, &v) => (v.agent.kind, v.activity(), None),
            Ok(Some(v)) => (v.agent.kind, v.activity(), v.agent.tmux_pane),
            // Merged into another while waited on (a session joining the agent its pane's
            // process made): the reference names that one now.
            Ok(None) => match resolve(app, reference).await {
                Ok(now) if now != id => {
                    id = now;
                    continue;
                }
                _ => return error(StatusCode::NOT_FOUND, format!("no agent {reference}")),
            },
            Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
        };
        // The pane is read at every reading: a prompt typed there a moment ago shows on the
        // screen before any hook or transcript line says so.
        let screen = match &pane {
            Some(p) if stored == Activity::Idle => app.panes.capture(p, WAIT_SCREEN_LINES).await,
            _ => None,
        };
        let elapsed = crate::clock::since(started);
        let waited_ms = elapsed.as_millis() as u64;
        let (activity, verdict) = debounce.read(kind, stored, screen.as_deref(), elapsed);
        let status = match verdict {
            WaitVerdict::Idle => "idle",
            WaitVerdict::TimedOut => "timeout",
            WaitVerdict::ReadAgainAfter(pause) => {
                tokio::time::sleep(pause).await;
                continue;
            }
        };
        return json_response(
            StatusCode::OK,
            &json!({"status": status, "activity": activity.as_str(), "waited_ms": waited_ms}),
        );
    }
}

/// Presses Escape in the agent's pane (an orchestration cancelling a step), through the
/// server's own tmux socket, or through the machine that holds the pane.
pub(super) async fn interrupt(app: &App, reference: &str) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let kind = PaneCommandKind::Interrupt;
    if let Some(r) = forward(app, &view, reference, kind, json!({})).await {
        return r;
    }
    respond(interrupt_here(app, &view, reference).await)
}

/// Presses Escape in a pane of this machine: the interrupt route's work, also run for a
/// command forwarded from another server.
pub(super) async fn interrupt_here(app: &App, view: &AgentView, reference: &str) -> Outcome {
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return no_pane(reference);
    };
    match app.panes.interrupt(&pane).await {
        Ok(()) => (
            StatusCode::OK,
            json!({"status": "interrupted", "pane": pane}),
        ),
        Err(e) => fail(
            StatusCode::BAD_GATEWAY,
            format!("could not press Escape in pane {pane}: {e}"),
        ),
    }
}

/// `POST /api/agents/{id}/rename` `{"name": TEXT|null}`: the name the page, the CLI and every
/// device show for the agent (empty or null clears it). Pages learn of it from a passing
/// `agent_renamed` event.
pub(super) async fn rename(app: &App, reference: &str, body: &[u8]) -> Response<Body> {
    let v = serde_json::from_slice::<Value>(body).unwrap_or(Value::Bool(false));
    let name = match &v["name"] {
        Value::Null if v.is_object() => None,
        Value::String(s) => match headspace_core::view::check_name(s) {
            Ok(n) => n,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        },
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "body must be {\"name\": \"…\"} (or null, or \"\", to clear it)",
            )
        }
    };
    let id = match resolve(app, reference).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    match app.store.rename(id, name.clone()).await {
        Ok(true) => {
            app.hub
                .publish_passing("agent_renamed", &json!({"agent_id": id, "name": name}));
            json_response(StatusCode::OK, &json!({"id": id, "name": name}))
        }
        Ok(false) => error(StatusCode::NOT_FOUND, format!("no agent {reference}")),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Types text into the agent's pane, here or through the machine that holds it.
pub(super) async fn send(app: &App, reference: &str, text: &str) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let kind = PaneCommandKind::Send;
    if let Some(r) = forward(app, &view, reference, kind, json!({"text": text})).await {
        return r;
    }
    respond(send_here(app, &view, reference, text).await)
}

/// Types `/clear` into the agent's pane, here or through the machine that holds it.
pub(super) async fn clear(app: &App, reference: &str) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Some(text) = view.agent.kind.clear_text() else {
        return error(StatusCode::CONFLICT, no_clear(&view));
    };
    let kind = PaneCommandKind::Clear;
    if let Some(r) = forward(app, &view, reference, kind, json!({})).await {
        return r;
    }
    respond(send_here(app, &view, reference, text).await)
}

/// Why an agent of a kind without a clear Headspace follows is not cleared.
pub(super) fn no_clear(view: &AgentView) -> String {
    format!(
        "{} has no clear Headspace can follow yet: start a new agent instead",
        view.agent.kind.title()
    )
}

/// Types text into a pane of this machine. The core hears of it first, so the agent counts
/// as running from this moment: a `wait` right after never sees a false idle.
pub(super) async fn send_here(app: &App, view: &AgentView, reference: &str, text: &str) -> Outcome {
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return no_pane(reference);
    };
    let id = view.agent.id;
    let _ = app.core.send(Msg::Input(Input::Sent {
        agent: id.to_string(),
        text: Some(text.to_string()),
    }));
    match app.panes.send(&pane, text).await {
        Ok(s) => (
            StatusCode::OK,
            json!({"status": "sent", "pane": pane, "verified": s.verified, "retried_enter": s.retried_enter, "cleared_input": s.cleared_input}),
        ),
        Err(e) => fail(
            StatusCode::BAD_GATEWAY,
            format!("could not type into pane {pane}: {e}"),
        ),
    }
}
