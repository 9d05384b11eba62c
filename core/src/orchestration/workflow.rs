//! What the shell tells the decision matrix about the workflow linked to the current step.
//!
//! The core cannot look workflows up; the shell finds the id with
//! [`linked_workflow_id`](super::decide::linked_workflow_id), looks it up, and passes the
//! result (or `None` when the lookup found nothing) to [`decide`](super::decide::decide).
//!
//! The lookup must find finished workflows too, not only active ones: `None` for a linked
//! id means "not found", which decides `wait_with_backoff` (G1.7) whatever the step's
//! status, so a completed step whose workflow had been forgotten would never move on.

use super::lenient::lenient_enum;
use serde::{Deserialize, Serialize};

lenient_enum! {
    /// A workflow's status as the dashboard's workflow service reports it.
    pub enum WorkflowStatus {
        /// Working.
        Running = "running",
        /// Asked the user something and waits for the answer.
        WaitingForInput = "waiting_for_input",
        /// Finished.
        Completed = "completed",
        /// Ended in failure.
        Failed = "failed",
        /// Stopped by someone.
        Cancelled = "cancelled",
    }
}

impl WorkflowStatus {
    /// Completed, failed or cancelled: nothing will change it any more.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            WorkflowStatus::Completed | WorkflowStatus::Failed | WorkflowStatus::Cancelled
        )
    }
}

/// The linked workflow, as found by the shell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowView {
    /// Its execution id.
    pub id: String,
    /// Its status.
    pub status: WorkflowStatus,
    /// When it last showed activity (file or transcript change), in ms since the epoch.
    pub last_activity_ms: i64,
    /// What it has cost so far, in dollars.
    #[serde(default)]
    pub cost_usd: f64,
}

impl WorkflowView {
    /// Whether it still occupies the step: running or waiting for the user. A finished,
    /// failed or cancelled workflow does not, so the step may be spawned again.
    pub fn is_active(&self) -> bool {
        matches!(
            self.status,
            WorkflowStatus::Running | WorkflowStatus::WaitingForInput
        )
    }
}
