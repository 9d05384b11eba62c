//! The routes of agents Headspace starts, reviews and stops (CONTRACT.md, "Agents you start,
//! review and stop"): `POST /api/agents`, and `diff`, `merge`, `discard` and `stop` of one.
//! The work is [`crate::launch`]'s; these read the request, find the agent and its launch, and
//! answer.

use super::agents::agent_view;
use super::body::{error, json_response, Body};
use super::remote_panes::pane_is_elsewhere;
use super::App;
use crate::launch::review::{self, Strategy};
use crate::launch::start::{start, LaunchError, StartRequest};
use crate::launch::stop::stop;
use crate::launch::Launch;
use crate::server::driver::Msg;
use headspace_core::kind::AgentKind;
use headspace_core::view::AgentView;
use headspace_core::Input;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

/// The answer for a launch error.
fn refusal(e: LaunchError) -> Response<Body> {
    match e {
        LaunchError::Bad(m) => error(StatusCode::BAD_REQUEST, m),
        LaunchError::Forbidden(m) => error(StatusCode::FORBIDDEN, m),
        LaunchError::NotFound(m) => error(StatusCode::NOT_FOUND, m),
        LaunchError::Conflict(m, files) if files.is_empty() => error(StatusCode::CONFLICT, m),
        LaunchError::Conflict(m, files) => json_response(
            StatusCode::CONFLICT,
            &json!({"error": m, "conflicts": files}),
        ),
        LaunchError::Failed(m) => error(StatusCode::BAD_GATEWAY, m),
        LaunchError::Unavailable(m) => error(StatusCode::SERVICE_UNAVAILABLE, m),
    }
}

/// The 501 of a server that starts no agents.
fn no_launcher() -> Response<Body> {
    error(
        StatusCode::NOT_IMPLEMENTED,
        "this server starts no agents (a hub, or the simulation): ask the server of the agent's machine",
    )
}

/// A string field of a JSON body: absent or null is `None`; anything else not a string is
/// a 400.
fn text_field(v: &Value, name: &str) -> Result<Option<String>, LaunchError> {
    match &v[name] {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(LaunchError::Bad(format!(
            "{name} must be a string or null, not {other}"
        ))),
    }
}

/// `POST /api/agents` `{"project", "worktree", "base", "agent", "prompt"}`.
pub(super) async fn create(app: &App, body: &[u8]) -> Response<Body> {
    if app.launcher.is_none() {
        return no_launcher();
    }
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "body must be JSON: {\"project\": DIR, \"worktree\": NAME|\"\"|null, \"base\": BRANCH|null, \"agent\": \"claude\", \"prompt\": TEXT|null}",
        );
    };
    let req = (|| {
        Ok::<_, LaunchError>(StartRequest {
            project: text_field(&v, "project")?.ok_or_else(|| {
                LaunchError::Bad("project is required: the folder to start the agent in".into())
            })?,
            worktree: text_field(&v, "worktree")?,
            base: text_field(&v, "base")?,
            agent: text_field(&v, "agent")?.unwrap_or_else(|| "claude".into()),
            prompt: text_field(&v, "prompt")?,
            fork_of: None,
        })
    })();
    let req = match req {
        Ok(r) => r,
        Err(e) => return refusal(e),
    };
    started_answer(app, &req).await
}

/// Starts what `req` asks with the server's launcher: 201 with the new agent, or why not.
async fn started_answer(app: &App, req: &StartRequest) -> Response<Body> {
    let Some(launcher) = &app.launcher else {
        return no_launcher();
    };
    let (settings, book) = (launcher.settings.as_ref(), launcher.book.as_ref());
    match start(settings, book, app.store.as_ref(), app.clock.now(), req).await {
        Ok(s) => json_response(
            StatusCode::CREATED,
            &json!({
                "id": s.agent_id,
                "launch": s.launch.id,
                "tmux_pane": s.launch.tmux_pane,
                "cwd": s.launch.cwd,
                "branch": s.launch.branch,
                "worktree": s.launch.worktree,
                "attach": s.attach,
            }),
        ),
        Err(e) => refusal(e),
    }
}

/// `POST /api/agents/{id}/fork` `{"worktree": NAME|""|null, "prompt": TEXT|null}`: a new
/// agent continuing the same conversation in a new session (`--resume ID --fork-session`),
/// in the agent's folder, or in a new worktree from the agent's branch.
pub(super) async fn fork(app: &App, reference: &str, body: &[u8]) -> Response<Body> {
    if app.launcher.is_none() {
        return no_launcher();
    }
    let v = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    let (worktree, prompt) = match (text_field(&v, "worktree"), text_field(&v, "prompt")) {
        (Ok(w), Ok(p)) => (w, p),
        (Err(e), _) | (_, Err(e)) => return refusal(e),
    };
    let (view, launch) = match agent_and_launch(app, reference).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if view.agent.unjoined() {
        return refusal(LaunchError::Bad(format!(
            "agent {} has no conversation yet (its process started, no session is known): nothing to fork",
            view.agent.id
        )));
    }
    let Some(cwd) = view.agent.cwd.clone() else {
        return refusal(LaunchError::Bad(format!(
            "agent {}'s folder is not known yet: nothing to fork in",
            view.agent.id
        )));
    };
    let (project, base) = match &worktree {
        // A worktree of its own, from the branch the agent works on.
        Some(_) => (
            launch.as_ref().map_or(cwd.clone(), |l| l.project.clone()),
            launch
                .as_ref()
                .and_then(|l| l.branch.clone())
                .or_else(|| view.agent.git_branch.clone()),
        ),
        None => (cwd, None),
    };
    let req = StartRequest {
        project,
        worktree,
        base,
        agent: launch.map_or_else(|| "claude".into(), |l| l.kind),
        prompt,
        fork_of: Some(view.agent.session_id.clone()),
    };
    started_answer(app, &req).await
}

/// The agent and its launch (if Headspace started it), for a route about one agent; agents
/// of another machine are that machine's to change.
async fn agent_and_launch(
    app: &App,
    reference: &str,
) -> Result<(AgentView, Option<Launch>), Response<Body>> {
    let view = agent_view(app, reference).await?;
    if pane_is_elsewhere(app, &view) {
        return Err(error(
            StatusCode::CONFLICT,
            format!(
                "agent {} runs on machine {}: ask its server there",
                view.agent.id, view.machine
            ),
        ));
    }
    let launch = match &app.launcher {
        Some(l) => match crate::launch::launch_of(l.book.as_ref(), &view.agent).await {
            Ok(l) => l,
            Err(e) => return Err(error(StatusCode::SERVICE_UNAVAILABLE, e)),
        },
        None => None,
    };
    Ok((view, launch))
}

/// `GET /api/agents/{id}/diff`.
pub(super) async fn diff(app: &App, reference: &str) -> Response<Body> {
    let (view, launch) = match agent_and_launch(app, reference).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    // An agent Headspace did not start names its own folder (a hook says it): git runs
    // there only inside a projects root, as for the agents it starts.
    let Some(launcher) = &app.launcher else {
        return no_launcher();
    };
    if launch.is_none() {
        if let Some(cwd) = &view.agent.cwd {
            if let Err(e) = crate::launch::start::allowed_folder(&launcher.settings, cwd) {
                return refusal(e);
            }
        }
    }
    match review::diff(launch.as_ref(), view.agent.cwd.as_deref()).await {
        Ok(d) => json_response(
            StatusCode::OK,
            &serde_json::to_value(&d).unwrap_or(Value::Null),
        ),
        Err(e) => refusal(e),
    }
}

/// The launch of an agent Headspace started, or the 404 that says it did not.
fn started(view: &AgentView, launch: Option<Launch>) -> Result<Launch, LaunchError> {
    launch.ok_or_else(|| {
        LaunchError::NotFound(format!(
            "agent {} was not started by Headspace: it has no worktree or branch of Headspace's",
            view.agent.id
        ))
    })
}

/// `POST /api/agents/{id}/merge` `{"strategy": "merge"|"squash"}`.
pub(super) async fn merge(app: &App, reference: &str, body: &[u8]) -> Response<Body> {
    let v = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    let strategy = match Strategy::parse(v["strategy"].as_str()) {
        Ok(s) => s,
        Err(e) => return refusal(e),
    };
    let (view, launch) = match agent_and_launch(app, reference).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let launch = match started(&view, launch) {
        Ok(l) => l,
        Err(e) => return refusal(e),
    };
    match review::merge(&launch, strategy).await {
        Ok(commit) => json_response(
            StatusCode::OK,
            &json!({"status": "merged", "branch": launch.branch, "into": launch.base_branch, "commit": commit}),
        ),
        Err(e) => refusal(e),
    }
}

/// `POST /api/agents/{id}/discard`.
pub(super) async fn discard(app: &App, reference: &str) -> Response<Body> {
    let (view, launch) = match agent_and_launch(app, reference).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let launch = match started(&view, launch) {
        Ok(l) => l,
        Err(e) => return refusal(e),
    };
    if let Err(e) = review::discard(&launch, !view.agent.ended).await {
        return refusal(e);
    }
    if let Some(l) = &app.launcher {
        if let Err(e) = l.book.discarded(launch.id, app.clock.now()).await {
            return error(StatusCode::SERVICE_UNAVAILABLE, e);
        }
    }
    json_response(
        StatusCode::OK,
        &json!({"status": "discarded", "worktree": launch.worktree, "branch": launch.branch}),
    )
}

/// `POST /api/agents/{id}/stop` `{"force": bool}`: the agent ends with `end_reason`
/// `stopped`.
pub(super) async fn stop_agent(app: &App, reference: &str, body: &[u8]) -> Response<Body> {
    let v = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    let force = v["force"].as_bool().unwrap_or(false);
    let (view, launch) = match agent_and_launch(app, reference).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if view.agent.ended {
        return error(
            StatusCode::CONFLICT,
            format!("agent {} has already ended", view.agent.id),
        );
    }
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return error(
            StatusCode::CONFLICT,
            format!("agent {} has no pane to stop it in", view.agent.id),
        );
    };
    let how = match stop(app.panes.as_ref(), &pane, AgentKind::Claude, force).await {
        Ok(how) => how,
        Err(e) => return refusal(e),
    };
    let _ = app.core.send(Msg::Input(Input::Stopped {
        agent: view.agent.id.to_string(),
    }));
    if let (Some(launcher), Some(l)) = (&app.launcher, &launch) {
        if let Err(e) = launcher.book.stopped(l.id, app.clock.now()).await {
            return error(StatusCode::SERVICE_UNAVAILABLE, e);
        }
    }
    json_response(
        StatusCode::OK,
        &json!({"status": "stopped", "how": how.as_str(), "pane": pane}),
    )
}
