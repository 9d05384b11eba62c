//! The driver: one thread owns the core, turns messages into inputs, reads transcript files
//! when the core asks, and hands every other command, in order, to the writer. The writer
//! commits the store writes of a batch in one transaction (retrying until the database takes
//! them), and only then publishes the batch's events and replies.

use crate::metrics::Metrics;
use crate::pgstore::PgStore;
use crate::record::Recorder;
use crate::sse::Hub;
use headspace_core::io::{RequestId, Write};
use headspace_core::{Command, Core, Input, Reply, Timestamp};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

/// What the rest of the server tells the driver.
pub enum Msg {
    /// A hook body (already checked to parse).
    Hook {
        /// The event named by the route.
        event: Option<String>,
        /// The body.
        body: Vec<u8>,
    },
    /// A transcript file (relative to the claude dir) may have grown, shrunk or been replaced.
    FileChanged(String),
    /// A pane capture from the watchdog.
    Pane {
        /// The pane id.
        pane: String,
        /// The screen.
        text: String,
    },
    /// Time passed: the core's timers run if due.
    Tick,
    /// Text is about to be typed into an agent's pane: (agent, text).
    Sent(String, String),
    /// Reconcile an agent; the reply comes after the recovered turns are committed.
    Reconcile {
        /// Agent id, session id or pane.
        agent: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Reply>,
    },
}

/// Store health as the writer last saw it.
#[derive(Default)]
pub struct Health {
    /// False while the store refuses writes.
    pub healthy: AtomicBool,
    /// Commands waiting to be written.
    pub backlog: AtomicU64,
    /// The last store error.
    pub last_error: Mutex<Option<String>>,
}

/// What the driver shares with the rest of the server.
pub struct Shared {
    /// The store the writer commits to.
    pub store: PgStore,
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
    claude_dir: PathBuf,
    fed: HashMap<String, (u64, u64)>, // path -> (offset fed up to, inode)
}

const CHUNK: u64 = 4 << 20;

impl Reader {
    /// Reads `rel` from `from` to its end, in chunks; the last chunk carries `read`.
    fn read(&mut self, rel: &str, from: u64, read: Option<u64>) -> Vec<Input> {
        let path = self.claude_dir.join(rel);
        let mut inputs = Vec::new();
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                debug!("[TRANSCRIPT] cannot open {rel}: {e}");
                if read.is_some() {
                    inputs.push(Input::Transcript {
                        path: rel.to_string(),
                        offset: from,
                        data: Vec::new(),
                        read,
                    });
                }
                return inputs;
            }
        };
        let meta = file.metadata().ok();
        let len = meta.as_ref().map_or(0, |m| m.len());
        let ino = meta.as_ref().map_or(0, |m| m.ino());
        let mut at = from.min(len);
        if file.seek(SeekFrom::Start(at)).is_err() {
            return inputs;
        }
        loop {
            let want = (len - at).min(CHUNK);
            let mut data = vec![0u8; want as usize];
            let n = match file.read(&mut data) {
                Ok(n) => n,
                Err(e) => {
                    warn!("[TRANSCRIPT] read error in {rel}: {e}");
                    0
                }
            };
            data.truncate(n);
            let last = n == 0 || at + n as u64 >= len;
            inputs.push(Input::Transcript {
                path: rel.to_string(),
                offset: at,
                data,
                read: if last { read } else { None },
            });
            at += n as u64;
            if last {
                break;
            }
        }
        self.fed.insert(rel.to_string(), (at, ino));
        inputs
    }

    /// A change notice: new bytes are read; a shrunk or replaced file is reset.
    fn changed(&mut self, rel: &str) -> Vec<Input> {
        let path = self.claude_dir.join(rel);
        let Ok(meta) = std::fs::metadata(&path) else {
            return Vec::new();
        };
        match self.fed.get(rel).copied() {
            Some((fed, ino)) if meta.len() < fed || (ino != 0 && meta.ino() != ino) => {
                self.fed.insert(rel.to_string(), (0, meta.ino()));
                vec![Input::TranscriptReset {
                    path: rel.to_string(),
                }]
            }
            Some((fed, _)) if meta.len() == fed => Vec::new(),
            Some((fed, _)) => self.read(rel, fed, None),
            None => self.read(rel, 0, None),
        }
    }
}

/// Starts the driver thread and the writer task; returns the sender of messages.
pub fn start(
    config: headspace_core::Config,
    claude_dir: PathBuf,
    snapshot: headspace_core::model::Snapshot,
    shared: Shared,
    recorder: Option<Recorder>,
) -> mpsc::UnboundedSender<Msg> {
    let Shared {
        store,
        hub,
        metrics,
        health,
    } = shared;
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let (wtx, wrx) = mpsc::unbounded_channel::<Vec<Command>>();
    let replies: Replies = Arc::default();
    tokio::spawn(writer(
        store,
        wrx,
        hub,
        metrics.clone(),
        health.clone(),
        replies.clone(),
    ));
    std::thread::Builder::new()
        .name("headspace-core".into())
        .spawn(move || {
            // A bug in the core must not leave a server that answers hooks and drops them:
            // end the process loudly; a restart rebuilds everything from store and transcripts.
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                default(info);
                if std::thread::current().name() == Some("headspace-core") {
                    tracing::error!("[CORE] the core panicked; exiting so a restart recovers from the store: {info}");
                    std::process::exit(70);
                }
            }));
            let mut core = Core::new(config);
            let mut reader = Reader {
                claude_dir,
                fed: HashMap::new(),
            };
            let mut recorder = recorder;
            let mut next_request: RequestId = 1;
            let feed = |core: &mut Core,
                        input: Input,
                        reader: &mut Reader,
                        recorder: &mut Option<Recorder>| {
                let now = now();
                if let Some(r) = recorder.as_mut() {
                    r.record(now, &input);
                }
                core.handle(now, input);
                let mut batch = Vec::new();
                while let Some(cmd) = core.poll_command() {
                    match cmd {
                        Command::ReadTranscript { path, from, read } => {
                            for input in reader.read(&path, from, Some(read)) {
                                if let Some(r) = recorder.as_mut() {
                                    r.record(now, &input);
                                }
                                core.handle(now, input);
                            }
                        }
                        other => batch.push(other),
                    }
                }
                if !batch.is_empty() {
                    health.backlog.fetch_add(batch.len() as u64, Relaxed);
                    let _ = wtx.send(batch);
                }
            };
            feed(
                &mut core,
                Input::Restore(snapshot),
                &mut reader,
                &mut recorder,
            );
            while let Some(msg) = rx.blocking_recv() {
                match msg {
                    Msg::Hook { event, body } => feed(
                        &mut core,
                        Input::Hook { event, body },
                        &mut reader,
                        &mut recorder,
                    ),
                    Msg::FileChanged(rel) => {
                        for input in reader.changed(&rel) {
                            feed(&mut core, input, &mut reader, &mut recorder);
                        }
                    }
                    Msg::Pane { pane, text } => feed(
                        &mut core,
                        Input::Pane { pane, text },
                        &mut reader,
                        &mut recorder,
                    ),
                    Msg::Sent(agent, text) => feed(
                        &mut core,
                        Input::Sent {
                            agent,
                            text: Some(text),
                        },
                        &mut reader,
                        &mut recorder,
                    ),
                    Msg::Tick => {
                        if core.poll_timeout().is_some_and(|t| t <= now()) {
                            feed(&mut core, Input::Tick, &mut reader, &mut recorder);
                        }
                    }
                    Msg::Reconcile { agent, reply } => {
                        let request = next_request;
                        next_request += 1;
                        replies.lock().expect("replies").insert(request, reply);
                        metrics.reconciles.fetch_add(1, Relaxed);
                        feed(
                            &mut core,
                            Input::Reconcile { agent, request },
                            &mut reader,
                            &mut recorder,
                        );
                    }
                }
            }
        })
        .expect("core thread");
    tx
}

fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp(d.as_millis() as i64)
}

/// Commits batches, retrying with backoff while the database is down, then publishes.
async fn writer(
    store: PgStore,
    mut rx: mpsc::UnboundedReceiver<Vec<Command>>,
    hub: Arc<Hub>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    replies: Replies,
) {
    while let Some(mut batch) = rx.recv().await {
        while batch.len() < 5_000 {
            match rx.try_recv() {
                Ok(more) => batch.extend(more),
                Err(_) => break,
            }
        }
        let writes: Vec<Write> = batch
            .iter()
            .filter_map(|c| {
                if let Command::Store(w) = c {
                    Some(w.clone())
                } else {
                    None
                }
            })
            .collect();
        let mut delay = std::time::Duration::from_millis(50);
        loop {
            match store.apply(&writes).await {
                Ok(()) => {
                    health.healthy.store(true, Relaxed);
                    break;
                }
                Err(e) => {
                    if health.healthy.swap(false, Relaxed) {
                        warn!("[STORE] write failed, retrying until the database is back: {e}");
                    }
                    *health.last_error.lock().expect("health") = Some(e.to_string());
                    metrics.store_retries.fetch_add(1, Relaxed);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(std::time::Duration::from_secs(2));
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
        health.backlog.fetch_sub(batch.len() as u64, Relaxed);
        for cmd in batch {
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
                _ => {}
            }
        }
    }
}
