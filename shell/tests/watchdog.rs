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
    let ProbedPane {
        claude,
        tmux,
        pane,
        server,
        session: s,
        gap_logged,
    } = probed_pane(&db, "watchdog", 7, Server::start);
    assert!(gap_logged, "no gap logged:\n{}", server.log());
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

#[test]
fn default_logging_shows_the_gap_and_the_recovery_at_info_and_hides_the_hook_chain() {
    let Some(db) = fresh_db("watchdog_logs") else {
        return;
    };
    // No RUST_LOG: the log a user gets.
    let ProbedPane {
        claude,
        server,
        session: mut s,
        gap_logged,
        tmux: _tmux, // the pane lives until the test ends
        ..
    } = probed_pane(&db, "watchdog-logs", 8, Server::start_with_default_logging);
    assert!(gap_logged, "no gap at INFO by default:\n{}", server.log());

    // An agent reply whose Stop hook was lost: recovered from the transcript, said at INFO.
    let reply = s.agent_text("Watched; nothing to report.");
    append(&claude.join(s.path()), &format!("{}\n", reply.json));
    let recovered = wait_for(Duration::from_secs(10), || {
        server
            .log()
            .contains("[RECONCILER] Created turn")
            .then_some(())
    });
    assert!(
        recovered.is_some(),
        "no recovery at INFO by default:\n{}",
        server.log()
    );
    let log = server.log();
    assert!(
        !log.contains("hook arrived") && !log.contains(" DEBUG "),
        "the per-hook chain is DEBUG, hidden by default:\n{log}"
    );
    server.stop();
}

/// A server watching a shell in a tmux pane on a private socket, an agent's prompt hook
/// naming that pane, then new output in the pane that no turn explains.
struct ProbedPane {
    claude: std::path::PathBuf,
    tmux: Tmux,
    pane: String,
    server: Server,
    session: SessionWriter,
    /// Whether the server logged the gap within 10 s.
    gap_logged: bool,
}

fn probed_pane(
    db: &str,
    name: &str,
    session: u64,
    start: fn(&str, &std::path::Path, &[&str]) -> Server,
) -> ProbedPane {
    let claude = temp_dir(name);
    let tmux = Tmux(format!("headspace-test-{name}-{}", std::process::id()));
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
    let server = start(
        db,
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
    let session = SessionWriter::new(
        session,
        Timestamp::parse_rfc3339("2026-11-22T09:00:00Z").unwrap(),
    );
    server.post(
        "/hook/UserPromptSubmit",
        &hook(
            &session,
            &claude,
            &pane,
            "UserPromptSubmit",
            json!({"prompt": "watch me"}),
        ),
    );
    std::thread::sleep(Duration::from_millis(800)); // the first capture is the baseline
    tmux.run(&["send-keys", "-t", &pane, "echo watchdog-probe", "Enter"]);
    let gap_logged = wait_for(Duration::from_secs(10), || {
        server
            .log()
            .contains("[TMUX_WATCHDOG] Gap detected for agent")
            .then_some(())
    })
    .is_some();
    ProbedPane {
        claude,
        tmux,
        pane,
        server,
        session,
        gap_logged,
    }
}

#[test]
fn a_batch_capture_reads_each_pane_as_capturing_it_alone() {
    let tmux = Tmux(format!("hs-capture-many-{}", std::process::id()));
    // Screens that could confuse a splitter: blank lines, a line like a marker, no text.
    let a = tmux.new_pane("a", None, "printf 'one\\n\\ntwo\\n'; sleep 60");
    let b = tmux.new_pane(
        "b",
        None,
        "printf 'headspace-capture-end-0000000000000000\\n'; sleep 60",
    );
    let c = tmux.new_pane("c", None, "sleep 60");
    std::thread::sleep(Duration::from_millis(500));
    let name = tmux.0.clone();
    let socket = Some(name.as_str());
    let rt = runtime();
    let panes = vec![a.clone(), b.clone(), c.clone()];
    let alone: Vec<Option<String>> = panes
        .iter()
        .map(|p| rt.block_on(headspace::tmux::capture(socket, p, 50)))
        .collect();
    assert!(alone.iter().all(Option::is_some), "{alone:?}");
    assert!(alone[0].as_deref().unwrap().starts_with("one\n\ntwo\n"));
    assert!(
        alone[1]
            .as_deref()
            .unwrap()
            .starts_with("headspace-capture-end-0000000000000000\n"),
        "the marker-like line is on the screen: {alone:?}"
    );
    let batch = rt.block_on(headspace::tmux::capture_many(socket, &panes, 50));
    assert_eq!(batch, alone);

    // A pane closed since the listing: the others are still read, that one is not.
    tmux.run(&["kill-pane", "-t", &b]);
    let batch = rt.block_on(headspace::tmux::capture_many(socket, &panes, 50));
    assert_eq!(batch, vec![alone[0].clone(), None, alone[2].clone()]);

    // No tmux server: nothing, and no error.
    drop(tmux);
    let batch = rt.block_on(headspace::tmux::capture_many(socket, &panes, 50));
    assert_eq!(batch, vec![None, None, None]);
}
