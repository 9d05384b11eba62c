//! The orchestration commands other than `start`, as one call the CLI and the server's
//! routes share: open the project, use the run's stored settings, carry the command out,
//! and answer with JSON.

use super::control::{self, ControlError};
use super::live::{LiveDeps, Settings};
use super::project_files::ProjectFiles;
use headspace_core::orchestration::ExecutionStatus;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A command on a project's orchestration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Phase, step, batches, cost against budget, and the last decisions.
    Status,
    /// The decision the runner would take now; nothing is written.
    Decide,
    /// Pause the run.
    Pause,
    /// Resume a paused run, or one that needs attention.
    Resume,
    /// Cancel the run.
    Cancel,
    /// Merge a run that waits for the user's merge.
    Merge,
    /// Confirm the phase's user gate.
    ConfirmGate,
    /// Unblock the tasks the run skips.
    Unblock,
}

impl Command {
    /// Every command, by the name the CLI and the routes use.
    pub const ALL: [Command; 8] = [
        Command::Status,
        Command::Decide,
        Command::Pause,
        Command::Resume,
        Command::Cancel,
        Command::Merge,
        Command::ConfirmGate,
        Command::Unblock,
    ];

    /// Its name: `status`, `decide`, `pause`, `resume`, `cancel`, `merge`, `confirm-gate`,
    /// `unblock`.
    pub fn name(self) -> &'static str {
        match self {
            Command::Status => "status",
            Command::Decide => "decide",
            Command::Pause => "pause",
            Command::Resume => "resume",
            Command::Cancel => "cancel",
            Command::Merge => "merge",
            Command::ConfirmGate => "confirm-gate",
            Command::Unblock => "unblock",
        }
    }

    /// The command of a name.
    pub fn parse(name: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether it only reads (status and decide write nothing, not even the lock).
    pub fn read_only(self) -> bool {
        matches!(self, Command::Status | Command::Decide)
    }
}

/// Carries out `command` on the orchestration of `project`. `addr` overrides the server the
/// run's agent steps talk to. The answer: the status object for `status`, the decision for
/// `decide`, `{"id", "status"}` for the others.
pub fn perform(
    project: &Path,
    command: Command,
    addr: Option<String>,
    token: Option<String>,
    prices: Option<PathBuf>,
) -> Result<Value, ControlError> {
    let files = ProjectFiles::open(project)?;
    let stored = files
        .find_execution(true)?
        .map(|e| Settings::of(&e))
        .unwrap_or_default();
    let settings = stored.overridden_by(&Settings {
        addr,
        ..Default::default()
    });
    let addr_for_runner = settings.addr.clone();
    let token_for_runner = token.clone();
    let deps = LiveDeps::new(files, &settings, token, command.read_only());
    let changed = |r: Result<
        headspace_core::orchestration::OrchestrationExecution,
        ControlError,
    >| { r.map(|e| json!({"id": e.id, "status": e.status})) };
    match command {
        Command::Status => control::status(&deps),
        Command::Decide => {
            control::decide_now(&deps).map(|d| serde_json::to_value(d).unwrap_or(Value::Null))
        }
        Command::Pause => changed(control::pause(&deps)),
        Command::Resume => resume(
            &deps,
            project,
            addr_for_runner.as_deref(),
            token_for_runner.as_deref(),
            prices.as_deref(),
        ),
        Command::Cancel => changed(control::cancel(&deps)),
        Command::Merge => changed(control::merge(&deps)),
        Command::ConfirmGate => changed(control::confirm_gate(&deps)),
        Command::Unblock => changed(control::unblock(&deps)),
    }
}

/// Resume: a paused run, or one that needs attention, runs again; and a run whose runner is
/// gone gets a new one (talking to `addr`, default 127.0.0.1:5055), whatever its status.
/// The answer adds `"runner": PID` when one was started, `"runnerError"` when starting one
/// failed after the run was resumed.
fn resume(
    deps: &LiveDeps,
    project: &Path,
    addr: Option<&str>,
    token: Option<&str>,
    prices: Option<&Path>,
) -> Result<Value, ControlError> {
    use super::runner::Deps;
    let files = deps.files();
    let exec = files
        .find_execution(false)?
        .ok_or_else(|| ControlError::NoOrchestration(files.dir().to_path_buf()))?;
    let gone = control::runner_gone(files, &exec);
    let waits_for_user = matches!(
        exec.status,
        ExecutionStatus::Paused | ExecutionStatus::NeedsAttention
    );
    let exec = if waits_for_user || !gone {
        control::resume(deps)?
    } else {
        exec
    };
    let mut answer = json!({"id": exec.id, "status": exec.status});
    // A run with no stored way to run its steps (an agent or headless) is only resumed in
    // its file: `start` gives it one.
    if gone && super::revive::relaunch(project, &exec).is_some() {
        let addr = addr.unwrap_or(crate::config::DEFAULT_ADDR);
        let link = super::launch::RunnerLink {
            addr,
            token,
            prices,
        };
        match super::revive::restart(project, &exec, link) {
            Ok(pid) => answer["runner"] = json!(pid),
            // The file may have changed already: the answer says what did not happen.
            Err(e) if waits_for_user => answer["runnerError"] = json!(e),
            Err(e) => return Err(ControlError::Refused(e)),
        }
    }
    Ok(answer)
}
