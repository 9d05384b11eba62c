//! The transcript watcher: `notify` over `<claude-dir>/projects/**`, and a periodic sweep
//! that catches whatever the OS dropped. Both only say "this file may have changed"; the
//! driver reads from where it left off.

use crate::driver::Msg;
use notify::{RecursiveMode, Watcher};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tracing::{debug, warn};

fn rel_of(claude_dir: &Path, p: &Path) -> Option<String> {
    let rel = p.strip_prefix(claude_dir).ok()?;
    (p.extension()? == "jsonl").then(|| rel.to_string_lossy().into_owned())
}

/// Lists `projects/<dir>/*.jsonl` with size and modification time.
fn scan(claude_dir: &Path) -> HashMap<String, (u64, Option<SystemTime>)> {
    let mut out = HashMap::new();
    let Ok(dirs) = std::fs::read_dir(claude_dir.join("projects")) else {
        return out;
    };
    for d in dirs.flatten() {
        let Ok(files) = std::fs::read_dir(d.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if let (Some(rel), Ok(meta)) = (rel_of(claude_dir, &p), f.metadata()) {
                out.insert(rel, (meta.len(), meta.modified().ok()));
            }
        }
    }
    out
}

/// Watches until the process ends; keeps the notify watcher alive in its task.
pub fn start(claude_dir: PathBuf, core: mpsc::UnboundedSender<Msg>, sweep_every: Duration) {
    let projects = claude_dir.join("projects");
    if let Err(e) = std::fs::create_dir_all(&projects) {
        warn!(
            "[WATCHER] cannot create {}: {e}; only the sweep will look",
            projects.display()
        );
    }
    let notify_tx = core.clone();
    let dir = claude_dir.clone();
    let watcher =
        notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            Ok(ev) => {
                for p in ev.paths {
                    if let Some(rel) = rel_of(&dir, &p) {
                        let _ = notify_tx.send(Msg::FileChanged(rel));
                    }
                }
            }
            Err(e) => debug!("[WATCHER] notify error: {e}"),
        });
    let watcher = match watcher {
        Ok(mut w) => match w.watch(&projects, RecursiveMode::Recursive) {
            Ok(()) => Some(w),
            Err(e) => {
                warn!(
                    "[WATCHER] cannot watch {}: {e}; relying on the sweep",
                    projects.display()
                );
                None
            }
        },
        Err(e) => {
            warn!("[WATCHER] no file notifications: {e}; relying on the sweep");
            None
        }
    };
    tokio::spawn(async move {
        let _keep = watcher;
        let mut known: HashMap<String, (u64, Option<SystemTime>)> = HashMap::new();
        let mut tick = tokio::time::interval(sweep_every);
        loop {
            tick.tick().await;
            let dir = claude_dir.clone();
            let now = tokio::task::spawn_blocking(move || scan(&dir))
                .await
                .unwrap_or_default();
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
