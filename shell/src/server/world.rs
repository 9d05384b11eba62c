//! The shell's adapters to the outside world, each behind a small trait so the simulation
//! (`headspace-sim`) can run the real server with simulated ones: the clock, the store (its
//! trait in [`store`](crate::server::store)), the transcript files and the tmux panes. Production
//! uses [`SystemClock`], [`PgStore`](crate::server::pgstore::PgStore), [`DiskFiles`] and
//! [`TmuxPanes`].

use crate::server::store::{BoxFuture, Store};
use headspace_core::kind::AgentKind;
use headspace_core::pane::dialog::Key;
use headspace_core::pane::discovery::PaneListing;
use headspace_core::pane::send_check::Sent;
use headspace_core::Timestamp;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tracing::warn;

/// The wall clock, in epoch milliseconds.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The operating system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        crate::clock::wall()
    }
}

/// What [`Files::stat`] tells of a transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// Its length in bytes.
    pub len: u64,
    /// Its identity (the inode): a replaced file has another.
    pub ino: u64,
}

/// The most bytes read from a transcript at once: a long file is read (and fed to the core,
/// or audited) chunk by chunk, so memory holds one chunk, never the file.
pub const READ_CHUNK: u64 = 4 << 20;

/// The transcript files under the claude dir, named by their path relative to it.
pub trait Files: Send + Sync {
    /// Length and identity, or `None` when the file is not there (or is refused: only
    /// regular files inside the claude dir are transcripts).
    fn stat(&self, rel: &str) -> Option<FileStat>;
    /// Up to `max` bytes from `offset`.
    fn read_at(&self, rel: &str, offset: u64, max: u64) -> std::io::Result<Vec<u8>>;
    /// Every transcript (`projects/<dir>/*.jsonl`), in path order. Async: a directory scan
    /// must not hold up the runtime.
    fn list(&self) -> BoxFuture<'_, Vec<(String, FileStat)>>;
}

/// The real file system under a claude dir.
///
/// Only regular files inside the claude dir are transcripts. Anything else named like one is
/// refused, each path logged once at WARN: a FIFO, socket, device or directory (opening a
/// FIFO would block the core until a writer came; files are opened non-blocking and checked
/// again after opening), and a symlink — of a file or of a folder, at any depth — whose
/// target resolves outside the claude dir (it would let anyone who can write under
/// `projects/` have the server read and store any file it can read). Symlinks that stay
/// inside are followed.
pub struct DiskFiles {
    guard: Arc<Guard>,
    /// The other kinds' transcripts that are watched (Codex CLI's, Gemini CLI's), each
    /// named under its kind's prefix ([`headspace_core::kind::CODEX_PREFIX`], …).
    others: Vec<Arc<Guard>>,
}

impl DiskFiles {
    /// The transcripts under `claude_dir`.
    pub fn new(claude_dir: impl Into<PathBuf>) -> DiskFiles {
        DiskFiles {
            guard: Arc::new(Guard::new(claude_dir.into(), Tree::ClaudeProjects)),
            others: Vec::new(),
        }
    }

    /// These and Codex CLI's transcripts under `codex_dir` (`sessions/Y/M/D/rollout-*.jsonl`).
    pub fn with_codex(mut self, codex_dir: impl Into<PathBuf>) -> DiskFiles {
        self.others
            .push(Arc::new(Guard::new(codex_dir.into(), Tree::CodexSessions)));
        self
    }

    /// These and Gemini CLI's chat files under `gemini_dir`
    /// (`tmp/<project>/chats/session-*.jsonl`).
    pub fn with_gemini(mut self, gemini_dir: impl Into<PathBuf>) -> DiskFiles {
        self.others
            .push(Arc::new(Guard::new(gemini_dir.into(), Tree::GeminiChats)));
        self
    }

    /// The guard of the tree `rel` names, and `rel` within it (a kind's prefix names its
    /// tree, or none when that kind is not watched).
    fn tree<'a>(&self, rel: &'a str) -> Option<(&Guard, &'a str)> {
        let tree = Tree::of(AgentKind::of_transcript(rel));
        if tree == Tree::ClaudeProjects {
            return Some((&self.guard, rel));
        }
        let guard = self.others.iter().find(|g| g.tree == tree)?;
        Some((guard, rel.strip_prefix(tree.prefix())?))
    }
}

impl Files for DiskFiles {
    fn stat(&self, rel: &str) -> Option<FileStat> {
        use std::os::unix::fs::MetadataExt;
        // Checked, not opened: an open is itself a notify event, which would ask for
        // another stat. `read_at` opens, and checks the open file again.
        let (guard, rel) = self.tree(rel)?;
        let (_, m) = guard.check(rel).ok()?;
        Some(FileStat {
            len: m.len(),
            ino: m.ino(),
        })
    }

    fn read_at(&self, rel: &str, offset: u64, max: u64) -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let (guard, rel) = self
            .tree(rel)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
        let (mut f, m) = guard.open(rel)?;
        f.seek(SeekFrom::Start(offset))?;
        let mut data = Vec::with_capacity(max.min(m.len().saturating_sub(offset)) as usize);
        f.take(max).read_to_end(&mut data)?;
        Ok(data)
    }

    fn list(&self) -> BoxFuture<'_, Vec<(String, FileStat)>> {
        let guard = self.guard.clone();
        let others = self.others.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut all = guard.scan();
                if !others.is_empty() {
                    for other in others {
                        all.extend(other.scan());
                    }
                    all.sort_by(|a, b| a.0.cmp(&b.0));
                }
                all
            })
            .await
            .unwrap_or_default()
        })
    }
}

/// Why a path under the claude dir is not read.
enum Refusal {
    /// A symlink on the way resolves to this path outside the claude dir.
    Outside(PathBuf),
    /// Not a regular file: what it is.
    NotRegular(&'static str),
    /// A folder or the file on its way became a symlink after it was checked.
    Swapped,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Outside(target) => write!(
                f,
                "symlink leaves the claude dir (it resolves to {})",
                target.display()
            ),
            Refusal::NotRegular(kind) => write!(f, "not a regular file ({kind})"),
            Refusal::Swapped => write!(f, "a symlink appeared on its path after it was checked"),
        }
    }
}

/// Which agent CLI's folder a [`Guard`] keeps, and how its transcripts lie in it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tree {
    /// Claude Code's `projects/<dir>/<session>.jsonl`.
    ClaudeProjects,
    /// Codex CLI's `sessions/Y/M/D/rollout-<time>-<session>.jsonl`.
    CodexSessions,
    /// Gemini CLI's `tmp/<project>/chats/session-<time>-<session>.jsonl`.
    GeminiChats,
}

/// Where a kind's transcripts lie under its dir: the folder to watch, and the prefix of the
/// core's names for them (`sessions`, `codex/` for Codex CLI).
pub fn transcripts_of(kind: AgentKind) -> (&'static str, &'static str) {
    let tree = Tree::of(kind);
    (tree.folder(), tree.prefix())
}

impl Tree {
    /// The tree of a kind's transcripts.
    fn of(kind: AgentKind) -> Tree {
        match kind {
            AgentKind::Claude => Tree::ClaudeProjects,
            AgentKind::Codex => Tree::CodexSessions,
            AgentKind::Gemini => Tree::GeminiChats,
        }
    }

    /// The folder under the agent's dir that holds its transcripts.
    fn folder(self) -> &'static str {
        match self {
            Tree::ClaudeProjects => "projects",
            Tree::CodexSessions => "sessions",
            Tree::GeminiChats => "tmp",
        }
    }

    /// How deep under that folder a transcript lies (its folders, then the file).
    fn depth(self) -> usize {
        match self {
            Tree::ClaudeProjects => 1,
            Tree::CodexSessions => 3,
            Tree::GeminiChats => 2,
        }
    }

    /// Whether a `.jsonl` file of this name is one of its transcripts.
    fn names(self, name: &str) -> bool {
        match self {
            Tree::ClaudeProjects => true,
            Tree::CodexSessions => name.starts_with("rollout-"),
            Tree::GeminiChats => name.starts_with("session-"),
        }
    }

    /// What the core's names of its transcripts start with.
    fn prefix(self) -> &'static str {
        match self {
            Tree::ClaudeProjects => "",
            Tree::CodexSessions => headspace_core::kind::CODEX_PREFIX,
            Tree::GeminiChats => headspace_core::kind::GEMINI_PREFIX,
        }
    }
}

/// What [`DiskFiles`] checks every path against, shared with its scans: one agent CLI's dir.
struct Guard {
    /// The agent CLI's dir as given.
    dir: PathBuf,
    /// Which CLI's, and how its transcripts lie.
    tree: Tree,
    /// The claude dir with its symlinks resolved, once it exists.
    canonical: std::sync::OnceLock<PathBuf>,
    /// The transcripts' folder (`projects/`, `sessions/`) with its symlinks resolved, once
    /// it exists: a user may keep it elsewhere (a symlinked `projects` is their own choice,
    /// not something under it).
    projects: std::sync::OnceLock<PathBuf>,
    /// The refusals already logged (path and reason): each is logged once, not every sweep.
    warned: Mutex<HashSet<String>>,
}

/// `path` with its symlinks resolved, remembered in `cell` once it exists.
fn canonical_once(cell: &std::sync::OnceLock<PathBuf>, path: &Path) -> Option<PathBuf> {
    if let Some(c) = cell.get() {
        return Some(c.clone());
    }
    let c = std::fs::canonicalize(path).ok()?;
    Some(cell.get_or_init(|| c).clone())
}

/// What kind of file `t` is, for a refusal.
fn kind_of(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "not a file"
    }
}

impl Guard {
    fn new(dir: PathBuf, tree: Tree) -> Guard {
        Guard {
            dir,
            tree,
            canonical: std::sync::OnceLock::new(),
            projects: std::sync::OnceLock::new(),
            warned: Mutex::new(HashSet::new()),
        }
    }

    /// The claude dir with symlinks resolved (as given while it does not exist).
    fn root(&self) -> PathBuf {
        canonical_once(&self.canonical, &self.dir).unwrap_or_else(|| self.dir.clone())
    }

    /// True when `real` (a path with its symlinks resolved) lies inside the claude dir or
    /// inside its `projects/` folder, wherever that folder really is.
    fn contains(&self, real: &Path) -> bool {
        real.starts_with(self.root())
            || canonical_once(&self.projects, &self.dir.join(self.tree.folder()))
                .is_some_and(|p| real.starts_with(p))
    }

    /// Logs a refusal once per path and reason; returns it as an error for the caller.
    fn refuse(&self, rel: &str, why: Refusal) -> std::io::Error {
        let message = format!("{}{rel} refused: {why}", self.tree.prefix());
        let first = self
            .warned
            .lock()
            .map(|mut w| w.insert(message.clone()))
            .unwrap_or(true);
        if first {
            warn!("[WATCHER] {message}");
        }
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, message)
    }

    /// Where `rel` really is: its path with every symlink resolved, refused when that lies
    /// outside the claude dir. Errors (without a log) when it does not exist.
    fn resolve(&self, rel: &str) -> std::io::Result<PathBuf> {
        let inside = Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        let root = self.root();
        if !inside {
            return Err(self.refuse(rel, Refusal::Outside(root.join(rel))));
        }
        let real = std::fs::canonicalize(root.join(rel))?;
        if !self.contains(&real) {
            return Err(self.refuse(rel, Refusal::Outside(real)));
        }
        Ok(real)
    }

    /// Where `rel` really is and its metadata, when it is a regular file inside the claude
    /// dir (checked without opening it).
    fn check(&self, rel: &str) -> std::io::Result<(PathBuf, std::fs::Metadata)> {
        let real = self.resolve(rel)?;
        let m = std::fs::metadata(&real)?;
        if !m.file_type().is_file() {
            return Err(self.refuse(rel, Refusal::NotRegular(kind_of(m.file_type()))));
        }
        Ok((real, m))
    }

    /// Opens `rel` for reading when it is a regular file inside the claude dir. Checked,
    /// then opened by the kernel's rules beneath the folder it was found in: one component
    /// at a time, none of them a symlink (the checked path has none), non-blocking; then
    /// checked again on the open file. A file or a folder on its way swapped for a link or a
    /// FIFO between the check and the open is refused, not followed or waited on.
    fn open(&self, rel: &str) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
        let (real, _) = self.check(rel)?;
        self.open_checked(rel, &real)
    }

    /// The open of a path [`Guard::check`] resolved to `real` (see [`Guard::open`]).
    fn open_checked(
        &self,
        rel: &str,
        real: &Path,
    ) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
        let projects = canonical_once(&self.projects, &self.dir.join(self.tree.folder()));
        let base = [Some(self.root()), projects]
            .into_iter()
            .flatten()
            .filter(|b| real.starts_with(b))
            .max_by_key(|b| b.components().count())
            .ok_or_else(|| self.refuse(rel, Refusal::Outside(real.to_path_buf())))?;
        let beneath = real.strip_prefix(&base).unwrap_or(real);
        let f = crate::fsutil::open_beneath(&base, beneath).map_err(|e| {
            if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
                self.refuse(rel, Refusal::Swapped)
            } else {
                e
            }
        })?;
        let m = f.metadata()?;
        if !m.file_type().is_file() {
            return Err(self.refuse(rel, Refusal::NotRegular(kind_of(m.file_type()))));
        }
        Ok((f, m))
    }

    /// Lists the transcripts (`projects/<dir>/*.jsonl`, or Codex's
    /// `sessions/Y/M/D/rollout-*.jsonl`) with their stats, in path order, named as the core
    /// names them: only regular files inside the dir (a folder whose symlink leaves it is
    /// not entered).
    fn scan(&self) -> Vec<(String, FileStat)> {
        let mut out = Vec::new();
        let top = self.tree.folder().to_string();
        self.scan_folder(
            &self.dir.join(&top),
            &top,
            self.tree.depth(),
            false,
            &mut out,
        );
        let prefix = self.tree.prefix();
        let mut out: Vec<(String, FileStat)> = out
            .into_iter()
            .map(|(rel, stat)| (format!("{prefix}{rel}"), stat))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The transcripts `depth` folders below `dir` (named `rel_dir` in the tree), into
    /// `out`. `linked`: a symlink was followed on the way.
    fn scan_folder(
        &self,
        dir: &Path,
        rel_dir: &str,
        depth: usize,
        linked: bool,
        out: &mut Vec<(String, FileStat)>,
    ) {
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for d in entries.flatten() {
            let name = d.file_name();
            let name = name.to_string_lossy();
            let rel = format!("{rel_dir}/{name}");
            // `file_type` does not follow links: a linked folder is checked where it leads.
            let Ok(t) = d.file_type() else { continue };
            if depth > 0 {
                let link = t.is_symlink();
                if link {
                    match self.resolve(&rel) {
                        Ok(real) if real.is_dir() => {}
                        _ => continue,
                    }
                } else if !t.is_dir() {
                    continue;
                }
                self.scan_folder(&d.path(), &rel, depth - 1, linked || link, out);
                continue;
            }
            if Path::new(&*name).extension().is_none_or(|e| e != "jsonl") || !self.tree.names(&name)
            {
                continue;
            }
            // A plain file in plain folders is inside the tree, and a regular file, by what
            // the listing says (no link followed): no need to resolve its path, which costs a
            // readlink per component for each of thousands of files every sweep. Links are
            // resolved and checked as before.
            let plain = !linked && t.is_file();
            let stat = if plain {
                d.metadata().ok()
            } else {
                self.check(&rel).ok().map(|(_, m)| m)
            };
            if let Some(m) = stat {
                out.push((
                    rel,
                    FileStat {
                        len: m.len(),
                        ino: m.ino(),
                    },
                ));
            }
        }
    }
}

/// The agents' terminal panes.
pub trait Panes: Send + Sync {
    /// The last `lines` lines of a pane, or `None` when it cannot be captured.
    fn capture<'a>(&'a self, pane: &'a str, lines: u32) -> BoxFuture<'a, Option<String>>;
    /// The last `lines` lines of each of `panes`, in order (`None` for one that cannot be
    /// captured). By default one [`capture`](Panes::capture) after another.
    fn capture_many<'a>(
        &'a self,
        panes: &'a [String],
        lines: u32,
    ) -> BoxFuture<'a, Vec<Option<String>>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(panes.len());
            for pane in panes {
                out.push(self.capture(pane, lines).await);
            }
            out
        })
    }
    /// Types `text` into a pane and presses Enter, verified.
    fn send<'a>(&'a self, pane: &'a str, text: &'a str) -> BoxFuture<'a, Result<Sent, String>>;
    /// Presses Escape in a pane, to stop the agent's turn.
    fn interrupt<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// Every pane with the processes running in it, or `None` when they cannot be listed
    /// (no tmux server).
    fn list(&self) -> BoxFuture<'_, Option<Vec<PaneListing>>>;
    /// Presses `keys` in a pane (a dialog driven by [`headspace_core::pane::dialog`]).
    fn press<'a>(&'a self, pane: &'a str, keys: &'a [Key]) -> BoxFuture<'a, Result<(), String>>;
    /// Whether a pane is open.
    fn is_open<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, bool>;
    /// Closes a pane, killing what runs in it.
    fn close<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// Picks option `n` (numbered from 1, labelled `label`) of the dialog on a pane. By
    /// default the number is typed like any text.
    fn choose<'a>(
        &'a self,
        pane: &'a str,
        n: usize,
        label: &'a str,
    ) -> BoxFuture<'a, Result<Sent, String>> {
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

    fn capture_many<'a>(
        &'a self,
        panes: &'a [String],
        lines: u32,
    ) -> BoxFuture<'a, Vec<Option<String>>> {
        Box::pin(crate::tmux::capture_many(
            self.socket.as_deref(),
            panes,
            lines,
        ))
    }

    fn send<'a>(&'a self, pane: &'a str, text: &'a str) -> BoxFuture<'a, Result<Sent, String>> {
        Box::pin(crate::tmux::send(self.socket.as_deref(), pane, text))
    }

    fn choose<'a>(
        &'a self,
        pane: &'a str,
        n: usize,
        label: &'a str,
    ) -> BoxFuture<'a, Result<Sent, String>> {
        Box::pin(crate::tmux::choose(self.socket.as_deref(), pane, n, label))
    }

    fn list(&self) -> BoxFuture<'_, Option<Vec<PaneListing>>> {
        Box::pin(crate::tmux::list_panes(self.socket.as_deref()))
    }

    fn interrupt<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(crate::tmux::interrupt(self.socket.as_deref(), pane))
    }

    fn press<'a>(&'a self, pane: &'a str, keys: &'a [Key]) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(crate::tmux::press(self.socket.as_deref(), pane, keys))
    }

    fn is_open<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(crate::tmux::pane_exists(self.socket.as_deref(), pane))
    }

    fn close<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(crate::tmux::kill_pane(self.socket.as_deref(), pane))
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
    /// The pane commands shared with the other machines of the database, when it is shared
    /// (PostgreSQL's table; the simulation's shared database); `None` when every pane is
    /// this server's.
    pub pane_queue: Option<Arc<dyn crate::server::pane_queue::PaneQueue>>,
    /// Search, history and prune (PostgreSQL); `None` for a store without them.
    pub archive: Option<Arc<dyn crate::server::archive::Archive>>,
    /// Starting agents in tmux (`POST /api/agents`); `None` where the server starts none.
    pub launcher: Option<crate::launch::Launcher>,
    /// Pushes to the user's devices; `None` where the server sends none (the simulation).
    pub push: Option<Arc<crate::server::push::Push>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("headspace-world-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A `projects` folder kept elsewhere through a symlink is the user's own setup: its
    /// transcripts are read; a link out of it is still refused, and a FIFO in it too.
    #[test]
    fn a_symlinked_projects_folder_is_read_but_links_out_of_it_are_not() {
        let claude = temp("claude");
        let elsewhere = temp("elsewhere");
        let outside = temp("outside");
        std::fs::create_dir_all(elsewhere.join("p")).unwrap();
        std::fs::write(elsewhere.join("p/s.jsonl"), b"{}\n").unwrap();
        std::fs::write(outside.join("secret.jsonl"), b"{}\n").unwrap();
        symlink(outside.join("secret.jsonl"), elsewhere.join("p/leak.jsonl")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(elsewhere.join("p/fifo.jsonl"))
            .status()
            .unwrap();
        assert!(fifo.success());
        symlink(&elsewhere, claude.join("projects")).unwrap();

        let files = DiskFiles::new(&claude);
        assert_eq!(files.stat("projects/p/s.jsonl").map(|s| s.len), Some(3));
        assert!(files.stat("projects/p/leak.jsonl").is_none());
        assert!(files.stat("projects/p/fifo.jsonl").is_none());
        assert!(files.read_at("projects/p/fifo.jsonl", 0, 10).is_err());
        assert!(files.stat("../outside/secret.jsonl").is_none());
        let listed: Vec<String> = files.guard.scan().into_iter().map(|(p, _)| p).collect();
        assert_eq!(listed, ["projects/p/s.jsonl"]);
        for d in [claude, elsewhere, outside] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// A folder swapped for a link between the check (the listing's) and the read: the
    /// read is refused, never taken from where the link points.
    #[test]
    fn a_folder_swapped_for_a_link_after_the_check_is_not_followed() {
        let claude = temp("swap-claude");
        let outside = temp("swap-outside");
        std::fs::create_dir_all(claude.join("projects/p")).unwrap();
        std::fs::write(claude.join("projects/p/s.jsonl"), b"{\"mine\":1}\n").unwrap();
        std::fs::create_dir_all(outside.join("p")).unwrap();
        std::fs::write(outside.join("p/s.jsonl"), b"{\"secret\":1}\n").unwrap();
        let files = DiskFiles::new(&claude);
        let rel = "projects/p/s.jsonl";
        let (real, _) = files.guard.check(rel).unwrap();
        // Between the check and the open, the folder becomes a link out of the claude dir.
        std::fs::rename(claude.join("projects/p"), claude.join("projects/p-old")).unwrap();
        symlink(outside.join("p"), claude.join("projects/p")).unwrap();
        let err = files.guard.open_checked(rel, &real).unwrap_err();
        assert!(err.to_string().contains("symlink appeared"), "{err}");
        // The file itself swapped for a link: refused too.
        std::fs::remove_file(claude.join("projects/p")).unwrap();
        std::fs::rename(claude.join("projects/p-old"), claude.join("projects/p")).unwrap();
        let (real, _) = files.guard.check(rel).unwrap();
        std::fs::remove_file(claude.join("projects/p/s.jsonl")).unwrap();
        symlink(outside.join("p/s.jsonl"), claude.join("projects/p/s.jsonl")).unwrap();
        assert!(files.guard.open_checked(rel, &real).is_err());
        // Untouched, it reads.
        std::fs::remove_file(claude.join("projects/p/s.jsonl")).unwrap();
        std::fs::write(claude.join("projects/p/s.jsonl"), b"{\"mine\":1}\n").unwrap();
        assert_eq!(files.read_at(rel, 0, 100).unwrap(), b"{\"mine\":1}\n");
        for d in [claude, outside] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
