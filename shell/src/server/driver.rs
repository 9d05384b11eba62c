//! The driver: one loop owns the core (on its own thread, or a task in the simulation), turns messages into inputs, reads transcript files
//! when the core asks, and hands every other command, in order, to the writer. The writer
//! commits the store writes of a batch in one transaction (retrying until the database takes
//! them), and only then publishes the batch's events and replies.

use crate::server::backoff::Backoff;
use crate::server::metrics::Metrics;
use crate::server::record::Recorder;
use crate::server::sse::Hub;
use crate::server::store::Store;
use crate::server::world::{Clock, FileStat, Files, World, READ_CHUNK};
use headspace_core::io::{RequestId, Write};
use headspace_core::kind::AgentKind;
use headspace_core::{Command, Core, Input, Reply, Timestamp};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

/// Commands a long read hands to the writer at a time.
const READ_BATCH: usize = 1_000;

/// What the rest of the server tells the driver.
pub enum Msg {
    /// An input ready for the core as it is (a hook, a pane capture, a send, agents loaded
    /// back): fed with the clock's time.
    Input(Input),
    /// A transcript file (relative to the claude dir) may have grown, shrunk or been replaced:
    /// the loop reads what is new and feeds it as [`Input::Transcript`] chunks, because only
    /// it knows how far each file was fed.
    FileChanged(String),
    /// The clock moved: the loop feeds [`Input::Tick`] only when the core's timer is due.
    Tick,
    /// Reconcile an agent; the loop gives the request an id and keeps `reply` in its reply
    /// table until the core's [`headspace_core::Reply`] comes back committed.
    Reconcile {
        /// Agent id, session id or pane.
        agent: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Reply>,
        /// Where the loop tells how far it got, for a `partial` answer.
        progress: Arc<ReconcileProgress>,
    },
}

/// How far a running reconcile got: read while it runs past the request's budget.
#[derive(Debug, Default)]
pub struct ReconcileProgress {
    /// Turns created so far.
    pub created: AtomicU64,
    /// Transcript bytes it has still to read.
    pub remaining: AtomicU64,
}

/// Store health as the writer last saw it.
#[derive(Default)]
pub struct Health {
    /// False while the store refuses writes.
    pub healthy: AtomicBool,
    /// Commands waiting to be written.
    pub backlog: AtomicU64,
    /// About how many bytes they hold ([`headspace_core::store::outage::command_bytes`]).
    pub backlog_bytes: AtomicU64,
}

/// How a loop holds up while the database is away or slow: its limits, and the spool where
/// hooks go past them ([`headspace_core::store::outage`]).
pub struct Shedding {
    /// How much may be held.
    pub limits: headspace_core::store::outage::HoldLimits,
    /// The spool (`None`: nothing is spooled, as in the simulation).
    pub spool: Option<crate::server::spool::Spool>,
}

/// What the driver shares with the rest of the server.
pub struct Shared {
    /// Where committed events go.
    pub hub: Arc<Hub>,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Store health.
    pub health: Arc<Health>,
}

/// Pending reconcile answers, by request id.
type Replies = Arc<Mutex<HashMap<RequestId, oneshot::Sender<Reply>>>>;

/// A read planned, with the progress of the reconcile it belongs to.
type PlannedRead = (ReadPlan, Option<(RequestId, Arc<ReconcileProgress>)>);

/// Reads transcript files for the core, remembering how far each was fed.
struct Reader {
    files: Arc<dyn Files>,
    fed: HashMap<String, (u64, u64)>, // path -> (offset fed up to, inode)
}

/// A read in progress: `path` from `at` to `end`, one chunk at a time.
struct ReadPlan {
    path: String,
    at: u64,
    end: u64,
    ino: u64,
    /// False when the file is gone or refused: nothing is remembered of it.
    exists: bool,
    /// The core's read id, carried by the last chunk.
    read: Option<u64>,
    /// The last chunk was handed out.
    finished: bool,
}

/// What a change notice asks for.
enum Change {
    /// Nothing new.
    None,
    /// The file shrank or was replaced.
    Reset(Input),
    /// New bytes to read.
    Read(ReadPlan),
}

impl Reader {
    /// Plans the answer to the core's read of `rel` from `from`: the bytes to the end, or an
    /// empty read when the file is gone or refused (so the core's read still finishes).
    fn answer(&mut self, rel: &str, from: u64, read: u64) -> ReadPlan {
        match self.files.stat(rel) {
            Some(stat) => self.plan(rel, stat, from, Some(read)),
            None => {
                debug!("[TRANSCRIPT] cannot open {rel}");
                ReadPlan {
                    exists: false,
                    ..self.plan(rel, FileStat { len: from, ino: 0 }, from, Some(read))
                }
            }
        }
    }

    fn plan(&self, rel: &str, stat: FileStat, from: u64, read: Option<u64>) -> ReadPlan {
        ReadPlan {
            path: rel.to_string(),
            at: from.min(stat.len),
            end: stat.len,
            ino: stat.ino,
            exists: true,
            read,
            finished: false,
        }
    }

    /// The next chunk of a planned read, `None` once its last chunk (the one carrying the
    /// read id, possibly empty) was handed out. The caller feeds each chunk to the core
    /// before asking for the next.
    fn next_chunk(&mut self, plan: &mut ReadPlan) -> Option<Input> {
        if plan.finished {
            return None;
        }
        let want = (plan.end - plan.at).min(READ_CHUNK);
        let data = if want == 0 {
            Vec::new()
        } else {
            match self.files.read_at(&plan.path, plan.at, want) {
                Ok(d) => d,
                Err(e) => {
                    warn!("[TRANSCRIPT] read error in {}: {e}", plan.path);
                    Vec::new()
                }
            }
        };
        let n = data.len() as u64;
        let offset = plan.at;
        plan.at += n;
        plan.finished = n == 0 || plan.at >= plan.end;
        if plan.exists {
            self.fed.insert(plan.path.clone(), (plan.at, plan.ino));
        }
        Some(Input::Transcript {
            path: plan.path.clone(),
            offset,
            data,
            read: if plan.finished { plan.read } else { None },
        })
    }

    /// A change notice: new bytes are read; a shrunk or replaced file is reset.
    fn changed(&mut self, rel: &str) -> Change {
        let Some(stat) = self.files.stat(rel) else {
            return Change::None;
        };
        match self.fed.get(rel).copied() {
            Some((fed, ino)) if stat.len < fed || (ino != 0 && stat.ino != ino) => {
                self.fed.insert(rel.to_string(), (0, stat.ino));
                Change::Reset(Input::TranscriptReset {
                    path: rel.to_string(),
                })
            }
            Some((fed, _)) if stat.len == fed => Change::None,
            Some((fed, _)) => Change::Read(self.plan(rel, stat, fed, None)),
            None => Change::Read(self.plan(rel, stat, 0, None)),
        }
    }
}

/// The loop that owns the core: it turns messages into inputs, feeds them with the clock's
/// time, reads transcripts when the core asks, and hands every other command to the writer.
struct CoreLoop {
    core: Core,
    reader: Reader,
    recorder: Option<Recorder>,
    clock: Arc<dyn Clock>,
    next_request: RequestId,
    writer: mpsc::UnboundedSender<Vec<Command>>,
    replies: Replies,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    /// Running reconciles' progress, by request.
    progress: HashMap<RequestId, Arc<ReconcileProgress>>,
    /// Limits and spool.
    shedding: Shedding,
    /// True while the loop holds all it may: hooks go to the spool, transcript notices wait.
    spooling: bool,
    /// Transcripts that grew while spooling, read once it ends (from how far they were fed).
    deferred: std::collections::BTreeSet<String>,
}

impl CoreLoop {
    /// Records `input` (when recording) and hands it to the core.
    fn handle(&mut self, now: Timestamp, input: Input) {
        if let Some(r) = self.recorder.as_mut() {
            r.record(now, &input);
        }
        self.core.handle(now, input);
    }

    fn feed(&mut self, input: Input) {
        let now = self.clock.now();
        self.handle(now, input);
        let mut batch = Vec::new();
        let mut reads = std::collections::VecDeque::new();
        self.drain_core(&mut batch, &mut reads);
        while let Some((mut plan, progress)) = reads.pop_front() {
            while let Some(input) = self.reader.next_chunk(&mut plan) {
                let n = match &input {
                    Input::Transcript { data, .. } => data.len() as u64,
                    _ => 0,
                };
                self.handle(now, input);
                if let Some((request, p)) = &progress {
                    p.remaining
                        .fetch_sub(n.min(p.remaining.load(Relaxed)), Relaxed);
                    if let Some(c) = self.core.reconcile_created(*request) {
                        p.created.store(c, Relaxed);
                    }
                }
                self.drain_core(&mut batch, &mut reads);
                // A long read (a large transcript, every file after a restart) hands its writes
                // over as it goes, at the writer's pace: it never holds them all.
                if batch.len() >= READ_BATCH {
                    self.send_batch(&mut batch);
                    self.pace();
                }
            }
            if let Some((_, p)) = &progress {
                // What a short read left unread is not coming.
                p.remaining
                    .fetch_sub((plan.end - plan.at).min(p.remaining.load(Relaxed)), Relaxed);
            }
        }
        self.send_batch(&mut batch);
    }

    /// Takes the core's commands in order: reads are planned (every read asked for at once is
    /// planned before any is read, so that a reconcile's progress counts the bytes of all its
    /// files), everything else goes to `batch`.
    fn drain_core(
        &mut self,
        batch: &mut Vec<Command>,
        reads: &mut std::collections::VecDeque<PlannedRead>,
    ) {
        while let Some(cmd) = self.core.poll_command() {
            match cmd {
                Command::ReadTranscript { path, from, read } => {
                    let plan = self.reader.answer(&path, from, read);
                    let progress = self.reading_for(read, &plan);
                    reads.push_back((plan, progress));
                }
                other => batch.push(other),
            }
        }
    }

    /// Hands `batch` to the writer (emptying it), counted in the backlog.
    fn send_batch(&mut self, batch: &mut Vec<Command>) {
        if batch.is_empty() {
            return;
        }
        let commands = std::mem::take(batch);
        let bytes: u64 = commands
            .iter()
            .map(headspace_core::store::outage::command_bytes)
            .sum();
        self.health
            .backlog
            .fetch_add(commands.len() as u64, Relaxed);
        self.health.backlog_bytes.fetch_add(bytes, Relaxed);
        let _ = self.writer.send(commands);
    }

    /// What is held now (commands the writer has not committed, inputs waiting for evicted
    /// agents' rows): how many, and about how many bytes.
    fn held(&self) -> (u64, u64) {
        let (inputs, input_bytes) = self.core.held_size();
        (
            self.health.backlog.load(Relaxed) + inputs,
            self.health.backlog_bytes.load(Relaxed) + input_bytes,
        )
    }

    /// Waits while the database takes writes but what is held is past half the limits: a
    /// long read (a large transcript, the spool's replay) then goes at the writer's pace.
    /// With the database away nothing is waited for: past the limits the loop spools.
    fn pace(&self) {
        if self.shedding.spool.is_none() {
            return;
        }
        let limits = self.shedding.limits;
        while self.health.healthy.load(Relaxed) {
            let (count, bytes) = self.held();
            if !limits.exceeded(count * 2, bytes * 2) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Starts spooling when what is held is past the limits (the database away, or too slow
    /// for what comes): from then on nothing more is held ([`headspace_core::store::outage`]).
    fn spool_if_full(&mut self) {
        if self.spooling || self.shedding.spool.is_none() {
            return;
        }
        let (count, bytes) = self.held();
        if !self.shedding.limits.exceeded(count, bytes) {
            return;
        }
        warn!(
            "[STORE] {} MB ({count} items) wait for the database: holding no more. Hooks go to \
             the spool, transcripts are read once it has caught up",
            bytes >> 20
        );
        self.spooling = true;
        self.metrics.sheddings.fetch_add(1, Relaxed);
    }

    /// Ends spooling once what is held is down to half the limits: the spooled hooks are fed
    /// in order, then the transcripts that grew meanwhile are read.
    fn unspool_if_caught_up(&mut self) {
        if !self.spooling {
            return;
        }
        let (count, bytes) = self.held();
        if self.shedding.limits.exceeded(count * 2, bytes * 2) {
            return;
        }
        self.spooling = false;
        let replayed = self.replay_spool();
        if self.spooling {
            return; // full again while replaying: the rest waits in the spool
        }
        for rel in std::mem::take(&mut self.deferred) {
            self.on_file_changed(rel);
            if self.spooling {
                break;
            }
        }
        info!("[STORE] the database caught up: {replayed} spooled hook(s) replayed");
    }

    fn spool_hook(&mut self, agent: AgentKind, event: Option<&str>, body: &[u8]) {
        let now = self.clock.now();
        if let Some(spool) = &mut self.shedding.spool {
            if let Err(e) = spool.append(now, agent, event, body) {
                tracing::error!(
                    "[SPOOL] cannot spool a hook ({e}); it is lost unless its transcript has it"
                );
            }
        }
    }

    fn sync_spool(&mut self) {
        if let Some(spool) = &mut self.shedding.spool {
            if let Err(e) = spool.sync() {
                tracing::error!("[SPOOL] cannot sync the spool: {e}");
            }
        }
    }

    /// Feeds the spooled hooks (a spool a dead server left, or this one's) in order, paced;
    /// how many. Hooks not fed when spooling starts again go back to the spool, first.
    fn replay_spool(&mut self) -> u64 {
        let taken = match self.shedding.spool.as_mut().map(|s| s.take()) {
            Some(Ok(Some(t))) => t,
            Some(Err(e)) => {
                tracing::error!("[SPOOL] cannot read the spool: {e}");
                return 0;
            }
            _ => return 0,
        };
        let hooks = match taken.hooks() {
            Ok(h) => h,
            Err(e) => {
                tracing::error!("[SPOOL] cannot read the spool: {e}");
                return 0;
            }
        };
        let mut n = 0;
        for h in hooks {
            // A spool names the kinds it knew; one this version does not is Claude Code's.
            let agent = h
                .agent
                .as_deref()
                .and_then(|a| AgentKind::from_name(a).ok())
                .unwrap_or_default();
            if self.spooling {
                self.spool_hook(agent, h.event.as_deref(), h.body.as_bytes());
                continue;
            }
            self.pace();
            self.feed(Input::Hook {
                agent,
                event: h.event,
                body: h.body.into_bytes(),
            });
            self.spool_if_full();
            n += 1;
        }
        self.sync_spool();
        taken.done();
        n
    }

    /// The progress of the reconcile a planned read belongs to, its bytes counted in.
    fn reading_for(
        &mut self,
        read: u64,
        plan: &ReadPlan,
    ) -> Option<(RequestId, Arc<ReconcileProgress>)> {
        let request = self.core.read_reconcile(read)?;
        let p = self.progress.get(&request)?.clone();
        let to_read = plan.end - plan.at;
        match self.core.rescan_limit(read) {
            // A re-read's bytes up to its limit were counted when the reconcile began: only
            // what the file grew since is added, and what it shrank by is taken off.
            Some(limit) => {
                p.remaining
                    .fetch_add(plan.end.saturating_sub(limit), Relaxed);
                let gone = limit.saturating_sub(plan.end);
                p.remaining
                    .fetch_sub(gone.min(p.remaining.load(Relaxed)), Relaxed);
            }
            None => {
                p.remaining.fetch_add(to_read, Relaxed);
            }
        }
        Some((request, p))
    }

    /// A transcript may have changed: what is new is read and fed, at the writer's pace.
    fn on_file_changed(&mut self, rel: String) {
        match self.reader.changed(&rel) {
            Change::None => {}
            Change::Reset(input) => self.feed(input),
            Change::Read(mut plan) => {
                while let Some(input) = self.reader.next_chunk(&mut plan) {
                    self.pace();
                    self.feed(input);
                }
            }
        }
    }

    fn on_msg(&mut self, msg: Msg) {
        self.unspool_if_caught_up();
        if self.spooling {
            use headspace_core::store::outage::{while_shedding, WhileShedding};
            match &msg {
                Msg::Input(input) => match while_shedding(input) {
                    WhileShedding::Spool => {
                        if let Input::Hook { agent, event, body } = input {
                            self.spool_hook(*agent, event.as_deref(), body);
                        }
                        return;
                    }
                    WhileShedding::Drop => return,
                    WhileShedding::Feed => {}
                },
                Msg::FileChanged(rel) => {
                    self.deferred.insert(rel.clone());
                    return;
                }
                Msg::Tick => self.sync_spool(),
                Msg::Reconcile { .. } => {}
            }
        }
        self.dispatch_msg(msg);
        self.spool_if_full();
    }

    fn dispatch_msg(&mut self, msg: Msg) {
        match msg {
            Msg::Input(input) => self.feed(input),
            Msg::FileChanged(rel) => self.on_file_changed(rel),
            Msg::Tick => {
                if let Some(timer) = self.core.next_timer().filter(|t| t.at <= self.clock.now()) {
                    debug!(
                        "[TIMER] {} due for agent {}",
                        timer.reason.as_str(),
                        timer.agent
                    );
                    self.feed(Input::Tick);
                }
            }
            Msg::Reconcile {
                agent,
                reply,
                progress,
            } => {
                let request = self.next_request;
                self.next_request += 1;
                self.replies.lock().expect("replies").insert(request, reply);
                self.metrics.reconciles.fetch_add(1, Relaxed);
                // Finished reconciles' progress is dropped as new ones come.
                let core = &self.core;
                self.progress
                    .retain(|r, _| core.reconcile_created(*r).is_some());
                self.progress.insert(request, progress.clone());
                self.feed(Input::Reconcile { agent, request });
                // The re-read from byte 0 waits for the agent's stored rows: counted now.
                progress
                    .remaining
                    .fetch_add(self.core.reconcile_rescan_bytes(request), Relaxed);
            }
        }
    }
}

/// Where the core's loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreHome {
    /// Its own OS thread (production: a long transcript read never stalls the runtime).
    Thread,
    /// A task on the current runtime (the simulation: one thread, deterministic).
    Task,
}

/// Starts the core's loop and the writer task; returns the sender of messages.
pub fn start(
    config: headspace_core::Config,
    world: &World,
    snapshot: headspace_core::model::Snapshot,
    shared: Shared,
    recorder: Option<Recorder>,
    home: CoreHome,
    shedding: Shedding,
) -> mpsc::UnboundedSender<Msg> {
    let Shared {
        hub,
        metrics,
        health,
    } = shared;
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let (wtx, wrx) = mpsc::unbounded_channel::<Vec<Command>>();
    let replies: Replies = Arc::default();
    tokio::spawn(writer(
        world.store.clone(),
        wrx,
        hub,
        metrics.clone(),
        health.clone(),
        replies.clone(),
        tx.clone(),
    ));
    let mut lp = CoreLoop {
        core: Core::new(config),
        reader: Reader {
            files: world.files.clone(),
            fed: HashMap::new(),
        },
        recorder,
        clock: world.clock.clone(),
        next_request: 1,
        writer: wtx,
        replies,
        health,
        metrics,
        progress: HashMap::new(),
        shedding,
        spooling: false,
        deferred: Default::default(),
    };
    // The core's timers (gaps, send timeouts) are checked four times a second.
    let ticker = tx.clone();
    tokio::spawn(async move {
        let mut t = tokio::time::interval(std::time::Duration::from_millis(250));
        loop {
            t.tick().await;
            if ticker.send(Msg::Tick).is_err() {
                return;
            }
        }
    });
    match home {
        CoreHome::Thread => {
            std::thread::Builder::new()
                .name("headspace-core".into())
                .spawn(move || {
                    // A bug in the core must not leave a server that answers hooks and drops
                    // them: end the process loudly; a restart rebuilds everything from store
                    // and transcripts.
                    let default = std::panic::take_hook();
                    std::panic::set_hook(Box::new(move |info| {
                        default(info);
                        if std::thread::current().name() == Some("headspace-core") {
                            tracing::error!("[CORE] the core panicked; exiting so a restart recovers from the store: {info}");
                            std::process::exit(70);
                        }
                    }));
                    lp.feed(Input::Restore(snapshot));
                    // Hooks a server spooled before it stopped.
                    let replayed = lp.replay_spool();
                    if replayed > 0 {
                        info!("[SPOOL] {replayed} hook(s) spooled before the restart replayed");
                    }
                    while let Some(msg) = rx.blocking_recv() {
                        lp.on_msg(msg);
                    }
                })
                .expect("core thread");
        }
        CoreHome::Task => {
            lp.feed(Input::Restore(snapshot));
            tokio::spawn(async move {
                while let Some(msg) = rx.recv().await {
                    lp.on_msg(msg);
                }
            });
        }
    }
    tx
}

/// Commits batches, retrying with backoff while the database is down, then publishes.
async fn writer(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<Vec<Command>>,
    hub: Arc<Hub>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    replies: Replies,
    core: mpsc::UnboundedSender<Msg>,
) {
    while let Some(mut batch) = rx.recv().await {
        while batch.len() < 5_000 {
            match rx.try_recv() {
                Ok(more) => batch.extend(more),
                Err(_) => break,
            }
        }
        // Writes are moved out, not copied: a batch may hold thousands of turns.
        let queued = batch.len() as u64;
        let queued_bytes: u64 = batch
            .iter()
            .map(headspace_core::store::outage::command_bytes)
            .sum();
        let (mut writes, mut rest) = (Vec::new(), Vec::new());
        for c in batch {
            match c {
                Command::Store(w) => writes.push(w),
                other => rest.push(other),
            }
        }
        // A store shared with hubs (an edge's) commits the batch's events with its writes.
        let events: Vec<&headspace_core::Event> = rest
            .iter()
            .filter_map(|c| match c {
                Command::Publish(e) => Some(e),
                _ => None,
            })
            .collect();
        let mut backoff = store_backoff();
        loop {
            match store.apply_announcing(&writes, &events).await {
                Ok(()) => {
                    if !health.healthy.swap(true, Relaxed) {
                        info!(
                            "[STORE] the database is back: {} writes committed",
                            writes.len()
                        );
                    }
                    break;
                }
                Err(e) => {
                    if health.healthy.swap(false, Relaxed) {
                        warn!("[STORE] write failed, retrying until the database is back: {e}");
                    } else {
                        debug!("[STORE] write failed again: {e}");
                    }
                    metrics.store_retries.fetch_add(1, Relaxed);
                    backoff.pause().await;
                }
            }
        }
        for w in &writes {
            if let Write::Turn(t) = w {
                match t.source {
                    headspace_core::model::TurnSource::Hook => {
                        metrics.turns_hook.fetch_add(1, Relaxed)
                    }
                    headspace_core::model::TurnSource::Transcript => {
                        metrics.turns_transcript.fetch_add(1, Relaxed)
                    }
                };
            }
        }
        health.backlog.fetch_sub(queued, Relaxed);
        health.backlog_bytes.fetch_sub(
            queued_bytes.min(health.backlog_bytes.load(Relaxed)),
            Relaxed,
        );
        for cmd in rest {
            match cmd {
                Command::Publish(e) => {
                    hub.publish(e.name, &e.data);
                }
                Command::GapDetected { .. } => {
                    metrics.gaps.fetch_add(1, Relaxed);
                }
                Command::Reply { request, reply } => {
                    if let Some(tx) = replies.lock().expect("replies").remove(&request) {
                        let _ = tx.send(reply);
                    }
                }
                // After the writes before it are committed, so the rows are whole.
                Command::LoadAgents { ids } => {
                    let rows = load_agents(&*store, &ids, &health).await;
                    let _ = core.send(Msg::Input(Input::AgentsLoaded(rows)));
                }
                _ => {}
            }
        }
    }
}

/// Some agents' rows, retried with backoff while the database is down (the core holds its
/// inputs until they come).
async fn load_agents(
    store: &dyn Store,
    ids: &[u64],
    health: &Health,
) -> headspace_core::model::Snapshot {
    let mut backoff = store_backoff();
    loop {
        match store.load_agents(ids).await {
            Ok(rows) => return rows,
            Err(e) => {
                if health.healthy.swap(false, Relaxed) {
                    warn!("[STORE] cannot load agents {ids:?} back, retrying until the database is back: {e}");
                }
                backoff.pause().await;
            }
        }
    }
}

/// The pause between two tries of a store call while the database is down: 50 ms, doubling
/// up to 2 s.
fn store_backoff() -> Backoff {
    Backoff::new(
        std::time::Duration::from_millis(50),
        std::time::Duration::from_secs(2),
    )
}
