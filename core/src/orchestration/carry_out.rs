//! Carrying out a recovery plan (a stale workflow's or a failed step's): what the helper is
//! told, whether the situation diagnosed still holds when the answer comes back, and the
//! plan's changes to the two files.

use super::decide::linked_workflow_id;
use super::decision::Decision;
use super::iteration::Next;
use super::journal::{escalate, log, BLOCKED_TASKS_KEY, STALE_ACK_KEY};
use super::recovery::{Recovery, RecoveryPlan};
use super::specflow_files::{
    BatchStatus, ExecutionPhase, OrchestrationExecution, OrchestrationState, Step, StepStatus,
};
use super::workflow::WorkflowView;
use crate::time::Timestamp;
use serde_json::{json, Map, Value};

/// The situation a helper was asked about, checked again before its plan is carried out:
/// the files may have moved on by themselves while it thought.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Diagnosed {
    /// The current step is linked to this silent workflow.
    StaleWorkflow(String),
    /// This implement batch failed.
    FailedBatch(usize),
    /// The current step failed or is blocked.
    FailedStep,
}

impl Diagnosed {
    /// The failure `decision` (a `recover_failed`) is about.
    pub fn failure(decision: &Decision) -> Diagnosed {
        decision
            .batch_index
            .map_or(Diagnosed::FailedStep, Diagnosed::FailedBatch)
    }

    /// Whether the files still show this situation.
    pub fn still_holds(&self, state: &OrchestrationState, exec: &OrchestrationExecution) -> bool {
        match self {
            Diagnosed::StaleWorkflow(wf) => {
                state
                    .orchestration
                    .step
                    .current
                    .as_ref()
                    .and_then(|s| linked_workflow_id(exec, s))
                    == Some(wf.as_str())
            }
            Diagnosed::FailedBatch(i) => exec
                .batches
                .items
                .get(*i)
                .is_some_and(|b| b.status == BatchStatus::Failed),
            Diagnosed::FailedStep => matches!(
                state.orchestration.step.status.get(),
                Some(StepStatus::Failed | StepStatus::Blocked)
            ),
        }
    }
}

/// What the helper is told about a stale workflow (G3.7), and for how many whole minutes
/// (rounded half up) it has been silent.
pub fn stale_context(
    decision: &Decision,
    view: Option<&WorkflowView>,
    state: &OrchestrationState,
    project_dir: &str,
    now_ms: i64,
) -> (Value, i64) {
    let wf = decision.workflow_id.clone().unwrap_or_default();
    let silent_ms = view.map_or(0, |v| now_ms.saturating_sub(v.last_activity_ms));
    let context = json!({
        "workflowId": wf,
        "lastActivity": view.map(|v| Timestamp(v.last_activity_ms).to_string()),
        "staleDurationMs": silent_ms,
        "currentStep": state.orchestration.step.current,
        "currentTask": state.orchestration.extra.get("implement").and_then(|i| i.get("currentTask")),
        "projectPath": project_dir,
    });
    (context, (silent_ms + 30_000) / 60_000)
}

/// What the helper is told about a failed step or batch (G3.11).
pub fn failed_context(
    decision: &Decision,
    state: &OrchestrationState,
    exec: &OrchestrationExecution,
    project_dir: &str,
) -> Value {
    json!({
        "step": state.orchestration.step.current,
        "status": state.orchestration.step.status,
        "error": decision.error,
        "batch": decision.batch_index.and_then(|i| exec.batches.items.get(i)),
        "healAttempts": exec.heal_attempts.unwrap_or(0),
        "maxHealAttempts": exec.config.max_heal_attempts,
        "projectPath": project_dir,
    })
}

/// Makes `plan`'s changes to the files (the situation still holding), logs it, and says
/// what the loop does next: poll after an escalation or an acknowledgement (nothing to do
/// until someone acts), else go on at once to spawn afresh.
pub fn carry_out(
    state: &mut OrchestrationState,
    exec: &mut OrchestrationExecution,
    plan: &RecoveryPlan,
    workflow: Option<&str>,
    now_ms: i64,
) -> Next {
    match &plan.recovery {
        Recovery::Acknowledge => {
            if let Some(wf) = workflow {
                let acks = exec.extra.entry(STALE_ACK_KEY).or_insert_with(|| json!({}));
                if let Some(m) = acks.as_object_mut() {
                    m.insert(wf.into(), json!(now_ms));
                }
            }
        }
        Recovery::Restart => unlink_current(state, exec),
        Recovery::SkipTasks { tasks } => {
            let blocked = exec
                .extra
                .entry(BLOCKED_TASKS_KEY)
                .or_insert_with(|| json!([]));
            if let Some(v) = blocked.as_array_mut() {
                v.extend(
                    tasks
                        .iter()
                        .map(|t| json!({"task": t, "reason": plan.reason})),
                );
            }
            restart_step(state);
            unlink_current(state, exec);
        }
        Recovery::Retry => {
            exec.heal_attempts = Some(exec.heal_attempts.unwrap_or(0) + 1);
            restart_step(state);
            unlink_current(state, exec);
        }
        Recovery::RunPrerequisite(step) => {
            // Counted as a heal attempt, so a helper that keeps sending the run back cannot
            // loop forever.
            exec.heal_attempts = Some(exec.heal_attempts.unwrap_or(0) + 1);
            let s = &mut state.orchestration.step;
            s.current = Some(step.clone());
            s.index = step.index().and_then(|i| i64::try_from(i).ok());
            s.status = StepStatus::NotStarted.into();
            s.error = None;
            exec.current_phase = Some(ExecutionPhase::from(step));
            unlink_current(state, exec);
        }
        Recovery::Escalate(issue) => escalate(exec, issue, workflow, now_ms),
    }
    let mut data = Map::new();
    if let Some(wf) = workflow {
        data.insert("workflowId".into(), json!(wf));
    }
    log(
        exec,
        plan.log,
        plan.reason.clone(),
        (!data.is_empty()).then_some(data),
        now_ms,
    );
    match plan.recovery {
        Recovery::Escalate(_) | Recovery::Acknowledge => Next::Poll,
        _ => Next::Again,
    }
}

/// A failed or blocked step goes back to in progress, its error cleared.
fn restart_step(state: &mut OrchestrationState) {
    let s = &mut state.orchestration.step;
    if matches!(
        s.status.get(),
        Some(StepStatus::Failed | StepStatus::Blocked)
    ) {
        s.status = StepStatus::InProgress.into();
        s.error = None;
    }
}

/// Forgets the current step's (or batch's) workflow, so the next iteration spawns afresh.
pub fn unlink_current(state: &OrchestrationState, exec: &mut OrchestrationExecution) {
    let e = &mut exec.executions;
    match state.orchestration.step.current.as_ref() {
        Some(Step::Design) => e.design = None,
        Some(Step::Analyze) => e.analyze = None,
        Some(Step::Verify) => e.verify = None,
        Some(Step::Merge) => e.merge = None,
        Some(Step::Implement) => {
            let i = exec.batches.current;
            if let Some(b) = exec.batches.items.get_mut(i) {
                if !b.status.is_done() {
                    b.status = BatchStatus::Pending;
                    b.workflow_execution_id = None;
                    b.healer_execution_id = None;
                    b.error = None;
                    if let Some(s) = e.implement.get_mut(i) {
                        s.clear();
                    }
                }
            }
        }
        Some(Step::Unknown(_)) | None => {}
    }
}
