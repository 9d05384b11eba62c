//! The forced reconcile's re-read: every conversational line of an agent's transcripts, from
//! byte 0 up to where the file was read when the reconcile began, is checked against the
//! turns the store returned; a line with no stored turn (its row was lost) gets one again.
//!
//! The engine's own "seen" set cannot decide this (it says a uuid is known while its row may
//! be gone), so the stored rows decide, loaded with `LoadAgents` after every write emitted
//! before the reconcile was committed. Only creation happens here: task states are not
//! replayed (the lines were already folded when first read), and a doubled turn is left for
//! `headspace audit` to report. Only the agent's own rows count: a line whose only turn is
//! under another agent gets its turn here too, and the audit then reports it as doubled.

use super::{uuid_key, Core};
use crate::io::{Command, ReadId, RequestId};
use crate::model::{AgentId, Snapshot, TaskId};
use crate::task::intent::Intent;
use crate::task::state;
use crate::transcript::audit::ConversationScan;
use crate::transcript::entry::Entry;
use std::collections::BTreeMap;
use tracing::info;

/// More missing lines than this in a row are placed without waiting for the next stored
/// line (bounds the memory a transcript with no stored turns at all takes).
const MAX_PENDING: usize = 1_000;

/// One file's re-read for a forced reconcile.
#[derive(Debug)]
pub(super) struct Rescan {
    agent_id: AgentId,
    path: String,
    /// Lines ending after this offset are the periodic path's (read when the reconcile began).
    limit: u64,
    scan: ConversationScan,
    /// Stored entry uuids of the agent and the task each is in.
    stored: BTreeMap<u128, TaskId>,
    /// The task of the last stored line read.
    prev_task: Option<TaskId>,
    /// Missing lines read since the last stored line.
    pending: Vec<Entry>,
}

impl Rescan {
    /// Where the re-read stops judging lines.
    pub(super) fn limit(&self) -> u64 {
        self.limit
    }
}

impl Core {
    /// The agent's stored rows are in: re-read each of its files from byte 0.
    pub(super) fn start_rescans(&mut self, snapshot: &Snapshot) {
        let waiting: Vec<RequestId> = self
            .reading
            .reconciles
            .iter()
            .filter(|(_, r)| {
                r.limits.is_some() && snapshot.agents.iter().any(|a| a.id == r.agent_id)
            })
            .map(|(req, _)| *req)
            .collect();
        for request in waiting {
            let rec = self
                .reading
                .reconciles
                .get_mut(&request)
                .expect("reconcile");
            let agent_id = rec.agent_id;
            let limits = rec.limits.take().unwrap_or_default();
            let stored: BTreeMap<u128, TaskId> = snapshot
                .turns
                .iter()
                .filter(|t| t.agent_id == agent_id)
                .filter_map(|t| Some((uuid_key(t.entry_uuid.as_deref()?), t.task_id)))
                .collect();
            // A file nothing was read of before the reconcile has no line to check.
            for (path, limit) in limits.into_iter().filter(|(_, l)| *l > 0) {
                let read = self.new_read(Some(request));
                self.reading
                    .reconciles
                    .get_mut(&request)
                    .expect("reconcile")
                    .reads
                    .insert(read);
                self.reading.rescans.insert(
                    read,
                    Rescan {
                        agent_id,
                        path: path.clone(),
                        limit,
                        scan: ConversationScan::of_kind(
                            crate::kind::AgentKind::of_transcript(&path),
                            self.config.max_line_bytes,
                        ),
                        stored: stored.clone(),
                        prev_task: None,
                        pending: Vec::new(),
                    },
                );
                self.out.push_back(Command::ReadTranscript {
                    path,
                    from: 0,
                    read,
                });
            }
            self.finish_if_done(request);
        }
    }

    /// Bytes of `path` at `offset`: every re-read of that file takes what it expects of them.
    /// The read that ends a re-read (`read`) places its last missing lines.
    pub(super) fn feed_rescans(
        &mut self,
        path: &str,
        offset: u64,
        data: &[u8],
        read: Option<ReadId>,
    ) {
        let ids: Vec<ReadId> = self
            .reading
            .rescans
            .iter()
            .filter(|(_, r)| r.path == path)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let r = self.reading.rescans.get_mut(&id).expect("rescan");
            let limit = r.limit;
            let mut lines = Vec::new();
            r.scan.push(offset, data, |e, end| {
                if end <= limit {
                    lines.push(e);
                }
            });
            for e in lines {
                self.rescan_line(id, e);
            }
            if read == Some(id) {
                let mut r = self.reading.rescans.remove(&id).expect("rescan");
                let rest = std::mem::take(&mut r.pending);
                self.place(&mut r, rest, None);
            }
        }
    }

    fn rescan_line(&mut self, id: ReadId, e: Entry) {
        let mut r = self.reading.rescans.remove(&id).expect("rescan");
        let key = uuid_key(e.uuid().expect("a conversational line has a uuid"));
        match r.stored.get(&key).copied() {
            Some(task) => {
                let pending = std::mem::take(&mut r.pending);
                self.place(&mut r, pending, Some(task));
                r.prev_task = Some(task);
            }
            None => {
                r.pending.push(e);
                if r.pending.len() >= MAX_PENDING {
                    let pending = std::mem::take(&mut r.pending);
                    self.place(&mut r, pending, None);
                }
            }
        }
        self.reading.rescans.insert(id, r);
    }

    /// Gives missing lines their turns. They belong to the task of the stored line before
    /// them, except that when the next stored line is in another task, the last prompt
    /// among them opened that task: it and what follows it go there.
    fn place(&mut self, r: &mut Rescan, pending: Vec<Entry>, next_task: Option<TaskId>) {
        if pending.is_empty() {
            return;
        }
        let live = |core: &Core, t: Option<TaskId>| {
            t.filter(|t| core.agents[&r.agent_id].tasks.contains_key(t))
        };
        let mut prev = live(self, r.prev_task);
        let next = live(self, next_task);
        let split = match (prev, next) {
            (Some(p), Some(n)) if p != n => pending
                .iter()
                .rposition(|e| matches!(e, Entry::UserPrompt { .. }))
                .unwrap_or(pending.len()),
            (None, Some(_)) => 0,
            _ => pending.len(),
        };
        for (i, e) in pending.into_iter().enumerate() {
            let task = if i < split { prev } else { next };
            let task = match task {
                Some(t) => t,
                None => {
                    let session = self.files.get(&r.path).map(|f| f.session_id.clone());
                    let at = e.timestamp().unwrap_or(self.now);
                    // One task for all the lines no stored line places (none is left).
                    let t = self.create_task(r.agent_id, session, at);
                    r.prev_task = Some(t);
                    prev = Some(t);
                    t
                }
            };
            let key = uuid_key(e.uuid().expect("uuid"));
            if r.stored.insert(key, task).is_none() {
                self.recreate_turn(r, e, task);
            }
        }
    }

    fn recreate_turn(&mut self, r: &Rescan, e: Entry, task: TaskId) {
        let session = self
            .files
            .get(&r.path)
            .map(|f| f.session_id.clone())
            .unwrap_or_default();
        let a = r.agent_id;
        let prompt_intent = match &e {
            Entry::UserPrompt { text, .. } => state::detect_user(text, None),
            _ => Intent::Command,
        };
        let Some(row) = self.entry_row(a, task, e, prompt_intent, &session) else {
            return;
        };
        let mut row = row;
        row.id = self.new_turn_id();
        info!(
            "[RECONCILER] Created turn {} from JSONL entry {} (agent={a}, task={task}): its stored row was missing",
            row.id,
            row.entry_uuid.as_deref().unwrap_or("-")
        );
        let key = uuid_key(row.entry_uuid.as_deref().unwrap_or_default());
        let agent = self.agent_mut(a);
        agent.seen_entries.insert(key);
        agent.recovered += 1;
        self.persist_turn(row);
    }
}
