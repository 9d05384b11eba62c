//! Rebuilding the core from the store after a restart.

use super::evict::Evicted;
use super::{uuid_key, AgentState, Core};
use crate::hook::matching::{hash128, Key, Slot};
use crate::io::Command;
use crate::model::{
    AgentId, AgentRow, DormantAgent, Snapshot, TaskId, TaskRow, TurnRow, TurnSource,
};
use crate::pane::discovery::PaneWitness;
use std::collections::BTreeSet;
use tracing::info;

impl Core {
    /// Rebuilds everything from the store, then asks to read every file from its offset.
    pub(super) fn restore(&mut self, snap: Snapshot) {
        let config = self.config.clone();
        let now = self.now;
        *self = Core::new(config);
        self.now = now;
        self.hydrate(snap.agents, snap.tasks, snap.turns);
        let dormant = snap.dormant.len();
        self.know_dormant(snap.dormant);
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
            "[RESTORE] rebuilt {} agent(s) from the store; {dormant} more load when news of them comes",
            self.agents.len()
        );
    }

    /// Knows agents a restart did not load as evicted ones: their rows answer for their
    /// sessions and panes, and any news of them loads the rest. Ids they used are never given
    /// again.
    fn know_dormant(&mut self, dormant: Vec<DormantAgent>) {
        for d in dormant {
            let row = d.row;
            if self.own_id(row.id) {
                self.ids.agent = self.ids.agent.max(row.id + 1);
            }
            if let Some(t) = d.max_task.filter(|t| self.own_id(*t)) {
                self.ids.task = self.ids.task.max(t + 1);
            }
            if let Some(t) = d.max_turn.filter(|t| self.own_id(*t)) {
                self.ids.turn = self.ids.turn.max(t + 1);
            }
            // An agent no session has joined yet (its process made it) has none to map.
            for s in row.sessions.iter().chain([&row.session_id]) {
                if !s.is_empty() {
                    self.by_session.entry(s.clone()).or_insert(row.id);
                }
            }
            // A pane a live agent holds stays that agent's.
            if let Some(p) = &row.tmux_pane {
                self.by_pane.entry(p.clone()).or_insert(row.id);
            }
            let quiet_since = row.last_seen_at;
            self.memory.evicted.insert(
                row.id,
                Evicted {
                    row,
                    pane_hash: None,
                    witness: PaneWitness::default(),
                    quiet_since,
                },
            );
        }
    }

    /// Puts agents in memory from their stored rows, tasks and turns: after a restart (all
    /// of them) or when evicted agents come back (some).
    pub(super) fn hydrate(
        &mut self,
        agents: Vec<AgentRow>,
        tasks: Vec<TaskRow>,
        turns: Vec<TurnRow>,
    ) {
        let ids: BTreeSet<AgentId> = agents.iter().map(|r| r.id).collect();
        for row in agents {
            if self.own_id(row.id) {
                self.ids.agent = self.ids.agent.max(row.id + 1);
            }
            for s in row.sessions.iter().chain([&row.session_id]) {
                if !s.is_empty() {
                    self.by_session.insert(s.clone(), row.id);
                }
            }
            if let Some(p) = &row.tmux_pane {
                self.by_pane.insert(p.clone(), row.id);
            }
            let last_seen = row.last_seen_at;
            let mut agent = AgentState::new(row);
            agent.news_stamp = last_seen;
            self.agents.insert(agent.row.id, agent);
        }
        for row in tasks {
            if self.own_id(row.id) {
                self.ids.task = self.ids.task.max(row.id + 1);
            }
            if let Some(agent) = self.agents.get_mut(&row.agent_id) {
                agent.task_order.insert((row.started_at, row.id));
                agent.tasks.insert(row.id, row);
            }
        }
        let mut turns = turns;
        turns.sort_by_key(|t| t.id);
        for turn in &turns {
            if self.own_id(turn.id) {
                self.ids.turn = self.ids.turn.max(turn.id + 1);
            }
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
            agent.note_turn(turn);
            if turn.source == TurnSource::Transcript {
                agent.recovered += 1;
            }
            let Some(key) = Key::of(turn) else { continue };
            let slot = Slot::of(turn, key);
            match (turn.source, &turn.entry_uuid, &turn.hook_key) {
                (TurnSource::Hook, None, _) => agent.index.add_provisional(slot),
                (TurnSource::Transcript, _, None) => agent.index.add_unhooked(slot),
                _ => {}
            }
        }
        for id in ids {
            if let Some(agent) = self.agents.get_mut(&id) {
                agent.latest = agent.task_order.last().map(|(_, t)| *t);
            }
        }
    }

    pub(super) fn task_mut(&mut self, agent_id: AgentId, task_id: TaskId) -> &mut TaskRow {
        self.agent_mut(agent_id)
            .tasks
            .get_mut(&task_id)
            .expect("a task of the agent")
    }

    pub(super) fn agent_mut(&mut self, id: AgentId) -> &mut AgentState {
        self.agents.get_mut(&id).expect("known agent")
    }
}
