//! The orchestration routes: runs of known agents' projects, their commands, and starting
//! a runner.

use super::body::{error, json_response, Body};
use super::App;
use crate::orchestrate::command::{perform, Command};
use crate::orchestrate::control::ControlError;
use crate::orchestrate::launch::{log_path, spawn_runner, Launch};
use crate::orchestrate::project_files::FileError;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Every project of a known agent that has an orchestration: its status, with `project`.
pub(super) async fn orchestrations(app: &App) -> Response<Body> {
    let projects = match agent_projects(app).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (token, addr) = (app.token.clone(), app.self_addr.clone());
    let found = tokio::task::spawn_blocking(move || {
        projects
            .into_iter()
            .filter(|p| p.join(".specflow/workflows").is_dir())
            .filter_map(|p| {
                let mut v = perform(&p, Command::Status, Some(addr.clone()), token.clone()).ok()?;
                v["project"] = json!(p);
                Some(v)
            })
            .collect::<Vec<Value>>()
    })
    .await
    .unwrap_or_default();
    json_response(StatusCode::OK, &Value::Array(found))
}

/// The folders of the agents the server knows, as they are on disk (canonical; folders that
/// are gone are left out).
pub(super) async fn agent_projects(
    app: &App,
) -> Result<std::collections::BTreeSet<PathBuf>, Response<Body>> {
    let agents = app
        .store
        .agents()
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e))?;
    Ok(agents
        .iter()
        .filter_map(|v| v.agent.cwd.as_deref())
        .filter_map(|cwd| std::fs::canonicalize(cwd).ok())
        .collect())
}

/// The project folder a request names, if it is the folder of an agent the server knows:
/// the routes act on the user's own projects, not on any folder a request names.
pub(super) async fn known_project(app: &App, project: &str) -> Result<PathBuf, Response<Body>> {
    let wanted = std::fs::canonicalize(project).map_err(|e| {
        error(
            StatusCode::NOT_FOUND,
            format!("project {project}: no such directory ({e})"),
        )
    })?;
    if agent_projects(app).await?.contains(&wanted) {
        Ok(wanted)
    } else {
        Err(error(
            StatusCode::FORBIDDEN,
            format!("project {project} is no known agent's folder; start an agent there first"),
        ))
    }
}

/// An orchestration command on a project (`status` and `decide` by GET, the rest by POST).
pub(super) async fn orchestrate(
    app: &App,
    command: &str,
    project: Option<String>,
) -> Response<Body> {
    let Some(command) = Command::parse(command) else {
        let names: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "no orchestration command {command:?}; there are start, {}",
                names.join(", ")
            ),
        );
    };
    let Some(project) = project.filter(|p| !p.trim().is_empty()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "name the project folder: ?project=DIR, or {\"project\": DIR} in the body",
        );
    };
    let project = match known_project(app, &project).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (token, addr) = (app.token.clone(), Some(app.self_addr.clone()));
    let done = tokio::task::spawn_blocking(move || perform(&project, command, addr, token)).await;
    match done {
        Ok(Ok(v)) => json_response(StatusCode::OK, &v),
        Ok(Err(e)) => {
            let status = match &e {
                ControlError::File(FileError::Corrupt { .. }) => StatusCode::UNPROCESSABLE_ENTITY,
                ControlError::File(FileError::Io { .. }) => StatusCode::INTERNAL_SERVER_ERROR,
                ControlError::File(_) | ControlError::NoOrchestration(_) => StatusCode::NOT_FOUND,
                ControlError::Refused(_) => StatusCode::CONFLICT,
            };
            error(status, e.to_string())
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Starts a runner for a project (the dashboard's play button); it talks back to this server.
pub(super) async fn start_orchestration(app: &App, body: &[u8]) -> Response<Body> {
    let launch: Launch = match serde_json::from_slice(body) {
        Ok(l) => l,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("body must be {{\"project\": DIR, \"agent\": ID, \"auto_merge\"?: bool, \"budget\"?: dollars, \"pause_between_batches\"?: bool, \"max_heal_attempts\"?: N, \"restart_on_server_start\"?: bool}}: {e}"),
            )
        }
    };
    let launch = match known_project(app, &launch.project.to_string_lossy()).await {
        Ok(project) => Launch { project, ..launch },
        Err(r) => return r,
    };
    if launch.agent.trim().is_empty() || launch.agent.starts_with('-') {
        return error(
            StatusCode::BAD_REQUEST,
            "name the agent that runs the steps",
        );
    }
    if launch.budget.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
        return error(
            StatusCode::BAD_REQUEST,
            "the budget must be a positive number of dollars",
        );
    }
    // The runner talks back to this server at its own address, never one a request names.
    match spawn_runner(&launch, &app.self_addr, app.token.as_deref()) {
        Ok(pid) => json_response(
            StatusCode::OK,
            &json!({"status": "started", "pid": pid, "log": log_path(&launch.project)}),
        ),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

/// At the server's start-up: every run of a known agent's project whose runner is gone is
/// logged, and restarted when it was started with `--restart-on-server-start`.
pub async fn revive_runners(app: &App) {
    let Ok(projects) = agent_projects(app).await else {
        return;
    };
    let (token, addr) = (app.token.clone(), app.self_addr.clone());
    let _ = tokio::task::spawn_blocking(move || {
        crate::orchestrate::revive::revive_at_start_up(
            projects.iter().map(PathBuf::as_path),
            &addr,
            token.as_deref(),
        )
    })
    .await;
}
