//! The pane watchdog: captures each agent's pane on an interval and hands the screen to the
//! core, which decides whether new output has gone unrepresented; and lists every pane with
//! its processes, for the core's pane discovery and reaper. No tmux, or a dead pane,
//! degrades to transcript-only.

use crate::server::driver::Msg;
use crate::server::store::Store;
use crate::server::world::Panes;
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
            if let Some(all) = panes.list().await {
                if core.send(Msg::Input(Input::Panes(all))).is_err() {
                    return;
                }
            }
            let listed = match store.panes().await {
                Ok(p) => p,
                Err(e) => {
                    debug!("[TMUX_WATCHDOG] cannot list panes: {e}");
                    continue;
                }
            };
            for pane in listed {
                if let Some(text) = panes.capture(&pane, lines).await {
                    if core.send(Msg::Input(Input::Pane { pane, text })).is_err() {
                        return;
                    }
                }
            }
        }
    });
}
