//! The orchestration routes: runs of known agents' projects, their commands, and starting
//! a runner. A project's files and its runner live on the machine whose agents work in it
//! (`headspace_core::cluster::project_machine`): a server asked about another machine's project
//! forwards the command there through the database, as the pane routes do.

use super::body::{error, json_response, Body};
use super::remote_panes::{fail, forward_outcome, forward_to, respond, Outcome};
use super::App;
use crate::orchestrate::command::{perform, Command};
use crate::orchestrate::control::ControlError;
use crate::orchestrate::launch::{log_path, spawn_runner, Launch, RunnerLink};
use crate::orchestrate::project_files::FileError;
use crate::server::machines::presence_of;
use headspace_core::cluster::machines::holder;
use headspace_core::cluster::pane_commands::PaneCommandKind;
use headspace_core::cluster::project_machine::{folder_key, project_machine, ProjectMachineError};
use headspace_core::view::AgentView;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;
use tracing::debug;

/// Every project of a known agent that has an orchestration: its status, with `project`
/// and `machine`. A server that shares its database with other machines asks each online
/// one for its own (a machine offline is left out: its files cannot be read).
pub(super) async fn orchestrations(app: &App) -> Response<Body> {
    let agents = match app.store.agents().await {
        Ok(a) => a,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let mut found = if app.machine.is_empty() {
        Vec::new()
    } else {
        list_here(app).await
    };
    if app.pane_queue.is_some() {
        let machines = app.store.machines().await.unwrap_or_default();
        // Only machines that report: an offline one cannot read its files, and asking it
        // would only write refused rows.
        let asked = other_machines(&agents, &app.machine)
            .into_iter()
            .filter(|(m, _)| presence_of(&machines, &app.machine, m).online)
            .map(|(machine, agent)| async move {
                let body = json!({"command": "list"});
                let kind = PaneCommandKind::Orchestrate;
                (
                    machine.clone(),
                    forward_outcome(app, &machine, agent, kind, body).await,
                )
            });
        for (machine, answer) in futures_util::future::join_all(asked).await {
            match answer {
                Some((StatusCode::OK, Value::Array(runs))) => found.extend(runs),
                Some((status, answer)) => debug!(
                    "[ORCHESTRATE] machine {machine} did not list its orchestrations ({status}): {answer}"
                ),
                None => {}
            }
        }
    }
    json_response(StatusCode::OK, &Value::Array(found))
}

/// The other machines with agents, each with one of its agents (the row a command names).
fn other_machines(agents: &[AgentView], own: &str) -> Vec<(String, u64)> {
    let mut seen = std::collections::BTreeMap::new();
    for v in agents {
        let machine = holder(&v.machine, own);
        if !machine.is_empty() && machine != own {
            seen.entry(machine.to_string()).or_insert(v.agent.id);
        }
    }
    seen.into_iter().collect()
}

/// This machine's projects with an orchestration, each status with `project` and
/// `machine`.
async fn list_here(app: &App) -> Vec<Value> {
    let Ok(projects) = agent_projects(app).await else {
        return Vec::new();
    };
    let (token, addr) = (Some(app.token.clone()), app.self_addr.clone());
    let prices = app.prices_file.clone();
    let machine = app.machine.clone();
    tokio::task::spawn_blocking(move || {
        projects
            .into_iter()
            .filter(|p| p.join(".specflow/workflows").is_dir())
            .filter_map(|p| {
                let mut v = perform(
                    &p,
                    Command::Status,
                    Some(addr.clone()),
                    token.clone(),
                    prices.clone(),
                )
                .ok()?;
                v["project"] = json!(p);
                v["machine"] = json!(machine);
                Some(v)
            })
            .collect::<Vec<Value>>()
    })
    .await
    .unwrap_or_default()
}

/// The folders of this machine's agents, as they are on disk (canonical; folders that are
/// gone are left out). Another machine's agents' folders are that machine's to read.
pub(super) async fn agent_projects(
    app: &App,
) -> Result<std::collections::BTreeSet<PathBuf>, Response<Body>> {
    let folders = app
        .store
        .agent_folders()
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e))?;
    Ok(folders
        .iter()
        .filter(|(machine, _)| holder(machine, &app.machine) == app.machine)
        .filter_map(|(_, cwd)| std::fs::canonicalize(cwd).ok())
        .collect())
}

/// The project folder a request names, if it is the folder of an agent of this machine:
/// the routes act on the user's own projects, not on any folder a request names.
pub(super) async fn known_project(app: &App, project: &str) -> Result<PathBuf, Outcome> {
    let wanted = std::fs::canonicalize(project).map_err(|e| {
        fail(
            StatusCode::NOT_FOUND,
            format!("project {project}: no such directory ({e})"),
        )
    })?;
    let known = agent_projects(app)
        .await
        .map_err(|_| fail(StatusCode::SERVICE_UNAVAILABLE, "cannot read the agents"))?;
    if known.contains(&wanted) {
        Ok(wanted)
    } else {
        Err(fail(
            StatusCode::FORBIDDEN,
            format!("project {project} is no known agent's folder; start an agent there first"),
        ))
    }
}

/// Where a command on `project` runs: `Ok(None)` here, `Ok(Some(answer))` the answer of the
/// machine that holds it (or its offline 503), `Err` why no machine does.
async fn forward_project(
    app: &App,
    project: &str,
    machine: Option<&str>,
    body: Value,
) -> Result<Option<Response<Body>>, Response<Body>> {
    if app.pane_queue.is_none() {
        return Ok(None);
    }
    let agents = app
        .store
        .agents()
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e))?;
    let folders = agents
        .iter()
        .filter_map(|v| v.agent.cwd.as_deref().map(|cwd| (v.machine.as_str(), cwd)));
    let holder_name = match project_machine(project, folders, &app.machine, machine) {
        Ok(m) => m,
        Err(e) => {
            let status = match e {
                ProjectMachineError::Unknown { .. } => StatusCode::FORBIDDEN,
                ProjectMachineError::NotThere { .. } => StatusCode::NOT_FOUND,
                ProjectMachineError::Ambiguous { .. } => StatusCode::CONFLICT,
            };
            return Err(error(status, e));
        }
    };
    if holder_name == app.machine {
        return Ok(None);
    }
    let key = folder_key(project);
    let agent = agents
        .iter()
        .find(|v| {
            holder(&v.machine, &app.machine) == holder_name
                && v.agent.cwd.as_deref().map(folder_key) == Some(key)
        })
        .map(|v| v.agent.id)
        .unwrap_or_default();
    let kind = PaneCommandKind::Orchestrate;
    Ok(forward_to(app, &holder_name, agent, kind, body).await)
}

/// An orchestration command on a project (`status` and `decide` by GET, the rest by POST),
/// on the machine that holds it (`machine` names it when the folder is on several).
pub(super) async fn orchestrate(
    app: &App,
    command: &str,
    project: Option<String>,
    machine: Option<String>,
) -> Response<Body> {
    let Some(parsed) = Command::parse(command) else {
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
    let body = json!({"command": command, "project": project});
    match forward_project(app, &project, machine.as_deref(), body).await {
        Ok(Some(answer)) | Err(answer) => answer,
        Ok(None) => respond(orchestrate_here(app, parsed, &project).await),
    }
}

/// Runs an orchestration command on a project of this machine.
async fn orchestrate_here(app: &App, command: Command, project: &str) -> Outcome {
    let project = match known_project(app, project).await {
        Ok(p) => p,
        Err(o) => return o,
    };
    let (token, addr) = (Some(app.token.clone()), Some(app.self_addr.clone()));
    let prices = app.prices_file.clone();
    let done =
        tokio::task::spawn_blocking(move || perform(&project, command, addr, token, prices)).await;
    match done {
        Ok(Ok(v)) => (StatusCode::OK, v),
        Ok(Err(e)) => {
            let status = match &e {
                ControlError::File(FileError::Corrupt { .. }) => StatusCode::UNPROCESSABLE_ENTITY,
                ControlError::File(FileError::Io { .. }) => StatusCode::INTERNAL_SERVER_ERROR,
                ControlError::File(_) | ControlError::NoOrchestration(_) => StatusCode::NOT_FOUND,
                ControlError::Refused(_) => StatusCode::CONFLICT,
            };
            fail(status, e)
        }
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// The body `start` takes, said in its refusals.
const LAUNCH_SHAPE: &str = "{\"project\": DIR, \"agent\": ID, \"machine\"?: NAME, \"auto_merge\"?: bool, \"budget\"?: dollars, \"pause_between_batches\"?: bool, \"max_heal_attempts\"?: N, \"restart_on_server_start\"?: bool}";

/// Starts a runner for a project (the dashboard's play button) on the machine that holds
/// the project: the machine of the agent named, else of the project's agents.
pub(super) async fn start_orchestration(app: &App, body: &[u8]) -> Response<Body> {
    let launch: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("body must be {LAUNCH_SHAPE}"),
            )
        }
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("body must be {LAUNCH_SHAPE}: {e}"),
            )
        }
    };
    let project = launch["project"].as_str().unwrap_or_default().to_string();
    // The agent named runs the steps: its machine holds the pane, so the runner runs there.
    let agent_machine = match launch["agent"].as_str().filter(|a| !a.trim().is_empty()) {
        Some(agent) => match super::agents::agent_view(app, agent).await {
            Ok(view) => Some(view.machine),
            Err(_) => None,
        },
        None => None,
    };
    let machine = launch["machine"]
        .as_str()
        .map(str::to_string)
        .or(agent_machine);
    let forwarded = json!({"command": "start", "launch": launch});
    match forward_project(app, &project, machine.as_deref(), forwarded).await {
        Ok(Some(answer)) | Err(answer) => answer,
        Ok(None) => respond(start_here(app, launch).await),
    }
}

/// Starts a runner for a project of this machine; it talks back to this server.
async fn start_here(app: &App, launch: Value) -> Outcome {
    let launch: Launch = match serde_json::from_value(launch) {
        Ok(l) => l,
        Err(e) => {
            return fail(
                StatusCode::BAD_REQUEST,
                format!("body must be {LAUNCH_SHAPE}: {e}"),
            )
        }
    };
    let launch = match known_project(app, &launch.project.to_string_lossy()).await {
        Ok(project) => Launch { project, ..launch },
        Err(o) => return o,
    };
    if launch.agent.trim().is_empty() || launch.agent.starts_with('-') {
        return fail(
            StatusCode::BAD_REQUEST,
            "name the agent that runs the steps",
        );
    }
    if launch.budget.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
        return fail(
            StatusCode::BAD_REQUEST,
            "the budget must be a positive number of dollars",
        );
    }
    // The runner talks back to this server at its own address, never one a request names.
    let link = RunnerLink {
        addr: &app.self_addr,
        token: Some(&app.token),
        prices: app.prices_file.as_deref(),
    };
    match spawn_runner(&launch, link) {
        Ok(pid) => (
            StatusCode::OK,
            json!({"status": "started", "pid": pid, "log": log_path(&launch.project), "machine": app.machine}),
        ),
        Err(e) => fail(StatusCode::BAD_REQUEST, e),
    }
}

/// Runs an orchestration command another server forwarded to this machine
/// (`{"command": "list" | "start" | NAME, "project"?, "launch"?}`).
pub(super) async fn orchestrate_forwarded(app: &App, body: &Value) -> Outcome {
    match body["command"].as_str().unwrap_or_default() {
        "list" => (StatusCode::OK, Value::Array(list_here(app).await)),
        "start" => start_here(app, body["launch"].clone()).await,
        name => match Command::parse(name) {
            Some(c) => orchestrate_here(app, c, body["project"].as_str().unwrap_or_default()).await,
            None => fail(
                StatusCode::BAD_REQUEST,
                format!("no orchestration command {name:?}"),
            ),
        },
    }
}

/// At the server's start-up: every run of a known agent's project whose runner is gone is
/// logged, and restarted when it was started with `--restart-on-server-start`.
pub async fn revive_runners(app: &App) {
    let Ok(projects) = agent_projects(app).await else {
        return;
    };
    let (token, addr) = (Some(app.token.clone()), app.self_addr.clone());
    let prices = app.prices_file.clone();
    let _ = tokio::task::spawn_blocking(move || {
        let link = RunnerLink {
            addr: &addr,
            token: token.as_deref(),
            prices: prices.as_deref(),
        };
        crate::orchestrate::revive::revive_at_start_up(projects.iter().map(PathBuf::as_path), link)
    })
    .await;
}
