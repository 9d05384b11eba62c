//! A stopped server is plain to see (issue 33, point 1): the page says at the top that the
//! server stopped answering and since when, greys what it shows and stops its timers; when
//! the server is back it says so, and what changed meanwhile is on the page.

mod common;
use common::browser::*;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

#[test]
fn a_stopped_server_is_said_at_the_top_with_frozen_timers_and_its_return_too() {
    let Some(db) = fresh_db("dashboard_offline") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard-offline");
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Server::start_on(&db, &claude, &addr, &[]);
    let now = now_ms();
    let s = SessionWriter::new(51, Timestamp(now));
    server.post_hook(
        &s,
        &claude,
        "%51",
        "SessionStart",
        json!({"source": "startup"}),
    );
    server.post_hook(
        &s,
        &claude,
        "%51",
        "UserPromptSubmit",
        json!({"prompt": "tidy the build"}),
    );
    browser.goto(&format!("http://{addr}/"));
    browser.until(
        "a working card",
        "return document.querySelector('.card[data-shown=working]') !== null",
    );
    browser.until(
        "live",
        "return document.getElementById('conn').dataset.state === 'live'",
    );
    assert_eq!(
        browser.js("return document.getElementById('offline').hidden"),
        json!(true)
    );

    // The server goes away: the banner says so at once, the page is greyed, timers stop.
    server.stop();
    let said = browser.until(
        "the banner",
        "const b = document.getElementById('offline'); return !b.hidden && b.textContent",
    );
    let said = said.as_str().unwrap();
    assert!(
        said.contains("stopped answering") && said.contains("Reconnecting"),
        "{said}"
    );
    assert_eq!(
        browser.js("return document.body.dataset.conn"),
        json!("down")
    );
    // A timer the page would move every five seconds: set to a known text, it stays.
    browser.js(
        "for (const s of document.querySelectorAll('.since')) s.textContent = 'as then'; return true",
    );
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(
        browser.js("const s = [...document.querySelectorAll('.since')]; return s.length > 0 && s.every(x => x.textContent === 'as then')"),
        json!(true),
        "timers stand still while the server is away"
    );
    browser.screenshot("dashboard-offline");

    // Back on the same address: the page says so, and the turn ended meanwhile shows.
    let server = Server::start_on(&db, &claude, &addr, &[]);
    server.post_hook(
        &s,
        &claude,
        "%51",
        "Stop",
        json!({"last_assistant_message": "Done.", "stop_hook_active": false}),
    );
    browser.until(
        "back",
        "const b = document.getElementById('offline'); return !b.hidden && b.dataset.state === 'back'",
    );
    assert_eq!(
        browser.js("return document.body.dataset.conn === undefined"),
        json!(true)
    );
    browser.until(
        "the card up to date",
        "return document.querySelector('.card[data-shown=done]') !== null",
    );
    browser.until(
        "the banner gone",
        "return document.getElementById('offline').hidden",
    );
    server.stop();
}

/// An ended agent's prompt box says why nothing can be sent and takes nothing (issue 33,
/// point 5): no send reaches the server to come back as tmux's "can't find pane".
#[test]
fn an_ended_agents_prompt_box_says_why_and_takes_nothing() {
    let Some(db) = fresh_db("dashboard_ended") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard-ended");
    let server = Server::start(&db, &claude, &[]);
    let now = now_ms();
    let s = SessionWriter::new(52, Timestamp(now));
    server.post_hook(
        &s,
        &claude,
        "%52",
        "SessionStart",
        json!({"source": "startup"}),
    );
    let id = wait_for(Duration::from_secs(10), || {
        server.try_json(&format!("/api/agents/{}", s.session_id))?["id"].as_u64()
    })
    .expect("the agent");
    browser.goto(&format!("http://{}/", server.addr));
    browser.until(
        "the card",
        "return document.querySelector('.card') !== null",
    );
    browser.js(&format!("openConversation({id}); return true"));
    browser.until(
        "the box takes text",
        "const b = document.getElementById('prompt'); return !b.disabled",
    );
    server.post_hook(
        &s,
        &claude,
        "%52",
        "SessionEnd",
        json!({"reason": "prompt_input_exit"}),
    );
    let why = browser.until(
        "the box says why",
        "const b = document.getElementById('prompt'); return b.disabled && b.placeholder",
    );
    assert!(why.as_str().unwrap().contains("has ended"), "{why}");
    assert_eq!(
        browser.js(
            "return ['send', 'interrupt', 'clear'].every(b => document.getElementById(b).disabled)"
        ),
        json!(true)
    );
    server.stop();
}
