//! The rows the core asks the store to keep: agents, tasks, turns and file offsets.
//!
//! Every row carries the id the core gave it, so each write is an idempotent upsert and a
//! retry after an unknown outcome is safe.

use crate::task::intent::{Actor, Intent};
use crate::task::state::TaskState;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// An agent's id: one Claude Code process in one pane, across `/clear` and compaction.
pub type AgentId = u64;
/// A task's id.
pub type TaskId = u64;
/// A turn's id (insertion order, not display order).
pub type TurnId = u64;

/// Where a turn's timestamp came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampSource {
    /// The server's approximation (hook receipt or emission stamp).
    Server,
    /// The transcript line's own timestamp: authoritative.
    Jsonl,
    /// A user action's time (dashboard or voice replies).
    User,
}

/// What made a turn first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnSource {
    /// A hook: provisional until a transcript entry claims it.
    Hook,
    /// A transcript entry no hook had announced ("recovered").
    Transcript,
}

/// An agent row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentRow {
    /// The agent's id.
    pub id: AgentId,
    /// Its current Claude session id.
    pub session_id: String,
    /// Every session id it has had, oldest first.
    pub sessions: Vec<String>,
    /// Project name (last component of the working directory).
    pub project: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Current transcript, relative to the claude dir.
    pub transcript_path: Option<String>,
    /// The tmux pane (`%N`).
    pub tmux_pane: Option<String>,
    /// The Claude process has exited (SessionEnd other than `/clear`).
    pub ended: bool,
    /// A permission dialog is open.
    pub waiting_permission: bool,
    /// Text was sent to its pane and no prompt emitted since has arrived: it is running.
    #[serde(default)]
    pub sent_at: Option<Timestamp>,
    /// The permission dialog its pane shows (question and options), while it shows one.
    #[serde(default)]
    pub permission: Option<serde_json::Value>,
    /// When anything was last heard of it.
    pub last_seen_at: Timestamp,
    /// Why the reaper ended it (`pane_closed`, `process_exited`, `silent`); `None` while it
    /// lives or when its SessionEnd hook ended it.
    #[serde(default)]
    pub end_reason: Option<String>,
    /// The pid of the Claude Code process a tmux listing last showed in its pane: kept so
    /// that after a restart the reaper still knows what to look for.
    #[serde(default)]
    pub claude_pid: Option<u32>,
    /// The git branch its transcript last named (`gitBranch` of its first line and of each
    /// prompt), shown with its name: two agents of one project often differ only by it.
    #[serde(default)]
    pub git_branch: Option<String>,
    /// The agent CLI it runs.
    #[serde(default)]
    pub kind: crate::kind::AgentKind,
}

impl AgentRow {
    /// A new agent's row: nothing known of it yet but its id and that it was heard of `now`.
    pub fn new(id: AgentId, now: Timestamp) -> AgentRow {
        AgentRow {
            id,
            session_id: String::new(),
            sessions: Vec::new(),
            project: None,
            cwd: None,
            transcript_path: None,
            tmux_pane: None,
            ended: false,
            waiting_permission: false,
            sent_at: None,
            permission: None,
            last_seen_at: now,
            end_reason: None,
            claude_pid: None,
            git_branch: None,
            kind: crate::kind::AgentKind::Claude,
        }
    }

    /// No session has joined it yet: its pane's process made it (an older row with no
    /// `sessions` list still has its `session_id`).
    pub fn unjoined(&self) -> bool {
        self.session_id.is_empty()
    }
}

/// A task row: a user command and what followed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRow {
    /// The task's id.
    pub id: TaskId,
    /// Its agent.
    pub agent_id: AgentId,
    /// The Claude session it runs in.
    pub session_id: Option<String>,
    /// The state shown: the transcript's state with unconfirmed hook news applied on top.
    pub state: TaskState,
    /// The state implied by the transcript alone, in transcript order.
    pub transcript_state: TaskState,
    /// When it started: its command's time (or its first turn's, without a command). The
    /// agent's current task is the one that started last.
    pub started_at: Timestamp,
    /// A Stop hook said the turn ended at this time and the transcript has not confirmed it.
    pub hook_turn_end_at: Option<Timestamp>,
    /// When the shown state last changed (for "time in state").
    pub state_since: Timestamp,
}

/// A turn row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnRow {
    /// The turn's id.
    pub id: TurnId,
    /// Its agent.
    pub agent_id: AgentId,
    /// Its task.
    pub task_id: TaskId,
    /// Who spoke.
    pub actor: Actor,
    /// What it means.
    pub intent: Intent,
    /// The text.
    pub text: String,
    /// Conversation time: the ordering key.
    pub timestamp: Timestamp,
    /// Where the timestamp came from.
    pub timestamp_source: TimestampSource,
    /// The transcript line's `uuid` once an entry made or claimed it.
    pub entry_uuid: Option<String>,
    /// What made it first.
    pub source: TurnSource,
    /// Fingerprint of the hook that made or matched it (duplicate hooks count once).
    pub hook_key: Option<String>,
    /// `prompt_id` / `promptId` when known.
    pub prompt_id: Option<String>,
    /// The AskUserQuestion tool call id, for questions and answers.
    pub tool_use_id: Option<String>,
    /// The structured question and options, for questions.
    pub question: Option<serde_json::Value>,
    /// The Claude session it was said in.
    pub session_id: Option<String>,
    /// When the agent CLI took it back (Gemini CLI's `/rewind`): it stays, marked.
    pub rewound_at: Option<Timestamp>,
}

impl TurnRow {
    /// A turn not stored yet (id 0), with a server-clock time and nothing optional set; the
    /// hook and transcript sides fill in what they know.
    pub fn new(
        agent_id: AgentId,
        task_id: TaskId,
        (actor, intent): (Actor, Intent),
        text: String,
        timestamp: Timestamp,
        source: TurnSource,
    ) -> TurnRow {
        TurnRow {
            id: 0,
            agent_id,
            task_id,
            actor,
            intent,
            text,
            timestamp,
            timestamp_source: TimestampSource::Server,
            entry_uuid: None,
            source,
            hook_key: None,
            prompt_id: None,
            tool_use_id: None,
            question: None,
            session_id: None,
            rewound_at: None,
        }
    }
}

/// How far a transcript file has been read: everything before `offset` is in the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetRow {
    /// Path relative to the claude dir (`projects/<dir>/<session>.jsonl`).
    pub path: String,
    /// The session the path names.
    pub session_id: String,
    /// Bytes read and committed.
    pub offset: u64,
    /// The task the last prompt read from this file opened or joined: where the next
    /// entries belong, in transcript order.
    pub task_id: Option<TaskId>,
}

/// Everything the store holds, handed to the core to rebuild it after a restart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The agents with their tasks and turns below.
    pub agents: Vec<AgentRow>,
    /// Their tasks.
    pub tasks: Vec<TaskRow>,
    /// Their turns.
    pub turns: Vec<TurnRow>,
    /// All offsets.
    pub offsets: Vec<OffsetRow>,
    /// Agents that are not live ([`live_since`]): their rows only, for the core to know them
    /// (by session and pane) and to load the rest when news of them comes. A restart's memory
    /// and time then grow with the live agents, not with every agent ever seen.
    pub dormant: Vec<DormantAgent>,
}

impl Snapshot {
    /// This snapshot as a restart loads it: the agents that are live ([`is_live`]) whole, the
    /// others as [`DormantAgent`] rows without their tasks and turns.
    pub fn split_dormant(mut self, live_since: Option<Timestamp>) -> Snapshot {
        let (live, dormant): (Vec<AgentRow>, Vec<AgentRow>) = std::mem::take(&mut self.agents)
            .into_iter()
            .partition(|a| is_live(a, live_since));
        let mut max_task: std::collections::BTreeMap<AgentId, TaskId> = Default::default();
        let mut max_turn: std::collections::BTreeMap<AgentId, u64> = Default::default();
        for t in &self.tasks {
            let m = max_task.entry(t.agent_id).or_default();
            *m = (*m).max(t.id);
        }
        for t in &self.turns {
            let m = max_turn.entry(t.agent_id).or_default();
            *m = (*m).max(t.id);
        }
        let ids: std::collections::BTreeSet<AgentId> = live.iter().map(|a| a.id).collect();
        self.tasks.retain(|t| ids.contains(&t.agent_id));
        self.turns.retain(|t| ids.contains(&t.agent_id));
        self.agents = live;
        self.dormant
            .extend(dormant.into_iter().map(|row| DormantAgent {
                max_task: max_task.get(&row.id).copied(),
                max_turn: max_turn.get(&row.id).copied(),
                row,
            }));
        self
    }
}

/// An agent a restart does not load: its row, and the highest task and turn ids it holds
/// (new ids must never meet them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DormantAgent {
    /// Its row.
    pub row: AgentRow,
    /// Its highest task id.
    pub max_task: Option<TaskId>,
    /// Its highest turn id.
    pub max_turn: Option<u64>,
}

/// Since when an agent must have been heard of to be loaded whole on a restart, at `now` with
/// agents evicted after `evict_after_ms` of silence (`None`: every agent is, eviction being
/// off). Ended agents are never live: they come back on demand.
pub fn live_since(now: Timestamp, evict_after_ms: i64) -> Option<Timestamp> {
    (evict_after_ms > 0).then(|| now.add_millis(-evict_after_ms))
}

/// Whether `row` is loaded whole on a restart (see [`live_since`]).
pub fn is_live(row: &AgentRow, since: Option<Timestamp>) -> bool {
    match since {
        None => true,
        Some(t) => !row.ended && row.last_seen_at >= t,
    }
}
