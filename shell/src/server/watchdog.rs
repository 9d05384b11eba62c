//! The pane watchdog: captures each agent's pane that tmux lists (one tmux client for all)
//! on an interval and hands the screen to the core, which decides whether new output has gone unrepresented; and lists every pane with
//! its processes, for the core's pane discovery and reaper. No tmux, or a dead pane,
//! degrades to transcript-only.

use crate::server::driver::Msg;
use crate::server::store::Store;
use crate::server::world::Panes;
use headspace_core::pane::discovery::panes_to_capture;
use headspace_core::Input;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::debug;

/// Captures the last `lines` lines of every live agent's pane every `interval`, until the
/// core stops.
pub fn start(
    store: Arc<dyn Store>,
    panes: Arc<dyn Panes>,
    core: mpsc::UnboundedSender<Msg>,
    interval: Duration,
    lines: u32,
) {
    tokio::spawn(async move {
        let mut t = tokio::time::interval(interval);
        loop {
            t.tick().await;
            // Every pane and its processes first: the core ties sessions no hook placed to
            // their panes and ends agents whose pane or process is gone.
            let listing = panes.list().await;
            let stored = match store.panes().await {
                Ok(p) => p,
                Err(e) => {
                    debug!("[TMUX_WATCHDOG] cannot list panes: {e}");
                    Vec::new()
                }
            };
            let targets = panes_to_capture(stored, listing.as_deref());
            if let Some(all) = listing {
                if core.send(Msg::Input(Input::Panes(all))).is_err() {
                    return;
                }
            }
            // One tmux client for all of them, not one per pane.
            let texts = panes.capture_many(&targets, lines).await;
            for (pane, text) in targets.into_iter().zip(texts) {
                if let Some(text) = text {
                    if core.send(Msg::Input(Input::Pane { pane, text })).is_err() {
                        return;
                    }
                }
            }
        }
    });
}
