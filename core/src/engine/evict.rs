//! Evicting agents from memory, and bringing them back.
//!
//! An agent that ended, or has been silent for long, costs memory for nothing: its match
//! index, seen entries and tasks. The core drops them and keeps only its row (ids, sessions,
//! pane) and a hash of its pane's last screen; the store keeps everything. When an input
//! concerns an evicted agent again (a resumed session's hook or transcript line, its pane
//! changing, a `send` or a reconcile), the core asks for its rows with
//! [`Command::LoadAgents`] and holds that input, and every input after it, until
//! [`Input::AgentsLoaded`] brings them back: inputs are still handled in order, each as if
//! the agent had never left and at the time it arrived, however late the store answered
//! (a prompt hook decided at the load's time was once filed as an answer to the task before).

use super::watchdog::screen_hash;
use super::{relative_transcript_path, session_of_path, AgentState, Core};
use crate::io::{Command, Input};
use crate::model::{AgentId, AgentRow, Snapshot};
use crate::pane::discovery::{witness, PaneWitness};
use crate::task::state::TaskState;
use crate::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use tracing::{debug, info, warn};

/// Agents out of memory, those asked back, and the inputs held for them.
#[derive(Debug, Default)]
pub(super) struct Memory {
    /// Agents evicted from memory.
    pub(super) evicted: BTreeMap<AgentId, Evicted>,
    /// Evicted agents asked back with `LoadAgents`.
    pub(super) loading: BTreeSet<AgentId>,
    /// The ids of every `LoadAgents` not answered yet, in the order asked: the shell answers
    /// them in that order, so each `AgentsLoaded` answers the first (an eviction's load and
    /// a forced reconcile's may be in flight together).
    pub(super) loads_asked: VecDeque<BTreeSet<AgentId>>,
    /// Inputs held until the agents they concern are back, in arrival order, each with the
    /// time it arrived: it is decided as of then, however late the load answers.
    pub(super) held: VecDeque<(Timestamp, Input)>,
    /// About how many bytes `held` holds ([`crate::store::outage::input_bytes`]).
    pub(super) held_bytes: u64,
}

/// What the core keeps of an agent it evicted (or a restart did not load).
#[derive(Debug)]
pub(super) struct Evicted {
    /// Its row as the core last wrote it.
    pub row: AgentRow,
    /// A hash of its pane's last screen: an unchanged screen does not bring it back.
    pub pane_hash: Option<u128>,
    /// What the reaper saw of its pane: a listing without the pane or its process brings it
    /// back to be ended.
    pub witness: PaneWitness,
    /// When it last said anything: past the reaper's silence limit, a tick brings it back
    /// to be ended.
    pub quiet_since: Timestamp,
}

/// What an input needs before it can be handled.
enum Needs {
    /// Nothing: handle it.
    Nothing,
    /// These evicted agents back in memory.
    Load(Vec<AgentId>),
    /// Nothing at all: it says nothing new about an evicted agent (its unchanged screen).
    Skip,
}

impl Core {
    /// Handles `input` now, or holds it until the evicted agents it concerns are back; true
    /// when it was handled now (a tick then lets idle agents leave).
    pub(super) fn handle_or_hold(&mut self, input: Input) -> bool {
        if let Input::AgentsLoaded(snapshot) = input {
            // A forced reconcile's rows first: they decide which lines lost their turns.
            self.start_rescans(&snapshot);
            self.on_agents_loaded(snapshot);
            self.flush();
            self.drain_held();
            return false;
        }
        if !self.memory.held.is_empty() {
            self.hold(self.now, input);
            return false;
        }
        match self.needs(&input) {
            Needs::Nothing => {
                self.dispatch(input);
                true
            }
            Needs::Skip => {
                self.forget_read(&input);
                false
            }
            Needs::Load(ids) => {
                self.ask_to_load(ids);
                self.hold(self.now, input);
                false
            }
        }
    }

    /// Handles held inputs in order until one needs agents that are not back yet, each at the
    /// time it arrived. Nothing was handled after the first of them arrived (every later
    /// input was held behind it), so their times only move forward, as live inputs' do; the
    /// latest time seen is the core's again afterwards.
    fn drain_held(&mut self) {
        let latest = self.now;
        while let Some((at, input)) = self.unhold() {
            match self.needs(&input) {
                Needs::Nothing => {
                    self.now = at;
                    let tick = matches!(input, Input::Tick);
                    self.dispatch(input);
                    self.flush();
                    // As a live tick: idle agents leave once it is handled, not before (an
                    // agent the held inputs make busy must not be evicted under them).
                    if tick {
                        self.evict_idle();
                    }
                }
                Needs::Skip => self.forget_read(&input),
                Needs::Load(ids) => {
                    self.ask_to_load(ids);
                    self.memory.held_bytes += crate::store::outage::input_bytes(&input);
                    self.memory.held.push_front((at, input));
                    break;
                }
            }
        }
        self.now = latest;
    }

    /// A skipped transcript input's read is done with (no reconcile waits on it).
    fn forget_read(&mut self, input: &Input) {
        if let Input::Transcript { read: Some(r), .. } = input {
            self.reading.reads.remove(r);
        }
    }

    fn ask_to_load(&mut self, ids: Vec<AgentId>) {
        let new: Vec<AgentId> = ids
            .into_iter()
            .filter(|id| self.memory.loading.insert(*id))
            .collect();
        if !new.is_empty() {
            debug!("[EVICT] loading agent(s) {new:?} back from the store");
            self.memory
                .loads_asked
                .push_back(new.iter().copied().collect());
            self.out.push_back(Command::LoadAgents { ids: new });
        }
    }

    /// The evicted agents an input concerns.
    fn needs(&self, input: &Input) -> Needs {
        if self.memory.evicted.is_empty() {
            return Needs::Nothing;
        }
        let mut ids = BTreeSet::new();
        match input {
            Input::Hook { agent, event, body } => {
                if let Ok((hook, _)) = agent.parse_hook(event.as_deref(), body) {
                    let transcript_session = hook
                        .transcript_path
                        .as_deref()
                        .and_then(|p| relative_transcript_path(&self.config, *agent, p))
                        .and_then(|rel| session_of_path(&rel));
                    for s in hook.session_id.iter().chain(transcript_session.iter()) {
                        ids.extend(self.by_session.get(s));
                    }
                    if let Some(p) = &hook.tmux_pane {
                        ids.extend(self.by_pane.get(p));
                    }
                }
            }
            // Nothing new of an evicted agent's file (a restart's read of a dormant agent's
            // transcript at its offset): no news, no load.
            Input::Transcript {
                path, data, read, ..
            } if data.is_empty()
                && read.is_none_or(|r| self.reading.reads.get(&r).is_some_and(Option::is_none))
                && self
                    .files
                    .get(path)
                    .is_some_and(|f| self.memory.evicted.contains_key(&f.agent_id)) =>
            {
                return Needs::Skip;
            }
            Input::Transcript { path, .. } | Input::TranscriptReset { path } => {
                match self.files.get(path) {
                    Some(f) => {
                        ids.insert(f.agent_id);
                    }
                    None => {
                        if let Some(s) = session_of_path(path) {
                            ids.extend(self.by_session.get(&s));
                        }
                    }
                }
            }
            Input::Pane { pane, text } => {
                if let Some(id) = self.by_pane.get(pane) {
                    if let Some(e) = self.memory.evicted.get(id) {
                        if e.pane_hash == Some(screen_hash(text)) {
                            return Needs::Skip;
                        }
                    }
                    ids.insert(*id);
                }
            }
            Input::Panes(panes) => {
                for (id, e) in &self.memory.evicted {
                    let Some(pane) = e.row.tmux_pane.as_deref().filter(|_| !e.row.ended) else {
                        continue;
                    };
                    if witness(pane, &e.witness, panes).0.is_some() {
                        ids.insert(*id);
                    }
                }
            }
            Input::Sent { agent, .. }
            | Input::Reconcile { agent, .. }
            | Input::Stopped { agent } => {
                ids.extend(self.resolve_agent(agent));
            }
            Input::Tick => {
                let limit = self.config.reap_silent_after_ms;
                for (id, e) in &self.memory.evicted {
                    let silent = limit > 0
                        && !e.row.ended
                        && !e.witness.listed
                        && self.now >= e.quiet_since.add_millis(limit);
                    if silent {
                        ids.insert(*id);
                    }
                }
            }
            Input::Restore(_) | Input::AgentsLoaded(_) => {}
        }
        let load: Vec<AgentId> = ids
            .into_iter()
            .filter(|id| self.memory.evicted.contains_key(id))
            .collect();
        if load.is_empty() {
            Needs::Nothing
        } else {
            Needs::Load(load)
        }
    }

    /// Brings evicted agents back from their stored rows.
    fn on_agents_loaded(&mut self, snapshot: Snapshot) {
        let mut back = Vec::new();
        let mut screens = Vec::new();
        for stored in snapshot.agents {
            let Some(e) = self.memory.evicted.remove(&stored.id) else {
                continue;
            };
            self.memory.loading.remove(&stored.id);
            // The core's own row is the latest: every write of it was committed before the
            // load, so the two agree; the core's is kept in case the store lags.
            screens.push((stored.id, e.pane_hash, e.witness));
            back.push(e.row);
        }
        // An agent this load asked for that the store did not return comes back from its row
        // alone, rather than holding every input for ever. Only this load's: another load
        // still in flight (a forced reconcile's) answers for its own agents (seed 505).
        let asked = self.memory.loads_asked.pop_front().unwrap_or_default();
        let missing: Vec<AgentId> = self
            .memory
            .loading
            .iter()
            .copied()
            .filter(|id| asked.contains(id) && self.memory.evicted.contains_key(id))
            .collect();
        for id in missing {
            warn!("[EVICT] the store returned no rows for agent {id}; it comes back without its history");
            self.memory.loading.remove(&id);
            if let Some(e) = self.memory.evicted.remove(&id) {
                screens.push((id, e.pane_hash, e.witness));
                back.push(e.row);
            }
        }
        // A pane another agent took while these were away stays that agent's.
        let owners: Vec<(String, AgentId)> = back
            .iter()
            .filter_map(|r| r.tmux_pane.as_ref())
            .filter_map(|p| Some((p.clone(), *self.by_pane.get(p)?)))
            .collect();
        let ids: BTreeSet<AgentId> = back.iter().map(|r| r.id).collect();
        let tasks = snapshot
            .tasks
            .into_iter()
            .filter(|t| ids.contains(&t.agent_id))
            .collect();
        let turns = snapshot
            .turns
            .into_iter()
            .filter(|t| ids.contains(&t.agent_id))
            .collect();
        let now = self.now;

        self.hydrate(back, tasks, turns);
        for (pane, owner) in owners {
            self.by_pane.insert(pane, owner);
        }
        for (id, screen, seen) in screens {
            if let Some(a) = self.agents.get_mut(&id) {
                a.back_at = now;
                // The screen it left with is the baseline a change is measured against.
                a.pane_hash = screen;
                a.pane_witness = seen;
            }
        }
        info!("[EVICT] agent(s) {ids:?} back in memory");
    }

    /// When an agent may be evicted: it ended, or said nothing for `Config::evict_after_ms`,
    /// and nothing about it is in flight.
    pub(super) fn evictable_at(&self, a: &AgentState) -> Option<Timestamp> {
        // Shown running: only the pane can still end its turn (a lost Stop), by idle readings
        // of a screen that no longer changes, and an unchanged screen never brings an evicted
        // agent back; so it stays until its turn ends (seed 300693).
        let running = !a.row.ended
            && a.latest.is_some_and(|t| {
                matches!(
                    a.tasks[&t].state,
                    TaskState::Commanded | TaskState::Processing
                )
            });
        // An agent its process made waits in memory for its session: the merge that joins
        // them happens here, and a process that lives says nothing until then.
        let unjoined = !a.row.ended && a.row.unjoined();
        let busy = running
            || unjoined
            || a.reconciling.is_some()
            || a.pane_change_at.is_some()
            || a.row.sent_at.is_some();
        if busy || self.config.evict_after_ms <= 0 {
            return None;
        }
        let quiet_since = a.heard_at().max(a.back_at);
        let after = if a.row.ended {
            self.config.evict_after_ms.min(ENDED_GRACE_MS)
        } else {
            self.config.evict_after_ms
        };
        Some(quiet_since.add_millis(after))
    }

    /// Evicts every agent whose time has come.
    pub(super) fn evict_idle(&mut self) {
        let now = self.now;
        let due: Vec<AgentId> = self
            .agents
            .iter()
            .filter(|(_, a)| self.evictable_at(a).is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if let Some(a) = self.agents.remove(&id) {
                let quiet_since = a.heard_at();
                debug!(
                    "[EVICT] agent {id} ({}) leaves memory; the store keeps it",
                    if a.row.ended { "ended" } else { "silent" }
                );
                self.memory.evicted.insert(
                    id,
                    Evicted {
                        row: a.row,
                        pane_hash: a.pane_hash,
                        witness: a.pane_witness,
                        quiet_since,
                    },
                );
            }
        }
    }

    /// Agents in memory, and agents evicted from it.
    pub fn memory_counts(&self) -> (usize, usize) {
        (self.agents.len(), self.memory.evicted.len())
    }

    /// The inputs held for agents not back yet: how many, and about how many bytes
    /// ([`crate::store::outage::input_bytes`]).
    pub fn held_size(&self) -> (u64, u64) {
        (self.memory.held.len() as u64, self.memory.held_bytes)
    }

    /// Holds `input`, arrived at `at`, at the back of the queue.
    fn hold(&mut self, at: Timestamp, input: Input) {
        self.memory.held_bytes += crate::store::outage::input_bytes(&input);
        self.memory.held.push_back((at, input));
    }

    /// Takes the first held input.
    fn unhold(&mut self) -> Option<(Timestamp, Input)> {
        let (at, input) = self.memory.held.pop_front()?;
        self.memory.held_bytes = self
            .memory
            .held_bytes
            .saturating_sub(crate::store::outage::input_bytes(&input));
        Some((at, input))
    }
}

/// How long an ended agent stays in memory once silent (its last events are published).
pub const ENDED_GRACE_MS: i64 = 60_000;
