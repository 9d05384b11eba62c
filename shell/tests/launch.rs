//! Agents started, reviewed and stopped from Headspace, end to end: real git, a real tmux
//! server on a private socket, the stand-in agent (it writes the prompt it is given into a
//! file when its script says `edit`), a real server. Two agents in their own worktrees edit
//! the same file: the first one's work is in its diff and merges; the second one's conflicts,
//! answers 409 with the file, and leaves the main checkout as it was; stopping ends an agent
//! within 15 s with `end_reason` `stopped`; discard removes only what Headspace made. And
//! every request a hostile page or user could send with a bad folder or name is refused
//! before git or tmux runs.

mod common;
use common::launching::{git, Launching};
use common::*;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

fn post(server: &Server, path: &str, body: Value) -> (u16, Value) {
    let (status, text) = server.post(path, body.to_string().as_bytes());
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Waits until the agent's card says it is idle (its turn done).
fn idle(server: &Server, id: u64) {
    wait_for(Duration::from_secs(20), || {
        let card = server.try_json(&format!("/api/agents/{id}"))?;
        (card["activity"] == "idle" && card["turn_count"].as_u64()? >= 2).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "agent {id} never finished its turn: {}\n{}",
            server.json(&format!("/api/agents/{id}")),
            server.log()
        )
    });
}

#[test]
fn agents_start_in_worktrees_merge_conflict_stop_and_discard() {
    // A hostile repository: hooks and an fsmonitor that would run a program of its choosing
    // with the user's rights whenever Headspace runs git there.
    let plant = |root: &Path, repo: &Path| {
        let evil = format!("#!/bin/sh\ntouch {}\n", root.join("hooked").display());
        let monitor = root.join("monitor.sh");
        let hooks = [
            "post-checkout",
            "post-merge",
            "pre-commit",
            "post-commit",
            "reference-transaction",
        ];
        for path in hooks
            .iter()
            .map(|h| repo.join(".git/hooks").join(h))
            .chain([monitor.clone()])
        {
            std::fs::write(&path, &evil).unwrap();
            let mut perms = std::fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
            std::fs::set_permissions(&path, perms).unwrap();
        }
        git(
            repo,
            &["config", "core.fsmonitor", &monitor.display().to_string()],
        );
    };
    let Some(Launching {
        server,
        claude,
        root,
        repo,
        tmux,
        agent,
        db,
        script,
    }) = Launching::start("launch", plant)
    else {
        return;
    };
    let marker = root.join("hooked");
    let project = repo.display().to_string();

    // Refused before git or tmux runs: a folder outside the roots, names that would be
    // options, paths or shell, an unknown kind, a missing folder.
    for (body, status) in [
        (json!({"project": "/etc"}), 403),
        (json!({"project": root.parent().unwrap()}), 403),
        (json!({"project": format!("{project}/../..")}), 403),
        (json!({"project": project, "worktree": "../evil"}), 400),
        (json!({"project": project, "worktree": "-rf"}), 400),
        (json!({"project": project, "worktree": "a b"}), 400),
        (
            json!({"project": project, "worktree": "x;touch pwned"}),
            400,
        ),
        (
            json!({"project": project, "worktree": "ok", "base": "--upload-pack=x"}),
            400,
        ),
        (json!({"project": project, "agent": "gpt"}), 400),
        (json!({"project": project, "prompt": 5}), 400),
        (json!({"worktree": "x"}), 400),
        (json!({"project": root.join("nowhere")}), 400),
    ] {
        let (got, answer) = post(&server, "/api/agents", body.clone());
        assert_eq!(got, status, "{body}: {answer}");
        assert!(answer["error"].is_string(), "{body}: {answer}");
    }
    // A folder inside a root that is a worktree of a repository outside every root: the
    // worktree would be made, and the exclude file written, out there.
    let outside = temp_dir("launch-outside");
    git(&outside, &["init", "-q", "-b", "main"]);
    git(&outside, &["commit", "-q", "--allow-empty", "-m", "o"]);
    let inside = root.join("inside");
    git(
        &outside,
        &["worktree", "add", "-q", &inside.display().to_string()],
    );
    let (status, answer) = post(
        &server,
        "/api/agents",
        json!({"project": inside, "worktree": "x"}),
    );
    assert_eq!(status, 403, "{answer}");
    assert!(!outside.join(".worktrees").exists());
    assert!(!repo.join(".worktrees").exists(), "nothing was made");
    assert!(!root.join("pwned").exists() && !repo.join("pwned").exists());

    // A start that fails once its worktree is made (the agent's command exits at once)
    // answers 502, says which option gave the command, and leaves no worktree or branch
    // behind: the name is free for the next try.
    let (status, answer) = post(
        &server,
        "/api/agents",
        json!({"project": project, "worktree": "stillborn", "agent": "gemini"}),
    );
    assert_eq!(status, 502, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("--gemini-command"),
        "{answer}"
    );
    assert!(!repo.join(".worktrees/stillborn").exists(), "{answer}");
    assert_eq!(
        git(&repo, &["branch", "--list", "headspace/stillborn"]).trim(),
        ""
    );
    assert!(!git(&repo, &["worktree", "list"]).contains("stillborn"));

    // Agent A, in its own worktree, writes its prompt into hello.txt.
    let (status, a) = post(
        &server,
        "/api/agents",
        json!({"project": project, "worktree": "feature-a", "prompt": "hello from a"}),
    );
    assert_eq!(status, 201, "{a}\n{}", server.log());
    let a_id = a["id"].as_u64().expect("the agent is known once it runs");
    let a_tree = repo.join(".worktrees/feature-a");
    assert_eq!(a["cwd"], json!(a_tree.display().to_string()));
    assert_eq!(a["branch"], "headspace/feature-a");
    assert!(a["attach"].as_str().unwrap().contains(&tmux.0), "{a}");
    idle(&server, a_id);
    let card = server.json(&format!("/api/agents/{a_id}"));
    assert_eq!(card["kind"], "claude");
    assert_eq!(card["branch"], "headspace/feature-a");
    assert_eq!(card["worktree"], json!(a_tree.display().to_string()));
    assert_eq!(
        std::fs::read_to_string(a_tree.join("hello.txt")).unwrap(),
        "hello from a\n"
    );
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "the worktrees folder is ignored by git"
    );
    let diff = server.json(&format!("/api/agents/{a_id}/diff"));
    assert_eq!(diff["base"], "main");
    assert_eq!(diff["branch"], "headspace/feature-a");
    let files = diff["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{diff}");
    assert_eq!(files[0]["path"], "hello.txt");
    assert_eq!(files[0]["status"], "added");
    assert_eq!(files[0]["added"], 1);
    assert!(files[0]["patch"]
        .as_str()
        .unwrap()
        .contains("+hello from a"));

    // An agent whose first hook came after its start had answered (more than 20 s): its
    // launch knows no agent. Asked about it, the server finds the launch by its pane and
    // folder and links it, so its diff is still its branch's against its base.
    psql(
        &db,
        &format!("UPDATE launches SET agent_id = NULL WHERE agent_id = {a_id}"),
    );
    let late = server.json(&format!("/api/agents/{a_id}/diff"));
    assert_eq!(late["branch"], "headspace/feature-a", "{late}");
    assert_eq!(late["base"], "main", "{late}");
    assert_eq!(
        psql(
            &db,
            &format!("SELECT count(*) FROM launches WHERE agent_id = {a_id}")
        ),
        "1",
        "linked again"
    );

    // Agent B edits the same file its own way; its worktree name is picked from its prompt.
    let (status, b) = post(
        &server,
        "/api/agents",
        json!({"project": project, "worktree": "", "prompt": "hello from b"}),
    );
    assert_eq!(status, 201, "{b}");
    let b_id = b["id"].as_u64().unwrap();
    assert_eq!(b["branch"], "headspace/hello-from-b");
    idle(&server, b_id);
    let (status, again) = post(
        &server,
        "/api/agents",
        json!({"project": project, "worktree": "feature-a"}),
    );
    assert_eq!(status, 409, "the branch exists: {again}");

    // A merges into main; B then conflicts, and main stays exactly as it was.
    let (status, merged) = post(&server, &format!("/api/agents/{a_id}/merge"), json!({}));
    assert_eq!(status, 200, "{merged}");
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "hello from a\n"
    );
    let head = git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(merged["commit"], json!(head));
    let (status, conflict) = post(
        &server,
        &format!("/api/agents/{b_id}/merge"),
        json!({"strategy": "squash"}),
    );
    assert_eq!(status, 409, "{conflict}");
    assert_eq!(conflict["conflicts"], json!(["hello.txt"]));
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head, "HEAD unchanged");
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "no file touched"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "hello from a\n"
    );

    // B runs: its worktree is not discarded. Stopped, it ends within 15 s, as `stopped`.
    let (status, _) = post(&server, &format!("/api/agents/{b_id}/discard"), json!({}));
    assert_eq!(status, 409, "a running agent's worktree stays");
    let b_pane = b["tmux_pane"].as_str().unwrap().to_string();
    let asked = std::time::Instant::now();
    let (status, stopped) = post(&server, &format!("/api/agents/{b_id}/stop"), json!({}));
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["how"], "exited", "the stand-in takes /exit");
    assert!(asked.elapsed() < Duration::from_secs(15));
    let panes = tmux.run(&["list-panes", "-a", "-F", "#{pane_id}"]);
    assert!(!panes.lines().any(|p| p == b_pane), "{panes}");
    let card = wait_for(Duration::from_secs(10), || {
        let c = server.try_json(&format!("/api/agents/{b_id}"))?;
        (c["end_reason"] == "stopped").then_some(c)
    })
    .unwrap_or_else(|| panic!("{}", server.json(&format!("/api/agents/{b_id}"))));
    assert_eq!(card["activity"], "ended");
    let (status, discarded) = post(&server, &format!("/api/agents/{b_id}/discard"), json!({}));
    assert_eq!(status, 200, "{discarded}");
    assert!(!repo.join(".worktrees/hello-from-b").exists());
    assert_eq!(
        git(&repo, &["branch", "--list", "headspace/hello-from-b"]),
        ""
    );

    // A fork of A: a new agent, resuming A's session in a new one (`--resume ID
    // --fork-session`), in its own worktree from A's branch. A session id a hook made up to be
    // read as an option is refused before anything runs.
    let a_session = server.json(&format!("/api/agents/{a_id}"))["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, fork) = post(
        &server,
        &format!("/api/agents/{a_id}/fork"),
        json!({"worktree": "fork-a"}),
    );
    assert_eq!(status, 201, "{fork}");
    let fork_id = fork["id"].as_u64().expect("the fork's first hook came");
    assert_ne!(fork_id, a_id);
    assert_eq!(fork["branch"], "headspace/fork-a");
    let started = tmux.run(&[
        "display-message",
        "-p",
        "-t",
        fork["tmux_pane"].as_str().unwrap(),
        "#{pane_start_command}",
    ]);
    assert!(
        started.contains(&format!("--resume {a_session} --fork-session")),
        "{started}"
    );
    let (status, _) = post(
        &server,
        &format!("/api/agents/{fork_id}/stop"),
        json!({"force": true}),
    );
    assert_eq!(status, 200);
    wait_for(Duration::from_secs(10), || {
        let c = server.try_json(&format!("/api/agents/{fork_id}"))?;
        (c["end_reason"] == "stopped").then_some(())
    })
    .expect("the fork ends as stopped");
    let (status, _) = post(
        &server,
        &format!("/api/agents/{fork_id}/discard"),
        json!({}),
    );
    assert_eq!(status, 200);
    let hostile = SessionWriter::new(77, headspace_core::Timestamp(0));
    let mut hostile = hostile;
    hostile.session_id = "--dangerously-skip-permissions".into();
    hostile.cwd = project.clone();
    server.post_hook(
        &hostile,
        &claude,
        "%77",
        "SessionStart",
        json!({"source": "startup"}),
    );
    let hostile_id = wait_for(Duration::from_secs(10), || {
        server.try_json("/api/agents/%2D%2Ddangerously-skip-permissions")?["id"].as_u64()
    })
    .expect("the hook's agent is known");
    // A hook-made agent whose folder is outside every root: no git runs there.
    let mut elsewhere = SessionWriter::new(78, headspace_core::Timestamp(0));
    elsewhere.cwd = "/".into();
    server.post_hook(
        &elsewhere,
        &claude,
        "%78",
        "SessionStart",
        json!({"source": "startup"}),
    );
    let elsewhere_id = wait_for(Duration::from_secs(10), || {
        server.try_json(&format!("/api/agents/{}", elsewhere.session_id))?["id"].as_u64()
    })
    .expect("the agent in / is known");
    let (status, _) = server.get(&format!("/api/agents/{elsewhere_id}/diff"));
    assert_eq!(status, 403);
    let (status, refused) = post(
        &server,
        &format!("/api/agents/{hostile_id}/fork"),
        json!({}),
    );
    assert_eq!(status, 400, "{refused}");

    // A, forced: killed at once; then its worktree and branch go too, and main keeps A's work.
    let (status, stopped) = post(
        &server,
        &format!("/api/agents/{a_id}/stop"),
        json!({"force": true}),
    );
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["how"], "killed");
    wait_for(Duration::from_secs(10), || {
        let c = server.try_json(&format!("/api/agents/{a_id}"))?;
        (c["end_reason"] == "stopped").then_some(())
    })
    .expect("A ends as stopped");
    let (status, _) = post(&server, &format!("/api/agents/{a_id}/discard"), json!({}));
    assert_eq!(status, 200);
    assert!(!a_tree.exists());
    assert_eq!(
        server.json(&format!("/api/agents/{a_id}"))["worktree"],
        serde_json::Value::Null,
        "a discarded worktree is no longer shown"
    );
    assert_eq!(git(&repo, &["branch", "--list", "headspace/*"]), "");
    assert_eq!(
        std::fs::read_to_string(repo.join("hello.txt")).unwrap(),
        "hello from a\n"
    );

    // An agent Headspace did not start has no branch of its making to merge or discard, and
    // its diff is its folder's uncommitted changes.
    let outside = tmux.new_pane(
        "own",
        Some(&project),
        &format!(
            "{agent} --claude-dir {} --script {} --session own --think-ms 60 --stay",
            claude.display(),
            script.display()
        ),
    );
    let own = wait_for(Duration::from_secs(15), || {
        server.try_json("/api/agents/own")?["id"].as_u64()
    })
    .expect("the user's own agent is seen");
    let (status, _) = post(&server, &format!("/api/agents/{own}/merge"), json!({}));
    assert_eq!(status, 404);
    let (status, _) = post(&server, &format!("/api/agents/{own}/discard"), json!({}));
    assert_eq!(status, 404);
    std::fs::write(repo.join("README.md"), "# shop\nchanged\n").unwrap();
    let diff = server.json(&format!("/api/agents/{own}/diff"));
    assert_eq!(diff["base"], "HEAD");
    assert_eq!(diff["files"][0]["path"], "README.md", "{diff}");
    let _ = outside;
    assert!(
        !marker.exists(),
        "no hook or fsmonitor of the repository ran under Headspace's git"
    );
    server.stop();
}
