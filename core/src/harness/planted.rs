//! Known bugs that can be planted in the core, so the simulation can show it catches each of
//! them (`headspace-sim swarm --inject-bug NAME`). This module only names them; they can be
//! planted only with the `planted-bugs` feature, which only the simulator turns on. Without
//! it `Config` has no field to plant one, every check of one is a constant `false`, and the
//! fence's extra code and state are not compiled.

/// A bug from the field, or from the designs we chose not to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bug {
    /// The seed's root bug: a turn and its state change in one transaction, rolled back
    /// together when the state machine refuses the change (here: an agent turn that reaches
    /// a task already shown complete).
    SingleTransactionRollback,
    /// Dedup on a hash of the first 200 characters: different long turns merge.
    PrefixHash200,
    /// A provisional turn is claimable only within 30 s: late entries duplicate it.
    MatchWindow30s,
    /// The seed's sm#232 fix: a `/clear` arms an 8 s fence that swallows the next Stop,
    /// instead of ordering hooks by their emission stamps.
    SkipFenceTtl,
    /// A partial line at the end of a read is skipped instead of buffered.
    SkipPartialLine,
    /// Recovered turns go to the agent's latest task instead of the one they belong to.
    RecoveredOnLatestTask,
    /// The events read side's cursor follows insert ids instead of the sequencer's
    /// positions: an event whose id was taken before a served one but committed after it is
    /// never served (`core/src/cluster/event_feed.rs`).
    EventsReadById,
    /// A server waiting on a command it forwarded to another machine's pane takes one
    /// already taken and still running for one never taken: it tells the user the command
    /// will not run, and the other machine types it (`pane_commands::await_step`).
    RunningAsNotTaken,
    /// A session whose transcript is tied to a pane is placed there as its own agent
    /// instead of joining the agent the pane's process made: two cards for one agent.
    PaneAgentNotJoined,
    /// Codex CLI's reader takes every user message of its rollout for a typed prompt: the
    /// context Codex injects each turn (`<environment_context>…`) becomes a turn.
    CodexContextAsPrompt,
    /// The copies of earlier messages Gemini CLI writes after a refused tool are read as
    /// news: every earlier turn shows twice.
    GeminiRestatedAsNews,
}

impl Bug {
    /// Every bug, in name order.
    pub const ALL: [Bug; 11] = [
        Bug::CodexContextAsPrompt,
        Bug::EventsReadById,
        Bug::GeminiRestatedAsNews,
        Bug::MatchWindow30s,
        Bug::PaneAgentNotJoined,
        Bug::PrefixHash200,
        Bug::RecoveredOnLatestTask,
        Bug::RunningAsNotTaken,
        Bug::SingleTransactionRollback,
        Bug::SkipFenceTtl,
        Bug::SkipPartialLine,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Bug::SingleTransactionRollback => "single-transaction-rollback",
            Bug::PrefixHash200 => "prefix-hash-200",
            Bug::MatchWindow30s => "match-window-30s",
            Bug::SkipFenceTtl => "skip-fence-ttl",
            Bug::SkipPartialLine => "skip-partial-line",
            Bug::RecoveredOnLatestTask => "recovered-on-latest-task",
            Bug::EventsReadById => "events-read-by-id",
            Bug::RunningAsNotTaken => "running-as-not-taken",
            Bug::PaneAgentNotJoined => "pane-agent-not-joined",
            Bug::CodexContextAsPrompt => "codex-context-as-prompt",
            Bug::GeminiRestatedAsNews => "gemini-restated-as-news",
        }
    }

    /// The bug of a name.
    pub fn parse(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }
}
