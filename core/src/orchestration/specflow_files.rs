//! The two specflow files orchestration reads and writes, in their JSON shapes.
//!
//! - `.specflow/orchestration-state.json` ([`OrchestrationState`]): the project's position,
//!   owned by specflow's sub-commands (`/flow.design` … set `step.status = "complete"`).
//! - `.specflow/workflows/orchestration-{id}.json` ([`OrchestrationExecution`]): one run's
//!   configuration, batches, costs and decision log, owned by the runner.
//!
//! Every struct keeps the keys it does not model in `extra`, so a file read and written back
//! loses nothing; every status is a lenient enum (see [`super::lenient`]); missing optional
//! fields take specflow's defaults.

use super::lenient::{lenient_enum, lenient_int, Nullable};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

lenient_enum! {
    /// One step of a phase, in order: design, analyze, implement, verify, merge.
    pub enum Step {
        /// `/flow.design`: specs and plan.
        Design = "design",
        /// `/flow.analyze`: consistency analysis.
        Analyze = "analyze",
        /// `/flow.implement`: the tasks, in batches.
        Implement = "implement",
        /// `/flow.verify`: checks before merging.
        Verify = "verify",
        /// `/flow.merge`: merge the phase branch.
        Merge = "merge",
    }
}

/// The run file's key for when the user last gave a command on the run (an RFC 3339 time).
pub const USER_ACTED_KEY: &str = "userActedAt";

/// The seed's `STEP_INDEX_MAP`: each step and its `step.index`.
pub const STEP_INDEX_MAP: [(Step, usize); 5] = [
    (Step::Design, 0),
    (Step::Analyze, 1),
    (Step::Implement, 2),
    (Step::Verify, 3),
    (Step::Merge, 4),
];

impl Step {
    /// The step's index per [`STEP_INDEX_MAP`]; none for an unknown step.
    pub fn index(&self) -> Option<usize> {
        STEP_INDEX_MAP
            .iter()
            .find(|(s, _)| s == self)
            .map(|&(_, i)| i)
    }

    /// The specflow skill that carries out this step (`flow.design`, …); none when unknown.
    pub fn skill(&self) -> Option<String> {
        self.is_known().then(|| format!("flow.{}", self.as_str()))
    }
}

/// The step after `step`; none after merge, and none for an unknown step (the decision
/// matrix refuses unknown steps before it asks).
pub fn next_step(step: &Step) -> Option<Step> {
    let i = step.index()?;
    STEP_INDEX_MAP.get(i + 1).map(|(s, _)| s.clone())
}

lenient_enum! {
    /// `step.status` in the project state (the seed's `VALID_STATUSES`).
    pub enum StepStatus {
        /// Not begun.
        NotStarted = "not_started",
        /// Valid per the seed's validation, but its decision matrix has no rule for it.
        Pending = "pending",
        /// A workflow is (or should be) working on it.
        InProgress = "in_progress",
        /// The sub-command finished it.
        Complete = "complete",
        /// The sub-command failed.
        Failed = "failed",
        /// The sub-command could not go on.
        Blocked = "blocked",
        /// Valid per the seed's validation, but its decision matrix has no rule for it.
        Skipped = "skipped",
    }
}

lenient_enum! {
    /// `phase.userGateStatus`: whether the user confirmed a USER_GATE phase.
    pub enum UserGateStatus {
        /// Not yet confirmed.
        Pending = "pending",
        /// Confirmed: merge may go ahead.
        Confirmed = "confirmed",
    }
}

/// `.specflow/orchestration-state.json`: the project-level position.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OrchestrationState {
    /// The `orchestration` object: phase, step and what the sub-commands keep there.
    #[serde(default)]
    pub orchestration: Orchestration,
    /// Every other key (`schema_version`, `project`, `health`, …), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `state.orchestration`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Orchestration {
    /// The active phase.
    #[serde(default)]
    pub phase: Phase,
    /// The step within the phase.
    #[serde(default)]
    pub step: StepState,
    /// Every other key (`next_phase`, `implement`, `dashboard`, …), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `state.orchestration.phase`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// The phase number (`"0010"`); specflow writes `null` when no phase is active.
    #[serde(default, skip_serializing_if = "Nullable::is_absent")]
    pub number: Nullable<Value>,
    /// Whether the phase ends at a USER_GATE that needs explicit confirmation.
    #[serde(
        rename = "hasUserGate",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub has_user_gate: Option<bool>,
    /// Whether the user confirmed the gate.
    #[serde(
        rename = "userGateStatus",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub user_gate_status: Option<UserGateStatus>,
    /// Every other key (`id`, `name`, `branch`, `status`, …), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Phase {
    /// Whether a phase is active: the seed's `!!phase.number`, i.e. JavaScript truthiness
    /// (`null`, `""`, `0` and `false` are no phase).
    pub fn has_number(&self) -> bool {
        match self.number.get() {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
            Some(Value::Bool(b)) => *b,
            Some(Value::Array(_) | Value::Object(_)) => true,
        }
    }

    /// Whether the USER_GATE still blocks merging (`hasUserGate && userGateStatus !== 'confirmed'`).
    pub fn gate_blocks(&self) -> bool {
        self.has_user_gate == Some(true) && self.user_gate_status != Some(UserGateStatus::Confirmed)
    }
}

/// `state.orchestration.step`: `{current, index, status}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepState {
    /// The current step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Step>,
    /// Its index; must equal [`Step::index`] of `current` (checked by validation).
    #[serde(
        default,
        deserialize_with = "lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub index: Option<i64>,
    /// Its status; `null` and absent both mean "not started" to the decision matrix.
    #[serde(default, skip_serializing_if = "Nullable::is_absent")]
    pub status: Nullable<StepStatus>,
    /// The sub-command's error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every other key, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

lenient_enum! {
    /// The run's `status` in the execution file.
    pub enum ExecutionStatus {
        /// The runner is deciding and acting.
        Running = "running",
        /// The user (or `pauseBetweenBatches`) paused it.
        Paused = "paused",
        /// Verify is done and `autoMerge` is off: the user merges.
        WaitingMerge = "waiting_merge",
        /// Verify is done and the phase's USER_GATE is unconfirmed.
        WaitingUserGate = "waiting_user_gate",
        /// Something went wrong; `recoveryContext` says what and what the user may do.
        NeedsAttention = "needs_attention",
        /// Every step is done.
        Completed = "completed",
        /// Stopped by a failure (e.g. the budget).
        Failed = "failed",
        /// Stopped by the user.
        Cancelled = "cancelled",
    }
}

lenient_enum! {
    /// The execution file's `currentPhase`: the step the run is on, or `complete`.
    pub enum ExecutionPhase {
        /// On design.
        Design = "design",
        /// On analyze.
        Analyze = "analyze",
        /// On implement.
        Implement = "implement",
        /// On verify.
        Verify = "verify",
        /// On merge.
        Merge = "merge",
        /// Past merge.
        Complete = "complete",
    }
}

impl From<&Step> for ExecutionPhase {
    fn from(s: &Step) -> Self {
        ExecutionPhase::parse(s.as_str())
    }
}

lenient_enum! {
    /// One implement batch's status.
    pub enum BatchStatus {
        /// Not started.
        Pending = "pending",
        /// A workflow is working on it.
        Running = "running",
        /// Done.
        Completed = "completed",
        /// Its workflow failed.
        Failed = "failed",
        /// Failed, then a healer fixed it: counts as done.
        Healed = "healed",
    }
}

impl ExecutionStatus {
    /// Completed, failed or cancelled: the run is over.
    pub fn is_finished(&self) -> bool {
        matches!(
            self,
            ExecutionStatus::Completed | ExecutionStatus::Failed | ExecutionStatus::Cancelled
        )
    }
}

impl BatchStatus {
    /// Done, either directly or after healing.
    pub fn is_done(&self) -> bool {
        matches!(self, BatchStatus::Completed | BatchStatus::Healed)
    }
}

/// `.specflow/workflows/orchestration-{id}.json`: one orchestration run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrchestrationExecution {
    /// The run's id.
    #[serde(default)]
    pub id: String,
    /// The run's status (required by specflow's schema).
    pub status: ExecutionStatus,
    /// The options chosen when the run started.
    #[serde(default)]
    pub config: ExecutionConfig,
    /// The step the run is on (`complete` when done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_phase: Option<ExecutionPhase>,
    /// Implement batches.
    #[serde(default)]
    pub batches: Batches,
    /// The workflow ids linked to each step.
    #[serde(default)]
    pub executions: Executions,
    /// When the run started (RFC 3339, kept as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When the file was last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// When the run completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// Every decision taken, oldest first.
    #[serde(default)]
    pub decision_log: Vec<DecisionLogEntry>,
    /// Dollars spent so far across all workflows.
    #[serde(default)]
    pub total_cost_usd: f64,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// What went wrong and what the user may do; required while `needs_attention`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_context: Option<RecoveryContext>,
    /// Consecutive failed workflow lookups (drives `wait_with_backoff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup_failures: Option<u32>,
    /// Step-level heal attempts (batch-level ones are on each batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal_attempts: Option<u32>,
    /// Every other key (`projectId`, `implement`, …), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OrchestrationExecution {
    /// A fresh running execution with specflow's default configuration.
    pub fn new(id: impl Into<String>, started_at: Timestamp) -> Self {
        OrchestrationExecution {
            id: id.into(),
            status: ExecutionStatus::Running,
            config: ExecutionConfig::default(),
            current_phase: Some(ExecutionPhase::Design),
            batches: Batches::default(),
            executions: Executions::default(),
            started_at: Some(started_at.to_string()),
            updated_at: Some(started_at.to_string()),
            completed_at: None,
            decision_log: Vec::new(),
            total_cost_usd: 0.0,
            error_message: None,
            recovery_context: None,
            lookup_failures: None,
            heal_attempts: None,
            extra: Map::new(),
        }
    }

    /// `startedAt` in milliseconds; none when missing or unreadable.
    pub fn started_at_ms(&self) -> Option<i64> {
        self.started_at
            .as_deref()
            .and_then(Timestamp::parse_rfc3339)
            .map(Timestamp::millis)
    }

    /// Where the 4-hour clock (G1.2) starts: the run's start, or the user's last command on
    /// it (`userActedAt`), whichever is later. A user who resumes or merges an old run has
    /// looked at it; without this a run older than 4 hours could never go on.
    pub fn duration_from_ms(&self) -> Option<i64> {
        let acted = self
            .extra
            .get(USER_ACTED_KEY)
            .and_then(serde_json::Value::as_str)
            .and_then(Timestamp::parse_rfc3339)
            .map(Timestamp::millis);
        match (self.started_at_ms(), acted) {
            (Some(s), Some(a)) => Some(s.max(a)),
            (s, a) => s.or(a),
        }
    }

    /// The batch `batches.current` points at, if it exists.
    pub fn current_batch(&self) -> Option<&BatchItem> {
        self.batches.items.get(self.batches.current)
    }
}

/// `config`: the options chosen when the run started, with specflow's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionConfig {
    /// Merge automatically once verify is complete.
    #[serde(default)]
    pub auto_merge: bool,
    /// Pause after each implement batch.
    #[serde(default)]
    pub pause_between_batches: bool,
    /// Try a healer workflow when a batch fails.
    #[serde(default = "default_true")]
    pub auto_heal_enabled: bool,
    /// Heal attempts allowed per batch (and per step).
    #[serde(default = "default_max_heal_attempts")]
    pub max_heal_attempts: u32,
    /// Spending limits.
    #[serde(default)]
    pub budget: Budget,
    /// Every other key (`additionalContext`, `skipDesign`, `batchSizeFallback`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for ExecutionConfig {
    fn default() -> Self {
        ExecutionConfig {
            auto_merge: false,
            pause_between_batches: false,
            auto_heal_enabled: true,
            max_heal_attempts: default_max_heal_attempts(),
            budget: Budget::default(),
            extra: Map::new(),
        }
    }
}

fn default_true() -> bool {
    true
}

fn default_max_heal_attempts() -> u32 {
    1
}

/// `config.budget`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The most the whole run may cost, in dollars (specflow's default: 50).
    #[serde(default = "default_max_total")]
    pub max_total: f64,
    /// Every other key (`maxPerBatch`, `healingBudget`, `decisionBudget`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_total: default_max_total(),
            extra: Map::new(),
        }
    }
}

fn default_max_total() -> f64 {
    50.0
}

/// `batches`: implement's batches and which one is current.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Batches {
    /// How many batches there are (0 until they are initialised).
    #[serde(default)]
    pub total: usize,
    /// The index of the current batch.
    #[serde(default)]
    pub current: usize,
    /// The batches, in order.
    #[serde(default)]
    pub items: Vec<BatchItem>,
    /// Every other key, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Batches {
    /// Whether there are batches and every one is completed or healed.
    pub fn all_done(&self) -> bool {
        // JavaScript's `[].every(..)` is true; here an empty list is not "all done", because
        // that would complete implement without running a single task.
        !self.items.is_empty() && self.items.iter().all(|b| b.status.is_done())
    }
}

/// One implement batch (one `##` section of `tasks.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchItem {
    /// Its position; must equal its place in `items` (checked by validation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// The `tasks.md` section it covers.
    #[serde(default)]
    pub section: String,
    /// The tasks it covers (`T001`, …).
    #[serde(default)]
    pub task_ids: Vec<String>,
    /// Its status (required by specflow's schema).
    pub status: BatchStatus,
    /// Heal attempts made for this batch.
    #[serde(default)]
    pub heal_attempts: u32,
    /// The batch workflow's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_execution_id: Option<String>,
    /// The latest healer workflow's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healer_execution_id: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every other key (`startedAt`, `completedAt`, …), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BatchItem {
    /// A pending batch at `index`.
    pub fn new(index: usize, section: impl Into<String>, task_ids: Vec<String>) -> Self {
        BatchItem {
            index: Some(index),
            section: section.into(),
            task_ids,
            status: BatchStatus::Pending,
            heal_attempts: 0,
            workflow_execution_id: None,
            healer_execution_id: None,
            error: None,
            extra: Map::new(),
        }
    }
}

/// `executions`: the workflow ids linked to each step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Executions {
    /// Design's workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    /// Analyze's workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analyze: Option<String>,
    /// Implement's workflows, one per batch.
    #[serde(default)]
    pub implement: Vec<String>,
    /// Verify's workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// Merge's workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<String>,
    /// Every other key (`healers`, …), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One `decisionLog` entry.
///
/// Specflow writes `{timestamp, decision, reason, data?}`; the seed speaks of
/// "time, action, reason", so `time` and `action` are read as aliases. Entries are written in
/// specflow's shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionLogEntry {
    /// When (RFC 3339).
    #[serde(default, alias = "time")]
    pub timestamp: String,
    /// The action taken (`wait`, `transition`, …).
    #[serde(default, alias = "action")]
    pub decision: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// The decision's other fields (`nextStep`, `batchIndex`, …), when it had any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
    /// Every other key, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `recoveryContext`: what went wrong and what the user may do about it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryContext {
    /// What went wrong.
    #[serde(default)]
    pub issue: String,
    /// What the user may do (`retry`, `skip`, `abort`).
    #[serde(default)]
    pub options: Vec<String>,
    /// The workflow behind the issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_workflow_id: Option<String>,
    /// Every other key, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
