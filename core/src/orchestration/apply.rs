//! Carrying out a decision's bookkeeping on the two files, purely: what the seed's
//! `executeDecision` writes, without the spawning, killing and asking that only the shell can do.
//!
//! The shell applies, writes the files atomically, then does the rest (spawn the skill, kill a
//! stale workflow, ask the Claude helper). Each function is a plain edit of the value given.

use super::decision::{Action, Decision};
use super::specflow_files::{
    ExecutionPhase, ExecutionStatus, OrchestrationExecution, OrchestrationState, RecoveryContext,
    StepStatus,
};
use crate::time::Timestamp;
use serde_json::Value;

/// What the user may do about a run that needs attention.
const RECOVERY_OPTIONS: [&str; 3] = ["retry", "skip", "abort"];

/// Records `decision` in the execution at `now_ms` and makes the execution-side changes it
/// implies:
///
/// - every decision is appended to `decisionLog` (`timestamp`, `decision`, `reason`, the
///   other fields as `data`) and `updatedAt` is set;
/// - `wait_with_backoff` counts a lookup failure; any other decision clears the count, since
///   the lookup no longer failed;
/// - `advance_batch` makes `batchIndex` current; `heal_batch` counts a heal attempt on it;
/// - `pause` sets `paused` and, between batches, makes the next batch current so that
///   resuming runs it;
/// - `wait_merge` / `wait_user_gate` / `complete` / `fail` / `needs_attention` set the
///   status (`needs_attention` with a `recoveryContext`, which validation requires);
/// - `transition` sets `currentPhase` to the next step;
/// - a decision that moves the run on (`transition`, `spawn`, …) while it waited for a merge
///   or a gate puts it back to `running`.
pub fn apply(execution: &mut OrchestrationExecution, decision: &Decision, now_ms: i64) {
    let now = Timestamp(now_ms).to_string();
    execution.decision_log.push(log_entry(decision, &now));
    execution.updated_at = Some(now.clone());

    if decision.action == Action::WaitWithBackoff {
        execution.lookup_failures = Some(execution.lookup_failures.unwrap_or(0).saturating_add(1));
    } else if execution.lookup_failures.is_some() {
        execution.lookup_failures = Some(0);
    }

    match decision.action {
        Action::AdvanceBatch => {
            if let Some(i) = decision.batch_index {
                execution.batches.current = i;
            }
        }
        Action::HealBatch => {
            if let Some(b) = decision
                .batch_index
                .and_then(|i| execution.batches.items.get_mut(i))
            {
                b.heal_attempts = b.heal_attempts.saturating_add(1);
            }
        }
        Action::Pause => {
            execution.status = ExecutionStatus::Paused;
            if let Some(i) = decision.batch_index {
                execution.batches.current = i;
            }
        }
        Action::WaitMerge => execution.status = ExecutionStatus::WaitingMerge,
        Action::WaitUserGate => execution.status = ExecutionStatus::WaitingUserGate,
        Action::Complete => {
            execution.status = ExecutionStatus::Completed;
            execution.current_phase = Some(ExecutionPhase::Complete);
            execution.completed_at = Some(now);
        }
        Action::Fail => {
            execution.status = ExecutionStatus::Failed;
            execution.error_message = Some(decision.reason.clone());
        }
        Action::NeedsAttention => {
            execution.status = ExecutionStatus::NeedsAttention;
            execution.recovery_context = Some(RecoveryContext {
                issue: decision.reason.clone(),
                options: RECOVERY_OPTIONS.iter().map(|s| s.to_string()).collect(),
                failed_workflow_id: decision.workflow_id.clone(),
                extra: Default::default(),
            });
        }
        Action::Transition => {
            if let Some(next) = &decision.next_step {
                execution.current_phase = Some(ExecutionPhase::from(next));
            }
            resume_if_waiting(execution);
        }
        Action::Spawn
        | Action::SpawnBatch
        | Action::InitializeBatches
        | Action::ForceStepComplete => resume_if_waiting(execution),
        // Nothing to record beyond the log: the shell acts (or waits).
        Action::Wait
        | Action::WaitWithBackoff
        | Action::RecoverStale
        | Action::RecoverFailed
        | Action::RecoverUnknown
        | Action::Stop => {}
    }
}

/// Makes the state-side changes `decision` implies: `transition` moves `step` to the next
/// step (its index, status `not_started`, no error); `force_step_complete` marks the step
/// complete; `spawn_batch` and `heal_batch` put a failed or blocked step back in progress
/// (the failure is the batch's by now, see [`observe_workflow`](super::observe_workflow),
/// and left in place it would be taken for the new workflow's verdict). Other decisions
/// leave the project state to the sub-commands.
pub fn apply_to_state(state: &mut OrchestrationState, decision: &Decision) {
    let step = &mut state.orchestration.step;
    match decision.action {
        Action::Transition => {
            if let Some(next) = &decision.next_step {
                step.index = next.index().and_then(|i| i64::try_from(i).ok());
                step.current = Some(next.clone());
                step.status = StepStatus::NotStarted.into();
                step.error = None;
            }
        }
        Action::ForceStepComplete => step.status = StepStatus::Complete.into(),
        Action::SpawnBatch | Action::HealBatch => {
            if matches!(
                step.status.get(),
                Some(StepStatus::Failed | StepStatus::Blocked)
            ) {
                step.status = StepStatus::InProgress.into();
                step.error = None;
            }
        }
        Action::Wait
        | Action::WaitWithBackoff
        | Action::RecoverStale
        | Action::WaitUserGate
        | Action::WaitMerge
        | Action::Complete
        | Action::RecoverFailed
        | Action::Spawn
        | Action::Fail
        | Action::NeedsAttention
        | Action::InitializeBatches
        | Action::Pause
        | Action::AdvanceBatch
        | Action::RecoverUnknown
        | Action::Stop => {}
    }
}

/// A run that waited for the user and now moves on is running again.
fn resume_if_waiting(execution: &mut OrchestrationExecution) {
    if matches!(
        execution.status,
        ExecutionStatus::WaitingMerge | ExecutionStatus::WaitingUserGate
    ) {
        execution.status = ExecutionStatus::Running;
    }
}

/// The decision log entry: the decision's fields other than action and reason go in `data`.
fn log_entry(decision: &Decision, now: &str) -> super::specflow_files::DecisionLogEntry {
    let mut data = match serde_json::to_value(decision) {
        Ok(Value::Object(m)) => m,
        // A Decision always serialises to an object; an empty `data` is the safe fallback.
        _ => Default::default(),
    };
    data.remove("action");
    data.remove("reason");
    super::specflow_files::DecisionLogEntry {
        timestamp: now.to_string(),
        decision: decision.action.as_str().to_string(),
        reason: decision.reason.clone(),
        data: (!data.is_empty()).then_some(data),
        extra: Default::default(),
    }
}
