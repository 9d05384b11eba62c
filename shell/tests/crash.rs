//! Crash test: the server is killed with SIGKILL at random moments while a writer appends
//! transcripts and fires hooks for several agents. After the last restart the database holds
//! exactly one turn per transcript turn-line and nothing else.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A small deterministic generator, so a failing run can be repeated.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn sigkill_twenty_times_loses_and_doubles_nothing() {
    let Some(db) = fresh_db("crash") else { return };
    let claude = temp_dir("crash");
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261122);
    eprintln!("crash test seed {seed} (CRASH_SEED={seed} repeats it)");
    let addr: Arc<Mutex<String>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let expected: Arc<Mutex<BTreeSet<String>>> = Arc::default();

    let writer = {
        let (addr, done, expected, claude) =
            (addr.clone(), done.clone(), expected.clone(), claude.clone());
        std::thread::spawn(move || {
            let mut rng = Lcg(seed ^ 0x9e37);
            let t0 = Timestamp::parse_rfc3339("2026-11-22T06:00:00Z").unwrap();
            let mut sessions: Vec<SessionWriter> =
                (1..=3).map(|n| SessionWriter::new(n, t0)).collect();
            let replies = [
                "yes",
                "go on",
                "Done.",
                "All tests pass.",
                "Should I continue?",
            ];
            for round in 0..50 {
                let i = rng.next(3) as usize;
                let s = &mut sessions[i];
                let pane = format!("%{}", i + 1);
                let file = claude.join(s.path());
                let prompt = if rng.next(3) == 0 {
                    "yes".to_string()
                } else {
                    format!("task {round} for agent {i}")
                };
                let post = |body: Vec<u8>, event: &str| {
                    let a = addr.lock().unwrap().clone();
                    let _ = request(&a, "POST", &format!("/hook/{event}"), &body);
                };
                post(
                    hook(
                        s,
                        &claude,
                        &pane,
                        "UserPromptSubmit",
                        json!({"prompt": prompt}),
                    ),
                    "UserPromptSubmit",
                );
                // The transcript lags the hooks, as it does for real.
                std::thread::sleep(Duration::from_millis(rng.next(250)));
                let l = s.prompt(&prompt, None);
                expected.lock().unwrap().insert(l.uuid.clone());
                append(&file, &format!("{}\n", l.json));
                for _ in 0..rng.next(3) {
                    let t = s.agent_text(replies[rng.next(replies.len() as u64) as usize]);
                    expected.lock().unwrap().insert(t.uuid.clone());
                    // Sometimes a line is written in two parts.
                    let cut = rng.next(t.json.len() as u64) as usize;
                    append(&file, &t.json[..cut]);
                    std::thread::sleep(Duration::from_millis(rng.next(20)));
                    append(&file, &format!("{}\n", &t.json[cut..]));
                }
                let last = replies[rng.next(replies.len() as u64) as usize];
                post(
                    hook(
                        s,
                        &claude,
                        &pane,
                        "Stop",
                        json!({"last_assistant_message": last}),
                    ),
                    "Stop",
                );
                std::thread::sleep(Duration::from_millis(rng.next(250)));
                let t = s.agent_text(last);
                expected.lock().unwrap().insert(t.uuid.clone());
                append(&file, &format!("{}\n", t.json));
                std::thread::sleep(Duration::from_millis(20 + rng.next(60)));
            }
            done.store(true, Ordering::SeqCst);
        })
    };

    let mut rng = Lcg(seed);
    let (mut kills, mut kills_while_writing) = (0, 0);
    while !done.load(Ordering::SeqCst) || kills < 20 {
        let server = Server::start(&db, &claude, &[]);
        *addr.lock().unwrap() = server.addr.clone();
        std::thread::sleep(Duration::from_millis(50 + rng.next(350)));
        let writing = !done.load(Ordering::SeqCst);
        server.kill();
        kills += 1;
        kills_while_writing += writing as u32;
        std::thread::sleep(Duration::from_millis(rng.next(100)));
    }
    writer.join().unwrap();
    // The kills must hit the server while the session was still writing, not only after.
    assert!(
        kills_while_writing >= 5,
        "only {kills_while_writing} of {kills} kills came while the session wrote"
    );

    let server = Server::start(&db, &claude, &[]);
    let want = expected.lock().unwrap().clone();
    let count = || {
        psql(&db, "SELECT count(*) FROM turns")
            .parse::<usize>()
            .unwrap()
    };
    let settled = wait_for(Duration::from_secs(30), || {
        let claimed = psql(
            &db,
            "SELECT count(*) FROM turns WHERE entry_uuid IS NOT NULL",
        )
        .parse::<usize>()
        .unwrap();
        (claimed == want.len() && count() == want.len()).then_some(())
    });
    let stored: BTreeSet<String> = psql(
        &db,
        "SELECT entry_uuid FROM turns WHERE entry_uuid IS NOT NULL",
    )
    .lines()
    .map(str::to_string)
    .collect();
    let leftovers = psql(
        &db,
        "SELECT id, actor, text FROM turns WHERE entry_uuid IS NULL",
    );
    assert!(
        settled.is_some(),
        "after {kills} kills: {} turns for {} turn lines; missing {:?}; unclaimed:\n{leftovers}",
        count(),
        want.len(),
        want.difference(&stored).collect::<Vec<_>>()
    );
    assert_eq!(stored, want);
    eprintln!(
        "crash test: {kills} SIGKILLs ({kills_while_writing} while the session wrote), {} turn lines, each stored once",
        want.len()
    );
    assert_eq!(
        psql(
            &db,
            "SELECT count(*) - count(DISTINCT (agent_id, entry_uuid)) FROM turns"
        ),
        "0"
    );
    assert_eq!(server.json("/api/agents").as_array().unwrap().len(), 3);
    server.stop();
}
