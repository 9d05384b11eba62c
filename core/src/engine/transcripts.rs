//! Transcripts: reading files into lines (whole or truncated), offsets, session activity.
//! What a line's entry becomes is in `entries.rs`.

use super::{project_of_dir, session_of_path, Core, SESSION_ACTIVITY_EVERY_MS};
use crate::io::{Command, ReadId, Write};
use crate::kind::AgentKind;
use crate::model::{AgentId, OffsetRow};
use crate::time::Timestamp;
use crate::transcript::entry;
use crate::transcript::entry::{Entry, LineError};
use crate::transcript::framing::{Line, Push};
use crate::transcript::line_read::Restating;
use crate::transcript::mend::Mended;
use serde_json::json;
use tracing::{debug, info, warn};

impl Core {
    pub(super) fn on_transcript(
        &mut self,
        path: &str,
        offset: u64,
        data: &[u8],
        read: Option<ReadId>,
    ) {
        let reconcile = read.and_then(|r| self.reading.reads.remove(&r)).flatten();
        if !self.reading.rescans.is_empty() {
            self.feed_rescans(path, offset, data, read);
        }
        if !self.files.contains_key(path) {
            let Some(session) = session_of_path(path) else {
                debug!("[TRANSCRIPT] {path} is not a session transcript; ignored");
                self.finish_read(reconcile, read);
                return;
            };
            let agent_id = match self.by_session.get(&session) {
                Some(&a) => a,
                None => {
                    let a = self.create_agent(AgentKind::of_transcript(path), &session);
                    let agent = self.agent_mut(a);
                    agent.row.transcript_path = Some(path.to_string());
                    agent.row.project = project_of_dir(path);
                    self.dirty_agents.insert(a);
                    a
                }
            };
            self.open_file(path, &session, agent_id, 0, None);
        }
        let agent_id = self.files[path].agent_id;
        let file = self.files.get_mut(path).expect("file just opened");
        // Activity is bytes never seen before, outside a reconcile: a re-read, a gap read of
        // old bytes or a user's reconcile says nothing about the agent now.
        let grew = reconcile.is_none()
            && offset + data.len() as u64 > file.framer.expected_offset()
            && offset <= file.framer.expected_offset();
        let mut framer = std::mem::take(&mut file.framer);
        let push = framer.push(offset, data, |line, _end| {
            self.process_line(path, agent_id, line)
        });
        if self.planted(crate::harness::planted::Bug::SkipPartialLine) {
            // The planted bug: whatever follows the last newline is dropped, not buffered.
            framer.reset(framer.expected_offset());
        }
        let file = self.files.get_mut(path).expect("file still open");
        file.framer = framer;
        if grew {
            self.note_session_activity(agent_id, path);
        }
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
                if let Some(rec) = self.reading.reconciles.get_mut(&r) {
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

    /// Tells listeners (the dashboard, an orchestration runner) that a session's transcript
    /// grew, whoever started the session: at most once per [`SESSION_ACTIVITY_EVERY_MS`].
    fn note_session_activity(&mut self, agent_id: AgentId, path: &str) {
        let now = self.now;
        let file = self.files.get_mut(path).expect("file open");
        if file
            .activity_published
            .is_some_and(|at| now.millis() - at.millis() < SESSION_ACTIVITY_EVERY_MS)
        {
            return;
        }
        file.activity_published = Some(now);
        // The agent was seen: an orchestration runner judges a step stale by this, and a lost
        // hook must not make a working agent look silent.
        self.agent_mut(agent_id).row.last_seen_at = now;
        self.dirty_agents.insert(agent_id);
        self.publish_session_activity(agent_id, path);
    }

    fn publish_session_activity(&mut self, agent_id: AgentId, path: &str) {
        let data = json!({
            "agent_id": agent_id,
            "session_id": self.files[path].session_id,
            "path": path,
            "project": self.agents[&agent_id].row.project,
            "at": self.now,
        });
        self.publish(agent_id, "session_activity", data);
    }

    pub(super) fn on_reset(&mut self, path: &str) {
        let Some(file) = self.files.get_mut(path) else {
            return;
        };
        info!("[TRANSCRIPT] {path} shrank or was replaced; reading it again (entries already seen are skipped)");
        file.framer.reset(0);
        file.restating = Default::default();
        let read = self.new_read(None);
        self.out.push_back(Command::ReadTranscript {
            path: path.to_string(),
            from: 0,
            read,
        });
    }

    pub(super) fn save_offset(&mut self, path: &str) {
        let file = self.files.get_mut(path).expect("file open");
        let now = (file.framer.committed_offset(), file.task);
        if now == file.saved || file.restating.is_open() {
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

    pub(super) fn process_line(&mut self, path: &str, agent_id: AgentId, line: Line<'_>) {
        match line {
            Line::Whole(bytes) => self.process_whole_line(path, agent_id, bytes),
            Line::Truncated { head, tail, len } => {
                self.process_truncated_line(path, agent_id, head, tail, len)
            }
        }
    }

    fn process_whole_line(&mut self, path: &str, agent_id: AgentId, line: &[u8]) {
        // One parse for the entry, the steps and the place (odd lines are read apart).
        let kind = AgentKind::of_transcript(path);
        #[cfg(feature = "planted-bugs")]
        let reading = if kind == AgentKind::Codex
            && self.planted(crate::harness::planted::Bug::CodexContextAsPrompt)
        {
            crate::transcript::codex::read_line_with_context_as_prompt(line)
        } else {
            kind.read_line(line)
        };
        #[cfg(not(feature = "planted-bugs"))]
        let reading = kind.read_line(line);
        if let Some(to) = reading.rewinds_to.clone() {
            // The line carries no time of its own: it is news now.
            self.rewound(path, agent_id, to, self.now);
        }
        let classified = self.unless_restated(path, reading.restating, reading.entry);
        let at = classified.as_ref().ok().and_then(|(e, _)| e.timestamp());
        let prompt = matches!(classified, Ok((Entry::UserPrompt { .. }, _)));
        let interrupt = matches!(
            classified,
            Ok((
                Entry::Signal {
                    signal: entry::Signal::Interrupt,
                    ..
                },
                _
            ))
        )
        .then(|| at.unwrap_or(self.now));
        self.learn_from_line(agent_id, reading.place, at, prompt);
        match classified {
            Ok((Entry::Ignored, _)) => {}
            Ok((e, mended)) => {
                if mended.any() {
                    warn!(
                        "[TRANSCRIPT] {path}: line {}: {mended} (PostgreSQL and JSON parsers refuse them); its turn is kept",
                        e.uuid().unwrap_or("without uuid")
                    );
                }
                self.process_entry(path, agent_id, e)
            }
            Err(e) => warn!(
                "[TRANSCRIPT] {path}: skipped a line that is not JSON ({} bytes): {e}",
                line.len()
            ),
        }
        let mut facts = reading.facts;
        if let Some(model) = facts.model.take() {
            if let Some(f) = self.files.get_mut(path) {
                f.model = Some(model);
            }
        }
        self.steps_of_line(path, agent_id, facts, interrupt);
    }

    /// The CLI took its conversation back to message `to`: its turn and every later one of
    /// the session are marked rewound (kept, never removed), and the page is told.
    fn rewound(&mut self, path: &str, agent_id: AgentId, to: String, at: Timestamp) {
        info!("[TRANSCRIPT] {path}: the conversation was taken back to message {to}; its turns from there are marked rewound");
        self.out.push_back(Command::Store(Write::Rewound {
            agent_id,
            entry_uuid: to.clone(),
            at,
        }));
        self.publish(
            agent_id,
            "turns_rewound",
            json!({"agent_id": agent_id, "entry_uuid": to, "at": at}),
        );
    }

    /// The line's entry, or nothing when the line is inside a restatement (the CLI writing
    /// earlier messages again under new ids: `Restating`); keeps whether the file is inside
    /// one.
    fn unless_restated(
        &mut self,
        path: &str,
        restating: Restating,
        entry: Result<(Entry, Mended), LineError>,
    ) -> Result<(Entry, Mended), LineError> {
        let news = self.planted(crate::harness::planted::Bug::GeminiRestatedAsNews);
        let Some(file) = self.files.get_mut(path) else {
            return entry;
        };
        let inside = file.restating.restates(restating) && !news;
        match entry {
            Ok((e, _)) if inside && e.uuid().is_some() => {
                debug!(
                    "[TRANSCRIPT] {path}: line {} restates an earlier message; not a new turn",
                    e.uuid().unwrap_or_default()
                );
                Ok((Entry::Ignored, Mended::default()))
            }
            other => other,
        }
    }

    /// A line longer than `max_line_bytes`: what its head and tail tell becomes its turn,
    /// its text marked as truncated.
    fn process_truncated_line(
        &mut self,
        path: &str,
        agent_id: AgentId,
        head: &[u8],
        tail: &[u8],
        len: u64,
    ) {
        let limit = self.config.max_line_bytes;
        if (head.len() + tail.len()) as u64 == len {
            // Nothing was dropped between head and tail: the line is whole after all.
            debug!("[TRANSCRIPT] {path}: a line of {len} bytes, just over max_line_bytes ({limit}), read whole");
            return self.process_whole_line(path, agent_id, &[head, tail].concat());
        }
        if AgentKind::of_transcript(path) == AgentKind::Gemini {
            // Gemini's over-long line is its message list, which ends a restatement.
            let mark = crate::transcript::gemini::restating_of_head(head);
            if let Some(file) = self.files.get_mut(path) {
                file.restating.restates(mark);
            }
        }
        let r = crate::transcript::truncated::recover(head, tail, len);
        let uuid = r.uuid.as_deref().unwrap_or("(uuid not found)");
        let outcome = match &r.entry {
            Entry::Ignored if r.uuid.is_none() => {
                "no uuid in its first and last bytes: no turn made of it"
            }
            Entry::Ignored => "not a turn",
            Entry::Signal { .. } => "not a turn (an activity signal)",
            _ if r.text_cut => "its turn keeps the start of its text, marked as truncated",
            _ => "its turn's text was whole",
        };
        warn!(
            "[TRANSCRIPT] {path}: line {uuid} is {len} bytes, longer than max_line_bytes ({limit}); read its first {} and last {} bytes: {outcome}",
            head.len(),
            tail.len()
        );
        if r.mended.any() {
            warn!("[TRANSCRIPT] {path}: line {uuid}: {}", r.mended);
        }
        if r.entry != Entry::Ignored {
            self.process_entry(path, agent_id, r.entry);
        }
        self.steps_of_truncated(path, agent_id, head, tail);
    }
}
