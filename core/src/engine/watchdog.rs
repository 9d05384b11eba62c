//! The pane: screen readings, gaps the watchdog finds, and `send`.

use super::Core;
use crate::hook::matching::hash128;
use crate::io::Command;
use crate::model::AgentId;
use crate::pane::conversation_text;
use crate::task::state::TaskState;
use crate::time::Timestamp;
use serde_json::json;
use tracing::{debug, info, warn};

impl Core {
    /// A pane capture: new conversation output starts the gap clock unless a turn follows it
    /// in time. Only the conversation counts: a ticking spinner, typing in the input box or a
    /// changed status line is no output (`pane::conversation_text`).
    pub(super) fn on_pane(&mut self, pane: &str, text: &str) {
        let Some(&agent_id) = self.by_pane.get(pane) else {
            debug!("[TMUX_WATCHDOG] pane {pane} belongs to no agent; ignored");
            return;
        };
        let hash = screen_hash(text);
        let now = self.now;
        let agent = self.agent_mut(agent_id);
        let previous = agent.pane_hash.replace(hash);
        match previous {
            None => {} // the first look sets the baseline
            Some(old) if old == hash => {
                debug!("[TMUX_WATCHDOG] Agent {agent_id} pane content unchanged")
            }
            Some(_) if agent.pane_change_at.is_none() => {
                debug!("[TMUX_WATCHDOG] Agent {agent_id}: new output in pane {pane}; the gap clock starts");
                agent.pane_change_at = Some(now)
            }
            Some(_) => {}
        }
        let changed = previous != Some(hash);
        self.read_screen(agent_id, pane, text, changed);
        self.check_gaps();
    }

    /// What the screen says about the agent's activity. A permission dialog means waiting.
    /// Two idle readings in a row end a turn that hooks and transcript still call running,
    /// once their news is older than the trust window (a lost Stop, an interrupt).
    /// `changed`: the conversation on screen differs from the last capture's (an unknown
    /// screen is described in the log once per change, not on every capture).
    pub(super) fn read_screen(&mut self, agent_id: AgentId, pane: &str, text: &str, changed: bool) {
        let reading = self.agents[&agent_id].row.kind.read_screen(text);
        let now = self.now;
        let trust = self.config.trust_ms;
        let agent = self.agent_mut(agent_id);
        let dialog = match &reading.state {
            // With the tool its hook named (the pane shows only part of the input), when the
            // dialog shows that tool: a lost hook leaves an older tool behind.
            crate::pane::PaneState::Permission(q) => Some(crate::pane::tool::with_tool(
                q.clone(),
                agent
                    .asked_tool
                    .as_ref()
                    .or_else(|| agent.row.permission.as_ref()?.get("tool"))
                    .filter(|t| crate::pane::tool::shown_on(t, text)),
            )),
            _ => None,
        };
        // When the dialog began showing, kept while it shows (a changed tool or option text is
        // the same wait): the page orders waiting agents by it, and a reload or a second
        // device sees the same order.
        let dialog = dialog.map(|mut d| {
            let since = agent
                .row
                .permission
                .as_ref()
                .and_then(|p| p.get("since").cloned())
                .unwrap_or_else(|| json!(now));
            if let Some(o) = d.as_object_mut() {
                o.insert("since".into(), since);
            }
            d
        });
        let permission = dialog.is_some();
        if agent.row.permission != dialog {
            agent.row.permission = dialog;
            self.dirty_agents.insert(agent_id);
            self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
        }
        let agent = self.agent_mut(agent_id);
        let idle = reading.state == crate::pane::PaneState::Idle;
        // When the screen last began showing the idle prompt: a prompt submitted in the pane
        // since then is what a busy screen now shows.
        let idle_run_began = agent.pane_idle_since;
        agent.pane_idle_readings = if idle {
            agent.pane_idle_readings + 1
        } else {
            0
        };
        agent.pane_idle_since = if idle {
            agent.pane_idle_since.or(Some(now))
        } else {
            None
        };
        // News that arrived during the idle run (a line, a hook) says the screen's idle
        // prompt is older than it: the run counts from the latest of the two.
        let idle_since = agent
            .pane_idle_since
            .unwrap_or(now)
            .max(agent.last_signal_at);
        let (idle_readings, trusted, sent) = (
            agent.pane_idle_readings,
            now < agent.last_signal_at.add_millis(trust),
            agent.row.sent_at.is_some(),
        );
        let shown = agent.latest.map(|t| agent.tasks[&t].state);
        let latest_started = agent.latest.map(|t| agent.tasks[&t].started_at);
        if permission != agent.row.waiting_permission {
            self.set_flags(agent_id, None, Some(permission));
        }
        let running = matches!(shown, Some(TaskState::Commanded | TaskState::Processing));
        // Only a finished agent can have a prompt submitted in its pane: one that waits on
        // its own question goes on by itself once answered, and its answer line says so.
        let finished = matches!(shown, None | Some(TaskState::Idle | TaskState::Complete));
        let by_pane = sent && self.agents[&agent_id].sent_by_pane;
        if by_pane && (idle_readings >= 2 || permission) {
            debug!("[ACTIVITY] pane {pane} shows agent {agent_id} idle again or asking; the prompt submitted there no longer counts as running");
            let agent = self.agent_mut(agent_id);
            agent.row.sent_at = None;
            agent.sent_by_pane = false;
            self.dirty_agents.insert(agent_id);
            self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
        } else if idle_readings >= 2 && running && !trusted && !sent {
            debug!(
                "[ACTIVITY] pane {pane} shows the idle prompt while agent {agent_id} is {}; taking it as the end of the turn. Last lines: {}",
                shown.map_or("-", TaskState::as_str),
                crate::pane::tail(text, 4)
            );
            // Stamped when the screen first showed the idle prompt with no news since (not
            // now, which may be long after): a prompt typed since, whose line arrives later,
            // then reopens the turn instead of landing in a task shown complete (seed 6951).
            // Never before the last news, or a line already seen would keep the turn open for
            // ever (seed 4534); never before the running task began, so it is that task the
            // end closes.
            let stamp = latest_started.map_or(idle_since, |s| idle_since.max(s));
            self.hook_turn_end(agent_id, None, stamp);
        } else if reading.state == crate::pane::PaneState::Unknown && (running || sent) && changed {
            debug!(
                "[TMUX_WATCHDOG] pane {pane} shows a screen not recognised while agent {agent_id} is {}; last lines: {}",
                shown.map_or("-", TaskState::as_str),
                crate::pane::tail(text, 6)
            );
        } else if reading.state == crate::pane::PaneState::Busy && finished && !permission && !sent
        {
            debug!(
                "[ACTIVITY] pane {pane} shows agent {agent_id} busy while it is {}: a prompt submitted in the pane; running until its turn ends. Last lines: {}",
                shown.map_or("-", TaskState::as_str),
                crate::pane::tail(text, 4)
            );
            // Counted as a send typed in the pane: its prompt, written after the screen
            // last showed the idle prompt, answers it; the pane going idle again ends it.
            let agent = self.agent_mut(agent_id);
            agent.row.sent_at = Some(idle_run_began.unwrap_or(now));
            agent.sent_text = None;
            agent.sent_by_pane = true;
            self.dirty_agents.insert(agent_id);
            self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
        }
    }

    /// Text goes to the agent's pane: running until a prompt emitted from now on arrives.
    pub(super) fn on_sent(&mut self, agent_ref: &str, text: Option<&str>) {
        let Some(agent_id) = self.resolve_agent(agent_ref) else {
            return;
        };
        let now = self.now;
        let agent = self.agent_mut(agent_id);
        agent.row.sent_at = Some(now);
        agent.sent_text = text.map(crate::hook::matching::text_hash);
        agent.sent_by_pane = false;
        agent.pane_idle_readings = 0;
        agent.pane_idle_since = None;
        #[cfg(feature = "planted-bugs")]
        if text.is_some_and(|t| t.trim() == "/clear") {
            agent.fence_armed_at = Some(now);
        }
        self.dirty_agents.insert(agent_id);
        self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
    }

    /// A prompt arrived: it answers a pending `send` when it is the text sent, or, when that
    /// text is not known (after a restart), when it was emitted after the send. A late prompt
    /// of an earlier send (a `/clear`) never answers a later one.
    pub(super) fn prompt_seen(&mut self, agent_id: AgentId, stamp: Option<Timestamp>, text: &str) {
        let agent = self.agent_mut(agent_id);
        let Some(sent) = agent.row.sent_at else {
            return;
        };
        let answers = match agent.sent_text {
            Some(h) => h == crate::hook::matching::text_hash(text),
            None => stamp.is_some_and(|at| at >= sent),
        };
        if answers {
            agent.row.sent_at = None;
            agent.sent_text = None;
            agent.sent_by_pane = false;
            self.dirty_agents.insert(agent_id);
        }
    }

    /// A `send` whose prompt never showed stops counting as running.
    pub(super) fn expire_sends(&mut self) {
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
            agent.sent_by_pane = false;
            self.dirty_agents.insert(id);
        }
    }

    /// New pane output that no turn has followed within the threshold is a gap: the
    /// transcript is read at once instead of waiting for the watcher.
    pub(super) fn check_gaps(&mut self) {
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
}

/// What the watchdog remembers of a screen: the hash of its conversation text, so that two
/// captures differing only in spinner, input box or status lines hash alike.
pub(super) fn screen_hash(text: &str) -> u128 {
    hash128(conversation_text(text).as_bytes())
}
