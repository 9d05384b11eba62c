//! Hooks: which agent and task a hook belongs to, and the turns it announces.

use super::{relative_transcript_path, session_of_path, Core};
use crate::hook::matching::{hash128, Bounds, Key, Kind, Slot};
use crate::hook::{Hook, HookEvent};
use crate::io::{Command, Write};
use crate::kind::AgentKind;
use crate::model::{AgentId, TaskId, TimestampSource, TurnRow, TurnSource};
use crate::task::intent;
use crate::task::intent::{Actor, Intent};
use crate::task::state::{self, preserved_warning, transition, Outcome, TaskState};
use crate::time::Timestamp;
use crate::transcript::entry;
use serde_json::json;
use tracing::{debug, warn};

impl Core {
    pub(super) fn on_hook(&mut self, kind: AgentKind, event: Option<&str>, body: &[u8]) {
        let hook = match kind.parse_hook(event, body) {
            Ok((h, mended)) => {
                if mended.any() {
                    warn!(
                        "[HOOK_RECEIVER] {} hook of session {}: {mended} (PostgreSQL and JSON parsers refuse them); its turn is kept",
                        h.event.name(),
                        h.session_id.as_deref().unwrap_or("-")
                    );
                }
                h
            }
            Err(e) => {
                warn!("[HOOK_RECEIVER] rejected hook: {e}");
                return;
            }
        };
        // The emission stamp orders hooks; a stamp from the future is taken as now.
        let stamp = hook.emitted_at.map_or(self.now, |t| t.min(self.now));
        debug!(
            "[HOOK_RECEIVER] {} hook arrived: session {}, pane {}, emitted {stamp}",
            hook.event.name(),
            hook.session_id.as_deref().unwrap_or("-"),
            hook.tmux_pane.as_deref().unwrap_or("-")
        );
        let Some(agent_id) = self.agent_for_hook(kind, &hook) else {
            debug!(
                "[HOOK_RECEIVER] {} hook names no session or pane; ignored",
                hook.event.name()
            );
            return;
        };
        self.note_transcript_path(agent_id, kind, &hook);
        // A late hook says nothing newer than what was heard already (found by the simulation:
        // an 18 s late hook let a stale idle screen end a working turn).
        let agent = self.agent_mut(agent_id);
        agent.last_signal_at = agent.last_signal_at.max(stamp);
        agent.news_stamp = agent.news_stamp.max(stamp);
        if hook.event != HookEvent::SessionEnd {
            self.revive_if_reaped(agent_id, stamp);
        }
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
            debug!(
                "[HOOK_RECEIVER] {} hook for agent {agent_id} announces no turn",
                hook.event.name()
            );
            None
        };
        match hook.event {
            HookEvent::UserPromptSubmit => {
                let lives = self.news_after_reaping(agent_id, stamp);
                self.set_flags(agent_id, lives.then_some(false), Some(false));
                let prompt = hook.prompt.clone().unwrap_or_default();
                self.prompt_seen(agent_id, Some(stamp), &prompt);
                if let (Some(prompt), Some(key)) = (hook.prompt.as_deref(), hook_key) {
                    self.hook_prompt(agent_id, &hook, prompt, stamp, key);
                }
            }
            HookEvent::Stop => {
                #[cfg(feature = "planted-bugs")]
                if self.planted(crate::harness::planted::Bug::SkipFenceTtl) {
                    self.fenced_stop(agent_id);
                    return;
                }
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
                } else {
                    self.note_asked_tool(agent_id, &hook, stamp);
                }
            }
            HookEvent::PostToolUse => {
                // The tool ran: a later dialog is about another one. Not a tool that ran
                // before the one asked now (a late PostToolUse: command hooks are posted by
                // detached processes and may arrive out of order).
                let agent = self.agent_mut(agent_id);
                if stamp >= agent.asked_tool_at {
                    agent.asked_tool = None;
                }
                self.set_flags(agent_id, None, Some(false))
            }
            HookEvent::PermissionRequest => {
                self.note_asked_tool(agent_id, &hook, stamp);
                self.set_flags(agent_id, None, Some(true));
            }
            HookEvent::Notification => match hook.notification_type.as_deref() {
                Some("permission_prompt") => self.set_flags(agent_id, None, Some(true)),
                Some("idle_prompt") => {
                    self.hook_turn_end(agent_id, hook.session_id.as_deref(), stamp)
                }
                _ => {}
            },
            HookEvent::SessionStart => {
                let lives = self.news_after_reaping(agent_id, stamp);
                self.set_flags(agent_id, lives.then_some(false), None)
            }
            HookEvent::SessionEnd => {
                if hook.reason.as_deref() != Some("clear") {
                    self.set_flags(agent_id, Some(true), Some(false));
                    self.agent_mut(agent_id).ended_at = Some(stamp);
                }
                self.publish(
                    agent_id,
                    "session_ended",
                    json!({"agent_id": agent_id, "session_id": hook.session_id, "reason": hook.reason}),
                );
            }
            HookEvent::SubagentStop | HookEvent::PreCompact | HookEvent::Other(_) => {}
        }
        self.hook_step(agent_id, &hook, body, stamp);
    }

    /// Learns the session's transcript from a hook and starts reading it if it is new.
    pub(super) fn note_transcript_path(&mut self, agent_id: AgentId, kind: AgentKind, hook: &Hook) {
        let Some(abs) = hook.transcript_path.as_deref() else {
            return;
        };
        let Some(rel) = relative_transcript_path(&self.config, kind, abs) else {
            warn!(
                "[HOOK_RECEIVER] transcript_path outside the {} dir refused: {abs}",
                kind.name()
            );
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

    /// Remembers the tool a hook says the agent asks to use, and shows it with the permission
    /// dialog already on its pane (the pane's next reading adds it otherwise).
    pub(super) fn note_asked_tool(&mut self, agent_id: AgentId, hook: &Hook, stamp: Timestamp) {
        let Some(name) = hook.tool_name.as_deref() else {
            return;
        };
        if name == "AskUserQuestion" {
            return; // a question, not a permission: its turn shows it
        }
        let tool = crate::pane::tool::asked_tool(name, hook.tool_input.as_ref());
        let agent = self.agent_mut(agent_id);
        agent.asked_tool = Some(tool.clone());
        agent.asked_tool_at = stamp;
        let Some(dialog) = agent
            .row
            .permission
            .as_mut()
            .and_then(serde_json::Value::as_object_mut)
        else {
            return;
        };
        if dialog.get("tool") != Some(&tool) {
            dialog.insert("tool".into(), tool);
            self.dirty_agents.insert(agent_id);
            self.publish(agent_id, "card_refresh", json!({"agent_id": agent_id}));
        }
    }

    pub(super) fn set_flags(
        &mut self,
        agent_id: AgentId,
        ended: Option<bool>,
        waiting: Option<bool>,
    ) {
        let agent = self.agent_mut(agent_id);
        let before = (agent.row.ended, agent.row.waiting_permission);
        if let Some(e) = ended {
            agent.row.ended = e;
            if !e {
                agent.row.end_reason = None;
                agent.ended_at = None;
            }
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
    pub(super) fn hook_task(
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

    pub(super) fn hook_prompt(
        &mut self,
        agent_id: AgentId,
        hook: &Hook,
        prompt: &str,
        stamp: Timestamp,
        hook_key: String,
    ) {
        let text = crate::hook::matching::normalise_display(prompt);
        if text.is_empty() || self.agents[&agent_id].row.kind.is_machinery_prompt(&text) {
            debug!(
                "[HOOK_RECEIVER] prompt hook for agent {agent_id} is a slash command or machinery; no turn, the transcript decides"
            );
            return;
        }
        let key = self.key(Kind::Prompt, &text, hook.prompt_id.as_deref());
        // A line written well before this hook fired is an earlier prompt's, for a kind that
        // writes its prompt after its hook.
        let bounds = Bounds {
            not_before: self.agents[&agent_id]
                .row
                .kind
                .prompt_line_after_hook_ms()
                .map(|ms| stamp.add_millis(-ms)),
            not_after: None,
        };
        if self.match_hook_to_entry_within(agent_id, &key, &hook_key, bounds) {
            return;
        }
        let session = hook
            .session_id
            .clone()
            .or_else(|| Some(self.agents[&agent_id].row.session_id.clone()));
        let current = self.hook_task(agent_id, session.as_deref(), stamp);
        let current_state = current.map(|t| self.agents[&agent_id].tasks[&t].state);
        let intent = state::detect_user(&text, current_state);
        // A prompt hook means Claude Code started a new turn: it answers the current task
        // only while a question is open. A task that seems still to run had in fact ended
        // (its Stop is late or lost); the prompt opens the next one (found by the simulation).
        // A question asked with the AskUserQuestion tool is answered inside the tool: a prompt
        // after it means the dialog was answered or dismissed, and a new turn began.
        let tool_question = current.is_some_and(|t| self.agents[&agent_id].tool_question(t));
        let task = match (intent, current) {
            (Intent::Answer, Some(t))
                if current_state == Some(TaskState::AwaitingInput) && !tool_question =>
            {
                t
            }
            (_, Some(t)) if current_state == Some(TaskState::Idle) => t,
            _ => self.create_task(agent_id, session.clone(), stamp),
        };
        let row = hook_turn(
            hook,
            agent_id,
            task,
            (Actor::User, intent),
            text,
            stamp,
            hook_key,
            session,
        );
        self.add_hook_turn(row, key);
    }

    pub(super) fn hook_agent_text(
        &mut self,
        agent_id: AgentId,
        hook: &Hook,
        task: Option<TaskId>,
        msg: &str,
        stamp: Timestamp,
        hook_key: String,
    ) {
        let text = msg.trim().to_string();
        let key = self.key(Kind::AgentText, &text, None);
        if self.match_hook_to_entry(agent_id, &key, &hook_key) {
            return;
        }
        let session = hook.session_id.clone();
        let task = match task {
            Some(t) => t,
            None => self.create_task(agent_id, session.clone(), stamp),
        };
        let intent = intent::detect_agent_final(&text);
        let row = hook_turn(
            hook,
            agent_id,
            task,
            (Actor::Agent, intent),
            text,
            stamp,
            hook_key,
            session,
        );
        self.add_hook_turn(row, key);
    }

    pub(super) fn hook_question(
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
        let key = self.key(Kind::Question, &text, hook.tool_use_id.as_deref());
        if self.match_hook_to_entry(agent_id, &key, &hook_key) {
            return;
        }
        let session = hook.session_id.clone();
        let task = match self.hook_task(agent_id, session.as_deref(), stamp) {
            Some(t) => t,
            None => self.create_task(agent_id, session.clone(), stamp),
        };
        let row = hook_turn(
            hook,
            agent_id,
            task,
            (Actor::Agent, Intent::Question),
            text,
            stamp,
            hook_key,
            session,
        );
        let row = TurnRow {
            tool_use_id: hook.tool_use_id.clone(),
            question: Some(question),
            ..row
        };
        self.add_hook_turn(row, key);
    }

    /// A hook whose entry was read first adds nothing: the entry's turn remembers the hook.
    pub(super) fn match_hook_to_entry(
        &mut self,
        agent_id: AgentId,
        key: &Key,
        hook_key: &str,
    ) -> bool {
        self.match_hook_to_entry_within(agent_id, key, hook_key, Bounds::default())
    }

    /// [`Core::match_hook_to_entry`] of an entry-made turn whose time is within `bounds`.
    pub(super) fn match_hook_to_entry_within(
        &mut self,
        agent_id: AgentId,
        key: &Key,
        hook_key: &str,
        bounds: Bounds,
    ) -> bool {
        debug!(
            "[HOOK_RECEIVER] agent {agent_id}: matching hook key {} against the transcript entries already read",
            key_label(key)
        );
        let Some(slot) = self
            .agent_mut(agent_id)
            .index
            .match_hook_within(key, bounds)
        else {
            debug!(
                "[HOOK_RECEIVER] agent {agent_id}: no entry read yet for key {}",
                key_label(key)
            );
            return false;
        };
        debug!(
            "[HOOK_RECEIVER] agent {agent_id}: hook matched late entry, turn {} already read from the transcript; no new turn",
            slot.turn_id
        );
        self.out.push_back(Command::Store(Write::HookMatched {
            turn_id: slot.turn_id,
            hook_key: hook_key.to_string(),
        }));
        true
    }

    pub(super) fn add_hook_turn(&mut self, mut row: TurnRow, key: Key) {
        if self.rolled_back(row.agent_id, row.task_id, row.actor) {
            debug!(
                "[HOOK_RECEIVER] agent {}: hook turn rolled back",
                row.agent_id
            );
            return;
        }
        row.id = self.new_turn_id();
        debug!(
            "[HOOK_RECEIVER] agent {}: new turn {} in task {} ({:?}/{}, key {}), provisional until its transcript line claims it",
            row.agent_id,
            row.id,
            row.task_id,
            row.actor,
            row.intent.as_str(),
            key_label(&key)
        );
        let (agent_id, task_id) = (row.agent_id, row.task_id);
        let from = self.agents[&agent_id].tasks[&task_id].state;
        if transition(from, row.actor, row.intent) == Outcome::Reject {
            warn!(
                "{}",
                preserved_warning("HOOK_RECEIVER", from, row.actor, row.intent, row.id)
            );
        }
        self.agent_mut(agent_id)
            .index
            .add_provisional(Slot::of(&row, key));
        self.persist_turn(row);
        self.recompute(agent_id, task_id);
    }

    /// The planted sm#232 fence: a Stop within 8 s of a `/clear` is swallowed; any other Stop
    /// ends the agent's latest task, whenever it was emitted.
    #[cfg(feature = "planted-bugs")]
    fn fenced_stop(&mut self, agent_id: AgentId) {
        let now = self.now;
        let agent = self.agent_mut(agent_id);
        if let Some(armed) = agent.fence_armed_at.take() {
            if now.millis() - armed.millis() < 8_000 {
                return;
            }
        }
        let Some(task_id) = agent.latest else { return };
        self.set_flags(agent_id, None, Some(false));
        let task = self.task_mut(agent_id, task_id);
        task.hook_turn_end_at = Some(now);
        self.mark_task(agent_id, task_id);
        self.recompute(agent_id, task_id);
    }

    /// A turn-end signal from a hook (Stop, StopFailure, idle notification): shown at once,
    /// until the transcript confirms or overtakes it.
    pub(super) fn hook_turn_end(
        &mut self,
        agent_id: AgentId,
        session: Option<&str>,
        stamp: Timestamp,
    ) {
        let Some(task_id) = self.hook_task(agent_id, session, stamp) else {
            return;
        };
        if self.agents[&agent_id]
            .user_entry_at
            .get(&task_id)
            .is_some_and(|&at| at > stamp)
        {
            debug!(
                "[HOOK_RECEIVER] turn end emitted at {stamp} is older than task {task_id}'s latest user line; a turn went on after it"
            );
            return;
        }
        let task = self.task_mut(agent_id, task_id);
        if task.hook_turn_end_at.is_some_and(|t| t >= stamp) {
            return;
        }
        task.hook_turn_end_at = Some(stamp);
        self.mark_task(agent_id, task_id);
        self.recompute(agent_id, task_id);
    }
}

/// A matching key as the log shows it: its kind and the first 32 bits of its text hash (the
/// `hash=` of `[RECONCILER] Created turn …`).
pub(super) fn key_label(key: &Key) -> String {
    format!("{:?}:{:08x}", key.kind, (key.text >> 96) as u32)
}

/// A turn a hook announces: provisional (no entry yet), at the hook's time, with its
/// fingerprint; the counterpart of `entry_turn` on the transcript side.
#[allow(clippy::too_many_arguments)]
fn hook_turn(
    hook: &Hook,
    agent_id: AgentId,
    task_id: TaskId,
    (actor, intent): (Actor, Intent),
    text: String,
    stamp: Timestamp,
    hook_key: String,
    session: Option<String>,
) -> TurnRow {
    TurnRow {
        timestamp_source: TimestampSource::Server,
        hook_key: Some(hook_key),
        prompt_id: hook.prompt_id.clone(),
        session_id: session,
        ..TurnRow::new(
            agent_id,
            task_id,
            (actor, intent),
            text,
            stamp,
            TurnSource::Hook,
        )
    }
}
