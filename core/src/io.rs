//! The core's inputs and commands: everything that crosses its boundary, as data.

use crate::model::{AgentId, AgentRow, OffsetRow, Snapshot, TaskId, TaskRow, TurnId, TurnRow};
use crate::time::Timestamp;

/// Identifies a request whose answer the core gives back with [`Command::Reply`].
pub type RequestId = u64;
/// Identifies a read the core asked for with [`Command::ReadTranscript`].
pub type ReadId = u64;

/// Something that happened in the world, fed to [`crate::Core::handle`].
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A hook body arrived. `event` is the event named by the route, which wins over the
    /// body's `hook_event_name`.
    Hook {
        /// The kind of agent that sent it (by the route it came on).
        agent: crate::kind::AgentKind,
        /// The event named by the caller, if any.
        event: Option<String>,
        /// The raw body.
        body: Vec<u8>,
    },
    /// Bytes of a transcript file at an offset.
    Transcript {
        /// Path relative to the claude dir.
        path: String,
        /// Offset of `data[0]` in the file.
        offset: u64,
        /// The bytes.
        data: Vec<u8>,
        /// The read this answers, when it answers [`Command::ReadTranscript`]; such a chunk
        /// holds everything up to the end of the file.
        read: Option<ReadId>,
    },
    /// The file shrank or was replaced: read it again from the start (dedup keeps it safe).
    TranscriptReset {
        /// Path relative to the claude dir.
        path: String,
    },
    /// What a pane shows now.
    Pane {
        /// The pane id (`%N`).
        pane: String,
        /// The captured text.
        text: String,
    },
    /// tmux's panes and the processes running in each (every pane of the server, listed
    /// together): sessions no hook placed are tied to their panes, and agents whose pane or
    /// Claude Code process is gone are ended ([`crate::pane::discovery`]).
    Panes(Vec<crate::pane::discovery::PaneListing>),
    /// Time passed.
    Tick,
    /// Read an agent's transcripts to the end now, re-read them from byte 0 against its
    /// stored rows (asked for with [`Command::LoadAgents`]) to recreate turns whose rows were
    /// lost, and say how many turns were recovered.
    Reconcile {
        /// An agent id, a Claude session id or a pane id.
        agent: String,
        /// Echoed in the reply.
        request: RequestId,
    },
    /// Text is about to be typed into an agent's pane (`send`, `clear`): it counts as running
    /// until a prompt emitted after this moment arrives.
    Sent {
        /// An agent id, a Claude session id or a pane id.
        agent: String,
        /// The text typed, when known: only the prompt with this text answers the send.
        text: Option<String>,
    },
    /// The user stopped the agent through Headspace (`stop`): it was asked to exit and its
    /// pane is gone or killed. It ends with the reason `stopped`, whatever hook or listing
    /// says so after.
    Stopped {
        /// An agent id, a Claude session id or a pane id.
        agent: String,
    },
    /// Rebuild all state from what the store holds (after a restart).
    Restore(Snapshot),
    /// The stored rows of agents the core evicted from memory and asked back with
    /// [`Command::LoadAgents`]: their agent rows, tasks and turns (offsets are not needed).
    AgentsLoaded(Snapshot),
}

/// A state change the store must apply, in order, per agent.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// Insert or replace an agent.
    Agent(AgentRow),
    /// Insert or replace a task.
    Task(TaskRow),
    /// Insert a turn (no-op when its id or its entry uuid is already stored).
    Turn(TurnRow),
    /// A transcript entry claimed a hook-made turn: set its entry uuid, its transcript
    /// timestamp (`timestamp_source = jsonl`) and its task.
    Claim {
        /// The claimed turn.
        turn_id: TurnId,
        /// The claiming entry.
        entry_uuid: String,
        /// The entry's timestamp, when it has one.
        timestamp: Option<Timestamp>,
        /// The task the entry belongs to in transcript order.
        task_id: TaskId,
    },
    /// The agent CLI took its conversation back to the message `entry_uuid` (Gemini CLI's
    /// `/rewind`): that message's turn and every later turn of its session (in conversation
    /// order) are marked rewound at `at`, if not already; none is removed.
    Rewound {
        /// The agent.
        agent_id: AgentId,
        /// The message the conversation went back to.
        entry_uuid: String,
        /// When.
        at: Timestamp,
    },
    /// A hook arrived after its entry had made the turn: remember the hook's fingerprint.
    HookMatched {
        /// The turn.
        turn_id: TurnId,
        /// The hook's fingerprint.
        hook_key: String,
    },
    /// Agent `from` turned out to be `into` (same pane, a session whose transcript came
    /// before its hooks): move its tasks and turns to `into`, then remove it.
    MergeAgent {
        /// The agent that goes.
        from: AgentId,
        /// The agent that stays.
        into: AgentId,
    },
    /// Everything before `offset` of the file is stored. Emitted only after the writes of
    /// the lines before it.
    Offset(OffsetRow),
    /// A tool call began or ended: fold it into its step (one per agent and tool-use id)
    /// with [`crate::usage::step::merge`].
    Step(crate::usage::step::StepRow),
    /// The transcript's interrupt line: the agent's steps still pending and started by `at`
    /// were interrupted ([`crate::usage::step::interrupted`]).
    StepsInterrupted {
        /// The agent.
        agent_id: AgentId,
        /// The interrupt line's time.
        at: Timestamp,
    },
    /// An assistant message's usage: fold it into its row (one per agent and message id)
    /// with [`crate::usage::sum::merge`].
    Usage(crate::usage::sum::UsageRow),
}

/// Something the shell must do, drained with [`crate::Core::poll_command`].
// Most commands are store writes, an agent's row the largest: boxing it would add an
// allocation to the common case to save bytes in a short queue.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub enum Command {
    /// Apply this write to the store (idempotent; retry freely).
    Store(Write),
    /// Tell the dashboard: an SSE event, after the writes before it are committed.
    Publish(Event),
    /// Read `path` from `from` to its end and feed it back as [`Input::Transcript`] with
    /// `read: Some(read)` (an empty chunk when the file is missing).
    ReadTranscript {
        /// Path relative to the claude dir.
        path: String,
        /// Start offset.
        from: u64,
        /// Echo this in the input.
        read: ReadId,
    },
    /// The watchdog found pane output no turn followed (the core already asked to read the
    /// agent's transcripts); for metrics.
    GapDetected {
        /// The agent.
        agent_id: AgentId,
    },
    /// Load these agents' rows, tasks and turns from the store, after every write emitted
    /// before this command is committed, and feed them back as [`Input::AgentsLoaded`]. The
    /// core evicted them from memory (ended, or silent for long) and an input concerns them
    /// again; it holds every input from now on until they are back.
    LoadAgents {
        /// The agents.
        ids: Vec<AgentId>,
    },
    /// Answer a request.
    Reply {
        /// The request.
        request: RequestId,
        /// The answer.
        reply: Reply,
    },
}

/// Answers to requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A reconcile finished: `created` turns were recovered.
    Reconciled {
        /// The agent.
        agent_id: AgentId,
        /// Turns created from transcript entries during the reconcile.
        created: u64,
    },
    /// A reconcile for this agent is already running.
    ReconcileBusy,
    /// No such agent.
    UnknownAgent,
}

/// A dashboard event (SSE). The shell assigns the increasing ids.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// `turn_created`, `turn_updated`, `state_changed`, `card_refresh`, `session_created`,
    /// `session_activity` (a transcript grew; at most every 5 s per file),
    /// `session_ended`.
    pub name: &'static str,
    /// The agent it concerns.
    pub agent_id: AgentId,
    /// The payload, as JSON text.
    pub data: crate::EventData,
}
