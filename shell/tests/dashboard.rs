//! The dashboard in a real headless Chromium (driven through chromedriver's WebDriver API),
//! against the real server and a throwaway database.

mod common;
use common::browser::*;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn line(file: &Path, json: &str) {
    append(file, &format!("{json}\n"));
}

#[test]
fn the_dashboard_shows_live_cards_and_conversations_in_a_real_browser() {
    let Some(db) = fresh_db("dashboard") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard");
    let port = free_port().to_string();
    let addr_arg = format!("127.0.0.1:{port}");
    let server = Server::start_on(&db, &claude, &addr_arg, &[]);
    let base = format!("http://{}", server.addr);
    browser.goto(&format!("{base}/"));
    browser.js("window.__marker = 'no reload'; return true");

    // A prompt hook: the card appears with its state.
    let now = Timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    let mut s = SessionWriter::new(1, now.add_millis(-60_000));
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
    let state = browser.until(
        "the card",
        "const c = document.querySelector('.card'); return c && c.dataset.state",
    );
    assert_eq!(state, "commanded");

    // Its conversation: the hook's bubble at once.
    browser.js("document.querySelector('.card').click(); return true");
    browser.until("the first bubble", "return [...document.querySelectorAll('.bubble .text')].some(t => t.textContent === 'fix the build')");
    let hook_time = browser.js("return document.querySelector('.bubble .time').textContent");

    // The transcript: the prompt line claims the hook's turn with an earlier time, and an agent
    // line no hook announced appears, after it, without a reload.
    let p = s.prompt("fix the build", None);
    line(&file, &p.json);
    s.wait(10_000);
    let a = s.agent_text("Looking at the build script.");
    line(&file, &a.json);
    let texts = browser.until(
        "two bubbles in order",
        "const t = [...document.querySelectorAll('.bubble .text')].map(e => e.textContent); return t.length === 2 && t",
    );
    assert_eq!(
        texts,
        json!(["fix the build", "Looking at the build script."]),
        "a corrected timestamp moves the bubble"
    );
    // The header's proof: the audit accounts for both lines; a lost row shows with a Repair
    // button that brings it back.
    server.json("/api/audit");
    browser.js("loadAudit(); return true");
    browser.until(
        "the audit in the header",
        "return document.getElementById('audit').textContent.includes('all 2 turns accounted for')",
    );
    psql(
        &db,
        &format!("DELETE FROM turns WHERE entry_uuid = '{}'", a.uuid),
    );
    server.json("/api/audit");
    browser.js("loadAudit(); return true");
    browser.until(
        "the missing turn in the header",
        "return document.getElementById('audit').textContent.includes('1 missing')",
    );
    browser.click("#audit .audit-repair");
    browser.until(
        "the repair",
        "return document.getElementById('audit').textContent.includes('all 2 turns accounted for')",
    );
    // The repaired turn shows its transcript time (the conversation is drawn again after
    // the repair: wait for it rather than read it mid-draw).
    browser.until(
        "the repaired turn's own time",
        &format!(
            "const t = document.querySelector('.bubble .time'); return !!t && t.textContent !== {hook_time}"
        ),
    );

    // Agent text is text: no HTML is interpreted.
    s.wait(1_000);
    let evil = "<img src=x onerror=\"window.__xss=1\"> <b>bold?</b>";
    let x = s.agent_text(evil);
    line(&file, &x.json);
    browser.until("the hostile bubble", &format!("return [...document.querySelectorAll('.bubble .text')].some(t => t.textContent === {})", json!(evil)));
    assert_eq!(
        browser.js("return document.querySelectorAll('#turns img, #turns b').length"),
        json!(0)
    );
    assert_eq!(browser.js("return window.__xss === undefined"), json!(true));
    browser.screenshot("dashboard-conversation");

    // Reconcile from the kebab menu: its toast (the repair's toast cleared first).
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); return true");
    browser.js("document.querySelector('.card .kebab').click(); return true");
    browser.js("document.querySelector('#menu [data-action=reconcile]').click(); return true");
    let toast = browser.until(
        "the reconcile toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    assert_eq!(toast, "No missing turns found");

    // A completion: the card turns complete, live.
    s.wait(1_000);
    let done = s.agent_text("Done. All tests pass.");
    line(&file, &done.json);
    browser.until(
        "complete card",
        "return document.querySelector('.card').dataset.state === 'complete'",
    );
    browser.screenshot("dashboard-cards");

    // The server dies; a line is written meanwhile; it comes back on the same port: the page
    // catches up, nothing missing, nothing doubled, no reload.
    server.kill();
    s.wait(1_000);
    let late = s.prompt("written while the server was down", None);
    line(&file, &late.json);
    std::thread::sleep(Duration::from_millis(500));
    let server = Server::start_on(&db, &claude, &addr_arg, &[]);
    browser.until(
        "the turn written during the outage",
        "return [...document.querySelectorAll('.bubble .text')].some(t => t.textContent === 'written while the server was down')",
    );
    let api_turns = server
        .json(&format!("/api/agents/{}/turns", s.session_id))
        .as_array()
        .unwrap()
        .len();
    let ids = browser.js("return [...document.querySelectorAll('.bubble')].map(b => b.dataset.id)");
    let ids = ids.as_array().unwrap();
    let unique: std::collections::BTreeSet<_> = ids
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), api_turns, "every turn shown once: {ids:?}");
    assert_eq!(unique.len(), ids.len());
    assert_eq!(browser.js("return window.__marker"), json!("no reload"));
    browser.until(
        "the new task's card",
        "return document.querySelector('.card').dataset.state === 'commanded'",
    );
    assert_eq!(browser.js("return document.getElementById('menu').hidden && getComputedStyle(document.getElementById('menu')).display"), json!("none"));
    browser.screenshot("dashboard-after-restart");

    // A question: its options are buttons (under "Needs you"; the card says what it waits on
    // and where to answer) that answer in the pane. Pane %7 does not exist here, so the
    // answer's error comes back as a toast, naming the pane.
    server.post(
        "/hook/PreToolUse",
        &hook(
            &s,
            &claude,
            "%7",
            "PreToolUse",
            json!({"tool_name": "AskUserQuestion", "tool_use_id": "toolu_dash1", "tool_input": {"questions": [{"question": "Which directory?", "options": [{"label": "src/"}, {"label": "docs/"}]}]}}),
        ),
    );
    let buttons = browser.until(
        "the answer buttons",
        "const b = [...document.querySelectorAll('#needs button.answer')].map(b => b.textContent); return b.length === 2 && b",
    );
    assert_eq!(buttons, json!(["1. src/", "2. docs/"]));
    let card = browser
        .js("const q = document.querySelector('.card .question'); return q && q.textContent");
    assert!(
        card.as_str()
            .is_some_and(|t| t.contains("Which directory?") && t.contains("Needs you")),
        "{card}"
    );
    assert_eq!(
        browser.js("return document.querySelectorAll('.card button.answer').length"),
        json!(0),
        "the card does not repeat the strip's buttons"
    );
    browser.js("document.querySelectorAll('.toast').forEach(t => t.remove()); document.querySelectorAll('#needs button.answer')[1].click(); return true");
    let toast = browser.until(
        "the answer's toast",
        "const t = document.querySelector('.toast'); return t && t.textContent",
    );
    let toast = toast.as_str().unwrap();
    assert!(
        toast.starts_with("Could not answer") && toast.contains("%7"),
        "{toast}"
    );
    browser.screenshot("dashboard-question");
    let api_turns = server
        .json(&format!("/api/agents/{}/turns", s.session_id))
        .as_array()
        .unwrap()
        .len();
    browser.until(
        "the conversation's live turn count",
        &format!(
            "return document.getElementById('conv-status').textContent === '{api_turns} turns'"
        ),
    );

    // Dark theme renders too.
    browser.js("document.getElementById('theme').click(); return true");
    browser.screenshot("dashboard-dark");
    server.stop();
}

#[test]
fn a_hundred_agents_and_a_ten_thousand_turn_conversation_stay_responsive() {
    let Some((server, browser, claude)) = pages::server_and_browser("dashboard_perf") else {
        return;
    };
    let now = Timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    for n in 0..99u64 {
        let s = SessionWriter::new(1000 + n, now);
        server.post(
            "/hook/UserPromptSubmit",
            &hook(
                &s,
                &claude,
                &format!("%{}", 100 + n),
                "UserPromptSubmit",
                json!({"prompt": format!("task for agent {n}")}),
            ),
        );
    }
    let mut big = SessionWriter::new(7, now.add_millis(-86_400_000));
    let mut text = String::new();
    for i in 0..5_000 {
        text.push_str(&big.prompt(&format!("question number {i}"), None).json);
        text.push('\n');
        text.push_str(
            &big.agent_text(&format!(
                "Answer number {i}: {}",
                "the quick brown fox jumps over the lazy dog. ".repeat(3)
            ))
            .json,
        );
        text.push('\n');
    }
    append(&claude.join(big.path()), &text);
    let big_id = wait_for(Duration::from_secs(60), || {
        let agents = server.try_json("/api/agents")?;
        let list = agents.as_array()?;
        let big = list
            .iter()
            .find(|a| a["session_id"] == big.session_id.as_str())?;
        (list.len() == 100 && big["turn_count"] == 10_000).then(|| big["id"].as_u64().unwrap())
    })
    .expect("100 agents and 10,000 turns stored");

    browser.goto(&format!("http://{}/", server.addr));
    let first = browser.until("100 cards", "return document.querySelectorAll('.card').length === 100 && window.__hs.metrics.firstRenderMs");
    browser.js(&format!(
        "document.querySelector('.card[data-id=\"{big_id}\"]').click(); return true"
    ));
    // It opens at its end with the newest page, the last turn in view.
    let last_turn = server.json(&format!("/api/agents/{big_id}/turns?newest=1"))[0]["id"]
        .as_u64()
        .unwrap();
    let opened = browser.until(
        "the newest page, at the end",
        &format!(
            "const t = document.getElementById('turns'); const b = [...document.querySelectorAll('.bubble')].pop();
             return b && b.dataset.id === '{last_turn}' && t.scrollHeight - t.scrollTop - t.clientHeight < 48 && window.__hs.metrics.lastLoadMs"
        ),
    );
    // At the top, the page before comes, and what the reader looked at stays where it was.
    let kept = browser.js_async(
        "const done = arguments[arguments.length - 1]; const box = document.getElementById('turns');
         const first = document.querySelector('.bubble'); const n = document.querySelectorAll('.bubble').length;
         box.scrollTop = 0; const top = first.getBoundingClientRect().top;
         const wait = () => document.querySelectorAll('.bubble').length > n
           ? requestAnimationFrame(() => requestAnimationFrame(() => done([n, document.querySelectorAll('.bubble').length, first.getBoundingClientRect().top - top, box.scrollTop])))
           : setTimeout(wait, 10);
         wait();",
    );
    assert!(
        kept[2].as_f64().unwrap().abs() < 2.0 && kept[3].as_f64().unwrap() > 0.0,
        "the first turn shown moved by {} px: {kept}",
        kept[2]
    );
    // The rest comes page by page as the reader keeps scrolling to the top.
    browser.js(
        "window.__backMs = null; const t0 = performance.now(); const box = document.getElementById('turns');
         const up = () => { if (document.querySelectorAll('.bubble').length >= 10000) { window.__backMs = performance.now() - t0; return; }
           box.scrollTop = 0; setTimeout(up, 20); };
         up(); return true;",
    );
    let back = wait_for(Duration::from_secs(60), || {
        browser.js("return window.__backMs").as_f64()
    })
    .expect("10,000 bubbles after scrolling back");
    // Every turn once, in the server's order.
    let api_ids: Vec<String> = server
        .json(&format!("/api/agents/{big_id}/turns"))
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].to_string())
        .collect();
    let shown =
        browser.js("return [...document.querySelectorAll('.bubble')].map(b => b.dataset.id)");
    let shown: Vec<String> = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(shown.len(), 10_000);
    assert!(
        shown == api_ids,
        "the bubbles are the turns, in order, once each"
    );
    let load = opened.as_f64().unwrap() + back;
    let scroll = browser.js_async(
        "const done = arguments[arguments.length - 1]; const box = document.getElementById('turns');
         const frames = []; let last = performance.now(); let step = 0; box.scrollTop = 0;
         function tick(t) { frames.push(t - last); last = t; box.scrollTop = (box.scrollHeight - box.clientHeight) * (step / 60);
           if (++step <= 60) requestAnimationFrame(tick); else { frames.shift(); frames.sort((a, b) => a - b);
             done({avg: frames.reduce((a, b) => a + b, 0) / frames.length, p95: frames[Math.floor(frames.length * 0.95)], max: frames[frames.length - 1]}); } }
         requestAnimationFrame(tick);",
    );
    browser.screenshot("dashboard-10k");
    let first = first.as_f64().unwrap();
    println!("dashboard: 100 cards rendered {first:.0} ms after navigation; 10,000-turn conversation: newest page in {:.0} ms, the rest by scrolling back in {back:.0} ms; scrolling frames avg {:.1} ms, p95 {:.1} ms, max {:.1} ms", opened.as_f64().unwrap(), scroll["avg"].as_f64().unwrap(), scroll["p95"].as_f64().unwrap(), scroll["max"].as_f64().unwrap());
    assert!(
        first < 5_000.0 && load < 20_000.0,
        "first render {first} ms, load {load} ms"
    );
    server.stop();
}

#[test]
fn an_orchestration_panel_shows_the_run_and_its_buttons_drive_it() {
    let Some(db) = fresh_db("dashboard_orch") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard_orch");
    let project = temp_dir("dashboard_orch_project").join("shop");
    std::fs::create_dir_all(project.join(".specflow/workflows")).unwrap();
    std::fs::write(
        project.join(".specflow/orchestration-state.json"),
        json!({"schema_version": "3.0", "orchestration": {
            "phase": {"number": "0007", "name": "checkout"},
            "step": {"current": "implement", "index": 2, "status": "in_progress"}}})
        .to_string(),
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let started = Timestamp(now).to_string();
    std::fs::write(
        project.join(".specflow/workflows/orchestration-run1.json"),
        json!({"id": "run1", "status": "running", "startedAt": started, "currentPhase": "implement",
            "config": {"autoMerge": false, "budget": {"maxTotal": 20}, "headspace": {"agent": "%9"}},
            "batches": {"total": 2, "current": 1, "items": [
                {"index": 0, "section": "Setup", "status": "completed"},
                {"index": 1, "section": "Core", "status": "running"}]},
            "totalCostUsd": 1.25,
            "decisionLog": [
                {"timestamp": started, "decision": "transition", "reason": "analyze complete"},
                {"timestamp": started, "decision": "spawn_batch", "reason": "batch 2 of 2"}]})
        .to_string(),
    )
    .unwrap();
    // An earlier run, with a decision log whose words must show as text, never as HTML.
    let before = Timestamp(now - 3_600_000).to_string();
    std::fs::write(
        project.join(".specflow/workflows/orchestration-run0.json"),
        json!({"id": "run0", "status": "completed", "startedAt": before, "completedAt": before,
            "currentPhase": "complete", "config": {"budget": {"maxTotal": 20}},
            "totalCostUsd": 3.5,
            "decisionLog": [
                {"timestamp": before, "decision": "spawn", "reason": "<img src=x onerror=\"window.pwned=1\"> design"},
                {"timestamp": before, "decision": "complete", "reason": "merged"}]})
        .to_string(),
    )
    .unwrap();
    let port = free_port().to_string();
    let server = Server::start_on(&db, &claude, &format!("127.0.0.1:{port}"), &[]);
    let mut s = SessionWriter::new(3, Timestamp(now));
    s.cwd = project.display().to_string();
    server.post(
        "/hook/SessionStart",
        &hook(
            &s,
            &claude,
            "%9",
            "SessionStart",
            json!({"source": "startup"}),
        ),
    );
    // The run's agent asks a question: the run stands still until it is answered.
    for (event, extra) in [
        ("UserPromptSubmit", json!({"prompt": "/flow.implement"})),
        (
            "PreToolUse",
            json!({"tool_name": "AskUserQuestion", "tool_use_id": "toolu_o1",
                   "tool_input": {"questions": [{"question": "Which payment provider?",
                       "options": [{"label": "Stripe"}, {"label": "Adyen"}]}]}}),
        ),
    ] {
        server.post_hook(&s, &claude, "%9", event, extra);
    }
    browser.goto(&format!("http://{}/", server.addr));
    let asks = browser.until(
        "the run agent's question in its panel",
        "const q = document.querySelector('.orch .run-asks'); return q && q.querySelectorAll('button.answer').length === 2 && q.textContent",
    );
    assert!(
        asks.as_str().unwrap().contains("Which payment provider?"),
        "{asks}"
    );
    let steps = browser.until(
        "the orchestration panel",
        "const p = document.querySelector('.orch'); return p && [...p.querySelectorAll('.steps-bar li')].map(l => l.className)",
    );
    assert_eq!(steps, json!(["done", "done", "current", "", ""]));
    let text = browser.js("return document.querySelector('.orch').textContent");
    let text = text.as_str().unwrap();
    for want in [
        "shop · phase 0007 checkout",
        "batch 2 of 2",
        "$1.25 of $20.00",
        "spawn_batch batch 2 of 2",
    ] {
        assert!(text.contains(want), "{want:?} in {text:?}");
    }
    // The earlier run, its decision log collapsed, newest first; opened, it stays open
    // across a refresh.
    let past = browser.until(
        "the past run's decision log",
        "const d = document.querySelector('.orch .past-runs [data-run=run0] details.run-log'); return d && !d.open && [d.querySelector('summary').textContent, [...d.querySelectorAll('li')].map(l => l.textContent), d.querySelectorAll('img').length]",
    );
    assert_eq!(past[0], "2 decisions");
    let entries: Vec<&str> = past[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(entries.len(), 2);
    assert!(entries[0].ends_with(" complete merged"), "{entries:?}");
    assert!(
        entries[1].ends_with(r#" spawn <img src=x onerror="window.pwned=1"> design"#),
        "{entries:?}"
    );
    assert_eq!(past[2], 0, "the reason is text, not an image");
    let kept = browser.js(
        "document.querySelector('.orch .past-runs').open = true; document.querySelector('.orch details.run-log').open = true; renderOrchestrations(lastOrchestrations); return [document.querySelector('.orch .past-runs').open, document.querySelector('.orch details.run-log').open]",
    );
    assert_eq!(kept, json!([true, true]));
    browser.screenshot("dashboard-orchestration");
    browser.js("document.querySelector('.orch [data-orch=pause]').click(); return true");
    browser.until(
        "the paused panel",
        "const p = document.querySelector('.orch'); return p && p.dataset.status === 'paused' && !!p.querySelector('[data-orch=resume]')",
    );
    let run: Value = serde_json::from_slice(
        &std::fs::read(project.join(".specflow/workflows/orchestration-run1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        run["status"], "paused",
        "the button went through to the run's file"
    );
    browser.js("document.querySelector('.orch [data-orch=resume]').click(); return true");
    browser.until(
        "the running panel again",
        "const p = document.querySelector('.orch'); return p && p.dataset.status === 'running'",
    );
    browser.js("document.querySelector('.orch [data-orch=cancel]').click(); return true");
    browser.until(
        "the cancelled run's panel",
        "const p = document.querySelector('.orch'); return p && p.dataset.status === 'cancelled' && !p.querySelector('[data-orch]')",
    );

    // A project with no run yet: the card's menu starts one, run by a real runner process
    // that this server launched; its panel appears, and Cancel stops the runner.
    let fresh = temp_dir("dashboard_orch_fresh").join("garden");
    std::fs::create_dir_all(fresh.join("specs/0001-beds")).unwrap();
    std::fs::write(
        fresh.join("specs/0001-beds/tasks.md"),
        "# Tasks\n\n## Beds\n- [ ] T001 Dig\n",
    )
    .unwrap();
    let mut g = SessionWriter::new(4, Timestamp(now));
    g.cwd = fresh.display().to_string();
    server.post(
        "/hook/SessionStart",
        &hook(
            &g,
            &claude,
            "%10",
            "SessionStart",
            json!({"source": "startup"}),
        ),
    );
    let card = browser.until(
        "the garden agent's card",
        "const c = [...document.querySelectorAll('.card')].find(c => c.querySelector('.title').textContent.startsWith('garden')); return c && c.dataset.id",
    );
    browser.js(&format!(
        "document.querySelector('.card[data-id=\"{}\"] .kebab').click(); document.querySelector('#menu [data-action=orchestrate]').click(); return true",
        card.as_str().unwrap()
    ));
    // The start asks first, with the run's options; confirmed as offered.
    browser.until(
        "the start form",
        "const f = document.querySelector('.orch-start'); return f && !!f.querySelector('[name=budget]') && !!f.querySelector('[name=auto_merge]')",
    );
    browser.js("document.querySelector('.orch-start [data-start]').click(); return true");
    let toast = browser.until(
        "the start toast",
        "const t = [...document.querySelectorAll('.toast')].map(t => t.textContent).find(t => t.startsWith('Orchestration started') || t.startsWith('Could not')); return t",
    );
    assert!(
        toast.as_str().unwrap().starts_with("Orchestration started"),
        "{toast}"
    );
    browser.until(
        "the new run's panel",
        "return [...document.querySelectorAll('.orch')].some(p => p.dataset.project.endsWith('/garden') && p.querySelector('[data-orch=cancel]'))",
    );
    browser.js("[...document.querySelectorAll('.orch')].find(p => p.dataset.project.endsWith('/garden')).querySelector('[data-orch=cancel]').click(); return true");
    let runner_gone = wait_for(Duration::from_secs(20), || {
        let runners = std::fs::read_dir(fresh.join(".specflow/workflows"))
            .ok()?
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("runner-"))
            .count();
        (runners == 0).then_some(())
    });
    let log =
        std::fs::read_to_string(fresh.join(".specflow/workflows/runner.log")).unwrap_or_default();
    assert!(
        runner_gone.is_some(),
        "the runner stops once cancelled: {log}"
    );
    assert!(log.contains("cancelled"), "{log}");
    server.stop();
}

#[test]
fn the_dashboard_cannot_be_framed_by_a_decoy_page() {
    // Clickjacking: a page frames the dashboard under a decoy and catches a click on an
    // answer button. The decoy here is served by the same server (the friendliest case for
    // the attacker: same origin), from a copy of the dashboard's files plus the decoy.
    let Some(db) = fresh_db("dashboard_frame") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard-frame");
    let site = claude.join("site");
    std::fs::create_dir_all(&site).unwrap();
    let real = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../static");
    for f in std::fs::read_dir(&real).unwrap().flatten() {
        std::fs::copy(f.path(), site.join(f.file_name())).unwrap();
    }
    std::fs::write(
        site.join("decoy.html"),
        "<!doctype html><title>Win a prize</title><button>Click to claim</button>\
         <iframe id=f src=\"/\" style=\"opacity:0.01;position:absolute;top:0\"></iframe>\
         <script src=\"/decoy.js\"></script>",
    )
    .unwrap();
    std::fs::write(
        site.join("decoy.js"),
        "document.getElementById('f').addEventListener('load', () => {\n\
           let seen = 'no';\n\
           try { const d = document.getElementById('f').contentDocument;\n\
                 if (d && d.querySelector('#cards')) seen = 'dashboard'; } catch (e) { seen = 'blocked'; }\n\
           document.body.dataset.framed = seen;\n\
         });",
    )
    .unwrap();
    let server = Server::start(&db, &claude, &["--static-dir", site.to_str().unwrap()]);
    browser.goto(&format!("http://{}/decoy.html", server.addr));
    let framed = browser.until(
        "the frame to load or fail",
        "return document.body.dataset.framed || false",
    );
    assert_ne!(
        framed, "dashboard",
        "the dashboard rendered inside another page's frame"
    );
    // The dashboard itself still loads on its own.
    browser.goto(&format!("http://{}/", server.addr));
    browser.until("the page", "return !!document.querySelector('#cards')");
}
