//! The real server binary, real PostgreSQL, real files: hooks and transcript appends give
//! the right turns through the API and SSE, and hostile input breaks nothing.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

fn turns(server: &Server, agent: &str) -> Vec<serde_json::Value> {
    server
        .try_json(&format!("/api/agents/{agent}/turns"))
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn hooks_and_transcript_give_the_right_turns_through_api_and_sse() {
    let Some(db) = fresh_db("server_api") else {
        return;
    };
    let claude = temp_dir("server-api");
    let server = Server::start(&db, &claude, &[]);
    let events = sse(&server.addr, None);
    let mut s = SessionWriter::new(1, Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap());
    let file = claude.join(s.path());

    // A hook-only turn is shown at once, provisional.
    let (status, body) = server.post(
        "/hook/UserPromptSubmit",
        &hook(
            &s,
            &claude,
            "%4",
            "UserPromptSubmit",
            json!({"prompt": "fix the build"}),
        ),
    );
    assert_eq!((status, body.as_str()), (200, "{}"));
    let agent = wait_for(Duration::from_secs(5), || {
        let t = turns(&server, "%254");
        (t.len() == 1).then_some(t)
    })
    .expect("hook turn appears");
    assert!(agent[0]["entry_uuid"].is_null());
    assert_eq!(agent[0]["timestamp_source"], "server");

    // Its transcript line claims it: same turn, transcript time.
    let p = s.prompt("fix the build", None);
    append(&file, &format!("{}\n", p.json));
    let claimed = wait_for(Duration::from_secs(5), || {
        let t = turns(&server, "%254");
        (t.first()?["entry_uuid"] == p.uuid.as_str()).then_some(t)
    })
    .expect("claimed");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0]["timestamp_source"], "jsonl");

    // A transcript-only turn appears without any hook.
    let a = s.agent_text("Done. All tests pass.");
    append(&file, &format!("{}\n", a.json));
    let all = wait_for(Duration::from_secs(5), || {
        let t = turns(&server, &s.session_id);
        (t.len() == 2).then_some(t)
    })
    .expect("transcript turn appears");
    assert_eq!(all[1]["text"], "Done. All tests pass.");
    let agents = server.json("/api/agents");
    assert_eq!(agents[0]["state"], "complete");
    assert_eq!(agents[0]["activity"], "idle");
    assert_eq!(agents[0]["turn_count"], 2);
    assert_eq!(agents[0]["tmux_pane"], "%4");

    // SSE saw it all, with increasing ids.
    let stream = wait_for(Duration::from_secs(5), || {
        let e = events.lock().unwrap().clone();
        (e.matches("event: turn_created").count() >= 2 && e.contains("event: turn_updated"))
            .then_some(e)
    })
    .unwrap_or_else(|| panic!("events: {}", events.lock().unwrap()));
    let ids: Vec<u64> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("id: ")?.parse().ok())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(stream.contains("\"update_type\":\"timestamp_correction\""));

    // A client that reconnects with Last-Event-ID gets exactly what it missed.
    let replay = sse(&server.addr, Some(ids[0]));
    let again = wait_for(Duration::from_secs(5), || {
        let e = replay.lock().unwrap().clone();
        let got: Vec<u64> = e
            .lines()
            .filter_map(|l| l.strip_prefix("id: ")?.parse().ok())
            .collect();
        (got.len() >= ids.len() - 1).then_some(got)
    })
    .expect("replayed");
    assert_eq!(again[..ids.len() - 1], ids[1..]);
    // Ids no longer held: a gap event.
    let gapped = sse(&server.addr, Some(1));
    assert!(wait_for(Duration::from_secs(5), || gapped
        .lock()
        .unwrap()
        .contains("event: gap")
        .then_some(()))
    .is_some());

    // Reconcile: nothing missing; unknown agents are 404.
    let (status, body) = server.post(&format!("/api/agents/{}/reconcile", s.session_id), b"");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        json!({"status": "ok", "created": 0})
    );
    assert_eq!(server.post("/api/agents/nobody/reconcile", b"").0, 404);
    assert_eq!(server.get("/api/agents/999").0, 404);

    // Several cards in one request, as GET /api/agents/{id} shows each: an unknown id is left
    // out, a repeated one shown once, and a list that is not 1 to 100 ids refused.
    let id = server.json("/api/agents")[0]["id"].as_u64().unwrap();
    let one = server.json(&format!("/api/agents/{id}"));
    let cards = server.json(&format!("/api/agents?ids=999,{id},{id}"));
    assert_eq!(cards.as_array().map(Vec::len), Some(1), "{cards}");
    assert_eq!(
        (
            &cards[0]["id"],
            &cards[0]["session_id"],
            &cards[0]["project"]
        ),
        (&one["id"], &one["session_id"], &one["project"])
    );
    assert_eq!(server.json("/api/agents?ids=999"), json!([]));
    let hundred: Vec<String> = (1..=100).map(|n| n.to_string()).collect();
    assert_eq!(
        server
            .get(&format!("/api/agents?ids={}", hundred.join(",")))
            .0,
        200
    );
    let too_many = format!("{},101", hundred.join(","));
    for bad in [
        "",
        "1,,2",
        "x",
        "-1",
        "%201",
        "1;2",
        "18446744073709551616",
        &too_many,
    ] {
        let (status, body) = server.get(&format!("/api/agents?ids={bad}"));
        assert_eq!(status, 400, "ids={bad}: {body}");
        assert!(
            body.contains("comma-separated list of 1 to 100 agent ids"),
            "{body}"
        );
    }
    let metrics = server.get("/metrics").1;
    assert!(
        metrics.contains("headspace_hooks_total{event=\"UserPromptSubmit\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("headspace_turns_created_total{source=\"transcript\"} 1"));
    server.stop();
}

#[test]
fn hostile_input_gets_the_right_status_and_breaks_nothing() {
    let Some(db) = fresh_db("server_hostile") else {
        return;
    };
    let claude = temp_dir("server-hostile");
    let server = Server::start(&db, &claude, &["--max-body", "4096"]);
    let mut s = SessionWriter::new(2, Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap());
    let file = claude.join(s.path());

    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("/hook/stop", b"{not json".to_vec(), 400),
        ("/hook/stop", b"[1,2,3]".to_vec(), 400),
        ("/hook/stop", br#"{"session_id": 12}"#.to_vec(), 400),
        (
            "/hook/stop",
            br#"{"emitted_at": "yesterday", "session_id": "x"}"#.to_vec(),
            400,
        ),
        ("/hooks/claude", br#"{"session_id": "x"}"#.to_vec(), 400),
        ("/hook/stop", vec![0xff, 0xfe, 0x00, 0x01], 400),
        ("/hook/stop", vec![b' '; 10_000], 413),
        (
            "/hook/brand-new-event",
            br#"{"session_id": "x", "whatever": [1]}"#.to_vec(),
            200,
        ),
        (
            "/hooks/claude",
            serde_json::to_vec(&json!({
                "session_id": "x",
                "hook_event_name": "evil\"} 1\nheadspace_store_healthy 0\n\\",
            }))
            .unwrap(),
            200,
        ),
        (
            "/hook/UserPromptSubmit",
            br#"{"session_id": "evil", "prompt": "x", "transcript_path": "/etc/passwd"}"#.to_vec(),
            200,
        ),
        (
            "/hook/UserPromptSubmit",
            br#"{"session_id": "evil2", "prompt": "y", "transcript_path": "../../etc/shadow"}"#
                .to_vec(),
            200,
        ),
    ];
    for (path, body, want) in &cases {
        let (status, text) = server.post(path, body);
        assert_eq!(
            status,
            *want,
            "{path} {:?}: {text}",
            String::from_utf8_lossy(&body[..body.len().min(40)])
        );
        if *want >= 400 {
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).unwrap()["error"].is_string(),
                "{text}"
            );
        }
    }
    // A hostile event name is counted under its escaped name (in the server's casing) and
    // injects no metrics line.
    let metrics = server.get("/metrics").1;
    assert!(
        metrics
            .contains(r#"headspace_hooks_total{event="Evil\"} 1\nheadspaceStoreHealthy 0\n\\"} 1"#),
        "{metrics}"
    );
    assert_eq!(
        metrics
            .lines()
            .filter(|l| l.starts_with("headspace_store_healthy "))
            .collect::<Vec<_>>(),
        ["headspace_store_healthy 1"],
        "{metrics}"
    );
    assert!(wait_for(Duration::from_secs(5), || server
        .log()
        .contains("transcript_path outside the claude dir refused")
        .then_some(()))
    .is_some());

    // Garbage in a transcript: non-UTF-8, binary, a broken line; the turns around it are kept.
    let a = s.prompt("before the garbage", None);
    let b = s.prompt("after the garbage", None);
    let mut bytes = format!("{}\n", a.json).into_bytes();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x00, b'{', b'\n']);
    bytes.extend_from_slice(b"{\"type\":\"user\",\"message\":\n");
    bytes.extend_from_slice(format!("{}\n", b.json).as_bytes());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    let got = wait_for(Duration::from_secs(5), || {
        let t = turns(&server, &s.session_id);
        (t.len() == 2).then_some(t)
    })
    .unwrap_or_else(|| panic!("log:\n{}", server.log()));
    assert_eq!(got[0]["text"], "before the garbage");
    assert_eq!(got[1]["text"], "after the garbage");

    // A truncated (replaced) file is read again; nothing is doubled.
    std::fs::write(&file, format!("{}\n", a.json)).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let c = s.prompt("after the truncation", None);
    append(&file, &format!("{}\n", c.json));
    let got = wait_for(Duration::from_secs(5), || {
        let t = turns(&server, &s.session_id);
        (t.len() == 3).then_some(t)
    })
    .unwrap_or_else(|| panic!("log:\n{}", server.log()));
    assert_eq!(got[2]["text"], "after the truncation");

    assert_eq!(server.get("/healthz").0, 200);
    assert_eq!(server.get("/api/agents/1/turns?limit=abc").0, 400);
    assert_eq!(server.get("/nope/../../etc/passwd").0, 404);
    server.stop();
}

#[test]
fn agents_and_reconcile_commands_talk_to_the_server() {
    let Some(db) = fresh_db("server_cli") else {
        return;
    };
    let claude = temp_dir("server-cli");
    let server = Server::start(&db, &claude, &[]);
    let s = SessionWriter::new(3, Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap());
    server.post(
        "/hook/UserPromptSubmit",
        &hook(
            &s,
            &claude,
            "%5",
            "UserPromptSubmit",
            json!({"prompt": "hello"}),
        ),
    );
    assert!(
        wait_for(Duration::from_secs(5), || (turns(&server, "%255").len()
            == 1)
            .then_some(()))
        .is_some()
    );
    let out = common::headspace()
        .args(["agents", "--addr", &server.addr])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.contains("commanded") && l.contains("%5") && l.contains("project3")),
        "{text}"
    );
    let out = common::headspace()
        .args(["reconcile", "%5", "--addr", &server.addr])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(),
        json!({"status": "ok", "created": 0})
    );
    let out = common::headspace()
        .args(["reconcile", "ghost", "--addr", &server.addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no agent ghost"));
    let out = common::headspace()
        .args(["agents", "--addr", "127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `headspace serve` running?"));
    server.stop();
}

#[test]
fn off_loopback_the_server_needs_a_token_for_everything_but_healthz() {
    let Some(db) = fresh_db("server_token") else {
        return;
    };
    let claude = temp_dir("server-token");
    let bin = env!("CARGO_BIN_EXE_headspace");
    let refused = std::process::Command::new(bin)
        .args(["serve", "--addr", "0.0.0.0:0", "--database-url", &db])
        .arg("--claude-dir")
        .arg(&claude)
        .env_remove("HEADSPACE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("needs a token"));

    let server = Server::start(&db, &claude, &["--token", "s3cret"]);
    let a = &server.addr;
    assert_eq!(common::anonymous(a, "GET", "/healthz", b"").0, 200);
    assert_eq!(common::anonymous(a, "GET", "/api/agents", b"").0, 401);
    assert_eq!(common::anonymous(a, "GET", "/api/agents?ids=1", b"").0, 401);
    assert_eq!(common::anonymous(a, "POST", "/hook/stop", b"{}").0, 401);
    let (status, _) = headspace::client::request(
        &server.addr,
        "GET",
        "/api/agents",
        b"",
        Some("s3cret"),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(status, 200);
    server.stop();
}

#[test]
fn what_serve_records_replay_reproduces() {
    let Some(db) = fresh_db("server_record") else {
        return;
    };
    let claude = temp_dir("server-record");
    let trace = claude.join("trace.jsonl");
    let server = Server::start(&db, &claude, &["--record", &trace.display().to_string()]);
    // The trace copies every prompt and transcript: the user's alone, as the transcripts are.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&trace).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the trace is mode {mode:o}");
    }
    let mut s = SessionWriter::new(9, Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap());
    let file = claude.join(s.path());
    let body = hook(
        &s,
        &claude,
        "%6",
        "UserPromptSubmit",
        json!({"prompt": "record me"}),
    );
    server.post("/hook/UserPromptSubmit", &body);
    server.post("/hook/UserPromptSubmit", &body); // a duplicate delivery
    let p = s.prompt("record me", None);
    let a = s.agent_text("Which file should I change?");
    append(&file, &format!("{}\n{}", p.json, &a.json[..20]));
    std::thread::sleep(Duration::from_millis(400));
    append(&file, &format!("{}\n", &a.json[20..]));
    server.post(
        "/hook/Stop",
        &hook(
            &s,
            &claude,
            "%6",
            "Stop",
            json!({"last_assistant_message": "Which file should I change?"}),
        ),
    );
    let live = wait_for(Duration::from_secs(5), || {
        let t = turns(&server, &s.session_id);
        (t.len() == 2 && t.iter().all(|t| t["entry_uuid"].is_string())).then_some(t)
    })
    .expect("live turns");
    let agents = server.json("/api/agents");
    server.stop();

    let out = common::headspace()
        .arg("replay")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = |t: &serde_json::Value| {
        (
            t["actor"].clone(),
            t["intent"].clone(),
            t["text"].clone(),
            t["entry_uuid"].clone(),
            t["timestamp"].clone(),
        )
    };
    let live_keys: Vec<_> = live.iter().map(key).collect();
    let replay_keys: Vec<_> = replayed["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert_eq!(
        replay_keys,
        live_keys,
        "trace:\n{}",
        std::fs::read_to_string(&trace).unwrap()
    );
    assert_eq!(replayed["agents"][0]["state"], agents[0]["state"]);
    assert_eq!(replayed["agents"][0]["tmux_pane"], "%6");
}

/// A server started as `make run` starts it (no token given, a home of its own), its address
/// and the login link it printed.
fn serve_first_time(
    db: &str,
    home: &std::path::Path,
    claude: &std::path::Path,
) -> (std::process::Child, String, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_headspace"))
        .args(["serve", "--addr", "127.0.0.1:0", "--database-url", db])
        .arg("--claude-dir")
        .arg(claude)
        .env("HEADSPACE_HOME", home)
        .env_remove("HEADSPACE_TOKEN")
        .env_remove("HEADSPACE_TOKEN_FILE")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let (mut addr, mut link, mut log) = (String::new(), String::new(), String::new());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap_or(0) > 0 {
        log.push_str(&line);
        if let Some(rest) = line.split("listening on http://").nth(1) {
            addr = rest.split('/').next().unwrap().to_string();
        }
        if let Some(rest) = line.split("log in: open ").nth(1) {
            link = rest.trim().to_string();
            break;
        }
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    assert!(!addr.is_empty() && !link.is_empty(), "{log}");
    (child, addr, link)
}

/// The first hour with the token: a fresh home gets a token (0600) on the first start, the
/// printed link logs a browser in, `hooks install` records where the token is, the hooks and
/// `headspace agents` find it with no flag, and the next start keeps it.
#[test]
fn the_first_hour_needs_no_flag_the_token_is_made_and_found() {
    use std::os::unix::fs::PermissionsExt;
    let Some(db) = fresh_db("server_first_hour") else {
        return;
    };
    let home = temp_dir("first-hour-home");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let claude = temp_dir("first-hour-claude");
    let (mut child, addr, link) = serve_first_time(&db, &home, &claude);
    let token = std::fs::read_to_string(home.join("token"))
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(token.len(), 64);
    let mode = std::fs::metadata(home.join("token"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(link, format!("http://{addr}/login?token={token}"));
    // The link: a cookie and the page, the token gone from the address.
    let host = format!("Host: {addr}");
    let (status, answer) = raw(&addr, "GET", &format!("/login?token={token}"), &[&host], "");
    assert_eq!(status, 303, "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("location: /\r\n"), "{answer}");
    let cookie = answer
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .expect("a login cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let cookie_header = format!("Cookie: {pair}");
    let (status, _) = raw(&addr, "GET", "/api/agents", &[&host, &cookie_header], "");
    assert_eq!(status, 200);
    let (status, _) = raw(&addr, "GET", "/login?token=wrong", &[&host], "");
    assert_eq!(status, 401);
    // The hooks: installed with no flag but the URL, they find the token.
    let settings = claude.join("settings.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_headspace"))
        .args(["hooks", "install", "--url", &format!("http://{addr}")])
        .arg("--settings")
        .arg(&settings)
        .env("HEADSPACE_HOME", &home)
        .env_remove("HEADSPACE_TOKEN_FILE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let command = installed["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        command.contains(&format!("--token-file {}", home.join("token").display())),
        "{command}"
    );
    assert!(
        !command.contains(&token),
        "the token itself is never in settings.json"
    );
    let s = SessionWriter::new(
        41,
        Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap(),
    );
    let payload = hook(
        &s,
        &claude,
        "%41",
        "UserPromptSubmit",
        json!({"prompt": "first hour"}),
    );
    let mut hook_run = std::process::Command::new("sh")
        .args(["-c", &command])
        .env_remove("HEADSPACE_HOME")
        .env_remove("HEADSPACE_TOKEN_FILE")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    hook_run.stdin.take().unwrap().write_all(&payload).unwrap();
    assert!(hook_run.wait().unwrap().success());
    let agents = |home: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_headspace"))
            .args(["agents", "--addr", &addr])
            .env("HEADSPACE_HOME", home)
            .env_remove("HEADSPACE_TOKEN_FILE")
            .env_remove("HEADSPACE_TOKEN")
            .output()
            .unwrap()
    };
    let listed = wait_for(Duration::from_secs(10), || {
        let out = agents(&home);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.contains("%41")).then_some(text)
    });
    assert!(
        listed.is_some(),
        "the hook's agent, listed by `headspace agents` with no flag"
    );
    // Without the token (another home): refused, saying what to do.
    let elsewhere = temp_dir("first-hour-elsewhere");
    let out = agents(&elsewhere);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs its token"));
    let _ = child.kill();
    let _ = child.wait();
    // The next start keeps the token: the browser's cookie and the hooks go on working.
    let (mut again, addr2, link2) = serve_first_time(&db, &home, &claude);
    assert!(link2.ends_with(&format!("token={token}")), "{link2}");
    let (status, _) = raw(
        &addr2,
        "GET",
        "/api/agents",
        &[&format!("Host: {addr2}"), &cookie_header],
        "",
    );
    assert_eq!(status, 200);
    let _ = again.kill();
    let _ = again.wait();
}
