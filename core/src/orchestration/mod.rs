//! # Orchestration: what the runner does next, decided purely
//!
//! Specflow runs a phase as five steps — design, analyze, implement (in batches), verify,
//! merge — each carried out by a sub-command workflow that marks `step.status = "complete"`
//! when done. The runner trusts that file: it reads the state, decides, acts, and waits. This
//! module is the deciding part, with no I/O and no clock (time is a parameter), so every
//! rule of the orchestration simplification plan is a unit-testable function.
//!
//! | piece | what it is |
//! |---|---|
//! | [`state`] | the two files' types: [`OrchestrationState`] (`.specflow/orchestration-state.json`) and [`OrchestrationExecution`] (`.specflow/workflows/orchestration-{id}.json`), read leniently and written back without loss; [`STEP_INDEX_MAP`], [`next_step`] |
//! | [`workflow`] | [`WorkflowView`]: what the shell found when it looked up the linked workflow |
//! | [`decision`] | [`Decision`] and [`Action`]: `{"action": "wait", "reason": "…", …}` |
//! | [`decide`](mod@decide) | [`decide()`](decide::decide): gates (budget, duration), batches ([`decide_batch`]), workflow status, step status (G1, G2) |
//! | [`validate`](mod@validate) | [`validate()`](validate::validate): the consistency checks (G7), each a [`Violation`] |
//! | [`apply`](mod@apply) | [`apply()`](apply::apply) / [`apply_to_state`]: a decision's bookkeeping on the files (decision log, batch index, heal attempts, status) |
//! | [`spawn`] | the spawn-intent guard: [`spawn_intent_is_stale`], [`spawn_check`] |
//! | [`observe`] | [`observe_workflow`]: the linked workflow's cost and end folded into the files before deciding |
//! | [`recovery`] | the helper's three cases and their fallback chains: [`recovered_state`], [`stale_recovery`], [`failed_recovery`] |
//! | [`tasks`] | [`parse_batches`]: implement's batches from `tasks.md` |
//! | [`lenient`] | unknown names kept as `Unknown(..)`, `null` kept as `null` |
//!
//! ## One iteration of the runner (the shell's part in brackets)
//!
//! 1. \[Read both files and look up [`linked_workflow_id`].\]
//! 2. [`validate()`](validate::validate); on violations \[try a fix, else\] set needs-attention.
//! 3. [`decide()`](decide::decide) with the current time.
//! 4. [`apply()`](apply::apply) and [`apply_to_state`], \[write the files atomically, then carry
//!    out the action: spawn (guarded by [`spawn_check`]), kill, ask the Claude helper\].
//! 5. \[Wait for an event or the poll interval.\]
//!
//! Unknown statuses are never a silent default: they decide [`Action::RecoverUnknown`] and log
//! an ERROR.

pub mod apply;
pub mod decide;
pub mod decision;
pub mod lenient;
pub mod observe;
pub mod recovery;
pub mod spawn;
pub mod state;
pub mod tasks;
pub mod validate;
pub mod workflow;

pub use apply::{apply, apply_to_state};
pub use decide::{
    backoff_ms, decide, decide_batch, decide_checked, linked_workflow_id, MAX_DURATION_MS,
    STALE_THRESHOLD_MS,
};
pub use decision::{Action, Decision};
pub use lenient::Nullable;
pub use observe::{observe_workflow, WORKFLOW_COSTS_KEY};
pub use recovery::{
    failed_needs_helper, failed_recovery, recovered_state, stale_recovery, Recovery, RecoveryPlan,
};
pub use spawn::{spawn_check, spawn_intent_is_stale, SpawnCheck, SpawnIntent, SPAWN_INTENT_TTL_MS};
pub use state::{
    next_step, BatchItem, BatchStatus, Batches, Budget, DecisionLogEntry, ExecutionConfig,
    ExecutionPhase, ExecutionStatus, Executions, Orchestration, OrchestrationExecution,
    OrchestrationState, Phase, RecoveryContext, Step, StepState, StepStatus, UserGateStatus,
    STEP_INDEX_MAP, USER_ACTED_KEY,
};
pub use tasks::parse_batches;
pub use validate::{validate, Violation};
pub use workflow::{WorkflowStatus, WorkflowView};
