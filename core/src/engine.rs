//! The engine: inputs in, commands out. See the crate docs for the calling contract.

use crate::activity::agent_activity;
use crate::entry::{self, Entry, Signal};
use crate::framing::{LineFramer, Push};
use crate::hook::{Hook, HookEvent};
use crate::intent::{self, Actor, Intent};
use crate::io::{Command, Event, Input, ReadId, Reply, RequestId, Write};
use crate::matching::{hash128, Key, Kind, MatchIndex, Slot};
use crate::model::*;
use crate::state::{on_turn_end, preserved_warning, transition, Outcome, TaskState};
use crate::time::Timestamp;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use tracing::{debug, info, warn};

/// What the core needs to know about its surroundings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The Claude directory as hooks name it (absolute, e.g. `/home/u/.claude`); transcript
    /// paths are taken relative to it and refused outside it.
    pub claude_dir: String,
    /// How long new pane output may go without a new turn before the transcript is read
    /// (the watchdog's gap threshold; seed default 5 s).
    pub gap_threshold_ms: i64,
    /// How long hook and transcript news is trusted before the pane may overrule it.
    pub trust_ms: i64,
    /// How long a `send` counts as running when no prompt follows it.
    pub send_timeout_ms: i64,
}

impl Config {
    /// The defaults for a claude dir.
    pub fn new(claude_dir: impl Into<String>) -> Config {
        Config {
            claude_dir: claude_dir.into(),
            gap_threshold_ms: 5_000,
            trust_ms: 10_000,
            send_timeout_ms: 60_000,
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
}

/// One agent's working state: everything here is rebuilt from stored rows on restore.
#[derive(Debug)]
struct AgentState {
    row: AgentRow,
    index: MatchIndex,
    seen_entries: HashSet<u128>,
    hook_keys: HashSet<u128>,
    question_ids: HashSet<u128>,
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
    /// When a hook or a transcript entry last said something about this agent.
    last_signal_at: Timestamp,
    /// The text of the pending `send`, when known (lost on restart: the stamp decides then).
    sent_text: Option<u128>,
}

#[derive(Debug)]
struct Reconcile {
    agent_id: AgentId,
    reads: BTreeSet<ReadId>,
    recovered_before: u64,
}

/// One item of hook news a task's shown state applies on top of its transcript state.
struct Preview {
    stamp: Timestamp,
    turn: TurnId,
    /// A provisional turn's actor and intent; `None` for a Stop's turn end.
    turn_of: Option<(Actor, Intent)>,
}

/// The sans-IO engine. See the crate documentation for how to drive it.
#[derive(Debug)]
pub struct Core {
    config: Config,
    now: Timestamp,
    agents: BTreeMap<AgentId, AgentState>,
    by_session: BTreeMap<String, AgentId>,
    by_pane: BTreeMap<String, AgentId>,
    files: BTreeMap<String, FileState>,
    next_agent: AgentId,
    next_task: TaskId,
    next_turn: TurnId,
    next_read: ReadId,
    reads: BTreeMap<ReadId, Option<RequestId>>,
    reconciles: BTreeMap<RequestId, Reconcile>,
    dirty_tasks: BTreeMap<(AgentId, TaskId), TaskState>,
    dirty_agents: BTreeSet<AgentId>,
    out: VecDeque<Command>,
}

impl Core {
    /// A core with no state. Feed it [`Input::Restore`] first when a store has rows.
    pub fn new(config: Config) -> Core {
        Core {
            config,
            now: Timestamp(0),
            agents: BTreeMap::new(),
            by_session: BTreeMap::new(),
            by_pane: BTreeMap::new(),
            files: BTreeMap::new(),
            next_agent: 1,
            next_task: 1,
            next_turn: 1,
            next_read: 1,
            reads: BTreeMap::new(),
            reconciles: BTreeMap::new(),
            dirty_tasks: BTreeMap::new(),
            dirty_agents: BTreeSet::new(),
            out: VecDeque::new(),
        }
    }

    /// Feeds one input at time `now`. Time only moves forward: an earlier `now` is taken as
    /// the latest time seen. Drain [`Core::poll_command`] afterwards.
    pub fn handle(&mut self, now: Timestamp, input: Input) {
        self.now = self.now.max(now);
        match input {
            Input::Hook { event, body } => self.on_hook(event.as_deref(), &body),
            Input::Transcript {
                path,
                offset,
                data,
                read,
            } => self.on_transcript(&path, offset, &data, read),
            Input::TranscriptReset { path } => self.on_reset(&path),
            Input::Pane { pane, text } => self.on_pane(&pane, &text),
            Input::Sent { agent, text } => self.on_sent(&agent, text.as_deref()),
            Input::Tick => {
                self.check_gaps();
                self.expire_sends();
            }
            Input::Reconcile { agent, request } => self.on_reconcile(&agent, request),
            Input::Restore(snapshot) => self.restore(snapshot),
        }
        self.flush();
    }

    /// The next command to carry out, in order; `None` when there is nothing left to do.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.out.pop_front()
    }

    /// When the core wants a [`Input::Tick`] next, if ever: the earliest moment a pane's
    /// new output becomes a gap.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let gaps = self
            .agents
            .values()
            .filter_map(|a| a.pane_change_at)
            .map(|t| t.add_millis(self.config.gap_threshold_ms));
        let sends = self
            .agents
            .values()
            .filter_map(|a| a.row.sent_at)
            .map(|t| t.add_millis(self.config.send_timeout_ms));
        gaps.chain(sends).min()
    }

    /// The latest time the core has been given.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Finds an agent by id, Claude session id or tmux pane id.
    pub fn resolve_agent(&self, reference: &str) -> Option<AgentId> {
        let r = reference.trim();
        if let Ok(id) = r.parse::<AgentId>() {
            if self.agents.contains_key(&id) {
                return Some(id);
            }
        }
        self.by_session
            .get(r)
            .or_else(|| self.by_pane.get(r))
            .copied()
    }

    /// Slots held by the matching indexes of all agents (for memory accounting).
    pub fn index_len(&self) -> usize {
        self.agents.values().map(|a| a.index.len()).sum()
    }

    // ----- hooks -------------------------------------------------------------------------

    fn on_hook(&mut self, event: Option<&str>, body: &[u8]) {
        let hook = match Hook::parse(event, body) {
            Ok(h) => h,
            Err(e) => {
                warn!("[HOOK_RECEIVER] rejected hook: {e}");
                return;
            }
        };
        // The emission stamp orders hooks; a stamp from the future is taken as now.
        let stamp = hook.emitted_at.map_or(self.now, |t| t.min(self.now));
        let Some(agent_id) = self.agent_for_hook(&hook) else {
            debug!(
                "[HOOK_RECEIVER] {} hook names no session or pane; ignored",
                hook.event.name()
            );
            return;
        };
        self.note_transcript_path(agent_id, &hook);
        self.agent_mut(agent_id).last_signal_at = stamp;
        let announces = match hook.event {
            HookEvent::UserPromptSubmit => {
                hook.prompt.as_deref().is_some_and(|p| !p.trim().is_empty())
            }
            HookEvent::Stop => hook
                .last_assistant_message
                .as_deref()
                .is_some_and(|m| !m.trim().is_empty()),
            HookEvent::PreToolUse => hook.tool_name.as_deref() == Some("AskUserQuestion"),
            _ => false,
        };
        let hook_key = if announces {
            let mut bytes = hook.event.name().as_bytes().to_vec();
            bytes.push(0);
            bytes.extend_from_slice(body);
            let key = hash128(&bytes);
            let agent = self.agent_mut(agent_id);
            if !agent.hook_keys.insert(key) {
                debug!(
                    "[HOOK_RECEIVER] duplicate {} hook for agent {agent_id}; counted once",
                    hook.event.name()
                );
                return;
            }
            Some(format!("{key:032x}"))
        } else {
            None
        };
        match hook.event {
            HookEvent::UserPromptSubmit => {
                self.set_flags(agent_id, Some(false), Some(false));
                let prompt = hook.prompt.clone().unwrap_or_default();
                self.prompt_seen(agent_id, Some(stamp), &prompt);
                if let (Some(prompt), Some(key)) = (hook.prompt.as_deref(), hook_key) {
                    self.hook_prompt(agent_id, &hook, prompt, stamp, key);
                }
            }
            HookEvent::Stop => {
                self.set_flags(agent_id, None, Some(false));
                let task = self.hook_task(agent_id, hook.session_id.as_deref(), stamp);
                if let (Some(msg), Some(key)) = (hook.last_assistant_message.as_deref(), hook_key) {
                    self.hook_agent_text(agent_id, &hook, task, msg, stamp, key);
                }
                self.hook_turn_end(agent_id, hook.session_id.as_deref(), stamp);
            }
            HookEvent::StopFailure => {
                self.hook_turn_end(agent_id, hook.session_id.as_deref(), stamp);
            }
            HookEvent::PreToolUse => {
                if let Some(key) = hook_key {
                    self.hook_question(agent_id, &hook, stamp, key);
                }
            }
            HookEvent::PostToolUse => self.set_flags(agent_id, None, Some(false)),
            HookEvent::PermissionRequest => self.set_flags(agent_id, None, Some(true)),
            HookEvent::Notification => match hook.notification_type.as_deref() {
                Some("permission_prompt") => self.set_flags(agent_id, None, Some(true)),
                Some("idle_prompt") => {
                    self.hook_turn_end(agent_id, hook.session_id.as_deref(), stamp)
                }
                _ => {}
            },
            HookEvent::SessionStart => self.set_flags(agent_id, Some(false), None),
            HookEvent::SessionEnd => {
                if hook.reason.as_deref() != Some("clear") {
                    self.set_flags(agent_id, Some(true), Some(false));
                }
                self.publish(
                    agent_id,
                    "session_ended",
                    json!({"agent_id": agent_id, "session_id": hook.session_id, "reason": hook.reason}),
                );
            }
            HookEvent::SubagentStop | HookEvent::PreCompact | HookEvent::Other(_) => {}
        }
    }

    /// Finds or creates the agent a hook belongs to: its session's agent; else the agent of its
    /// pane (a new session in the same pane after `/clear`, compaction or resume); else new.
    fn agent_for_hook(&mut self, hook: &Hook) -> Option<AgentId> {
        let session = hook.session_id.as_deref();
        let pane = hook.tmux_pane.as_deref();
        let id = if let Some(id) = session.and_then(|s| self.by_session.get(s).copied()) {
            // A session first seen in its transcript got an agent of its own; its pane says
            // it is the pane's agent, continuing (after /clear, compaction, resume).
            let pane_agent = pane
                .and_then(|p| self.by_pane.get(p).copied())
                .filter(|a| *a != id);
            match pane_agent {
                Some(a)
                    if self.agents[&id].row.tmux_pane.is_none() && !self.agents[&a].row.ended =>
                {
                    self.merge_agent(id, a);
                    a
                }
                _ => id,
            }
        } else if let Some(pane_agent) = pane.and_then(|p| self.by_pane.get(p).copied()) {
            let continues = !self.agents[&pane_agent].row.ended
                || (hook.event == HookEvent::SessionStart
                    && matches!(hook.source.as_deref(), Some("clear" | "compact" | "resume")));
            match session {
                Some(s) if continues => {
                    self.attach_session(pane_agent, s);
                    pane_agent
                }
                Some(s) => self.create_agent(s),
                None => pane_agent,
            }
        } else {
            self.create_agent(session?)
        };
        let now = self.now;
        let agent = self.agent_mut(id);
        agent.row.last_seen_at = now;
        if let Some(cwd) = hook.cwd.as_deref() {
            if agent.row.cwd.as_deref() != Some(cwd) {
                agent.row.cwd = Some(cwd.to_string());
                agent.row.project = project_of(cwd);
            }
        }
        if let Some(p) = pane {
            if agent.row.tmux_pane.as_deref() != Some(p) {
                agent.row.tmux_pane = Some(p.to_string());
                self.by_pane.insert(p.to_string(), id);
            }
        }
        self.dirty_agents.insert(id);
        Some(id)
    }

    /// Agent `from` is really `into`: its sessions, files, tasks, turns and keys move over.
    fn merge_agent(&mut self, from: AgentId, into: AgentId) {
        let b = self.agents.remove(&from).expect("known agent");
        info!(
            "[HOOK_RECEIVER] agent {from} (sessions {:?}) is agent {into}: same pane; merged",
            b.row.sessions
        );
        self.out
            .push_back(Command::Store(Write::MergeAgent { from, into }));
        self.dirty_agents.remove(&from);
        let dirty: Vec<((AgentId, TaskId), TaskState)> = self
            .dirty_tasks
            .iter()
            .filter(|((a, _), _)| *a == from)
            .map(|(k, v)| (*k, *v))
            .collect();
        for ((_, t), old) in dirty {
            self.dirty_tasks.remove(&(from, t));
            self.dirty_tasks.insert((into, t), old);
        }
        for s in &b.row.sessions {
            self.by_session.insert(s.clone(), into);
        }
        for f in self.files.values_mut().filter(|f| f.agent_id == from) {
            f.agent_id = into;
        }
        let a = self.agents.get_mut(&into).expect("known agent");
        for s in b.row.sessions {
            if !a.row.sessions.contains(&s) {
                a.row.sessions.push(s);
            }
        }
        a.row.session_id = b.row.session_id;
        if b.row.transcript_path.is_some() {
            a.row.transcript_path = b.row.transcript_path;
        }
        for (id, mut t) in b.tasks {
            t.agent_id = into;
            a.task_order.insert((t.started_at, id));
            a.tasks.insert(id, t);
        }
        a.index = std::mem::take(&mut a.index).merged(b.index);
        a.seen_entries.extend(b.seen_entries);
        a.hook_keys.extend(b.hook_keys);
        a.question_ids.extend(b.question_ids);
        a.recovered += b.recovered;
        let previous = a.latest;
        a.latest = a.task_order.last().map(|(_, t)| *t);
        let latest = a.latest;
        for t in [previous, latest, b.latest].into_iter().flatten() {
            self.recompute(into, t);
        }
        self.dirty_agents.insert(into);
        self.publish(into, "agent_merged", json!({"from": from, "into": into}));
    }

    fn attach_session(&mut self, agent_id: AgentId, session: &str) {
        self.by_session.insert(session.to_string(), agent_id);
        let agent = self.agent_mut(agent_id);
        agent.row.session_id = session.to_string();
        if !agent.row.sessions.iter().any(|s| s == session) {
            agent.row.sessions.push(session.to_string());
        }
        self.dirty_agents.insert(agent_id);
        self.publish(
            agent_id,
            "session_created",
            json!({"agent_id": agent_id, "session_id": session}),
        );
    }

    fn create_agent(&mut self, session: &str) -> AgentId {
        let id = self.next_agent;
        self.next_agent += 1;
        let row = AgentRow {
            id,
            session_id: session.to_string(),
            sessions: vec![session.to_string()],
            project: None,
            cwd: None,
            transcript_path: None,
            tmux_pane: None,
            ended: false,
            waiting_permission: false,
            sent_at: None,
            permission: None,
            last_seen_at: self.now,
        };
        self.out
            .push_back(Command::Store(Write::Agent(row.clone())));
        self.agents.insert(id, AgentState::new(row));
        self.by_session.insert(session.to_string(), id);
        info!("[HOOK_RECEIVER] New agent {id} for session {session}");
        self.publish(
            id,
            "session_created",
            json!({"agent_id": id, "session_id": session}),
        );
        id
    }

    /// Learns the session's transcript from a hook and starts reading it if it is new.
    fn note_transcript_path(&mut self, agent_id: AgentId, hook: &Hook) {
        let Some(abs) = hook.transcript_path.as_deref() else {
            return;
        };
        let Some(rel) = relative_transcript_path(&self.config.claude_dir, abs) else {
            warn!("[HOOK_RECEIVER] transcript_path outside the claude dir refused: {abs}");
            return;
        };
        let Some(session) = session_of_path(&rel) else {
            return;
        };
        if hook.session_id.as_deref().is_some_and(|s| s != session) {
            debug!("[HOOK_RECEIVER] transcript {rel} names another session than the hook; kept");
        }
        let agent = self.agent_mut(agent_id);
        if agent.row.session_id == session && agent.row.transcript_path.as_deref() != Some(&rel) {
            agent.row.transcript_path = Some(rel.clone());
            self.dirty_agents.insert(agent_id);
        }
        if !self.files.contains_key(&rel) {
            let owner = self.by_session.get(&session).copied().unwrap_or(agent_id);
            self.open_file(&rel, &session, owner, 0, None);
            let read = self.new_read(None);
            self.out.push_back(Command::ReadTranscript {
                path: rel,
                from: 0,
                read,
            });
        }
    }

    fn set_flags(&mut self, agent_id: AgentId, ended: Option<bool>, waiting: Option<bool>) {
        let agent = self.agent_mut(agent_id);
        let before = (agent.row.ended, agent.row.waiting_permission);
        if let Some(e) = ended {
            agent.row.ended = e;
        }
        if let Some(w) = waiting {
            agent.row.waiting_permission = w;
        }
        if before != (agent.row.ended, agent.row.waiting_permission) {
            self.dirty_agents.insert(agent_id);
            self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
        }
    }

    /// The task a hook of `session` emitted at `stamp` belongs to: the latest task of that
    /// session that started no later than the stamp. A Stop emitted before the latest prompt
    /// therefore lands in the older task and never ends the newer one (sm#232).
    fn hook_task(
        &self,
        agent_id: AgentId,
        session: Option<&str>,
        stamp: Timestamp,
    ) -> Option<TaskId> {
        let agent = &self.agents[&agent_id];
        agent
            .task_order
            .range(..=(stamp, TaskId::MAX))
            .rev()
            .map(|(_, id)| &agent.tasks[id])
            .find(|t| session.is_none() || t.session_id.as_deref() == session)
            .map(|t| t.id)
    }

    fn hook_prompt(
        &mut self,
        agent_id: AgentId,
        hook: &Hook,
        prompt: &str,
        stamp: Timestamp,
        hook_key: String,
    ) {
        let text = crate::matching::normalise_display(prompt);
        if text.is_empty() || is_machinery_prompt(&text) {
            debug!(
                "[HOOK_RECEIVER] prompt is a slash command or machinery; the transcript decides"
            );
            return;
        }
        let key = Key::new(Kind::Prompt, &text, hook.prompt_id.as_deref());
        if self.match_hook_to_entry(agent_id, &key, &hook_key) {
            return;
        }
        let session = hook
            .session_id
            .clone()
            .or_else(|| Some(self.agents[&agent_id].row.session_id.clone()));
        let current = self.hook_task(agent_id, session.as_deref(), stamp);
        let current_state = current.map(|t| self.agents[&agent_id].tasks[&t].state);
        let intent = intent::detect_user(&text, current_state);
        let task = match (intent, current) {
            (Intent::Answer, Some(t)) => t,
            (_, Some(t)) if current_state == Some(TaskState::Idle) => t,
            _ => self.create_task(agent_id, session.clone(), stamp),
        };
        let row = TurnRow {
            id: 0,
            agent_id,
            task_id: task,
            actor: Actor::User,
            intent,
            text,
            timestamp: stamp,
            timestamp_source: TimestampSource::Server,
            entry_uuid: None,
            source: TurnSource::Hook,
            hook_key: Some(hook_key),
            prompt_id: hook.prompt_id.clone(),
            tool_use_id: None,
            question: None,
            session_id: session,
        };
        self.add_hook_turn(row, key);
    }

    fn hook_agent_text(
        &mut self,
        agent_id: AgentId,
        hook: &Hook,
        task: Option<TaskId>,
        msg: &str,
        stamp: Timestamp,
        hook_key: String,
    ) {
        let text = msg.trim().to_string();
        let key = Key::new(Kind::AgentText, &text, None);
        if self.match_hook_to_entry(agent_id, &key, &hook_key) {
            return;
        }
        let session = hook.session_id.clone();
        let task = match task {
            Some(t) => t,
            None => self.create_task(agent_id, session.clone(), stamp),
        };
        let row = TurnRow {
            id: 0,
            agent_id,
            task_id: task,
            actor: Actor::Agent,
            intent: intent::detect_agent_final(&text),
            text,
            timestamp: stamp,
            timestamp_source: TimestampSource::Server,
            entry_uuid: None,
            source: TurnSource::Hook,
            hook_key: Some(hook_key),
            prompt_id: hook.prompt_id.clone(),
            tool_use_id: None,
            question: None,
            session_id: session,
        };
        self.add_hook_turn(row, key);
    }

    fn hook_question(
        &mut self,
        agent_id: AgentId,
        hook: &Hook,
        stamp: Timestamp,
        hook_key: String,
    ) {
        let question = hook.tool_input.clone().unwrap_or(serde_json::Value::Null);
        let text = entry::question_text(&question);
        if let Some(id) = hook.tool_use_id.as_deref() {
            self.agent_mut(agent_id)
                .question_ids
                .insert(hash128(id.as_bytes()));
        }
        let key = Key::new(Kind::Question, &text, hook.tool_use_id.as_deref());
        if self.match_hook_to_entry(agent_id, &key, &hook_key) {
            return;
        }
        let session = hook.session_id.clone();
        let task = match self.hook_task(agent_id, session.as_deref(), stamp) {
            Some(t) => t,
            None => self.create_task(agent_id, session.clone(), stamp),
        };
        let row = TurnRow {
            id: 0,
            agent_id,
            task_id: task,
            actor: Actor::Agent,
            intent: Intent::Question,
            text,
            timestamp: stamp,
            timestamp_source: TimestampSource::Server,
            entry_uuid: None,
            source: TurnSource::Hook,
            hook_key: Some(hook_key),
            prompt_id: hook.prompt_id.clone(),
            tool_use_id: hook.tool_use_id.clone(),
            question: Some(question),
            session_id: session,
        };
        self.add_hook_turn(row, key);
    }

    /// A hook whose entry was read first adds nothing: the entry's turn remembers the hook.
    fn match_hook_to_entry(&mut self, agent_id: AgentId, key: &Key, hook_key: &str) -> bool {
        let Some(slot) = self.agent_mut(agent_id).index.match_hook(key) else {
            return false;
        };
        debug!(
            "[HOOK_RECEIVER] hook matches turn {} already read from the transcript",
            slot.turn_id
        );
        self.out.push_back(Command::Store(Write::HookMatched {
            turn_id: slot.turn_id,
            hook_key: hook_key.to_string(),
        }));
        true
    }

    fn add_hook_turn(&mut self, mut row: TurnRow, key: Key) {
        row.id = self.new_turn_id();
        let (agent_id, task_id) = (row.agent_id, row.task_id);
        let from = self.agents[&agent_id].tasks[&task_id].state;
        if transition(from, row.actor, row.intent) == Outcome::Reject {
            warn!(
                "{}",
                preserved_warning("HOOK_RECEIVER", from, row.actor, row.intent, row.id)
            );
        }
        let slot = Slot {
            turn_id: row.id,
            task_id,
            key,
            actor: row.actor,
            intent: row.intent,
            stamp: row.timestamp,
        };
        self.agent_mut(agent_id).index.add_provisional(slot);
        self.persist_turn(row);
        self.recompute(agent_id, task_id);
    }

    /// A turn-end signal from a hook (Stop, StopFailure, idle notification): shown at once,
    /// until the transcript confirms or overtakes it.
    fn hook_turn_end(&mut self, agent_id: AgentId, session: Option<&str>, stamp: Timestamp) {
        let Some(task_id) = self.hook_task(agent_id, session, stamp) else {
            return;
        };
        let task = self
            .agent_mut(agent_id)
            .tasks
            .get_mut(&task_id)
            .expect("task of agent");
        if task.hook_turn_end_at.is_some_and(|t| t >= stamp) {
            return;
        }
        task.hook_turn_end_at = Some(stamp);
        self.mark_task(agent_id, task_id);
        self.recompute(agent_id, task_id);
    }

    // ----- the pane watchdog ----------------------------------------------------------------

    /// A pane capture: new output starts the gap clock unless a turn follows it in time.
    fn on_pane(&mut self, pane: &str, text: &str) {
        let Some(&agent_id) = self.by_pane.get(pane) else {
            debug!("[TMUX_WATCHDOG] pane {pane} belongs to no agent; ignored");
            return;
        };
        let hash = hash128(text.trim_end().as_bytes());
        let now = self.now;
        let agent = self.agent_mut(agent_id);
        match agent.pane_hash.replace(hash) {
            None => {} // the first look sets the baseline
            Some(old) if old == hash => {
                debug!("[TMUX_WATCHDOG] Agent {agent_id} pane content unchanged")
            }
            Some(_) if agent.pane_change_at.is_none() => agent.pane_change_at = Some(now),
            Some(_) => {}
        }
        self.read_screen(agent_id, pane, text);
        self.check_gaps();
    }

    /// What the screen says about the agent's activity. A permission dialog means waiting.
    /// Two idle readings in a row end a turn that hooks and transcript still call running,
    /// once their news is older than the trust window (a lost Stop, an interrupt).
    fn read_screen(&mut self, agent_id: AgentId, pane: &str, text: &str) {
        let reading = crate::pane::read_pane(text);
        let now = self.now;
        let trust = self.config.trust_ms;
        let agent = self.agent_mut(agent_id);
        let dialog = match &reading.state {
            crate::pane::PaneState::Permission(q) => Some(q.clone()),
            _ => None,
        };
        let permission = dialog.is_some();
        if agent.row.permission != dialog {
            agent.row.permission = dialog;
            self.dirty_agents.insert(agent_id);
            self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
        }
        let agent = self.agent_mut(agent_id);
        agent.pane_idle_readings = if reading.state == crate::pane::PaneState::Idle {
            agent.pane_idle_readings + 1
        } else {
            0
        };
        let (idle_readings, trusted, sent) = (
            agent.pane_idle_readings,
            now < agent.last_signal_at.add_millis(trust),
            agent.row.sent_at.is_some(),
        );
        let shown = agent.latest.map(|t| agent.tasks[&t].state);
        if permission != agent.row.waiting_permission {
            self.set_flags(agent_id, None, Some(permission));
        }
        let running = matches!(shown, Some(TaskState::Commanded | TaskState::Processing));
        if idle_readings >= 2 && running && !trusted && !sent {
            debug!(
                "[ACTIVITY] pane {pane} shows the idle prompt while agent {agent_id} is {}; taking it as the end of the turn. Last lines: {}",
                shown.map_or("-", TaskState::as_str),
                crate::pane::tail(text, 4)
            );
            self.hook_turn_end(agent_id, None, now);
        } else if reading.state == crate::pane::PaneState::Busy && !running && !sent {
            debug!(
                "[ACTIVITY] pane {pane} shows agent {agent_id} busy while it is {}; waiting for its prompt. Last lines: {}",
                shown.map_or("-", TaskState::as_str),
                crate::pane::tail(text, 4)
            );
        }
    }

    /// Text goes to the agent's pane: running until a prompt emitted from now on arrives.
    fn on_sent(&mut self, agent_ref: &str, text: Option<&str>) {
        let Some(agent_id) = self.resolve_agent(agent_ref) else {
            return;
        };
        let now = self.now;
        let agent = self.agent_mut(agent_id);
        agent.row.sent_at = Some(now);
        agent.sent_text = text.map(crate::matching::text_hash);
        agent.pane_idle_readings = 0;
        self.dirty_agents.insert(agent_id);
        self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
    }

    /// A prompt arrived: it answers a pending `send` when it is the text sent, or, when that
    /// text is not known (after a restart), when it was emitted after the send. A late prompt
    /// of an earlier send (a `/clear`) never answers a later one.
    fn prompt_seen(&mut self, agent_id: AgentId, stamp: Option<Timestamp>, text: &str) {
        let agent = self.agent_mut(agent_id);
        let Some(sent) = agent.row.sent_at else {
            return;
        };
        let answers = match agent.sent_text {
            Some(h) => h == crate::matching::text_hash(text),
            None => stamp.is_some_and(|at| at >= sent),
        };
        if answers {
            agent.row.sent_at = None;
            agent.sent_text = None;
            self.dirty_agents.insert(agent_id);
        }
    }

    /// A `send` whose prompt never showed stops counting as running.
    fn expire_sends(&mut self) {
        let (now, limit) = (self.now, self.config.send_timeout_ms);
        let expired: Vec<AgentId> = self
            .agents
            .iter()
            .filter(|(_, a)| a.row.sent_at.is_some_and(|t| now >= t.add_millis(limit)))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            warn!("[SEND] no prompt arrived within {}s of a send to agent {id}; its activity follows hooks, transcript and pane again", limit / 1000);
            let agent = self.agent_mut(id);
            agent.row.sent_at = None;
            agent.sent_text = None;
            self.dirty_agents.insert(id);
        }
    }

    /// New pane output that no turn has followed within the threshold is a gap: the
    /// transcript is read at once instead of waiting for the watcher.
    fn check_gaps(&mut self) {
        let now = self.now;
        let threshold = self.config.gap_threshold_ms;
        let mut gaps = Vec::new();
        for (id, agent) in self.agents.iter_mut() {
            let Some(since) = agent.pane_change_at else {
                continue;
            };
            if agent.last_turn_at >= since {
                agent.pane_change_at = None;
            } else if now >= since.add_millis(threshold) {
                agent.pane_change_at = None;
                gaps.push((*id, agent.row.tmux_pane.clone().unwrap_or_default()));
            }
        }
        for (agent_id, pane) in gaps {
            info!(
                "[TMUX_WATCHDOG] Gap detected for agent {agent_id} — new output in pane {pane} with no matching turn after {}s, triggering reconciliation",
                threshold as f64 / 1000.0
            );
            self.out.push_back(Command::GapDetected { agent_id });
            let paths = self.agent_files(agent_id);
            for (path, from) in paths {
                let read = self.new_read(None);
                self.out
                    .push_back(Command::ReadTranscript { path, from, read });
            }
        }
    }

    // ----- transcripts -------------------------------------------------------------------

    fn on_transcript(&mut self, path: &str, offset: u64, data: &[u8], read: Option<ReadId>) {
        let reconcile = read.and_then(|r| self.reads.remove(&r)).flatten();
        if !self.files.contains_key(path) {
            let Some(session) = session_of_path(path) else {
                debug!("[TRANSCRIPT] {path} is not a session transcript; ignored");
                self.finish_read(reconcile, read);
                return;
            };
            let agent_id = match self.by_session.get(&session) {
                Some(&a) => a,
                None => {
                    let a = self.create_agent(&session);
                    let agent = self.agent_mut(a);
                    agent.row.transcript_path = Some(path.to_string());
                    agent.row.project = project_of_dir(path);
                    self.dirty_agents.insert(a);
                    a
                }
            };
            self.open_file(path, &session, agent_id, 0, None);
        }
        let file = self.files.get_mut(path).expect("file just opened");
        let agent_id = file.agent_id;
        let mut framer = std::mem::take(&mut file.framer);
        let push = framer.push(offset, data, |line, _end| {
            self.process_line(path, agent_id, line)
        });
        let file = self.files.get_mut(path).expect("file still open");
        file.framer = framer;
        if let Push::Gap { expected } = push {
            let read = self.new_read(reconcile);
            debug!(
                "[TRANSCRIPT] {path}: bytes at {offset} but {expected} expected; reading the gap"
            );
            self.out.push_back(Command::ReadTranscript {
                path: path.to_string(),
                from: expected,
                read,
            });
            if let Some(r) = reconcile {
                if let Some(rec) = self.reconciles.get_mut(&r) {
                    rec.reads.insert(read);
                }
            }
        }
        self.flush();
        self.save_offset(path);
        if !matches!(push, Push::Gap { .. }) {
            self.finish_read(reconcile, read);
        }
    }

    fn on_reset(&mut self, path: &str) {
        let Some(file) = self.files.get_mut(path) else {
            return;
        };
        info!("[TRANSCRIPT] {path} shrank or was replaced; reading it again (entries already seen are skipped)");
        file.framer.reset(0);
        let read = self.new_read(None);
        self.out.push_back(Command::ReadTranscript {
            path: path.to_string(),
            from: 0,
            read,
        });
    }

    fn save_offset(&mut self, path: &str) {
        let file = self.files.get_mut(path).expect("file open");
        let now = (file.framer.committed_offset(), file.task);
        if now == file.saved {
            return;
        }
        file.saved = now;
        self.out.push_back(Command::Store(Write::Offset(OffsetRow {
            path: path.to_string(),
            session_id: file.session_id.clone(),
            offset: now.0,
            task_id: now.1,
        })));
    }

    fn process_line(&mut self, path: &str, agent_id: AgentId, line: &[u8]) {
        match entry::classify(line) {
            Ok(Entry::Ignored) => {}
            Ok(e) => self.process_entry(path, agent_id, e),
            Err(e) => warn!(
                "[TRANSCRIPT] {path}: skipped a line that is not JSON ({} bytes): {e}",
                line.len()
            ),
        }
    }

    fn process_entry(&mut self, path: &str, agent_id: AgentId, e: Entry) {
        let session = self.files[path].session_id.clone();
        let now = self.now;
        self.agent_mut(agent_id).last_signal_at = now;
        match e {
            Entry::UserPrompt {
                uuid,
                timestamp,
                text,
                prompt_id,
            } => {
                if !self.first_sight(agent_id, &uuid) {
                    return;
                }
                self.prompt_seen(agent_id, timestamp, &text);
                let key = Key::new(Kind::Prompt, &text, prompt_id.as_deref());
                if let Some(slot) = self.agent_mut(agent_id).index.claim(&key) {
                    self.set_file_task(path, slot.task_id);
                    self.claim(agent_id, slot, uuid, timestamp, slot.task_id);
                    return;
                }
                let file_task = self.files[path].task;
                let tx = file_task.map(|t| self.agents[&agent_id].tasks[&t].transcript_state);
                let intent = intent::detect_user(&text, tx);
                let task = match (intent, file_task) {
                    (Intent::Answer, Some(t)) => t,
                    _ => {
                        let t = self.create_task(
                            agent_id,
                            Some(session.clone()),
                            timestamp.unwrap_or(self.now),
                        );
                        self.set_file_task(path, t);
                        t
                    }
                };
                let row = self.entry_turn(
                    agent_id,
                    task,
                    Actor::User,
                    intent,
                    text,
                    timestamp,
                    uuid,
                    &session,
                );
                let row = TurnRow { prompt_id, ..row };
                self.add_entry_turn(row, Some(key));
            }
            Entry::AgentText {
                uuid,
                timestamp,
                text,
            } => {
                if !self.first_sight(agent_id, &uuid) {
                    return;
                }
                let task = self.entry_task(path, agent_id, timestamp);
                self.overtake_hook_turn_end(agent_id, task, timestamp);
                let key = Key::new(Kind::AgentText, &text, None);
                if let Some(slot) = self.agent_mut(agent_id).index.claim(&key) {
                    self.claim(agent_id, slot, uuid, timestamp, task);
                    return;
                }
                let intent = intent::detect_agent(&text).0;
                let row = self.entry_turn(
                    agent_id,
                    task,
                    Actor::Agent,
                    intent,
                    text,
                    timestamp,
                    uuid,
                    &session,
                );
                self.add_entry_turn(row, Some(key));
            }
            Entry::AgentQuestion {
                uuid,
                timestamp,
                tool_use_id,
                text,
                question,
            } => {
                if let Some(id) = tool_use_id.as_deref() {
                    self.agent_mut(agent_id)
                        .question_ids
                        .insert(hash128(id.as_bytes()));
                }
                if !self.first_sight(agent_id, &uuid) {
                    return;
                }
                let task = self.entry_task(path, agent_id, timestamp);
                self.overtake_hook_turn_end(agent_id, task, timestamp);
                let key = Key::new(Kind::Question, &text, tool_use_id.as_deref());
                if let Some(slot) = self.agent_mut(agent_id).index.claim(&key) {
                    self.claim(agent_id, slot, uuid, timestamp, task);
                    return;
                }
                let row = self.entry_turn(
                    agent_id,
                    task,
                    Actor::Agent,
                    Intent::Question,
                    text,
                    timestamp,
                    uuid,
                    &session,
                );
                let row = TurnRow {
                    tool_use_id,
                    question: Some(question),
                    ..row
                };
                self.add_entry_turn(row, Some(key));
            }
            Entry::ToolResult {
                uuid,
                timestamp,
                tool_use_id,
                answers,
                text,
            } => {
                let is_answer = answers.is_some()
                    || tool_use_id.as_deref().is_some_and(|id| {
                        self.agents[&agent_id]
                            .question_ids
                            .contains(&hash128(id.as_bytes()))
                    });
                let task = self.files[path].task;
                if let Some(t) = task {
                    self.overtake_hook_turn_end(agent_id, t, timestamp);
                }
                if !is_answer || !self.first_sight(agent_id, &uuid) {
                    return;
                }
                let task = self.entry_task(path, agent_id, timestamp);
                let text = answers.unwrap_or(text).trim().to_string();
                let row = self.entry_turn(
                    agent_id,
                    task,
                    Actor::User,
                    Intent::Answer,
                    text,
                    timestamp,
                    uuid,
                    &session,
                );
                let row = TurnRow { tool_use_id, ..row };
                self.add_entry_turn(row, None);
            }
            Entry::Signal { timestamp, signal } => {
                let Some(task_id) = self.files[path].task else {
                    return;
                };
                match signal {
                    Signal::Interrupt | Signal::TurnDuration | Signal::StopHookSummary => {
                        let task = self
                            .agent_mut(agent_id)
                            .tasks
                            .get_mut(&task_id)
                            .expect("task");
                        let before = (task.transcript_state, task.hook_turn_end_at);
                        if let Some(s) = on_turn_end(task.transcript_state) {
                            task.transcript_state = s;
                        }
                        task.hook_turn_end_at = None; // confirmed by the transcript
                        if before != (task.transcript_state, task.hook_turn_end_at) {
                            self.mark_task(agent_id, task_id);
                            self.recompute(agent_id, task_id);
                        }
                    }
                    Signal::CompactBoundary | Signal::ToolUse => {
                        self.overtake_hook_turn_end(agent_id, task_id, timestamp)
                    }
                }
            }
            Entry::Ignored => {}
        }
    }

    /// True the first time an entry uuid is seen for this agent: re-reads add nothing.
    fn first_sight(&mut self, agent_id: AgentId, uuid: &str) -> bool {
        self.agent_mut(agent_id).seen_entries.insert(uuid_key(uuid))
    }

    /// The task an entry belongs to: the one its file's last prompt opened; a transcript read
    /// from the middle of a conversation gets a task without a command.
    fn entry_task(
        &mut self,
        path: &str,
        agent_id: AgentId,
        timestamp: Option<Timestamp>,
    ) -> TaskId {
        if let Some(t) = self.files[path].task {
            return t;
        }
        let session = self.files[path].session_id.clone();
        let t = self.create_task(agent_id, Some(session), timestamp.unwrap_or(self.now));
        self.set_file_task(path, t);
        t
    }

    fn set_file_task(&mut self, path: &str, task: TaskId) {
        self.files.get_mut(path).expect("file open").task = Some(task);
    }

    /// A transcript entry written after a hook's turn-end stamp shows the agent went on: the
    /// transcript is the authority again for that task.
    fn overtake_hook_turn_end(
        &mut self,
        agent_id: AgentId,
        task_id: TaskId,
        timestamp: Option<Timestamp>,
    ) {
        let Some(ts) = timestamp else { return };
        let task = self
            .agent_mut(agent_id)
            .tasks
            .get_mut(&task_id)
            .expect("task");
        if task.hook_turn_end_at.is_some_and(|end| ts > end) {
            task.hook_turn_end_at = None;
            self.mark_task(agent_id, task_id);
            self.recompute(agent_id, task_id);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn entry_turn(
        &self,
        agent_id: AgentId,
        task_id: TaskId,
        actor: Actor,
        intent: Intent,
        text: String,
        timestamp: Option<Timestamp>,
        uuid: String,
        session: &str,
    ) -> TurnRow {
        TurnRow {
            id: 0,
            agent_id,
            task_id,
            actor,
            intent,
            text,
            timestamp: timestamp.unwrap_or(self.now),
            timestamp_source: if timestamp.is_some() {
                TimestampSource::Jsonl
            } else {
                TimestampSource::Server
            },
            entry_uuid: Some(uuid),
            source: TurnSource::Transcript,
            hook_key: None,
            prompt_id: None,
            tool_use_id: None,
            question: None,
            session_id: Some(session.to_string()),
        }
    }

    /// Persists a turn made from a transcript entry that no hook announced, and lets it drive
    /// its task's state like any other turn (a recovered question awaits input).
    fn add_entry_turn(&mut self, mut row: TurnRow, key: Option<Key>) {
        row.id = self.new_turn_id();
        let (agent_id, task_id) = (row.agent_id, row.task_id);
        info!(
            "[RECONCILER] Created turn {} from JSONL entry (agent={}, intent={}, hash={}) — no matching hook-created turn found",
            row.id,
            agent_id,
            row.intent.as_str(),
            key.map(|k| format!("{:08x}", (k.text >> 96) as u32)).unwrap_or_else(|| "-".into())
        );
        if let Some(key) = key {
            let slot = Slot {
                turn_id: row.id,
                task_id,
                key,
                actor: row.actor,
                intent: row.intent,
                stamp: row.timestamp,
            };
            self.agent_mut(agent_id).index.add_unhooked(slot);
        }
        self.agent_mut(agent_id).recovered += 1;
        let (actor, intent, id) = (row.actor, row.intent, row.id);
        self.persist_turn(row);
        self.fold_transcript(agent_id, task_id, actor, intent, id);
    }

    /// An entry claims a hook-made turn: the turn takes the entry's uuid, timestamp and task.
    fn claim(
        &mut self,
        agent_id: AgentId,
        slot: Slot,
        uuid: String,
        timestamp: Option<Timestamp>,
        task_id: TaskId,
    ) {
        if let Some(ts) = timestamp {
            info!(
                "[RECONCILER] Updated turn {} timestamp: {} -> {}",
                slot.turn_id, slot.stamp, ts
            );
        }
        let now = self.now;
        self.agent_mut(agent_id).last_turn_at = now;
        // The command that opened a task now has the transcript's time: the task takes it
        // too, so tasks the transcript knows are ordered on one clock.
        if let (Some(ts), Actor::User, Intent::Command) = (timestamp, slot.actor, slot.intent) {
            self.retime_task(agent_id, slot.task_id, slot.stamp, ts);
        }
        self.out.push_back(Command::Store(Write::Claim {
            turn_id: slot.turn_id,
            entry_uuid: uuid.clone(),
            timestamp,
            task_id,
        }));
        self.publish(
            agent_id,
            "turn_updated",
            json!({
                "turn_id": slot.turn_id,
                "agent_id": agent_id,
                "task_id": task_id,
                "entry_uuid": uuid,
                "timestamp": timestamp.unwrap_or(slot.stamp),
                "timestamp_source": if timestamp.is_some() { "jsonl" } else { "server" },
                "update_type": "timestamp_correction",
            }),
        );
        if slot.task_id != task_id {
            self.recompute(agent_id, slot.task_id);
        }
        self.fold_transcript(agent_id, task_id, slot.actor, slot.intent, slot.turn_id);
    }

    /// Applies a turn, in transcript order, to its task's transcript state.
    fn fold_transcript(
        &mut self,
        agent_id: AgentId,
        task_id: TaskId,
        actor: Actor,
        intent: Intent,
        turn_id: TurnId,
    ) {
        let task = self
            .agent_mut(agent_id)
            .tasks
            .get_mut(&task_id)
            .expect("task");
        let from = task.transcript_state;
        match transition(from, actor, intent) {
            Outcome::To(to) => {
                if to != from {
                    task.transcript_state = to;
                    self.mark_task(agent_id, task_id);
                }
            }
            Outcome::Reject => warn!(
                "{}",
                preserved_warning("RECONCILER", from, actor, intent, turn_id)
            ),
            // A command opens its own task before it is folded; nothing to do here.
            Outcome::OpenNew | Outcome::CompleteAndOpenNew => {}
        }
        let shown_before = self.agents[&agent_id].tasks[&task_id].state;
        self.recompute(agent_id, task_id);
        let shown_after = self.agents[&agent_id].tasks[&task_id].state;
        if shown_after != shown_before {
            info!(
                "[RECONCILER] Recovered turn {turn_id} triggered state transition: {} -> {}",
                shown_before.as_str(),
                shown_after.as_str()
            );
        }
    }

    // ----- tasks ---------------------------------------------------------------------------

    fn create_task(
        &mut self,
        agent_id: AgentId,
        session: Option<String>,
        started_at: Timestamp,
    ) -> TaskId {
        let id = self.next_task;
        self.next_task += 1;
        let row = TaskRow {
            id,
            agent_id,
            session_id: session,
            state: TaskState::Idle,
            transcript_state: TaskState::Idle,
            started_at,
            hook_turn_end_at: None,
            state_since: self.now,
        };
        self.out.push_back(Command::Store(Write::Task(row.clone())));
        let agent = self.agent_mut(agent_id);
        agent.task_order.insert((row.started_at, id));
        agent.tasks.insert(id, row);
        let previous = agent.latest;
        agent.latest = agent.task_order.last().map(|(_, t)| *t);
        if let Some(p) = previous.filter(|&p| Some(p) != self.agents[&agent_id].latest) {
            debug!("[LIFECYCLE] task {p} superseded by task {id}");
            self.recompute(agent_id, p);
        }
        id
    }

    /// Moves a task's start from `from` (its hook command's time) to `to`, and re-decides which
    /// task is the agent's latest.
    fn retime_task(&mut self, agent_id: AgentId, task_id: TaskId, from: Timestamp, to: Timestamp) {
        let agent = self.agent_mut(agent_id);
        let Some(task) = agent.tasks.get_mut(&task_id) else {
            return;
        };
        if task.started_at != from || from == to {
            return;
        }
        agent.task_order.remove(&(from, task_id));
        task.started_at = to;
        agent.task_order.insert((to, task_id));
        let previous = agent.latest;
        agent.latest = agent.task_order.last().map(|(_, t)| *t);
        let latest = agent.latest;
        self.mark_task(agent_id, task_id);
        for t in [previous, latest].into_iter().flatten() {
            self.recompute(agent_id, t);
        }
    }

    /// The state shown for a task: complete once a later task started; otherwise the
    /// transcript's state with the hooks' unconfirmed news (provisional turns, a turn end)
    /// applied on top in stamp order.
    fn recompute(&mut self, agent_id: AgentId, task_id: TaskId) {
        let agent = &self.agents[&agent_id];
        let task = &agent.tasks[&task_id];
        let shown = if agent.latest != Some(task_id) {
            TaskState::Complete
        } else {
            // Unconfirmed hook news in stamp order: provisional turns, then a turn end.
            let mut preview: Vec<Preview> = agent
                .index
                .provisional_of(task_id)
                .map(|s| Preview {
                    stamp: s.stamp,
                    turn: s.turn_id,
                    turn_of: Some((s.actor, s.intent)),
                })
                .collect();
            if let Some(end) = task.hook_turn_end_at {
                preview.push(Preview {
                    stamp: end,
                    turn: TurnId::MAX,
                    turn_of: None,
                });
            }
            preview.sort_by_key(|p| (p.stamp, p.turn));
            preview
                .iter()
                .fold(task.transcript_state, |s, item| match item.turn_of {
                    Some((actor, intent)) => match transition(s, actor, intent) {
                        Outcome::To(to) => to,
                        _ => s,
                    },
                    None => on_turn_end(s).unwrap_or(s),
                })
        };
        if shown != task.state {
            let old = task.state;
            let now = self.now;
            let task = self
                .agent_mut(agent_id)
                .tasks
                .get_mut(&task_id)
                .expect("task");
            task.state = shown;
            task.state_since = now;
            self.dirty_tasks.entry((agent_id, task_id)).or_insert(old);
        }
    }

    fn mark_task(&mut self, agent_id: AgentId, task_id: TaskId) {
        let state = self.agents[&agent_id].tasks[&task_id].state;
        self.dirty_tasks.entry((agent_id, task_id)).or_insert(state);
    }

    /// Writes changed tasks and agents, then tells the dashboard. Turns were written before,
    /// so a state change never decides whether a turn is kept.
    fn flush(&mut self) {
        let tasks = std::mem::take(&mut self.dirty_tasks);
        let mut refreshed = BTreeSet::new();
        for ((agent_id, task_id), old) in tasks {
            let row = self.agents[&agent_id].tasks[&task_id].clone();
            self.out.push_back(Command::Store(Write::Task(row.clone())));
            if row.state != old {
                self.publish(
                    agent_id,
                    "state_changed",
                    json!({"agent_id": agent_id, "task_id": task_id, "old_state": old.as_str(), "new_state": row.state.as_str()}),
                );
                refreshed.insert(agent_id);
            }
        }
        for agent_id in std::mem::take(&mut self.dirty_agents) {
            let row = self.agents[&agent_id].row.clone();
            self.out.push_back(Command::Store(Write::Agent(row)));
        }
        for agent_id in refreshed {
            let agent = &self.agents[&agent_id];
            let current = agent.latest.map(|t| &agent.tasks[&t]);
            let activity = agent_activity(&agent.row, current);
            let state = crate::activity::agent_state(current);
            self.publish(
                agent_id,
                "card_refresh",
                json!({"agent_id": agent_id, "state": state.as_str(), "activity": activity.as_str()}),
            );
        }
    }

    // ----- turns ---------------------------------------------------------------------------

    fn new_turn_id(&mut self) -> TurnId {
        let id = self.next_turn;
        self.next_turn += 1;
        id
    }

    fn persist_turn(&mut self, row: TurnRow) {
        let data = turn_json(&row);
        let agent_id = row.agent_id;
        let now = self.now;
        self.agent_mut(agent_id).last_turn_at = now;
        self.out.push_back(Command::Store(Write::Turn(row)));
        self.publish(agent_id, "turn_created", data);
    }

    fn publish(&mut self, agent_id: AgentId, name: &'static str, data: serde_json::Value) {
        self.out.push_back(Command::Publish(Event {
            name,
            agent_id,
            data,
        }));
    }

    // ----- reconcile and reads -------------------------------------------------------------

    fn on_reconcile(&mut self, agent_ref: &str, request: RequestId) {
        let Some(agent_id) = self.resolve_agent(agent_ref) else {
            self.out.push_back(Command::Reply {
                request,
                reply: Reply::UnknownAgent,
            });
            return;
        };
        if self.agents[&agent_id].reconciling.is_some() {
            self.out.push_back(Command::Reply {
                request,
                reply: Reply::ReconcileBusy,
            });
            return;
        }
        let paths = self.agent_files(agent_id);
        let recovered_before = self.agents[&agent_id].recovered;
        let mut rec = Reconcile {
            agent_id,
            reads: BTreeSet::new(),
            recovered_before,
        };
        for (path, from) in paths {
            let read = self.new_read(Some(request));
            rec.reads.insert(read);
            self.out
                .push_back(Command::ReadTranscript { path, from, read });
        }
        if rec.reads.is_empty() {
            self.out.push_back(Command::Reply {
                request,
                reply: Reply::Reconciled {
                    agent_id,
                    created: 0,
                },
            });
            return;
        }
        self.agent_mut(agent_id).reconciling = Some(request);
        self.reconciles.insert(request, rec);
    }

    /// An agent's transcript files and the offsets to read them from.
    fn agent_files(&self, agent_id: AgentId) -> Vec<(String, u64)> {
        self.files
            .iter()
            .filter(|(_, f)| f.agent_id == agent_id)
            .map(|(p, f)| (p.clone(), f.framer.expected_offset()))
            .collect()
    }

    fn new_read(&mut self, reconcile: Option<RequestId>) -> ReadId {
        let id = self.next_read;
        self.next_read += 1;
        self.reads.insert(id, reconcile);
        id
    }

    fn finish_read(&mut self, reconcile: Option<RequestId>, read: Option<ReadId>) {
        let (Some(request), Some(read)) = (reconcile, read) else {
            return;
        };
        let Some(rec) = self.reconciles.get_mut(&request) else {
            return;
        };
        rec.reads.remove(&read);
        if !rec.reads.is_empty() {
            return;
        }
        let rec = self.reconciles.remove(&request).expect("reconcile");
        let agent = self.agent_mut(rec.agent_id);
        agent.reconciling = None;
        let created = agent.recovered - rec.recovered_before;
        info!(
            "[RECONCILER] Reconcile of agent {} done: {created} turn(s) recovered",
            rec.agent_id
        );
        self.out.push_back(Command::Reply {
            request,
            reply: Reply::Reconciled {
                agent_id: rec.agent_id,
                created,
            },
        });
    }

    fn open_file(
        &mut self,
        path: &str,
        session: &str,
        agent_id: AgentId,
        offset: u64,
        task: Option<TaskId>,
    ) {
        if !self.by_session.contains_key(session) {
            self.attach_session(agent_id, session);
        }
        self.files.insert(
            path.to_string(),
            FileState {
                session_id: session.to_string(),
                agent_id,
                framer: LineFramer::new(offset),
                task,
                saved: (offset, task),
            },
        );
    }

    // ----- restore -------------------------------------------------------------------------

    /// Rebuilds everything from the store, then asks to read every file from its offset.
    fn restore(&mut self, snap: Snapshot) {
        let config = self.config.clone();
        let now = self.now;
        *self = Core::new(config);
        self.now = now;
        for row in snap.agents {
            self.next_agent = self.next_agent.max(row.id + 1);
            for s in &row.sessions {
                self.by_session.insert(s.clone(), row.id);
            }
            self.by_session.insert(row.session_id.clone(), row.id);
            if let Some(p) = &row.tmux_pane {
                self.by_pane.insert(p.clone(), row.id);
            }
            self.agents.insert(row.id, AgentState::new(row));
        }
        for row in snap.tasks {
            self.next_task = self.next_task.max(row.id + 1);
            if let Some(agent) = self.agents.get_mut(&row.agent_id) {
                agent.task_order.insert((row.started_at, row.id));
                agent.tasks.insert(row.id, row);
            }
        }
        let mut turns = snap.turns;
        turns.sort_by_key(|t| t.id);
        for turn in &turns {
            self.next_turn = self.next_turn.max(turn.id + 1);
            let Some(agent) = self.agents.get_mut(&turn.agent_id) else {
                continue;
            };
            if let Some(u) = &turn.entry_uuid {
                agent.seen_entries.insert(uuid_key(u));
            }
            if let Some(h) = turn
                .hook_key
                .as_deref()
                .and_then(|h| u128::from_str_radix(h, 16).ok())
            {
                agent.hook_keys.insert(h);
            }
            if let (Some(id), true) = (&turn.tool_use_id, turn.question.is_some()) {
                agent.question_ids.insert(hash128(id.as_bytes()));
            }
            if turn.source == TurnSource::Transcript {
                agent.recovered += 1;
            }
            let Some(key) = Key::of(turn) else { continue };
            let slot = Slot {
                turn_id: turn.id,
                task_id: turn.task_id,
                key,
                actor: turn.actor,
                intent: turn.intent,
                stamp: turn.timestamp,
            };
            match (turn.source, &turn.entry_uuid, &turn.hook_key) {
                (TurnSource::Hook, None, _) => agent.index.add_provisional(slot),
                (TurnSource::Transcript, _, None) => agent.index.add_unhooked(slot),
                _ => {}
            }
        }
        for agent in self.agents.values_mut() {
            agent.latest = agent.task_order.last().map(|(_, t)| *t);
        }
        let mut reads = Vec::new();
        for off in snap.offsets {
            let Some(&agent_id) = self.by_session.get(&off.session_id) else {
                continue;
            };
            self.open_file(
                &off.path,
                &off.session_id,
                agent_id,
                off.offset,
                off.task_id,
            );
            reads.push((off.path, off.offset));
        }
        for (path, from) in reads {
            let read = self.new_read(None);
            self.out
                .push_back(Command::ReadTranscript { path, from, read });
        }
        info!(
            "[RESTORE] rebuilt {} agent(s) from the store",
            self.agents.len()
        );
    }

    fn agent_mut(&mut self, id: AgentId) -> &mut AgentState {
        self.agents.get_mut(&id).expect("known agent")
    }
}

impl AgentState {
    fn new(row: AgentRow) -> AgentState {
        AgentState {
            row,
            index: MatchIndex::default(),
            seen_entries: HashSet::new(),
            hook_keys: HashSet::new(),
            question_ids: HashSet::new(),
            tasks: BTreeMap::new(),
            task_order: BTreeSet::new(),
            latest: None,
            recovered: 0,
            reconciling: None,
            pane_hash: None,
            pane_change_at: None,
            last_turn_at: Timestamp(i64::MIN),
            pane_idle_readings: 0,
            last_signal_at: Timestamp(i64::MIN),
            sent_text: None,
        }
    }
}

/// The JSON of a turn as the API and `turn_created` show it.
pub fn turn_json(t: &TurnRow) -> serde_json::Value {
    json!({
        "id": t.id,
        "turn_id": t.id,
        "agent_id": t.agent_id,
        "task_id": t.task_id,
        "actor": t.actor,
        "intent": t.intent,
        "text": t.text,
        "timestamp": t.timestamp,
        "timestamp_source": t.timestamp_source,
        "entry_uuid": t.entry_uuid,
        "question": t.question,
    })
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

/// A prompt the transcript never shows as a turn: slash commands and machinery.
fn is_machinery_prompt(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    let slash_command = first.len() > 1
        && first.starts_with('/')
        && !first[1..].contains('/')
        && first[1..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c));
    slash_command || entry::is_machinery_text(text)
}

/// `projects/<dir>/<session>.jsonl` → `<session>`; anything else (sub-agent transcripts in
/// deeper folders, other files) is not a session transcript.
pub fn session_of_path(rel: &str) -> Option<String> {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["projects", dir, file] if !dir.is_empty() && !dir.starts_with('.') => {
            let stem = file.strip_suffix(".jsonl")?;
            (!stem.is_empty()).then(|| stem.to_string())
        }
        _ => None,
    }
}

/// A hook's absolute transcript path relative to the claude dir, or `None` outside it.
pub fn relative_transcript_path(claude_dir: &str, abs: &str) -> Option<String> {
    let dir = claude_dir.trim_end_matches('/');
    let rest = abs
        .strip_prefix(dir)
        .and_then(|r| r.strip_prefix('/'))
        .or_else(|| abs.strip_prefix("~/.claude/"))?;
    if rest
        .split('/')
        .any(|c| c == ".." || c == "." || c.is_empty())
    {
        return None;
    }
    Some(rest.to_string())
}

fn project_of(cwd: &str) -> Option<String> {
    cwd.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn project_of_dir(rel: &str) -> Option<String> {
    rel.split('/').nth(1).map(|d| {
        d.rsplit('-')
            .find(|s| !s.is_empty())
            .unwrap_or(d)
            .to_string()
    })
}
