//! Transcript entries becoming turns: claims of hook-made turns, the task an entry belongs
//! to, and the transcript-order fold of task state.

use super::hooks::key_label;
use super::{uuid_key, Core};
use crate::hook::matching::{hash128, Bounds, Key, Kind, Slot};
use crate::io::{Command, Write};
use crate::kind::AgentKind;
use crate::model::{AgentId, TaskId, TimestampSource, TurnId, TurnRow, TurnSource};
use crate::task::intent;
use crate::task::intent::{Actor, Intent};
use crate::task::state::{self, on_turn_end, preserved_warning, transition, Outcome, TaskState};
use crate::time::Timestamp;
use crate::transcript::entry::{Entry, Signal};
use serde_json::json;
use tracing::{debug, info, warn};

impl Core {
    pub(super) fn process_entry(&mut self, path: &str, agent_id: AgentId, e: Entry) {
        let session = self.files[path].session_id.clone();
        let now = self.now;
        self.agent_mut(agent_id).last_signal_at = now;
        match e {
            Entry::UserPrompt {
                ref uuid,
                timestamp,
                ref text,
                ref prompt_id,
            } => {
                if !self.first_sight(agent_id, uuid) {
                    return;
                }
                self.prompt_seen(agent_id, timestamp, text);
                let key = self.key(Kind::Prompt, text, prompt_id.as_deref());
                // A line written before its hook fired is no later hook's prompt.
                let bounds = Bounds {
                    not_before: None,
                    not_after: AgentKind::of_transcript(path)
                        .prompt_line_after_hook_ms()
                        .zip(timestamp)
                        .map(|(ms, at)| at.add_millis(ms)),
                };
                if let Some(slot) = self.claim_slot_within(agent_id, &key, bounds) {
                    let task = self.prompt_task_in_order(path, agent_id, &slot, text, timestamp);
                    self.set_file_task(path, task);
                    self.overtake_hook_turn_end(agent_id, task, timestamp);
                    self.claim(agent_id, slot, uuid.clone(), timestamp, task);
                    return;
                }
                let file_task = self.files[path].task;
                let tx = file_task
                    .map(|t| self.agents[&agent_id].tasks[&t].transcript_state)
                    .filter(|s| {
                        *s != TaskState::Processing
                            || AgentKind::of_transcript(path).prompt_may_join_running_turn()
                    });
                let intent = state::detect_user(text, tx);
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
                // An answer written after a Stop's stamp shows the turn went on.
                self.overtake_hook_turn_end(agent_id, task, timestamp);
                if let Some(row) = self.entry_row(agent_id, task, e, intent, &session) {
                    self.add_entry_turn(row, Some(key));
                }
            }
            Entry::AgentText {
                ref uuid,
                timestamp,
                ref text,
            } => {
                if !self.first_sight(agent_id, uuid) {
                    return;
                }
                let task = self.entry_task(path, agent_id, timestamp);
                self.overtake_hook_turn_end(agent_id, task, timestamp);
                let key = self.key(Kind::AgentText, text, None);
                if let Some(slot) = self.claim_slot(agent_id, &key) {
                    self.claim(agent_id, slot, uuid.clone(), timestamp, task);
                    return;
                }
                if let Some(row) = self.entry_row(agent_id, task, e, Intent::Command, &session) {
                    self.add_entry_turn(row, Some(key));
                }
            }
            Entry::AgentQuestion {
                ref uuid,
                timestamp,
                ref tool_use_id,
                ref text,
                ..
            } => {
                if let Some(id) = tool_use_id.as_deref() {
                    self.agent_mut(agent_id)
                        .question_ids
                        .insert(hash128(id.as_bytes()));
                }
                if !self.first_sight(agent_id, uuid) {
                    return;
                }
                let task = self.entry_task(path, agent_id, timestamp);
                self.overtake_hook_turn_end(agent_id, task, timestamp);
                let key = self.key(Kind::Question, text, tool_use_id.as_deref());
                if let Some(slot) = self.claim_slot(agent_id, &key) {
                    self.claim(agent_id, slot, uuid.clone(), timestamp, task);
                    return;
                }
                if let Some(row) = self.entry_row(agent_id, task, e, Intent::Command, &session) {
                    self.add_entry_turn(row, Some(key));
                }
            }
            Entry::ToolResult {
                ref uuid,
                timestamp,
                ref tool_use_id,
                ref answers,
                ..
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
                if !is_answer || !self.first_sight(agent_id, uuid) {
                    return;
                }
                let task = self.entry_task(path, agent_id, timestamp);
                if let Some(row) = self.entry_row(agent_id, task, e, Intent::Command, &session) {
                    self.add_entry_turn(row, None);
                }
            }
            Entry::Notice {
                ref uuid,
                timestamp,
                ..
            } => {
                if !self.first_sight(agent_id, uuid) {
                    return;
                }
                let task = self.entry_task(path, agent_id, timestamp);
                if let Some(row) =
                    self.entry_row(agent_id, task, e.clone(), Intent::Command, &session)
                {
                    self.add_entry_turn(row, None);
                }
                self.end_turn_from_transcript(path, agent_id);
            }
            Entry::Signal { timestamp, signal } => {
                let Some(task_id) = self.files[path].task else {
                    return;
                };
                match signal {
                    Signal::Interrupt | Signal::TurnDuration | Signal::StopHookSummary => {
                        self.end_turn_from_transcript(path, agent_id);
                    }
                    Signal::ToolUse => {
                        self.overtake_hook_turn_end(agent_id, task_id, timestamp);
                        self.reopen_on_tool_use(agent_id, task_id);
                    }
                    Signal::CompactBoundary => {
                        self.overtake_hook_turn_end(agent_id, task_id, timestamp)
                    }
                }
            }
            Entry::Ignored => {}
        }
    }

    /// The transcript says the turn of the task its file is in ended (an interrupt, a blocked
    /// prompt's notice, `turn_duration`, `stop_hook_summary`).
    fn end_turn_from_transcript(&mut self, path: &str, agent_id: AgentId) {
        let Some(task_id) = self.files[path].task else {
            return;
        };
        let task = self.task_mut(agent_id, task_id);
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

    /// A tool call after a text that read like a completion ("All tests pass.") shows the
    /// agent still works: only a turn end finishes the turn (found by the simulation: the
    /// agent showed idle while it worked).
    fn reopen_on_tool_use(&mut self, agent_id: AgentId, task_id: TaskId) {
        let task = self.task_mut(agent_id, task_id);
        if task.transcript_state == TaskState::Complete {
            task.transcript_state = TaskState::Processing;
            self.mark_task(agent_id, task_id);
            self.recompute(agent_id, task_id);
        }
    }

    /// The task of a prompt whose hook came first. The hook may have taken it for an answer
    /// within the task the agent seemed still to work on (its Stop not in yet); when the
    /// transcript shows that task had ended before the prompt, the prompt opens a new task, as
    /// in transcript order (found by the simulation: the agent showed idle while it worked).
    fn prompt_task_in_order(
        &mut self,
        path: &str,
        agent_id: AgentId,
        slot: &Slot,
        text: &str,
        timestamp: Option<Timestamp>,
    ) -> TaskId {
        if self.files[path].task != Some(slot.task_id) {
            return slot.task_id;
        }
        let tx = self.agents[&agent_id].tasks[&slot.task_id].transcript_state;
        let intent = state::detect_user(text, Some(tx));
        match transition(tx, Actor::User, intent) {
            Outcome::OpenNew | Outcome::CompleteAndOpenNew => {
                let session = self.files[path].session_id.clone();
                self.create_task(agent_id, Some(session), timestamp.unwrap_or(slot.stamp))
            }
            _ => slot.task_id,
        }
    }

    /// The provisional turn an entry with `key` claims, if any. (The planted 30-second match
    /// window drops a slot whose hook came more than 30 s before the entry is read.)
    fn claim_slot(&mut self, agent_id: AgentId, key: &Key) -> Option<Slot> {
        self.claim_slot_within(agent_id, key, Bounds::default())
    }

    /// [`Core::claim_slot`] of a hook-made turn whose time is within `bounds`.
    fn claim_slot_within(&mut self, agent_id: AgentId, key: &Key, bounds: Bounds) -> Option<Slot> {
        let slot = self.agent_mut(agent_id).index.claim_within(key, bounds)?;
        let window_shut = self.planted(crate::harness::planted::Bug::MatchWindow30s)
            && self.now.millis() - slot.stamp.millis() > 30_000;
        (!window_shut).then_some(slot)
    }

    /// True the first time an entry uuid is seen for this agent: re-reads add nothing.
    pub(super) fn first_sight(&mut self, agent_id: AgentId, uuid: &str) -> bool {
        self.agent_mut(agent_id).seen_entries.insert(uuid_key(uuid))
    }

    /// The task an entry belongs to: the one its file's last prompt opened; a transcript read
    /// from the middle of a conversation gets a task without a command.
    pub(super) fn entry_task(
        &mut self,
        path: &str,
        agent_id: AgentId,
        timestamp: Option<Timestamp>,
    ) -> TaskId {
        if self.planted(crate::harness::planted::Bug::RecoveredOnLatestTask) {
            if let Some(t) = self.agents[&agent_id].latest {
                return t;
            }
        }
        if let Some(t) = self.files[path].task {
            return t;
        }
        let session = self.files[path].session_id.clone();
        let t = self.create_task(agent_id, Some(session), timestamp.unwrap_or(self.now));
        self.set_file_task(path, t);
        t
    }

    pub(super) fn set_file_task(&mut self, path: &str, task: TaskId) {
        self.files.get_mut(path).expect("file open").task = Some(task);
    }

    /// A transcript entry written after a hook's turn-end stamp shows the agent went on: the
    /// transcript is the authority again for that task.
    pub(super) fn overtake_hook_turn_end(
        &mut self,
        agent_id: AgentId,
        task_id: TaskId,
        timestamp: Option<Timestamp>,
    ) {
        let Some(ts) = timestamp else { return };
        let task = self.task_mut(agent_id, task_id);
        if task.hook_turn_end_at.is_some_and(|end| ts > end) {
            task.hook_turn_end_at = None;
            self.mark_task(agent_id, task_id);
            self.recompute(agent_id, task_id);
        }
    }

    /// The row a conversational entry makes in `task`, once the caller has decided the task
    /// and, for a typed prompt, its intent (`prompt_intent`; the other kinds have their own):
    /// the same row whether a line is read as it comes or re-read by a forced reconcile.
    /// `None` for a signal or an ignored line.
    pub(super) fn entry_row(
        &self,
        agent_id: AgentId,
        task: TaskId,
        e: Entry,
        prompt_intent: Intent,
        session: &str,
    ) -> Option<TurnRow> {
        Some(match e {
            Entry::UserPrompt {
                uuid,
                timestamp,
                text,
                prompt_id,
            } => TurnRow {
                prompt_id,
                ..self.entry_turn(
                    agent_id,
                    task,
                    Actor::User,
                    prompt_intent,
                    text,
                    timestamp,
                    uuid,
                    session,
                )
            },
            Entry::Notice {
                uuid,
                timestamp,
                text,
            } => self.entry_turn(
                agent_id,
                task,
                Actor::Agent,
                Intent::EndOfTask,
                text,
                timestamp,
                uuid,
                session,
            ),
            Entry::AgentText {
                uuid,
                timestamp,
                text,
            } => {
                let intent = intent::detect_agent(&text).0;
                self.entry_turn(
                    agent_id,
                    task,
                    Actor::Agent,
                    intent,
                    text,
                    timestamp,
                    uuid,
                    session,
                )
            }
            Entry::AgentQuestion {
                uuid,
                timestamp,
                tool_use_id,
                text,
                question,
            } => TurnRow {
                tool_use_id,
                question: Some(question),
                ..self.entry_turn(
                    agent_id,
                    task,
                    Actor::Agent,
                    Intent::Question,
                    text,
                    timestamp,
                    uuid,
                    session,
                )
            },
            Entry::ToolResult {
                uuid,
                timestamp,
                tool_use_id,
                answers,
                text,
            } => {
                let text = answers.unwrap_or(text).trim().to_string();
                TurnRow {
                    tool_use_id,
                    ..self.entry_turn(
                        agent_id,
                        task,
                        Actor::User,
                        Intent::Answer,
                        text,
                        timestamp,
                        uuid,
                        session,
                    )
                }
            }
            Entry::Signal { .. } | Entry::Ignored => return None,
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn entry_turn(
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
        let at = timestamp.unwrap_or(self.now);
        TurnRow {
            timestamp_source: if timestamp.is_some() {
                TimestampSource::Jsonl
            } else {
                TimestampSource::Server
            },
            entry_uuid: Some(uuid),
            session_id: Some(session.to_string()),
            ..TurnRow::new(
                agent_id,
                task_id,
                (actor, intent),
                text,
                at,
                TurnSource::Transcript,
            )
        }
    }

    /// Persists a turn made from a transcript entry that no hook announced, and lets it drive
    /// its task's state like any other turn (a recovered question awaits input).
    pub(super) fn add_entry_turn(&mut self, mut row: TurnRow, key: Option<Key>) {
        if self.rolled_back(row.agent_id, row.task_id, row.actor) {
            return;
        }
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
            self.agent_mut(agent_id)
                .index
                .add_unhooked(Slot::of(&row, key));
        }
        self.agent_mut(agent_id).recovered += 1;
        let (actor, intent, id) = (row.actor, row.intent, row.id);
        self.persist_turn(row);
        self.fold_transcript(agent_id, task_id, actor, intent, id, true);
    }

    /// An entry claims a hook-made turn: the turn takes the entry's uuid, timestamp and task.
    pub(super) fn claim(
        &mut self,
        agent_id: AgentId,
        slot: Slot,
        uuid: String,
        timestamp: Option<Timestamp>,
        task_id: TaskId,
    ) {
        // One per hooked turn in normal operation: DEBUG, or a log with many agents floods.
        debug!(
            "[RECONCILER] Entry {uuid} claimed hook-made turn {} (key {})",
            slot.turn_id,
            key_label(&slot.key)
        );
        if let Some(ts) = timestamp {
            debug!(
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
        if let (Actor::User, Some(ts)) = (slot.actor, timestamp) {
            self.agent_mut(agent_id).note_user_entry(task_id, ts);
        }
        if slot.task_id != task_id {
            self.move_turn(agent_id, slot.turn_id, slot.task_id, task_id);
            self.recompute(agent_id, slot.task_id);
        }
        self.fold_transcript(
            agent_id,
            task_id,
            slot.actor,
            slot.intent,
            slot.turn_id,
            false,
        );
    }

    /// Applies a turn, in transcript order, to its task's transcript state. `recovered`: the
    /// turn was made from its entry (no hook announced it), so a state change it causes is a
    /// recovery, said at INFO; a claimed turn's is ordinary operation, said at DEBUG.
    pub(super) fn fold_transcript(
        &mut self,
        agent_id: AgentId,
        task_id: TaskId,
        actor: Actor,
        intent: Intent,
        turn_id: TurnId,
        recovered: bool,
    ) {
        let task = self.task_mut(agent_id, task_id);
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
        if shown_after != shown_before && recovered {
            info!(
                "[RECONCILER] Recovered turn {turn_id} triggered state transition: {} -> {}",
                shown_before.as_str(),
                shown_after.as_str()
            );
        } else if shown_after != shown_before {
            debug!(
                "[RECONCILER] Claimed turn {turn_id} triggered state transition: {} -> {}",
                shown_before.as_str(),
                shown_after.as_str()
            );
        }
    }
}
