//! The engine: inputs in, commands out. See the crate docs for the calling contract.

mod agents;
mod entries;
mod evict;
mod hooks;
mod panes;
mod reconcile;
mod rescan;
mod restore;
mod steps;
mod tasks;
mod timer;

pub use timer::{Timer, TimerReason};
mod transcripts;
mod turns;
mod watchdog;

use crate::hook::matching::{hash128, Key, Kind, MatchIndex};
use crate::io::{Command, Input, ReadId, RequestId};
use crate::kind::{AgentKind, CODEX_PREFIX, GEMINI_PREFIX};
use crate::model::{AgentId, AgentRow, TaskId, TaskRow, TimestampSource, TurnId, TurnRow};
use crate::task::intent::{Actor, Intent};
use crate::task::state::TaskState;
use crate::time::Timestamp;
use crate::transcript::framing::LineFramer;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

/// What the core needs to know about its surroundings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The Claude directory as hooks name it (absolute, e.g. `/home/u/.claude`); transcript
    /// paths are taken relative to it and refused outside it.
    pub claude_dir: String,
    /// Codex CLI's directory as its hooks name it (`$CODEX_HOME`, absolute), when Codex's
    /// transcripts are watched: its transcript paths are taken relative to it, under
    /// [`CODEX_PREFIX`], and refused outside it.
    pub codex_dir: Option<String>,
    /// Gemini CLI's directory (`~/.gemini`, absolute), when Gemini's transcripts are
    /// watched: its transcript paths are taken relative to it, under [`GEMINI_PREFIX`], and
    /// refused outside it.
    pub gemini_dir: Option<String>,
    /// How long new pane output may go without a new turn before the transcript is read
    /// (the watchdog's gap threshold; seed default 5 s).
    pub gap_threshold_ms: i64,
    /// How long hook and transcript news is trusted before the pane may overrule it.
    pub trust_ms: i64,
    /// How long a `send` counts as running when no prompt follows it.
    pub send_timeout_ms: i64,
    /// How long an agent may say nothing (no hook, no transcript line) before it is evicted
    /// from memory; the store keeps it and an input about it brings it back. An ended agent
    /// goes after at most a minute. Zero or less: never.
    pub evict_after_ms: i64,
    /// The longest transcript line kept whole, in bytes (default
    /// [`DEFAULT_MAX_LINE_BYTES`](crate::transcript::framing::DEFAULT_MAX_LINE_BYTES), 16 MiB). A longer
    /// line is read in bounded memory: its first `max_line_bytes` and its last 64 KiB are
    /// kept, and its turn is made from them with its text marked as truncated.
    pub max_line_bytes: usize,
    /// How long an agent no pane listing has ever shown may say nothing before the reaper
    /// ends it as silent (default 12 hours). Zero or less: never.
    pub reap_silent_after_ms: i64,
    /// Where this core's ids begin: agent, task and turn ids it makes are in
    /// `id_base + 1 .. id_base + ID_SPACE`, so cores of several machines write into one
    /// database without coordinating (see [`id_base_of`]). Zero for a single server.
    pub id_base: u64,
    /// A known bug planted for the simulator to catch (test builds only).
    #[cfg(feature = "planted-bugs")]
    pub planted: Option<crate::harness::planted::Bug>,
}

/// How many ids each machine's core may make of each kind (2^48).
pub const ID_SPACE: u64 = 1 << 48;

/// The most machines that share a database: ids stay below 2^53, so a browser's numbers
/// hold them exactly.
pub const MAX_MACHINE_ID: u16 = 31;

/// The id base of machine number `machine` (0 to [`MAX_MACHINE_ID`]).
pub fn id_base_of(machine: u16) -> u64 {
    u64::from(machine.min(MAX_MACHINE_ID)) * ID_SPACE
}

impl Config {
    /// True when `bug` is planted (never without the `planted-bugs` feature): the one check
    /// every planted bug's code path asks ([`crate::harness::planted`]).
    #[inline]
    pub fn is_planted(&self, bug: crate::harness::planted::Bug) -> bool {
        #[cfg(feature = "planted-bugs")]
        return self.planted == Some(bug);
        #[cfg(not(feature = "planted-bugs"))]
        {
            let _ = bug;
            false
        }
    }

    /// The defaults for a claude dir.
    pub fn new(claude_dir: impl Into<String>) -> Config {
        Config {
            claude_dir: claude_dir.into(),
            codex_dir: None,
            gemini_dir: None,
            gap_threshold_ms: 5_000,
            trust_ms: 10_000,
            send_timeout_ms: 60_000,
            evict_after_ms: 30 * 60_000,
            max_line_bytes: crate::transcript::framing::DEFAULT_MAX_LINE_BYTES,
            reap_silent_after_ms: 12 * 3_600_000,
            id_base: 0,
            #[cfg(feature = "planted-bugs")]
            planted: None,
        }
    }
}

/// One transcript file being read.
#[derive(Debug)]
struct FileState {
    session_id: String,
    agent_id: AgentId,
    framer: LineFramer,
    /// Where the next entries belong (the task of the last prompt read).
    task: Option<TaskId>,
    /// What the store holds for this file, to write the offset only when it moved.
    saved: (u64, Option<TaskId>),
    /// When `session_activity` was last published for it.
    activity_published: Option<Timestamp>,
    /// Inside a restatement ([`Restating`]): its lines are no news, and its offset is not
    /// saved until it ends (a restart then reads it again from before it began).
    ///
    /// [`Restating`]: crate::transcript::line_read::Restating
    restating: crate::transcript::line_read::Restatement,
    /// The model its last line naming one named ([`LineFacts::model`]): its usage lines that
    /// name none are priced as it.
    ///
    /// [`LineFacts::model`]: crate::transcript::step_line::LineFacts::model
    model: Option<String>,
}

/// How often, at most, a growing transcript publishes `session_activity`.
pub const SESSION_ACTIVITY_EVERY_MS: i64 = 5_000;

/// One agent's working state: everything here is rebuilt from stored rows on restore.
#[derive(Debug)]
struct AgentState {
    row: AgentRow,
    index: MatchIndex,
    seen_entries: HashSet<u128>,
    hook_keys: HashSet<u128>,
    question_ids: HashSet<u128>,
    /// Per task, its agent questions by turn id, and whether each was asked with the
    /// AskUserQuestion tool. Such a question is answered inside the tool, so a prompt never
    /// answers it. Kept by turn id so that a restart rebuilds exactly what claims moved.
    questions: BTreeMap<TaskId, BTreeMap<TurnId, bool>>,
    /// Per task, the transcript time of its latest user line (prompt or answer): a Stop
    /// emitted before it belongs to an earlier turn and must not end the task.
    user_entry_at: BTreeMap<TaskId, Timestamp>,
    /// How many turns each task holds: a task whose only turns a claim moved away is retired.
    task_turns: BTreeMap<TaskId, u32>,
    tasks: BTreeMap<TaskId, TaskRow>,
    /// Tasks by (start, id): the order "which task came last" is asked in.
    task_order: BTreeSet<(Timestamp, TaskId)>,
    latest: Option<TaskId>,
    /// Turns created from transcript entries no hook announced.
    recovered: u64,
    reconciling: Option<RequestId>,
    /// The watchdog: the last pane screen seen (hash), when new output appeared that no turn
    /// has followed yet, and when a turn last arrived.
    pane_hash: Option<u128>,
    pane_change_at: Option<Timestamp>,
    last_turn_at: Timestamp,
    /// Consecutive captures that showed the idle prompt.
    pane_idle_readings: u32,
    /// When the current run of idle captures began: the latest the agent can have gone idle,
    /// so the stamp of a turn end the pane infers (a line written after it shows the turn
    /// went on).
    pane_idle_since: Option<Timestamp>,
    /// When a hook or a transcript entry last said something about this agent.
    last_signal_at: Timestamp,
    /// The newest time its own news carried: hooks' emission stamps and transcript lines'
    /// times, never an arrival time (a late hook is old news). For an agent loaded from the
    /// store, its row's last-seen time, which is no earlier.
    news_stamp: Timestamp,
    /// The text of the pending `send`, when known (lost on restart: the stamp decides then).
    sent_text: Option<u128>,
    /// The tool it last asked to use (PreToolUse / PermissionRequest hook), shown with the
    /// permission dialog its pane draws for it (see [`crate::pane::tool::asked_tool`]).
    asked_tool: Option<serde_json::Value>,
    /// When the hook that named it was emitted: a PostToolUse emitted before it is about an
    /// earlier tool and leaves it.
    asked_tool_at: Timestamp,
    /// When it was last brought back into memory (its quiet time starts again then).
    back_at: Timestamp,
    /// The transcript time of its earliest line: no process started after it runs it.
    first_line_at: Option<Timestamp>,
    /// What the reaper saw of its pane in tmux's last listing.
    pane_witness: crate::pane::discovery::PaneWitness,
    /// When it was ended (its SessionEnd's stamp, or the reaper's time): only news stamped
    /// later brings it back, not a late hook of its last turn.
    ended_at: Option<Timestamp>,
    /// `sent_at` was set because its pane showed a prompt submitted there (not a `send`):
    /// the pane going idle again ends it.
    sent_by_pane: bool,
    /// The planted skip fence: when a `/clear` armed it.
    #[cfg(feature = "planted-bugs")]
    fence_armed_at: Option<Timestamp>,
}

/// One item of hook news a task's shown state applies on top of its transcript state.
struct Preview {
    stamp: Timestamp,
    turn: TurnId,
    /// A provisional turn's actor and intent; `None` for a Stop's turn end.
    turn_of: Option<(Actor, Intent)>,
}

/// The next ids a core hands out: its machine's id space (`Config::id_base`), each counter
/// moved past every id restored.
#[derive(Debug)]
struct Ids {
    agent: AgentId,
    task: TaskId,
    turn: TurnId,
    read: ReadId,
}

/// The sans-IO engine. See the crate documentation for how to drive it.
#[derive(Debug)]
pub struct Core {
    config: Config,
    /// The latest time an input was handed in with (time only moves forward).
    now: Timestamp,
    /// The agents in memory, with their tasks and the hook news not yet confirmed.
    agents: BTreeMap<AgentId, AgentState>,
    /// Every session id (current or past) of an agent in memory.
    by_session: BTreeMap<String, AgentId>,
    /// The pane of each live agent in memory.
    by_pane: BTreeMap<String, AgentId>,
    /// What tmux's listings showed of panes and their processes (see `panes.rs`).
    listing: panes::Listed,
    /// Each transcript file being read: its session and agent, its framer, its offset.
    files: BTreeMap<String, FileState>,
    /// The next ids to hand out.
    ids: Ids,
    /// Transcript reads in flight and the reconciles waiting on them (see `reconcile.rs`).
    reading: reconcile::Reading,
    /// Tasks changed by this input, with the state each had before it (written and
    /// announced together by `flush`).
    dirty_tasks: BTreeMap<(AgentId, TaskId), TaskState>,
    /// Agents whose rows this input changed.
    dirty_agents: BTreeSet<AgentId>,
    /// The commands for the shell, in order.
    out: VecDeque<Command>,
    /// Agents out of memory, asked back, and the inputs held for them (see `evict.rs`).
    memory: evict::Memory,
}

impl Core {
    /// Whether `id` is one this core could have made (its machine's id space): the next
    /// ids follow only those, never another machine's.
    fn own_id(&self, id: u64) -> bool {
        id > self.config.id_base && id - self.config.id_base < ID_SPACE
    }

    /// A core with no state. Feed it [`Input::Restore`] first when a store has rows.
    pub fn new(config: Config) -> Core {
        let first_id = config.id_base + 1;
        Core {
            config,
            now: Timestamp(0),
            agents: BTreeMap::new(),
            by_session: BTreeMap::new(),
            by_pane: BTreeMap::new(),
            listing: panes::Listed::default(),
            files: BTreeMap::new(),
            ids: Ids {
                agent: first_id,
                task: first_id,
                turn: first_id,
                read: 1,
            },
            reading: reconcile::Reading::default(),
            dirty_tasks: BTreeMap::new(),
            dirty_agents: BTreeSet::new(),
            out: VecDeque::new(),
            memory: evict::Memory::default(),
        }
    }

    /// Feeds one input at time `now`. Time only moves forward: an earlier `now` is taken as
    /// the latest time seen. Drain [`Core::poll_command`] afterwards.
    pub fn handle(&mut self, now: Timestamp, input: Input) {
        self.now = self.now.max(now);
        let tick = matches!(input, Input::Tick);
        let handled = self.handle_or_hold(input);
        self.flush();
        if tick && handled {
            self.evict_idle();
        }
    }

    /// Handles one input whose agents are all in memory.
    fn dispatch(&mut self, input: Input) {
        match input {
            Input::Hook { agent, event, body } => self.on_hook(agent, event.as_deref(), &body),
            Input::Transcript {
                path,
                offset,
                data,
                read,
            } => self.on_transcript(&path, offset, &data, read),
            Input::TranscriptReset { path } => self.on_reset(&path),
            Input::Pane { pane, text } => self.on_pane(&pane, &text),
            Input::Panes(panes) => self.on_panes(&panes),
            Input::Sent { agent, text } => self.on_sent(&agent, text.as_deref()),
            Input::Stopped { agent } => self.on_stopped(&agent),
            Input::Tick => {
                self.check_gaps();
                self.expire_sends();
                self.reap_silent();
            }
            Input::Reconcile { agent, request } => self.on_reconcile(&agent, request),
            Input::Restore(snapshot) => self.restore(snapshot),
            // Taken before dispatch (`handle_or_hold`).
            Input::AgentsLoaded(_) => {}
        }
    }

    /// The next command to carry out, in order; `None` when there is nothing left to do.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.out.pop_front()
    }

    /// The latest time the core has been given.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Finds an agent by id, Claude session id or tmux pane id.
    pub fn resolve_agent(&self, reference: &str) -> Option<AgentId> {
        let r = reference.trim();
        if let Ok(id) = r.parse::<AgentId>() {
            if self.agents.contains_key(&id) || self.memory.evicted.contains_key(&id) {
                return Some(id);
            }
        }
        self.by_session
            .get(r)
            .or_else(|| self.by_pane.get(r))
            .copied()
    }

    /// True when `bug` is planted (never without the `planted-bugs` feature).
    #[inline]
    fn planted(&self, bug: crate::harness::planted::Bug) -> bool {
        self.config.is_planted(bug)
    }

    /// The matching key of a turn's text (every key the engine makes comes from here).
    fn key(&self, kind: Kind, text: &str, id: Option<&str>) -> Key {
        if self.planted(crate::harness::planted::Bug::PrefixHash200) {
            let prefix: String = text.chars().take(200).collect();
            return Key::new(kind, &prefix, id);
        }
        Key::new(kind, text, id)
    }

    /// Slots held by the matching indexes of all agents (for memory accounting).
    pub fn index_len(&self) -> usize {
        self.agents.values().map(|a| a.index.len()).sum()
    }
}

impl AgentState {
    fn new(row: AgentRow) -> AgentState {
        // A process seen in the pane before (this run or the last) is looked for again.
        let pane_witness = crate::pane::discovery::PaneWitness {
            listed: row.claude_pid.is_some(),
            claude_pid: row.claude_pid,
        };
        // After a restart: news heard before its last word cannot bring it back.
        let ended_at = row.ended.then_some(row.last_seen_at);
        AgentState {
            row,
            index: MatchIndex::default(),
            seen_entries: HashSet::new(),
            hook_keys: HashSet::new(),
            question_ids: HashSet::new(),
            questions: BTreeMap::new(),
            user_entry_at: BTreeMap::new(),
            task_turns: BTreeMap::new(),
            tasks: BTreeMap::new(),
            task_order: BTreeSet::new(),
            latest: None,
            recovered: 0,
            reconciling: None,
            pane_hash: None,
            pane_change_at: None,
            last_turn_at: Timestamp(i64::MIN),
            pane_idle_readings: 0,
            pane_idle_since: None,
            last_signal_at: Timestamp(i64::MIN),
            news_stamp: Timestamp(i64::MIN),
            sent_text: None,
            asked_tool: None,
            asked_tool_at: Timestamp(i64::MIN),
            back_at: Timestamp(i64::MIN),
            first_line_at: None,
            pane_witness,
            ended_at,
            sent_by_pane: false,
            #[cfg(feature = "planted-bugs")]
            fence_armed_at: None,
        }
    }

    /// Counts a new turn in its task, remembers whether an agent question was asked with the
    /// tool, and when the transcript's user lines were written.
    fn note_turn(&mut self, turn: &TurnRow) {
        *self.task_turns.entry(turn.task_id).or_default() += 1;
        if turn.entry_uuid.is_some() && turn.timestamp_source == TimestampSource::Jsonl {
            let first = self.first_line_at.get_or_insert(turn.timestamp);
            *first = (*first).min(turn.timestamp);
        }
        // Only the transcript's own clock: a line without a timestamp got the server's.
        if turn.actor == Actor::User
            && turn.entry_uuid.is_some()
            && turn.timestamp_source == TimestampSource::Jsonl
        {
            self.note_user_entry(turn.task_id, turn.timestamp);
        }
        if turn.actor == Actor::Agent && turn.intent == Intent::Question {
            self.questions
                .entry(turn.task_id)
                .or_default()
                .insert(turn.id, turn.question.is_some());
        }
    }

    /// A user line of the transcript, written at `at`, is in `task`.
    fn note_user_entry(&mut self, task: TaskId, at: Timestamp) {
        let latest = self.user_entry_at.entry(task).or_insert(at);
        *latest = (*latest).max(at);
    }

    /// When anything was last heard of it: a hook, a transcript line or a turn.
    fn heard_at(&self) -> Timestamp {
        self.row
            .last_seen_at
            .max(self.last_signal_at)
            .max(self.last_turn_at)
    }

    /// Whether the task's latest question was asked with the AskUserQuestion tool.
    fn tool_question(&self, task: TaskId) -> bool {
        self.questions
            .get(&task)
            .and_then(|q| q.values().next_back())
            .copied()
            .unwrap_or(false)
    }
}

/// A turn as the API and `turn_created` show it: written straight from its row, in this
/// field order (`turn_id` repeats `id` for the dashboard's older readers).
#[derive(serde::Serialize)]
pub struct TurnView<'a> {
    id: TurnId,
    turn_id: TurnId,
    agent_id: AgentId,
    task_id: TaskId,
    actor: Actor,
    intent: Intent,
    text: &'a str,
    timestamp: Timestamp,
    timestamp_source: TimestampSource,
    entry_uuid: Option<&'a str>,
    question: Option<&'a serde_json::Value>,
    /// When the agent CLI took it back (Gemini's `/rewind`); absent while it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    rewound_at: Option<Timestamp>,
}

impl<'a> TurnView<'a> {
    /// The view of `t`.
    pub fn of(t: &'a TurnRow) -> TurnView<'a> {
        TurnView {
            id: t.id,
            turn_id: t.id,
            agent_id: t.agent_id,
            task_id: t.task_id,
            actor: t.actor,
            intent: t.intent,
            text: &t.text,
            timestamp: t.timestamp,
            timestamp_source: t.timestamp_source,
            entry_uuid: t.entry_uuid.as_deref(),
            question: t.question.as_ref(),
            rewound_at: t.rewound_at,
        }
    }
}

/// The JSON of a turn as the API and `turn_created` show it, as a value to add fields to.
pub fn turn_json(t: &TurnRow) -> serde_json::Value {
    serde_json::to_value(TurnView::of(t)).unwrap_or_default()
}

/// A uuid as 128 bits: parsed when it is a standard uuid, hashed otherwise.
fn uuid_key(uuid: &str) -> u128 {
    let hex: String = uuid.chars().filter(|c| *c != '-').collect();
    if hex.len() == 32 {
        if let Ok(v) = u128::from_str_radix(&hex, 16) {
            return v;
        }
    }
    hash128(uuid.as_bytes())
}

/// The folder Claude Code keeps a project's transcripts in, under `projects/`: the project's
/// absolute path with every character but ASCII letters and digits turned into `-`.
pub fn claude_project_dir(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The session a transcript path names, of whichever kind lies there
/// ([`AgentKind::session_of_path`]); anything else (sub-agent transcripts, other files) is
/// not a session transcript.
pub fn session_of_path(rel: &str) -> Option<String> {
    AgentKind::of_transcript(rel).session_of_path(rel)
}

/// A hook's absolute transcript path as a core transcript path (relative to the claude dir
/// for Claude Code, `codex/` and its path in the codex dir for Codex), or `None` outside the
/// kind's folder (or for a kind whose folder is not configured).
pub fn relative_transcript_path(config: &Config, kind: AgentKind, abs: &str) -> Option<String> {
    let (dir, home, prefix) = match kind {
        AgentKind::Claude => (Some(config.claude_dir.as_str()), "~/.claude/", ""),
        AgentKind::Codex => (config.codex_dir.as_deref(), "~/.codex/", CODEX_PREFIX),
        AgentKind::Gemini => (config.gemini_dir.as_deref(), "~/.gemini/", GEMINI_PREFIX),
    };
    let dir = dir?.trim_end_matches('/');
    let rest = abs
        .strip_prefix(dir)
        .and_then(|r| r.strip_prefix('/'))
        .or_else(|| abs.strip_prefix(home))?;
    if rest
        .split('/')
        .any(|c| c == ".." || c == "." || c.is_empty())
    {
        return None;
    }
    Some(format!("{prefix}{rest}"))
}

fn project_of(cwd: &str) -> Option<String> {
    cwd.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The project a Claude Code transcript's folder names (its last word); Codex's folders name
/// none (its first line's `cwd` does).
fn project_of_dir(rel: &str) -> Option<String> {
    match AgentKind::of_transcript(rel) {
        AgentKind::Claude => {}
        // `gemini/tmp/<project>/…`: the project's folder name, made a word by Gemini.
        AgentKind::Gemini => return rel.split('/').nth(2).map(str::to_string),
        AgentKind::Codex => return None,
    }
    rel.split('/').nth(1).map(|d| {
        d.rsplit('-')
            .find(|s| !s.is_empty())
            .unwrap_or(d)
            .to_string()
    })
}
