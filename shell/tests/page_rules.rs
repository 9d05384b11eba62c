//! The core and the page asked the same questions about an agent — which state its card shows
//! (does it need you?), whether it is a sub-agent's session, whether its finish is news —
//! answer alike on every combination of the facts that decide them, the once-disputed case
//! among them: a task awaiting input to which the user just sent text (the core said working;
//! the page said "needs you"). The page's answers come from `static/needs.js` itself, run by
//! Node on the cards the core builds.

mod common;
use headspace_core::cluster::machines::{add_machine, MachinePresence};
use headspace_core::model::{AgentRow, TaskRow};
use headspace_core::view::AgentView;
use serde_json::{json, Value};
use std::io::Write;

/// Every combination of the facts the three answers depend on, as the core's cards.
fn cases() -> Vec<(AgentView, bool)> {
    let mut out = Vec::new();
    let states = [
        None,
        Some("commanded"),
        Some("processing"),
        Some("awaiting_input"),
        Some("complete"),
        Some("idle"),
    ];
    let paths = [
        "/h/.claude/projects/-p/5e55.jsonl",
        "/h/.claude/projects/-p/5e55/subagents/agent-a1.jsonl",
    ];
    for ended in [false, true] {
        for sent in [false, true] {
            for permission in [false, true] {
                for state in states {
                    for path in paths {
                        for command in [None, Some("fix the bug"), Some(" /clear")] {
                            for online in [true, false] {
                                let agent: AgentRow = serde_json::from_value(json!({
                                    "id": out.len() + 1, "session_id": "s", "sessions": ["s"],
                                    "project": "p", "cwd": "/p", "transcript_path": path,
                                    "tmux_pane": "%1", "ended": ended, "waiting_permission": permission,
                                    "sent_at": if sent { json!(1_000) } else { Value::Null },
                                    "permission": null, "last_seen_at": 1_000, "end_reason": null,
                                    "claude_pid": null, "git_branch": null,
                                }))
                                .expect("an agent row");
                                let task: Option<TaskRow> = state.map(|s| {
                                    serde_json::from_value(json!({
                                        "id": 1, "agent_id": agent.id, "session_id": "s",
                                        "state": s, "transcript_state": s, "started_at": 500,
                                        "state_since": 600, "hook_turn_end_at": null,
                                    }))
                                    .expect("a task row")
                                });
                                let view = AgentView {
                                    agent,
                                    task,
                                    turn_count: 2,
                                    command: command.map(str::to_string),
                                    last_turn: None,
                                    question: None,
                                    machine: String::new(),
                                    name: None,
                                    worktree: None,
                                    launch_branch: None,
                                };
                                out.push((view, online));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn the_core_and_the_page_agree_on_who_needs_you_and_which_finish_is_news() {
    if !common::node_or_skip() {
        return;
    }
    let cases = cases();
    let cards: Vec<Value> = cases
        .iter()
        .map(|(view, online)| {
            let mut card = view.card();
            let presence = MachinePresence {
                name: "m".into(),
                online: *online,
                last_seen: None,
            };
            add_machine(&mut card, view.activity(), &presence);
            card
        })
        .collect();
    let dir = common::temp_dir("page-rules");
    let cards_file = dir.join("cards.json");
    std::fs::write(&cards_file, serde_json::to_vec(&cards).unwrap()).unwrap();
    let needs = concat!(env!("CARGO_MANIFEST_DIR"), "/../static/needs.js");
    // needs.js is an ES module that exports its rules; it is imported (with the modules it
    // imports) and asked each card's questions. Node takes a `.js` file for a module only under
    // a package.json that says so: the page's files are copied into `dir`, beside one.
    let harness = r#"
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const [script, cardsFile, dir] = process.argv.slice(-3);
const page = path.join(dir, 'static');
fs.cpSync(path.dirname(script), page, { recursive: true });
fs.writeFileSync(path.join(page, 'package.json'), '{"type":"module"}');
// The page's globals the modules' top levels touch (needs.js listens for focus and
// visibility; state.js and composer.js read localStorage, state.js sets window.__hs).
const listens = { addEventListener() {} };
globalThis.window = listens;
globalThis.document = listens;
Object.defineProperty(globalThis, 'localStorage', { value: { getItem: () => null }, configurable: true, writable: true });
const { shownState, isSubAgent, notableFinish } = await import(pathToFileURL(path.join(page, path.basename(script))).href);
const cards = JSON.parse(fs.readFileSync(cardsFile, 'utf8'));
const answers = cards.map((card) => [shownState(card), isSubAgent(card), notableFinish(card)]);
process.stdout.write(JSON.stringify(answers));
"#;
    let mut node = std::process::Command::new("node")
        .args(["--input-type=module", "-", needs])
        .arg(&cards_file)
        .arg(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    node.stdin
        .take()
        .unwrap()
        .write_all(harness.as_bytes())
        .unwrap();
    let out = node.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page: Vec<(String, bool, bool)> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page.len(), cases.len());
    let mut disputed = 0;
    for (((view, online), card), (shown, sub_agent, notable)) in cases.iter().zip(&cards).zip(&page)
    {
        let core_shown = card["shown"].as_str().unwrap();
        let core_says = (core_shown, view.sub_agent(), view.notable_finish());
        assert_eq!(
            (shown.as_str(), *sub_agent, *notable),
            core_says,
            "the page and the core disagree (machine online: {online}) on the card {card}"
        );
        if *online
            && view.agent.sent_at.is_some()
            && !view.agent.ended
            && view.state().as_str() == "awaiting_input"
        {
            assert_eq!(core_shown, "working", "text sent to a question answers it");
            disputed += 1;
        }
    }
    assert!(disputed > 0, "the once-disputed case is among the cases");
    let _ = std::fs::remove_dir_all(&dir);
}
