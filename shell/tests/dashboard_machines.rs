//! The dashboard across machines (issue 21), in a real headless Chromium: agents on two
//! machines are grouped by machine, then project, under headers with the machine's name,
//! online or offline and its agent count; the offline machine's card says its activity is
//! unknown and since when the machine is offline, in no state's colour; the header's counts
//! do not count it as working or idle; when the machine reports again, its card shows what
//! its agent does, without a reload.

mod common;
use common::browser::*;
use common::*;
use serde_json::json;

#[test]
fn agents_on_two_machines_group_by_machine_and_an_offline_one_says_unknown() {
    let Some(db) = fresh_db("dashboard_machines") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard-machines");
    let server = Server::start(&db, &claude, &["--machine", "hub-1"]);
    let other: u64 = 1 << 48; // machine 1's id space
    psql(
        &db,
        &format!(
            "INSERT INTO machines (name, id, heartbeat_at, version) VALUES ('desk-2', 1, now() - interval '30 seconds', 'x');
             {}{}",
            agent_sql(7, "hub-1", "alpha", "processing"),
            agent_sql(other, "desk-2", "alpha", "processing"),
        ),
    );
    browser.goto(&format!("http://{}/", server.addr));

    let heads = browser.until(
        "two machine headers",
        "const h = [...document.querySelectorAll('#cards section.machine')].map(s => [s.dataset.machine, s.querySelector('.machine-name').textContent, s.querySelector('.machine-status').textContent, s.querySelector('.machine-count').textContent]); return h.length === 2 && h",
    );
    assert_eq!(heads[0][0], "desk-2", "machines in name order: {heads}");
    assert_eq!(heads[0][1], "desk-2");
    let status = heads[0][2].as_str().unwrap();
    assert!(
        status.starts_with("offline since ") && status.len() == "offline since HH:MM".len(),
        "{status}"
    );
    assert_eq!(heads[0][3], "1 agent");
    assert_eq!(heads[1], json!(["hub-1", "hub-1", "online", "1 agent"]));

    // Each machine holds its own project group, one card each.
    let groups = browser.js(
        "return [...document.querySelectorAll('#cards section.machine')].map(s => [...s.querySelectorAll('section.project')].map(p => [p.dataset.project, p.querySelectorAll('.card').length]))",
    );
    assert_eq!(groups, json!([[["alpha", 1]], [["alpha", 1]]]));

    // The offline machine's card: unknown, offline since when, in a neutral colour.
    let card = browser.js(&format!(
        "const c = document.querySelector('.card[data-id=\"{other}\"]'); const s = c.querySelector('.state'); return [c.closest('section.machine').dataset.machine, c.dataset.shown, s.textContent, c.querySelector('.offline').textContent, getComputedStyle(s).color, getComputedStyle(document.querySelector('.card[data-id=\"7\"] .state')).color, !!c.querySelector('.now')]"
    ));
    assert_eq!(card[0], "desk-2");
    assert_eq!(card[1], "unknown");
    assert_eq!(card[2], "unknown");
    assert!(
        card[3].as_str().unwrap().starts_with("offline since "),
        "{card}"
    );
    assert_ne!(card[4], card[5], "not the working colour: {card}");
    assert_eq!(card[6], false, "no current step shown");
    let muted = browser.js("const p = document.createElement('span'); p.style.color = 'var(--muted)'; document.body.appendChild(p); const c = getComputedStyle(p).color; p.remove(); return c");
    assert_eq!(card[4], muted, "the neutral colour");
    let local = browser.js("return document.querySelector('.card[data-id=\"7\"]').dataset.shown");
    assert_eq!(local, "working");

    // The header's counts: one working, one unknown; the unknown one is not counted working.
    let summary = browser.until(
        "the summary",
        "const s = document.getElementById('summary').textContent; return s.includes('unknown') && s",
    );
    let summary = summary.as_str().unwrap();
    assert!(summary.contains("2 agents"), "{summary}");
    assert!(summary.contains("1 working"), "{summary}");
    assert!(summary.contains("1 unknown"), "{summary}");
    assert!(!summary.contains("idle"), "{summary}");

    browser.screenshot("dashboard-machines");

    // A live change redraws only its card, in its machine's block: the agent moved to
    // another project gets a new group there, its old group goes, the other machine's stays.
    psql(
        &db,
        "UPDATE agents SET project = 'beta' WHERE id = 7; UPDATE tasks SET state = 'complete' WHERE id = 7",
    );
    browser.js("refreshAgent(7); return true");
    let moved = browser.until(
        "the card in its new group",
        "const h = [...document.querySelectorAll('#cards section.machine')].map(s => [s.dataset.machine, [...s.querySelectorAll('section.project')].map(p => [p.dataset.project, [...p.querySelectorAll('.card')].map(c => c.dataset.shown)])]); return JSON.stringify(h).includes('beta') && h",
    );
    assert_eq!(
        moved,
        json!([
            ["desk-2", [["alpha", ["unknown"]]]],
            ["hub-1", [["beta", ["done"]]]]
        ])
    );
    let summary = browser.js("return document.getElementById('summary').textContent");
    assert!(
        summary.as_str().unwrap().contains("1 done")
            && !summary.as_str().unwrap().contains("working"),
        "{summary}"
    );

    // The machine reports again: within a poll of the machines list, its card shows what
    // its agent does and its header says online.
    psql(
        &db,
        "UPDATE machines SET heartbeat_at = now() + interval '1 hour' WHERE name = 'desk-2'",
    );
    browser.until(
        "the card back to working",
        &format!("const c = document.querySelector('.card[data-id=\"{other}\"]'); return c && c.dataset.shown === 'working' && !c.querySelector('.offline')"),
    );
    browser.until(
        "desk-2 online",
        "const s = document.querySelector('section.machine[data-machine=\"desk-2\"] .machine-status'); return s && s.textContent === 'online'",
    );
    let summary = browser.js("return document.getElementById('summary').textContent");
    assert!(summary.as_str().unwrap().contains("1 working"), "{summary}");
    assert!(!summary.as_str().unwrap().contains("unknown"), "{summary}");

    // One machine left: the cards are grouped by project alone, as before.
    psql(
        &db,
        &format!(
            "DELETE FROM tasks WHERE agent_id = {other}; DELETE FROM agents WHERE id = {other}"
        ),
    );
    browser.js("loadAgents(); return true");
    browser.until(
        "no machine headers",
        "return !document.querySelector('section.machine') && document.querySelectorAll('#cards > section.project').length === 1",
    );
}
