//! What the user does to a run, as rules on the two files: pause, resume, cancel, merge,
//! confirm the USER_GATE; the files of a new run; and the run's status as the user sees it.
//!
//! Every change is logged in the decision log with `"by": "user"` and stamps when the user
//! last acted (the 4-hour gate counts from then); a refused command changes nothing.

use super::apply::{apply, apply_to_state};
use super::decision::{Action, Decision};
use super::journal::{log, BLOCKED_TASKS_KEY, PHASE_KEY, SPAWN_FAILURES_KEY};
use super::specflow_files::{
    ExecutionPhase, ExecutionStatus, OrchestrationExecution, OrchestrationState, Step, StepStatus,
    UserGateStatus, USER_ACTED_KEY,
};
use super::workflow::WorkflowView;
use crate::time::Timestamp;
use serde_json::{json, Map, Value};

/// A command the user gives a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserCommand {
    /// Pause a running (or waiting) run.
    Pause,
    /// Resume a paused run, or one that needs attention.
    Resume,
    /// Cancel the run and stop its current workflow.
    Cancel,
    /// Merge a run waiting for the user's merge.
    Merge,
    /// Confirm the phase's USER_GATE.
    ConfirmGate,
    /// Unblock every task the run skips, so later batches include them again.
    Unblock,
}

/// What a user command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserOutcome {
    /// The workflow to stop (a cancelled run's current workflow).
    pub stop_workflow: Option<String>,
}

fn by_user() -> Option<Map<String, Value>> {
    let mut m = Map::new();
    m.insert("by".into(), json!("user"));
    Some(m)
}

fn refuse(exec: &OrchestrationExecution, what: &str) -> String {
    format!(
        "cannot {what}: orchestration {} is {}",
        exec.id, exec.status
    )
}

/// Carries out `command` on the files at `now_ms`, or says why it is refused (the files are
/// then unchanged).
pub fn user_command(
    command: UserCommand,
    state: &mut OrchestrationState,
    exec: &mut OrchestrationExecution,
    now_ms: i64,
) -> Result<UserOutcome, String> {
    let mut outcome = UserOutcome {
        stop_workflow: None,
    };
    match command {
        UserCommand::Pause => {
            if matches!(
                exec.status,
                ExecutionStatus::Paused | ExecutionStatus::NeedsAttention
            ) {
                return Err(refuse(exec, "pause"));
            }
            exec.status = ExecutionStatus::Paused;
            log(exec, "pause", "Paused by the user", by_user(), now_ms);
        }
        UserCommand::Resume => {
            if !matches!(
                exec.status,
                ExecutionStatus::Paused | ExecutionStatus::NeedsAttention
            ) {
                return Err(refuse(exec, "resume"));
            }
            // The user has seen to it: its recovery context and spawn failures are cleared.
            exec.status = ExecutionStatus::Running;
            exec.recovery_context = None;
            exec.extra.remove(SPAWN_FAILURES_KEY);
            log(exec, "resume", "Resumed by the user", by_user(), now_ms);
        }
        UserCommand::Cancel => {
            outcome.stop_workflow = state
                .orchestration
                .step
                .current
                .as_ref()
                .and_then(|step| super::decide::linked_workflow_id(exec, step))
                .map(str::to_string);
            exec.status = ExecutionStatus::Cancelled;
            log(exec, "cancel", "Cancelled by the user", by_user(), now_ms);
        }
        UserCommand::Merge => merge(state, exec, now_ms)?,
        UserCommand::Unblock => {
            if exec.status.is_finished() {
                return Err(refuse(exec, "unblock tasks"));
            }
            let tasks = super::blocked::blocked_tasks(exec);
            if tasks.is_empty() {
                return Err(format!(
                    "orchestration {} has no blocked tasks to unblock",
                    exec.id
                ));
            }
            super::blocked::unblock_all(exec);
            log(
                exec,
                "unblock",
                format!("Unblocked by the user: {}", tasks.join(", ")),
                by_user(),
                now_ms,
            );
        }
        UserCommand::ConfirmGate => {
            if state.orchestration.phase.has_user_gate != Some(true) {
                return Err("the current phase has no USER_GATE to confirm".into());
            }
            state.orchestration.phase.user_gate_status = Some(UserGateStatus::Confirmed);
            if exec.status == ExecutionStatus::WaitingUserGate {
                exec.status = ExecutionStatus::Running;
            }
            log(
                exec,
                "confirm_gate",
                "USER_GATE confirmed by the user",
                by_user(),
                now_ms,
            );
        }
    }
    // The user looked at the run: the 4-hour gate counts from here.
    exec.extra
        .insert(USER_ACTED_KEY.into(), json!(Timestamp(now_ms).to_string()));
    Ok(outcome)
}

/// Merge moves a run waiting for the user's merge (or whose verify is complete) to the merge
/// step, unless an unconfirmed USER_GATE blocks it; the runner then spawns `/flow.merge`.
fn merge(
    state: &mut OrchestrationState,
    exec: &mut OrchestrationExecution,
    now_ms: i64,
) -> Result<(), String> {
    let verify_done = state.orchestration.step.current == Some(Step::Verify)
        && state.orchestration.step.status.get() == Some(&StepStatus::Complete);
    let may_merge =
        exec.status == ExecutionStatus::WaitingMerge || (verify_done && !exec.status.is_finished());
    if !may_merge {
        return Err(refuse(exec, "merge (verify is not complete)"));
    }
    if state.orchestration.phase.gate_blocks() {
        return Err("cannot merge: the phase's USER_GATE is not confirmed (run `orchestrate confirm-gate` first)".into());
    }
    let mut d = Decision::new(Action::Transition, "Merge requested by the user");
    d.next_index = Step::Merge.index();
    d.next_step = Some(Step::Merge);
    apply(exec, &d, now_ms);
    apply_to_state(state, &d);
    if let Some(entry) = exec.decision_log.last_mut() {
        entry.extra.insert("by".into(), json!("user"));
    }
    Ok(())
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

/// Links run `id`, started at `now_ms`, from the project state, as specflow's dashboard
/// does (`orchestration.dashboard.active`).
pub fn link_run(state: &mut OrchestrationState, id: &str, now_ms: i64) {
    state.orchestration.extra.insert(
        "dashboard".into(),
        json!({"active": {"id": id, "startedAt": Timestamp(now_ms).to_string(), "status": "running"}}),
    );
}

/// The options a new run is started with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOptions {
    /// Merge without asking once verify is done.
    pub auto_merge: bool,
    /// The budget in dollars (specflow's default, 50, when none).
    pub budget: Option<f64>,
    /// Pause after each implement batch.
    pub pause_between_batches: bool,
    /// Heal attempts per batch and per step (specflow's default, 1, when none).
    pub max_heal_attempts: Option<u32>,
    /// How its workflows run, stored under `config.<key>` (the shell's settings).
    pub settings: Option<(String, Value)>,
}

/// A new running run `id` for `state` (on its step, in its phase) with `opts`.
pub fn new_execution(
    id: &str,
    state: Option<&OrchestrationState>,
    opts: &RunOptions,
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
    if let Some((key, value)) = &opts.settings {
        e.config.extra.insert(key.clone(), value.clone());
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

/// The run's status as JSON: `{"id", "status", "startedAt", "phase", "step", "batches",
/// "costUsd", "budgetUsd", "workflow", "runner", "recoveryContext", "blockedTasks",
/// "stateError", "decisions"}` (the last 10). A state that could not be read is given as the default,
/// with `state_error` saying why.
pub fn status_json(
    exec: &OrchestrationExecution,
    state: &OrchestrationState,
    state_error: Option<String>,
    workflow: Option<&WorkflowView>,
    runner: Option<Value>,
) -> Value {
    let o = &state.orchestration;
    let skip = exec.decision_log.len().saturating_sub(10);
    json!({
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
        "workflow": workflow,
        "runner": runner,
        "recoveryContext": exec.recovery_context,
        "blockedTasks": exec.extra.get(BLOCKED_TASKS_KEY).cloned().unwrap_or_else(|| json!([])),
        "stateError": state_error,
        "decisions": &exec.decision_log[skip..],
    })
}
