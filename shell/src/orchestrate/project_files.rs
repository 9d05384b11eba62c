//! The orchestration files of one project on disk: reading them with errors that name the
//! file, writing them atomically, the lock that serialises every read-modify-write, backups,
//! finding the active run, and the runner files.
//!
//! | file | owner |
//! |---|---|
//! | `.specflow/orchestration-state.json` | the project (specflow's sub-commands) |
//! | `.specflow/workflows/orchestration-{id}.json` | the runner: one run |
//! | `.specflow/workflows/runner-{id}.json` | the runner process: pid and start time |
//! | `.specflow/workflows/workflow-{id}.json` | the runner: one spawned workflow (see [`super::steps`]) |
//! | `.specflow/.orchestration.lock` | the lock, held while a file is read, changed and written |

use headspace_core::orchestration::{OrchestrationExecution, OrchestrationState};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

pub use crate::fsutil::{pid_alive, process_identity, with_suffix, write_atomic};

/// The project state, relative to the project.
pub const STATE_FILE: &str = ".specflow/orchestration-state.json";
/// The folder of the runs, runners and workflows, relative to the project.
pub const WORKFLOWS_DIR: &str = ".specflow/workflows";
/// The lock file, relative to the project.
pub const LOCK_FILE: &str = ".specflow/.orchestration.lock";

/// Why a file could not be read or written. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The project folder itself is missing.
    #[error("project {}: no such directory", .0.display())]
    NoProject(PathBuf),
    /// The file does not exist.
    #[error("{}: missing", .0.display())]
    Missing(PathBuf),
    /// The file exists but is not what it should be.
    #[error("{}: corrupt {what}: {detail}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What it should have held ("orchestration state", …).
        what: &'static str,
        /// What is wrong, as the JSON reader said.
        detail: String,
    },
    /// Reading, writing or locking failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl FileError {
    /// Whether the file was missing or unreadable as JSON: the cases a recovery can repair,
    /// unlike an I/O failure.
    pub fn is_recoverable(&self) -> bool {
        matches!(self, FileError::Missing(_) | FileError::Corrupt { .. })
    }

    fn io(path: &Path, source: io::Error) -> FileError {
        FileError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One project's orchestration files.
#[derive(Clone, Debug)]
pub struct ProjectFiles {
    dir: PathBuf,
}

impl ProjectFiles {
    /// The files of the project at `dir` (which need not exist yet; see [`ProjectFiles::open`]).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ProjectFiles { dir: dir.into() }
    }

    /// The files of an existing project folder.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, FileError> {
        let dir = dir.into();
        if !dir.is_dir() {
            return Err(FileError::NoProject(dir));
        }
        Ok(ProjectFiles { dir })
    }

    /// The project folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `.specflow/orchestration-state.json`.
    pub fn state_path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// `.specflow/workflows/`.
    pub fn workflows_dir(&self) -> PathBuf {
        self.dir.join(WORKFLOWS_DIR)
    }

    /// `.specflow/workflows/orchestration-{id}.json`.
    pub fn execution_path(&self, id: &str) -> PathBuf {
        self.workflows_dir()
            .join(format!("orchestration-{id}.json"))
    }

    /// `.specflow/workflows/runner-{id}.json`.
    pub fn runner_path(&self, id: &str) -> PathBuf {
        self.workflows_dir().join(format!("runner-{id}.json"))
    }

    /// Reads the project state.
    pub fn read_state(&self) -> Result<OrchestrationState, FileError> {
        read_json(&self.state_path(), "orchestration state")
    }

    /// Reads run `id`.
    pub fn read_execution(&self, id: &str) -> Result<OrchestrationExecution, FileError> {
        read_json(&self.execution_path(id), "orchestration execution")
    }

    /// Writes the project state atomically (a corrupt file there is backed up first).
    pub fn write_state(&self, state: &OrchestrationState) -> Result<(), FileError> {
        write_json(&self.state_path(), state)
    }

    /// Writes run `execution.id` atomically (a corrupt file there is backed up first).
    pub fn write_execution(&self, execution: &OrchestrationExecution) -> Result<(), FileError> {
        write_json(&self.execution_path(&execution.id), execution)
    }

    /// Takes the project's lock, waiting for it. Every read-modify-write of the files holds
    /// it, in this process and in others; it is released when the guard is dropped, and by
    /// the kernel if the process dies.
    pub fn lock(&self) -> Result<ProjectLock, FileError> {
        let path = self.dir.join(LOCK_FILE);
        let file = open_lock_file(&path)?;
        // flock: per open file, so two guards in one process exclude each other too.
        file.lock().map_err(|e| FileError::io(&path, e))?;
        Ok(ProjectLock { _file: file })
    }

    /// Takes run `id`'s runner lock for as long as the returned guard lives, or `None` when
    /// another process (or another runner in this one) holds it. Unlike a check of the runner
    /// records, this cannot race: two runners started at once cannot both drive the run.
    pub fn try_lock_runner(&self, id: &str) -> Result<Option<ProjectLock>, FileError> {
        let path = self.workflows_dir().join(format!(".runner-{id}.lock"));
        let file = open_lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(ProjectLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(FileError::io(&path, e)),
        }
    }

    /// Every run file, newest first (by `startedAt`, then name), read or with its error.
    pub fn executions(&self) -> Vec<(PathBuf, Result<OrchestrationExecution, FileError>)> {
        let mut out: Vec<_> = list(&self.workflows_dir(), "orchestration-", ".json")
            .into_iter()
            .map(|p| {
                let r = read_json(&p, "orchestration execution");
                (p, r)
            })
            .collect();
        let key = |r: &Result<OrchestrationExecution, FileError>| {
            r.as_ref().ok().and_then(|e| e.started_at_ms()).unwrap_or(0)
        };
        out.sort_by(|a, b| key(&b.1).cmp(&key(&a.1)).then_with(|| b.0.cmp(&a.0)));
        out
    }

    /// The active run: the one the state links to (`orchestration.dashboard.active.id`) if
    /// it is unfinished, else the newest unfinished one. With `include_finished`, the newest
    /// run of any status when none is active. A corrupt run file is an error when no active
    /// run could be found without it, since it may be the active one.
    pub fn find_execution(
        &self,
        include_finished: bool,
    ) -> Result<Option<OrchestrationExecution>, FileError> {
        let linked = self.read_state().ok().and_then(|s| {
            s.orchestration
                .extra
                .get("dashboard")
                .and_then(|d| d.get("active"))
                .and_then(|a| a.get("id"))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        });
        let mut corrupt = None;
        let mut newest_finished = None;
        let mut newest_active = None;
        for (path, r) in self.executions() {
            match r {
                Ok(e) if e.status.is_finished() => {
                    newest_finished.get_or_insert(e);
                }
                Ok(e) => {
                    if linked.as_deref() == Some(e.id.as_str()) {
                        return Ok(Some(e));
                    }
                    newest_active.get_or_insert(e);
                }
                Err(err) => {
                    tracing::warn!(file = %path.display(), "unreadable orchestration run: {err}");
                    corrupt.get_or_insert(err);
                }
            }
        }
        if newest_active.is_some() {
            return Ok(newest_active);
        }
        if let Some(err) = corrupt {
            return Err(err);
        }
        Ok(if include_finished {
            newest_finished
        } else {
            None
        })
    }

    /// Records that this process runs orchestration `id` (pid and start time).
    pub fn write_runner(&self, record: &RunnerRecord) -> Result<(), FileError> {
        write_json(&self.runner_path(&record.orchestration_id), record)
    }

    /// Removes the runner file of orchestration `id`.
    pub fn clear_runner(&self, id: &str) -> Result<(), FileError> {
        let p = self.runner_path(id);
        match fs::remove_file(&p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(FileError::io(&p, e)),
            _ => Ok(()),
        }
    }

    /// At start-up: removes the runner files whose process is gone (orphans of a crash) and
    /// returns the runners still alive. An unreadable runner file is an orphan too.
    pub fn reconcile_runners(&self) -> Result<Vec<RunnerRecord>, FileError> {
        let mut alive = Vec::new();
        for p in list(&self.workflows_dir(), "runner-", ".json") {
            match read_json::<RunnerRecord>(&p, "runner record") {
                Ok(r) if r.is_alive() => alive.push(r),
                other => {
                    tracing::info!(file = %p.display(), "clearing orphaned runner file ({})",
                        other.map(|r| format!("pid {} is gone", r.pid)).unwrap_or_else(|e| e.to_string()));
                    fs::remove_file(&p).map_err(|e| FileError::io(&p, e))?;
                }
            }
        }
        Ok(alive)
    }
}

/// The project lock; released on drop.
#[derive(Debug)]
pub struct ProjectLock {
    _file: File,
}

/// `.specflow/workflows/runner-{id}.json`: which process runs an orchestration, since when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerRecord {
    /// The orchestration run.
    pub orchestration_id: String,
    /// The runner's process id.
    pub pid: u32,
    /// When it started, in ms since the epoch.
    pub started_at: i64,
    /// The process's start time (`/proc/PID/stat`, clock ticks since boot): the record names
    /// that process only, not a later one that got the same pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_started: Option<u64>,
}

impl RunnerRecord {
    /// The record of this process running orchestration `id`, started at `now_ms`.
    pub fn of_this_process(id: &str, now_ms: i64) -> RunnerRecord {
        let pid = std::process::id();
        RunnerRecord {
            orchestration_id: id.into(),
            pid,
            started_at: now_ms,
            pid_started: process_identity(pid).map(|(started, _)| started),
        }
    }

    /// Whether the process it names still runs: its pid exists and, where the start time
    /// was recorded and can be read, it is the same process.
    pub fn is_alive(&self) -> bool {
        process_runs(self.pid, self.pid_started)
    }
}

/// Whether process `pid` still runs (not a zombie) and, where its start time `started` is
/// known and can be read, is the same process, not a later one given the same pid.
pub fn process_runs(pid: u32, started: Option<u64>) -> bool {
    if !pid_alive(pid) || is_zombie(pid) {
        return false;
    }
    match (started, process_identity(pid)) {
        (Some(recorded), Some((now, _))) => recorded == now,
        _ => true,
    }
}

/// Whether process `pid` has ended and waits to be reaped (state `Z` in `/proc/PID/stat`):
/// a runner killed while its parent lives on still has a `/proc` entry, but runs nothing.
fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rfind(')')
        .and_then(|i| stat.get(i + 1..))
        .and_then(|rest| rest.split_whitespace().next())
        == Some("Z")
}

/// Opens (creating it and its folder) a file that only carries a lock.
fn open_lock_file(path: &Path) -> Result<fs::File, FileError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| FileError::io(parent, e))?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| FileError::io(path, e))
}

/// The files in `dir` named `{prefix}…{suffix}`, sorted by name; none when `dir` is missing.
pub fn list(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
        })
        .collect();
    v.sort();
    v
}

/// Reads `path` as a `T`: [`FileError::Missing`] when absent, [`FileError::Corrupt`] (with
/// the JSON reader's message and position) when it is not a `T`.
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &'static str) -> Result<T, FileError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(FileError::Missing(path.to_path_buf()))
        }
        Err(e) => return Err(FileError::io(path, e)),
    };
    serde_json::from_slice(&bytes).map_err(|e| FileError::Corrupt {
        path: path.to_path_buf(),
        what,
        detail: e.to_string(),
    })
}

/// Writes `value` as pretty JSON to `path` atomically. If the file there does not read as a
/// `T`, it is backed up first ([`backup`]): a corrupt file is never overwritten without a
/// `.bak`.
pub fn write_json<T: Serialize + DeserializeOwned>(
    path: &Path,
    value: &T,
) -> Result<(), FileError> {
    if let Ok(old) = fs::read(path) {
        if serde_json::from_slice::<T>(&old).is_err() {
            backup(path)?;
        }
    }
    let mut text = serde_json::to_vec_pretty(value)
        .map_err(|e| FileError::io(path, io::Error::new(io::ErrorKind::InvalidData, e)))?;
    text.push(b'\n');
    write_atomic(path, &text).map_err(|e| FileError::io(path, e))
}

/// Copies `path` to `<path>.bak` before a recovery touches it; returns the backup's path, or
/// `None` when there is no file to back up. An older `.bak` with other content is kept as
/// `<path>.bak.1` (`.2`, …) rather than lost.
pub fn backup(path: &Path) -> Result<Option<PathBuf>, FileError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(FileError::io(path, e)),
    };
    let bak = with_suffix(path, ".bak");
    match fs::read(&bak) {
        Ok(old) if old == bytes => return Ok(Some(bak)),
        Ok(_) => {
            let mut n = 1;
            while with_suffix(path, &format!(".bak.{n}")).exists() {
                n += 1;
            }
            let keep = with_suffix(path, &format!(".bak.{n}"));
            fs::rename(&bak, &keep).map_err(|e| FileError::io(&bak, e))?;
        }
        Err(_) => {}
    }
    write_atomic(&bak, &bytes).map_err(|e| FileError::io(&bak, e))?;
    Ok(Some(bak))
}

/// The phase's `tasks.md`: `specs/{phase}-*/tasks.md` (specflow's layout), else the only or
/// newest `specs/*/tasks.md`, else `tasks.md` at the top.
pub fn find_tasks(project: &std::path::Path, phase: Option<&str>) -> Option<PathBuf> {
    let specs = project.join("specs");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(&specs)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path().join("tasks.md"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    if let Some(n) = phase.filter(|n| !n.is_empty()) {
        if let Some(p) = candidates.iter().find(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str())
                .is_some_and(|d| d.starts_with(n))
        }) {
            return Some(p.clone());
        }
    }
    candidates
        .iter()
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .cloned()
        .or_else(|| Some(project.join("tasks.md")).filter(|p| p.is_file()))
}
