//! A decision: one action for the runner, why, and what it needs to carry it out.

use super::specflow_files::Step;
use serde::{Deserialize, Serialize};

/// What the runner does next. Serialised as the seed's snake_case names (`recover_stale`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Nothing to do now; look again after the poll interval.
    Wait,
    /// The linked workflow could not be found; count the failure and wait `backoffMs`.
    WaitWithBackoff,
    /// The running workflow has been silent too long; diagnose it (`workflowId`).
    RecoverStale,
    /// Verify is done but the phase's USER_GATE is unconfirmed.
    WaitUserGate,
    /// Verify is done and `autoMerge` is off; the user merges.
    WaitMerge,
    /// Move to `nextStep` (`nextIndex`) and spawn its workflow.
    Transition,
    /// Every step is done; mark the run completed.
    Complete,
    /// The step or batch failed or is blocked; diagnose and heal (`error`).
    RecoverFailed,
    /// Spawn the workflow for the current step (`skill`).
    Spawn,
    /// Stop the run as failed (the budget is spent).
    Fail,
    /// Stop and ask the user (the run took too long).
    NeedsAttention,
    /// Parse `tasks.md` into batches.
    InitializeBatches,
    /// All batches are done but the step is not marked complete; mark it.
    ForceStepComplete,
    /// Spawn the current batch's workflow (`batchIndex`, `skill`, `context`).
    SpawnBatch,
    /// Pause the run (between batches); `batchIndex` is the batch to run on resume.
    Pause,
    /// Make `batchIndex` the current batch.
    AdvanceBatch,
    /// Count a heal attempt for `batchIndex` and spawn a healer.
    HealBatch,
    /// A state no rule covers (an unknown status); logged as an error, diagnose it.
    RecoverUnknown,
    /// The run is already completed, failed or cancelled; the runner loop ends.
    Stop,
}

impl Action {
    /// The snake_case name, as in the JSON and the decision log.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Wait => "wait",
            Action::WaitWithBackoff => "wait_with_backoff",
            Action::RecoverStale => "recover_stale",
            Action::WaitUserGate => "wait_user_gate",
            Action::WaitMerge => "wait_merge",
            Action::Transition => "transition",
            Action::Complete => "complete",
            Action::RecoverFailed => "recover_failed",
            Action::Spawn => "spawn",
            Action::Fail => "fail",
            Action::NeedsAttention => "needs_attention",
            Action::InitializeBatches => "initialize_batches",
            Action::ForceStepComplete => "force_step_complete",
            Action::SpawnBatch => "spawn_batch",
            Action::Pause => "pause",
            Action::AdvanceBatch => "advance_batch",
            Action::HealBatch => "heal_batch",
            Action::RecoverUnknown => "recover_unknown",
            Action::Stop => "stop",
        }
    }
}

/// One decision. JSON: `{"action": "transition", "reason": "…", "nextStep": "merge",
/// "nextIndex": 4}`; fields that do not apply are left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// What to do.
    pub action: Action,
    /// Why, for the decision log and the user.
    pub reason: String,
    /// `transition`: the step to move to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<Step>,
    /// `transition`: that step's index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_index: Option<usize>,
    /// `spawn_batch`, `advance_batch`, `heal_batch`, `pause`: the batch concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_index: Option<usize>,
    /// `recover_stale`: the silent workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// `wait_with_backoff`: how long to wait, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
    /// `spawn`, `spawn_batch`: the skill to run (`flow.implement`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// `spawn_batch`: the instructions given to the skill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// `recover_failed`: the step's or batch's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Decision {
    /// A decision with only an action and a reason.
    pub fn new(action: Action, reason: impl Into<String>) -> Self {
        Decision {
            action,
            reason: reason.into(),
            next_step: None,
            next_index: None,
            batch_index: None,
            workflow_id: None,
            backoff_ms: None,
            skill: None,
            context: None,
            error: None,
        }
    }

    /// The same decision about batch `i`.
    pub fn with_batch(mut self, i: usize) -> Self {
        self.batch_index = Some(i);
        self
    }

    /// The same decision running `skill`.
    pub fn with_skill(mut self, skill: Option<String>) -> Self {
        self.skill = skill;
        self
    }

    /// The same decision carrying `error`.
    pub fn with_error(mut self, error: Option<String>) -> Self {
        self.error = error;
        self
    }
}
