//! tmux's pane list: tying sessions no hook placed to their panes, and the reaper.
//!
//! The rules are in [`crate::pane::discovery`]; here they meet the agents. A hook's pane always
//! wins (a tie made here is only for an agent with no pane), and an agent ended here comes
//! back as soon as a hook or a transcript line newer than its end says it lives.

use super::Core;
use crate::kind::AgentKind;
use crate::model::AgentId;
use crate::pane::discovery::{
    agent_processes, left_with_its_process, place, witness, EndReason, PaneListing, Placement,
    Unplaced, START_TOLERANCE_MS,
};
use crate::time::Timestamp;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use tracing::{debug, info};

/// What tmux's listings showed of panes and their processes.
#[derive(Debug, Default)]
pub(super) struct Listed {
    /// The panes the last listing showed: an agent that came to a pane after that listing
    /// still learns that its pane closed.
    pub(super) panes: BTreeSet<String>,
    /// Panes a listing showed and a later one did not: closed (tmux never reuses a pane id
    /// while its server runs; a pane listed again is taken out). An agent a late hook puts
    /// in one of them is ended at the next listing.
    pub(super) closed: BTreeSet<String>,
    /// The Claude Code processes the last listing showed, by pane.
    pub(super) claudes: BTreeMap<String, BTreeSet<u32>>,
    /// When a listing first showed a Claude Code process gone from a pane that is still
    /// open: a session whose every word came before that, found in the pane with no Claude
    /// Code process, ran in the one that left (a late hook created it after the exit was
    /// seen).
    pub(super) claude_left_at: BTreeMap<String, Timestamp>,
}

/// How many closed panes the core remembers.
const MAX_CLOSED_PANES: usize = 10_000;

impl Core {
    /// A listing of every tmux pane and its processes.
    pub(super) fn on_panes(&mut self, panes: &[PaneListing]) {
        let now_listed: BTreeSet<String> = panes.iter().map(|l| l.pane.clone()).collect();
        let gone: Vec<String> = self
            .listing
            .panes
            .difference(&now_listed)
            .cloned()
            .collect();
        if self.listing.closed.len() + gone.len() > MAX_CLOSED_PANES {
            self.listing.closed.clear(); // a bound; forgetting old panes only delays a reaping
        }
        self.listing.closed.extend(gone);
        for p in &now_listed {
            self.listing.closed.remove(p);
        }
        self.note_claude_exits(panes);
        self.place_sessions(panes);
        self.adopt_processes(panes);
        let live: Vec<(AgentId, String)> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.row.ended)
            .filter_map(|(id, a)| Some((*id, a.row.tmux_pane.clone()?)))
            .collect();
        for (id, pane) in live {
            let listed_before =
                self.listing.panes.contains(&pane) || self.listing.closed.contains(&pane);
            let agent = self.agent_mut(id);
            // A pane the last listing showed and this one does not has closed, whoever came
            // to it since (a new session after /clear, a resumed one).
            let mut before = agent.pane_witness.clone();
            before.listed |= listed_before;
            let (reason, seen) = witness(&pane, &before, panes);
            if seen.claude_pid.is_some() && seen.claude_pid != agent.row.claude_pid {
                agent.row.claude_pid = seen.claude_pid;
                self.dirty_agents.insert(id);
            }
            let left = self.listing.claude_left_at.get(&pane).copied();
            let agent = self.agent_mut(id);
            agent.pane_witness = seen;
            let reason = reason.or_else(|| {
                (before.claude_pid.is_none()
                    && left_with_its_process(&pane, agent.news_stamp, left, panes))
                .then_some(EndReason::ProcessExited)
            });
            if let Some(reason) = reason {
                self.reap(id, reason);
            }
        }
        self.listing.panes = now_listed;
    }

    /// Remembers, per open pane, when a listing first showed a Claude Code process gone
    /// from it, and the processes this listing shows.
    fn note_claude_exits(&mut self, panes: &[PaneListing]) {
        let now = self.now;
        let mut shown: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
        for listing in panes {
            let pids: BTreeSet<u32> = agent_processes(listing).map(|p| p.pid).collect();
            let before = self.listing.claudes.get(&listing.pane);
            if before.is_some_and(|b| b.iter().any(|pid| !pids.contains(pid))) {
                self.listing
                    .claude_left_at
                    .insert(listing.pane.clone(), now);
            }
            if !pids.is_empty() {
                shown.insert(listing.pane.clone(), pids);
            }
        }
        // Only open panes: a closed one is the closed-pane rule's.
        self.listing
            .claude_left_at
            .retain(|pane, _| panes.iter().any(|l| &l.pane == pane));
        self.listing.claudes = shown;
    }

    /// Ties each live agent without a pane to the pane of the one Claude Code process that
    /// fits it, when exactly one does.
    fn place_sessions(&mut self, panes: &[PaneListing]) {
        let unplaced: Vec<Unplaced> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.row.ended && a.row.tmux_pane.is_none())
            .filter_map(|(id, a)| {
                Some(Unplaced {
                    agent: *id,
                    cwd: a.row.cwd.clone()?,
                    first_line_at: a.first_line_at?,
                })
            })
            .collect();
        if unplaced.is_empty() {
            return;
        }
        // Panes of live agents, in memory or evicted, are taken; but not one whose agent a
        // process made and no session has joined yet: the session is that agent's.
        let taken: BTreeSet<String> = self
            .by_pane
            .iter()
            .filter(|(p, _)| self.held(p) && self.waiting_for_session(p).is_none())
            .map(|(p, _)| p.clone())
            .collect();
        let Placement { ties, ambiguous } = place(&unplaced, panes, &taken);
        for (id, candidates) in ambiguous {
            debug!("[DISCOVERY] agent {id}: panes {candidates:?} all fit its folder and start; none chosen");
        }
        for (id, pane) in ties {
            let holder = self
                .waiting_for_session(&pane)
                .filter(|_| !self.planted(crate::harness::planted::Bug::PaneAgentNotJoined));
            if let Some(holder) = holder {
                info!(
                    "[DISCOVERY] agent {id} (session {}) runs in pane {pane}, whose process made agent {holder}: merged into it",
                    self.agents[&id].row.session_id
                );
                self.merge_agent(id, holder);
                continue;
            }
            let agent = self.agent_mut(id);
            info!(
                "[DISCOVERY] agent {id} (session {}) runs in pane {pane}: the one Claude Code process there fits its folder {} and start",
                agent.row.session_id,
                agent.row.cwd.as_deref().unwrap_or("-")
            );
            agent.row.tmux_pane = Some(pane.clone());
            self.by_pane.insert(pane, id);
            self.dirty_agents.insert(id);
            self.publish(id, "card_refresh", json!({"agent_id": id}));
        }
    }

    /// Whether a live agent, in memory or evicted, holds `pane`.
    fn held(&self, pane: &str) -> bool {
        self.by_pane.get(pane).is_some_and(|id| {
            self.agents.get(id).map_or_else(
                || self.memory.evicted.get(id).is_some_and(|e| !e.row.ended),
                |a| !a.row.ended,
            )
        })
    }

    /// The live agent in memory that holds `pane` and that no session has joined yet (its
    /// process made it: [`Core::adopt_processes`]).
    pub(super) fn waiting_for_session(&self, pane: &str) -> Option<AgentId> {
        let id = *self.by_pane.get(pane)?;
        let a = self.agents.get(&id)?;
        (!a.row.ended && a.row.unjoined()).then_some(id)
    }

    /// An agent exists from its process: each pane whose one Claude Code process no live
    /// agent holds gets an agent now, before its first hook or transcript line (all lost,
    /// or not written yet), so `wait`, `send` and its card work at once. The session joins
    /// it when a hook names the pane (`agent_for_hook`) or its transcript is tied to the
    /// pane (`place_sessions`). Not for the process of an agent that just ended (its
    /// SessionEnd came before the listing that still shows it).
    fn adopt_processes(&mut self, panes: &[PaneListing]) {
        for listing in panes {
            let mut claudes = agent_processes(listing);
            let (Some(process), None) = (claudes.next(), claudes.next()) else {
                continue;
            };
            if self.held(&listing.pane) {
                continue;
            }
            let ended_with_it = self.by_pane.get(&listing.pane).and_then(|id| {
                let a = self.agents.get(id)?;
                let same_pid = a.row.claude_pid == Some(process.pid);
                let older = a
                    .ended_at
                    .is_some_and(|at| process.started_at <= at.add_millis(START_TOLERANCE_MS));
                (same_pid || (a.row.claude_pid.is_none() && older)).then_some(*id)
            });
            if let Some(id) = ended_with_it {
                debug!(
                    "[DISCOVERY] pane {}: its Claude Code process {} is ended agent {id}'s; no new agent",
                    listing.pane, process.pid
                );
                continue;
            }
            let cwd = process.cwd.clone().or_else(|| listing.current_path.clone());
            let kind = AgentKind::of_process(process).unwrap_or_default();
            self.create_pane_agent(kind, &listing.pane, process.pid, cwd);
        }
    }

    /// Ends agents no pane listing has shown that said nothing for the configured time.
    pub(super) fn reap_silent(&mut self) {
        let limit = self.config.reap_silent_after_ms;
        if limit <= 0 {
            return;
        }
        let now = self.now;
        let due: Vec<AgentId> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.row.ended && !a.pane_witness.listed)
            .filter(|(_, a)| now >= a.heard_at().add_millis(limit))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.reap(id, EndReason::Silent);
        }
    }

    /// The user stopped the agent through Headspace: it ends as `stopped` (also when its own
    /// SessionEnd came first, which says only that it exited).
    pub(super) fn on_stopped(&mut self, agent_ref: &str) {
        let Some(id) = self.resolve_agent(agent_ref) else {
            return;
        };
        let agent = self.agent_mut(id);
        if !agent.row.ended {
            self.reap(id, EndReason::Stopped);
            return;
        }
        if agent.row.end_reason.as_deref() != Some(EndReason::Stopped.as_str()) {
            agent.row.end_reason = Some(EndReason::Stopped.as_str().to_string());
            self.dirty_agents.insert(id);
            self.publish(id, "card_refresh", json!({"agent_id": id}));
        }
    }

    /// Ends an agent for `reason`, as its SessionEnd would.
    fn reap(&mut self, id: AgentId, reason: EndReason) {
        let now = self.now;
        let agent = self.agent_mut(id);
        info!(
            "[REAPER] agent {id} (session {}, pane {}) ended: {}",
            agent.row.session_id,
            agent.row.tmux_pane.as_deref().unwrap_or("-"),
            reason.as_str()
        );
        agent.row.end_reason = Some(reason.as_str().to_string());
        agent.row.sent_at = None;
        agent.sent_text = None;
        agent.sent_by_pane = false;
        agent.ended_at = Some(now);
        // Its end is the last news of it: after a restart, news stamped before it is old.
        agent.row.last_seen_at = agent.row.last_seen_at.max(now);
        let session = agent.row.session_id.clone();
        self.dirty_agents.insert(id);
        self.set_flags(id, Some(true), Some(false));
        self.publish(
            id,
            "session_ended",
            json!({"agent_id": id, "session_id": session, "reason": reason.as_str()}),
        );
    }

    /// News about an agent stamped `at` (a hook's emission, a transcript line's time): an
    /// agent the reaper ended lives again when the news is newer than its end.
    pub(super) fn revive_if_reaped(&mut self, id: AgentId, at: Timestamp) {
        let Some(agent) = self.agents.get_mut(&id) else {
            return;
        };
        let Some(ended) = agent.ended_at else {
            return;
        };
        // Only the reaper's end is undone by any news; a SessionEnd, or the user's stop, by
        // a new session start or prompt (the hooks' own rules).
        let stopped = agent.row.end_reason.as_deref() == Some(EndReason::Stopped.as_str());
        if !agent.row.ended || agent.row.end_reason.is_none() || stopped || at <= ended {
            return;
        }
        info!(
            "[REAPER] agent {id} (session {}) is back: news at {at} after its end",
            agent.row.session_id
        );
        agent.ended_at = None;
        agent.row.end_reason = None;
        agent.row.claude_pid = None;
        agent.pane_witness = Default::default();
        self.dirty_agents.insert(id);
        self.set_flags(id, Some(false), None);
    }

    /// False for news stamped no later than the agent's end (SessionEnd or the reaper): a
    /// late hook of its last turn does not bring it back.
    pub(super) fn news_after_reaping(&self, id: AgentId, at: Timestamp) -> bool {
        self.agents
            .get(&id)
            .and_then(|a| a.ended_at)
            .is_none_or(|ended| at > ended)
    }

    /// What a transcript line tells about its agent besides its turn: its folder, when no
    /// hook gave one, its git branch, and the time its session began; and a prompt written after the reaper
    /// ended the agent says it lives (a resumed session). Other lines written late may be the
    /// tail of its last turn.
    pub(super) fn learn_from_line(
        &mut self,
        id: AgentId,
        place: crate::transcript::entry::LinePlace,
        at: Option<Timestamp>,
        prompt: bool,
    ) {
        let Some(agent) = self.agents.get_mut(&id) else {
            return;
        };
        let first_read = agent.first_line_at.is_none();
        if let Some(at) = at {
            agent.news_stamp = agent.news_stamp.max(at);
            let first = agent.first_line_at.get_or_insert(at);
            *first = (*first).min(at);
        }
        // The line's place counts only when it can change something: the folder until one is
        // known, the branch at the first line and at each prompt (a branch switch shows there).
        if agent.row.cwd.is_none() || prompt || agent.row.git_branch.is_none() && first_read {
            if let (None, Some(cwd)) = (&agent.row.cwd, place.cwd) {
                debug!("[DISCOVERY] agent {id}: folder {cwd} from its transcript");
                agent.row.project = super::project_of(&cwd);
                agent.row.cwd = Some(cwd);
                self.dirty_agents.insert(id);
            }
            if place.git_branch.is_some() && place.git_branch != agent.row.git_branch {
                agent.row.git_branch = place.git_branch;
                self.dirty_agents.insert(id);
            }
        }
        if let (Some(at), true) = (at, prompt) {
            self.revive_if_reaped(id, at);
        }
    }
}
