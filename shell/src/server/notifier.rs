//! Notices: telling a user that an agent needs them or finished. Each notice goes out as a
//! passing `notice` event on the event stream (the dashboard's browser notifications show
//! exactly these) and, with `--notify-command`, to a command of theirs (`notify-send`, ntfy,
//! a webhook through curl) through `sh -c` with the notice as JSON on its stdin, and to every
//! device subscribed to pushes ([`crate::server::push`]). What to
//! tell, and how often, is the core's [`Notices`]; this file only listens to the event hub,
//! reads cards, publishes and spawns.

use crate::server::push::Push;
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

/// The events after which an agent's card may say something new. `turn_created` too: a
/// permission's tool reaches its card with a turn, and the notice says the command (without
/// it a permission's notice says only "Do you want to proceed?": dashboard_work.rs). The
/// cards are read off the hooks' path, once per agent per batch.
const NEWS: [&str; 4] = [
    "state_changed",
    "card_refresh",
    "session_ended",
    "turn_created",
];
/// How long the command may run before it is stopped.
const COMMAND_TIME: Duration = Duration::from_secs(30);

/// Frames of events taken at once, each agent's card read once for them.
const BATCH: usize = 64;
/// How often held waits are looked at ([`Notices::due`]).
const DUE_EVERY: Duration = Duration::from_millis(250);

/// Starts listening: from now on, every notice is published on `hub`, runs `command` and
/// goes to every device subscribed to `push`.
pub fn start(
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    command: Option<String>,
    push: Option<Arc<Push>>,
) {
    tokio::spawn(async move {
        let mut notices = Notices::new();
        let mut last = hub.last_id();
        let tell = |notice: serde_json::Value| {
            hub.publish_passing("notice", &notice);
            if let Some(push) = &push {
                push.notify(&notice, SystemClock.now());
            }
            if let Some(command) = &command {
                run(command, notice);
            }
        };
        let mut due = tokio::time::interval(DUE_EVERY);
        loop {
            // A listener that fell behind is dropped by the hub; it comes back where it was.
            let mut rx = hub.listen(Some(last), Duration::from_secs(3600));
            loop {
                let frame = tokio::select! {
                    frame = rx.recv() => frame,
                    _ = due.tick() => {
                        if notices.next_due().is_some() {
                            notices.due(SystemClock.now()).into_iter().for_each(&tell);
                        }
                        continue;
                    }
                };
                let Some(frame) = frame else { break };
                // Under load several frames wait: each agent's card is read once for all
                // of them, in the order the agents first appeared.
                let mut frames = vec![frame];
                while frames.len() < BATCH {
                    match rx.try_recv() {
                        Ok(f) => frames.push(f),
                        Err(_) => break,
                    }
                }
                let mut agents: Vec<u64> = Vec::new();
                for frame in &frames {
                    for event in String::from_utf8_lossy(frame).split("\n\n") {
                        let Some((id, name, data)) = parse_event(event) else {
                            continue;
                        };
                        last = last.max(id);
                        if !NEWS.contains(&name.as_str()) {
                            continue;
                        }
                        if let Some(agent) = data["agent_id"].as_u64() {
                            if !agents.contains(&agent) {
                                agents.push(agent);
                            }
                        }
                    }
                }
                for agent in agents {
                    let Ok(Some(view)) = store.agent_uncounted(agent).await else {
                        continue;
                    };
                    if let Some(notice) = notices.observe(&view, SystemClock.now()) {
                        tell(notice);
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
