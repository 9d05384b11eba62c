//! `headspace new`, `stop`, `diff`, `merge` and `discard`: agents started, reviewed and stopped
//! through the running server (CONTRACT.md, "Agents you start, review and stop").

use super::agents::{call_with, failed};
use super::output::outln;
use super::ServerArg;
use headspace::client::encode_segment;
use serde_json::{json, Value};
use std::process::ExitCode;
use std::time::Duration;

/// Posts `body` to `path`; the answer's status and JSON, or why there was none.
fn post(
    server: &ServerArg,
    path: &str,
    body: &Value,
    wait: Duration,
) -> Result<(u16, Value), String> {
    call_with(server, "POST", path, body.to_string().as_bytes(), wait)
}

/// `headspace new DIR [--worktree [NAME]] [--base B] [--agent KIND] [--prompt TEXT]`.
pub(crate) fn new(
    dir: &str,
    worktree: Option<&str>,
    base: Option<&str>,
    agent: &str,
    prompt: Option<&str>,
    server: &ServerArg,
) -> ExitCode {
    // The server resolves the folder: it is the server's files that matter, but a relative
    // one means the user's working folder here.
    let dir = std::fs::canonicalize(dir)
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| dir.to_string());
    let body = json!({"project": dir, "worktree": worktree, "base": base, "agent": agent, "prompt": prompt});
    match post(server, "/api/agents", &body, Duration::from_secs(60)) {
        Ok((201, v)) => {
            let id = v["id"]
                .as_u64()
                .map_or_else(|| "(not yet known: no hook came)".into(), |i| i.to_string());
            outln!(
                "started agent {id} in pane {} at {}",
                v["tmux_pane"].as_str().unwrap_or("?"),
                v["cwd"].as_str().unwrap_or("?")
            );
            if let Some(b) = v["branch"].as_str() {
                outln!("branch: {b}");
            }
            outln!(
                "watch it: {}",
                v["attach"].as_str().unwrap_or("tmux attach")
            );
            ExitCode::SUCCESS
        }
        other => failed("new", other),
    }
}

/// `headspace stop AGENT [--force]`.
pub(crate) fn stop(agent: &str, force: bool, server: &ServerArg) -> ExitCode {
    let path = format!("/api/agents/{}/stop", encode_segment(agent));
    match post(
        server,
        &path,
        &json!({"force": force}),
        Duration::from_secs(30),
    ) {
        Ok((200, v)) => {
            outln!(
                "stopped {agent} ({})",
                v["how"].as_str().unwrap_or("stopped")
            );
            ExitCode::SUCCESS
        }
        other => failed("stop", other),
    }
}

/// `headspace merge AGENT [--squash]`.
pub(crate) fn merge(agent: &str, squash: bool, server: &ServerArg) -> ExitCode {
    let path = format!("/api/agents/{}/merge", encode_segment(agent));
    let strategy = if squash { "squash" } else { "merge" };
    match post(
        server,
        &path,
        &json!({"strategy": strategy}),
        Duration::from_secs(60),
    ) {
        Ok((200, v)) => {
            outln!(
                "merged {} into {} ({})",
                v["branch"].as_str().unwrap_or("?"),
                v["into"].as_str().unwrap_or("?"),
                v["commit"].as_str().unwrap_or("?")
            );
            ExitCode::SUCCESS
        }
        other => failed("merge", other),
    }
}

/// `headspace discard AGENT`.
pub(crate) fn discard(agent: &str, server: &ServerArg) -> ExitCode {
    let path = format!("/api/agents/{}/discard", encode_segment(agent));
    match post(server, &path, &json!({}), Duration::from_secs(60)) {
        Ok((200, v)) => {
            outln!(
                "removed {} and {}",
                v["worktree"].as_str().unwrap_or("?"),
                v["branch"].as_str().unwrap_or("?")
            );
            ExitCode::SUCCESS
        }
        other => failed("discard", other),
    }
}

/// `headspace diff AGENT`: each file with its counts, then the patch.
pub(crate) fn diff(agent: &str, server: &ServerArg) -> ExitCode {
    let path = format!("/api/agents/{}/diff", encode_segment(agent));
    let answer = call_with(server, "GET", &path, b"", Duration::from_secs(60));
    match answer {
        Ok((200, v)) => {
            let files = v["files"].as_array().cloned().unwrap_or_default();
            outln!(
                "{} file(s) changed against {}",
                files.len(),
                v["base"].as_str().unwrap_or("?")
            );
            for f in &files {
                outln!(
                    "  {:<9} +{:<5} -{:<5} {}",
                    f["status"].as_str().unwrap_or("?"),
                    f["added"],
                    f["removed"],
                    f["path"].as_str().unwrap_or("?")
                );
            }
            for f in &files {
                outln!("{}", f["patch"].as_str().unwrap_or_default().trim_end());
            }
            ExitCode::SUCCESS
        }
        other => failed("diff", other),
    }
}
