//! Agents: which agent a hook belongs to, making one, and merging two that turn out to be one.

use super::{project_of, AgentState, Core};
use crate::hook::{Hook, HookEvent};
use crate::io::{Command, Write};
use crate::kind::AgentKind;
use crate::model::{AgentId, AgentRow, TaskId};
use crate::task::state::TaskState;
use serde_json::json;
use tracing::{debug, info};

impl Core {
    /// Finds or creates the agent a hook belongs to: its session's agent; else the agent of its
    /// pane (a new session in the same pane after `/clear`, compaction or resume); else new.
    pub(super) fn agent_for_hook(&mut self, kind: AgentKind, hook: &Hook) -> Option<AgentId> {
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
                _ => {
                    debug!("[HOOK_RECEIVER] hook belongs to agent {id}, its session's");
                    id
                }
            }
        } else if let Some(pane_agent) = pane.and_then(|p| self.by_pane.get(p).copied()) {
            // A pane agent no session joined yet takes this one even if the reaper ended it
            // before this (late) first hook: the hook is its process's.
            let continues = !self.agents[&pane_agent].row.ended
                || self.agents[&pane_agent].row.unjoined()
                || (hook.event == HookEvent::SessionStart
                    && matches!(hook.source.as_deref(), Some("clear" | "compact" | "resume")));
            match session {
                Some(s) if continues => {
                    debug!(
                        "[HOOK_RECEIVER] new session {s} in pane {} continues agent {pane_agent}",
                        pane.unwrap_or("-")
                    );
                    self.attach_session(pane_agent, s);
                    pane_agent
                }
                Some(s) => self.create_agent(kind, s),
                None => {
                    debug!("[HOOK_RECEIVER] hook without a session belongs to agent {pane_agent}, its pane's");
                    pane_agent
                }
            }
        } else {
            self.create_agent(kind, session?)
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
                debug!("[HOOK_RECEIVER] agent {id} is in pane {p}");
                agent.row.tmux_pane = Some(p.to_string());
                self.by_pane.insert(p.to_string(), id);
            }
        }
        self.dirty_agents.insert(id);
        Some(id)
    }

    /// Agent `from` is really `into`: its sessions, files, tasks, turns and keys move over.
    pub(super) fn merge_agent(&mut self, from: AgentId, into: AgentId) {
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
        if a.row.cwd.is_none() {
            a.row.cwd = b.row.cwd;
            a.row.project = b.row.project;
        }
        if a.row.git_branch.is_none() {
            a.row.git_branch = b.row.git_branch;
        }
        // What was heard of either was heard of the one agent.
        a.row.last_seen_at = a.row.last_seen_at.max(b.row.last_seen_at);
        a.last_signal_at = a.last_signal_at.max(b.last_signal_at);
        a.news_stamp = a.news_stamp.max(b.news_stamp);
        a.last_turn_at = a.last_turn_at.max(b.last_turn_at);
        a.first_line_at = match (a.first_line_at, b.first_line_at) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        for (id, mut t) in b.tasks {
            t.agent_id = into;
            a.task_order.insert((t.started_at, id));
            a.tasks.insert(id, t);
        }
        a.index = std::mem::take(&mut a.index).merged(b.index);
        a.seen_entries.extend(b.seen_entries);
        a.hook_keys.extend(b.hook_keys);
        a.question_ids.extend(b.question_ids);
        a.questions.extend(b.questions);
        // A `send` to this agent's pane was answered when the merged session's transcript
        // holds a prompt written since (it arrived there, before the two were known as one).
        let latest_prompt = b.user_entry_at.values().max().copied();
        if let (Some(sent), Some(at)) = (a.row.sent_at, latest_prompt) {
            if at >= sent {
                a.row.sent_at = None;
                a.sent_text = None;
                a.sent_by_pane = false;
            }
        }
        a.user_entry_at.extend(b.user_entry_at);
        a.task_turns.extend(b.task_turns);
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

    pub(super) fn attach_session(&mut self, agent_id: AgentId, session: &str) {
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

    /// An agent for the Claude Code process `pid` in `pane`, before any session of it is
    /// known: no session yet (`session_id` empty), its folder the process's.
    pub(super) fn create_pane_agent(
        &mut self,
        kind: AgentKind,
        pane: &str,
        pid: u32,
        cwd: Option<String>,
    ) -> AgentId {
        let mut row = AgentRow::new(self.next_agent_id(), self.now);
        row.kind = kind;
        row.project = cwd.as_deref().and_then(project_of);
        row.cwd = cwd;
        row.tmux_pane = Some(pane.to_string());
        row.claude_pid = Some(pid);
        self.by_pane.insert(pane.to_string(), row.id);
        info!("[DISCOVERY] New agent {} for the {} process {pid} in pane {pane}; its session joins it when a hook or its transcript names the pane", row.id, kind.title());
        self.admit_agent(row)
    }

    pub(super) fn create_agent(&mut self, kind: AgentKind, session: &str) -> AgentId {
        let mut row = AgentRow::new(self.next_agent_id(), self.now);
        row.kind = kind;
        row.session_id = session.to_string();
        row.sessions = vec![session.to_string()];
        self.by_session.insert(session.to_string(), row.id);
        info!(
            "[HOOK_RECEIVER] New agent {} for {} session {session}",
            row.id,
            kind.title()
        );
        self.admit_agent(row)
    }

    fn next_agent_id(&mut self) -> AgentId {
        let id = self.ids.agent;
        self.ids.agent += 1;
        id
    }

    /// Stores a new agent's row, keeps it in memory and announces it (`session_created`,
    /// its session null when none joined it yet).
    fn admit_agent(&mut self, row: AgentRow) -> AgentId {
        let id = row.id;
        let session = (!row.unjoined()).then(|| row.session_id.clone());
        self.out
            .push_back(Command::Store(Write::Agent(row.clone())));
        self.agents.insert(id, AgentState::new(row));
        self.publish(
            id,
            "session_created",
            json!({"agent_id": id, "session_id": session}),
        );
        id
    }
}
