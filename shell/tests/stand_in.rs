//! End to end: stand-in agents in real tmux panes, hooks installed by `headspace hooks
//! install` into a temporary claude dir, a real server. Every scripted turn arrives exactly
//! once, also when the agent loses half of its hooks or all its prompt and Stop hooks.

mod common;
use common::*;
use std::time::Duration;

/// Turn lines a script produces: each prompt, each reply, and a question plus its answer.
fn expected_turns(script: &str) -> usize {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(script).unwrap()).unwrap();
    v["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            1 + t["replies"].as_array().map_or(0, |r| r.len().max(1))
                + if t["question"].is_object() { 2 } else { 0 }
        })
        .sum()
}

#[test]
fn every_scripted_turn_arrives_exactly_once_even_with_hooks_cut() {
    stand_ins_with_hooks_cut("command");
}

/// The same over Claude Code's own HTTP transport (`"type": "http"` hooks, posted by the agent
/// with the hook key and the pane as a header; SessionStart stays a command).
#[test]
fn every_scripted_turn_arrives_exactly_once_over_http_hooks_too() {
    stand_ins_with_hooks_cut("http");
}

fn stand_ins_with_hooks_cut(transport: &str) {
    let Some(db) = fresh_db(&format!("stand_in_{transport}")) else {
        return;
    };
    let claude = temp_dir(&format!("stand-in-{transport}"));
    let server = Server::start(&db, &claude, &[]);
    let settings = claude.join("settings.json");
    install_hooks_with(&server, &settings, transport);
    if transport == "http" {
        let installed = std::fs::read_to_string(&settings).unwrap();
        assert!(installed.contains("\"type\": \"http\""), "{installed}");
    }

    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../demo");
    let agent = headspace_testkit::stand_in::stand_in_agent();
    let tmux = Tmux(format!("headspace-e2e-{transport}-{}", std::process::id()));
    let runs = [
        ("full", format!("{demo}/asks.json"), ""),
        ("half", format!("{demo}/finishes.json"), "--drop-every 2"),
        (
            "cut",
            format!("{demo}/cut.json"),
            "--drop-events UserPromptSubmit,Stop",
        ),
    ];
    for (i, (name, script, extra)) in runs.iter().enumerate() {
        let cmd = format!("{agent} --claude-dir {} --script {script} --session e2e-{name} --auto --think-ms 60 --stay {extra}", claude.display());
        if i == 0 {
            tmux.run(&[
                "new-session",
                "-d",
                "-s",
                "e2e",
                "-x",
                "120",
                "-y",
                "40",
                &cmd,
            ]);
        } else {
            tmux.run(&["split-window", "-t", "e2e", &cmd]);
            tmux.run(&["select-layout", "-t", "e2e", "tiled"]);
        }
    }
    for (name, script, _) in &runs {
        let want = expected_turns(script);
        let agent_ref = format!("e2e-{name}");
        let got = wait_for(Duration::from_secs(30), || {
            let turns = server.try_json(&format!("/api/agents/{agent_ref}/turns"))?;
            let turns = turns.as_array()?.clone();
            (turns.len() >= want && turns.iter().all(|t| t["entry_uuid"].is_string()))
                .then_some(turns)
        })
        .unwrap_or_else(|| {
            panic!(
                "{name}: turns never settled: {}\n{}",
                server
                    .try_json(&format!("/api/agents/{agent_ref}/turns"))
                    .unwrap_or_default(),
                server.log()
            )
        });
        std::thread::sleep(Duration::from_millis(500));
        let again = server.json(&format!("/api/agents/{agent_ref}/turns"));
        assert_eq!(
            again.as_array().unwrap().len(),
            want,
            "{name}: exactly once\n{got:?}"
        );
        let mut uuids: Vec<&str> = got
            .iter()
            .map(|t| t["entry_uuid"].as_str().unwrap())
            .collect();
        uuids.sort();
        uuids.dedup();
        assert_eq!(uuids.len(), want, "{name}: one turn per line");
    }
    // The panes show the idle prompt; the agents came through hooks with their panes.
    let agents = server.json("/api/agents");
    for a in agents.as_array().unwrap() {
        if a["session_id"] != "e2e-cut" {
            assert!(
                a["tmux_pane"].as_str().is_some_and(|p| p.starts_with('%')),
                "{a}"
            );
        }
        assert_eq!(a["state"], "complete", "{a}");
    }
    let pane = tmux.run(&["capture-pane", "-p", "-t", "e2e"]);
    assert!(pane.contains('❯'), "{pane}");
    server.stop();
}
