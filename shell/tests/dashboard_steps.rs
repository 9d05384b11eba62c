//! The dashboard shows what agents did and spent, in a real headless Chromium: the card's
//! "now" line from a PreToolUse hook, the tool calls folded under their turn with their
//! outcomes, tokens and cost on the card and in the conversation header, the files a task
//! changed, and the Usage view by project and day.

mod common;
use common::browser::*;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};

#[test]
fn cards_and_conversations_show_steps_tokens_and_cost() {
    let Some(db) = fresh_db("dashboard_steps") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard-steps");
    let port = free_port().to_string();
    let addr_arg = format!("127.0.0.1:{port}");
    let server = Server::start_on(&db, &claude, &addr_arg, &[]);
    browser.goto(&format!("http://{}/", server.addr));
    let now = Timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    let s = SessionWriter::new(1, now.add_millis(-60_000));
    let file = claude.join(s.path());
    server.post(
        "/hook/UserPromptSubmit",
        &hook(
            &s,
            &claude,
            "%7",
            "UserPromptSubmit",
            json!({"prompt": "fix the build"}),
        ),
    );
    server.post("/hook/PreToolUse", &hook(&s, &claude, "%7", "PreToolUse", json!({"tool_name": "Bash", "tool_input": {"command": "cargo test --workspace"}, "tool_use_id": "toolu_run"})));
    let label = browser.until(
        "the card's now line",
        "const n = document.querySelector('.card .now .now-label'); return n && n.textContent",
    );
    assert_eq!(label, "Bash: cargo test --workspace");

    // The transcript: the prompt, the call and its failed result, an edit, a reply.
    let mut at = now.add_millis(-50_000);
    let mut n = 0u64;
    let mut line = |kind: &str, message: Value| {
        n += 1;
        at = at.add_millis(1_000);
        let v = json!({"type": kind, "message": message, "sessionId": s.session_id, "cwd": s.cwd,
            "uuid": format!("0000{n:04x}-0000-4000-8000-{:012x}", n), "timestamp": at.to_string()});
        append(&file, &format!("{v}\n"));
    };
    let usage = json!({"input_tokens": 1200, "output_tokens": 300, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    line("user", json!({"role": "user", "content": "fix the build"}));
    line(
        "assistant",
        json!({"id": "msg_1", "model": "claude-sonnet-4-5", "role": "assistant", "usage": usage,
        "content": [{"type": "tool_use", "id": "toolu_run", "name": "Bash", "input": {"command": "cargo test --workspace"}}]}),
    );
    line(
        "user",
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_run", "content": "Exit code 101", "is_error": true}]}),
    );
    line(
        "assistant",
        json!({"id": "msg_2", "model": "claude-sonnet-4-5", "role": "assistant", "usage": usage,
        "content": [{"type": "tool_use", "id": "toolu_fix", "name": "Edit", "input": {"file_path": "src/lib.rs", "old_string": "a", "new_string": "b"}}]}),
    );
    line(
        "user",
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_fix", "content": "Updated.", "is_error": false}]}),
    );
    line(
        "assistant",
        json!({"id": "msg_3", "model": "claude-sonnet-4-5", "role": "assistant", "usage": usage,
        "content": [{"type": "text", "text": "Fixed the build: the tests pass."}]}),
    );

    browser.js("document.querySelector('.card').click(); return true");
    // The Edit's result line may land after its call was drawn: it shows "pending" until the
    // page hears of the result, then its outcome (never stuck pending: the wait would fail).
    let steps = browser.until(
        "the steps under the prompt, each with its outcome",
        "const s = [...document.querySelectorAll('.bubble .tool-steps .step')].map(x => [x.dataset.outcome, x.querySelector('.step-tool').textContent, x.querySelector('.step-summary').textContent]); return s.length === 2 && s.every(x => x[0] !== 'pending') && s",
    );
    assert_eq!(
        steps,
        json!([
            ["error", "Bash", "cargo test --workspace"],
            ["ok", "Edit", "src/lib.rs"]
        ])
    );
    let summary =
        browser.js("return document.querySelector('.bubble .tool-steps summary').textContent");
    assert_eq!(summary, "2 tool calls · 1 not ok");
    // Tokens and cost: 3 × 1,500 tokens at the shipped Sonnet prices.
    let spent = browser.until(
        "tokens on the card",
        "const u = document.querySelector('.card .foot .usage'); return u && u.textContent",
    );
    assert_eq!(spent, "4.5k tokens · $0.02");
    let title = browser.until(
        "tokens in the conversation header",
        "const u = document.querySelector('#conv-title .conv-usage'); return u && u.textContent",
    );
    assert_eq!(title, "4.5k tokens · $0.02");
    // The agent went on to reply: no tool runs now.
    browser.until(
        "no now line",
        "return !document.querySelector('.card .now')",
    );
    // The task lists the file its edit changed, at its first turn; the failed call changed
    // nothing.
    let files = browser.until(
        "the task's changed files",
        "const f = document.querySelector('.bubble.task-start .task-files'); return f && [...f.querySelectorAll('code')].map(c => c.textContent)",
    );
    assert_eq!(files, json!(["src/lib.rs"]));
    // The Usage view: by project, and by day and project.
    browser.js("document.getElementById('usage-toggle').click(); return true");
    let tables = browser.until(
        "the usage tables",
        "const t = document.querySelectorAll('#usage table'); return t.length === 2 && [...t].map(x => [...x.querySelectorAll('tr')].slice(1).map(r => [...r.cells].map(c => c.textContent)))",
    );
    let day: String = at.to_string().chars().take(10).collect();
    assert_eq!(
        tables,
        json!([
            [["project1", "4.5k", "$0.02", "3"]],
            [[day, "project1", "4.5k", "$0.02", "3"]]
        ])
    );
    assert!(browser.js("return document.getElementById('cards').hidden") == json!(true));
    browser.js("document.getElementById('usage-toggle').click(); return true");
    assert!(browser.js("return document.getElementById('cards').hidden") == json!(false));
}
