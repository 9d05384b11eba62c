//! What the user does to a run: start it, pause, resume, cancel, merge, confirm the
//! USER_GATE; and what the user asks: its status, and the decision the runner would take now.
//!
//! Every change is one locked read-modify-write of the files, logged in the decision log
//! with `"by": "user"`; a runner running elsewhere picks it up at its next iteration.

use super::files::FileError;
use super::live::{Settings, SETTINGS_KEY};
use super::runner::{evaluate, log, look_up, Deps, PHASE_KEY, SPAWN_FAILURES_KEY};
use headspace_core::orchestration::{
    apply, apply_to_state, Action, Decision, ExecutionPhase, ExecutionStatus,
    OrchestrationExecution, OrchestrationState, Step, StepStatus, UserGateStatus,
};
use headspace_core::Timestamp;
use serde_json::{json, Map, Value};
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

/// The phase number used for a project without a state file when none is given.
pub const DEFAULT_PHASE: &str = "0001";

/// The state of a clean slate: phase `number`, design not started.
pub fn fresh_state(number: &str) -> OrchestrationState {
    serde_json::from_value(json!({
        "schema_version": "3.0",
        "orchestration": {
            "phase": {"number": number, "name": null, "status": "in_progress"},
            "step": {"current": "design", "index": 0, "status": "not_started"}
        }
    }))
    .unwrap_or_default()
}

/// A new running run `id` for `state` (on its step) with `opts`.
pub fn new_execution(
    id: &str,
    state: Option<&OrchestrationState>,
    opts: &StartOptions,
    now_ms: i64,
) -> OrchestrationExecution {
    let mut e = OrchestrationExecution::new(id, Timestamp(now_ms));
    e.config.auto_merge = opts.auto_merge;
    e.config.pause_between_batches = opts.pause_between_batches;
    if let Some(b) = opts.budget {
        e.config.budget.max_total = b;
    }
    if let Some(m) = opts.max_heal_attempts {
        e.config.max_heal_attempts = m;
    }
    e.config.extra.insert("batchSizeFallback".into(), json!(15));
    if let Ok(v) = serde_json::to_value(opts.settings.clone().without_commands()) {
        e.config.extra.insert(SETTINGS_KEY.into(), v);
    }
    if let Some(s) = state {
        if let Some(step) = s
            .orchestration
            .step
            .current
            .as_ref()
            .filter(|s| s.is_known())
        {
            e.current_phase = Some(ExecutionPhase::from(step));
        }
        if let Ok(v) = serde_json::to_value(&s.orchestration.phase) {
            e.extra.insert(PHASE_KEY.into(), v);
        }
    }
    e
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
            // Links the run from the state, as specflow's dashboard does.
            s.orchestration.extra.insert(
                "dashboard".into(),
                json!({"active": {"id": id, "startedAt": Timestamp(now).to_string(), "status": "running"}}),
            );
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

/// Runs `f` on the active run (and the state) under the lock and writes what changed.
fn change(
    deps: &dyn Deps,
    f: impl FnOnce(
        &mut OrchestrationState,
        &mut OrchestrationExecution,
        i64,
    ) -> Result<(), ControlError>,
) -> Result<OrchestrationExecution, ControlError> {
    let _guard = deps.lock()?;
    let mut exec = deps
        .files()
        .find_execution(false)?
        .ok_or_else(|| ControlError::NoOrchestration(deps.files().dir().to_path_buf()))?;
    let mut state = deps.read_state()?;
    let before = state.clone();
    let now = deps.now_ms();
    f(&mut state, &mut exec, now)?;
    // The user looked at the run: the 4-hour gate counts from here.
    exec.extra.insert(
        headspace_core::orchestration::USER_ACTED_KEY.into(),
        json!(Timestamp(now).to_string()),
    );
    if state != before {
        deps.write_state(&state)?;
    }
    deps.write_execution(&exec)?;
    Ok(exec)
}

fn by_user() -> Option<Map<String, Value>> {
    let mut m = Map::new();
    m.insert("by".into(), json!("user"));
    Some(m)
}

fn refuse(exec: &OrchestrationExecution, what: &str) -> ControlError {
    ControlError::Refused(format!(
        "cannot {what}: orchestration {} is {}",
        exec.id, exec.status
    ))
}

/// Pauses a running (or waiting) run.
pub fn pause(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, |_, e, now| {
        if matches!(
            e.status,
            ExecutionStatus::Paused | ExecutionStatus::NeedsAttention
        ) {
            return Err(refuse(e, "pause"));
        }
        e.status = ExecutionStatus::Paused;
        log(e, "pause", "Paused by the user", by_user(), now);
        Ok(())
    })
}

/// Resumes a paused run, or one that needs attention (the user has seen to it: its recovery
/// context and spawn-failure count are cleared).
pub fn resume(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, |_, e, now| {
        if !matches!(
            e.status,
            ExecutionStatus::Paused | ExecutionStatus::NeedsAttention
        ) {
            return Err(refuse(e, "resume"));
        }
        e.status = ExecutionStatus::Running;
        e.recovery_context = None;
        e.extra.remove(SPAWN_FAILURES_KEY);
        log(e, "resume", "Resumed by the user", by_user(), now);
        Ok(())
    })
}

/// Cancels the run and stops its current workflow.
pub fn cancel(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    let mut workflow = None;
    let exec = change(deps, |s, e, now| {
        workflow = s
            .orchestration
            .step
            .current
            .as_ref()
            .and_then(|step| headspace_core::orchestration::linked_workflow_id(e, step))
            .map(str::to_string);
        e.status = ExecutionStatus::Cancelled;
        log(e, "cancel", "Cancelled by the user", by_user(), now);
        Ok(())
    })?;
    if let Some(wf) = workflow {
        deps.kill(&wf);
    }
    Ok(exec)
}

/// Merges a run waiting for the user's merge: moves it to the merge step; the runner then
/// spawns `/flow.merge`.
pub fn merge(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, |s, e, now| {
        let verify_done = s.orchestration.step.current == Some(Step::Verify)
            && s.orchestration.step.status.get() == Some(&StepStatus::Complete);
        let may_merge =
            e.status == ExecutionStatus::WaitingMerge || (verify_done && !e.status.is_finished());
        if !may_merge {
            return Err(refuse(e, "merge (verify is not complete)"));
        }
        if s.orchestration.phase.gate_blocks() {
            return Err(ControlError::Refused(
                "cannot merge: the phase's USER_GATE is not confirmed (run `orchestrate confirm-gate` first)".into(),
            ));
        }
        let mut d = Decision::new(Action::Transition, "Merge requested by the user");
        d.next_index = Step::Merge.index();
        d.next_step = Some(Step::Merge);
        apply(e, &d, now);
        apply_to_state(s, &d);
        if let Some(entry) = e.decision_log.last_mut() {
            entry.extra.insert("by".into(), json!("user"));
        }
        Ok(())
    })
}

/// Confirms the phase's USER_GATE, so that merging may go ahead.
pub fn confirm_gate(deps: &dyn Deps) -> Result<OrchestrationExecution, ControlError> {
    change(deps, |s, e, now| {
        if s.orchestration.phase.has_user_gate != Some(true) {
            return Err(ControlError::Refused(
                "the current phase has no USER_GATE to confirm".into(),
            ));
        }
        s.orchestration.phase.user_gate_status = Some(UserGateStatus::Confirmed);
        if e.status == ExecutionStatus::WaitingUserGate {
            e.status = ExecutionStatus::Running;
        }
        log(
            e,
            "confirm_gate",
            "USER_GATE confirmed by the user",
            by_user(),
            now,
        );
        Ok(())
    })
}

/// The decision the runner would take now, without acting or writing anything (not even
/// the lock file). A clean slate (no state, no run) is judged as `start` would leave it; a
/// state without a run, against the run `start` would create. A missing state with a run,
/// or a corrupt file, is an error naming the file.
pub fn decide_now(deps: &dyn Deps) -> Result<Decision, ControlError> {
    let files = deps.files();
    let exec = files.find_execution(false)?;
    let now = deps.now_ms();
    let mut state = match (files.read_state(), &exec) {
        (Ok(s), _) => s,
        (Err(FileError::Missing(_)), None) => fresh_state(DEFAULT_PHASE),
        (Err(e), _) => return Err(e.into()),
    };
    let mut exec = exec.unwrap_or_else(|| {
        new_execution("(not started)", Some(&state), &StartOptions::default(), now)
    });
    let view = look_up(deps, &state, &exec);
    Ok(evaluate(&mut state, &mut exec, view.as_ref(), now))
}

/// The run's status as JSON: `{"id", "status", "startedAt", "phase", "step", "batches",
/// "costUsd", "budgetUsd", "workflow", "runner", "recoveryContext", "stateError",
/// "decisions"}` (the last 10). The newest finished run when none is active.
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
    let runner = super::files::read_json::<super::files::RunnerRecord>(
        &files.runner_path(&exec.id),
        "runner record",
    )
    .ok()
    .map(|r| json!({"pid": r.pid, "startedAt": Timestamp(r.started_at).to_string(), "alive": super::files::pid_alive(r.pid)}));
    let o = &state.orchestration;
    let skip = exec.decision_log.len().saturating_sub(10);
    Ok(json!({
        "id": exec.id,
        "status": exec.status,
        "startedAt": exec.started_at,
        "phase": {"number": o.phase.number.get(), "name": o.phase.extra.get("name")},
        "step": {"current": o.step.current, "index": o.step.index, "status": o.step.status.get(), "error": o.step.error},
        "batches": {
            "total": exec.batches.total,
            "current": exec.batches.current,
            "items": exec.batches.items.iter().map(|b| json!({
                "index": b.index, "section": b.section, "status": b.status, "healAttempts": b.heal_attempts
            })).collect::<Vec<_>>(),
        },
        "costUsd": exec.total_cost_usd,
        "budgetUsd": exec.config.budget.max_total,
        "workflow": view,
        "runner": runner,
        "recoveryContext": exec.recovery_context,
        "stateError": state_error,
        "decisions": &exec.decision_log[skip..],
    }))
}
