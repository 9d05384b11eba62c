//! The seed's `validateState`: consistency of the project state, the execution, and the two
//! together (G7.1–G7.7). The runner validates before deciding; on violations it asks for a
//! fix and otherwise sets `needs_attention` with the violations as the issue.

use super::specflow_files::{
    ExecutionPhase, ExecutionStatus, OrchestrationExecution, OrchestrationState, Step,
};
use thiserror::Error;

/// One inconsistency. `Display` gives the seed's message.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Violation {
    /// `phase.number` is missing or empty.
    #[error("No active phase")]
    NoActivePhase,
    /// G7.1: `step.index` is not `STEP_INDEX_MAP[step.current]`.
    #[error("Step index mismatch: {step} should be {expected}, got {}", fmt_index(.actual))]
    StepIndexMismatch {
        /// `step.current`.
        step: Step,
        /// Its index per the map.
        expected: usize,
        /// `step.index` as found.
        actual: Option<i64>,
    },
    /// G7.2: `step.current` is not one of the five steps.
    #[error("Invalid step: {0}")]
    InvalidStep(String),
    /// G7.3: `step.status` is not one of the valid statuses.
    #[error("Invalid status: {0}")]
    InvalidStatus(String),
    /// G7.4: the batch at `position` says it is at `index`.
    #[error("Batch index mismatch: position {position} has index {}", fmt_batch_index(.index))]
    BatchIndexMismatch {
        /// Where it is in `items`.
        position: usize,
        /// Its `index` field.
        index: Option<usize>,
    },
    /// G7.5: `batches.current` is past the last batch while batches remain to be done.
    #[error("Batch current ({current}) >= total ({total})")]
    BatchCurrentOutOfRange {
        /// `batches.current`.
        current: usize,
        /// `batches.total`.
        total: usize,
    },
    /// `batches.total` disagrees with the number of items (not in the seed's list; without
    /// it "the current batch" and "all batches done" are ill-defined).
    #[error("Batch total ({total}) != number of batches ({items})")]
    BatchTotalMismatch {
        /// `batches.total`.
        total: usize,
        /// `batches.items.len()`.
        items: usize,
    },
    /// G7.6: `status` is `needs_attention` without a `recoveryContext`.
    #[error("needs_attention status requires recoveryContext")]
    MissingRecoveryContext,
    /// G7.7: the state's step and the execution's `currentPhase` disagree.
    #[error("Step mismatch: state has {state_step}, execution has {execution_phase}")]
    StepMismatch {
        /// `step.current` in the project state.
        state_step: Step,
        /// `currentPhase` in the execution.
        execution_phase: ExecutionPhase,
    },
}

fn fmt_index(i: &Option<i64>) -> String {
    i.map_or_else(|| "undefined".to_string(), |i| i.to_string())
}

fn fmt_batch_index(i: &Option<usize>) -> String {
    i.map_or_else(|| "undefined".to_string(), |i| i.to_string())
}

/// Every violation, in the seed's order: project state, then execution (when given), then
/// the two together. Empty means valid.
pub fn validate(
    state: &OrchestrationState,
    execution: Option<&OrchestrationExecution>,
) -> Vec<Violation> {
    let mut v = Vec::new();
    let phase = &state.orchestration.phase;
    let step = &state.orchestration.step;

    if !phase.has_number() {
        v.push(Violation::NoActivePhase);
    }

    // G7.2. A missing step is not reported here (the seed checks only a present one); the
    // decision matrix refuses it.
    if let Some(Step::Unknown(name)) = &step.current {
        v.push(Violation::InvalidStep(name.clone()));
    }

    // G7.3. `null` is a valid (not started) status.
    if let Some(status) = step.status.get() {
        if !status.is_known() {
            v.push(Violation::InvalidStatus(status.to_string()));
        }
    }

    // G7.1: only a known step has an expected index.
    if let Some(current) = &step.current {
        if let Some(expected) = current.index() {
            if step.index != i64::try_from(expected).ok() {
                v.push(Violation::StepIndexMismatch {
                    step: current.clone(),
                    expected,
                    actual: step.index,
                });
            }
        }
    }

    let Some(execution) = execution else {
        return v;
    };
    let batches = &execution.batches;

    // G7.4.
    for (position, b) in batches.items.iter().enumerate() {
        if b.index != Some(position) {
            v.push(Violation::BatchIndexMismatch {
                position,
                index: b.index,
            });
        }
    }

    // G7.5: current may sit at the end only once every batch is done.
    if batches.total > 0 && batches.current >= batches.total && !batches.all_done() {
        v.push(Violation::BatchCurrentOutOfRange {
            current: batches.current,
            total: batches.total,
        });
    }

    if batches.total != batches.items.len() {
        v.push(Violation::BatchTotalMismatch {
            total: batches.total,
            items: batches.items.len(),
        });
    }

    // G7.6.
    if execution.status == ExecutionStatus::NeedsAttention && execution.recovery_context.is_none() {
        v.push(Violation::MissingRecoveryContext);
    }

    // G7.7: linked files agree on the step (`currentPhase` is a step name, or `complete`).
    if phase.has_number() {
        if let (Some(state_step), Some(exec_phase)) = (&step.current, &execution.current_phase) {
            if state_step.as_str() != exec_phase.as_str() && *exec_phase != ExecutionPhase::Complete
            {
                v.push(Violation::StepMismatch {
                    state_step: state_step.clone(),
                    execution_phase: exec_phase.clone(),
                });
            }
        }
    }

    v
}
