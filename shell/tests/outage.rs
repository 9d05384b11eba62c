//! Database outage: PostgreSQL is stopped under load and started again. The server keeps
//! answering hooks, reports itself unhealthy, and loses nothing once the database is back.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

/// The test cluster, stopped: started again when dropped, also when the test fails (the
/// other tests need it).
struct Stopped;

impl Drop for Stopped {
    fn drop(&mut self) {
        pg_ctl(&["start"]);
    }
}

/// The tests here stop and start the one test cluster: one at a time.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn database_outage_under_load_loses_nothing() {
    let _cluster = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
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

/// A long outage under a hook flood: past the hold limit (4 MB here) the server holds no more
/// (hooks to the spool under its home, transcript growth read once the database has caught
/// up), stays within the limit's memory, and once the database is back every transcript line
/// and every hook-only prompt is one turn, none doubled. Without the limit this flood held
/// every write and event in memory.
#[test]
fn a_long_outage_under_a_hook_flood_holds_bounded_memory_and_loses_nothing() {
    let _cluster = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = fresh_db("outage_flood") else {
        return;
    };
    let claude = temp_dir("outage-flood");
    let home = private_temp_dir("outage-flood-home");
    let server = Server::start(
        &db,
        &claude,
        &["--home", home.to_str().unwrap(), "--max-held-mb", "4"],
    );
    let sessions = 8u64;
    let mut writers: Vec<SessionWriter> = (0..sessions)
        .map(|i| {
            SessionWriter::new(
                100 + i,
                Timestamp::parse_rfc3339("2026-11-27T07:00:00Z").unwrap(),
            )
        })
        .collect();
    let mut lines = 0usize;
    let mut hook_only = Vec::new();
    let big = "x".repeat(3000);
    let mut exchange = |n: usize, with_line: bool, lines: &mut usize| {
        let s = &mut writers[n % sessions as usize];
        let prompt = format!("prompt {n} {big}");
        let pane = format!("%{}", 40 + n % sessions as usize);
        let (status, _) = server.post(
            "/hook/UserPromptSubmit",
            &hook(
                s,
                &claude,
                &pane,
                "UserPromptSubmit",
                json!({"prompt": prompt}),
            ),
        );
        assert_eq!(status, 200);
        if with_line {
            let file = claude.join(s.path());
            let l = s.prompt(&prompt, None);
            let t = s.agent_text(&format!("answer {n} {big}"));
            append(&file, &format!("{}\n{}\n", l.json, t.json));
            *lines += 2;
        }
    };
    for n in 0..sessions as usize {
        exchange(n, true, &mut lines);
    }
    assert!(wait_for(Duration::from_secs(20), || (psql(
        &db,
        "SELECT count(*) FROM turns"
    ) == lines.to_string())
    .then_some(()))
    .is_some());
    let baseline = proc_kb(server.child.id(), "VmRSS");

    pg_ctl(&["-m", "fast", "stop"]);
    let stopped = Stopped;
    let mut peak = baseline;
    for n in sessions as usize..6000 {
        // Every 25th prompt's line never comes: its hook is all there is of it.
        let with_line = n % 25 != 0;
        if !with_line {
            hook_only.push(format!("prompt {n} "));
        }
        exchange(n, with_line, &mut lines);
        if n % 200 == 0 {
            peak = peak.max(proc_kb(server.child.id(), "VmRSS"));
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    peak = peak.max(proc_kb(server.child.id(), "VmRSS"));
    eprintln!(
        "RSS before the outage {} MB, peak during it {} MB",
        baseline / 1024,
        peak / 1024
    );
    let spool = home.join("spool/hooks.jsonl");
    assert!(spool.exists(), "hooks were spooled\n{}", server.log());
    drop(stopped);

    let want = lines + hook_only.len();
    let got = wait_for(Duration::from_secs(120), || {
        let n: usize = psql(&db, "SELECT count(*) FROM turns").parse().ok()?;
        (n == want && server.get("/healthz").0 == 200).then_some(n)
    });
    assert!(
        got.is_some(),
        "{} turns, want {want} ({lines} lines, {} hook-only)\n{}",
        psql(&db, "SELECT count(*) FROM turns"),
        hook_only.len(),
        server.log()
    );
    assert!(
        peak < baseline + 40 * 1024,
        "RSS grew from {baseline} kB to {peak} kB under a 4 MB hold limit"
    );
    // One turn per line, none doubled; each hook-only prompt once.
    assert_eq!(
        psql(
            &db,
            "SELECT count(DISTINCT entry_uuid) FROM turns WHERE entry_uuid IS NOT NULL"
        ),
        lines.to_string()
    );
    let unclaimed: Vec<String> = psql(
        &db,
        "SELECT left(text, 12) FROM turns WHERE entry_uuid IS NULL ORDER BY id",
    )
    .lines()
    .map(str::to_string)
    .collect();
    assert_eq!(unclaimed.len(), hook_only.len(), "{unclaimed:?}");
    for p in &hook_only {
        let n = unclaimed
            .iter()
            .filter(|u| p.starts_with(u.as_str()) || u.starts_with(p.trim_end()))
            .count();
        assert!(n >= 1, "{p:?} missing from {unclaimed:?}");
    }
    assert!(
        !home.join("spool/hooks.jsonl").exists()
            || std::fs::metadata(home.join("spool/hooks.jsonl"))
                .unwrap()
                .len()
                == 0
    );
    assert!(server
        .get("/metrics")
        .1
        .lines()
        .any(|l| l.starts_with("headspace_sheddings_total ") && !l.ends_with(" 0")));
    server.stop();
}
