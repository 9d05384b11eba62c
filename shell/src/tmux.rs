//! Typing into an agent's pane with tmux. The rules (when to clear the input box, the
//! pauses, what counts as delivered, how often Enter is pressed again) are the core's
//! [`send_check`](headspace_core::pane::send_check); this file only presses keys, sleeps and
//! captures.

use headspace_core::pane::dialog::Key;
use headspace_core::pane::discovery::PaneListing;
use headspace_core::pane::send_check::{
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

/// Captures the last `lines` lines of each of `panes`, in order, with one tmux client: a
/// process per pane every few seconds for every agent was most of an edge's CPU. Each pane's
/// text is followed by a marker line made anew for each call, which no pane can know in
/// advance. When the batch fails (a pane closed since the listing: tmux stops at the first
/// failing command) or its output does not split, each pane is captured alone.
pub async fn capture_many(
    socket: Option<&str>,
    panes: &[String],
    lines: u32,
) -> Vec<Option<String>> {
    if panes.len() > 1 {
        let marker = capture_marker();
        let start = format!("-{lines}");
        let mut args: Vec<&str> = Vec::with_capacity(panes.len() * 11);
        for pane in panes {
            if !args.is_empty() {
                args.push(";");
            }
            args.extend(["capture-pane", "-p", "-t", pane, "-S", &start, ";"]);
            args.extend(["display-message", "-p", &marker]);
        }
        match tmux(socket, &args).await {
            Ok(out) => match split_captures(&out, &marker, panes.len()) {
                Some(texts) => return texts.into_iter().map(Some).collect(),
                None => {
                    debug!("[TMUX_WATCHDOG] a batch capture did not split; capturing one by one")
                }
            },
            Err(e) => debug!("[TMUX_WATCHDOG] batch capture failed ({e}); capturing one by one"),
        }
    }
    let mut out = Vec::with_capacity(panes.len());
    for pane in panes {
        out.push(capture(socket, pane, lines).await);
    }
    out
}

/// A marker line for one batch capture: 64 bits from the standard library's random hash
/// keys, new for each call (enough that an agent cannot print it by chance or on purpose).
fn capture_marker() -> String {
    use std::hash::{BuildHasher, Hasher};
    let h = std::collections::hash_map::RandomState::new().build_hasher();
    format!("headspace-capture-end-{:016x}", h.finish())
}

/// Splits a batch capture's output into the `n` panes' texts: each ends where a line is
/// exactly `marker`. `None` unless there are exactly `n` of them and nothing after.
fn split_captures(out: &str, marker: &str, n: usize) -> Option<Vec<String>> {
    let end = format!("{marker}\n");
    let mut rest = out;
    let mut texts = Vec::with_capacity(n);
    for _ in 0..n {
        let at = if rest.starts_with(&end) {
            0
        } else {
            rest.find(&format!("\n{end}"))? + 1
        };
        texts.push(rest[..at].to_string());
        rest = &rest[at + end.len()..];
    }
    rest.is_empty().then_some(texts)
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

/// Starts `argv` (run as it is: no shell) in `cwd`, in a new window named `window` of the
/// session `session` (made when absent, 200×50, detached); the new pane's id.
pub async fn open_window(
    socket: Option<&str>,
    session: &str,
    window: &str,
    cwd: &std::path::Path,
    argv: &[&str],
) -> Result<String, String> {
    let cwd = cwd.display().to_string();
    let target = format!("{session}:");
    let exists = tmux(socket, &["has-session", "-t", &format!("={session}")])
        .await
        .is_ok();
    let mut args: Vec<&str> = if exists {
        vec!["new-window", "-d", "-t", &target]
    } else {
        vec!["new-session", "-d", "-s", session, "-x", "200", "-y", "50"]
    };
    args.extend(["-P", "-F", "#{pane_id}", "-n", window, "-c", &cwd, "--"]);
    args.extend_from_slice(argv);
    let pane = tmux(socket, &args).await?.trim().to_string();
    if !pane.starts_with('%') {
        return Err(format!("tmux gave no pane id for the new window: {pane:?}"));
    }
    // A command that cannot start (not found, exits at once) closes its pane.
    tokio::time::sleep(Duration::from_millis(300)).await;
    if !pane_exists(socket, &pane).await {
        return Err(format!(
            "{} exited at once in {cwd}",
            argv.first().unwrap_or(&"the command")
        ));
    }
    Ok(pane)
}

/// Whether `pane` is open.
pub async fn pane_exists(socket: Option<&str>, pane: &str) -> bool {
    tmux(socket, &["display-message", "-p", "-t", pane, "#{pane_id}"])
        .await
        .is_ok_and(|p| p.trim() == pane)
}

/// Closes `pane`, killing what runs in it.
pub async fn kill_pane(socket: Option<&str>, pane: &str) -> Result<(), String> {
    tmux(socket, &["kill-pane", "-t", pane]).await.map(|_| ())
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

#[cfg(test)]
mod tests {
    use super::split_captures;

    #[test]
    fn a_batch_capture_splits_at_its_marker_lines_only() {
        let m = "headspace-capture-end-00ff";
        let out = format!("a\nb\n{m}\n{m}\nx {m}\n{m}\n");
        assert_eq!(
            split_captures(&out, m, 3),
            Some(vec![
                "a\nb\n".to_string(),
                String::new(),
                format!("x {m}\n")
            ])
        );
        assert_eq!(
            split_captures(&out, m, 2),
            None,
            "text left after the last pane"
        );
        assert_eq!(split_captures(&out, m, 4), None, "a pane missing");
    }
}
