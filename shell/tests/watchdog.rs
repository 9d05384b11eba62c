//! The pane watchdog against a real tmux server on a private socket (`tmux -L`).

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

#[test]
fn new_pane_output_without_a_turn_is_a_gap_and_a_dead_pane_breaks_nothing() {
    let Some(db) = fresh_db("watchdog") else {
        return;
    };
    let claude = temp_dir("watchdog");
    let tmux = Tmux(format!("headspace-test-{}", std::process::id()));
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "w",
        "-x",
        "100",
        "-y",
        "30",
        "sh",
    ]);
    let pane = tmux.run(&["display-message", "-p", "-t", "w", "#{pane_id}"]);
    let server = Server::start(
        &db,
        &claude,
        &[
            "--tmux-socket",
            &tmux.0,
            "--pane-poll-seconds",
            "0.2",
            "--gap-seconds",
            "1",
        ],
    );
    let s = SessionWriter::new(7, Timestamp::parse_rfc3339("2026-11-22T09:00:00Z").unwrap());
    server.post(
        "/hook/UserPromptSubmit",
        &hook(
            &s,
            &claude,
            &pane,
            "UserPromptSubmit",
            json!({"prompt": "watch me"}),
        ),
    );
    std::thread::sleep(Duration::from_millis(800)); // the first capture is the baseline
    tmux.run(&["send-keys", "-t", &pane, "echo watchdog-probe", "Enter"]);
    let found = wait_for(Duration::from_secs(10), || {
        server
            .log()
            .contains("[TMUX_WATCHDOG] Gap detected for agent")
            .then_some(())
    });
    assert!(found.is_some(), "no gap logged:\n{}", server.log());
    let metrics = server.get("/metrics").1;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("headspace_gaps_detected_total ") && !l.ends_with(" 0")),
        "{metrics}"
    );

    // The pane dies: the watchdog degrades quietly, the server goes on.
    tmux.run(&["kill-server"]);
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(server.get("/healthz").0, 200);
    let (status, _) = server.post(
        "/hook/Stop",
        &hook(
            &s,
            &claude,
            &pane,
            "Stop",
            json!({"last_assistant_message": "Done."}),
        ),
    );
    assert_eq!(status, 200);
    assert!(
        wait_for(Duration::from_secs(5), || (server.json("/api/agents")[0]
            ["state"]
            == "complete")
            .then_some(()))
        .is_some()
    );
    server.stop();
}
