//! Intent detection: what a turn's text means for its task.
//!
//! A pipeline of ordered checks, each a named phase, so a reader can tell why a text got
//! its intent. Agent text: blank → end-of-task phrases → trailing question → continuation
//! guard → completion phrases → question phrases → progress. User text: answer when the task
//! awaits input, or a bare confirmation while it is processing; otherwise a command.

use serde::{Deserialize, Serialize};

/// Who spoke a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The human (or a script typing for them).
    User,
    /// Claude.
    Agent,
}

/// What a turn means for its task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// The user asks for work: opens a task.
    Command,
    /// The user answers a question.
    Answer,
    /// The agent asks the user something.
    Question,
    /// The agent reports the work done.
    Completion,
    /// The agent reports progress and goes on.
    Progress,
    /// The agent hands the task back, finished.
    EndOfTask,
}

impl Intent {
    /// All intents, in table order.
    pub const ALL: [Intent; 6] = [
        Intent::Command,
        Intent::Answer,
        Intent::Question,
        Intent::Completion,
        Intent::Progress,
        Intent::EndOfTask,
    ];

    /// The lowercase name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Command => "command",
            Intent::Answer => "answer",
            Intent::Question => "question",
            Intent::Completion => "completion",
            Intent::Progress => "progress",
            Intent::EndOfTask => "end_of_task",
        }
    }
}

/// Which phase of the agent pipeline decided, for logs and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The text was blank.
    Blank,
    /// A hand-back phrase ("let me know if you need anything else").
    EndOfTask,
    /// The last line ends with a question mark.
    TrailingQuestion,
    /// The last line announces more work ("Let me…", ends with ':').
    Continuation,
    /// A completion phrase ("all tests pass", "I've implemented").
    Completion,
    /// A question phrase without a trailing '?' ("please confirm").
    Question,
    /// Nothing matched.
    Default,
}

const END_OF_TASK: &[&str] = &[
    "anything else you'd like",
    "anything else you would like",
    "anything else i can help",
    "anything else you need",
    "let me know if you need anything",
    "let me know if you'd like any",
    "let me know if you want any",
    "let me know if you have any other",
    "let me know if there's anything else",
    "feel free to ask",
    "happy to help with anything else",
];

const CONTINUATION_STARTS: &[&str] = &[
    "let me ",
    "now let me ",
    "i'll ",
    "i will ",
    "now i'll ",
    "next, ",
    "next i",
    "first, ",
    "let's ",
    "now let's ",
    "i'm going to ",
    "i need to ",
];

const COMPLETION: &[&str] = &[
    "all tests pass",
    "all tests are passing",
    "tests pass",
    "i've completed",
    "i have completed",
    "i've finished",
    "i have finished",
    "i've implemented",
    "i have implemented",
    "i've fixed",
    "i have fixed",
    "i've updated",
    "i've created",
    "i've added",
    "i've made the",
    "successfully",
    "is complete",
    "is now complete",
    "are complete",
    "has been completed",
    "have been completed",
    "is done",
    "all done",
    "summary of changes",
    "here's a summary",
    "here is a summary",
    "the fix is in",
    "changes are in place",
];

const QUESTION: &[&str] = &[
    "would you like",
    "do you want",
    "should i ",
    "shall i ",
    "which option",
    "which approach",
    "which one",
    "please confirm",
    "please choose",
    "please let me know which",
    "could you clarify",
    "can you clarify",
    "can you confirm",
    "could you confirm",
    "what would you prefer",
];

/// Detects the intent of an agent text, with the phase that decided.
pub fn detect_agent(text: &str) -> (Intent, Phase) {
    let lower = text.trim().to_lowercase();
    if lower.is_empty() {
        return (Intent::Progress, Phase::Blank);
    }
    if END_OF_TASK.iter().any(|p| lower.contains(p)) {
        return (Intent::EndOfTask, Phase::EndOfTask);
    }
    let last = last_prose_line(&lower);
    if last
        .trim_end_matches(['*', '_', ')', '"', '`', ' '])
        .ends_with('?')
    {
        return (Intent::Question, Phase::TrailingQuestion);
    }
    let last_trim = last.trim_start_matches(['*', '_', '#', '-', ' ']);
    if last.ends_with(':') || CONTINUATION_STARTS.iter().any(|p| last_trim.starts_with(p)) {
        return (Intent::Progress, Phase::Continuation);
    }
    if COMPLETION.iter().any(|p| lower.contains(p)) || lower.starts_with("done") {
        return (Intent::Completion, Phase::Completion);
    }
    if QUESTION.iter().any(|p| lower.contains(p)) {
        return (Intent::Question, Phase::Question);
    }
    (Intent::Progress, Phase::Default)
}

/// The intent of a final assistant message (a Stop hook's `last_assistant_message`): the turn
/// has ended, so a text that is not a question or a hand-back is a completion.
pub fn detect_agent_final(text: &str) -> Intent {
    match detect_agent(text).0 {
        Intent::Question => Intent::Question,
        Intent::EndOfTask => Intent::EndOfTask,
        _ => Intent::Completion,
    }
}

/// The last non-empty line outside code fences.
fn last_prose_line(lower: &str) -> &str {
    let mut in_fence = false;
    let mut last = "";
    for line in lower.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence && !t.is_empty() {
            last = t;
        }
    }
    last
}

const CONFIRMATIONS: &[&str] = &[
    "y",
    "yes",
    "yep",
    "yeah",
    "ok",
    "okay",
    "k",
    "sure",
    "go",
    "go ahead",
    "proceed",
    "continue",
    "do it",
    "sounds good",
    "lgtm",
    "approved",
    "approve",
    "confirm",
    "confirmed",
    "1",
    "2",
    "3",
    "no",
    "n",
    "nope",
];

/// True for a bare confirmation such as "yes", "go ahead" or "1".
pub fn is_bare_confirmation(text: &str) -> bool {
    let t: String = text.trim().trim_end_matches(['.', '!', ' ']).to_lowercase();
    CONFIRMATIONS.contains(&t.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_of_task_beats_trailing_question() {
        assert_eq!(
            detect_agent("Done. Is there anything else you'd like me to change?"),
            (Intent::EndOfTask, Phase::EndOfTask)
        );
    }

    #[test]
    fn trailing_question() {
        assert_eq!(
            detect_agent("I found two options.\n\nWhich do you prefer?").0,
            Intent::Question
        );
        assert_eq!(
            detect_agent("Should I also update the docs?**").1,
            Phase::TrailingQuestion
        );
    }

    #[test]
    fn question_inside_code_is_not_trailing() {
        let t = "Here is the regex:\n```\n^a?\n```\nIt matches an optional a.";
        assert_ne!(detect_agent(t).0, Intent::Question);
    }

    #[test]
    fn continuation_guard_beats_completion_words() {
        assert_eq!(
            detect_agent("Created the file successfully. Now let me run the tests.").0,
            Intent::Completion,
            "a single line: the last line starts with 'created', not a continuation"
        );
        assert_eq!(
            detect_agent("Created the file successfully.\nNow let me run the tests.").1,
            Phase::Continuation
        );
        assert_eq!(detect_agent("The changes are:").1, Phase::Continuation);
    }

    #[test]
    fn completion_phrases() {
        assert_eq!(
            detect_agent("Done. ENT-98 is complete.").0,
            Intent::Completion
        );
        assert_eq!(detect_agent("All tests pass.").0, Intent::Completion);
    }

    #[test]
    fn question_phrases_without_mark() {
        assert_eq!(
            detect_agent("Please confirm the target branch.").0,
            Intent::Question
        );
    }

    #[test]
    fn default_is_progress() {
        assert_eq!(detect_agent("Reading the config file.").0, Intent::Progress);
        assert_eq!(detect_agent("   ").1, Phase::Blank);
    }

    #[test]
    fn final_message_is_never_progress() {
        assert_eq!(
            detect_agent_final("Reading the config file."),
            Intent::Completion
        );
        assert_eq!(detect_agent_final("Which one?"), Intent::Question);
    }
}
