//! What the user does to a run: start it, pause, resume, cancel, merge, confirm the
//! USER_GATE; and what the user asks: its status, and the decision the runner would take now.
//!
//! Every change is one locked read-modify-write of the files, logged in the decision log
//! with `"by": "user"`; a runner running elsewhere picks it up at its next iteration.

use super::live::{Settings, SETTINGS_KEY};
use super::project_files::{FileError, ProjectFiles, RunnerRecord};
use super::runner::{look_up, machine, Deps};
use headspace_core::orchestration::{
    evaluate, link_run, status_json, Decision, Effect, Input, OrchestrationExecution,
    OrchestrationState, RunOptions, UserCommand,
};
pub use headspace_core::orchestration::{fresh_state, DEFAULT_PHASE};
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Why a command could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// A file was missing, corrupt or unwritable.
    #[error(transparent)]
    File(#[from] FileError),
    /// The project has no orchestration to act on.
    #[error("no active orchestration in {} (start one with `headspace orchestrate start`)", .0.display())]
    NoOrchestration(PathBuf),
    /// The run is not in a state where this command makes sense.
    #[error("{0}")]
    Refused(String),
}

/// The options of a new run.
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// Merge without asking once verify is done.
    pub auto_merge: bool,
    /// The budget in dollars (specflow's default, 50, when none).
    pub budget: Option<f64>,
    /// Pause after each implement batch.
    pub pause_between_batches: bool,
    /// Heal attempts per batch and per step (specflow's default, 1, when none).
    pub max_heal_attempts: Option<u32>,
    /// The phase number for a project without a state file.
    pub phase: Option<String>,
    /// How workflows and the helper run.
    pub settings: Settings,
}

/// A new running run `id` for `state` (on its step) with `opts`.
pub fn new_execution(
    id: &str,
    state: Option<&OrchestrationState>,
    opts: &StartOptions,
    now_ms: i64,
) -> OrchestrationExecution {
    let settings = serde_json::to_value(opts.settings.clone().without_commands())
        .ok()
        .map(|v| (SETTINGS_KEY.to_string(), v));
    let run = RunOptions {
        auto_merge: opts.auto_merge,
        budget: opts.budget,
        pause_between_batches: opts.pause_between_batches,
        max_heal_attempts: opts.max_heal_attempts,
        settings,
    };
    headspace_core::orchestration::new_execution(id, state, &run, now_ms)
}

/// A new run id (a random UUID, as specflow's).
fn new_id() -> String {
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b));
    if read.is_err() {
        // No /dev/urandom: time and pid are unique enough for one project's runs.
        let seed = (super::live::now_ms() as u128) << 32 | u128::from(std::process::id());
        b = seed.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Starts a run, or returns the active one (`false`: nothing was created; its settings
/// become `opts.settings`, its other options stay). A project without
/// a state file gets a fresh one (design, not started); a corrupt one is left to the runner's
/// recovery, which backs it up first.
pub fn start(
    deps: &dyn Deps,
    opts: &StartOptions,
) -> Result<(OrchestrationExecution, bool), ControlError> {
    let _guard = deps.lock()?;
    if let Some(mut e) = deps.files().find_execution(false)? {
        // Continuing: the workflows run as this start says from now on.
        if let Ok(v) = serde_json::to_value(opts.settings.clone().without_commands()) {
            e.config.extra.insert(SETTINGS_KEY.into(), v);
            deps.write_execution(&e)?;
        }
        return Ok((e, false));
    }
    let now = deps.now_ms();
    let id = new_id();
    let state = match deps.read_state() {
        Ok(mut s) => {
            link_run(&mut s, &id, now);
            deps.write_state(&s)?;
            Some(s)
        }
        Err(FileError::Missing(_)) => {
            let s = fresh_state(opts.phase.as_deref().unwrap_or(DEFAULT_PHASE));
            deps.write_state(&s)?;
            Some(s)
        }
        Err(e) if e.is_recoverable() => None,
        Err(e) => return Err(e.into()),
    };
    let exec = new_execution(&id, state.as_ref(), opts, now);
    deps.write_execution(&exec)?;
    Ok((exec, true))
}

/// Carries out user `command` on the active run: under the lock, the files are read and fed
/// to the orchestration machine, whose effects are carried out (the writes, then, once the
/// lock is released, stopping a cancelled run's workflow).
fn change(deps: &dyn Deps, command: UserCommand) -> Result<OrchestrationExecution, ControlError> {
    let mut lock = Some(deps.lock()?);
    let execution = deps
        .files()
        .find_execution(false)?
        .ok_or_else(|| ControlError::NoOrchestration(deps.files().dir().to_path_buf()))?;
    let state = deps.read_state()?;
    let mut machine = machine(deps);
    machine.handle(
        deps.now_ms(),
        Input::User {
            command,
            state,
            execution,
        },
    );
    while let Some(effect) = machine.poll_effect() {
        match effect {
            Effect::WriteState(s) => deps.write_state(&s)?,
            Effect::WriteExecution(e) => deps.write_execution(&e)?,
            Effect::Unlock => lock = None,
            Effect::Kill(wf) => deps.kill(&wf),
            Effect::UserAnswer(answer) => return answer.map_err(ControlError::Refused),
            _ => {}
        }
    }
    drop(lock);
    Err(ControlError::Refused("the command gave no answer".into()))
}

/// Pauses a running (or waiting) run.
pub fn pause(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, UserCommand::Pause)
}

/// Resumes a paused run, or one that needs attention (the user has seen to it: its recovery
/// context and spawn-failure count are cleared).
pub fn resume(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, UserCommand::Resume)
}

/// Cancels the run and stops its current workflow.
pub fn cancel(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, UserCommand::Cancel)
}

/// Merges a run waiting for the user's merge: moves it to the merge step; the runner then
/// spawns `/flow.merge`.
pub fn merge(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, UserCommand::Merge)
}

/// Confirms the phase's USER_GATE, so that merging may go ahead.
pub fn confirm_gate(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, UserCommand::ConfirmGate)
}

/// Unblocks the tasks the run skips (the helper's "skip tasks"), so later batches include
/// them again.
pub fn unblock(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, UserCommand::Unblock)
}

/// The decision the runner would take now, without acting or writing anything (not even
/// the lock file). A clean slate (no state, no run) is judged as `start` would leave it; a
/// state without a run, against the run `start` would create. A missing state with a run,
/// or a corrupt file, is an error naming the file.
pub fn decide_now(deps: &dyn Deps) -> Result<Decision, ControlError> {
    let files = deps.files();
    let mut exec = files.find_execution(false)?;
    let now = deps.now_ms();
    let mut state = match (files.read_state(), &exec) {
        (Ok(s), _) => s,
        (Err(FileError::Missing(_)), None) => fresh_state(DEFAULT_PHASE),
        (Err(e), _) => return Err(e.into()),
    };
    if exec.is_none() {
        // The seed's loop ends with the run the state still links (cancelled, completed or
        // failed): judged as it is, it stops, instead of looking like a fresh start.
        exec = files
            .find_execution(true)?
            .filter(|e| linked_run_id(&state).as_deref() == Some(e.id.as_str()));
    }
    let mut exec = exec.unwrap_or_else(|| {
        new_execution("(not started)", Some(&state), &StartOptions::default(), now)
    });
    let view = look_up(deps, &state, &exec);
    Ok(evaluate(&mut state, &mut exec, view.as_ref(), now))
}

/// The run the project state links (`orchestration.dashboard.active.id`), if any.
fn linked_run_id(state: &OrchestrationState) -> Option<String> {
    state.orchestration.extra.get("dashboard")?["active"]["id"]
        .as_str()
        .map(str::to_string)
}

/// The run's status as JSON: `{"id", "status", "startedAt", "phase", "step", "batches",
/// "costUsd", "budgetUsd", "workflow", "runner", "runnerGone", "recoveryContext",
/// "blockedTasks", "stateError", "decisions", "pastRuns"}` (the last 10 decisions; the
/// project's other runs). The newest finished run when
/// none is active.
pub fn status(deps: &dyn Deps) -> Result<Value, ControlError> {
    let files = deps.files();
    let exec = files
        .find_execution(true)?
        .ok_or_else(|| ControlError::NoOrchestration(files.dir().to_path_buf()))?;
    // A broken state file is shown, not fatal: the run's own file still says a lot.
    let (state, state_error) = match files.read_state() {
        Ok(s) => (s, None),
        Err(e) => (OrchestrationState::default(), Some(e.to_string())),
    };
    let view = look_up(deps, &state, &exec);
    let record = runner_record(files, &exec.id);
    let runner = record.as_ref().map(|r| json!({"pid": r.pid, "startedAt": Timestamp(r.started_at).to_string(), "alive": r.is_alive()}));
    let mut v = status_json(&exec, &state, state_error, view.as_ref(), runner);
    v["runnerGone"] = json!(runner_gone(files, &exec));
    // The agent that runs the steps (agent mode): the panel shows what it asks.
    v["agent"] = json!(super::live::Settings::of(&exec).agent);
    v["pastRuns"] = Value::Array(past_runs(files, &exec.id));
    Ok(v)
}

/// How many of a past run's decisions [`past_runs`] gives: its last 50.
pub const PAST_RUN_DECISIONS: usize = 50;

/// The project's other runs, newest first (at most 10): `{"id", "status", "startedAt",
/// "completedAt", "costUsd", "budgetUsd", "error", "lastDecision", "decisions"}`, the
/// decisions being the last [`PAST_RUN_DECISIONS`] of its log, oldest first.
pub fn past_runs(files: &ProjectFiles, except: &str) -> Vec<Value> {
    files
        .executions()
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .filter(|e| e.id != except)
        .take(10)
        .map(|e| {
            json!({
                "id": e.id,
                "status": e.status,
                "startedAt": e.started_at,
                "completedAt": e.completed_at,
                "costUsd": e.total_cost_usd,
                "budgetUsd": e.config.budget.max_total,
                "error": e.error_message,
                "lastDecision": e.decision_log.last(),
                "decisions": &e.decision_log[e.decision_log.len().saturating_sub(PAST_RUN_DECISIONS)..],
            })
        })
        .collect()
}

/// The record of the process that runs orchestration `id`, if there is one.
pub fn runner_record(files: &ProjectFiles, id: &str) -> Option<RunnerRecord> {
    super::project_files::read_json::<RunnerRecord>(&files.runner_path(id), "runner record").ok()
}

/// Whether `exec` is a run still under way whose runner is gone: no record, or its process
/// has ended (or is another process now). Nothing drives such a run until it is resumed.
pub fn runner_gone(files: &ProjectFiles, exec: &OrchestrationExecution) -> bool {
    !exec.status.is_finished() && !runner_record(files, &exec.id).is_some_and(|r| r.is_alive())
}
