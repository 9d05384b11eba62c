//! `headspace hook-forward EVENT --url URL [--token-file FILE]`: the command `hooks install`
//! puts in `settings.json`. It reads the payload on stdin, adds `tmux_pane` (from
//! `$TMUX_PANE`) and an `emitted_at` stamp, hands the POST to a detached copy of itself,
//! prints nothing and exits 0 at once, whether or not the server is up. The detached copy
//! reads the server's token (from FILE, else where the CLI finds it) and sends it.

use headspace_core::kind::AgentKind;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Largest payload forwarded.
const MAX_PAYLOAD: u64 = 8 << 20;

/// The payload with the pane and the emission stamp added (kept as is when not an object).
pub fn stamp(payload: &[u8], pane: Option<&str>, now: headspace_core::Timestamp) -> Vec<u8> {
    let Ok(serde_json::Value::Object(mut obj)) =
        serde_json::from_slice::<serde_json::Value>(payload)
    else {
        return payload.to_vec();
    };
    if let Some(p) = pane.filter(|p| !p.is_empty()) {
        obj.entry("tmux_pane").or_insert_with(|| p.into());
    }
    // A stamp already there (a test harness that delays delivery) is kept.
    obj.entry("emitted_at")
        .or_insert_with(|| now.to_string().into());
    serde_json::to_vec(&obj).unwrap_or_else(|_| payload.to_vec())
}

/// The hook side: stamp, detach, exit. Never fails loudly: the agent must not be disturbed.
/// Whether a kind's pane is believed is the core's to say (Codex's, from its shared daemon,
/// is not: `headspace_core::hook::codex`).
pub fn forward(kind: AgentKind, event: &str, url: &str, token_file: Option<&std::path::Path>) {
    let now = crate::server::world::Clock::now(&crate::server::world::SystemClock);
    let mut payload = Vec::new();
    let _ = std::io::stdin().take(MAX_PAYLOAD).read_to_end(&mut payload);
    let body = stamp(&payload, std::env::var("TMUX_PANE").ok().as_deref(), now);
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let url = url.trim_end_matches('/');
    let target = match kind {
        AgentKind::Claude => format!("{url}/hook/{event}"),
        _ => format!("{url}/hook/{}/{event}", kind.name()),
    };
    let mut command = Command::new(exe);
    command.args(["hook-forward", "--post", &target]);
    if let Some(file) = token_file {
        command.arg("--token-file").arg(file);
    }
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0) // its own group: not killed with the hook's
        .spawn();
    if let Ok(mut child) = child {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&body);
        }
    }
}

/// The detached side: POST the body, give up quietly after a few seconds.
pub fn post(target: &str, token_file: Option<&std::path::Path>) {
    let mut body = Vec::new();
    let _ = std::io::stdin().take(MAX_PAYLOAD).read_to_end(&mut body);
    let rest = target.trim_start_matches("http://");
    let (addr, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/hooks/claude"),
    };
    // The token: from the file the hook names, else the environment, else the default home.
    let file = token_file
        .map(std::path::Path::to_path_buf)
        .or_else(|| std::env::var_os("HEADSPACE_TOKEN_FILE").map(std::path::PathBuf::from));
    let given = std::env::var("HEADSPACE_TOKEN").ok();
    let token = crate::config::client_token(file.as_deref(), given.as_deref())
        .ok()
        .flatten();
    let _ = crate::client::request(
        addr,
        "POST",
        path,
        &body,
        token.as_deref(),
        Duration::from_secs(5),
    );
}
