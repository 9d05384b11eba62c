//! Tasks the run skips: the helper's "skip tasks" answer records them under
//! [`BLOCKED_TASKS_KEY`] (`[{"task", "reason"}]`); they stay out of every later batch's
//! prompt until the user unblocks them.

use super::journal::BLOCKED_TASKS_KEY;
use super::specflow_files::{BatchItem, OrchestrationExecution};
use serde_json::Value;

/// The ids of the tasks `execution` has blocked, in the order they were blocked, once each.
pub fn blocked_tasks(execution: &OrchestrationExecution) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let entries = execution
        .extra
        .get(BLOCKED_TASKS_KEY)
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for e in entries {
        // The key's shape is `{"task", "reason"}`; a bare id is read too.
        let id = e.get("task").and_then(Value::as_str).or_else(|| e.as_str());
        if let Some(id) = id.filter(|t| !t.is_empty()) {
            if !out.iter().any(|t| t == id) {
                out.push(id.to_string());
            }
        }
    }
    out
}

/// The tasks of `batch` that are not blocked.
pub fn open_tasks(batch: &BatchItem, execution: &OrchestrationExecution) -> Vec<String> {
    let blocked = blocked_tasks(execution);
    batch
        .task_ids
        .iter()
        .filter(|t| !blocked.contains(t))
        .cloned()
        .collect()
}

/// The instruction for `batch`'s workflow: its open tasks in its section, or, when every
/// task is blocked, that there is nothing to do (the batch ends with the agent's turn).
pub fn batch_context(batch: &BatchItem, execution: &OrchestrationExecution) -> String {
    let open = open_tasks(batch, execution);
    if open.is_empty() && !batch.task_ids.is_empty() {
        return format!(
            "Nothing to execute in section \"{}\": its tasks {} are blocked; change nothing",
            batch.section,
            batch.task_ids.join(", ")
        );
    }
    format!(
        "Execute tasks {} in section \"{}\"",
        open.join(", "),
        batch.section
    )
}

/// Unblocks every blocked task of `execution`; how many there were.
pub fn unblock_all(execution: &mut OrchestrationExecution) -> usize {
    let n = blocked_tasks(execution).len();
    execution.extra.remove(BLOCKED_TASKS_KEY);
    n
}
