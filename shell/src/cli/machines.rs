//! `headspace machines`: the machines writing into the server's database (issue 21), one line
//! each: name, online or offline (since its last heartbeat), when it was last seen, and its
//! live agents; `--json` prints `GET /api/machines` as it is.

use super::agents::{call, server_error};
use super::output::outln;
use super::ServerArg;
use headspace_core::Timestamp;
use serde_json::Value;
use std::process::ExitCode;

/// Prints the machines the server knows.
pub(crate) fn machines(json: bool, server: &ServerArg) -> ExitCode {
    match call(server, "GET", "/api/machines") {
        Ok((200, Value::Array(rows))) => {
            if json {
                outln!("{}", Value::Array(rows));
                return ExitCode::SUCCESS;
            }
            let now_ms = headspace::clock::wall().millis();
            outln!(
                "{:<24} {:<34} {:<10} AGENTS",
                "MACHINE",
                "STATUS",
                "LAST SEEN"
            );
            for m in &rows {
                outln!("{}", line(m, now_ms));
            }
            ExitCode::SUCCESS
        }
        Ok((status, v)) => {
            eprintln!("headspace machines: {}", server_error(status, &v));
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("headspace machines: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One machine's line: `desk-2  offline since 2026-11-24T10:42:03.120Z  5m ago  2`.
fn line(m: &Value, now_ms: i64) -> String {
    let seen =
        Timestamp::from_json(&m["last_seen_at"]).or_else(|| Timestamp::from_json(&m["last_seen"]));
    let status = match (m["online"].as_bool(), seen) {
        (Some(true), _) => "online".to_string(),
        (_, Some(at)) => format!("offline since {at}"),
        _ => "offline".to_string(),
    };
    let ago = seen.map_or_else(
        || "never".to_string(),
        |at| ago(now_ms.saturating_sub(at.0)),
    );
    format!(
        "{:<24} {:<34} {:<10} {}",
        m["name"].as_str().unwrap_or("?"),
        status,
        ago,
        m["agents"].as_u64().unwrap_or(0)
    )
}

/// `3s ago`, `5m ago`, `2h ago`, `4d ago` (a time ahead of this clock is `now`).
fn ago(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        i64::MIN..=0 => "now".into(),
        1..=59 => format!("{s}s ago"),
        60..=3599 => format!("{}m ago", s / 60),
        3600..=86_399 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::line;
    use serde_json::json;

    #[test]
    fn a_line_says_online_or_offline_since_its_last_heartbeat() {
        let at = 1_793_523_600_000;
        let on = json!({"name": "laptop", "online": true, "last_seen": "2026-11-01T09:00:00.000Z", "agents": 3});
        let l = line(&on, at + 3_000);
        assert!(l.starts_with("laptop "), "{l}");
        assert!(l.contains(" online "), "{l}");
        assert!(l.ends_with(" 3"), "{l}");
        let off = json!({"name": "desk", "online": false, "last_seen": "2026-11-01T09:00:00.000Z", "agents": 0});
        let l = line(&off, at + 300_000);
        assert!(l.contains("offline since 2026-11-01T09:00:00.000Z"), "{l}");
        assert!(l.contains("5m ago"), "{l}");
    }
}
