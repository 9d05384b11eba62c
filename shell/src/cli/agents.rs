//! The commands that talk to a running server about agents: `agents`, `wait`, `send`,
//! `clear`, `reconcile`.

use super::output::outln;
use super::ServerArg;
use std::process::ExitCode;

/// What a refusing server said (its `error`), or its status when it said nothing.
pub(crate) fn server_error(status: u16, v: &serde_json::Value) -> String {
    v["error"]
        .as_str()
        .map_or_else(|| format!("server answered {status}"), str::to_string)
}

pub(crate) fn call(
    server: &ServerArg,
    method: &str,
    path: &str,
) -> Result<(u16, serde_json::Value), String> {
    call_with(
        server,
        method,
        path,
        b"",
        std::time::Duration::from_secs(30),
    )
}

/// [`call`] with a body and how long to wait for the answer.
pub(crate) fn call_with(
    server: &ServerArg,
    method: &str,
    path: &str,
    body: &[u8],
    wait: std::time::Duration,
) -> Result<(u16, serde_json::Value), String> {
    let (status, body) = headspace::client::request(
        &server.addr,
        method,
        path,
        body,
        server.auth.get().as_deref(),
        wait,
    )?;
    let v =
        serde_json::from_str(&body).map_err(|_| format!("unexpected answer ({status}): {body}"))?;
    Ok((status, v))
}

/// Ends command `what` with the server's refusal (and a merge's conflicting files), or with
/// why the server could not be asked.
pub(crate) fn failed(what: &str, answer: Result<(u16, serde_json::Value), String>) -> ExitCode {
    match answer {
        Ok((status, v)) => {
            eprintln!("headspace {what}: {}", server_error(status, &v));
            for f in v["conflicts"].as_array().into_iter().flatten() {
                eprintln!("  conflict: {}", f.as_str().unwrap_or_default());
            }
        }
        Err(e) => eprintln!("headspace {what}: {e}"),
    }
    ExitCode::FAILURE
}

pub(crate) fn agents(server: &ServerArg) -> ExitCode {
    match call(server, "GET", "/api/agents") {
        Ok((200, serde_json::Value::Array(rows))) => {
            outln!(
                "{:<5} {:<24} {:<15} {:<8} {:<6} SESSION",
                "ID",
                "PROJECT",
                "STATE",
                "ACTIVITY",
                "PANE"
            );
            for a in rows {
                let s = |k: &str| a[k].as_str().unwrap_or("-").to_string();
                outln!(
                    "{:<5} {:<24} {:<15} {:<8} {:<6} {}",
                    a["id"].as_u64().unwrap_or(0),
                    s("project"),
                    s("state"),
                    s("activity"),
                    s("tmux_pane"),
                    s("session_id")
                );
            }
            ExitCode::SUCCESS
        }
        Ok((status, v)) => {
            eprintln!(
                "headspace agents: server answered {status}: {}",
                v["error"].as_str().unwrap_or(&v.to_string())
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("headspace agents: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn wait(agent: &str, timeout: f64, server: &ServerArg) -> ExitCode {
    let path = format!(
        "/api/agents/{}/wait?timeout={timeout}",
        headspace::client::encode_segment(agent)
    );
    let answer = headspace::client::request(
        &server.addr,
        "GET",
        &path,
        b"",
        server.auth.get().as_deref(),
        std::time::Duration::try_from_secs_f64(timeout.clamp(0.0, 86_400.0) + 30.0)
            .unwrap_or(std::time::Duration::from_secs(30)),
    );
    match answer.map(|(s, b)| {
        (
            s,
            serde_json::from_str::<serde_json::Value>(&b).unwrap_or_default(),
        )
    }) {
        Ok((200, v)) if v["status"] == "idle" => {
            outln!(
                "{agent} is {} (waited {:.1}s)",
                v["activity"].as_str().unwrap_or("idle"),
                v["waited_ms"].as_f64().unwrap_or(0.0) / 1000.0
            );
            ExitCode::SUCCESS
        }
        Ok((200, v)) => {
            outln!(
                "{agent} is still {} after {timeout}s",
                v["activity"].as_str().unwrap_or("running")
            );
            ExitCode::from(1)
        }
        Ok((status, v)) => {
            eprintln!("headspace wait: {}", server_error(status, &v));
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("headspace wait: {e}");
            ExitCode::from(2)
        }
    }
}

pub(crate) fn send(agent: &str, text: Option<&str>, server: &ServerArg) -> ExitCode {
    let (path, body) = match text {
        Some(t) => (
            format!(
                "/api/agents/{}/send",
                headspace::client::encode_segment(agent)
            ),
            serde_json::json!({"text": t}).to_string(),
        ),
        None => (
            format!(
                "/api/agents/{}/clear",
                headspace::client::encode_segment(agent)
            ),
            String::new(),
        ),
    };
    let what = if text.is_some() { "send" } else { "clear" };
    match headspace::client::request(
        &server.addr,
        "POST",
        &path,
        body.as_bytes(),
        server.auth.get().as_deref(),
        std::time::Duration::from_secs(30),
    ) {
        Ok((200, b)) => {
            let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_default();
            if v["verified"] == true {
                outln!("sent to {}", v["pane"].as_str().unwrap_or(agent));
            } else {
                outln!(
                    "typed into {}, but the pane did not change after Enter",
                    v["pane"].as_str().unwrap_or(agent)
                );
            }
            ExitCode::SUCCESS
        }
        Ok((status, b)) => {
            let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_default();
            eprintln!("headspace {what}: {}", server_error(status, &v));
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("headspace {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn reconcile(agent: &str, server: &ServerArg) -> ExitCode {
    let path = format!(
        "/api/agents/{}/reconcile",
        headspace::client::encode_segment(agent)
    );
    match call(server, "POST", &path) {
        Ok((200, v)) => {
            outln!("{v}");
            ExitCode::SUCCESS
        }
        Ok((status, v)) => {
            eprintln!("headspace reconcile: {}", server_error(status, &v));
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("headspace reconcile: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `headspace rename AGENT NAME`: the name every page, device and this CLI show for it
/// (`""` clears it).
pub(crate) fn rename(agent: &str, name: &str, server: &ServerArg) -> ExitCode {
    let path = format!(
        "/api/agents/{}/rename",
        headspace::client::encode_segment(agent)
    );
    let body = serde_json::json!({"name": name}).to_string();
    match call_with(
        server,
        "POST",
        &path,
        body.as_bytes(),
        std::time::Duration::from_secs(10),
    ) {
        Ok((200, v)) => {
            match v["name"].as_str() {
                Some(n) => outln!("agent {} is now called {n}", v["id"]),
                None => outln!("agent {} has no name now", v["id"]),
            }
            ExitCode::SUCCESS
        }
        other => failed("rename", other),
    }
}
