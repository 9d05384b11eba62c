//! The orchestration commands other than `start`, as one call the CLI and the server's
//! routes share: open the project, use the run's stored settings, carry the command out,
//! and answer with JSON.

use super::control::{self, ControlError};
use super::live::{LiveDeps, Settings};
use super::project_files::ProjectFiles;
use serde_json::{json, Value};
use std::path::Path;

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
}

impl Command {
    /// Every command, by the name the CLI and the routes use.
    pub const ALL: [Command; 7] = [
        Command::Status,
        Command::Decide,
        Command::Pause,
        Command::Resume,
        Command::Cancel,
        Command::Merge,
        Command::ConfirmGate,
    ];

    /// Its name: `status`, `decide`, `pause`, `resume`, `cancel`, `merge`, `confirm-gate`.
    pub fn name(self) -> &'static str {
        match self {
            Command::Status => "status",
            Command::Decide => "decide",
            Command::Pause => "pause",
            Command::Resume => "resume",
            Command::Cancel => "cancel",
            Command::Merge => "merge",
            Command::ConfirmGate => "confirm-gate",
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
        Command::Resume => changed(control::resume(&deps)),
        Command::Cancel => changed(control::cancel(&deps)),
        Command::Merge => changed(control::merge(&deps)),
        Command::ConfirmGate => changed(control::confirm_gate(&deps)),
    }
}
