//! The helper model's three cases and their fallback chains (the seed's "Claude Helper:
//! Specific Use Cases"), as pure functions from the helper's answer (or its absence) to a
//! [`Recovery`] the shell carries out.
//!
//! The helper is asked only for a corrupt or missing state file, a stale workflow and a
//! failed step. Its failure is silent: no answer, or an answer that does not parse, simply
//! takes the fallback.

use super::specflow_files::{OrchestrationState, Step};
use serde_json::Value;

/// The helper model's three cases, and no other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HelperCase {
    /// The state file is missing or unreadable: rebuild it.
    CorruptState,
    /// A running workflow has been silent for more than 10 minutes: diagnose it.
    StaleWorkflow,
    /// The step (or a batch, beyond its heals) failed: diagnose it.
    FailedStep,
}

impl HelperCase {
    /// The seed's task name for the case.
    pub fn task(self) -> &'static str {
        match self {
            HelperCase::CorruptState => "recover_state",
            HelperCase::StaleWorkflow => "diagnose_stale_workflow",
            HelperCase::FailedStep => "diagnose_failed_step",
        }
    }
}

/// A recovered state is used only above this confidence (G3.4).
pub const MIN_CONFIDENCE: f64 = 0.7;

/// What to do about a stale workflow or a failed step.
#[derive(Clone, Debug, PartialEq)]
pub enum Recovery {
    /// The workflow is fine after all: note it, so it is not judged stale again at once.
    Acknowledge,
    /// Kill the workflow if one is named and run the step (or batch) again.
    Restart,
    /// Record the tasks as blocked, then run the step (or batch) again.
    SkipTasks {
        /// The tasks to record as blocked.
        tasks: Vec<String>,
    },
    /// Count a heal attempt, mark the step in progress and run it again.
    Retry,
    /// Go back to an earlier step and run it.
    RunPrerequisite(Step),
    /// Stop and ask the user, with this issue.
    Escalate(String),
}

/// A recovery, with the decision-log name and reason that explain it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveryPlan {
    /// What to do.
    pub recovery: Recovery,
    /// The decision-log entry's name (`stale_restart`, `failed_fallback_retry`, …).
    pub log: &'static str,
    /// Why.
    pub reason: String,
    /// Whether the workflow must be killed first (the helper judged it dead).
    pub kill: bool,
}

fn plan(
    recovery: Recovery,
    log: &'static str,
    reason: impl Into<String>,
    kill: bool,
) -> RecoveryPlan {
    RecoveryPlan {
        recovery,
        log,
        reason: reason.into(),
        kill,
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn reasoning(v: &Value) -> String {
    text(v, "reasoning").unwrap_or_default()
}

/// Case 1 (G3.4): the helper's recovered state, when it says the state is recoverable with a
/// confidence above [`MIN_CONFIDENCE`] and the state parses. Anything else is `None`, and the
/// shell tries its heuristic next (G3.5).
pub fn recovered_state(answer: Option<&Value>) -> Option<OrchestrationState> {
    let a = answer?;
    let recoverable = a.get("recoverable").and_then(Value::as_bool) == Some(true);
    let confidence = a.get("confidence").and_then(Value::as_f64).unwrap_or(0.0);
    if !recoverable || confidence <= MIN_CONFIDENCE {
        return None;
    }
    serde_json::from_value(a.get("state")?.clone()).ok()
}

/// Case 2 (G3.9, G3.10): the helper's diagnosis of a workflow silent for `stale_minutes`.
/// `continue` acknowledges, `restart_task` restarts, `skip_task` blocks the task and
/// restarts, `abort` escalates (those three kill the workflow first). No usable answer
/// escalates without killing: the conservative fallback.
pub fn stale_recovery(answer: Option<&Value>, stale_minutes: i64) -> RecoveryPlan {
    let fallback = || {
        plan(
            Recovery::Escalate(format!(
                "Workflow appears stale for {stale_minutes} minutes - diagnosis failed"
            )),
            "stale_diagnosis_failed",
            "Helper unavailable",
            false,
        )
    };
    let Some(a) = answer else {
        return fallback();
    };
    match a.get("action").and_then(Value::as_str) {
        Some("continue") => plan(
            Recovery::Acknowledge,
            "stale_false_alarm",
            reasoning(a),
            false,
        ),
        Some("restart_task") => plan(Recovery::Restart, "stale_restart", reasoning(a), true),
        Some("skip_task") => {
            let tasks = text(a, "task")
                .or_else(|| text(a, "taskId"))
                .into_iter()
                .collect();
            let why = text(a, "blockReason").unwrap_or_else(|| reasoning(a));
            plan(Recovery::SkipTasks { tasks }, "stale_skip", why, true)
        }
        Some("abort") => plan(
            Recovery::Escalate(non_empty(
                reasoning(a),
                "Stale workflow aborted by the helper",
            )),
            "stale_abort",
            reasoning(a),
            true,
        ),
        _ => fallback(),
    }
}

/// Case 3 (G3.12–G3.16): the failed step's recovery. With `heal_attempts` at the maximum
/// the helper is not asked (`asked_helper` false) and the run escalates; otherwise the
/// helper's `retry`, `skip_tasks`, `run_prerequisite` or `abort` is followed, and without a
/// usable answer a simple retry is made (attempts remain, by the pre-check).
///
/// The shell calls [`failed_needs_helper`] first, asks the helper only when it says so, and
/// passes its answer here.
pub fn failed_recovery(
    answer: Option<&Value>,
    error: Option<&str>,
    heal_attempts: u32,
    max_heal_attempts: u32,
) -> RecoveryPlan {
    if !failed_needs_helper(heal_attempts, max_heal_attempts) {
        return plan(
            Recovery::Escalate(format!("Max heal attempts ({max_heal_attempts}) reached")),
            "failed_max_attempts",
            non_empty(error.unwrap_or_default().to_string(), "Step failed"),
            false,
        );
    }
    let fallback = || {
        plan(
            Recovery::Retry,
            "failed_fallback_retry",
            "Claude Helper unavailable, attempting simple retry",
            false,
        )
    };
    let Some(a) = answer else {
        return fallback();
    };
    match a.get("action").and_then(Value::as_str) {
        Some("retry") => plan(Recovery::Retry, "failed_retry", reasoning(a), false),
        Some("skip_tasks") => {
            let tasks = a
                .get("tasksToSkip")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            plan(
                Recovery::SkipTasks { tasks },
                "failed_skip_tasks",
                reasoning(a),
                false,
            )
        }
        Some("run_prerequisite") => {
            match a
                .get("prerequisiteStep")
                .and_then(Value::as_str)
                .map(Step::parse)
            {
                Some(step) if step.is_known() => plan(
                    Recovery::RunPrerequisite(step),
                    "failed_prerequisite",
                    reasoning(a),
                    false,
                ),
                // An unknown step cannot be run: as if the helper had not answered.
                _ => fallback(),
            }
        }
        Some("abort") => plan(
            Recovery::Escalate(non_empty(
                reasoning(a),
                error.unwrap_or("Step failed; the helper advised to stop"),
            )),
            "failed_abort",
            reasoning(a),
            false,
        ),
        _ => fallback(),
    }
}

/// G3.12: whether the helper is asked about a failed step at all (heal attempts remain).
pub fn failed_needs_helper(heal_attempts: u32, max_heal_attempts: u32) -> bool {
    heal_attempts < max_heal_attempts
}

fn non_empty(s: String, otherwise: &str) -> String {
    if s.trim().is_empty() {
        otherwise.to_string()
    } else {
        s
    }
}
