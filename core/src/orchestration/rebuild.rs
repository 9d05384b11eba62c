//! Rebuilding a lost or unreadable state file when the helper could not (G3.5): from the
//! run's own step and the phase it was started for, or the phase the git branch names.

use super::journal::PHASE_KEY;
use super::specflow_files::{
    ExecutionPhase, OrchestrationExecution, OrchestrationState, Step, StepStatus,
};
use serde_json::{json, Value};

/// The phase the run was started for, when it recorded one with a number.
pub fn started_phase(exec: &OrchestrationExecution) -> Option<&Value> {
    exec.extra
        .get(PHASE_KEY)
        .filter(|p| p.get("number").is_some_and(|n| !n.is_null()))
}

/// The phase a git branch names: its leading digits (`0010-core` → `0010`), `None` when it
/// starts with none.
pub fn phase_of_branch(branch: &str) -> Option<Value> {
    let digits: String = branch.chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then(|| json!({"number": digits, "branch": branch}))
}

/// The state the run itself implies: its current step (in progress, or merge complete once
/// the run is past merge) in the phase it was started for, or else the phase `branch` names.
/// `None` without a phase.
pub fn heuristic_state(
    exec: &OrchestrationExecution,
    branch: Option<&str>,
) -> Option<OrchestrationState> {
    let phase = match started_phase(exec) {
        Some(p) => p.clone(),
        None => phase_of_branch(branch?)?,
    };
    let (step, status) = match &exec.current_phase {
        Some(ExecutionPhase::Complete) => (Step::Merge, StepStatus::Complete),
        Some(p) if Step::parse(p.as_str()).is_known() => {
            (Step::parse(p.as_str()), StepStatus::InProgress)
        }
        _ => (Step::Design, StepStatus::NotStarted),
    };
    serde_json::from_value(json!({
        "orchestration": {
            "phase": phase,
            "step": {"current": step, "index": step.index(), "status": status}
        }
    }))
    .ok()
}
