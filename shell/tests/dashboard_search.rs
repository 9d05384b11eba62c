//! The dashboard's history search and history view in a real headless Chromium: typing in
//! the `/` filter lists turns of every agent with their matches marked (as text, never
//! markup), and a result opens the conversation scrolled to that turn, unfolded and marked;
//! an ended agent's conversation opens from the history view.

mod common;
use common::browser::*;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

/// Where the sought turn sits in a long conversation: far above the end the page opens at.
const TARGET_AT: usize = 10;
const AGENT_LINES: usize = 160;

#[test]
fn a_search_result_opens_the_conversation_at_its_turn() {
    let Some(db) = fresh_db("dashboard_search") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard-search");
    let port = free_port().to_string();
    let server = Server::start_on(&db, &claude, &format!("127.0.0.1:{port}"), &[]);
    let base = format!("http://{}", server.addr);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut s = SessionWriter::new(1, Timestamp(now - 3_600_000));
    let mut text = format!("{}\n", s.prompt("make the replay tests pass", None).json);
    for i in 0..AGENT_LINES {
        s.wait(1_000);
        let line = if i == TARGET_AT {
            "The flaky one is tests/wal_replay.rs: error[E0599] <img src=x onerror=\"window.__pwned=1\">".to_string()
        } else {
            format!("Step {i}: reading the next file and running the suite again.")
        };
        text.push_str(&format!("{}\n", s.agent_text(&line).json));
    }
    append(&claude.join(s.path()), &text);
    let turns = wait_for(Duration::from_secs(20), || {
        let v = server.try_json(&format!("/api/agents/{}/turns", s.session_id))?;
        let a = v.as_array()?;
        (a.len() == AGENT_LINES + 1).then(|| a.clone())
    })
    .unwrap_or_else(|| panic!("turns:\n{}", server.log()));
    let target = turns[TARGET_AT + 1]["id"].as_u64().unwrap();
    let agent = turns[0]["agent_id"].as_u64().unwrap();

    browser.goto(&format!("{base}/"));
    browser.until(
        "the card",
        "return document.querySelector('.card') !== null",
    );
    browser.click("#filter");
    browser.type_into("#filter", "tests/wal_replay.rs");
    let marked = browser.until(
        "a search result",
        "const h = document.querySelector('.search-hit'); return h && [...h.querySelectorAll('mark')].map(m => m.textContent)",
    );
    assert_eq!(marked, json!(["tests/wal_replay.rs"]));
    // Agent text is shown as text: the tag is in the snippet's text, nothing ran.
    let shown = browser.js(
        "const h = document.querySelector('.search-hit'); return [h.dataset.turn, h.querySelector('.snippet').textContent, window.__pwned === undefined, h.querySelector('img') === null]",
    );
    assert_eq!(shown[0], json!(target.to_string()));
    assert!(shown[1].as_str().unwrap().contains("<img src=x"), "{shown}");
    assert_eq!(shown[2], json!(true), "{shown}");
    assert_eq!(shown[3], json!(true), "{shown}");

    browser.click(".search-hit");
    let at = browser.until(
        "the conversation at the turn",
        &format!(
            "const b = document.querySelector('.bubble.search-target');
             if (!b || b.dataset.id !== '{target}' || b.classList.contains('collapsed')) return false;
             const box = document.getElementById('turns');
             const r = b.getBoundingClientRect(), v = box.getBoundingClientRect();
             const inView = r.top >= v.top - 1 && r.bottom <= v.bottom + 1;
             const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 48;
             return inView && !atEnd && [window.__hs.open, box.scrollTop, box.scrollHeight]"
        ),
    );
    assert_eq!(at[0], json!(agent), "{at}");
    // It stays there: nothing scrolls back to the end once the heights settle.
    std::thread::sleep(Duration::from_millis(600));
    let still = browser.js(&format!(
        "const b = document.querySelector('.bubble[data-id=\"{target}\"]');
         const r = b.getBoundingClientRect(), v = document.getElementById('turns').getBoundingClientRect();
         return r.top >= v.top - 1 && r.bottom <= v.bottom + 1"
    ));
    assert_eq!(still, json!(true));
    browser.screenshot("search-opens-turn");

    // The window around the turn does not reach the end: a turn arriving live waits, and
    // shows once, in its place, when the reader scrolls down to it.
    s.wait(1_000);
    append(
        &claude.join(s.path()),
        &format!("{}\n", s.agent_text("A turn after the window.").json),
    );
    let all: Vec<String> = wait_for(Duration::from_secs(20), || {
        let v = server.try_json(&format!("/api/agents/{}/turns", s.session_id))?;
        let a = v.as_array()?;
        (a.len() == AGENT_LINES + 2).then(|| a.iter().map(|t| t["id"].to_string()).collect())
    })
    .unwrap_or_else(|| panic!("the live turn stored:\n{}", server.log()));
    browser.until(
        "the new-below marker",
        "return !document.getElementById('new-below').hidden",
    );
    let shown = browser.js("return document.querySelectorAll('.bubble').length");
    assert!(
        shown.as_u64().unwrap() < (AGENT_LINES + 2) as u64,
        "the window: {shown}"
    );
    browser.js(
        "const box = document.getElementById('turns');
         const down = () => { if (!document.querySelector('.bubble:not(.pending)') || window.__down === 0) return;
           box.scrollTop = box.scrollHeight; window.__down -= 1; setTimeout(down, 50); };
         window.__down = 100; down(); return true",
    );
    let ids = browser.until(
        "the rest of the conversation and the live turn",
        &format!(
            "const ids = [...document.querySelectorAll('.bubble')].map(b => b.dataset.id);
             return ids.length === {} && ids",
            AGENT_LINES + 2
        ),
    );
    let ids: Vec<String> = ids
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, all, "every turn once, in order");

    // Clearing the filter hides the results.
    browser.js("const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); return true");
    browser.until(
        "the results hidden",
        "return document.getElementById('search-results').hidden",
    );

    // The agent ends: the history view lists it by day and project, and opens it.
    let mut end: serde_json::Value =
        serde_json::from_slice(&s.hook("SessionEnd", None, None, json!({"reason": "logout"})))
            .unwrap();
    end["transcript_path"] = json!(claude.join(s.path()).display().to_string());
    let (status, _) = server.post("/hook/SessionEnd", end.to_string().as_bytes());
    assert_eq!(status, 200);
    wait_for(Duration::from_secs(10), || {
        server
            .try_json("/api/history")
            .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    })
    .unwrap_or_else(|| panic!("history:\n{}", server.log()));
    browser.js("document.getElementById('conv-close').click(); return true");
    browser.click("#history-toggle");
    let listed = browser.until(
        "the history view",
        "const b = document.querySelector('.history-agent'); return b && [b.dataset.agent, b.textContent, document.getElementById('cards').hidden]",
    );
    assert_eq!(listed[0], json!(agent.to_string()));
    assert!(listed[1]
        .as_str()
        .unwrap()
        .contains("make the replay tests pass"));
    assert_eq!(listed[2], json!(true));
    browser.click(".history-agent");
    browser.until(
        "the ended agent's conversation",
        &format!(
            "return window.__hs.open === {agent} && document.querySelectorAll('.bubble').length === {}",
            AGENT_LINES + 2
        ),
    );
}
