//! Database outage: PostgreSQL is stopped under load and started again. The server keeps
//! answering hooks, reports itself unhealthy, and loses nothing once the database is back.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

#[test]
fn database_outage_under_load_loses_nothing() {
    let Some(db) = fresh_db("outage") else { return };
    let claude = temp_dir("outage");
    let server = Server::start(&db, &claude, &[]);
    let mut s = SessionWriter::new(1, Timestamp::parse_rfc3339("2026-11-22T07:00:00Z").unwrap());
    let file = claude.join(s.path());
    let mut lines = Vec::new();
    let mut exchange = |s: &mut SessionWriter, n: usize, with_line: bool| {
        let prompt = format!("prompt {n}");
        let (status, _) = server.post(
            "/hook/UserPromptSubmit",
            &hook(
                s,
                &claude,
                "%9",
                "UserPromptSubmit",
                json!({"prompt": prompt}),
            ),
        );
        assert_eq!(status, 200, "hooks are answered while the database is down");
        if with_line {
            let l = s.prompt(&prompt, None);
            append(&file, &format!("{}\n", l.json));
            lines.push(l.uuid);
            let t = s.agent_text(&format!("answer {n}"));
            append(&file, &format!("{}\n", t.json));
            lines.push(t.uuid);
        }
    };
    for n in 0..5 {
        exchange(&mut s, n, true);
    }
    assert!(wait_for(Duration::from_secs(10), || (psql(
        &db,
        "SELECT count(*) FROM turns"
    ) == "10")
        .then_some(()))
    .is_some());

    pg_ctl(&["-m", "fast", "stop"]);
    for n in 5..25 {
        // One hook whose transcript line never comes (transcript loss): kept all the same.
        exchange(&mut s, n, n != 12);
        std::thread::sleep(Duration::from_millis(20));
    }
    let unhealthy = wait_for(Duration::from_secs(10), || {
        (server.get("/healthz").0 == 503).then_some(())
    });
    std::thread::sleep(Duration::from_millis(1500));
    pg_ctl(&["start"]);
    assert!(unhealthy.is_some(), "healthz must report the outage");

    let want = lines.len() + 1; // plus the hook-only turn
    let got = wait_for(Duration::from_secs(30), || {
        let n: usize = psql(&db, "SELECT count(*) FROM turns").parse().ok()?;
        (n == want && server.get("/healthz").0 == 200).then_some(n)
    });
    assert!(
        got.is_some(),
        "{} turns, want {want}\n{}",
        psql(&db, "SELECT count(*) FROM turns"),
        server.log()
    );
    let claimed: Vec<String> = psql(
        &db,
        "SELECT entry_uuid FROM turns WHERE entry_uuid IS NOT NULL ORDER BY id",
    )
    .lines()
    .map(str::to_string)
    .collect();
    assert_eq!(claimed.len(), lines.len());
    assert_eq!(
        psql(&db, "SELECT text FROM turns WHERE entry_uuid IS NULL"),
        "prompt 12"
    );
    assert!(server
        .get("/metrics")
        .1
        .lines()
        .any(|l| l.starts_with("headspace_store_retries_total ") && !l.ends_with(" 0")));
    server.stop();
}
