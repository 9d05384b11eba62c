//! What a run keeps in its execution file besides its steps: the keys of its bookkeeping
//! (a spawn under way, blocked tasks, failed spawns, the phase, silences acknowledged) and
//! its decision log, which every part of the machine appends to ([`log`], [`escalate`]).

use super::apply::apply;
use super::decision::{Action, Decision};
use super::specflow_files::{DecisionLogEntry, OrchestrationExecution};
use crate::time::Timestamp;
use serde_json::{Map, Value};

/// The execution key holding the spawn intent (`{"skill", "timestamp"}`) while a spawn is
/// under way. It lives in the execution file so that the check and the record are one
/// locked read-modify-write, across processes.
pub const SPAWN_INTENT_KEY: &str = "spawnIntent";
/// The execution key mapping a workflow id to when the helper judged it alive although
/// silent: its silence counts from then.
pub const STALE_ACK_KEY: &str = "staleAcknowledged";
/// The execution key listing tasks recorded as blocked (`[{"task", "reason"}]`).
pub const BLOCKED_TASKS_KEY: &str = "blockedTasks";
/// The execution key counting consecutive failed spawns.
pub const SPAWN_FAILURES_KEY: &str = "spawnFailures";
/// The execution key holding the phase the run was started for (`{"number", "name", …}`),
/// which lets the heuristic rebuild a lost state file.
pub const PHASE_KEY: &str = "phase";
/// After this many spawns in a row fail, the run needs attention instead of retrying. With
/// the backoff between them (2 s, doubling) that is about two minutes: a server restart is
/// waited out (found by the orchestration simulation, which crashes the server).
pub const MAX_SPAWN_FAILURES: u64 = 7;

/// Sets `needs_attention` with a recovery context, through the decision bookkeeping (so it
/// is logged like any decision).
pub fn escalate(
    execution: &mut OrchestrationExecution,
    issue: &str,
    workflow: Option<&str>,
    now_ms: i64,
) {
    let mut d = Decision::new(Action::NeedsAttention, issue);
    d.workflow_id = workflow.map(str::to_string);
    apply(execution, &d, now_ms);
}

/// Appends an entry that is not a matrix decision (a spawn, a recovery, a user command) to
/// the decision log, in the same shape.
pub fn log(
    execution: &mut OrchestrationExecution,
    name: &str,
    reason: impl Into<String>,
    data: Option<Map<String, Value>>,
    now_ms: i64,
) {
    let at = Timestamp(now_ms).to_string();
    execution.decision_log.push(DecisionLogEntry {
        timestamp: at.clone(),
        decision: name.into(),
        reason: reason.into(),
        data,
        extra: Map::new(),
    });
    execution.updated_at = Some(at);
}
