//! Reconcile requests, transcript reads and files.

use super::{Core, FileState, Reconcile};
use crate::framing::LineFramer;
use crate::io::{Command, ReadId, Reply, RequestId};
use crate::model::{AgentId, TaskId};
use std::collections::BTreeSet;
use tracing::info;

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
        let mut rec = Reconcile {
            agent_id,
            reads: BTreeSet::new(),
            recovered_before,
        };
        for (path, from) in paths {
            let read = self.new_read(Some(request));
            rec.reads.insert(read);
            self.out
                .push_back(Command::ReadTranscript { path, from, read });
        }
        if rec.reads.is_empty() {
            self.out.push_back(Command::Reply {
                request,
                reply: Reply::Reconciled {
                    agent_id,
                    created: 0,
                },
            });
            return;
        }
        self.agent_mut(agent_id).reconciling = Some(request);
        self.reconciles.insert(request, rec);
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
        let id = self.next_read;
        self.next_read += 1;
        self.reads.insert(id, reconcile);
        id
    }

    pub(super) fn finish_read(&mut self, reconcile: Option<RequestId>, read: Option<ReadId>) {
        let (Some(request), Some(read)) = (reconcile, read) else {
            return;
        };
        let Some(rec) = self.reconciles.get_mut(&request) else {
            return;
        };
        rec.reads.remove(&read);
        if !rec.reads.is_empty() {
            return;
        }
        let rec = self.reconciles.remove(&request).expect("reconcile");
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
            },
        );
    }
}
