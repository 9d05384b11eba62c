//! How a step's workflow is seen to progress: an agent's activity, or a headless process's
//! exit code and result, mapped to a [`WorkflowStatus`]. The shell asks the server or reads
//! the process's files; these rules say what that means.

use super::workflow::WorkflowStatus;
use crate::view::activity::Activity;
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

/// How long a headless workflow's record may name no process before it is taken as never
/// started: 30 seconds. The process's wrapper writes its pid file before it starts the work,
/// within moments of its start, so a runner that died between starting it and recording its
/// pid leaves that file behind; a record without either, this long after, is of a runner that
/// died before the start.
pub const HEADLESS_START_GRACE_MS: i64 = 30_000;

/// A headless process without an exit code, as far as its pid shows (`alive`: `None` when no
/// pid is known yet, neither recorded nor written by its wrapper). Alive, it is active as of
/// its newest output (`newest_output_ms`: its transcript or error output); gone, it failed.
/// With no pid, it is unknown, not failed, for [`HEADLESS_START_GRACE_MS`] after
/// `started_at_ms`: it may be running, started by a runner that died before writing its pid,
/// and a failed step would be started again beside it.
pub fn headless_running(
    progress: &mut Progress,
    alive: Option<bool>,
    newest_output_ms: i64,
    started_at_ms: i64,
    now_ms: i64,
) {
    match alive {
        Some(true) => {
            progress.last_activity_ms = progress.last_activity_ms.max(newest_output_ms);
        }
        Some(false) => {
            progress.status = WorkflowStatus::Failed;
            progress.error = Some("the process ended without an exit code".into());
        }
        None if now_ms.saturating_sub(started_at_ms) < HEADLESS_START_GRACE_MS => {}
        None => {
            progress.status = WorkflowStatus::Failed;
            progress.error = Some("the process never started".into());
        }
    }
}
