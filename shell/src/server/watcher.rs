//! The transcript watcher: `notify` over `<claude-dir>/projects/**` (on disk), and a periodic
//! sweep through [`Files`] that catches whatever the OS dropped. Both only say "this file may
//! have changed"; the driver reads from where it left off.

use crate::server::driver::Msg;
use crate::server::world::{FileStat, Files};
use headspace_core::kind::AgentKind;
use notify::{RecursiveMode, Watcher};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::{debug, warn};

fn rel_of(claude_dir: &Path, p: &Path) -> Option<String> {
    let rel = p.strip_prefix(claude_dir).ok()?;
    (p.extension()? == "jsonl").then(|| rel.to_string_lossy().into_owned())
}

/// True for an event that only says a file was opened, read or closed after reading.
fn is_read_only_access(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    matches!(kind, notify::EventKind::Access(a) if !matches!(a, AccessKind::Close(AccessMode::Write)))
}

/// Watches the claude dir on disk with `notify` until the process ends.
pub fn start_notify(claude_dir: PathBuf, core: mpsc::UnboundedSender<Msg>) {
    let projects = claude_dir.join("projects");
    if let Err(e) = std::fs::create_dir_all(&projects) {
        warn!(
            "[WATCHER] cannot create {}: {e}; only the sweep will look",
            projects.display()
        );
    }
    watch(claude_dir, "projects", "", core);
}

/// Watches another agent CLI's transcripts under its dir, naming its files as the core does
/// (`codex/…` for Codex CLI's `sessions/`, `gemini/…` for Gemini CLI's `tmp/`). The folder
/// is not created: the CLI makes it on its first session; until then (a user without that
/// CLI has none) the sweep looks there.
pub fn start_notify_kind(dir: PathBuf, kind: AgentKind, core: mpsc::UnboundedSender<Msg>) {
    if kind == AgentKind::Claude {
        return start_notify(dir, core);
    }
    let (folder, prefix) = crate::server::world::transcripts_of(kind);
    if !dir.join(folder).is_dir() {
        debug!(
            "[WATCHER] no {}/{folder} yet; the sweep looks there",
            dir.display()
        );
        return;
    }
    watch(dir, folder, prefix, core);
}

/// Watches `dir/folder` recursively for as long as the process runs: each `.jsonl` that may
/// have changed is announced by its path under `dir`, after `prefix`. Without a watch (no
/// folder yet, no notify) the sweep looks.
fn watch(dir: PathBuf, folder: &str, prefix: &'static str, core: mpsc::UnboundedSender<Msg>) {
    let top = dir.join(folder);
    // Symlinked folders are not followed: a link out of the dir must not get watches (or
    // events) there; links that stay inside are caught by the real path or the sweep.
    // Every path is checked again when it is read (`DiskFiles`).
    let config = notify::Config::default().with_follow_symlinks(false);
    let watcher = notify::RecommendedWatcher::new(
        move |res: notify::Result<notify::Event>| match res {
            // Opening or reading a file changes nothing, and the server's own reads would
            // otherwise notify it again and again; a writer closing its file is kept.
            Ok(ev) if is_read_only_access(&ev.kind) => {}
            Ok(ev) => {
                for p in ev.paths {
                    if let Some(rel) = rel_of(&dir, &p) {
                        let _ = core.send(Msg::FileChanged(format!("{prefix}{rel}")));
                    }
                }
            }
            Err(e) => debug!("[WATCHER] notify error: {e}"),
        },
        config,
    );
    match watcher {
        Ok(mut w) => match w.watch(&top, RecursiveMode::Recursive) {
            // The watcher lives as long as the process.
            Ok(()) => std::mem::forget(w),
            Err(e) => warn!(
                "[WATCHER] cannot watch {}: {e}; relying on the sweep",
                top.display()
            ),
        },
        Err(e) => warn!("[WATCHER] no file notifications: {e}; relying on the sweep"),
    }
}

/// Sweeps every `sweep_every`: each transcript whose length or identity changed since the
/// last sweep gets a change notice, in path order.
pub fn start_sweep(files: Arc<dyn Files>, core: mpsc::UnboundedSender<Msg>, sweep_every: Duration) {
    tokio::spawn(async move {
        let mut known: BTreeMap<String, FileStat> = BTreeMap::new();
        let mut tick = tokio::time::interval(sweep_every);
        loop {
            tick.tick().await;
            let now: BTreeMap<String, FileStat> = files.list().await.into_iter().collect();
            for (rel, stat) in &now {
                if known.get(rel) != Some(stat) && core.send(Msg::FileChanged(rel.clone())).is_err()
                {
                    return;
                }
            }
            known = now;
        }
    });
}
