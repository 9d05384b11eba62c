//! The decision matrix (the seed's `makeDecision`) and implement's batch state machine
//! (`handleImplementBatching`), as pure functions of the two files, the linked workflow and
//! the time.
//!
//! Every combination has an explicit rule. Nothing falls through to a silent default: a
//! status this version does not know gives [`Action::RecoverUnknown`] and an ERROR log
//! (G1.18), and the `match`es below name every variant so the compiler keeps it that way.

use super::blocked::batch_context;
use super::decision::{Action, Decision};
use super::specflow_files::{
    next_step, BatchStatus, ExecutionStatus, OrchestrationExecution, OrchestrationState, Step,
    StepState, StepStatus,
};
use super::validate::Violation;
use super::workflow::{WorkflowStatus, WorkflowView};
use tracing::{error, warn};

/// A running workflow silent for longer than this is stale (G1.5): 10 minutes.
pub const STALE_THRESHOLD_MS: i64 = 10 * 60_000;

/// A run older than this needs attention (G1.2): 4 hours.
pub const MAX_DURATION_MS: i64 = 4 * 3_600_000;

/// The first lookup backoff; it doubles with each consecutive failure.
pub const BACKOFF_BASE_MS: u64 = 1_000;

/// The longest lookup backoff.
pub const BACKOFF_MAX_MS: u64 = 60_000;

/// The skill batches run with.
const IMPLEMENT_SKILL: &str = "flow.implement";

/// The decision for the run now.
///
/// Order, as the seed's loop: a finished run stops; then the pre-decision gates, budget
/// (G1.1) and duration (G1.2); then the terminal states (a paused or needs-attention run
/// waits); then the matrix: implement's batches first (G1.3), the workflow's status
/// (G1.4–G1.7), the step's status (G1.8–G1.17). [`decide_checked`] puts the validation
/// between the gates and the terminal states.
///
/// `workflow` is the result of looking up [`linked_workflow_id`]: `None` when there is no
/// id or the lookup found nothing. `now_ms` is the current time in ms since the epoch.
pub fn decide(
    state: &OrchestrationState,
    execution: &OrchestrationExecution,
    workflow: Option<&WorkflowView>,
    now_ms: i64,
) -> Decision {
    finished(execution)
        .or_else(|| gates(execution, now_ms))
        .unwrap_or_else(|| after_gates(state, execution, workflow, now_ms))
}

/// A finished run has nothing left to decide; checking this before the gates keeps a run
/// that completed on its last dollar from being turned into a failure afterwards (the
/// seed's loop never comes back to a run it ended).
fn finished(execution: &OrchestrationExecution) -> Option<Decision> {
    execution.status.is_finished().then(|| {
        Decision::new(
            Action::Stop,
            format!("Orchestration is {}", execution.status),
        )
    })
}

/// The seed's pre-decision gates, which come before validation and before anything that
/// could spend more: the budget (G1.1), then the duration (G1.2).
fn gates(execution: &OrchestrationExecution, now_ms: i64) -> Option<Decision> {
    // G1.1.
    let max_total = execution.config.budget.max_total;
    if execution.total_cost_usd >= max_total {
        return Some(Decision::new(
            Action::Fail,
            format!(
                "Budget exceeded: ${:.2} (limit ${:.2})",
                execution.total_cost_usd, max_total
            ),
        ));
    }

    // G1.2: strictly longer than 4 hours of running since the start or the user's last
    // command on the run. A run that waits for the user (paused, a merge, a gate, attention)
    // is not running away; and one the user resumed has been looked at. An unreadable
    // startedAt cannot be timed; the seed's `NaN > max` is false too, so the gate is skipped,
    // but not silently.
    if execution.status == ExecutionStatus::Running {
        match execution.duration_from_ms() {
            Some(from) if now_ms.saturating_sub(from) > MAX_DURATION_MS => {
                return Some(Decision::new(
                    Action::NeedsAttention,
                    "Orchestration running too long",
                ));
            }
            Some(_) => {}
            None => warn!(
                orchestration = %execution.id,
                started_at = ?execution.started_at,
                "startedAt missing or unreadable: duration gate skipped"
            ),
        }
    }
    None
}

/// The seed's terminal conditions, then the matrix: what follows the gates (and, in
/// [`decide_checked`], the validation).
fn after_gates(
    state: &OrchestrationState,
    execution: &OrchestrationExecution,
    workflow: Option<&WorkflowView>,
    now_ms: i64,
) -> Decision {
    // The seed's loop sleeps while paused; a run waiting for the user does the same.
    // waiting_merge and waiting_user_gate go on to the matrix: it re-derives the same wait
    // until the user merges or confirms, and then moves on by itself.
    match &execution.status {
        ExecutionStatus::Paused => return Decision::new(Action::Wait, "Orchestration paused"),
        ExecutionStatus::NeedsAttention => {
            return Decision::new(
                Action::Wait,
                "Orchestration needs attention: waiting for the user",
            )
        }
        ExecutionStatus::Unknown(s) => {
            error!(orchestration = %execution.id, status = %s, "unknown orchestration status");
            return Decision::new(
                Action::RecoverUnknown,
                format!("Unknown orchestration status: {s}"),
            );
        }
        ExecutionStatus::Running
        | ExecutionStatus::WaitingMerge
        | ExecutionStatus::WaitingUserGate => {}
        // Handled by `finished` before the gates.
        ExecutionStatus::Completed | ExecutionStatus::Failed | ExecutionStatus::Cancelled => {
            return Decision::new(
                Action::Stop,
                format!("Orchestration is {}", execution.status),
            )
        }
    }

    matrix(state, execution, workflow, now_ms)
}

/// The seed's `makeDecision` proper.
fn matrix(
    state: &OrchestrationState,
    execution: &OrchestrationExecution,
    workflow: Option<&WorkflowView>,
    now_ms: i64,
) -> Decision {
    let step = &state.orchestration.step;
    let phase = &state.orchestration.phase;

    // Without a known step there is no next step, skill or workflow to reason about.
    let current = match &step.current {
        Some(Step::Unknown(s)) => {
            error!(step = %s, "unknown step.current");
            return Decision::new(Action::RecoverUnknown, format!("Unknown step: {s}"));
        }
        None => {
            error!("step.current missing");
            return Decision::new(
                Action::RecoverUnknown,
                "Unknown step: step.current is missing",
            );
        }
        Some(s) => s,
    };

    // G1.3: implement's batches are looked at before anything else.
    if *current == Step::Implement {
        if let Some(d) = decide_batch(step, execution, workflow) {
            return d;
        }
    }

    // G1.4–G1.6: the linked workflow's own status.
    if let Some(wf) = workflow {
        match &wf.status {
            WorkflowStatus::Running => {
                let silent = now_ms.saturating_sub(wf.last_activity_ms);
                if silent > STALE_THRESHOLD_MS {
                    let mut d = Decision::new(
                        Action::RecoverStale,
                        format!("No activity for {} minutes", round_minutes(silent)),
                    );
                    d.workflow_id = Some(wf.id.clone());
                    return d;
                }
                return Decision::new(Action::Wait, "Workflow running");
            }
            WorkflowStatus::WaitingForInput => {
                return Decision::new(Action::Wait, "Waiting for user input");
            }
            WorkflowStatus::Unknown(s) => {
                error!(workflow = %wf.id, status = %s, "unknown workflow status");
                return Decision::new(
                    Action::RecoverUnknown,
                    format!("Unknown workflow status: {s}"),
                );
            }
            // A finished workflow no longer holds the step: the step's status decides.
            WorkflowStatus::Completed | WorkflowStatus::Failed | WorkflowStatus::Cancelled => {}
        }
    }

    // G1.7: an id is linked but the lookup found nothing (the workflow may not be
    // registered yet): wait, longer each time, rather than spawn a duplicate.
    if workflow.is_none() {
        if let Some(id) = linked_workflow_id(execution, current) {
            let failures = execution.lookup_failures.unwrap_or(0);
            let mut d = Decision::new(
                Action::WaitWithBackoff,
                format!("Workflow {id} lookup failed, waiting..."),
            );
            d.backoff_ms = Some(backoff_ms(failures));
            return d;
        }
    }

    // From here no workflow is active: none is linked, or the linked one has finished.
    let Some(status) = step.status.get() else {
        // G1.17: a null or absent status is "not started".
        return not_started(current, execution);
    };
    match status {
        StepStatus::Complete => complete(current, phase, execution),
        // G1.13, G1.14.
        StepStatus::Failed | StepStatus::Blocked => {
            Decision::new(Action::RecoverFailed, format!("Step {current} is {status}"))
                .with_error(step.error.clone())
        }
        // G1.15.
        StepStatus::InProgress => Decision::new(
            Action::Spawn,
            format!("Step {current} is in_progress with no active workflow"),
        )
        .with_skill(current.skill()),
        // G1.16.
        StepStatus::NotStarted => not_started(current, execution),
        // The seed's validation accepts these two but its matrix has no rule for them; it
        // reaches its "unknown status" branch, and so do they here, by name.
        StepStatus::Pending | StepStatus::Skipped => {
            error!(step = %current, status = %status, "step.status has no rule in the decision matrix");
            Decision::new(
                Action::RecoverUnknown,
                format!("Unknown status: {status} (valid, but no rule decides it)"),
            )
        }
        // G1.18.
        StepStatus::Unknown(s) => {
            error!(step = %current, status = %s, "unknown step.status");
            Decision::new(Action::RecoverUnknown, format!("Unknown status: {s}"))
        }
    }
}

/// G1.16, G1.17: spawn the step, after populating batches when entering implement.
fn not_started(current: &Step, execution: &OrchestrationExecution) -> Decision {
    if *current == Step::Implement && execution.batches.total == 0 {
        return Decision::new(
            Action::InitializeBatches,
            "Entering implement, need to populate batches",
        );
    }
    Decision::new(Action::Spawn, format!("Step {current} not started")).with_skill(current.skill())
}

/// G1.8–G1.12: the step is complete; what follows it.
fn complete(
    current: &Step,
    phase: &super::specflow_files::Phase,
    execution: &OrchestrationExecution,
) -> Decision {
    // G1.11: nothing after merge.
    let Some(next) = next_step(current) else {
        return Decision::new(Action::Complete, "All steps finished");
    };
    if *current == Step::Verify {
        // G1.8: a USER_GATE needs explicit confirmation before merging.
        if phase.gate_blocks() {
            return Decision::new(Action::WaitUserGate, "USER_GATE requires confirmation");
        }
        // G1.9.
        if !execution.config.auto_merge {
            return Decision::new(Action::WaitMerge, "Auto-merge disabled, waiting for user");
        }
        // G1.10.
        return transition(next, "Verify complete, auto-merge enabled".to_string());
    }
    // G1.12.
    let reason = format!("{current} complete, advancing to {next}");
    transition(next, reason)
}

fn transition(next: Step, reason: String) -> Decision {
    let mut d = Decision::new(Action::Transition, reason);
    d.next_index = next.index();
    d.next_step = Some(next);
    d
}

/// The seed's `handleImplementBatching` (G2.1–G2.10): a decision about implement's batches,
/// or `None` to let the main matrix decide (a running batch is judged by its workflow's
/// staleness; all batches done with the step complete is a plain transition).
pub fn decide_batch(
    step: &StepState,
    execution: &OrchestrationExecution,
    workflow: Option<&WorkflowView>,
) -> Option<Decision> {
    let batches = &execution.batches;
    let config = &execution.config;

    // G2.1.
    if batches.total == 0 {
        return Some(Decision::new(
            Action::InitializeBatches,
            "No batches populated",
        ));
    }

    // G2.2, G2.3: the sub-command is trusted to mark the step complete, and forced to be.
    if batches.all_done() {
        if step.status.get() != Some(&StepStatus::Complete) {
            return Some(Decision::new(
                Action::ForceStepComplete,
                "All batches complete but step.status not updated",
            ));
        }
        return None;
    }

    let Some(batch) = execution.current_batch() else {
        // The seed's `items[current]` is undefined here and no batch rule applies;
        // validation reports the out-of-range index.
        warn!(
            current = batches.current,
            items = batches.items.len(),
            "batches.current points at no batch"
        );
        return None;
    };
    let active = workflow.is_some_and(WorkflowView::is_active);
    let i = batches.current;

    match &batch.status {
        // G2.5: running with its workflow running is the staleness check's business; running
        // without one is left to the matrix too (backoff when linked, else respawn).
        BatchStatus::Running => None,
        // G2.6–G2.8.
        BatchStatus::Completed | BatchStatus::Healed => {
            let next = i + 1;
            if next >= batches.total {
                // Not all done (checked above), yet nothing after this one: the matrix decides.
                return None;
            }
            if config.pause_between_batches {
                // The pause names the next batch so that resuming runs it; pausing on the
                // finished batch itself would pause again on every resume.
                return Some(
                    Decision::new(Action::Pause, "Batch complete, pauseBetweenBatches enabled")
                        .with_batch(next),
                );
            }
            Some(
                Decision::new(
                    Action::AdvanceBatch,
                    format!("Batch {i} complete, advancing to batch {next}"),
                )
                .with_batch(next),
            )
        }
        // G2.4.
        BatchStatus::Pending => {
            if active {
                // Spawned, not yet marked running: the workflow check waits on it.
                return None;
            }
            let mut d = Decision::new(
                Action::SpawnBatch,
                format!("Batch {i} pending, no active workflow"),
            )
            .with_batch(i)
            .with_skill(Some(IMPLEMENT_SKILL.to_string()));
            // Tasks the run skips stay out of the prompt until the user unblocks them.
            d.context = Some(batch_context(batch, execution));
            Some(d)
        }
        // G2.9, G2.10.
        BatchStatus::Failed => {
            if active {
                // A healer is at work on it: judge that workflow, do not heal twice.
                return None;
            }
            if config.auto_heal_enabled && batch.heal_attempts < config.max_heal_attempts {
                return Some(
                    Decision::new(Action::HealBatch, "Batch failed, attempting heal").with_batch(i),
                );
            }
            Some(
                Decision::new(
                    Action::RecoverFailed,
                    format!(
                        "Batch {i} failed after {} heal attempts",
                        batch.heal_attempts
                    ),
                )
                .with_batch(i)
                .with_error(batch.error.clone()),
            )
        }
        BatchStatus::Unknown(s) => {
            error!(batch = i, status = %s, "unknown batch status");
            Some(
                Decision::new(Action::RecoverUnknown, format!("Unknown batch status: {s}"))
                    .with_batch(i),
            )
        }
    }
}

/// The workflow id linked to `step`, which the shell looks up to fill in the
/// [`WorkflowView`]. For implement: the current batch's latest workflow (its healer if it
/// has one, else its own), else `executions.implement[current]`. Empty ids count as none.
pub fn linked_workflow_id<'a>(
    execution: &'a OrchestrationExecution,
    step: &Step,
) -> Option<&'a str> {
    let e = &execution.executions;
    let id = match step {
        Step::Design => e.design.as_deref(),
        Step::Analyze => e.analyze.as_deref(),
        Step::Verify => e.verify.as_deref(),
        Step::Merge => e.merge.as_deref(),
        Step::Implement => execution
            .current_batch()
            .and_then(|b| {
                b.healer_execution_id
                    .as_deref()
                    .or(b.workflow_execution_id.as_deref())
            })
            .or_else(|| {
                e.implement
                    .get(execution.batches.current)
                    .map(String::as_str)
            }),
        Step::Unknown(_) => None,
    };
    id.filter(|s| !s.is_empty())
}

/// The wait after `failures` consecutive failed lookups: 1 s, 2 s, 4 s, … up to 60 s.
pub fn backoff_ms(failures: u32) -> u64 {
    // A shift of 64 or more has no u64 result: that many failures means the longest wait.
    let factor = 1u64.checked_shl(failures).unwrap_or(u64::MAX);
    BACKOFF_BASE_MS.saturating_mul(factor).min(BACKOFF_MAX_MS)
}

/// Whole minutes, rounded half up as JavaScript's `Math.round` does for positive numbers.
fn round_minutes(ms: i64) -> i64 {
    (ms + 30_000).div_euclid(60_000)
}

/// The runner's full decision, in the seed's loop order: a finished run stops; the gates
/// (budget, duration); then [`validate`](super::validate::validate); then the terminal
/// states and the matrix ([`decide`] without its gates).
///
/// A paused run is not validated (the user is on it; the seed's loop validates it, but its
/// answer would only replace the pause). A run that already needs attention is checked for
/// its `recoveryContext` only (G7.6): its other inconsistencies are what the user was
/// called for, but a missing context is reported, never hidden. Otherwise violations decide
/// `needs_attention` with the violations as the reason; no helper is asked, since the
/// helper's three cases do not include inconsistent files.
pub fn decide_checked(
    state: &OrchestrationState,
    execution: &OrchestrationExecution,
    workflow: Option<&WorkflowView>,
    now_ms: i64,
) -> Decision {
    if let Some(d) = finished(execution).or_else(|| gates(execution, now_ms)) {
        return d;
    }
    let violations: Vec<Violation> = match execution.status {
        ExecutionStatus::Paused => Vec::new(),
        ExecutionStatus::NeedsAttention => super::validate::validate(state, Some(execution))
            .into_iter()
            .filter(|v| *v == Violation::MissingRecoveryContext)
            .collect(),
        _ => super::validate::validate(state, Some(execution)),
    };
    if !violations.is_empty() {
        let issues: Vec<String> = violations.iter().map(ToString::to_string).collect();
        return Decision::new(Action::NeedsAttention, issues.join(", "));
    }
    after_gates(state, execution, workflow, now_ms)
}
