//! Tasks: opening, re-timing, and the state shown (transcript plus unconfirmed hook news).

use super::{Core, Preview};
use crate::io::{Command, Write};
use crate::model::{AgentId, TaskId, TaskRow, TurnId};
use crate::task::intent::Actor;
use crate::task::state::{on_turn_end, transition, Outcome, TaskState};
use crate::time::Timestamp;
use crate::view::activity::agent_activity;
use serde_json::json;
use std::collections::BTreeSet;
use tracing::debug;

impl Core {
    pub(super) fn create_task(
        &mut self,
        agent_id: AgentId,
        session: Option<String>,
        started_at: Timestamp,
    ) -> TaskId {
        let id = self.ids.task;
        self.ids.task += 1;
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
    pub(super) fn retime_task(
        &mut self,
        agent_id: AgentId,
        task_id: TaskId,
        from: Timestamp,
        to: Timestamp,
    ) {
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

    /// A claim moved a turn from task `from` to task `to`. A task left with no turns was only
    /// a hook's guess (a question or a reply whose prompt the transcript shows elsewhere): it
    /// is retired to the start of time, so it can never be the agent's current task, in the
    /// core or in the store (found by the simulation: an emptied task showed the agent idle).
    pub(super) fn move_turn(&mut self, agent_id: AgentId, turn: TurnId, from: TaskId, to: TaskId) {
        let agent = self.agent_mut(agent_id);
        if let Some(tool) = agent.questions.get_mut(&from).and_then(|q| q.remove(&turn)) {
            agent.questions.entry(to).or_default().insert(turn, tool);
        }
        *agent.task_turns.entry(to).or_default() += 1;
        let left = agent.task_turns.entry(from).or_default();
        *left = left.saturating_sub(1);
        if *left == 0 {
            let start = agent.tasks[&from].started_at;
            debug!("[LIFECYCLE] task {from} lost its last turn to task {to}; retired");
            self.retime_task(agent_id, from, start, Timestamp(0));
        }
    }

    /// The state shown for a task: complete once a later task started; otherwise the
    /// transcript's state with the hooks' unconfirmed news (provisional turns, a turn end)
    /// applied on top in stamp order.
    pub(super) fn recompute(&mut self, agent_id: AgentId, task_id: TaskId) {
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
            let task = self.task_mut(agent_id, task_id);
            task.state = shown;
            task.state_since = now;
            self.dirty_tasks.entry((agent_id, task_id)).or_insert(old);
        }
    }

    /// The planted single-transaction bug: an agent turn for a task already shown complete
    /// fails its state change, and the turn is rolled back with it.
    pub(super) fn rolled_back(&self, agent_id: AgentId, task_id: TaskId, actor: Actor) -> bool {
        self.planted(crate::harness::planted::Bug::SingleTransactionRollback)
            && actor == Actor::Agent
            && self.agents[&agent_id].tasks[&task_id].state == TaskState::Complete
    }

    pub(super) fn mark_task(&mut self, agent_id: AgentId, task_id: TaskId) {
        let state = self.agents[&agent_id].tasks[&task_id].state;
        self.dirty_tasks.entry((agent_id, task_id)).or_insert(state);
    }

    /// Writes changed tasks and agents, then tells the dashboard. Turns were written before,
    /// so a state change never decides whether a turn is kept.
    pub(super) fn flush(&mut self) {
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
            let state = crate::view::activity::agent_state(current);
            self.publish(
                agent_id,
                "card_refresh",
                json!({"agent_id": agent_id, "state": state.as_str(), "activity": activity.as_str()}),
            );
        }
    }
}
