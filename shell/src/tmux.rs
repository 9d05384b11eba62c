//! Typing into an agent's pane: `send-keys -l`, a short pause, Enter, a check that the pane
//! changed, Enter once more if it did not. Escape first when the input box already holds
//! text (an autocomplete suggestion or a half-typed line), so it cannot be sent by mistake.

use headspace_core::pane::read_pane;
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

/// What a send did.
#[derive(Debug, PartialEq, Eq)]
pub struct Sent {
    /// Escape was pressed first to clear text already in the input box.
    pub cleared_input: bool,
    /// Enter had to be pressed a second time.
    pub retried_enter: bool,
    /// The pane changed after Enter.
    pub verified: bool,
}

/// Presses Escape in `pane`: Claude Code stops its turn.
pub async fn interrupt(socket: Option<&str>, pane: &str) -> Result<(), String> {
    tmux(socket, &["send-keys", "-t", pane, "Escape"])
        .await
        .map(|_| ())
}

/// Picks option `n` of the dialog on `pane` by its number key, as a user would. Claude Code
/// takes a number key at once; a screen that still shows the option afterwards (an older or
/// line-reading UI) gets Enter too. Verified when the option's line is gone.
pub async fn choose(
    socket: Option<&str>,
    pane: &str,
    n: usize,
    label: &str,
) -> Result<Sent, String> {
    let line = format!("{n}. {label}");
    // The option's own line (after the box edge and the selection marker), so "1. Yes" is
    // not found in "11. Yes".
    let shows_option = |screen: &str| {
        screen.lines().any(|l| {
            l.trim_start_matches(|c: char| c.is_whitespace() || "│❯>".contains(c))
                .starts_with(&line)
        })
    };
    // A stale question (the dialog already gone) must not type a digit into the prompt.
    let before = tmux(socket, &["capture-pane", "-p", "-t", pane]).await?;
    if !shows_option(&before) {
        return Err(format!(
            "the dialog is not on screen: no option \"{line}\" in the pane"
        ));
    }
    tmux(socket, &["send-keys", "-t", pane, "-l", &n.to_string()]).await?;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut after = tmux(socket, &["capture-pane", "-p", "-t", pane]).await?;
    let mut retried_enter = false;
    if shows_option(&after) {
        retried_enter = true;
        tmux(socket, &["send-keys", "-t", pane, "Enter"]).await?;
        tokio::time::sleep(Duration::from_millis(400)).await;
        after = tmux(socket, &["capture-pane", "-p", "-t", pane]).await?;
    }
    Ok(Sent {
        cleared_input: false,
        retried_enter,
        verified: !shows_option(&after),
    })
}

/// Types `text` into `pane` and presses Enter, verified.
pub async fn send(socket: Option<&str>, pane: &str, text: &str) -> Result<Sent, String> {
    let capture = |s: Option<&str>| {
        let s = s.map(str::to_string);
        async move { tmux(s.as_deref(), &["capture-pane", "-p", "-t", pane]).await }
    };
    let before = capture(socket).await?;
    let cleared_input = read_pane(&before).input.is_some_and(|t| !t.is_empty());
    if cleared_input {
        tmux(socket, &["send-keys", "-t", pane, "Escape"]).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tmux(socket, &["send-keys", "-t", pane, "-l", text]).await?;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let typed = capture(socket).await?;
    tmux(socket, &["send-keys", "-t", pane, "Enter"]).await?;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut after = capture(socket).await?;
    let mut retried_enter = false;
    if after == typed {
        retried_enter = true;
        tmux(socket, &["send-keys", "-t", pane, "Enter"]).await?;
        tokio::time::sleep(Duration::from_millis(400)).await;
        after = capture(socket).await?;
    }
    Ok(Sent {
        cleared_input,
        retried_enter,
        verified: after != typed,
    })
}
