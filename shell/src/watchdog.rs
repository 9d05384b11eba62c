//! The pane watchdog (seed Task 8): captures each agent's tmux pane on an interval and hands
//! the screen to the core, which decides whether new output has gone unrepresented. No tmux,
//! or a dead pane, degrades to transcript-only, logged at DEBUG.

use crate::driver::Msg;
use crate::world::{Panes, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::mpsc;
use tracing::debug;

/// Watchdog settings (seed defaults: every 3 s, 20 lines).
#[derive(Clone, Debug)]
pub struct PaneSettings {
    /// Time between captures of a pane.
    pub interval: Duration,
    /// Lines captured.
    pub lines: u32,
}

/// Captures a pane's last `lines` lines, with a timeout.
pub async fn capture(socket: Option<&str>, pane: &str, lines: u32) -> Option<String> {
    let mut cmd = Command::new("tmux");
    if let Some(s) = socket {
        cmd.args(["-L", s]);
    }
    cmd.args(["capture-pane", "-p", "-t", pane, "-S", &format!("-{lines}")]);
    cmd.kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(3), cmd.output()).await {
        Ok(Ok(out)) if out.status.success() => {
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Ok(Ok(out)) => {
            debug!(
                "[TMUX_WATCHDOG] pane {pane} not available: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
        Ok(Err(e)) => {
            debug!("[TMUX_WATCHDOG] tmux not available: {e}");
            None
        }
        Err(_) => {
            debug!("[TMUX_WATCHDOG] capture of pane {pane} timed out");
            None
        }
    }
}

/// Runs the capture loop and the core's ticker until the core stops.
pub fn start(
    store: Arc<dyn Store>,
    panes: Arc<dyn Panes>,
    core: mpsc::UnboundedSender<Msg>,
    settings: PaneSettings,
) {
    let ticker = core.clone();
    tokio::spawn(async move {
        let mut t = tokio::time::interval(Duration::from_millis(250));
        loop {
            t.tick().await;
            if ticker.send(Msg::Tick).is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        let mut t = tokio::time::interval(settings.interval);
        loop {
            t.tick().await;
            let listed = match store.panes().await {
                Ok(p) => p,
                Err(e) => {
                    debug!("[TMUX_WATCHDOG] cannot list panes: {e}");
                    continue;
                }
            };
            for pane in listed {
                if let Some(text) = panes.capture(&pane, settings.lines).await {
                    if core.send(Msg::Pane { pane, text }).is_err() {
                        return;
                    }
                }
            }
        }
    });
}
