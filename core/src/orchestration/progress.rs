//! How a step's workflow is seen to progress: an agent's activity, or a headless process's
//! exit code and result, mapped to a [`WorkflowStatus`]. The shell asks the server or reads
//! the process's files; these rules say what that means.

use super::workflow::WorkflowStatus;
use crate::activity::Activity;
use serde_json::Value;

/// What is known of a workflow between lookups (a record the shell keeps).
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Its status; final once completed, failed or cancelled.
    pub status: WorkflowStatus,
    /// Its last activity, ms since the epoch.
    pub last_activity_ms: i64,
    /// Its cost so far, in dollars.
    pub cost_usd: f64,
    /// Why it failed.
    pub error: Option<String>,
}

/// The activity the server names (`running`, `waiting`, `idle`, `ended`).
pub fn activity_named(name: &str) -> Option<Activity> {
    [
        Activity::Running,
        Activity::Waiting,
        Activity::Idle,
        Activity::Ended,
    ]
    .into_iter()
    .find(|a| a.as_str() == name)
}

/// A step typed into `agent`'s pane, as the agent's settled `activity` shows it at `now_ms`:
/// running (active as of `last_seen_ms`, when the server says), waiting for input, idle after
/// the send (done: the step's turn ended), or ended (failed). The activity must be settled
/// (two idle readings apart, as `headspace wait` gives it): a transient never ends a step.
pub fn follow_agent(
    progress: &mut Progress,
    activity: Activity,
    last_seen_ms: Option<i64>,
    agent: &str,
    now_ms: i64,
) {
    match activity {
        Activity::Running => {
            progress.status = WorkflowStatus::Running;
            if let Some(t) = last_seen_ms {
                progress.last_activity_ms = progress.last_activity_ms.max(t);
            }
        }
        Activity::Waiting => {
            progress.status = WorkflowStatus::WaitingForInput;
            progress.last_activity_ms = now_ms;
        }
        Activity::Idle => {
            progress.status = WorkflowStatus::Completed;
            progress.last_activity_ms = now_ms;
        }
        Activity::Ended => {
            progress.status = WorkflowStatus::Failed;
            progress.error = Some(format!("agent {agent} ended"));
        }
    }
}

/// A headless `claude -p --output-format json` process that exited with `exit_code` (the
/// text of its exit file), having printed `output` and `stderr`: completed when it exited 0
/// and its result is not an error, else failed with the exit code and the result (or the
/// error output); its cost is the result's `total_cost_usd`.
pub fn headless_exit(
    progress: &mut Progress,
    exit_code: &str,
    output: &str,
    stderr: &str,
    now_ms: i64,
) {
    let result: Value = serde_json::from_str(output.trim()).unwrap_or_default();
    progress.cost_usd = result["total_cost_usd"]
        .as_f64()
        .unwrap_or(progress.cost_usd);
    let ok = exit_code.trim() == "0" && result["is_error"] != true;
    progress.status = if ok {
        WorkflowStatus::Completed
    } else {
        WorkflowStatus::Failed
    };
    if !ok {
        progress.error = Some(format!(
            "exit {}: {}",
            exit_code.trim(),
            result["result"].as_str().unwrap_or(stderr.trim())
        ));
    }
    progress.last_activity_ms = now_ms;
}

/// A headless process without an exit code: still alive, it is active as of its newest
/// output (`newest_output_ms`: its transcript or error output); gone, it failed.
pub fn headless_running(progress: &mut Progress, alive: bool, newest_output_ms: i64) {
    if alive {
        progress.last_activity_ms = progress.last_activity_ms.max(newest_output_ms);
    } else {
        progress.status = WorkflowStatus::Failed;
        progress.error = Some("the process ended without an exit code".into());
    }
}
