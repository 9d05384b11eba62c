//! The dashboard a user works from, in a real headless Chromium against the real server and
//! stand-in agents in real tmux panes: a prompt typed in the page reaches the agent's pane
//! and comes back as its turn; the "Needs you" strip orders waiting agents by waiting time,
//! shows a permission's command, and answers by number key and by button (also an option
//! the narrow pane wraps) and from the open conversation, which shows the pending request at
//! its end; the page fits a 390 px phone, where a waiting agent is answered by tap and
//! prompted; a conversation follows new turns; browser notifications skip sub-agents and
//! noisy news as the server's notices do; Interrupt (Alt+I) and Clear in the prompt box reach the pane.

mod common;
use common::browser::*;
use common::pages::*;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

#[test]
fn a_prompt_typed_in_the_page_reaches_the_pane_and_comes_back_as_its_turn() {
    let Some((world, browser)) = world_and_browser("dash_prompt") else {
        return;
    };
    stand_in(
        &world,
        "ui-1",
        "kiosk",
        120,
        json!([{"prompt": "tidy the build", "replies": ["Looking.", "Done. **All** tidy."]}]),
    );
    let id = agent_id(&world, "ui-1");
    browser.goto(&format!("http://{}/", world.server.addr));
    until_card(&browser, id);
    browser.click(&format!(".card[data-id=\"{id}\"]"));
    browser.until(
        "the prompt box",
        "return !document.getElementById('conversation').hidden",
    );

    // Shift+Enter is a new line, not a send (the modifier is released by U+E000).
    browser.type_into("#prompt", "first line\u{E008}\u{E007}\u{E000}second line");
    assert_eq!(
        browser.js("return document.getElementById('prompt').value"),
        json!("first line\nsecond line")
    );
    browser.js("document.getElementById('prompt').value = ''; return true");

    // Enter sends: the pending turn shows at once.
    browser.type_into("#prompt", "tidy the build\u{E007}");
    let pending = browser.until(
        "the pending turn",
        "const p = document.querySelector('.bubble.pending .text'); return p && p.textContent",
    );
    assert_eq!(pending, "tidy the build");
    assert_eq!(
        browser.js("return document.getElementById('prompt').value"),
        json!("")
    );
    // It reached the agent's pane, typed there.
    until_typed(&world, "ui-1", "tidy the build");
    // Its real turn replaces the pending one, and the agent's reply follows, rendered.
    browser.until(
        "the real turn, the pending one gone",
        "const b = [...document.querySelectorAll('.bubble.user')]; return !document.querySelector('.bubble.pending') && b.some(x => x.dataset.id && x.querySelector('.text').textContent === 'tidy the build')",
    );
    browser.until(
        "the reply with its bold word",
        "return [...document.querySelectorAll('.bubble.agent .text strong')].some(s => s.textContent === 'All')",
    );
    let bubbles = browser.js(
        "return [...document.querySelectorAll('.bubble.user')].filter(b => b.querySelector('.text').textContent === 'tidy the build').length",
    );
    assert_eq!(bubbles, json!(1), "the prompt is one turn, not two");
    // The conversation follows: its end is in view.
    browser.until(
        "the end in view",
        "const t = document.getElementById('turns'); return t.scrollHeight - t.scrollTop - t.clientHeight < 48",
    );
    // ↑ brings the prompt back.
    browser.type_into("#prompt", "\u{E013}");
    assert_eq!(
        browser.js("return document.getElementById('prompt').value"),
        json!("tidy the build")
    );
    browser.screenshot("dashboard-conversation-prompt");

    // Interrupt (the button) presses Escape in the pane.
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); return true");
    browser.click("#interrupt");
    let toast = browser.until(
        "the interrupt's toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    assert_eq!(toast, "Interrupted (Escape sent)");
}

#[test]
fn the_needs_you_strip_orders_waiting_agents_and_answers_them() {
    let Some((world, browser)) = world_and_browser("dash_needs") else {
        return;
    };
    let long = "docs/design/, next to the notes that describe the whole request flow";
    // A narrow pane: the long option wraps over two lines there.
    stand_in(
        &world,
        "need-a",
        "shop",
        50,
        json!([{"prompt": "draw the diagram", "replies": ["Looking.", "Drawn."],
                "question": {"question": "Where should the diagram go?", "options": ["docs/diagrams/", long], "answer": "docs/diagrams/"}}]),
    );
    stand_in(
        &world,
        "need-b",
        "garden",
        120,
        json!([{"prompt": "tidy the build", "replies": ["Looking.", "Done."], "permission": true}]),
    );
    let (a, b) = (agent_id(&world, "need-a"), agent_id(&world, "need-b"));
    browser.goto(&format!("http://{}/", world.server.addr));
    browser.until(
        "two cards",
        "return document.querySelectorAll('.card').length === 2",
    );
    assert_eq!(browser.js("return document.title"), json!("Headspace"));
    // Browser notifications, turned on, with the user away: the browser's Notification is
    // replaced by a recorder (a headless browser cannot be granted the permission).
    browser.js(
        "window.__notes = []; window.Notification = function (title, o) { window.__notes.push([title, o.body]); };
         window.Notification.permission = 'granted'; localStorage.setItem('hs.notify', '1');
         document.hasFocus = () => false; return true",
    );

    send(&world, "need-a", "draw the diagram");
    waiting(&world, "need-a");
    std::thread::sleep(Duration::from_millis(1500));
    send(&world, "need-b", "tidy the build");
    let dialog = waiting(&world, "need-b");
    assert_eq!(
        dialog["question"]["question"]["tool"]["summary"],
        "rm -rf target"
    );

    // Longest-waiting first; the permission shows its tool and command.
    let order = browser.until(
        "both in the strip",
        "const n = [...document.querySelectorAll('#needs .need')].map(n => Number(n.dataset.id)); return n.length === 2 && n",
    );
    assert_eq!(order, json!([a, b]), "longest-waiting first");
    let b_text = browser.until(
        "the permission's command in the strip",
        &format!("const t = document.querySelector('#needs .need[data-id=\"{b}\"]').textContent; return t.includes('rm -rf target') && t"),
    );
    let b_text = b_text.as_str().unwrap();
    assert!(
        b_text.contains("Bash") && b_text.contains("rm -rf target"),
        "{b_text}"
    );
    assert!(b_text.contains("Do you want to proceed?"), "{b_text}");
    // The summary and the title count from the same state as the cards.
    assert_eq!(
        browser
            .js("return document.querySelector('#summary .count[data-shown=waiting]').textContent"),
        json!("2 needs you")
    );
    assert_eq!(
        browser.js(&format!(
            "return document.querySelector('.card[data-id=\"{b}\"]').dataset.shown"
        )),
        json!("waiting"),
        "a permission wait is shown as waiting"
    );
    browser.until("the title", "return document.title === '(2) Headspace'");
    let notes = browser.until(
        "two notifications",
        "return window.__notes.length === 2 && window.__notes",
    );
    assert_eq!(
        notes,
        json!([
            ["shop needs you", "Where should the diagram go?"],
            // The server's notice says the permission's command too (core notice.rs).
            ["garden needs you", "Do you want to proceed? rm -rf target"]
        ])
    );
    browser.screenshot("dashboard-needs-you");

    // Its open conversation shows the pending request at its end: the tool, its command,
    // the question and the options (the strip's own drawing).
    browser.click(&format!(".card[data-id=\"{b}\"]"));
    let pending = browser.until(
        "the pending request in the conversation",
        "const p = document.getElementById('conv-pending'); return !document.getElementById('conversation').hidden && !p.hidden && p.textContent.includes('rm -rf target') && p.textContent",
    );
    let pending = pending.as_str().unwrap();
    assert!(
        pending.contains("Bash") && pending.contains("Do you want to proceed?"),
        "{pending}"
    );
    assert_eq!(
        browser.js("const b = [...document.querySelectorAll('#conv-pending button.answer')]; return [b.length, b[0].textContent]"),
        json!([2, "1. Yes"])
    );

    // The number key answers the focused item: pick the permission, press 1.
    browser.click(&format!("#needs .need[data-id=\"{b}\"] .asked-text"));
    browser.until(
        "the permission focused",
        &format!("return document.querySelector('#needs .need.focused').dataset.id === '{b}'"),
    );
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); document.activeElement.blur(); return true");
    browser.type_into("body", "1");
    let toast = browser.until(
        "the answer's toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    assert!(
        toast.as_str().unwrap().starts_with("Answered “Yes”"),
        "{toast}"
    );
    browser.until(
        "the permission gone from the strip",
        &format!("return !document.querySelector('#needs .need[data-id=\"{b}\"]')"),
    );
    browser.until(
        "one left in the strip",
        "return document.querySelectorAll('#needs .need').length === 1",
    );
    // No longer waiting: the conversation's pending request is gone too.
    browser.until(
        "the pending request gone from the conversation",
        "return document.getElementById('conv-pending').hidden",
    );
    browser.click("#conv-close");

    // The option the narrow pane wraps is found by its number and whole label.
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); return true");
    browser.click(&format!(
        "#needs .need[data-id=\"{a}\"] button.answer[data-answer=\"2\"]"
    ));
    let toast = browser.until(
        "the answer's toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    assert!(
        toast.as_str().unwrap().starts_with("Answered"),
        "the wrapped option was answered: {toast}"
    );
    let answered = wait_for(Duration::from_secs(15), || {
        world
            .server
            .try_json("/api/agents/need-a/turns")?
            .as_array()?
            .iter()
            .find(|t| t["intent"] == "answer")
            .cloned()
    })
    .expect("the answer turn");
    assert_eq!(answered["text"], long);
    browser.until(
        "the strip empty",
        "return document.getElementById('needs').hidden",
    );
    browser.until(
        "both done",
        "return [...document.querySelectorAll('.card')].every(c => c.dataset.shown === 'done')",
    );
    assert_eq!(
        browser.js("return document.querySelector('#summary .count').textContent"),
        json!("2 done")
    );
    let done = browser
        .js("return window.__notes.filter(n => n[0].endsWith(' is done')).map(n => n[0]).sort()");
    assert_eq!(done, json!(["garden is done", "shop is done"]));
    // Finished while unseen: counted in the title until the page is looked at.
    assert_eq!(browser.js("return document.title"), json!("(2) Headspace"));
    browser.js("window.dispatchEvent(new Event('focus')); return true");
    assert_eq!(browser.js("return document.title"), json!("Headspace"));
    browser.screenshot("dashboard-grid");
}

/// Every visible element inside the viewport's width, except inside a box that scrolls
/// sideways on purpose (code); and the document does not scroll sideways.
const NO_OVERFLOW: &str = "
  const w = window.innerWidth;
  if (document.documentElement.scrollWidth > w) return 'the page scrolls sideways: ' + document.documentElement.scrollWidth;
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    let p = e.parentElement, clipped = false;
    while (p) { const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') { clipped = p.getBoundingClientRect().right <= w + 1; break; } p = p.parentElement; }
    if (!clipped && (r.right > w + 1 || r.left < -1)) return (e.id || e.className || e.tagName) + ' spans ' + r.left + '..' + r.right;
  }
  return 'fits';";

#[test]
fn a_wizard_of_questions_is_answered_from_the_needs_you_strip() {
    let Some((world, browser)) = world_and_browser("dash_wizard") else {
        return;
    };
    let option = |l: &str| json!({"label": l, "description": ""});
    stand_in(
        &world,
        "wiz-2",
        "atelier",
        100,
        json!([{"prompt": "plan the site", "replies": ["Looking.", "Planned."],
            "ask": {"questions": [
                {"question": "Which stack?", "header": "Stack", "multiSelect": false,
                 "options": [option("Rails"), option("Django")]},
                {"question": "Which pages?", "header": "Pages", "multiSelect": true,
                 "options": [option("Home"), option("Blog"), option("Shop")]},
                {"question": "Which host?", "header": "Host", "multiSelect": false,
                 "options": [option("Fly"), option("Render")]}]}}]),
    );
    let id = agent_id(&world, "wiz-2");
    browser.goto(&format!("http://{}/", world.server.addr));
    send(&world, "wiz-2", "plan the site");
    waiting(&world, "wiz-2");
    let legends = browser.until(
        "the answer form in the strip",
        &format!("const f = document.querySelector('#needs .need[data-id=\"{id}\"] .answer-form'); return f && [...f.querySelectorAll('legend')].map(l => l.textContent)"),
    );
    assert_eq!(
        legends,
        json!(["Which stack?", "Which pages?", "Which host?"])
    );
    // The card points to the strip instead of offering one question's buttons.
    let card = browser.js(&format!(
        "return document.querySelector('.card[data-id=\"{id}\"] .question').textContent"
    ));
    assert!(card.as_str().unwrap().contains("Needs you"), "{card}");
    let form = format!("#needs .need[data-id=\"{id}\"] .answer-form");
    // A missing answer is said, and nothing is sent.
    browser.js(&format!(
        "document.querySelector('{form} button[type=submit]').click(); return true"
    ));
    browser.until(
        "the missing-answer toast",
        "return [...document.querySelectorAll('.toast')].some(t => t.textContent.includes('has no answer yet'))",
    );
    browser.js(&format!(
        "const f = document.querySelector('{form}');
         f.querySelectorAll('fieldset')[0].querySelectorAll('input[type=radio]')[1].click();
         const pages = f.querySelectorAll('fieldset')[1].querySelectorAll('input[type=checkbox]');
         pages[0].click(); pages[2].click();
         return true"
    ));
    browser.type_into(
        &format!("{form} fieldset:nth-of-type(3) .aq-other"),
        "a small VPS",
    );
    browser.js(&format!(
        "document.querySelector('{form} button[type=submit]').click(); return true"
    ));
    let answered = wait_for(Duration::from_secs(20), || {
        let turns = world.server.try_json("/api/agents/wiz-2/turns")?;
        turns
            .as_array()?
            .iter()
            .find(|t| t["intent"] == "answer")
            .cloned()
    })
    .unwrap_or_else(|| {
        panic!(
            "the answer turn: {}",
            world.tmux.run(&["capture-pane", "-p", "-t", "wiz-2"])
        )
    });
    let text = answered["text"].as_str().unwrap();
    for want in ["Django", "Home, Shop", "a small VPS"] {
        assert!(text.contains(want), "{want:?} in {text:?}");
    }
    browser.until(
        "the strip empties",
        &format!("return !document.querySelector('#needs .need[data-id=\"{id}\"]')"),
    );
}

#[test]
fn on_a_phone_nothing_overflows_and_a_conversation_follows_its_turns() {
    let Some(db) = fresh_db("dash_phone") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dash_phone");
    let server = Server::start(&db, &claude, &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut s = SessionWriter::new(11, Timestamp(now - 600_000));
    let file = claude.join(s.path());
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(
            &s.prompt(&format!("step {i}: look at `src/lib.rs`"), None)
                .json,
        );
        text.push('\n');
        s.wait(1_000);
        text.push_str(&s.agent_text(&format!("Looked, step {i}:\n\n```rust\nfn main() {{ println!(\"a very long line of code that must scroll inside its block and never widen the page {i}\"); }}\n```")).json);
        text.push('\n');
        s.wait(1_000);
    }
    append(&file, &text);
    server.post(
        "/hook/SessionStart",
        &hook(
            &s,
            &claude,
            "%3",
            "SessionStart",
            json!({"source": "startup"}),
        ),
    );
    let id = wait_for(Duration::from_secs(20), || {
        let a = server.try_json(&format!("/api/agents/{}", s.session_id))?;
        (a["turn_count"] == 60).then(|| a["id"].as_u64().unwrap())
    })
    .expect("60 turns stored");

    let (w, h) = browser.resize(390, 844);
    assert!(w <= 390 && h <= 844, "{w}x{h}");
    browser.goto(&format!("http://{}/", server.addr));
    browser.until("the card", "return !!document.querySelector('.card')");
    assert_eq!(browser.js(NO_OVERFLOW), json!("fits"), "the grid at 390 px");
    browser.screenshot("dashboard-mobile");

    browser.click(&format!(".card[data-id=\"{id}\"]"));
    browser.until(
        "the conversation, opened at its end",
        "const t = document.getElementById('turns'); return document.querySelectorAll('.bubble').length === 60 && t.scrollHeight > t.clientHeight && t.scrollHeight - t.scrollTop - t.clientHeight < 48",
    );
    // Code in a monospace face, inside its own scrolling block.
    let font = browser
        .js("return getComputedStyle(document.querySelector('.bubble .text pre code')).fontFamily");
    assert!(font.as_str().unwrap().contains("mono"), "{font}");
    assert_eq!(
        browser.js(NO_OVERFLOW),
        json!("fits"),
        "the conversation at 390 px"
    );
    // The header never covers the close button or the prompt box.
    let covered = browser.js(
        "return ['conv-close', 'prompt', 'interrupt'].filter(id => { const e = document.getElementById(id); const r = e.getBoundingClientRect();
           const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2); return !(hit === e || e.contains(hit)); })",
    );
    assert_eq!(covered, json!([]), "controls under something else");
    browser.screenshot("dashboard-mobile-conversation");

    // A new turn while at the end: followed.
    s.wait(1_000);
    append(
        &file,
        &format!("{}\n", s.agent_text("Turn 61 arrives.").json),
    );
    browser.until(
        "the new turn, in view",
        "const t = document.getElementById('turns'); return [...document.querySelectorAll('.bubble .text')].some(x => x.textContent === 'Turn 61 arrives.') && t.scrollHeight - t.scrollTop - t.clientHeight < 48",
    );
    // Scrolled up: the view stays, a "new below" marker shows; it brings the end back.
    browser.js("const t = document.getElementById('turns'); t.scrollTop = 0; t.dispatchEvent(new Event('scroll')); return true");
    s.wait(1_000);
    let evil = "Turn 62 <img src=x onerror=\"window.__xss=1\"> **still text**";
    append(&file, &format!("{}\n", s.agent_text(evil).json));
    browser.until(
        "the marker",
        "return !document.getElementById('new-below').hidden",
    );
    assert_eq!(
        browser.js("return document.getElementById('turns').scrollTop"),
        json!(0),
        "the reader's place is kept"
    );
    // Agent text is never HTML, Markdown or not.
    assert_eq!(
        browser.js("return document.querySelectorAll('#turns img').length"),
        json!(0)
    );
    assert_eq!(browser.js("return window.__xss === undefined"), json!(true));
    let shown = browser.js("return [...document.querySelectorAll('.bubble .text')].map(x => x.textContent).find(x => x.startsWith('Turn 62'))");
    assert_eq!(
        shown,
        json!("Turn 62 <img src=x onerror=\"window.__xss=1\"> still text")
    );
    browser.click("#new-below");
    browser.until(
        "the end again",
        "const t = document.getElementById('turns'); return t.scrollHeight - t.scrollTop - t.clientHeight < 48 && document.getElementById('new-below').hidden",
    );
    server.stop();
}

#[test]
fn on_a_phone_a_waiting_agent_is_answered_by_tap_and_prompted_from_its_conversation() {
    let Some((world, browser)) = world_and_browser("dash_phone_work") else {
        return;
    };
    stand_in(
        &world,
        "ph-1",
        "pocket",
        60,
        json!([{"prompt": "tidy the build", "replies": ["Looking.", "Done."], "permission": true},
               {"prompt": "say hello", "replies": ["Hello from the pane."]}]),
    );
    let id = agent_id(&world, "ph-1");
    let (w, h) = browser.resize(390, 844);
    assert!(w <= 390 && h <= 844, "{w}x{h}");
    browser.goto(&format!("http://{}/", world.server.addr));
    until_card(&browser, id);
    send(&world, "ph-1", "tidy the build");
    waiting(&world, "ph-1");

    // The strip, with the permission's command, fits the phone.
    browser.until(
        "the strip with the command",
        "const n = document.querySelector('#needs .need'); return !document.getElementById('needs').hidden && n && n.textContent.includes('rm -rf target')",
    );
    assert_eq!(
        browser.js(NO_OVERFLOW),
        json!("fits"),
        "the needs-you strip at 390 px"
    );
    browser.screenshot("dashboard-mobile-needs-you");

    // The conversation covers the whole phone, the strip too: the request is at its end.
    browser.click(&format!(".card[data-id=\"{id}\"]"));
    browser.until(
        "the pending request in the conversation",
        "const p = document.getElementById('conv-pending'); return !document.getElementById('conversation').hidden && !p.hidden && p.textContent.includes('rm -rf target') && p.textContent.includes('Do you want to proceed?')",
    );
    let reachable = browser.js(
        "const hit = (e) => { const r = e.getBoundingClientRect(); const h = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
           return r.top >= 0 && r.bottom <= innerHeight && r.right <= innerWidth && (h === e || e.contains(h)); };
         return [hit(document.querySelector('#needs .need button.answer')), hit(document.querySelector('#conv-pending button.answer[data-answer=\"1\"]')), hit(document.getElementById('prompt'))]",
    );
    assert_eq!(
        reachable,
        json!([false, true, true]),
        "the strip is covered; the conversation's request and the prompt box are not"
    );
    assert_eq!(
        browser.js(NO_OVERFLOW),
        json!("fits"),
        "the conversation with its pending request at 390 px"
    );
    browser.screenshot("dashboard-mobile-pending");

    // A tap on an option answers it in the pane.
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); return true");
    browser.click("#conv-pending button.answer[data-answer=\"1\"]");
    let toast = browser.until(
        "the answer's toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    assert!(
        toast.as_str().unwrap().starts_with("Answered “Yes”"),
        "{toast}"
    );
    browser.until(
        "the request gone, the task done",
        &format!("return document.getElementById('conv-pending').hidden && document.querySelector('.card[data-id=\"{id}\"]').dataset.shown === 'done'"),
    );
    assert_eq!(browser.js(NO_OVERFLOW), json!("fits"), "after the answer");

    // A prompt sent from the prompt box reaches the pane, and its reply comes back.
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); return true");
    browser.type_into("#prompt", "say hello\u{E007}");
    until_typed(&world, "ph-1", "say hello");
    browser.until(
        "the reply in the conversation",
        "return [...document.querySelectorAll('.bubble.agent .text')].some(x => x.textContent === 'Hello from the pane.')",
    );
    assert_eq!(browser.js(NO_OVERFLOW), json!("fits"), "after the prompt");
}

/// Posts hook `event` of session `s` in pane `pane`.
#[test]
fn a_sub_agents_finish_is_not_notified_a_main_agents_is_once_in_its_quiet_period() {
    let Some(db) = fresh_db("dash_notices") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dash_notices");
    let server = Server::start(&db, &claude, &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // A main agent and a sub-agent (its transcript named `agent-…`, as Claude Code names a
    // sub-agent's).
    let mut sub = SessionWriter::new(22, Timestamp(now));
    sub.session_id = "agent-a1b2c3d4".into();
    let agents = [
        (
            SessionWriter::new(21, Timestamp(now)),
            "%21",
            "tidy the build",
        ),
        (sub, "%22", "look around"),
    ];
    for (s, pane, _) in &agents {
        server.post_hook(
            s,
            &claude,
            pane,
            "SessionStart",
            json!({"source": "startup"}),
        );
    }
    browser.goto(&format!("http://{}/", server.addr));
    browser.until(
        "two cards",
        "return document.querySelectorAll('.card').length === 2",
    );
    browser.js(
        "window.__notes = []; window.Notification = function (title, o) { window.__notes.push([title, o.body]); };
         window.Notification.permission = 'granted'; localStorage.setItem('hs.notify', '1');
         document.hasFocus = () => false; return true",
    );
    // Two tasks each: the second within the quiet period of the first.
    for round in 0..2 {
        for (s, pane, prompt) in &agents {
            server.post_hook(
                s,
                &claude,
                pane,
                "UserPromptSubmit",
                json!({"prompt": prompt}),
            );
        }
        browser.until(
            "both working",
            "const c = [...document.querySelectorAll('.card')]; return c.length === 2 && c.every(c => c.dataset.shown === 'working')",
        );
        for (s, pane, _) in &agents {
            server.post_hook(
                s,
                &claude,
                pane,
                "Stop",
                json!({"last_assistant_message": "Done.", "stop_hook_active": false}),
            );
        }
        browser.until(
            "both done",
            "const c = [...document.querySelectorAll('.card')]; return c.length === 2 && c.every(c => c.dataset.shown === 'done')",
        );
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            server.json("/api/agents/agent-a1b2c3d4")["transcript_path"],
            json!(agents[1].0.path()),
            "the sub-agent's transcript, as the card says"
        );
        let titles = browser.js("return window.__notes.map(n => n[0])");
        assert_eq!(
            titles,
            json!(["project21 is done"]),
            "round {round}: only the main agent's first finish is told"
        );
    }
    // The tab title counts the main agent's unseen finish only.
    assert_eq!(browser.js("return document.title"), json!("(1) Headspace"));
    server.stop();
}

#[test]
fn alt_i_in_the_prompt_box_interrupts_and_clear_types_slash_clear() {
    let Some(db) = fresh_db("dash_keys") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dash_keys");
    let tmux = Tmux(format!("hs-dashkeys-{}", std::process::id()));
    // A pane whose entered lines land in a file; a terminal echoes Escape there as `^[`.
    let typed = claude.join("typed.txt");
    let pane = tmux.recording_pane(&typed);
    let server = Server::start(&db, &claude, &["--tmux-socket", &tmux.0]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let s = SessionWriter::new(31, Timestamp(now));
    server.post_hook(
        &s,
        &claude,
        &pane,
        "SessionStart",
        json!({"source": "startup"}),
    );
    let id = wait_for(Duration::from_secs(15), || {
        server.try_json(&format!("/api/agents/{}", s.session_id))?["id"].as_u64()
    })
    .expect("the agent is listed");
    browser.goto(&format!("http://{}/", server.addr));
    until_card(&browser, id);
    browser.click(&format!(".card[data-id=\"{id}\"]"));
    browser.until(
        "the prompt box",
        "return !document.getElementById('conversation').hidden",
    );

    // Alt+I in the prompt box presses Escape in the pane (and keeps the conversation open);
    // Escape itself only leaves the box (tests/dashboard_keys.rs).
    browser.type_into("#prompt", "\u{E00A}i\u{E000}");
    let toast = browser.until(
        "the interrupt's toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    assert_eq!(toast, "Interrupted (Escape sent)");
    let escaped = wait_for(Duration::from_secs(10), || {
        let screen = tmux.run(&["capture-pane", "-p", "-t", &pane]);
        screen.contains("^[").then_some(screen)
    });
    assert!(escaped.is_some(), "Escape reached the pane");
    assert_eq!(
        browser.js("return document.getElementById('conversation').hidden"),
        json!(false)
    );

    // Clear asks first; confirmed, it types `/clear` there once.
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); window.__asked = []; window.confirm = (q) => { window.__asked.push(q); return true; }; return true");
    browser.click("#clear");
    let toast = browser.until(
        "the clear's toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    assert_eq!(toast, "Cleared (/clear sent)");
    assert_eq!(browser.js("return window.__asked.length"), json!(1));
    typed_once(&typed, "/clear");
    server.stop();
}
