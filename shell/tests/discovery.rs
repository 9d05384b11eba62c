//! Truth without hooks, on real parts: stand-in agents (run under the name `claude`, as
//! Claude Code runs) in a real tmux server, every hook of theirs lost. Their panes and
//! folders come from tmux's pane list and their transcripts; `wait`, `send` and `answer`
//! work on the pane id, also for the agent its process made before any hook or line (its
//! session joins that agent); two agents in one folder started apart are told apart and an
//! ambiguous one is left alone; a prompt typed in the pane is never reported idle by `wait`
//! before its turn ends; a killed agent is ended with the reason.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A folder holding `claude`, a link to the stand-in: its process is named `claude`.
fn claude_bin(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("claude");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(headspace_testkit::stand_in::stand_in_agent(), &link).unwrap();
    link
}

fn script(dir: &Path, name: &str, turns: Value) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json!({ "turns": turns }).to_string()).unwrap();
    path
}

/// Starts an agent in a new window of the session `s` (made on first use), in `folder`;
/// returns its pane id.
fn start_agent(world: &PaneWorld, folder: &Path, args: &str) -> String {
    std::fs::create_dir_all(folder).unwrap();
    let cmd = format!(
        "{} --claude-dir {} {args}",
        claude_bin(&world.claude).display(),
        world.claude.display()
    );
    let folder = folder.to_str().unwrap();
    let exists = std::process::Command::new("tmux")
        .args(["-L", &world.tmux.0, "has-session", "-t", "s"])
        .output()
        .is_ok_and(|o| o.status.success());
    let target = if exists {
        world.tmux.run(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "s",
            "-c",
            folder,
            &cmd,
        ])
    } else {
        world.tmux.new_pane("s", Some(folder), &cmd)
    };
    target.trim().to_string()
}

fn type_line(world: &PaneWorld, pane: &str, text: &str) {
    world.tmux.run(&["send-keys", "-t", pane, "-l", text]);
    world.tmux.run(&["send-keys", "-t", pane, "Enter"]);
}

fn agent(server: &Server, session: &str) -> Option<Value> {
    server.try_json(&format!("/api/agents/{session}"))
}

fn pane_ref(pane: &str) -> String {
    pane.replace('%', "%25")
}

fn post(server: &Server, path: &str, body: Value) -> (u16, Value) {
    let (status, text) = server.post(path, body.to_string().as_bytes());
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn with_every_hook_lost_the_pane_and_folder_come_from_tmux_and_the_transcript() {
    let Some(world) = PaneWorld::start("discovery") else {
        return;
    };
    let folder = world.claude.join("work").join("alpha");
    let s = script(
        &world.claude,
        "alpha",
        json!([
            {"prompt": "one", "replies": ["First done."]},
            {"prompt": "two", "replies": ["Second done."]},
            {"prompt": "three", "replies": ["Third done."],
             "question": {"question": "Which one?", "options": ["red", "blue"], "answer": "red"}}
        ]),
    );
    let pane = start_agent(
        &world,
        &folder,
        &format!(
            "--script {} --session lost-a --think-ms 150 --drop-every 1 --stay",
            s.display()
        ),
    );
    std::thread::sleep(Duration::from_millis(300));
    type_line(&world, &pane, "one");
    let folder_s = folder.to_str().unwrap().to_string();
    let card = wait_for(Duration::from_secs(15), || {
        agent(&world.server, "lost-a").filter(|a| a["tmux_pane"] == pane.as_str())
    })
    .unwrap_or_else(|| {
        panic!(
            "never tied to {pane}: {:?}\n{}",
            agent(&world.server, "lost-a"),
            world.server.log()
        )
    });
    assert_eq!(card["cwd"], folder_s.as_str(), "{card}");
    assert_eq!(card["project"], "alpha", "{card}");
    assert!(world.server.log().contains("[DISCOVERY] agent"));

    // `wait` on the pane id, then `send` to it.
    let (status, body) = world
        .server
        .get(&format!("/api/agents/{}/wait?timeout=20", pane_ref(&pane)));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"idle\""), "{body}");
    let (status, body) = post(
        &world.server,
        &format!("/api/agents/{}/send", pane_ref(&pane)),
        json!({"text": "two"}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = world
        .server
        .get(&format!("/api/agents/{}/wait?timeout=20", pane_ref(&pane)));
    assert_eq!(status, 200, "{body}");
    let turns = world.server.json("/api/agents/lost-a/turns");
    let texts: Vec<&str> = turns
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["text"].as_str())
        .collect();
    assert!(texts.contains(&"Second done."), "{texts:?}");

    // The third turn asks; `answer` on the pane id picks an option.
    type_line(&world, &pane, "three");
    wait_for(Duration::from_secs(15), || {
        agent(&world.server, "lost-a").filter(|a| a["question"].is_object())
    })
    .unwrap_or_else(|| panic!("no question: {:?}", agent(&world.server, "lost-a")));
    let (status, body) = post(
        &world.server,
        &format!("/api/agents/{}/answer", pane_ref(&pane)),
        json!({"option": 2}),
    );
    assert_eq!(status, 200, "{body}");
    let answered = wait_for(Duration::from_secs(15), || {
        let turns = world.server.try_json("/api/agents/lost-a/turns")?;
        turns
            .as_array()?
            .iter()
            .any(|t| t["text"] == "Third done.")
            .then_some(())
    });
    assert!(answered.is_some(), "{}", world.server.log());
}

#[test]
fn an_agent_exists_from_its_process_before_any_hook_or_line_and_its_session_joins_it() {
    let Some(world) = PaneWorld::start("disc_process") else {
        return;
    };
    let folder = world.claude.join("work").join("beta");
    let s = script(
        &world.claude,
        "beta",
        json!([{"prompt": "one", "replies": ["Looking.", "First done."]}]),
    );
    let pane = start_agent(
        &world,
        &folder,
        &format!(
            "--script {} --session proc-a --think-ms 400 --drop-every 1 --stay",
            s.display()
        ),
    );
    // Its process alone makes it: a card, `wait` and `send` know the pane before any hook
    // (all lost) or transcript line (none written yet).
    let card = wait_for(Duration::from_secs(15), || {
        agent(&world.server, &pane_ref(&pane))
    })
    .unwrap_or_else(|| panic!("no agent for {pane}: {}", world.server.log()));
    assert_eq!(card["tmux_pane"], pane.as_str(), "{card}");
    assert_eq!(card["project"], "beta", "{card}");
    assert_eq!(card["activity"], "idle", "{card}");
    assert_eq!(card["session_id"], "", "no session yet: {card}");
    let id = card["id"].clone();
    assert_eq!(
        world
            .server
            .json(&format!("/api/agents/{}/turns", pane_ref(&pane))),
        json!([]),
        "nothing said yet"
    );
    // `send` to the pane, then `wait` on it: never before the turn has ended.
    let (status, body) = post(
        &world.server,
        &format!("/api/agents/{}/send", pane_ref(&pane)),
        json!({"text": "one"}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = world
        .server
        .get(&format!("/api/agents/{}/wait?timeout=30", pane_ref(&pane)));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"idle\""), "{body}");
    let written: String = walk(&world.claude.join("projects"))
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    assert!(
        written.contains("First done."),
        "wait answered {body} before the turn ended"
    );

    let done = wait_for(Duration::from_secs(15), || {
        let turns = world
            .server
            .try_json(&format!("/api/agents/{}/turns", pane_ref(&pane)))?;
        turns
            .as_array()?
            .iter()
            .any(|t| t["text"] == "First done.")
            .then_some(turns)
    })
    .unwrap_or_else(|| panic!("the turn reached the pane's agent: {}", world.server.log()));
    let texts: Vec<&str> = done
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["text"].as_str())
        .collect();
    assert_eq!(
        texts.iter().filter(|t| **t == "one").count(),
        1,
        "{texts:?}"
    );
    // The session joined the agent its process made: the same card, one for the pane.
    let joined = wait_for(Duration::from_secs(15), || {
        agent(&world.server, "proc-a").filter(|a| a["id"] == id)
    })
    .unwrap_or_else(|| {
        panic!(
            "proc-a joined agent {id}: {:?}\n{}",
            agent(&world.server, "proc-a"),
            world.server.log()
        )
    });
    assert_eq!(joined["tmux_pane"], pane.as_str());
    let all = world.server.json("/api/agents");
    let in_pane: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["tmux_pane"] == pane.as_str())
        .collect();
    assert_eq!(in_pane.len(), 1, "one card for the pane: {in_pane:?}");

    // A process that ends before it said anything: its agent ends, and the list of agents
    // no longer shows it (asked by id, it still answers).
    let quiet = start_agent(
        &world,
        &world.claude.join("work").join("gamma"),
        &format!(
            "--script {} --session proc-b --think-ms 400 --drop-every 1 --stay",
            s.display()
        ),
    );
    let card = wait_for(Duration::from_secs(15), || {
        agent(&world.server, &pane_ref(&quiet))
    })
    .unwrap_or_else(|| panic!("no agent for {quiet}: {}", world.server.log()));
    let listed = |id: &Value| {
        world
            .server
            .json("/api/agents")
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == *id)
    };
    assert!(
        listed(&card["id"]),
        "a live agent its process made is listed"
    );
    world.tmux.run(&["kill-pane", "-t", &quiet]);
    let ended = wait_for(Duration::from_secs(15), || {
        world
            .server
            .try_json(&format!("/api/agents/{}", card["id"]))
            .filter(|a| a["activity"] == "ended")
    });
    assert!(ended.is_some(), "{}", world.server.log());
    assert!(
        !listed(&card["id"]),
        "an agent that never said anything is not listed once ended"
    );
}

#[test]
fn two_agents_in_one_folder_started_apart_are_told_apart_and_an_ambiguous_one_is_left_alone() {
    let Some(world) = PaneWorld::start("disc_two") else {
        return;
    };
    let turns = json!([{"prompt": "go", "replies": ["Gone."]}]);
    let s = script(&world.claude, "two", turns);
    let args = |session: &str| {
        format!(
            "--script {} --session {session} --think-ms 100 --drop-every 1 --stay",
            s.display()
        )
    };
    let shared = world.claude.join("work").join("shared");
    let first = start_agent(&world, &shared, &args("apart-1"));
    std::thread::sleep(Duration::from_millis(300));
    type_line(&world, &first, "go");
    // The second starts after the first's first line, past the start-time tolerance.
    wait_for(Duration::from_secs(10), || agent(&world.server, "apart-1"))
        .expect("the first agent appears from its transcript");
    std::thread::sleep(Duration::from_millis(2_500));
    let second = start_agent(&world, &shared, &args("apart-2"));
    std::thread::sleep(Duration::from_millis(300));
    type_line(&world, &second, "go");
    for (session, pane) in [("apart-1", &first), ("apart-2", &second)] {
        wait_for(Duration::from_secs(15), || {
            agent(&world.server, session).filter(|a| a["tmux_pane"] == pane.as_str())
        })
        .unwrap_or_else(|| {
            panic!(
                "{session} not tied to {pane}: {:?}\n{}",
                agent(&world.server, session),
                world.server.log()
            )
        });
    }

    // Two started together in another folder; only the second speaks: either could be it.
    let other = world.claude.join("work").join("other");
    let c = start_agent(&world, &other, &args("amb-1"));
    let d = start_agent(&world, &other, &args("amb-2"));
    std::thread::sleep(Duration::from_millis(2_500));
    type_line(&world, &d, "go");
    wait_for(Duration::from_secs(10), || agent(&world.server, "amb-2"))
        .expect("the agent appears from its transcript");
    std::thread::sleep(Duration::from_secs(2));
    let card = agent(&world.server, "amb-2").unwrap();
    // Never the other's pane. Normally no pane at all (both fit); once, on a loaded CI
    // machine, the first one's process was not a candidate and the right pane was chosen:
    // not a guess, but not what this test means to show either (open: why it was not).
    assert_ne!(card["tmux_pane"], json!(c), "a wrong guess: {card}");
    if !card["tmux_pane"].is_null() {
        assert_eq!(card["tmux_pane"], json!(d), "{card}");
        eprintln!("note: amb-2 was tied to its own pane; the ambiguity was not seen this run");
    }
}

#[test]
fn wait_right_after_a_prompt_typed_in_the_pane_returns_only_after_its_turn() {
    let Some(world) = PaneWorld::start("disc_wait") else {
        return;
    };
    const REPS: usize = 20;
    let turns: Vec<Value> = (0..REPS)
        .map(|i| json!({"prompt": format!("p{i}"), "replies": [format!("working on {i}"), format!("finished {i}")]}))
        .collect();
    let s = script(&world.claude, "typed", json!(turns));
    let folder = world.claude.join("work").join("typed");
    let pane = start_agent(
        &world,
        &folder,
        &format!(
            // The prompt's hook and line come late, as when Claude Code is slow to write
            // them: for a second only the screen tells that the turn began.
            "--script {} --session typed-1 --think-ms 150 --stay --slow-submit-ms 1000",
            s.display()
        ),
    );
    wait_for(Duration::from_secs(10), || {
        agent(&world.server, "typed-1").filter(|a| a["activity"] == "idle")
    })
    .expect("the agent registers, idle");
    let transcript = || -> String {
        let mut all = String::new();
        for e in walk(&world.claude.join("projects")) {
            all.push_str(&std::fs::read_to_string(e).unwrap_or_default());
        }
        all
    };
    for i in 0..REPS {
        type_line(&world, &pane, &format!("p{i}"));
        let (status, body) = world
            .server
            .get(&format!("/api/agents/{}/wait?timeout=30", pane_ref(&pane)));
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"idle\""), "rep {i}: {body}");
        assert!(
            transcript().contains(&format!("finished {i}")),
            "rep {i}: wait answered {body} before the turn ended"
        );
    }
}

#[test]
fn a_killed_agent_is_ended_with_the_reason() {
    let Some(world) = PaneWorld::start("disc_reap") else {
        return;
    };
    let s = script(
        &world.claude,
        "reap",
        json!([{"prompt": "go", "replies": ["Gone."]}]),
    );
    let folder = world.claude.join("work").join("reap");
    let pane = start_agent(
        &world,
        &folder,
        &format!(
            "--script {} --session reap-1 --think-ms 100 --stay",
            s.display()
        ),
    );
    // A shell stays in the pane when the agent dies: the pane is not closed, its process is.
    world
        .tmux
        .run(&["set-option", "-t", &pane, "remain-on-exit", "on"]);
    wait_for(Duration::from_secs(10), || {
        agent(&world.server, "reap-1").filter(|a| a["tmux_pane"] == pane.as_str())
    })
    .expect("the agent registers in its pane");
    // The reaper ends an agent whose Claude Code process it saw and then no longer sees: wait
    // until a pane listing has shown it (a busy machine runs four of these tests at once).
    let pids = pids_running("reap-1");
    assert!(!pids.is_empty(), "the agent's process is found");
    wait_for(Duration::from_secs(30), || {
        agent(&world.server, "reap-1")
            .and_then(|a| a["claude_pid"].as_u64())
            .filter(|pid| pids.contains(&(*pid as u32)))
    })
    .unwrap_or_else(|| {
        panic!(
            "the pane listing shows its process {pids:?}: {:?}",
            agent(&world.server, "reap-1")
        )
    });
    // SIGKILL: no SessionEnd hook.
    let killed = pids.clone();
    for pid in pids {
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
    }
    // Under load tmux can leave the killed process a zombie in the dead pane for a long time:
    // neither may keep the agent alive (this failed in CI before zombies were left out).
    let card = wait_for(Duration::from_secs(20), || {
        agent(&world.server, "reap-1").filter(|a| a["activity"] == "ended")
    })
    .unwrap_or_else(|| {
        let procs: Vec<String> = killed
            .iter()
            .map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default())
            .collect();
        panic!(
            "not ended: {:?}\npanes: {}\nkilled: {procs:?}\n{}",
            agent(&world.server, "reap-1"),
            world.tmux.run(&[
                "list-panes",
                "-a",
                "-F",
                "#{pane_id} #{pane_pid} #{pane_dead}"
            ]),
            world.server.log()
        )
    });
    assert_eq!(card["end_reason"], "process_exited", "{card}");
    assert!(world.server.log().contains("[REAPER] agent"));
}

/// The pids of the stand-ins whose arguments name `session`.
fn pids_running(session: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let args = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = args.split(|b| *b == 0).collect();
        let names = args
            .windows(2)
            .any(|w| w[0] == b"--session" && w[1] == session.as_bytes());
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if names && comm.trim() == "claude" {
            out.push(pid);
        }
    }
    out
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
