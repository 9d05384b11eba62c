//! The rules of one runner iteration around the decision matrix: which workflow the step is
//! linked to and how its silence counts, the spawn guard, whether a decision is worth
//! writing again, and what the loop does next.

use super::decide::{decide_checked, linked_workflow_id};
use super::decision::{Action, Decision};
use super::journal::{log, SPAWN_INTENT_KEY, STALE_ACK_KEY};
use super::observe::observe_workflow;
use super::spawn::{spawn_check, SpawnCheck, SpawnIntent};
use super::specflow_files::{
    next_step, ExecutionPhase, OrchestrationExecution, OrchestrationState, Step,
};
use super::workflow::WorkflowView;
use serde_json::Value;

/// What the loop does after an iteration: the wake-up it schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Wait for an event or the poll interval.
    Poll,
    /// Wait this many ms (lookup backoff), or less on an event.
    Backoff(u64),
    /// Go on at once: the files moved on and there is more to do.
    Again,
    /// The run is over.
    Stop,
}

/// One iteration's outcome.
#[derive(Clone, Debug)]
pub struct Iteration {
    /// The decision taken.
    pub decision: Decision,
    /// Whether it was appended to the decision log (a repeat of the last entry, with nothing
    /// else changed, is not).
    pub logged: bool,
    /// What the loop does next.
    pub next: Next,
}

/// The workflow the run's current step is linked to. While a transition's two writes are
/// cut in half (see [`mend_torn_transition`]), the run's own step's: its cost still counts.
pub fn linked<'a>(
    state: &OrchestrationState,
    execution: &'a OrchestrationExecution,
) -> Option<&'a str> {
    let step = torn_from(state, execution).or_else(|| state.orchestration.step.current.clone())?;
    linked_workflow_id(execution, &step)
}

/// The run's step when the state is exactly one step ahead of it (a transition whose
/// second write was cut short).
fn torn_from(state: &OrchestrationState, execution: &OrchestrationExecution) -> Option<Step> {
    let step = state.orchestration.step.current.as_ref()?;
    let behind = Step::parse(execution.current_phase.as_ref()?.as_str());
    (!execution.status.is_finished() && next_step(&behind).as_ref() == Some(step)).then_some(behind)
}

/// `view` of workflow `id` with the helper's "it is alive" as activity, when that came
/// later than the workflow's own last activity.
pub fn acknowledged(
    mut view: WorkflowView,
    execution: &OrchestrationExecution,
    id: &str,
) -> WorkflowView {
    if let Some(ack) = execution
        .extra
        .get(STALE_ACK_KEY)
        .and_then(|m| m.get(id))
        .and_then(Value::as_i64)
    {
        view.last_activity_ms = view.last_activity_ms.max(ack);
    }
    view
}

/// Whether carrying out `decision` starts a workflow.
pub fn spawns(decision: &Decision) -> bool {
    match decision.action {
        Action::Spawn | Action::SpawnBatch | Action::HealBatch => true,
        // Entering implement spawns nothing yet: its batches come first.
        Action::Transition => decision
            .next_step
            .as_ref()
            .is_some_and(|s| *s != Step::Implement && s.is_known()),
        _ => false,
    }
}

/// The decision for the files as they are: the linked workflow folded in, validation, the
/// decision matrix, and the spawn guard (an intent younger than 30 s or an active workflow
/// turns a spawn into a wait). The runner and `orchestrate decide` both use it.
pub fn evaluate(
    state: &mut OrchestrationState,
    execution: &mut OrchestrationExecution,
    workflow: Option<&WorkflowView>,
    now_ms: i64,
) -> Decision {
    mend_torn_transition(state, execution, now_ms);
    if let Some(wf) = workflow {
        observe_workflow(state, execution, wf);
    }
    // A mended run's view is of the step before (its cost is counted above): the matrix
    // judges the current step, which has no workflow yet.
    let workflow = workflow.filter(|wf| linked(state, execution) == Some(wf.id.as_str()));
    let decision = decide_checked(state, execution, workflow, now_ms);
    // A run must not end while a spawn may be under way: a runner that died between starting
    // the last step and recording it left an intent, and its workflow (with its cost) is
    // adopted once the intent is stale; a finished run is never looked at again.
    let completes = decision.action == Action::Complete;
    if !spawns(&decision) && !completes {
        return decision;
    }
    let intent = execution
        .extra
        .get(SPAWN_INTENT_KEY)
        .and_then(|v| serde_json::from_value::<SpawnIntent>(v.clone()).ok());
    let active = workflow.is_some_and(WorkflowView::is_active);
    match spawn_check(intent.as_ref(), active, now_ms) {
        SpawnCheck::Spawn => decision,
        SpawnCheck::IntentInFlight => Decision::new(
            Action::Wait,
            format!(
                "Spawn of {} already in progress{}",
                intent.map(|i| i.skill).unwrap_or_default(),
                if completes {
                    ", completing after it"
                } else {
                    ""
                }
            ),
        ),
        SpawnCheck::WorkflowActive if completes => decision,
        SpawnCheck::WorkflowActive => Decision::new(Action::Wait, "Workflow already active"),
    }
}

/// A transition is written as two files, the state first: a runner that died between the
/// two leaves the state on the next step and the run on the one before (found by killing
/// the runner after each step). The state is the file the runner trusts and nothing was
/// spawned yet (the spawn comes after both writes), so the run moves on with it, logged.
/// Only that exact case: a state further ahead, or behind, is left to validation (G7.7).
/// Returns whether the run was mended.
pub fn mend_torn_transition(
    state: &OrchestrationState,
    execution: &mut OrchestrationExecution,
    now_ms: i64,
) -> bool {
    let (Some(step), Some(_)) = (
        &state.orchestration.step.current,
        torn_from(state, execution),
    ) else {
        return false;
    };
    execution.current_phase = Some(ExecutionPhase::from(step));
    log(
        execution,
        "mended",
        format!("The run moves on to {step} with the state (its last write was cut short)"),
        None,
        now_ms,
    );
    true
}

/// What the loop does after `decision` when it carried out nothing slow (no spawn, no
/// helper): stop once the run is over, back off after a failed lookup, go on at once after
/// bookkeeping steps, else poll.
pub fn next_after(decision: &Decision, execution: &OrchestrationExecution) -> Next {
    if execution.status.is_finished() {
        return Next::Stop;
    }
    match decision.action {
        Action::Stop | Action::Complete | Action::Fail => Next::Stop,
        Action::WaitWithBackoff => Next::Backoff(decision.backoff_ms.unwrap_or(1_000)),
        Action::Transition
        | Action::AdvanceBatch
        | Action::InitializeBatches
        | Action::ForceStepComplete => Next::Again,
        _ => Next::Poll,
    }
}

/// Whether `after` is `before` plus a log entry equal to the previous one, and nothing else:
/// such a decision (a wait repeated at every poll) is not written again, which keeps the log
/// to the decisions that differ and an idle run from rewriting its file at every poll.
pub fn is_repeat(before: &OrchestrationExecution, after: &OrchestrationExecution) -> bool {
    let (Some(new), Some(prev)) = (after.decision_log.last(), before.decision_log.last()) else {
        return false;
    };
    if (new.decision.as_str(), new.reason.as_str(), &new.data)
        != (prev.decision.as_str(), prev.reason.as_str(), &prev.data)
    {
        return false;
    }
    let mut a = after.clone();
    a.decision_log.pop();
    a.updated_at.clone_from(&before.updated_at);
    a == *before
}
