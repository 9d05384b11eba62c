//! Answering an agent's question from outside the terminal: `POST /api/agents/{id}/answer`
//! picks an option of an AskUserQuestion and of a permission dialog, on a stand-in agent in a
//! real tmux pane; the answer reaches the transcript and the agent goes on.

mod common;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

fn post_json(server: &Server, path: &str, body: Value) -> (u16, Value) {
    let (status, text) = server.post(path, body.to_string().as_bytes());
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Starts a stand-in agent playing `turns` as session `session`, in tmux session `name`,
/// `columns` wide.
fn launch(
    claude: &std::path::Path,
    tmux: &Tmux,
    session: &str,
    name: &str,
    columns: u32,
    turns: Value,
) {
    let script = claude.join(format!("{session}.json"));
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let cmd = format!(
        "{} --claude-dir {} --script {} --session {session} --think-ms 200 --stay",
        headspace_testkit::stand_in::stand_in_agent(),
        claude.display(),
        script.display()
    );
    let columns = columns.to_string();
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        name,
        "-x",
        &columns,
        "-y",
        "45",
        &cmd,
    ]);
}

#[test]
fn answering_picks_the_option_in_the_pane_and_the_agent_goes_on() {
    let Some(PaneWorld {
        server,
        claude,
        tmux,
    }) = PaneWorld::start("answer")
    else {
        return;
    };
    launch(
        &claude,
        &tmux,
        "ans-1",
        "a",
        120,
        json!([{
            "prompt": "tidy the build",
            "replies": ["Looking.", "Done. All tidy."],
            "question": {"question": "Which directory?", "options": ["src/", "target/", "docs/"], "answer": "src/"},
            "permission": true
        }]),
    );
    let card = || server.try_json("/api/agents/ans-1");
    assert!(
        wait_for(Duration::from_secs(10), || card()
            .filter(|a| a["activity"] == "idle"))
        .is_some(),
        "the agent registers, idle"
    );
    let (status, body) = post_json(&server, "/api/agents/ans-1/answer", json!({"option": 1}));
    assert_eq!(status, 409, "nothing to answer while idle: {body}");
    assert!(body["error"].as_str().unwrap().contains("not waiting"));

    let (status, _) = post_json(
        &server,
        "/api/agents/ans-1/send",
        json!({"text": "tidy the build"}),
    );
    assert_eq!(status, 200);
    let asked = wait_for(Duration::from_secs(15), || {
        card().filter(|a| a["activity"] == "waiting" && a["question"]["text"] == "Which directory?")
    })
    .unwrap_or_else(|| {
        panic!(
            "the question reaches the card: {:?}\n{}",
            card(),
            server.log()
        )
    });
    assert_eq!(asked["state"], "awaiting_input");

    let (status, body) = post_json(&server, "/api/agents/ans-1/answer", json!({"option": 4}));
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("options 1 to 3"),
        "{body}"
    );
    let (status, body) = post_json(&server, "/api/agents/ans-1/answer", json!({"choice": 1}));
    assert_eq!(status, 400, "{body}");

    let (status, body) = post_json(&server, "/api/agents/ans-1/answer", json!({"option": 2}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["label"], "target/");
    assert_eq!(body["verified"], true, "{body}");
    let answered = wait_for(Duration::from_secs(10), || {
        let turns = server.try_json("/api/agents/ans-1/turns")?;
        turns
            .as_array()?
            .iter()
            .find(|t| t["intent"] == "answer")
            .cloned()
    })
    .expect("the answer turn");
    assert_eq!(
        answered["text"], "target/",
        "option 2's label reached the transcript"
    );

    // Next the permission dialog, read from the pane.
    let dialog = wait_for(Duration::from_secs(15), || {
        card().filter(|a| a["question"]["text"] == "Do you want to proceed?")
    })
    .unwrap_or_else(|| panic!("the permission dialog reaches the card: {:?}", card()));
    assert_eq!(dialog["activity"], "waiting");
    let (status, body) = post_json(&server, "/api/agents/ans-1/answer", json!({"option": 1}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["label"], "Yes");
    let done = wait_for(Duration::from_secs(15), || {
        card().filter(|a| a["activity"] == "idle" && a["question"].is_null())
    })
    .unwrap_or_else(|| panic!("the agent finishes and the question clears: {:?}", card()));
    assert_eq!(done["state"], "complete");
    // Escape through the server's own tmux socket (how a runner cancels a step).
    let (status, body) = post_json(&server, "/api/agents/ans-1/interrupt", json!({}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["pane"], done["tmux_pane"]);
    let (status, _) = post_json(&server, "/api/agents/no-such-agent/interrupt", json!({}));
    assert_eq!(status, 404);
    server.stop();
}

#[test]
fn a_wizard_of_questions_is_answered_with_several_options_and_free_text() {
    let Some(PaneWorld {
        server,
        claude,
        tmux,
    }) = PaneWorld::start("answer_wizard")
    else {
        return;
    };
    let option = |l: &str| json!({"label": l, "description": format!("{l}, as described")});
    launch(
        &claude,
        &tmux,
        "wiz-1",
        "w",
        100,
        json!([{
            "prompt": "set up the shop",
            "replies": ["Looking.", "Done, set up."],
            "ask": {"questions": [
                {"question": "Which database?", "header": "Database", "multiSelect": false,
                 "options": [option("PostgreSQL"), option("SQLite")]},
                {"question": "Which features?", "header": "Features", "multiSelect": true,
                 "options": [option("Search"), option("Export"), option("Billing")]},
                {"question": "Which name?", "header": "Name", "multiSelect": false,
                 "options": [option("shop"), option("store")]}
            ]}
        }]),
    );
    let card = || server.try_json("/api/agents/wiz-1");
    wait_for(Duration::from_secs(10), || {
        card().filter(|a| a["activity"] == "idle")
    })
    .expect("the agent registers, idle");
    let (status, _) = post_json(
        &server,
        "/api/agents/wiz-1/send",
        json!({"text": "set up the shop"}),
    );
    assert_eq!(status, 200);
    wait_for(Duration::from_secs(15), || {
        card().filter(|a| {
            a["activity"] == "waiting"
                && a["question"]["text"] == "Which database?\nWhich features?\nWhich name?"
        })
    })
    .unwrap_or_else(|| {
        panic!(
            "the question reaches the card: {:?}\n{}",
            card(),
            server.log()
        )
    });

    // One number cannot answer three questions; answers that do not fit are refused.
    let (status, body) = post_json(&server, "/api/agents/wiz-1/answer", json!({"option": 1}));
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("3 questions"),
        "{body}"
    );
    let (status, body) = post_json(
        &server,
        "/api/agents/wiz-1/answer",
        json!({"answers": [{"options": [1, 2]}, {"option": 2}, {"option": 1}]}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("takes one option"),
        "{body}"
    );
    let (status, body) = post_json(
        &server,
        "/api/agents/wiz-1/answer",
        json!({"answers": [{"option": 2}, {"options": [3, 1]}, {"other": "market hall"}]}),
    );
    assert_eq!(
        status,
        200,
        "{body}\n{}",
        tmux.run(&["capture-pane", "-p", "-t", "w"])
    );
    assert_eq!(body["status"], "answered");
    let answered = wait_for(Duration::from_secs(10), || {
        let turns = server.try_json("/api/agents/wiz-1/turns")?;
        turns
            .as_array()?
            .iter()
            .find(|t| t["intent"] == "answer")
            .cloned()
    })
    .unwrap_or_else(|| {
        panic!(
            "the answer turn: {}",
            tmux.run(&["capture-pane", "-p", "-t", "w"])
        )
    });
    let text = answered["text"].as_str().unwrap();
    for want in ["SQLite", "Search, Billing", "market hall"] {
        assert!(text.contains(want), "{want:?} in {text:?}");
    }
    wait_for(Duration::from_secs(15), || {
        card().filter(|a| a["activity"] == "idle" && a["question"].is_null())
    })
    .unwrap_or_else(|| panic!("the agent goes on and finishes: {:?}", card()));
    server.stop();
}
