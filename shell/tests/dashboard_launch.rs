//! The page's New agent dialog and Changes view, in a real headless Chromium against the real
//! server, real git, a real tmux server on a private socket and the stand-in agent (it writes
//! the prompt it is given into `hello.txt` when its script says `edit`): an agent started
//! from the dialog in its own worktree opens in its conversation; its Changes view lists
//! `hello.txt` with its counts and its patch, a class a kind of line, and merges it into the
//! main checkout; a folder outside every projects root is refused inside the dialog, which
//! keeps what was typed and closes on Esc; the view and the dialog fit a 390 px phone.

mod common;
use common::browser::*;
use common::launching::{git, Launching};
use common::pages::*;
use common::*;
use serde_json::json;
use std::time::Duration;

/// Every visible element inside the viewport's width, except inside a box that scrolls
/// sideways on purpose (a patch); and the document does not scroll sideways (as in
/// tests/dashboard_work.rs).
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

/// The file row of `hello.txt` in the Changes view.
const HELLO: &str = r#"#changes .change-file[data-path="hello.txt"]"#;

#[test]
fn an_agent_started_from_the_page_shows_its_changes_and_merges_them() {
    let Some(Launching { server, repo, .. }) = Launching::start("dash_launch", |_, _| {}) else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let project = repo.display().to_string();

    browser.goto(&format!("http://{}/", server.addr));
    browser.until(
        "the page loaded",
        "return window.__hs.metrics.firstRenderMs !== null",
    );

    // The dialog: the project, a worktree (on by default) with the user's own name for it,
    // and a first prompt.
    browser.click("#new-agent");
    browser.until(
        "the New agent dialog",
        "return document.getElementById('new-agent-dialog').open",
    );
    assert_eq!(
        browser.js("return document.getElementById('na-worktree').checked"),
        json!(true),
        "a worktree by default"
    );
    browser.type_into("#na-project", &project);
    browser.type_into("#na-name", "from-page");
    browser.type_into("#na-prompt", "hello from the page");
    assert_eq!(
        browser.js("return document.getElementById('na-name').value"),
        json!("from-page"),
        "a name the user typed is not replaced by the prompt's suggestion"
    );
    browser.screenshot("dashboard-new-agent");

    // Start: disabled and saying so while the agent comes up (unless it was that quick).
    browser.click("#na-start");
    let at_once = browser.js(
        "const b = document.getElementById('na-start');
         return [document.getElementById('new-agent-dialog').open, b.disabled, b.textContent, document.getElementById('na-error').textContent]",
    );
    if at_once[0] == json!(true) && at_once[3] == json!("") {
        assert_eq!(
            (&at_once[1], &at_once[2]),
            (&json!(true), &json!("Starting…")),
            "{at_once}"
        );
    }

    // Started: the dialog closes, a toast names its pane and branch, its conversation opens.
    let opened = wait_for(Duration::from_secs(45), || {
        let v = browser.js("const e = document.getElementById('na-error');
             if (!e.hidden) return 'refused: ' + e.textContent;
             return document.getElementById('new-agent-dialog').open ? null : window.__hs.open");
        (!v.is_null()).then_some(v)
    })
    .unwrap_or_else(|| {
        panic!(
            "the new agent's conversation never opened: {}\n{}",
            browser.js("return document.body.innerText"),
            server.log()
        )
    });
    let id = opened
        .as_u64()
        .unwrap_or_else(|| panic!("the agent did not start: {opened}\n{}", server.log()));
    let toasts = browser
        .js("return [...document.querySelectorAll('.toast')].map(t => t.textContent).join(' | ')");
    let toasts = toasts.as_str().unwrap();
    assert!(
        toasts.contains("headspace/from-page") && toasts.contains("pane %"),
        "{toasts}"
    );
    let tree = repo.join(".worktrees/from-page");
    wait_for(Duration::from_secs(30), || {
        let c = server.try_json(&format!("/api/agents/{id}"))?;
        (c["activity"] == "idle" && c["turn_count"].as_u64()? >= 2).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "agent {id} never finished its turn: {}\n{}",
            server.json(&format!("/api/agents/{id}")),
            server.log()
        )
    });
    assert_eq!(
        server.json(&format!("/api/agents/{id}"))["cwd"],
        json!(tree.display().to_string())
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("hello.txt")).unwrap(),
        "hello from the page\n"
    );
    until_card(&browser, id);
    browser.until(
        "its card, idle",
        &format!("const c = document.querySelector('.card[data-id=\"{id}\"]'); return c && c.dataset.activity === 'idle'"),
    );
    browser.until(
        "its conversation open",
        &format!(
            "return !document.getElementById('conversation').hidden && window.__hs.open === {id}"
        ),
    );

    // Changes: one file, added, +1 −0, against main; a running worktree agent's actions.
    browser.click("#conv-changes");
    let summary = browser.until(
        "the changes",
        &format!("const s = document.querySelector('#changes .changes-summary'); return !!document.querySelector('{HELLO}') && s && s.textContent"),
    );
    assert!(
        summary
            .as_str()
            .unwrap()
            .starts_with("1 file changed against main"),
        "{summary}"
    );
    assert_eq!(
        browser.js("return document.getElementById('turns').offsetParent === null"),
        json!(true),
        "the view takes the turns' place"
    );
    assert_eq!(
        browser.js(&format!(
            "const f = document.querySelector('{HELLO}');
             return [f.querySelector('.change-status').textContent, f.querySelector('.change-added').textContent, f.querySelector('.change-removed').textContent]"
        )),
        json!(["added", "+1", "−0"])
    );
    assert_eq!(
        browser.js(
            "return [...document.querySelectorAll('#changes .changes-actions button')].map(b => b.dataset.act)"
        ),
        json!(["merge", "squash", "discard", "stop"])
    );

    // Its patch, a line an element: the added line has the added-line class and a tint of
    // its own.
    browser.click(&format!("{HELLO} > summary"));
    let added = browser.until(
        "the patch",
        &format!(
            "const l = [...document.querySelectorAll('{HELLO} pre .diff-line')].find(l => l.textContent === '+hello from the page');
             return l ? [l.className, getComputedStyle(l).backgroundColor !== getComputedStyle(l.closest('pre')).backgroundColor] : null"
        ),
    );
    assert_eq!(added, json!(["diff-line diff-add", true]));
    let kinds = browser.js(&format!(
        "return [...document.querySelectorAll('{HELLO} pre .diff-line')].map(l => l.className.replace('diff-line ', ''))"
    ));
    assert!(
        kinds.as_array().unwrap().contains(&json!("diff-hunk"))
            && kinds.as_array().unwrap().contains(&json!("diff-file")),
        "{kinds}"
    );
    browser.screenshot("dashboard-changes");

    // Merge: said in the view; the main checkout has the file, committed, and is clean.
    browser.click(r#"#changes button[data-act="merge"]"#);
    let note = browser.until(
        "the merge's outcome",
        "const n = document.querySelector('#changes .changes-note'); return n && n.dataset.kind !== 'busy' && [n.dataset.kind, n.textContent]",
    );
    assert_eq!(note[0], json!("ok"), "{note}");
    assert!(
        note[1]
            .as_str()
            .unwrap()
            .starts_with("Merged headspace/from-page into main"),
        "{note}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "hello from the page\n"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert!(git(&repo, &["log", "-1", "--format=%s"]).contains("headspace/from-page"));

    // A folder outside every projects root: the server's refusal shows in the dialog, which
    // stays open with what was typed; the worktree's name is left to the server (it picks one
    // from the prompt, core launch::suggest_name, free of the names taken).
    browser.click("#new-agent");
    browser.until(
        "the dialog again, emptied after the start",
        "return document.getElementById('new-agent-dialog').open && document.getElementById('na-project').value === ''",
    );
    browser.type_into("#na-project", "/etc");
    browser.type_into("#na-prompt", "Never starts, here: OK?");
    assert_eq!(
        browser.js("return document.getElementById('na-name').value"),
        json!(""),
        "the page does not make up a name of its own"
    );
    browser.click("#na-start");
    let error = browser.until(
        "the refusal in the dialog",
        "const e = document.getElementById('na-error'); return !e.hidden && e.textContent",
    );
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("outside every projects root"),
        "{error}"
    );
    assert_eq!(
        browser.js(
            "return [document.getElementById('new-agent-dialog').open, document.getElementById('na-project').value,
                     document.getElementById('na-prompt').value, document.getElementById('na-start').disabled]"
        ),
        json!([true, "/etc", "Never starts, here: OK?", false])
    );
    assert_eq!(
        std::fs::read_dir(repo.join(".worktrees")).unwrap().count(),
        1,
        "nothing else was made"
    );
    // Esc closes it.
    browser.type_into("#na-prompt", "\u{E00C}");
    browser.until(
        "the dialog closed by Esc",
        "return !document.getElementById('new-agent-dialog').open",
    );

    // On a phone: the Changes view (still open, its patch too) and the dialog fit.
    let (w, h) = browser.resize(390, 844);
    assert!(w <= 390 && h <= 844, "{w}x{h}");
    browser.until(
        "the Changes view still open",
        &format!("return !document.getElementById('changes').hidden && document.querySelector('{HELLO}').open"),
    );
    assert_eq!(
        browser.js(NO_OVERFLOW),
        json!("fits"),
        "the Changes view at 390 px"
    );
    browser.click("#conv-close");
    browser.click("#new-agent");
    browser.until(
        "the dialog on a phone",
        "return document.getElementById('new-agent-dialog').open",
    );
    assert_eq!(
        browser.js(NO_OVERFLOW),
        json!("fits"),
        "the New agent dialog at 390 px"
    );
    server.stop();
}
