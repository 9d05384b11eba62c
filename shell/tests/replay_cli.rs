//! `headspace replay TRACE` from outside: the real binary, a trace file, JSON on stdout.

use headspace_core::Timestamp;
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::{json, Value};
use std::process::Command;

fn trace_with_restart() -> String {
    let t0 = Timestamp::parse_rfc3339("2026-02-18T10:00:00Z").unwrap();
    let mut s = SessionWriter::new(1, t0);
    let mut out = vec![
        json!({"trace": 1, "epoch": "2026-02-18T10:00:00Z", "claude_dir": CLAUDE_DIR}).to_string(),
    ];
    let hook = |at: i64, s: &SessionWriter, event: &str, extra: Value| {
        let body: Value =
            serde_json::from_slice(&s.hook(event, Some("%3"), Some(t0.add_millis(at)), extra))
                .unwrap();
        json!({"at_ms": at, "hook": {"event": event, "body": body}}).to_string()
    };
    out.push(hook(
        0,
        &s,
        "UserPromptSubmit",
        json!({"prompt": "fix the build"}),
    ));
    let p = s.prompt("fix the build", None);
    let a = s.agent_text("Done. All tests pass.");
    let half = p.json.len() / 2;
    out.push(
        json!({"at_ms": 40, "append": {"path": s.path(), "data": &p.json[..half]}}).to_string(),
    );
    out.push(json!({"at_ms": 50, "restart": {}}).to_string());
    out.push(json!({"at_ms": 60, "append": {"path": s.path(), "data": format!("{}\n{}\n", &p.json[half..], a.json)}}).to_string());
    out.push(hook(
        900,
        &s,
        "Stop",
        json!({"last_assistant_message": "Done. All tests pass."}),
    ));
    out.push(json!({"at_ms": 1500, "tick": {}}).to_string());
    out.push(json!({"at_ms": 2000, "reconcile": {"agent": s.session_id}}).to_string());
    out.join("\n") + "\n"
}

fn replay(path: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_headspace"))
        .arg("replay")
        .arg(path)
        .output()
        .expect("binary runs")
}

#[test]
fn replay_prints_the_final_state_byte_identically() {
    let dir = std::env::temp_dir().join(format!("headspace-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, trace_with_restart()).unwrap();
    let a = replay(&path);
    let b = replay(&path);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let v: Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["agents"].as_array().unwrap().len(), 1);
    assert_eq!(v["agents"][0]["tmux_pane"], "%3");
    assert_eq!(v["agents"][0]["state"], "complete");
    assert_eq!(v["agents"][0]["activity"], "idle");
    let turns = v["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert!(turns
        .iter()
        .all(|t| t["timestamp_source"] == "jsonl" && t["entry_uuid"].is_string()));
    assert_eq!(turns[0]["actor"], "user");
    assert_eq!(turns[1]["intent"], "completion");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn replay_reports_bad_traces_with_line_numbers() {
    let dir = std::env::temp_dir().join(format!("headspace-replay-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.jsonl");
    std::fs::write(
        &path,
        "{\"trace\":1,\"epoch\":\"2026-02-18T10:00:00Z\"}\n{\"at_ms\":1,\"teleport\":{}}\n",
    )
    .unwrap();
    let out = replay(&path);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2"), "{err}");
    let missing = replay(&dir.join("missing.jsonl"));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
    std::fs::remove_dir_all(&dir).ok();
}
