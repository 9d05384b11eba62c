//! Stopping an agent: asked to exit from its prompt, killed if it has not within
//! [`STOP_GRACE_MS`] (at once with `force`).

use super::start::LaunchError;
use crate::server::world::Panes;
use headspace_core::kind::AgentKind;
use headspace_core::launch::{exit_text, STOP_GRACE_MS};
use std::time::Duration;

/// How a stop went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The agent exited when asked.
    Exited,
    /// Its pane was killed.
    Killed,
}

impl Stopped {
    /// The name the API answers with.
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Exited => "exited",
            Stopped::Killed => "killed",
        }
    }
}

/// Stops the agent of `kind` in `pane`.
pub async fn stop(
    panes: &dyn Panes,
    pane: &str,
    kind: AgentKind,
    force: bool,
) -> Result<Stopped, LaunchError> {
    if !panes.is_open(pane).await {
        return Ok(Stopped::Exited);
    }
    if !force {
        // The pane may close while the text is typed: that is the exit asked for.
        let _ = panes.send(pane, exit_text(kind)).await;
        let start = crate::clock::instant();
        while crate::clock::since(start) < Duration::from_millis(STOP_GRACE_MS as u64) {
            if !panes.is_open(pane).await {
                return Ok(Stopped::Exited);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    panes
        .close(pane)
        .await
        .map_err(|e| LaunchError::Failed(format!("could not kill pane {pane}: {e}")))?;
    Ok(Stopped::Killed)
}
