//! Typing into an agent's pane with tmux. The rules (when to clear the input box, the
//! pauses, what counts as delivered, how often Enter is pressed again) are the core's
//! [`send_check`](headspace_core::send_check); this file only presses keys, sleeps and
//! captures.

use headspace_core::dialog::Key;
use headspace_core::discovery::PaneListing;
use headspace_core::send_check::{
    needs_clearing, Delivery, SendCheck, Sent, CLEAR_PAUSE, SETTLE_PAUSE, TYPE_PAUSE,
};
use std::time::Duration;
use tokio::process::Command;
use tracing::debug;

async fn tmux(socket: Option<&str>, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("tmux");
    if let Some(s) = socket {
        cmd.args(["-L", s]);
    }
    cmd.args(args).kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(3), cmd.output()).await {
        Ok(Ok(o)) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(Ok(o)) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Ok(Err(e)) => Err(format!("tmux is not available: {e}")),
        Err(_) => Err("tmux did not answer within 3 s".into()),
    }
}

/// Captures a pane's last `lines` lines; `None` (logged at DEBUG) when tmux or the pane is
/// not there.
pub async fn capture(socket: Option<&str>, pane: &str, lines: u32) -> Option<String> {
    let start = format!("-{lines}");
    tmux(socket, &["capture-pane", "-p", "-t", pane, "-S", &start])
        .await
        .map_err(|e| debug!("[TMUX_WATCHDOG] cannot capture pane {pane}: {e}"))
        .ok()
}

/// Every pane of the tmux server with what runs in it; `None` (logged at DEBUG) when no tmux
/// server answers, so that a missing listing never reads as "every pane closed".
pub async fn list_panes(socket: Option<&str>) -> Option<Vec<PaneListing>> {
    let out = tmux(
        socket,
        &[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_current_path}",
        ],
    )
    .await
    .map_err(|e| debug!("[DISCOVERY] cannot list tmux panes: {e}"))
    .ok()?;
    let panes: Vec<(String, u32, bool, String)> = out
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(4, '\t');
            let id = f.next()?.to_string();
            let pid = f.next()?.parse().ok()?;
            let dead = f.next()? == "1";
            Some((id, pid, dead, f.next().unwrap_or("").to_string()))
        })
        .collect();
    let roots: Vec<u32> = panes.iter().map(|p| p.1).collect();
    let trees = tokio::task::spawn_blocking(move || crate::procs::tree_of_each(&roots))
        .await
        .ok()?;
    Some(
        panes
            .into_iter()
            .zip(trees)
            .map(|((pane, _, dead, path), processes)| PaneListing {
                pane,
                current_path: (!path.is_empty()).then_some(path),
                // A dead pane (`remain-on-exit`) runs nothing, whatever has its old pid now.
                processes: if dead { Vec::new() } else { processes },
            })
            .collect(),
    )
}

/// Presses Escape in `pane`: Claude Code stops its turn.
pub async fn interrupt(socket: Option<&str>, pane: &str) -> Result<(), String> {
    tmux(socket, &["send-keys", "-t", pane, "Escape"])
        .await
        .map(|_| ())
}

/// Presses `keys` in `pane`, in order (text typed as it is).
pub async fn press(socket: Option<&str>, pane: &str, keys: &[Key]) -> Result<(), String> {
    let mut named: Vec<&'static str> = Vec::new();
    for key in keys {
        let name = match key {
            Key::Down => "Down",
            Key::Up => "Up",
            Key::Enter => "Enter",
            Key::Space => "Space",
            Key::Text(text) => {
                flush_keys(socket, pane, &mut named).await?;
                tmux(socket, &["send-keys", "-t", pane, "-l", text]).await?;
                continue;
            }
        };
        named.push(name);
    }
    flush_keys(socket, pane, &mut named).await
}

/// Sends the named keys gathered so far in one `send-keys`.
async fn flush_keys(
    socket: Option<&str>,
    pane: &str,
    named: &mut Vec<&'static str>,
) -> Result<(), String> {
    if named.is_empty() {
        return Ok(());
    }
    let mut args = vec!["send-keys", "-t", pane];
    args.extend(named.iter().copied());
    named.clear();
    tmux(socket, &args).await.map(|_| ())
}

/// Picks option `n` of the dialog on `pane` by its number key, as a user would (Claude Code
/// takes a number key at once), checked as [`SendCheck::option`] says.
pub async fn choose(
    socket: Option<&str>,
    pane: &str,
    n: usize,
    label: &str,
) -> Result<Sent, String> {
    let before = screen(socket, pane).await?;
    let mut check = SendCheck::option(n, label, &before)?;
    tmux(socket, &["send-keys", "-t", pane, "-l", &n.to_string()]).await?;
    confirm(socket, pane, &mut check).await?;
    Ok(check.sent())
}

/// Types `text` into `pane` and presses Enter, checked as [`SendCheck::text`] says.
pub async fn send(socket: Option<&str>, pane: &str, text: &str) -> Result<Sent, String> {
    let before = screen(socket, pane).await?;
    let cleared_input = needs_clearing(&before);
    if cleared_input {
        tmux(socket, &["send-keys", "-t", pane, "Escape"]).await?;
        tokio::time::sleep(CLEAR_PAUSE).await;
    }
    tmux(socket, &["send-keys", "-t", pane, "-l", text]).await?;
    tokio::time::sleep(TYPE_PAUSE).await;
    let typed = screen(socket, pane).await?;
    let mut check = SendCheck::text(typed, cleared_input);
    tmux(socket, &["send-keys", "-t", pane, "Enter"]).await?;
    confirm(socket, pane, &mut check).await?;
    Ok(check.sent())
}

/// The visible screen of `pane`.
async fn screen(socket: Option<&str>, pane: &str) -> Result<String, String> {
    tmux(socket, &["capture-pane", "-p", "-t", pane]).await
}

/// After the key that should deliver: lets the pane settle and captures it, pressing Enter
/// again for as long as `check` asks.
async fn confirm(socket: Option<&str>, pane: &str, check: &mut SendCheck) -> Result<(), String> {
    loop {
        tokio::time::sleep(SETTLE_PAUSE).await;
        let after = screen(socket, pane).await?;
        match check.observe(&after) {
            Delivery::Delivered | Delivery::GiveUp => return Ok(()),
            Delivery::PressEnterAgain => {
                tmux(socket, &["send-keys", "-t", pane, "Enter"]).await?;
            }
        }
    }
}
