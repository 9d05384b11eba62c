//! The page as a cockpit (issue 33): cards never move when another agent's state changes
//! (point 4: new agents append, attention shows in place), and an empty cards area says why
//! it is empty (point 6: a filter that matches nothing is not "no agents yet").

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;

/// Each card's agent id and where it stands on the page, in document order.
const PLACES: &str = "return [...document.querySelectorAll('#cards .card')].map(c => { const r = c.getBoundingClientRect(); return [Number(c.dataset.id), Math.round(r.left), Math.round(r.top)]; })";

#[test]
fn no_card_moves_when_another_agent_needs_you_and_an_empty_filter_says_so() {
    let Some((server, browser, claude)) = pages::server_and_browser("dashboard_cockpit") else {
        return;
    };
    let now = now_ms();
    // Three agents in one folder, then one in another, all working.
    let agents: Vec<(SessionWriter, String)> = (0..4u64)
        .map(|i| {
            let mut s = SessionWriter::new(71 + i, Timestamp(now + i as i64));
            let project = if i < 3 { "webshop" } else { "gateway" };
            s.cwd = format!("/home/u/{project}");
            (s, format!("%7{i}"))
        })
        .collect();
    for (s, pane) in &agents {
        server.post_hook(
            s,
            &claude,
            pane,
            "SessionStart",
            json!({"source": "startup"}),
        );
        server.post_hook(
            s,
            &claude,
            pane,
            "UserPromptSubmit",
            json!({"prompt": "tidy up"}),
        );
    }
    browser.goto(&format!("http://{}/", server.addr));
    browser.until(
        "four working cards",
        "return document.querySelectorAll('.card[data-shown=working]').length === 4",
    );
    let before = browser.js(PLACES);
    let ids: Vec<u64> = before
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_u64().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(
        ids, sorted,
        "cards in the order their agents came: {before}"
    );

    // The last agent of the first folder starts waiting on a question: its card says so where
    // it is, and no card moves (before, it jumped to the top and its group with it).
    let (s, pane) = &agents[2];
    ask_by_hooks(
        &server,
        &claude,
        s,
        pane,
        "tidy up",
        ("Which files?", &["all", "some"]),
    );
    browser.until(
        "the card waiting",
        "return document.querySelectorAll('.card[data-shown=waiting]').length === 1",
    );
    // The cards are drawn at most every 250 ms: give a move the time to happen.
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(browser.js(PLACES), before, "no card moved");
    browser.screenshot("dashboard-cockpit-waiting");
    // The one that waits is counted where attention is shown: the strip and the title.
    assert_eq!(browser.js("return document.title"), json!("(1) Headspace"));

    // A filter that matches nothing: the page says so, not "no agents yet".
    browser.js(
        "const f = document.getElementById('filter'); f.value = 'zzz-nothing'; f.dispatchEvent(new Event('input')); return true",
    );
    let note = browser.until(
        "the empty note",
        "const n = document.querySelector('#cards .empty'); return n && n.textContent",
    );
    let note = note.as_str().unwrap_or_default();
    assert!(
        note.contains("No agent matches")
            && note.contains("zzz-nothing")
            && note.contains("4 agents"),
        "{note}"
    );
    assert!(!note.contains("No agents yet"), "{note}");
    // Cleared, every card is back in its place.
    browser.js(
        "const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); return true",
    );
    browser.until(
        "the cards back",
        "return document.querySelectorAll('#cards .card').length === 4 && !document.querySelector('#cards .empty')",
    );
    assert_eq!(
        browser.js(PLACES),
        before,
        "the same places after the filter"
    );
}
