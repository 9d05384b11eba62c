//! `--notify-command`: tells a user away from the page that an agent needs them or finished,
//! by running a command of theirs (`notify-send`, ntfy, a webhook through curl) through
//! `sh -c` with the notice as JSON on its stdin. What to tell, and how often, is the core's
//! [`Notices`]; this file only listens to the event hub, reads cards and spawns.

use crate::server::sse::Hub;
use crate::server::store::Store;
use crate::server::world::{Clock, SystemClock};
use headspace_core::view::notice::Notices;
use serde_json::Value;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tracing::{info, warn};

/// The events after which an agent's card may say something new.
const NEWS: [&str; 4] = [
    "state_changed",
    "card_refresh",
    "session_ended",
    "turn_created",
];
/// How long the command may run before it is stopped.
const COMMAND_TIME: Duration = Duration::from_secs(30);

/// Starts listening: from now on, every notice runs `command`.
pub fn start(hub: Arc<Hub>, store: Arc<dyn Store>, command: String) {
    tokio::spawn(async move {
        let mut notices = Notices::new();
        let mut last = hub.last_id();
        loop {
            // A listener that fell behind is dropped by the hub; it comes back where it was.
            let mut rx = hub.listen(Some(last), Duration::from_secs(3600));
            while let Some(frame) = rx.recv().await {
                let text = String::from_utf8_lossy(&frame);
                for event in text.split("\n\n") {
                    let Some((id, name, data)) = parse_event(event) else {
                        continue;
                    };
                    last = last.max(id);
                    if !NEWS.contains(&name.as_str()) {
                        continue;
                    }
                    let Some(agent) = data["agent_id"].as_u64() else {
                        continue;
                    };
                    let Ok(Some(view)) = store.agent(agent).await else {
                        continue;
                    };
                    if let Some(notice) = notices.observe(&view, SystemClock.now()) {
                        run(&command, notice);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
}

/// One SSE event's id, name and data.
fn parse_event(event: &str) -> Option<(u64, String, Value)> {
    let (mut id, mut name, mut data) = (None, None, None);
    for line in event.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("event: ") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = serde_json::from_str(v).ok();
        }
    }
    Some((id?, name?, data?))
}

/// Runs the command with `notice` on its stdin, in the background; it never blocks the
/// listener, and one that hangs is stopped after [`COMMAND_TIME`].
fn run(command: &str, notice: Value) {
    let spawned = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            warn!("[NOTIFY] cannot run the notify command: {e}");
            return;
        }
    };
    info!(
        "[NOTIFY] {} for agent {}",
        notice["event"].as_str().unwrap_or("notice"),
        notice["agent_id"]
    );
    tokio::spawn(async move {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(format!("{notice}\n").as_bytes()).await;
        }
        match tokio::time::timeout(COMMAND_TIME, child.wait()).await {
            Ok(Ok(s)) if !s.success() => warn!("[NOTIFY] the notify command failed: {s}"),
            Ok(_) => {}
            Err(_) => warn!("[NOTIFY] the notify command ran too long; stopped"),
        }
    });
}
