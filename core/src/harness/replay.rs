//! Replaying inputs through the core and the in-memory store, with simulated files.
//!
//! This is a complete, deterministic "shell" with no I/O: it is what `headspace replay`
//! runs, and what the property tests drive with generated schedules and restarts.

use crate::engine::{Config, Core};
use crate::harness::trace::{Step, Trace, TraceError};
use crate::io::{Command, Input, Reply, RequestId};
use crate::store::MemStore;
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// The core, a store that survives restarts, and the transcript files as bytes.
pub struct Replayer {
    config: Config,
    core: Core,
    store: MemStore,
    files: BTreeMap<String, Vec<u8>>,
    next_request: RequestId,
    replies: Vec<(RequestId, Reply)>,
    events: u64,
    by_name: std::collections::BTreeMap<&'static str, u64>,
    gaps: u64,
    /// When set, `LoadAgents` is answered only after the next step's input, as a slow store
    /// would: the core then holds several inputs while agents come back.
    defer_loads: bool,
    deferred: Vec<Vec<crate::model::AgentId>>,
    /// Every store write, in order, once [`Replayer::record_writes`] is called.
    recorded: Option<Vec<crate::io::Write>>,
}

impl Replayer {
    /// A fresh world.
    pub fn new(claude_dir: &str) -> Replayer {
        Replayer::with_config(Config::new(claude_dir.to_string()))
    }

    /// A fresh world whose core runs with `config`.
    pub fn with_config(config: Config) -> Replayer {
        Replayer {
            core: Core::new(config.clone()),
            config,
            store: MemStore::new(),
            files: BTreeMap::new(),
            next_request: 1,
            replies: Vec::new(),
            events: 0,
            by_name: std::collections::BTreeMap::new(),
            gaps: 0,
            defer_loads: false,
            deferred: Vec::new(),
            recorded: None,
        }
    }

    /// Runs one step at time `at` and carries out every command it causes.
    pub fn step(&mut self, at: Timestamp, step: Step) {
        // A slow store answers only after the next real input: a tick alone would be all the
        // core ever had to hold.
        let real = !matches!(step, Step::Tick);
        match step {
            Step::Hook { agent, event, body } => {
                self.core.handle(at, Input::Hook { agent, event, body })
            }
            Step::Append { path, data } => {
                let file = self.files.entry(path.clone()).or_default();
                let offset = file.len() as u64;
                file.extend_from_slice(&data);
                self.core.handle(
                    at,
                    Input::Transcript {
                        path,
                        offset,
                        data,
                        read: None,
                    },
                );
            }
            Step::Pane { pane, text } => self.core.handle(at, Input::Pane { pane, text }),
            Step::Panes { panes } => self.core.handle(at, Input::Panes(panes)),
            Step::Tick => self.core.handle(at, Input::Tick),
            Step::Reconcile { agent } => {
                let request = self.next_request;
                self.next_request += 1;
                self.core.handle(at, Input::Reconcile { agent, request });
            }
            Step::Sent { agent, text } => self.core.handle(at, Input::Sent { agent, text }),
            Step::Stopped { agent } => self.core.handle(at, Input::Stopped { agent }),
            Step::Restart => {
                self.core = Core::new(self.config.clone());
                self.deferred.clear();
                let since = crate::model::live_since(at, self.config.evict_after_ms);
                self.core
                    .handle(at, Input::Restore(self.store.restore_snapshot(since)));
            }
        }
        if real {
            self.answer_deferred(at);
        }
        self.drain(at);
    }

    /// Keeps a copy of every store write from now on (for benches that apply the same writes
    /// to another store).
    pub fn record_writes(&mut self) {
        self.recorded.get_or_insert_with(Vec::new);
    }

    /// The store, to put rows in it that another core wrote (a database shared by machines).
    pub fn store_mut(&mut self) -> &mut MemStore {
        &mut self.store
    }

    /// The writes recorded since the last call.
    pub fn take_writes(&mut self) -> Vec<crate::io::Write> {
        self.recorded
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Answers `LoadAgents` one step late from now on (see [`Replayer::settle`]).
    pub fn defer_loads(&mut self) {
        self.defer_loads = true;
    }

    /// Answers every deferred load, and what they cause, until nothing is left waiting.
    pub fn settle(&mut self, at: Timestamp) {
        while !self.deferred.is_empty() {
            self.answer_deferred(at);
            self.drain(at);
        }
    }

    fn answer_deferred(&mut self, at: Timestamp) {
        for ids in std::mem::take(&mut self.deferred) {
            let rows = self.store.load_agents(&ids);
            self.core.handle(at, Input::AgentsLoaded(rows));
        }
    }

    fn drain(&mut self, at: Timestamp) {
        while let Some(cmd) = self.core.poll_command() {
            match cmd {
                Command::Store(w) => {
                    if let Some(r) = &mut self.recorded {
                        r.push(w.clone());
                    }
                    self.store.apply(&w)
                }
                Command::Publish(e) => {
                    self.events += 1;
                    *self.by_name.entry(e.name).or_default() += 1;
                }
                Command::ReadTranscript { path, from, read } => {
                    let data = self
                        .files
                        .get(&path)
                        .map(|f| f.get(from as usize..).unwrap_or_default().to_vec())
                        .unwrap_or_default();
                    let offset = from.min(self.files.get(&path).map_or(0, |f| f.len() as u64));
                    self.core.handle(
                        at,
                        Input::Transcript {
                            path,
                            offset,
                            data,
                            read: Some(read),
                        },
                    );
                }
                Command::Reply { request, reply } => self.replies.push((request, reply)),
                Command::GapDetected { .. } => self.gaps += 1,
                Command::LoadAgents { ids } if self.defer_loads => self.deferred.push(ids),
                Command::LoadAgents { ids } => {
                    let rows = self.store.load_agents(&ids);
                    self.core.handle(at, Input::AgentsLoaded(rows));
                }
            }
        }
    }

    /// The store.
    pub fn store(&self) -> &MemStore {
        &self.store
    }

    /// The core.
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// Replies given so far, in order.
    pub fn replies(&self) -> &[(RequestId, Reply)] {
        &self.replies
    }

    /// Gaps the watchdog detected so far.
    pub fn gaps(&self) -> u64 {
        self.gaps
    }

    /// Number of events of one name published so far.
    pub fn events_named(&self, name: &str) -> u64 {
        self.by_name.get(name).copied().unwrap_or(0)
    }

    /// Number of events published so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The final state as JSON, byte-identical for the same steps.
    pub fn output_json(&self) -> String {
        serde_json::to_string(&self.store.replay_output()).expect("serialisable")
    }
}

/// Runs a whole trace and returns `headspace replay`'s output.
pub fn replay_trace(text: &str) -> Result<String, TraceError> {
    let trace = Trace::parse(text)?;
    let mut config = Config::new(trace.claude_dir.clone());
    config.codex_dir = trace.codex_dir.clone();
    config.gemini_dir = trace.gemini_dir.clone();
    let mut r = Replayer::with_config(config);
    for (at, step) in trace.steps {
        r.step(at, step);
    }
    Ok(r.output_json())
}
