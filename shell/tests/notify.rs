//! `--notify-command`: a real server runs the user's command, through `sh -c`, with the
//! notice as JSON on stdin, when an agent starts waiting and when it finishes its task.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::time::Duration;

fn told(file: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn the_notify_command_receives_a_waiting_agent_and_a_finished_task() {
    let Some(db) = fresh_db("notify") else {
        return;
    };
    let claude = temp_dir("notify");
    let out = claude.join("notices.jsonl");
    // The notice arrives on stdin; the command line holds nothing of the agent's.
    let command = format!("cat >> '{}'", out.display());
    let server = Server::start(&db, &claude, &["--notify-command", &command]);
    let now = now_ms();
    let s = SessionWriter::new(5, Timestamp(now));
    let post = |event: &str, extra: Value| server.post_hook(&s, &claude, "%5", event, extra);
    post("UserPromptSubmit", json!({"prompt": "tidy the build"}));
    post(
        "PreToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": "toolu_n1",
               "tool_input": {"questions": [{"question": "Which directory?", "options": [{"label": "src/"}]}]}}),
    );
    let first = wait_for(Duration::from_secs(15), || told(&out).into_iter().next())
        .unwrap_or_else(|| panic!("the command ran: {}", server.log()));
    assert_eq!(first["event"], "needs_you");
    assert_eq!(first["body"], "Which directory?");
    assert_eq!(first["tmux_pane"], "%5");
    post(
        "PostToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": "toolu_n1"}),
    );
    post(
        "Stop",
        json!({"last_assistant_message": "Done. All tidy.", "stop_hook_active": false}),
    );
    let finished = wait_for(Duration::from_secs(15), || {
        told(&out).into_iter().find(|n| n["event"] == "finished")
    })
    .unwrap_or_else(|| panic!("finishing is told: {:?}", told(&out)));
    assert!(
        finished["title"].as_str().unwrap().ends_with(" is done"),
        "{finished}"
    );
    assert_eq!(
        told(&out).len(),
        2,
        "nothing else was told: {:?}",
        told(&out)
    );
    // The notifier listens to the event hub but is not a client of it.
    let (_, metrics) = server.get("/metrics");
    assert!(
        metrics.lines().any(|l| l == "headspace_sse_clients 0"),
        "no browser is connected, the notifier is not counted: {metrics}"
    );
    server.stop();
}
