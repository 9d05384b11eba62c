//! What the runner learns from the linked workflow before it decides: its cost, and how it
//! ended, written into the two files (purely; the shell looked the workflow up).
//!
//! The decision matrix trusts `step.status` and the batches' statuses. For a batch, nobody
//! but the runner writes its status, so the runner copies its workflow's outcome into it —
//! and a `/flow.implement` that marked the step failed or blocked is part of that outcome:
//! an agent's turn ends the same way whether its skill succeeded or not. For a whole step,
//! the sub-command marks it complete; a workflow that ended without doing so has failed at
//! its step, and saying so lets the failed-step recovery (with its bounded heal attempts)
//! take over instead of spawning the same step again and again.

use super::decide::linked_workflow_id;
use super::specflow_files::{
    BatchStatus, OrchestrationExecution, OrchestrationState, Step, StepStatus,
};
use super::workflow::{WorkflowStatus, WorkflowView};
use serde_json::{Map, Value};

/// The execution key that remembers each workflow's cost already counted, so a cost is added
/// once however often the workflow is looked at.
pub const WORKFLOW_COSTS_KEY: &str = "workflowCosts";

/// Folds `workflow` (the one linked to the current step) into the files: its cost into
/// `totalCostUsd`, and its end into the current batch or the step. Returns whether anything
/// changed.
pub fn observe_workflow(
    state: &mut OrchestrationState,
    execution: &mut OrchestrationExecution,
    workflow: &WorkflowView,
) -> bool {
    let mut changed = count_cost(execution, workflow);
    let Some(step) = state.orchestration.step.current.clone() else {
        return changed;
    };
    // Only the workflow the decision matrix would look at is folded in.
    if linked_workflow_id(execution, &step) != Some(workflow.id.as_str()) {
        return changed;
    }
    let ended_badly = matches!(
        workflow.status,
        WorkflowStatus::Failed | WorkflowStatus::Cancelled
    );
    let ended = ended_badly || workflow.status == WorkflowStatus::Completed;
    if !ended {
        return changed;
    }
    if step == Step::Implement {
        // The skill's own verdict: without it a failed batch run in an agent would count as
        // completed, and `force_step_complete` would then overwrite the failure.
        let s = &state.orchestration.step;
        let skill_failed = match s.status.get() {
            Some(status @ (StepStatus::Failed | StepStatus::Blocked)) => Some(
                s.error
                    .clone()
                    .unwrap_or_else(|| format!("Step implement is {status}")),
            ),
            _ => None,
        };
        let failed = ended_badly || skill_failed.is_some();
        let i = execution.batches.current;
        if let Some(b) = execution.batches.items.get_mut(i) {
            let is_healer = b.healer_execution_id.as_deref() == Some(workflow.id.as_str());
            let next = match (&b.status, is_healer, failed) {
                (BatchStatus::Failed, true, false) => Some(BatchStatus::Healed),
                (BatchStatus::Running, false, false) => Some(BatchStatus::Completed),
                (BatchStatus::Running, false, true) => Some(BatchStatus::Failed),
                // A failed healer leaves the batch failed; anything else is already settled.
                _ => None,
            };
            if let Some(next) = next {
                if next == BatchStatus::Failed {
                    b.error = Some(match skill_failed {
                        Some(e) if !ended_badly => e,
                        _ => format!("Workflow {} {}", workflow.id, workflow.status),
                    });
                }
                b.status = next;
                changed = true;
            }
        }
        return changed;
    }
    let s = &mut state.orchestration.step;
    let settled = matches!(
        s.status.get(),
        Some(StepStatus::Complete | StepStatus::Failed | StepStatus::Blocked)
    );
    if !settled {
        s.status = StepStatus::Failed.into();
        s.error = Some(format!(
            "Workflow {} {} without marking step {step} complete",
            workflow.id, workflow.status
        ));
        changed = true;
    }
    changed
}

/// Adds what `workflow` cost since it was last counted to `totalCostUsd`; whether it did.
pub fn count_cost(execution: &mut OrchestrationExecution, workflow: &WorkflowView) -> bool {
    if !workflow.cost_usd.is_finite() || workflow.cost_usd <= 0.0 {
        return false;
    }
    let costs = execution
        .extra
        .entry(WORKFLOW_COSTS_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if !costs.is_object() {
        *costs = Value::Object(Map::new());
    }
    let Some(costs) = costs.as_object_mut() else {
        return false;
    };
    let counted = costs
        .get(&workflow.id)
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    if counted == workflow.cost_usd {
        return false;
    }
    costs.insert(workflow.id.clone(), Value::from(workflow.cost_usd));
    execution.total_cost_usd += workflow.cost_usd - counted;
    true
}
