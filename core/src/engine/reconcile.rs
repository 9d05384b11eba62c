//! Reconcile requests, transcript reads and files.

use super::{rescan, Core, FileState};
use crate::io::{Command, ReadId, Reply, RequestId};
use crate::model::{AgentId, TaskId};
use crate::transcript::framing::LineFramer;
use std::collections::{BTreeMap, BTreeSet};
use tracing::info;

/// Transcript reads in flight and the reconciles waiting on them.
#[derive(Debug, Default)]
pub(super) struct Reading {
    /// Each read asked for, and the reconcile request it serves, if any.
    pub(super) reads: BTreeMap<ReadId, Option<RequestId>>,
    /// Reconciles not answered yet.
    pub(super) reconciles: BTreeMap<RequestId, Reconcile>,
    /// Forced reconciles' re-reads from byte 0, by the read that ends each.
    pub(super) rescans: BTreeMap<ReadId, rescan::Rescan>,
}

/// One reconcile of an agent: the reads it waits on.
#[derive(Debug)]
pub(super) struct Reconcile {
    pub(super) agent_id: AgentId,
    pub(super) reads: BTreeSet<ReadId>,
    pub(super) recovered_before: u64,
    /// Each file and how far it was read when the reconcile began (the re-read's end), while
    /// the reconcile waits for the agent's stored rows; taken when the re-reads are asked for.
    pub(super) limits: Option<BTreeMap<String, u64>>,
}

impl Core {
    pub(super) fn on_reconcile(&mut self, agent_ref: &str, request: RequestId) {
        let Some(agent_id) = self.resolve_agent(agent_ref) else {
            self.out.push_back(Command::Reply {
                request,
                reply: Reply::UnknownAgent,
            });
            return;
        };
        if self.agents[&agent_id].reconciling.is_some() {
            self.out.push_back(Command::Reply {
                request,
                reply: Reply::ReconcileBusy,
            });
            return;
        }
        let paths = self.agent_files(agent_id);
        let recovered_before = self.agents[&agent_id].recovered;
        if paths.is_empty() {
            self.out.push_back(Command::Reply {
                request,
                reply: Reply::Reconciled {
                    agent_id,
                    created: 0,
                },
            });
            return;
        }
        // Lines before these offsets were read, and their writes emitted, before the rows
        // are asked for: the re-read checks them against the store; later lines are the
        // periodic path's.
        let limits = self
            .files
            .iter()
            .filter(|(_, f)| f.agent_id == agent_id)
            .map(|(p, f)| (p.clone(), f.framer.committed_offset()))
            .collect();
        let mut rec = Reconcile {
            agent_id,
            reads: BTreeSet::new(),
            recovered_before,
            limits: Some(limits),
        };
        for (path, from) in paths {
            let read = self.new_read(Some(request));
            rec.reads.insert(read);
            self.out
                .push_back(Command::ReadTranscript { path, from, read });
        }
        // The stored rows, not the engine's seen set, say which lines have their turn.
        self.memory
            .loads_asked
            .push_back(BTreeSet::from([agent_id]));
        self.out.push_back(Command::LoadAgents {
            ids: vec![agent_id],
        });
        self.agent_mut(agent_id).reconciling = Some(request);
        self.reading.reconciles.insert(request, rec);
    }

    /// Turns created so far by a running reconcile (for a partial answer).
    pub fn reconcile_created(&self, request: RequestId) -> Option<u64> {
        let rec = self.reading.reconciles.get(&request)?;
        let agent = self.agents.get(&rec.agent_id)?;
        Some(agent.recovered.saturating_sub(rec.recovered_before))
    }

    /// The bytes a reconcile waiting for its rows will re-read (each file up to where it was
    /// read when the reconcile began); 0 once its re-reads were asked for.
    pub fn reconcile_rescan_bytes(&self, request: RequestId) -> u64 {
        self.reading
            .reconciles
            .get(&request)
            .and_then(|r| r.limits.as_ref())
            .map_or(0, |l| l.values().sum())
    }

    /// For a forced reconcile's re-read, the offset its bytes were counted up to by
    /// [`Core::reconcile_rescan_bytes`].
    pub fn rescan_limit(&self, read: ReadId) -> Option<u64> {
        self.reading.rescans.get(&read).map(|r| r.limit())
    }

    /// The reconcile a read belongs to, if any.
    pub fn read_reconcile(&self, read: ReadId) -> Option<RequestId> {
        self.reading.reads.get(&read).copied().flatten()
    }

    /// An agent's transcript files and the offsets to read them from.
    pub(super) fn agent_files(&self, agent_id: AgentId) -> Vec<(String, u64)> {
        self.files
            .iter()
            .filter(|(_, f)| f.agent_id == agent_id)
            .map(|(p, f)| (p.clone(), f.framer.expected_offset()))
            .collect()
    }

    pub(super) fn new_read(&mut self, reconcile: Option<RequestId>) -> ReadId {
        let id = self.ids.read;
        self.ids.read += 1;
        self.reading.reads.insert(id, reconcile);
        id
    }

    pub(super) fn finish_read(&mut self, reconcile: Option<RequestId>, read: Option<ReadId>) {
        let (Some(request), Some(read)) = (reconcile, read) else {
            return;
        };
        let Some(rec) = self.reading.reconciles.get_mut(&request) else {
            return;
        };
        rec.reads.remove(&read);
        self.finish_if_done(request);
    }

    /// Answers a reconcile once its reads are done and its re-reads have run.
    pub(super) fn finish_if_done(&mut self, request: RequestId) {
        let Some(rec) = self.reading.reconciles.get(&request) else {
            return;
        };
        if !rec.reads.is_empty() || rec.limits.is_some() {
            return;
        }
        let rec = self.reading.reconciles.remove(&request).expect("reconcile");
        let agent = self.agent_mut(rec.agent_id);
        agent.reconciling = None;
        let created = agent.recovered - rec.recovered_before;
        info!(
            "[RECONCILER] Reconcile of agent {} done: {created} turn(s) recovered",
            rec.agent_id
        );
        self.out.push_back(Command::Reply {
            request,
            reply: Reply::Reconciled {
                agent_id: rec.agent_id,
                created,
            },
        });
    }

    pub(super) fn open_file(
        &mut self,
        path: &str,
        session: &str,
        agent_id: AgentId,
        offset: u64,
        task: Option<TaskId>,
    ) {
        if !self.by_session.contains_key(session) {
            self.attach_session(agent_id, session);
        }
        self.files.insert(
            path.to_string(),
            FileState {
                session_id: session.to_string(),
                agent_id,
                framer: LineFramer::new(offset, self.config.max_line_bytes),
                task,
                saved: (offset, task),
                activity_published: None,
                model: None,
                restating: Default::default(),
            },
        );
    }
}
