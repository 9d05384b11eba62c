//! Names that travel: a name given to an agent is kept by the server, so every page, device
//! and the CLI show it, and the notices say it; two agents of one folder are told apart by
//! it. A name that would garble a terminal is refused.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

#[test]
fn a_name_given_once_is_on_every_card_and_in_the_event_stream() {
    let Some(db) = fresh_db("names") else {
        return;
    };
    let claude = temp_dir("names");
    let server = Server::start(&db, &claude, &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // Two agents in one folder: the same project on both cards.
    let in_shop = |n: u64| {
        let mut s = SessionWriter::new(n, Timestamp(now));
        s.cwd = "/w/shop".into();
        s.dir = headspace_core::engine::claude_project_dir(&s.cwd);
        s
    };
    let (a, b) = (in_shop(41), in_shop(42));
    for (s, pane) in [(&a, "%41"), (&b, "%42")] {
        server.post_hook(
            s,
            &claude,
            pane,
            "SessionStart",
            json!({"source": "startup"}),
        );
    }
    let id = wait_for(Duration::from_secs(10), || {
        server.try_json(&format!("/api/agents/{}", a.session_id))?["id"].as_u64()
    })
    .expect("agent a");
    let events = sse(&server.addr, None);
    std::thread::sleep(Duration::from_millis(300));

    let (status, body) = server.post(
        &format!("/api/agents/{id}/rename"),
        json!({"name": "  login fix  "}).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    let card = server.json(&format!("/api/agents/{id}"));
    assert_eq!(card["name"], "login fix", "trimmed, and on the card");
    let list = server.json("/api/agents");
    let other = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["session_id"] == json!(b.session_id))
        .unwrap();
    assert_eq!(other["name"], serde_json::Value::Null);
    assert_eq!(
        other["project"], card["project"],
        "one folder, told apart by name"
    );
    wait_for(Duration::from_secs(5), || {
        let text = events.lock().unwrap().clone();
        text.contains(&format!("event: agent_renamed\ndata: {{\"agent_id\":{id},"))
            .then_some(())
    })
    .unwrap_or_else(|| panic!("pages are told: {}", events.lock().unwrap()));

    // The CLI sets and clears it too.
    let out = headspace()
        .args([
            "rename",
            &id.to_string(),
            "api work",
            "--addr",
            &server.addr,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        server.json(&format!("/api/agents/{id}"))["name"],
        "api work"
    );

    // Refused, and nothing changed: control characters, too long, not a string.
    for bad in [
        json!({"name": "evil\u{1b}]0;owned\u{7}"}),
        json!({"name": "x".repeat(81)}),
        json!({"name": 5}),
        json!(["name"]),
    ] {
        let (status, body) = server.post(
            &format!("/api/agents/{id}/rename"),
            bad.to_string().as_bytes(),
        );
        assert_eq!(status, 400, "{bad}: {body}");
    }
    assert_eq!(
        server.json(&format!("/api/agents/{id}"))["name"],
        "api work"
    );
    let (status, _) = server.post(
        "/api/agents/999999/rename",
        json!({"name": "x"}).to_string().as_bytes(),
    );
    assert_eq!(status, 404);
    let (status, _) = server.post(
        &format!("/api/agents/{id}/rename"),
        json!({"name": ""}).to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        server.json(&format!("/api/agents/{id}"))["name"],
        serde_json::Value::Null
    );
    server.stop();
}
