//! `headspace orchestrate …`: the orchestration runner's commands (start, status, pause,
//! resume, cancel, merge, confirm-gate, decide) as the command line gives them.

use super::output::outln;
use crate::cli::TokenArgs;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `headspace orchestrate` does.
#[derive(Subcommand)]
pub(crate) enum OrchestrateAction {
    /// Start the project's orchestration (or continue the active one) and run it until it is
    /// over.
    Start(Box<StartArgs>),
    /// Phase, step, batches, cost against budget, and the last decisions.
    Status {
        #[command(flatten)]
        project: ProjectArgs,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Pause the run; the runner waits until `resume`.
    Pause {
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Resume a paused run, or one that needs attention.
    Resume {
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Cancel the run and stop its current workflow.
    Cancel {
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Merge a run waiting for the user's merge (auto-merge off).
    Merge {
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Confirm the phase's USER_GATE so that merging may go ahead.
    ConfirmGate {
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Unblock the tasks the run skips (a helper's "skip tasks"), so later batches include them.
    Unblock {
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Print the decision the runner would take now, as JSON, without acting or writing.
    Decide {
        #[command(flatten)]
        project: ProjectArgs,
    },
}

/// The project, and the server its agent-run workflows go through.
#[derive(clap::Args)]
pub(crate) struct ProjectArgs {
    /// The project folder (the one holding `.specflow/`).
    #[arg(long)]
    project: PathBuf,
    /// The Headspace server (default 127.0.0.1:5055; never an address from the project's
    /// files, which anyone who wrote the repository controls).
    #[arg(long, env = "HEADSPACE_ADDR")]
    addr: Option<String>,
    #[command(flatten)]
    auth: TokenArgs,
}

/// `orchestrate start`'s options.
#[derive(clap::Args)]
pub(crate) struct StartArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// The agent that runs each step: agent id, Claude session id or pane id (`%3`).
    #[arg(long)]
    agent: Option<String>,
    /// Run each step as a headless process instead of in an agent's pane.
    #[arg(long, conflicts_with = "agent")]
    headless: bool,
    /// The headless command; the prompt is added as its last argument.
    #[arg(long, env = "HEADSPACE_HEADLESS_CMD", default_value = headspace::orchestrate::steps::DEFAULT_HEADLESS)]
    headless_cmd: String,
    /// The helper model's command, asked only about a corrupt state, a stale workflow or a
    /// failed step (e.g. `claude -p --output-format json`); without one the fallbacks run.
    #[arg(long, env = "HEADSPACE_HELPER_CMD")]
    helper_cmd: Option<String>,
    /// Merge automatically once verify is done.
    #[arg(long)]
    auto_merge: bool,
    /// The most the run may cost, in dollars (default 50).
    #[arg(long)]
    budget: Option<f64>,
    /// Pause after each implement batch.
    #[arg(long)]
    pause_between_batches: bool,
    /// Heal attempts per batch and per step (default 1).
    #[arg(long)]
    max_heal_attempts: Option<u32>,
    /// The phase number for a project without a state file (default 0001).
    #[arg(long)]
    phase: Option<String>,
    /// Seconds between looks when nothing wakes the runner.
    #[arg(long, env = "HEADSPACE_ORCHESTRATE_POLL", default_value_t = 5.0)]
    poll: f64,
    /// Claude's folder (headless activity is read from its transcripts).
    #[arg(long, env = "HEADSPACE_CLAUDE_DIR")]
    claude_dir: Option<PathBuf>,
    /// A price file (JSON, model → dollars per million tokens) whose entries replace the
    /// shipped table's; an agent's step is priced from its transcript's `usage` with it.
    #[arg(long, env = "HEADSPACE_PRICES")]
    prices: Option<PathBuf>,
    /// Do not send /clear to the agent before each step.
    #[arg(long)]
    no_clear: bool,
    /// Restart this run's runner when the Headspace server starts and finds it gone.
    #[arg(long)]
    restart_on_server_start: bool,
}

/// Exit code for a missing project or a missing, corrupt or unwritable file.
const EXIT_FILES: u8 = 2;

pub(crate) fn orchestrate(action: OrchestrateAction) -> ExitCode {
    use headspace::orchestrate::control;
    let (name, project) = match &action {
        OrchestrateAction::Start(a) => ("start", &a.project),
        OrchestrateAction::Status { project, .. } => ("status", project),
        OrchestrateAction::Pause { project } => ("pause", project),
        OrchestrateAction::Resume { project } => ("resume", project),
        OrchestrateAction::Cancel { project } => ("cancel", project),
        OrchestrateAction::Merge { project } => ("merge", project),
        OrchestrateAction::ConfirmGate { project } => ("confirm-gate", project),
        OrchestrateAction::Decide { project } => ("decide", project),
        OrchestrateAction::Unblock { project } => ("unblock", project),
    };
    let fail = |e: &dyn std::fmt::Display, code: u8| {
        eprintln!("headspace orchestrate {name}: {e}");
        ExitCode::from(code)
    };
    let files = match headspace::orchestrate::project_files::ProjectFiles::open(&project.project) {
        Ok(f) => f,
        Err(e) => return fail(&e, EXIT_FILES),
    };
    if let OrchestrateAction::Start(a) = action {
        return orchestrate_start(*a, files);
    }
    use headspace::orchestrate::command::{perform, Command};
    let (command, json) = match action {
        OrchestrateAction::Start(_) => unreachable!("handled above"),
        OrchestrateAction::Status { json, .. } => (Command::Status, json),
        OrchestrateAction::Decide { .. } => (Command::Decide, true),
        OrchestrateAction::Pause { .. } => (Command::Pause, false),
        OrchestrateAction::Resume { .. } => (Command::Resume, false),
        OrchestrateAction::Cancel { .. } => (Command::Cancel, false),
        OrchestrateAction::Merge { .. } => (Command::Merge, false),
        OrchestrateAction::ConfirmGate { .. } => (Command::ConfirmGate, false),
        OrchestrateAction::Unblock { .. } => (Command::Unblock, false),
    };
    drop(files);
    match perform(
        &project.project,
        command,
        project.addr.clone(),
        project.auth.get(),
        // A runner the command line starts inherits this process's HEADSPACE_PRICES.
        None,
    ) {
        Ok(v) if json => {
            outln!("{v}");
            ExitCode::SUCCESS
        }
        Ok(v) if command == Command::Status => {
            print_status(&v);
            ExitCode::SUCCESS
        }
        Ok(v) => {
            outln!(
                "orchestration {}: {}",
                v["id"].as_str().unwrap_or("-"),
                v["status"].as_str().unwrap_or("-")
            );
            ExitCode::SUCCESS
        }
        Err(e @ control::ControlError::File(_)) => fail(&e, EXIT_FILES),
        Err(e) => fail(&e, 1),
    }
}

/// `orchestrate status` as text.
fn print_status(v: &serde_json::Value) {
    let s = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    };
    // A run nothing drives is not shown as running.
    let shown = if v["runnerGone"] == true {
        format!("{}, runner gone (resume restarts it)", s(&v["status"]))
    } else {
        s(&v["status"])
    };
    outln!(
        "orchestration {}: {shown} (started {})",
        s(&v["id"]),
        s(&v["startedAt"])
    );
    outln!(
        "phase {}  step {} ({}/5) {}",
        s(&v["phase"]["number"]),
        s(&v["step"]["current"]),
        v["step"]["index"]
            .as_i64()
            .map_or("-".into(), |i| (i + 1).to_string()),
        s(&v["step"]["status"])
    );
    if let Some(e) = v["step"]["error"].as_str() {
        outln!("  error: {e}");
    }
    if let Some(e) = v["stateError"].as_str() {
        outln!("state file: {e}");
    }
    let items = v["batches"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !items.is_empty() {
        let done = items
            .iter()
            .filter(|b| matches!(b["status"].as_str(), Some("completed" | "healed")))
            .count();
        outln!(
            "batches: {done}/{} done, current {}",
            items.len(),
            s(&v["batches"]["current"])
        );
        for b in &items {
            outln!(
                "  {} {:<10} {}",
                s(&b["index"]),
                s(&b["status"]),
                s(&b["section"])
            );
        }
    }
    outln!(
        "cost: ${:.2} of ${:.2}",
        v["costUsd"].as_f64().unwrap_or(0.0),
        v["budgetUsd"].as_f64().unwrap_or(0.0)
    );
    if v["workflow"].is_object() {
        outln!(
            "workflow: {} {}",
            s(&v["workflow"]["id"]),
            s(&v["workflow"]["status"])
        );
    }
    match v["runner"].as_object() {
        Some(r) if r.get("alive") == Some(&serde_json::Value::Bool(true)) => {
            outln!("runner: pid {}", s(&r["pid"]))
        }
        Some(r) => outln!(
            "runner: pid {} is gone (start continues the run)",
            s(&r["pid"])
        ),
        None => outln!("runner: none (start continues the run)"),
    }
    if let Some(rc) = v["recoveryContext"].as_object() {
        outln!("needs attention: {}", s(&rc["issue"]));
    }
    let blocked: Vec<String> = v["blockedTasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| s(&b["task"]))
        .collect();
    if !blocked.is_empty() {
        outln!(
            "blocked tasks: {} (unblock includes them again)",
            blocked.join(", ")
        );
    }
    outln!("last decisions:");
    for d in v["decisions"].as_array().into_iter().flatten() {
        outln!(
            "  {} {:<20} {}",
            s(&d["timestamp"]),
            s(&d["decision"]),
            s(&d["reason"])
        );
    }
}

fn orchestrate_start(
    a: StartArgs,
    files: headspace::orchestrate::project_files::ProjectFiles,
) -> ExitCode {
    use headspace::orchestrate::{control, live, runner};
    let fail = |e: &dyn std::fmt::Display, code: u8| {
        eprintln!("headspace orchestrate start: {e}");
        ExitCode::from(code)
    };
    let given = live::Settings {
        agent: a.agent.clone(),
        addr: a.project.addr.clone(),
        headless: a.headless.then(|| live::Settings::words(&a.headless_cmd)),
        helper: a.helper_cmd.as_deref().map(live::Settings::words),
        claude_dir: a.claude_dir.clone(),
        prices: a.prices.clone(),
        no_clear: a.no_clear,
        restart_on_server_start: a.restart_on_server_start,
    };
    let settings = match files.find_execution(false) {
        Ok(Some(e)) => {
            // Refused before anything is changed when another live runner drives it.
            match files.reconcile_runners() {
                Ok(alive) => {
                    if let Some(r) = alive.iter().find(|r| r.orchestration_id == e.id) {
                        return fail(
                            &format!("orchestration {} is already run by process {}", e.id, r.pid),
                            1,
                        );
                    }
                }
                Err(err) => return fail(&err, EXIT_FILES),
            }
            live::Settings::of(&e).overridden_by(&given)
        }
        Ok(None) => given,
        Err(e) => return fail(&e, EXIT_FILES),
    };
    if settings.agent.is_none() && settings.headless.is_none() {
        return fail(
            &"give --agent AGENT (each step is typed into that agent's pane) or --headless",
            1,
        );
    }
    let deps = std::sync::Arc::new(live::LiveDeps::new(
        files.clone(),
        &settings,
        a.project.auth.get(),
        false,
    ));
    let opts = control::StartOptions {
        auto_merge: a.auto_merge,
        budget: a.budget,
        pause_between_batches: a.pause_between_batches,
        max_heal_attempts: a.max_heal_attempts,
        phase: a.phase.clone(),
        settings,
    };
    let (exec, created) = match control::start(&*deps, &opts) {
        Ok(x) => x,
        Err(e @ control::ControlError::File(_)) => return fail(&e, EXIT_FILES),
        Err(e) => return fail(&e, 1),
    };
    let id = exec.id.clone();
    outln!(
        "orchestration {id} {} in {}",
        if created { "started" } else { "continued" },
        files.dir().display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let wake = runner::Wake::new();
    let _watcher = live::watch_project(&files, wake.clone());
    // Between 50 ms and an hour; `inf` or `NaN` must not panic.
    let poll = std::time::Duration::try_from_secs_f64(a.poll.clamp(0.05, 3_600.0))
        .unwrap_or(std::time::Duration::from_secs(5));
    let deps: std::sync::Arc<dyn runner::Deps> = deps;
    let outcome = rt.block_on(async {
        tokio::select! {
            r = runner::run(deps, &id, &wake, poll, |it| {
                if it.logged {
                    outln!("{} {}: {}", headspace_core::Timestamp(headspace::orchestrate::live::now_ms()), it.decision.action.as_str(), it.decision.reason);
                }
            }) => Some(r),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    match outcome {
        None => {
            // An iteration in flight is abandoned: each write is atomic, and a spawn intent
            // left behind expires after 30 s.
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
            let _ = files.clear_runner(&id);
            eprintln!("interrupted: the run stays as it is; `headspace orchestrate start --project {}` continues it", files.dir().display());
            ExitCode::from(130)
        }
        Some(Ok(_)) => {
            use headspace_core::orchestration::ExecutionStatus;
            match files.read_execution(&id) {
                Ok(e) => {
                    outln!("orchestration {id}: {}", e.status);
                    match e.status {
                        ExecutionStatus::Completed | ExecutionStatus::Cancelled => {
                            ExitCode::SUCCESS
                        }
                        _ => ExitCode::FAILURE,
                    }
                }
                Err(e) => {
                    outln!("orchestration {id}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Err(e)) => fail(&e, 1),
    }
}
