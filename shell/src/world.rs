//! The shell's adapters to the outside world, each behind a small trait so the simulation
//! (`headspace-sim`) can run the real server with simulated ones: the clock, the store, the
//! transcript files and the tmux panes. Production uses [`SystemClock`], [`PgStore`](crate::pgstore::PgStore),
//! [`DiskFiles`] and [`TmuxPanes`].

use crate::pgstore::{AgentView, StoreError};
use headspace_core::model::{Snapshot, TurnRow};
use headspace_core::{Reply, Timestamp, Write};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, as the object-safe traits below return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The wall clock, in epoch milliseconds.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The operating system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(d.as_millis() as i64)
    }
}

/// How a reconcile that ran under the lock ended.
#[derive(Debug)]
pub enum Waited {
    /// The core answered.
    Reply(Reply),
    /// The core's loop is gone.
    CoreStopped,
    /// The budget ran out; the reconcile goes on behind.
    StillRunning,
}

/// The durable store: applies the core's writes and answers the API's reads.
pub trait Store: Send + Sync {
    /// Checks the store answers.
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Commits a batch of writes in one transaction (idempotent; all or nothing).
    fn apply<'a>(&'a self, writes: &'a [Write]) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Everything the core needs to rebuild itself.
    fn snapshot(&self) -> BoxFuture<'_, Result<Snapshot, StoreError>>;
    /// Some agents' rows, tasks and turns (no offsets), for `Input::AgentsLoaded`.
    fn load_agents<'a>(&'a self, ids: &'a [u64]) -> BoxFuture<'a, Result<Snapshot, StoreError>>;
    /// All agents with what their cards show.
    fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentView>, StoreError>>;
    /// One agent by id.
    fn agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>>;
    /// The panes of agents still running.
    fn panes(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;
    /// An agent by id, session id (current or past) or pane.
    fn resolve<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<Option<u64>, StoreError>>;
    /// Runs `f` holding the agent's store-wide reconcile lock; `None` when another holds it.
    fn with_reconcile_lock<'a>(
        &'a self,
        agent_id: u64,
        f: BoxFuture<'a, Waited>,
    ) -> BoxFuture<'a, Result<Option<Waited>, StoreError>>;
    /// An agent's turns ordered by (timestamp, id), after the turn `after` in that order.
    fn turns(
        &self,
        agent_id: u64,
        after: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>>;
}

/// What [`Files::stat`] tells of a transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// Its length in bytes.
    pub len: u64,
    /// Its identity (the inode): a replaced file has another.
    pub ino: u64,
}

/// The transcript files under the claude dir, named by their path relative to it.
pub trait Files: Send + Sync {
    /// Length and identity, or `None` when the file is not there.
    fn stat(&self, rel: &str) -> Option<FileStat>;
    /// Up to `max` bytes from `offset`.
    fn read_at(&self, rel: &str, offset: u64, max: u64) -> std::io::Result<Vec<u8>>;
    /// Every transcript (`projects/<dir>/*.jsonl`), in path order. Async: a directory scan
    /// must not hold up the runtime.
    fn list(&self) -> BoxFuture<'_, Vec<(String, FileStat)>>;
}

/// The real file system under a claude dir.
pub struct DiskFiles {
    /// The claude dir.
    pub claude_dir: PathBuf,
}

impl Files for DiskFiles {
    fn stat(&self, rel: &str) -> Option<FileStat> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(self.claude_dir.join(rel)).ok()?;
        Some(FileStat {
            len: m.len(),
            ino: m.ino(),
        })
    }

    fn read_at(&self, rel: &str, offset: u64, max: u64) -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = std::fs::File::open(self.claude_dir.join(rel))?;
        f.seek(SeekFrom::Start(offset))?;
        let mut data = Vec::new();
        f.take(max).read_to_end(&mut data)?;
        Ok(data)
    }

    fn list(&self) -> BoxFuture<'_, Vec<(String, FileStat)>> {
        let dir = self.claude_dir.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || scan(&dir))
                .await
                .unwrap_or_default()
        })
    }
}

/// Lists `projects/<dir>/*.jsonl` under `claude_dir` with their stats, in path order.
fn scan(claude_dir: &std::path::Path) -> Vec<(String, FileStat)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(claude_dir.join("projects")) else {
        return out;
    };
    for d in dirs.flatten() {
        let Ok(files) = std::fs::read_dir(d.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let (Ok(rel), Ok(m)) = (p.strip_prefix(claude_dir), f.metadata()) else {
                continue;
            };
            out.push((
                rel.to_string_lossy().into_owned(),
                FileStat {
                    len: m.len(),
                    ino: m.ino(),
                },
            ));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The agents' terminal panes.
pub trait Panes: Send + Sync {
    /// The last `lines` lines of a pane, or `None` when it cannot be captured.
    fn capture<'a>(&'a self, pane: &'a str, lines: u32) -> BoxFuture<'a, Option<String>>;
    /// Types `text` into a pane and presses Enter, verified.
    fn send<'a>(
        &'a self,
        pane: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<crate::tmux::Sent, String>>;
    /// Presses Escape in a pane, to stop the agent's turn. By default there is no way to.
    fn interrupt<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { Err(format!("cannot press keys in pane {pane} here")) })
    }
    /// Picks option `n` (numbered from 1, labelled `label`) of the dialog on a pane. By
    /// default the number is typed like any text.
    fn choose<'a>(
        &'a self,
        pane: &'a str,
        n: usize,
        label: &'a str,
    ) -> BoxFuture<'a, Result<crate::tmux::Sent, String>> {
        let _ = label;
        Box::pin(async move { self.send(pane, &n.to_string()).await })
    }
}

/// tmux, on the user's server or a named socket.
pub struct TmuxPanes {
    /// `tmux -L` socket name; the default server when `None`.
    pub socket: Option<String>,
}

impl Panes for TmuxPanes {
    fn capture<'a>(&'a self, pane: &'a str, lines: u32) -> BoxFuture<'a, Option<String>> {
        Box::pin(crate::tmux::capture(self.socket.as_deref(), pane, lines))
    }

    fn send<'a>(
        &'a self,
        pane: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<crate::tmux::Sent, String>> {
        Box::pin(crate::tmux::send(self.socket.as_deref(), pane, text))
    }

    fn choose<'a>(
        &'a self,
        pane: &'a str,
        n: usize,
        label: &'a str,
    ) -> BoxFuture<'a, Result<crate::tmux::Sent, String>> {
        Box::pin(crate::tmux::choose(self.socket.as_deref(), pane, n, label))
    }

    fn interrupt<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(crate::tmux::interrupt(self.socket.as_deref(), pane))
    }
}

/// The adapters a server runs with.
#[derive(Clone)]
pub struct World {
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// The store.
    pub store: Arc<dyn Store>,
    /// The transcripts.
    pub files: Arc<dyn Files>,
    /// The panes.
    pub panes: Arc<dyn Panes>,
}
