//! `wait`, `send` and `clear` against a stand-in agent in a real tmux pane whose hooks all
//! arrive 1.2 s late: the /clear's Stop lands after the next task was sent (sm#232), and the
//! new session's transcript is read before its SessionStart (a merge).

mod common;
use common::*;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn headspace(args: &[&str]) -> Output {
    common::headspace().args(args).output().unwrap()
}

#[test]
fn wait_send_and_clear_give_the_right_answers_with_late_hooks() {
    let Some(PaneWorld {
        server,
        claude,
        tmux,
    }) = PaneWorld::start("activity")
    else {
        return;
    };
    // Two tasks of four replies each: long enough for a late Stop to land in the middle.
    let script = claude.join("script.json");
    let replies = [
        "Reading the parser.",
        "Found it.",
        "Fixing it.",
        "Done. All tests pass.",
    ];
    std::fs::write(&script, serde_json::json!({"turns": [{"prompt": "first", "replies": replies}, {"prompt": "second", "replies": replies}]}).to_string()).unwrap();
    let script = script.display().to_string();
    let cmd = format!(
        "{} --claude-dir {} --script {script} --think-ms 700 --delay-hooks-ms 1200",
        headspace_testkit::stand_in::stand_in_agent(),
        claude.display()
    );
    let ok = Command::new("tmux")
        .args([
            "-L",
            &tmux.0,
            "new-session",
            "-d",
            "-s",
            "a",
            "-x",
            "120",
            "-y",
            "40",
            &cmd,
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    let pane = String::from_utf8(
        Command::new("tmux")
            .args([
                "-L",
                &tmux.0,
                "display-message",
                "-p",
                "-t",
                "a",
                "#{pane_id}",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    assert!(
        wait_for(Duration::from_secs(10), || server
            .try_json("/api/agents")
            .filter(|a| a.as_array().is_some_and(|l| l.len() == 1)))
        .is_some(),
        "agent registered"
    );
    let addr = server.addr.clone();
    let wait = |timeout: &str| headspace(&["wait", &pane, "--timeout", timeout, "--addr", &addr]);

    assert_eq!(
        wait("10").status.code(),
        Some(0),
        "a fresh agent at its prompt is idle"
    );

    let sent = headspace(&[
        "send",
        &pane,
        "Fix the failing test in the parser",
        "--addr",
        &addr,
    ]);
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(
        String::from_utf8_lossy(&sent.stdout).starts_with("sent to"),
        "{}",
        String::from_utf8_lossy(&sent.stdout)
    );
    assert_eq!(
        wait("1").status.code(),
        Some(1),
        "right after send it is running"
    );
    let t0 = Instant::now();
    let done = wait("40");
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stdout)
    );
    eprintln!("first task finished after {:?}", t0.elapsed());
    let turns = server.json(&format!("/api/agents/{}/turns", pane.replace('%', "%25")));
    assert_eq!(turns.as_array().unwrap().len(), 5, "{turns}");

    // clear, then the next task at once: the /clear's Stop arrives 1.2 s later.
    assert!(headspace(&["clear", &pane, "--addr", &addr])
        .status
        .success());
    std::thread::sleep(Duration::from_millis(300));
    assert!(headspace(&["send", &pane, "yes", "--addr", &addr])
        .status
        .success());
    let early = wait("2");
    assert_eq!(
        early.status.code(),
        Some(1),
        "the late /clear Stop must not look like the end of the new task: {}",
        String::from_utf8_lossy(&early.stdout)
    );
    assert_eq!(wait("40").status.code(), Some(0));
    let agents = server.json("/api/agents");
    assert_eq!(
        agents.as_array().unwrap().len(),
        1,
        "one pane, one agent, across /clear"
    );
    assert_eq!(agents[0]["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(agents[0]["state"], "complete");
    server.stop();
}
