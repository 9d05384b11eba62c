//! What a card shows the user about an agent, decided once, here: its shown state (does it
//! need you, is it working, is it done), whether it is a sub-agent's session, and whether
//! its finish is news. The card carries each as a field (`shown`, `sub_agent`,
//! `notable_finish`); the dashboard draws them and never decides them again, and the
//! notices (`notice.rs`) follow the same answers.

use crate::task::state::TaskState;
use crate::view::activity::Activity;

/// The state a card shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// It waits on the user: a question or a permission.
    Waiting,
    /// It works on a turn (or a prompt sent to it is not seen yet).
    Working,
    /// Its machine stopped reporting: neither running nor idle can be said.
    Unknown,
    /// It finished its task.
    Done,
    /// Nothing to do.
    Idle,
    /// Its process exited.
    Ended,
}

impl Shown {
    /// The state shown for an agent doing `activity` on task state `state`, its machine
    /// reporting. The activity decides first: an agent whose task awaits input but to which
    /// the user just sent text is working (the text answers it), not waiting.
    pub fn of(activity: Activity, state: TaskState) -> Shown {
        match activity {
            Activity::Ended => Shown::Ended,
            Activity::Waiting => Shown::Waiting,
            Activity::Running => Shown::Working,
            Activity::Idle if state == TaskState::Complete => Shown::Done,
            Activity::Idle => Shown::Idle,
        }
    }

    /// The state shown for an agent doing `activity` while its machine does not report:
    /// ended stays ended; anything else cannot be said.
    pub fn offline(activity: Activity) -> Shown {
        if activity == Activity::Ended {
            Shown::Ended
        } else {
            Shown::Unknown
        }
    }

    /// The name in the card's `shown` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Shown::Waiting => "waiting",
            Shown::Working => "working",
            Shown::Unknown => "unknown",
            Shown::Done => "done",
            Shown::Idle => "idle",
            Shown::Ended => "ended",
        }
    }
}

/// True for a sub-agent's session (its transcript lives under `subagents/`, or is named
/// `agent-…`): its parent's news is what the user follows.
pub fn is_sub_agent(transcript_path: Option<&str>) -> bool {
    transcript_path.is_some_and(|p| {
        p.contains("/subagents/")
            || p.rsplit('/')
                .next()
                .is_some_and(|name| name.starts_with("agent-"))
    })
}

/// Whether a finished task is news: not a sub-agent's, not a slash command's (`/clear`).
pub fn notable_finish(transcript_path: Option<&str>, command: Option<&str>) -> bool {
    !is_sub_agent(transcript_path) && !command.is_some_and(|c| c.trim_start().starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_awaiting_input_with_text_sent_to_it_is_working_not_waiting() {
        // The case the page once decided otherwise (it said "needs you").
        assert_eq!(
            Shown::of(Activity::Running, TaskState::AwaitingInput),
            Shown::Working
        );
        assert_eq!(
            Shown::of(Activity::Waiting, TaskState::AwaitingInput),
            Shown::Waiting
        );
        assert_eq!(Shown::of(Activity::Idle, TaskState::Complete), Shown::Done);
        assert_eq!(Shown::of(Activity::Idle, TaskState::Idle), Shown::Idle);
        assert_eq!(Shown::offline(Activity::Running), Shown::Unknown);
        assert_eq!(Shown::offline(Activity::Ended), Shown::Ended);
    }

    #[test]
    fn sub_agents_and_slash_commands_are_not_news() {
        let sub = Some("/h/.claude/projects/p/s/subagents/agent-1.jsonl");
        let main = Some("/h/.claude/projects/p/5e55.jsonl");
        assert!(is_sub_agent(sub));
        assert!(is_sub_agent(Some("/h/.claude/projects/p/agent-9.jsonl")));
        assert!(!is_sub_agent(main));
        assert!(notable_finish(main, Some("fix the bug")));
        assert!(!notable_finish(main, Some("  /clear")));
        assert!(!notable_finish(sub, Some("fix the bug")));
    }
}
