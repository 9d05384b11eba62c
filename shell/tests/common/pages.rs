//! What the page tests share: a server with tmux panes and a browser, stand-in agents in
//! their own tmux sessions, and the waits on what the page and the panes show.

use super::browser::Browser;
use super::{fresh_db, temp_dir, wait_for, PaneWorld, Server};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// A server on a fresh database, with no tmux (the test posts its agents' hooks), its claude
/// dir, and a browser; `None` (the test skips) when the database or the browser is missing.
pub fn server_and_browser(name: &str) -> Option<(Server, Browser, PathBuf)> {
    let db = fresh_db(name)?;
    let browser = Browser::start()?;
    let claude = temp_dir(name);
    let server = Server::start(&db, &claude, &[]);
    Some((server, browser, claude))
}

/// Tmux panes with a server, and a browser; `None` (the test skips) when either is missing.
pub fn world_and_browser(name: &str) -> Option<(PaneWorld, Browser)> {
    let world = PaneWorld::start(name)?;
    Some((world, Browser::start()?))
}

/// Waits until agent `id`'s card is on the page.
pub fn until_card(browser: &Browser, id: u64) {
    browser.until(
        "the card",
        &format!("return !!document.querySelector('.card[data-id=\"{id}\"]')"),
    );
}

/// Waits until `prompt` was typed into agent `session`'s pane (its screen shows `> prompt`).
pub fn until_typed(world: &PaneWorld, session: &str, prompt: &str) {
    let pane = world.server.json(&format!("/api/agents/{session}"))["tmux_pane"]
        .as_str()
        .unwrap()
        .to_string();
    let typed = wait_for(Duration::from_secs(15), || {
        let screen = world.tmux.run(&["capture-pane", "-p", "-t", &pane]);
        screen.contains(&format!("> {prompt}")).then_some(screen)
    });
    assert!(typed.is_some(), "the prompt reached the pane");
}

/// Starts a stand-in agent in its own tmux session, in folder `project` (its project name),
/// `columns` wide, playing `turns`.
pub fn stand_in(world: &PaneWorld, session: &str, project: &str, columns: u32, turns: Value) {
    let dir = world.claude.join("work").join(project);
    std::fs::create_dir_all(&dir).unwrap();
    let script = world.claude.join(format!("{session}.json"));
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let cmd = format!(
        "{} --claude-dir {} --script {} --session {session} --think-ms 200 --stay",
        headspace_testkit::stand_in::stand_in_agent(),
        world.claude.display(),
        script.display()
    );
    world.tmux.run(&[
        "new-session",
        "-d",
        "-s",
        session,
        "-x",
        &columns.to_string(),
        "-y",
        "40",
        "-c",
        dir.to_str().unwrap(),
        &cmd,
    ]);
    let registered = wait_for(Duration::from_secs(15), || {
        world
            .server
            .try_json(&format!("/api/agents/{session}"))
            .filter(|a| a["activity"] == "idle" && !a["tmux_pane"].is_null())
    });
    assert!(registered.is_some(), "{session} registers, idle");
}

/// The id of agent `session`.
pub fn agent_id(world: &PaneWorld, session: &str) -> u64 {
    world.server.json(&format!("/api/agents/{session}"))["id"]
        .as_u64()
        .unwrap()
}

/// Sends `text` to agent `session` through the server.
pub fn send(world: &PaneWorld, session: &str, text: &str) {
    let (status, body) = world.server.post(
        &format!("/api/agents/{session}/send"),
        json!({ "text": text }).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
}

/// Waits until agent `session` waits on a question or permission; its card.
pub fn waiting(world: &PaneWorld, session: &str) -> Value {
    wait_for(Duration::from_secs(20), || {
        world
            .server
            .try_json(&format!("/api/agents/{session}"))
            .filter(|a| a["activity"] == "waiting" && !a["question"].is_null())
    })
    .unwrap_or_else(|| panic!("{session} waits: {}", world.server.log()))
}
