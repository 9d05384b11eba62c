//! The in-memory store: a projection that applies the core's writes, and the source of the
//! snapshot that rebuilds the core after a restart. Postgres must behave exactly like it.

pub mod outage;

use crate::io::Write;
use crate::model::{
    AgentId, AgentRow, OffsetRow, Snapshot, TaskId, TaskRow, TimestampSource, TurnId, TurnRow,
};
use crate::usage::step::StepRow;
use crate::usage::sum::UsageRow;
use crate::view::activity::{agent_activity, agent_state, current_task};
use crate::view::{resolve_reference, AgentView};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Agents, tasks, turns and offsets in ordered maps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemStore {
    agents: BTreeMap<AgentId, AgentRow>,
    tasks: BTreeMap<TaskId, TaskRow>,
    turns: BTreeMap<TurnId, TurnRow>,
    entries: BTreeSet<(AgentId, String)>,
    offsets: BTreeMap<String, OffsetRow>,
    steps: BTreeMap<(AgentId, String), StepRow>,
    usage: BTreeMap<(AgentId, String), UsageRow>,
    /// Names the user gave agents (kept beside the rows: the core never writes them).
    names: BTreeMap<AgentId, String>,
    violations: Vec<String>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> MemStore {
        MemStore::default()
    }

    /// Applies one write. Every write is idempotent: applying it twice changes nothing more.
    pub fn apply(&mut self, write: &Write) {
        match write {
            Write::Agent(a) => {
                self.agents.insert(a.id, a.clone());
            }
            Write::Task(t) => {
                self.tasks.insert(t.id, t.clone());
            }
            Write::Turn(t) => {
                if self.turns.contains_key(&t.id) {
                    return;
                }
                if let Some(u) = &t.entry_uuid {
                    // One turn per transcript entry, enforced like a unique index.
                    if !self.entries.insert((t.agent_id, u.clone())) {
                        self.violations
                            .push(format!("turn {} repeats entry {u}", t.id));
                        return;
                    }
                }
                self.turns.insert(t.id, t.clone());
            }
            Write::Claim {
                turn_id,
                entry_uuid,
                timestamp,
                task_id,
            } => {
                let Some(t) = self.turns.get_mut(turn_id) else {
                    return;
                };
                if t.entry_uuid.is_some() {
                    return;
                }
                if !self.entries.insert((t.agent_id, entry_uuid.clone())) {
                    return;
                }
                t.entry_uuid = Some(entry_uuid.clone());
                t.task_id = *task_id;
                if let Some(ts) = timestamp {
                    t.timestamp = *ts;
                    t.timestamp_source = TimestampSource::Jsonl;
                }
            }
            Write::HookMatched { turn_id, hook_key } => {
                if let Some(t) = self.turns.get_mut(turn_id) {
                    t.hook_key.get_or_insert_with(|| hook_key.clone());
                }
            }
            Write::Rewound {
                agent_id,
                entry_uuid,
                at,
            } => {
                let Some(from) = self
                    .turns
                    .values()
                    .find(|t| {
                        t.agent_id == *agent_id && t.entry_uuid.as_deref() == Some(entry_uuid)
                    })
                    .map(|t| (t.session_id.clone(), (t.timestamp, t.id)))
                else {
                    return;
                };
                for t in self.turns.values_mut() {
                    if t.agent_id == *agent_id
                        && t.session_id == from.0
                        && (t.timestamp, t.id) >= from.1
                    {
                        t.rewound_at.get_or_insert(*at);
                    }
                }
            }
            Write::Offset(o) => {
                self.offsets.insert(o.path.clone(), o.clone());
            }
            Write::Step(step) => self.fold_step(step.clone()),
            Write::StepsInterrupted { agent_id, at } => {
                for s in self.steps.values_mut().filter(|s| s.agent_id == *agent_id) {
                    *s = crate::usage::step::interrupted(s, *at);
                }
            }
            Write::Usage(u) => self.fold_usage(u.clone()),
            Write::MergeAgent { from, into } => {
                let steps: Vec<StepRow> = self
                    .steps
                    .values()
                    .filter(|s| s.agent_id == *from)
                    .cloned()
                    .collect();
                for mut s in steps {
                    self.steps.remove(&(*from, s.tool_use_id.clone()));
                    s.agent_id = *into;
                    self.fold_step(s);
                }
                let usage: Vec<UsageRow> = self
                    .usage
                    .values()
                    .filter(|u| u.agent_id == *from)
                    .cloned()
                    .collect();
                for mut u in usage {
                    self.usage.remove(&(*from, u.message_id.clone()));
                    u.agent_id = *into;
                    self.fold_usage(u);
                }
                for t in self.tasks.values_mut().filter(|t| t.agent_id == *from) {
                    t.agent_id = *into;
                }
                for t in self.turns.values_mut().filter(|t| t.agent_id == *from) {
                    t.agent_id = *into;
                }
                let moved: Vec<(AgentId, String)> = self
                    .entries
                    .iter()
                    .filter(|(a, _)| a == from)
                    .cloned()
                    .collect();
                for (a, u) in moved {
                    self.entries.remove(&(a, u.clone()));
                    self.entries.insert((*into, u));
                }
                self.agents.remove(from);
            }
        }
    }

    fn fold_step(&mut self, step: StepRow) {
        let key = (step.agent_id, step.tool_use_id.clone());
        let row = match self.steps.get(&key) {
            Some(old) => crate::usage::step::merge(old, &step),
            None => step,
        };
        self.steps.insert(key, row);
    }

    fn fold_usage(&mut self, usage: UsageRow) {
        let key = (usage.agent_id, usage.message_id.clone());
        let row = match self.usage.get(&key) {
            Some(old) => crate::usage::sum::merge(old, &usage),
            None => usage,
        };
        self.usage.insert(key, row);
    }

    /// All steps, by agent and tool-use id.
    pub fn steps(&self) -> impl Iterator<Item = &StepRow> {
        self.steps.values()
    }

    /// All usage rows, by agent and message id.
    pub fn usage(&self) -> impl Iterator<Item = &UsageRow> {
        self.usage.values()
    }

    /// An agent's steps started in `[from, until)` (steps without a start only when both
    /// ends are open), by start: what every store's step read answers.
    pub fn steps_of(
        &self,
        agent_id: AgentId,
        from: Option<crate::Timestamp>,
        until: Option<crate::Timestamp>,
    ) -> Vec<StepRow> {
        let mut out: Vec<StepRow> = self
            .steps
            .values()
            .filter(|s| s.agent_id == agent_id)
            .filter(|s| match s.started_at {
                _ if from.is_none() && until.is_none() => true,
                Some(at) => from.is_none_or(|f| at >= f) && until.is_none_or(|u| at < u),
                None => false,
            })
            .cloned()
            .collect();
        out.sort_by(|a, b| (a.started_at, &a.tool_use_id).cmp(&(b.started_at, &b.tool_use_id)));
        out
    }

    /// An agent's usage rows written in `[from, until)` (either end open when `None`), by
    /// time then message id.
    pub fn usage_of(
        &self,
        agent_id: AgentId,
        from: Option<crate::Timestamp>,
        until: Option<crate::Timestamp>,
    ) -> Vec<UsageRow> {
        let mut out: Vec<UsageRow> = self
            .usage
            .values()
            .filter(|u| u.agent_id == agent_id)
            .filter(|u| from.is_none_or(|f| u.at >= f) && until.is_none_or(|t| u.at < t))
            .cloned()
            .collect();
        out.sort_by(|a, b| (a.at, &a.message_id).cmp(&(b.at, &b.message_id)));
        out
    }

    /// Each agent's current step ([`crate::usage::step::current_step`] since its current task's
    /// start), by agent.
    pub fn current_steps(&self) -> BTreeMap<AgentId, StepRow> {
        self.agents
            .keys()
            .filter_map(|&id| {
                let since = current_task(self.tasks.values().filter(|t| t.agent_id == id))
                    .map(|t| t.started_at);
                let step = crate::usage::step::current_step(
                    self.steps.values().filter(|s| s.agent_id == id),
                    since,
                )?;
                Some((id, step.clone()))
            })
            .collect()
    }

    /// Usage summed by group and model ([`crate::usage::sum::sum_by_model`]), of one agent
    /// or of all.
    pub fn usage_by(
        &self,
        by: crate::usage::sum::UsageBy,
        agent_id: Option<AgentId>,
    ) -> Vec<crate::usage::sum::ModelUsage> {
        crate::usage::sum::sum_by_model(
            self.usage
                .values()
                .filter(|u| agent_id.is_none_or(|a| u.agent_id == a)),
            by,
            |a| self.agents.get(&a).and_then(|r| r.project.clone()),
        )
    }

    /// Writes the store refused because they would break one-turn-per-entry (S1). The
    /// store stays correct either way; a non-empty list means the core has a bug.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// Everything held, for [`crate::Input::Restore`].
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            agents: self.agents.values().cloned().collect(),
            tasks: self.tasks.values().cloned().collect(),
            turns: self.turns.values().cloned().collect(),
            offsets: self.offsets.values().cloned().collect(),
            dormant: Vec::new(),
        }
    }

    /// What a restart loads ([`crate::model::live_since`]): the live agents whole, the others
    /// as dormant rows, every offset.
    pub fn restore_snapshot(&self, live_since: Option<crate::Timestamp>) -> Snapshot {
        self.snapshot().split_dormant(live_since)
    }

    /// The rows of some agents, for [`crate::Input::AgentsLoaded`]: their agent rows, tasks
    /// and turns, no offsets.
    pub fn load_agents(&self, ids: &[AgentId]) -> Snapshot {
        let ids: BTreeSet<AgentId> = ids.iter().copied().collect();
        Snapshot {
            agents: ids
                .iter()
                .filter_map(|id| self.agents.get(id).cloned())
                .collect(),
            tasks: self
                .tasks
                .values()
                .filter(|t| ids.contains(&t.agent_id))
                .cloned()
                .collect(),
            turns: self
                .turns
                .values()
                .filter(|t| ids.contains(&t.agent_id))
                .cloned()
                .collect(),
            offsets: Vec::new(),
            dormant: Vec::new(),
        }
    }

    /// One turn by id.
    pub fn turn(&self, id: TurnId) -> Option<&TurnRow> {
        self.turns.get(&id)
    }

    /// All turns, by id.
    pub fn turns(&self) -> impl Iterator<Item = &TurnRow> {
        self.turns.values()
    }

    /// All tasks, by id.
    pub fn tasks(&self) -> impl Iterator<Item = &TaskRow> {
        self.tasks.values()
    }

    /// All agents, by id.
    pub fn agents(&self) -> impl Iterator<Item = &AgentRow> {
        self.agents.values()
    }

    /// One agent with what its card shows, as every store returns it.
    pub fn agent_view(&self, id: AgentId) -> Option<AgentView> {
        let agent = self.agents.get(&id)?;
        let mut view = AgentView::from_rows(agent, self.tasks.values(), self.turns.values());
        view.name = self.names.get(&id).cloned();
        Some(view)
    }

    /// Gives agent `id` a name (`None` clears it); false when there is no such agent.
    pub fn rename(&mut self, id: AgentId, name: Option<String>) -> bool {
        if !self.agents.contains_key(&id) {
            return false;
        }
        match name {
            Some(n) => self.names.insert(id, n),
            None => self.names.remove(&id),
        };
        true
    }

    /// The agent a reference (id, session id or pane) names, by the one rule every store
    /// keeps ([`resolve_reference`]).
    pub fn resolve(&self, reference: &str) -> Option<AgentId> {
        resolve_reference(self.agents.values(), reference)
    }

    /// The stored offset of a file.
    pub fn offset(&self, path: &str) -> Option<u64> {
        self.offsets.get(path).map(|o| o.offset)
    }

    /// The final state as `headspace replay` prints it: agents and tasks by id, turns by
    /// (agent_id, timestamp, id).
    pub fn replay_output(&self) -> ReplayOutput {
        let agents = self
            .agents
            .values()
            .map(|a| {
                let current = current_task(self.tasks.values().filter(|t| t.agent_id == a.id));
                ReplayAgent {
                    id: a.id,
                    session_id: a.session_id.clone(),
                    tmux_pane: a.tmux_pane.clone(),
                    state: agent_state(current).as_str(),
                    activity: agent_activity(a, current).as_str(),
                }
            })
            .collect();
        let tasks = self
            .tasks
            .values()
            .map(|t| ReplayTask {
                id: t.id,
                agent_id: t.agent_id,
                state: t.state.as_str(),
            })
            .collect();
        let mut turns: Vec<&TurnRow> = self.turns.values().collect();
        turns.sort_by_key(|t| (t.agent_id, t.timestamp, t.id));
        let turns = turns
            .into_iter()
            .map(|t| ReplayTurn {
                id: t.id,
                agent_id: t.agent_id,
                task_id: t.task_id,
                actor: t.actor,
                intent: t.intent,
                text: t.text.clone(),
                timestamp: t.timestamp,
                timestamp_source: t.timestamp_source,
                entry_uuid: t.entry_uuid.clone(),
            })
            .collect();
        ReplayOutput {
            agents,
            tasks,
            turns,
        }
    }
}

/// `headspace replay`'s output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayOutput {
    /// Agents by id.
    pub agents: Vec<ReplayAgent>,
    /// Tasks by id.
    pub tasks: Vec<ReplayTask>,
    /// Turns by (agent_id, timestamp, id).
    pub turns: Vec<ReplayTurn>,
}

/// An agent in the replay output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayAgent {
    /// Id.
    pub id: AgentId,
    /// Current Claude session.
    pub session_id: String,
    /// Pane.
    pub tmux_pane: Option<String>,
    /// Current task's state.
    pub state: &'static str,
    /// Activity.
    pub activity: &'static str,
}

/// A task in the replay output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayTask {
    /// Id.
    pub id: TaskId,
    /// Agent.
    pub agent_id: AgentId,
    /// State.
    pub state: &'static str,
}

/// A turn in the replay output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayTurn {
    /// Id.
    pub id: TurnId,
    /// Agent.
    pub agent_id: AgentId,
    /// Task.
    pub task_id: TaskId,
    /// `user` or `agent`.
    pub actor: crate::Actor,
    /// Intent.
    pub intent: crate::Intent,
    /// Text.
    pub text: String,
    /// Timestamp.
    pub timestamp: crate::Timestamp,
    /// `server`, `jsonl` or `user`.
    pub timestamp_source: TimestampSource,
    /// The claiming transcript line's uuid.
    pub entry_uuid: Option<String>,
}
