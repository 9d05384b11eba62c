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
use headspace_core::{Command, Core, Input, Reply, Timestamp};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

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
        loop {
            let cmds: Vec<Command> = std::iter::from_fn(|| self.core.poll_command()).collect();
            if cmds.is_empty() {
                break;
            }
            // Every read asked for at once is planned first, so that a reconcile's progress
            // counts the bytes of all its files. Commands keep their order.
            let mut steps = Vec::new();
            for cmd in cmds {
                match cmd {
                    Command::ReadTranscript { path, from, read } => {
                        let plan = self.reader.answer(&path, from, read);
                        let progress = self.reading_for(read, &plan);
                        steps.push(Err((plan, progress)));
                    }
                    other => steps.push(Ok(other)),
                }
            }
            for step in steps {
                match step {
                    Ok(cmd) => batch.push(cmd),
                    Err((mut plan, progress)) => {
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
                        }
                        if let Some((_, p)) = &progress {
                            // What a short read left unread is not coming.
                            p.remaining.fetch_sub(
                                (plan.end - plan.at).min(p.remaining.load(Relaxed)),
                                Relaxed,
                            );
                        }
                    }
                }
            }
        }
        if !batch.is_empty() {
            self.health.backlog.fetch_add(batch.len() as u64, Relaxed);
            let _ = self.writer.send(batch);
        }
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

    fn on_msg(&mut self, msg: Msg) {
        match msg {
            Msg::Input(input) => self.feed(input),
            Msg::FileChanged(rel) => match self.reader.changed(&rel) {
                Change::None => {}
                Change::Reset(input) => self.feed(input),
                Change::Read(mut plan) => {
                    while let Some(input) = self.reader.next_chunk(&mut plan) {
                        self.feed(input);
                    }
                }
            },
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
