//! An agent's activity and state as the API shows them, derived from stored rows only.

use crate::model::{AgentRow, TaskRow};
use crate::task::state::TaskState;
use serde::Serialize;

/// What the agent is doing right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    /// Working on a turn.
    Running,
    /// Finished its turn; ready for input.
    Idle,
    /// Waiting for an answer or a permission.
    Waiting,
    /// The Claude process has exited.
    Ended,
}

impl Activity {
    /// The lowercase name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Running => "running",
            Activity::Idle => "idle",
            Activity::Waiting => "waiting",
            Activity::Ended => "ended",
        }
    }
}

/// The agent's current task: the one whose command came last (ties broken by id).
pub fn current_task<'a>(tasks: impl IntoIterator<Item = &'a TaskRow>) -> Option<&'a TaskRow> {
    tasks.into_iter().max_by_key(|t| (t.started_at, t.id))
}

/// The state shown for an agent: its current task's, or idle without one.
pub fn agent_state(current: Option<&TaskRow>) -> TaskState {
    current.map(|t| t.state).unwrap_or(TaskState::Idle)
}

/// The activity shown for an agent.
pub fn agent_activity(agent: &AgentRow, current: Option<&TaskRow>) -> Activity {
    if agent.ended {
        return Activity::Ended;
    }
    if agent.sent_at.is_some() {
        return Activity::Running; // sent, its prompt not seen yet: never a false idle
    }
    if agent.waiting_permission {
        return Activity::Waiting;
    }
    match agent_state(current) {
        TaskState::Commanded | TaskState::Processing => Activity::Running,
        TaskState::AwaitingInput => Activity::Waiting,
        TaskState::Idle | TaskState::Complete => Activity::Idle,
    }
}
