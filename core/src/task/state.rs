//! Task states and the transition table: all 60 (state × actor × intent) combinations.

use crate::task::intent::{is_bare_confirmation, Actor, Intent};
use serde::{Deserialize, Serialize};

/// The state of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Opened, no command yet (a task seen only through agent output starts here).
    Idle,
    /// The user gave a command; the agent has not answered yet.
    Commanded,
    /// The agent is working.
    Processing,
    /// The agent asked something and waits for the user.
    AwaitingInput,
    /// The task is finished.
    Complete,
}

impl TaskState {
    /// All states, in table order.
    pub const ALL: [TaskState; 5] = [
        TaskState::Idle,
        TaskState::Commanded,
        TaskState::Processing,
        TaskState::AwaitingInput,
        TaskState::Complete,
    ];

    /// The lowercase name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Idle => "idle",
            TaskState::Commanded => "commanded",
            TaskState::Processing => "processing",
            TaskState::AwaitingInput => "awaiting_input",
            TaskState::Complete => "complete",
        }
    }

    /// Parses the API name.
    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// What a turn does to the task it lands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The task moves to (or stays in) this state.
    To(TaskState),
    /// The task is complete: the command opens a new task.
    OpenNew,
    /// This task completes and the command opens a new task (AWAITING_INPUT + user COMMAND).
    CompleteAndOpenNew,
    /// Not a valid transition: the turn is kept, the state is unchanged, a WARN is logged.
    Reject,
}

use Actor::{Agent as A, User as U};
use Intent::{
    Answer as ANS, Command as CMD, Completion as CMP, EndOfTask as EOT, Progress as PRG,
    Question as QST,
};
use Outcome::{CompleteAndOpenNew, OpenNew, Reject, To};
use TaskState::{
    AwaitingInput as AWAIT, Commanded as CMDED, Complete as DONE, Idle as IDLE, Processing as PROC,
};

/// The whole table. Each row says why; `Reject` rows are combinations that cannot occur
/// when Claude Code behaves (an agent cannot give a command, a user cannot report
/// completion), kept invalid so that a bug upstream shows up as a WARN instead of a silent
/// state change. A rejection never loses the turn.
pub const TRANSITIONS: [(TaskState, Actor, Intent, Outcome); 60] = [
    // IDLE: a fresh task.
    (IDLE, U, CMD, To(CMDED)), // the normal start
    (IDLE, U, ANS, To(PROC)),  // an answer to a question we never saw: work resumes
    (IDLE, U, QST, Reject),    // users do not produce agent intents
    (IDLE, U, CMP, Reject),
    (IDLE, U, PRG, Reject),
    (IDLE, U, EOT, Reject),
    (IDLE, A, CMD, Reject),    // agents do not give commands
    (IDLE, A, ANS, Reject),    // agents do not answer
    (IDLE, A, QST, To(AWAIT)), // defensive (seed): question from idle, e.g. after resume
    (IDLE, A, CMP, To(DONE)),  // defensive (seed): deferred completion
    (IDLE, A, PRG, To(PROC)),  // defensive (seed): output before the command was processed
    (IDLE, A, EOT, To(DONE)),  // defensive (seed): end of task from idle
    // COMMANDED: waiting for the agent's first output.
    (CMDED, U, CMD, To(CMDED)), // defensive (seed): follow-up before the agent responds
    (CMDED, U, ANS, To(CMDED)), // a confirmation before the agent responds
    (CMDED, U, QST, Reject),
    (CMDED, U, CMP, Reject),
    (CMDED, U, PRG, Reject),
    (CMDED, U, EOT, Reject),
    (CMDED, A, CMD, Reject),
    (CMDED, A, ANS, Reject),
    (CMDED, A, QST, To(AWAIT)), // the agent asks first
    (CMDED, A, CMP, To(DONE)),  // a quick task done in one reply
    (CMDED, A, PRG, To(PROC)),  // the agent starts working
    (CMDED, A, EOT, To(DONE)),
    // PROCESSING: the agent works.
    (PROC, U, CMD, To(PROC)), // defensive (seed): message typed while the agent works
    (PROC, U, ANS, To(PROC)), // a bare confirmation while processing
    (PROC, U, QST, Reject),
    (PROC, U, CMP, Reject),
    (PROC, U, PRG, Reject),
    (PROC, U, EOT, Reject),
    (PROC, A, CMD, Reject),
    (PROC, A, ANS, Reject),
    (PROC, A, QST, To(AWAIT)), // the agent asks
    (PROC, A, CMP, To(DONE)),  // the agent finishes
    (PROC, A, PRG, To(PROC)),  // more work
    (PROC, A, EOT, To(DONE)),
    // AWAITING_INPUT: a question is open.
    (AWAIT, U, CMD, CompleteAndOpenNew), // the user moves on: this task ends, a new one opens
    (AWAIT, U, ANS, To(PROC)),           // the answer: work resumes
    (AWAIT, U, QST, Reject),
    (AWAIT, U, CMP, Reject),
    (AWAIT, U, PRG, Reject),
    (AWAIT, U, EOT, Reject),
    (AWAIT, A, CMD, Reject),
    (AWAIT, A, ANS, Reject),
    (AWAIT, A, QST, To(AWAIT)), // a follow-up question (agent 583)
    (AWAIT, A, CMP, To(DONE)),  // the agent finished without the answer
    (AWAIT, A, PRG, To(PROC)),  // the agent went on (e.g. permission granted in the TUI)
    (AWAIT, A, EOT, To(DONE)),
    // COMPLETE: finished.
    (DONE, U, CMD, OpenNew), // the next command opens the next task
    (DONE, U, ANS, OpenNew), // a reply after completion is a new request
    (DONE, U, QST, Reject),
    (DONE, U, CMP, Reject),
    (DONE, U, PRG, Reject),
    (DONE, U, EOT, Reject),
    (DONE, A, CMD, Reject),
    (DONE, A, ANS, Reject),
    (DONE, A, QST, To(AWAIT)), // a late question after the summary
    (DONE, A, CMP, To(DONE)),  // a second summary
    (DONE, A, PRG, To(DONE)),  // late output of a finished task stays finished
    (DONE, A, EOT, To(DONE)),
];

/// Detects the intent of a user text given the state of the task it lands in.
pub fn detect_user(text: &str, state: Option<TaskState>) -> Intent {
    match state {
        Some(TaskState::AwaitingInput) => Intent::Answer,
        Some(TaskState::Processing) if is_bare_confirmation(text) => Intent::Answer,
        _ => Intent::Command,
    }
}

/// Looks up what `(state, actor, intent)` does.
pub fn transition(state: TaskState, actor: Actor, intent: Intent) -> Outcome {
    TRANSITIONS
        .iter()
        .find(|(s, a, i, _)| *s == state && *a == actor && *i == intent)
        .map(|r| r.3)
        .unwrap_or(Reject)
}

/// What an end-of-turn signal (Stop hook, `turn_duration`, `stop_hook_summary`, interrupt)
/// does: a task still marked as worked on is finished; an open question stays open.
pub fn on_turn_end(state: TaskState) -> Option<TaskState> {
    match state {
        TaskState::Commanded | TaskState::Processing => Some(TaskState::Complete),
        TaskState::Idle | TaskState::AwaitingInput | TaskState::Complete => None,
    }
}

/// The WARN logged when a transition is rejected: the turn is kept, the state unchanged.
pub fn preserved_warning(
    component: &str,
    from: TaskState,
    actor: Actor,
    intent: Intent,
    turn_id: u64,
) -> String {
    let actor = match actor {
        Actor::User => "user",
        Actor::Agent => "agent",
    };
    format!(
        "[{component}] state transition failed: from={} actor={actor} intent={} error=invalid transition — turn {turn_id} preserved",
        from.as_str(),
        intent.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_intent_depends_on_state() {
        assert_eq!(
            detect_user("use postgres", Some(TaskState::AwaitingInput)),
            Intent::Answer
        );
        assert_eq!(
            detect_user("yes", Some(TaskState::Processing)),
            Intent::Answer
        );
        assert_eq!(
            detect_user("Go ahead!", Some(TaskState::Processing)),
            Intent::Answer
        );
        assert_eq!(
            detect_user("refactor the parser", Some(TaskState::Processing)),
            Intent::Command
        );
        assert_eq!(
            detect_user("yes", Some(TaskState::Complete)),
            Intent::Command
        );
        assert_eq!(detect_user("yes", None), Intent::Command);
    }

    #[test]
    fn table_covers_every_combination_once() {
        for s in TaskState::ALL {
            for a in [A, U] {
                for i in Intent::ALL {
                    let n = TRANSITIONS
                        .iter()
                        .filter(|r| r.0 == s && r.1 == a && r.2 == i)
                        .count();
                    assert_eq!(n, 1, "{s:?} {a:?} {i:?}");
                }
            }
        }
    }

    #[test]
    fn seed_defensive_transitions() {
        // AC 2.1, 2.2 and the rest of the seed's six.
        assert_eq!(transition(IDLE, A, PRG), To(PROC));
        assert_eq!(transition(IDLE, A, QST), To(AWAIT));
        assert_eq!(transition(IDLE, A, CMP), To(DONE));
        assert_eq!(transition(IDLE, A, EOT), To(DONE));
        assert_eq!(transition(CMDED, U, CMD), To(CMDED));
        assert_eq!(transition(PROC, U, CMD), To(PROC));
    }

    #[test]
    fn awaiting_input_rows() {
        assert_eq!(transition(AWAIT, A, QST), To(AWAIT));
        assert_eq!(transition(AWAIT, A, PRG), To(PROC));
        assert_eq!(transition(AWAIT, U, CMD), CompleteAndOpenNew);
    }

    #[test]
    fn every_production_combination_is_accepted() {
        // AC 2.3: every combination the detectors can produce for a real actor is valid.
        for s in TaskState::ALL {
            for i in [QST, CMP, PRG, EOT] {
                assert_ne!(transition(s, A, i), Reject, "{s:?} agent {i:?}");
            }
            for i in [CMD, ANS] {
                assert_ne!(transition(s, U, i), Reject, "{s:?} user {i:?}");
            }
        }
    }
}
