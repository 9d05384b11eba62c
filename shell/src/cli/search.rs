//! `headspace search QUERY` (one hit a line) and `headspace prune --before DATE [--dry-run]`
//! (lists what goes, then deletes it), both through the running server.

use super::agents::{call, server_error};
use super::output::{outln, terminal_safe, unsafe_char, write_line};
use super::ServerArg;
use headspace::client::encode_segment;
use serde_json::{json, Value};
use std::io::IsTerminal;
use std::process::ExitCode;

/// The exit code when the server could not be asked, refused, or the arguments are wrong.
const ERROR: u8 = 2;

/// Prints the hits of a search, best first: time, agent, project, actor, snippet.
pub(crate) fn search(
    query: &str,
    project: Option<&str>,
    agent: Option<&str>,
    limit: Option<u32>,
    server: &ServerArg,
) -> ExitCode {
    let mut path = format!("/api/search?q={}", encode_segment(query));
    for (key, value) in [
        ("project", project.map(str::to_string)),
        ("agent", agent.map(str::to_string)),
        ("limit", limit.map(|l| l.to_string())),
    ] {
        if let Some(v) = value {
            path.push_str(&format!("&{key}={}", encode_segment(&v)));
        }
    }
    let hits = match call(server, "GET", &path) {
        Ok((200, Value::Array(hits))) => hits,
        Ok((status, v)) => {
            eprintln!("headspace search: {}", server_error(status, &v));
            return ExitCode::from(ERROR);
        }
        Err(e) => {
            eprintln!("headspace search: {e}");
            return ExitCode::from(ERROR);
        }
    };
    if hits.is_empty() {
        outln!("no results for {query:?}");
    }
    let bold = std::io::stdout().is_terminal();
    for h in &hits {
        // A hit found by a tool step names the tool before the step's summary.
        let step: String = h["step"]["tool"]
            .as_str()
            .map(|t| format!("{t}: "))
            .unwrap_or_default();
        let line = format!(
            "{}  agent {:<4} {:<16} {:<5} turn {:<6} {step}",
            text(&h["timestamp"])
                .get(..19)
                .unwrap_or(text(&h["timestamp"])),
            h["agent_id"],
            text(&h["project"]),
            text(&h["actor"]),
            h["turn_id"],
        );
        // Every piece from the server made safe; then the highlights' own escapes.
        write_line(&format!(
            "{}{}",
            terminal_safe(&line),
            snippet_line(h, bold)
        ));
    }
    ExitCode::SUCCESS
}

/// Lists the ended agents last heard of before `before`, then (unless `dry_run`) deletes them
/// with their turns. Refuses a date it cannot read.
pub(crate) fn prune(before: &str, dry_run: bool, server: &ServerArg) -> ExitCode {
    if headspace::server::search::parse_bound(before, false).is_none() {
        eprintln!("headspace prune: --before must be a day (2026-11-20) or an RFC 3339 time, not {before:?}");
        return ExitCode::from(ERROR);
    }
    let listed = match post_prune(server, before, true) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("headspace prune: {e}");
            return ExitCode::from(ERROR);
        }
    };
    let agents = listed["agents"].as_array().cloned().unwrap_or_default();
    if agents.is_empty() {
        outln!("nothing to prune: no ended agent last heard of before {before}");
        return ExitCode::SUCCESS;
    }
    for a in &agents {
        outln!(
            "agent {}  {:<16} session {}  last seen {}  {} turn(s)",
            a["id"],
            text(&a["project"]),
            text(&a["session_id"]),
            text(&a["last_seen_at"]),
            a["turns"],
        );
    }
    let turns = listed["turns"].as_i64().unwrap_or(0);
    if dry_run {
        outln!(
            "would delete {} ended agent(s) and {turns} turn(s) (dry run: nothing deleted)",
            agents.len()
        );
        return ExitCode::SUCCESS;
    }
    match post_prune(server, before, false) {
        Ok(done) => {
            let n = done["agents"].as_array().map_or(0, Vec::len);
            outln!(
                "deleted {n} ended agent(s) and {} turn(s)",
                done["turns"].as_i64().unwrap_or(0)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("headspace prune: {e}");
            ExitCode::from(ERROR)
        }
    }
}

fn post_prune(server: &ServerArg, before: &str, dry_run: bool) -> Result<Value, String> {
    let body = json!({"before": before, "dry_run": dry_run}).to_string();
    let (status, answer) = headspace::client::request(
        &server.addr,
        "POST",
        "/api/prune",
        body.as_bytes(),
        server.auth.get().as_deref(),
        std::time::Duration::from_secs(120),
    )?;
    let v: Value = serde_json::from_str(&answer)
        .map_err(|_| format!("unexpected answer ({status}): {answer}"))?;
    if status == 200 {
        Ok(v)
    } else {
        Err(server_error(status, &v))
    }
}

/// A hit's snippet on one line: control characters (a terminal's escapes among them) become
/// spaces, since agent text is data; highlights in bold on a terminal.
fn snippet_line(hit: &Value, bold: bool) -> String {
    let ranges: Vec<(usize, usize)> = hit["highlights"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| Some((r[0].as_u64()? as usize, r[1].as_u64()? as usize)))
                .collect()
        })
        .unwrap_or_default();
    let mut out = String::new();
    for (i, c) in text(&hit["snippet"]).chars().enumerate() {
        if bold && ranges.iter().any(|&(a, _)| a == i) {
            out.push_str("\x1b[1m");
        }
        // One line: newlines and tabs become spaces too.
        out.push(if c.is_control() || unsafe_char(c) {
            ' '
        } else {
            c
        });
        if bold && ranges.iter().any(|&(_, b)| b == i + 1) {
            out.push_str("\x1b[0m");
        }
    }
    out
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}
