//! Gemini CLI agents from chat files this test writes (shaped as Gemini CLI 0.61 writes them:
//! docs/research/gemini-cli-0.61.md §4), on a real server and PostgreSQL: a session becomes
//! one agent of kind `gemini` named by its id's first 8 characters; every typed prompt and
//! every reply is exactly one turn whether its hooks arrive or are lost; the copies Gemini
//! writes of earlier messages after a refused approval are no turns, even with the server
//! SIGKILLed in the middle of them; a transcript path outside the gemini dir is refused;
//! and `hooks install --agent gemini` keeps the user's settings and uninstalls exactly. The
//! real Gemini CLI is driven in `real_gemini.rs`.

mod common;
use common::*;
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SESSION: &str = "3dd3ebf6-2b1c-4d5e-8f90-a1b2c3d4e5f6";
const CONTEXT_ID: &str = "d04923d38bb0f6017037e74183378ef4";

/// One chat file being written, as Gemini CLI writes it.
struct Chat {
    path: PathBuf,
    clock: i64,
}

impl Chat {
    fn new(gemini: &Path) -> Chat {
        let path = gemini.join("tmp/proj/chats/session-2026-11-27T17-35-3dd3ebf6.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        Chat {
            path,
            clock: now_ms(),
        }
    }
    /// The next line's time: now, as Gemini dates a line when it writes it (after the
    /// hooks it fired for it), and never before the line before.
    fn at(&mut self) -> String {
        self.clock = (self.clock + 1).max(now_ms());
        Timestamp(self.clock).to_string()
    }
    fn write(&self, lines: &[Value]) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        append(&self.path, &text);
    }
    fn start(&mut self) -> Vec<Value> {
        let at = self.at();
        vec![
            json!({"sessionId": SESSION, "projectHash": "ab12", "startTime": at, "lastUpdated": at, "kind": "main"}),
            json!({"$set": {"messages": [{"id": CONTEXT_ID, "timestamp": at, "type": "user",
                "content": [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}]}}),
        ]
    }
    fn prompt(&mut self, id: &str, text: &str) -> Vec<Value> {
        let at = self.at();
        vec![
            json!({"id": id, "timestamp": at, "type": "user", "content": [{"text": text}]}),
            json!({"$set": {"lastUpdated": at}}),
        ]
    }
    fn reply(&mut self, id: &str, text: &str) -> Vec<Value> {
        let at = self.at();
        vec![
            json!({"id": id, "timestamp": at, "type": "gemini", "content": text, "thoughts": [],
                "tokens": {"input": 900, "output": 20, "cached": 100, "thoughts": 5, "tool": 0, "total": 925},
                "model": "gemini-2.5-pro"}),
            json!({"$set": {"lastUpdated": at}}),
        ]
    }
}

fn post(server: &Server, gemini: &Path, event: &str, extra: Value) {
    let mut body = json!({
        "session_id": SESSION,
        "transcript_path": gemini.join("tmp/proj/chats/session-2026-11-27T17-35-3dd3ebf6.jsonl"),
        "cwd": "/home/u/proj",
        "hook_event_name": event,
        "timestamp": Timestamp(now_ms()).to_string(),
        "emitted_at": Timestamp(now_ms()).to_string(),
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, answer) = server.post(
        &format!("/hook/gemini/{event}"),
        &serde_json::to_vec(&body).unwrap(),
    );
    assert_eq!(status, 200, "{event}: {answer}");
}

#[test]
fn a_gemini_session_is_one_agent_and_its_restated_history_is_no_new_turn() {
    let Some(db) = fresh_db("gemini_turns") else {
        return;
    };
    let root = temp_dir("gemini-turns");
    let (claude, gemini) = (root.join("claude"), root.join("gemini"));
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::create_dir_all(gemini.join("tmp")).unwrap();
    let gemini_arg = gemini.display().to_string();
    let args = ["--gemini-dir", gemini_arg.as_str()];
    let server = Server::start(&db, &claude, &args);
    let mut chat = Chat::new(&gemini);

    // Turn 1: every hook arrives.
    post(
        &server,
        &gemini,
        "SessionStart",
        json!({"source": "startup"}),
    );
    let lines = chat.start();
    chat.write(&lines);
    post(
        &server,
        &gemini,
        "BeforeAgent",
        json!({"prompt": "hello gemini"}),
    );
    let lines = chat.prompt("u1", "hello gemini");
    chat.write(&lines);
    let lines = chat.reply("g1", "Hello! I am here.");
    chat.write(&lines);
    post(
        &server,
        &gemini,
        "AfterAgent",
        json!({"prompt": "hello gemini", "prompt_response": "Hello! I am here. am here."}),
    );
    let card = wait_for(Duration::from_secs(20), || {
        let c = server.try_json("/api/agents/3dd3ebf6")?;
        (c["kind"] == "gemini").then_some(c)
    })
    .unwrap_or_else(|| panic!("no gemini agent\n{}", server.log()));
    assert_eq!(card["session_id"], "3dd3ebf6", "{card}");
    turns_in_order(&server, "3dd3ebf6", 2);

    // Turn 2, hooks lost: a tool the user refuses. Gemini writes the reply, then again with
    // its tool call cancelled, `Request cancelled.`, then every earlier message again under
    // new ids before the new list.
    let lines = chat.prompt("u2", "please create a file");
    chat.write(&lines);
    let mut reply = chat.reply("g2", "I'll create a file.");
    chat.write(&reply);
    reply[0]["toolCalls"] = json!([{"id": "run_shell_command__run_shell_command_1_0", "name": "run_shell_command",
        "args": {"command": "touch x"}, "status": "cancelled",
        "result": [{"functionResponse": {"response": {"error": "[Operation Cancelled] Reason: User denied execution."}}}]}]);
    chat.write(&reply[..1]);
    let at = chat.at();
    chat.write(&[
        json!({"id": "i1", "timestamp": at, "type": "info", "content": "Request cancelled."}),
        json!({"id": "c1", "timestamp": at, "type": "user", "content": [
            {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}, {"text": "hello gemini"}]}),
        json!({"$set": {"lastUpdated": at}}),
    ]);
    // The server reads those, and dies inside the restatement.
    turns_in_order(&server, "3dd3ebf6", 4);
    std::thread::sleep(Duration::from_millis(500));
    server.kill();
    chat.write(&[
        json!({"id": "c2", "timestamp": at, "type": "gemini", "content": [{"text": "Hello! I am here."}], "tokens": null, "thoughts": []}),
        json!({"$set": {"lastUpdated": at}}),
        json!({"id": "c3", "timestamp": at, "type": "user", "content": [{"text": "please create a file"}]}),
        json!({"$set": {"messages": [{"id": "c1"}, {"id": "c2"}]}}),
    ]);
    let server = Server::start(&db, &claude, &args);
    post(
        &server,
        &gemini,
        "BeforeAgent",
        json!({"prompt": "again please"}),
    );
    let lines = chat.prompt("u3", "again please");
    chat.write(&lines);
    let lines = chat.reply("g3", "Again, here.");
    chat.write(&lines);
    post(&server, &gemini, "AfterAgent", json!({}));

    let got = turns_in_order(&server, "3dd3ebf6", 6);
    let want: Vec<(String, String)> = [
        ("user", "hello gemini"),
        ("agent", "Hello! I am here."),
        ("user", "please create a file"),
        ("agent", "I'll create a file."),
        ("user", "again please"),
        ("agent", "Again, here."),
    ]
    .iter()
    .map(|(a, t)| (a.to_string(), t.to_string()))
    .collect();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        turns_in_order(&server, "3dd3ebf6", 6),
        want,
        "{got:?}\n{}",
        server.log()
    );
    let id = server.json("/api/agents/3dd3ebf6")["id"].as_u64().unwrap();
    let audit = server.json(&format!("/api/agents/{id}/audit"));
    assert_eq!(audit["clean"], true, "{audit}");
    let turns = server.json("/api/agents/3dd3ebf6/turns?limit=200");
    assert!(
        turns.to_string().contains("\"outcome\":\"denied\""),
        "the refused tool is a step: {turns}"
    );

    // `/rewind` to the second prompt: it and every later turn are marked, none removed.
    chat.write(&[
        json!({"$rewindTo": "u2"}),
        json!({"$set": {"messages": [{"id": "u1"}, {"id": "g1"}]}}),
    ]);
    let marked = wait_for(Duration::from_secs(20), || {
        let t = server.try_json("/api/agents/3dd3ebf6/turns?limit=200")?;
        let t = t.as_array()?.clone();
        (t.iter().filter(|x| x["rewound_at"].is_string()).count() == 4).then_some(t)
    })
    .unwrap_or_else(|| {
        panic!(
            "not marked: {}\n{}",
            server.json("/api/agents/3dd3ebf6/turns?limit=200"),
            server.log()
        )
    });
    assert_eq!(marked.len(), 6, "nothing removed: {marked:?}");
    for t in &marked {
        let early = ["hello gemini", "Hello! I am here."].contains(&t["text"].as_str().unwrap());
        assert_eq!(t["rewound_at"].is_null(), early, "{t}");
    }
    assert_eq!(
        server.json(&format!("/api/agents/{id}/audit"))["clean"],
        true
    );
}

/// The page shows a Gemini agent's bubbles as Gemini's, and the turns a `/rewind` took back
/// dimmed with a "rewound" tag, without a reload, the earlier ones as they were.
#[test]
fn a_rewound_gemini_conversation_shows_its_turns_marked_in_a_real_browser() {
    let Some(db) = fresh_db("gemini_rewind_page") else {
        return;
    };
    let Some(browser) = common::browser::Browser::start() else {
        return;
    };
    let root = temp_dir("gemini-rewind-page");
    let (claude, gemini) = (root.join("claude"), root.join("gemini"));
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::create_dir_all(gemini.join("tmp")).unwrap();
    let gemini_arg = gemini.display().to_string();
    let server = Server::start(&db, &claude, &["--gemini-dir", gemini_arg.as_str()]);
    let mut chat = Chat::new(&gemini);
    let mut lines = chat.start();
    lines.extend(chat.prompt("u1", "first question"));
    lines.extend(chat.reply("g1", "First answer."));
    lines.extend(chat.prompt("u2", "second question"));
    lines.extend(chat.reply("g2", "Second answer."));
    chat.write(&lines);
    browser.goto(&format!("http://{}/", server.addr));
    browser.until("the card", "return !!document.querySelector('.card')");
    browser.js("document.querySelector('.card').click(); return true");
    browser.until(
        "four bubbles",
        "return document.querySelectorAll('.bubble').length === 4",
    );
    assert_eq!(
        browser.js("return document.querySelector('.bubble.agent .meta span').textContent"),
        json!("Gemini")
    );
    chat.write(&[
        json!({"$rewindTo": "u2"}),
        json!({"$set": {"messages": [{"id": "u1"}, {"id": "g1"}]}}),
    ]);
    let marked = browser.until(
        "the rewound bubbles",
        "const b = [...document.querySelectorAll('.bubble')]; return b.filter(x => x.classList.contains('rewound')).length === 2 && b.map(x => [x.querySelector('.text').textContent, x.classList.contains('rewound'), !!x.querySelector('.rewound-tag')])",
    );
    assert_eq!(
        marked,
        json!([
            ["first question", false, false],
            ["First answer.", false, false],
            ["second question", true, true],
            ["Second answer.", true, true]
        ])
    );
}

#[test]
fn a_gemini_transcript_path_outside_its_dir_is_refused() {
    let Some(db) = fresh_db("gemini_outside") else {
        return;
    };
    let root = temp_dir("gemini-outside");
    let (claude, gemini, elsewhere) = (
        root.join("claude"),
        root.join("gemini"),
        root.join("elsewhere"),
    );
    for d in [&claude, &gemini, &elsewhere] {
        std::fs::create_dir_all(d).unwrap();
    }
    let secret = elsewhere.join("tmp/proj/chats/session-2026-11-27T17-35-3dd3ebf6.jsonl");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(
        &secret,
        format!(
            "{}\n",
            json!({"id": "s1", "type": "user", "content": [{"text": "a secret prompt"}]})
        ),
    )
    .unwrap();
    let gemini_arg = gemini.display().to_string();
    let server = Server::start(&db, &claude, &["--gemini-dir", gemini_arg.as_str()]);
    post(
        &server,
        &gemini,
        "BeforeAgent",
        json!({"prompt": "hi", "transcript_path": secret}),
    );
    std::thread::sleep(Duration::from_secs(2));
    let t = server.try_json("/api/agents/3dd3ebf6/turns");
    assert!(
        !t.as_ref()
            .map(Value::to_string)
            .unwrap_or_default()
            .contains("a secret prompt"),
        "{t:?}"
    );
    assert!(
        server
            .log()
            .contains("transcript_path outside the gemini dir refused"),
        "{}",
        server.log()
    );
}

#[test]
fn hooks_install_for_gemini_keeps_the_users_settings_and_uninstalls_exactly() {
    let home = private_temp_dir("gemini-install");
    let settings = home.join("settings.json");
    let user = "{\n  \"security\": {\n    \"auth\": {\n      \"selectedType\": \"gemini-api-key\"\n    }\n  },\n  \"hooks\": {\n    \"AfterAgent\": [\n      {\n        \"matcher\": \"\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify-send done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    std::fs::write(&settings, user).unwrap();
    let run = |action: &str| {
        let out = headspace()
            .args(["hooks", action, "--agent", "gemini", "--settings"])
            .arg(&settings)
            .args(["--url", "http://127.0.0.1:5055"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = run("install");
    assert!(said.contains("folders you trust"), "{said}");
    run("install"); // idempotent
    let v: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(
        v["security"]["auth"]["selectedType"], "gemini-api-key",
        "{v}"
    );
    let after = v["hooks"]["AfterAgent"].as_array().unwrap();
    assert_eq!(after.len(), 2, "{v}");
    assert_eq!(
        after[0]["hooks"][0]["command"], "notify-send done",
        "the user's first"
    );
    let ours = &after[1]["hooks"][0];
    let command = ours["command"].as_str().unwrap();
    assert!(
        command.contains("hook-forward AfterAgent") && command.contains("--agent gemini"),
        "{ours}"
    );
    assert_eq!(ours["timeout"], 5000, "milliseconds: {ours}");
    for e in [
        "SessionStart",
        "SessionEnd",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "Notification",
    ] {
        assert!(v["hooks"][e].is_array(), "{e}: {v}");
    }
    for e in [
        "PreCompress",
        "BeforeModel",
        "AfterModel",
        "BeforeToolSelection",
    ] {
        assert!(
            v["hooks"][e].is_null(),
            "{e} comes before every model call: {v}"
        );
    }
    run("uninstall");
    let back: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    let user: Value = serde_json::from_str(user).unwrap();
    assert_eq!(back, user);
}
