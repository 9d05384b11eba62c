//! `make bench` (server part): the release server as a real process on the throwaway
//! PostgreSQL, measured end to end through its SSE stream.
//!
//! - hook received → turn committed → SSE event delivered, p50/p99 at 100 and 1,000 hooks/s;
//! - the highest sustained hook rate;
//!
//! both in two shapes, side by side: a connection per hook (the command forwarder's) and
//! Claude Code's HTTP hooks (a kept-alive connection per session, one request at a time, the
//! pane as a header, no emission stamp);
//! - transcript line appended (no hook) → SSE `turn_created`, p50/p99;
//! - a 100 MB transcript appended at once → all its turns committed and published;
//! - the server's insert rate next to a plain batched INSERT of the same rows;
//! - the baselines, on the same cluster: the same rows inserted by a plain client from one
//!   connection, as single-row commits and as multi-row INSERTs of 100 rows.
//!
//! Needs DATABASE_URL: `make bench` runs it through `scripts/with-test-postgres.sh --durable`,
//! a cluster with the embedded database's settings (fsync and synchronous_commit on).

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::server::Server;
use bench_support::sse::{latencies, percentile, Seen};
use bench_support::{baseline, sse, table, transcript};

use headspace::client::KeptAlive;
use headspace::hooks::install::PANE_HEADER;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs one SQL statement and returns the first column of the first row as text.
fn sql(url: &str, query: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("database");
        tokio::spawn(conn);
        let rows = client
            .simple_query(query)
            .await
            .unwrap_or_else(|e| panic!("{query}: {}", headspace::server::migrate::describe(&e)));
        rows.iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .unwrap_or_default()
    })
}

fn post(addr: &str, path: &str, body: &[u8]) -> bool {
    headspace::client::request(
        addr,
        "POST",
        path,
        body,
        Some(bench_support::server::TOKEN),
        Duration::from_secs(10),
    )
    .map(|r| r.0 == 200)
    .unwrap_or(false)
}

/// A prompt hook of `s`, as the command forwarder posts it (`pane` in the body) or, with
/// `pane` `None`, as Claude Code's HTTP transport does (the pane comes as a header).
fn hook_body(s: &SessionWriter, claude: &Path, prompt: &str, pane: Option<&str>) -> Vec<u8> {
    let mut v: serde_json::Value =
        serde_json::from_slice(&s.hook("UserPromptSubmit", pane, None, json!({"prompt": prompt})))
            .unwrap();
    v["transcript_path"] = json!(claude.join(s.path()).display().to_string());
    serde_json::to_vec(&v).unwrap()
}

/// Waits until the server has committed everything it holds.
fn drained(addr: &str) {
    for _ in 0..600 {
        if let Ok((_, body)) = headspace::client::request(
            addr,
            "GET",
            "/healthz",
            b"",
            Some(bench_support::server::TOKEN),
            Duration::from_secs(5),
        ) {
            if body.contains("\"backlog\":0") {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the search indexer has caught up with every turn committed so far: the hook
/// phases leave tens of thousands of turns to index, and the indexer takes up to half the
/// writer's time while any wait, which is not what the next phase measures.
fn indexed(db: &str) {
    let begin = Instant::now();
    while begin.elapsed() < Duration::from_secs(300) {
        if sql(db, "SELECT count(*) FROM turn_words_pending") == "0" {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("bench: the search indexer still had turns to index after 300 s");
}

/// Calls `send` with 0, 1, 2, … at `rate` a second for `secs` seconds, each at its due time.
fn paced(rate: u64, secs: u64, mut send: impl FnMut(u64)) {
    let start = Instant::now();
    for n in 0..rate * secs {
        let due = start + Duration::from_secs_f64(n as f64 / rate as f64);
        if let Some(d) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        send(n);
    }
}

/// Sends `rate` hooks per second for `secs` seconds from a few workers; returns send times.
fn hooks_at_rate(
    addr: &str,
    claude: &Path,
    sessions: &[SessionWriter],
    tag: &str,
    rate: u64,
    secs: u64,
) -> HashMap<String, Instant> {
    let (tx, rx) = mpsc::channel::<(String, Vec<u8>)>();
    let rx = Arc::new(Mutex::new(rx));
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (rx, sent, addr) = (rx.clone(), sent.clone(), addr.to_string());
            std::thread::spawn(move || loop {
                let job = rx.lock().unwrap().recv();
                let Ok((text, body)) = job else { break };
                let t0 = Instant::now();
                sent.lock().unwrap().insert(text, t0);
                post(&addr, "/hook/UserPromptSubmit", &body);
            })
        })
        .collect();
    paced(rate, secs, |n| {
        let text = format!("{tag} hook {n}");
        let s = &sessions[n as usize % sessions.len()];
        tx.send((text.clone(), hook_body(s, claude, &text, Some("%1"))))
            .unwrap();
    });
    drop(tx);
    for w in workers {
        w.join().unwrap();
    }
    Arc::try_unwrap(sent).unwrap().into_inner().unwrap()
}

/// The pane of session `i` in the HTTP shape, sent as the header Claude Code fills from
/// `$TMUX_PANE`.
fn pane_of(i: usize) -> String {
    format!("%{}", i + 1)
}

/// As [`hooks_at_rate`], in the shape of Claude Code's HTTP hooks: each session posts over
/// its own kept-alive connection, one request at a time and in order, with its pane as a
/// header and no emission stamp in the body.
fn kept_alive_hooks_at_rate(
    addr: &str,
    claude: &Path,
    sessions: &[SessionWriter],
    tag: &str,
    rate: u64,
    secs: u64,
) -> HashMap<String, Instant> {
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let (queues, workers): (Vec<_>, Vec<_>) = (0..sessions.len())
        .map(|i| {
            let (tx, rx) = mpsc::channel::<(String, Vec<u8>)>();
            let (sent, addr) = (sent.clone(), addr.to_string());
            let worker = std::thread::spawn(move || {
                let mut conn = KeptAlive::new(
                    &addr,
                    Some(bench_support::server::TOKEN),
                    Duration::from_secs(10),
                );
                let pane = pane_of(i);
                for (text, body) in rx {
                    sent.lock().unwrap().insert(text, Instant::now());
                    let _ = conn.post("/hook/UserPromptSubmit", &[(PANE_HEADER, &pane)], &body);
                }
            });
            (tx, worker)
        })
        .unzip();
    paced(rate, secs, |n| {
        let text = format!("{tag} hook {n}");
        let i = n as usize % sessions.len();
        queues[i]
            .send((text.clone(), hook_body(&sessions[i], claude, &text, None)))
            .unwrap();
    });
    drop(queues);
    for w in workers {
        w.join().unwrap();
    }
    Arc::try_unwrap(sent).unwrap().into_inner().unwrap()
}

/// The name of a shape in the printed figures.
fn shape(http: bool) -> &'static str {
    if http {
        "HTTP hooks"
    } else {
        "command hooks"
    }
}

/// As fast as 8 senders can post for 5 s: hooks committed per second, their latencies and
/// how many never showed. In the HTTP shape each sender keeps one connection and owns its
/// sessions (every 8th), so each session's hooks go one at a time.
fn highest_sustained(
    addr: &str,
    claude: &Path,
    sessions: &[SessionWriter],
    seen: &Seen,
    http: bool,
) -> (f64, Vec<f64>, usize) {
    let sent = Arc::new(Mutex::new(HashMap::new()));
    let start = Instant::now();
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let (sent, addr, claude, sessions) = (
                sent.clone(),
                addr.to_string(),
                claude.to_path_buf(),
                sessions.to_vec(),
            );
            std::thread::spawn(move || {
                let mut conn = http.then(|| {
                    KeptAlive::new(
                        &addr,
                        Some(bench_support::server::TOKEN),
                        Duration::from_secs(10),
                    )
                });
                let mine: Vec<usize> = (w..sessions.len()).step_by(8).collect();
                let mut n = 0;
                while start.elapsed() < Duration::from_secs(5) {
                    let text = format!("max{} w{w} n{n}", if http { "h" } else { "c" });
                    if let Some(conn) = conn.as_mut() {
                        let i = mine[n % mine.len()];
                        let body = hook_body(&sessions[i], &claude, &text, None);
                        sent.lock().unwrap().insert(text, Instant::now());
                        let pane = pane_of(i);
                        let _ = conn.post("/hook/UserPromptSubmit", &[(PANE_HEADER, &pane)], &body);
                    } else {
                        let i = (w * 7 + n) % sessions.len();
                        let body = hook_body(&sessions[i], &claude, &text, Some("%1"));
                        sent.lock().unwrap().insert(text, Instant::now());
                        post(&addr, "/hook/UserPromptSubmit", &body);
                    }
                    n += 1;
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let sent = Arc::try_unwrap(sent).unwrap().into_inner().unwrap();
    let (l, missing) = latencies(&sent, seen, Duration::from_secs(60));
    let last = sent
        .keys()
        .filter_map(|k| seen.lock().unwrap().get(k).copied())
        .max()
        .unwrap_or(start);
    let rate = l.len() as f64 / last.duration_since(start).as_secs_f64();
    (rate, l, missing)
}

fn main() {
    let cluster = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL: run through scripts/with-test-postgres.sh (make bench)");
    sql(&cluster, "DROP DATABASE IF EXISTS bench");
    sql(&cluster, "CREATE DATABASE bench");
    let db = cluster.replace("dbname=postgres", "dbname=bench");
    let claude: PathBuf =
        std::env::temp_dir().join(format!("headspace-bench-{}", std::process::id()));
    std::fs::create_dir_all(claude.join("projects")).unwrap();
    let server = Server::start(
        "server",
        &[
            "--database-url".as_ref(),
            db.as_ref(),
            "--sweep-seconds".as_ref(),
            "1".as_ref(),
            "--claude-dir".as_ref(),
            claude.as_os_str(),
        ],
    );
    let addr = server.addr.clone();
    let seen: Seen = sse::stream(&addr);
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Timestamp::parse_rfc3339("2026-11-22T10:00:00Z").unwrap();
    let sessions: Vec<SessionWriter> = (1..=20).map(|n| SessionWriter::new(n, t0)).collect();

    println!(
        "server bench: release server, PostgreSQL on a Unix socket (fsync={}, synchronous_commit={}), {} cores; latencies are hook sent → SSE event read",
        sql(&db, "SHOW fsync"),
        sql(&db, "SHOW synchronous_commit"),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>8}",
        "", "p50 ms", "p99 ms", "max ms", "missing"
    );
    // Each rate in both shapes, one after the other: a connection per hook (the command
    // forwarder) and Claude Code's HTTP hooks (kept-alive, in order per session).
    let (mut p99_at_1000, mut p99_at_1000_http) = (f64::NAN, f64::NAN);
    for rate in [100u64, 1000] {
        for http in [false, true] {
            drained(&addr);
            let tag = format!("r{rate}{}", if http { "h" } else { "c" });
            let sent = if http {
                kept_alive_hooks_at_rate(&addr, &claude, &sessions, &tag, rate, 5)
            } else {
                hooks_at_rate(&addr, &claude, &sessions, &tag, rate, 5)
            };
            let (l, missing) = latencies(&sent, &seen, Duration::from_secs(30));
            let p99 = if missing == 0 {
                percentile(&l, 0.99)
            } else {
                f64::INFINITY
            };
            if rate == 1000 {
                *(if http {
                    &mut p99_at_1000_http
                } else {
                    &mut p99_at_1000
                }) = p99;
            }
            println!(
                "{:<44} {:>9.2} {:>9.2} {:>9.2} {:>8}",
                format!("hook → turn → SSE at {rate} hooks/s, {}", shape(http)),
                percentile(&l, 0.5),
                percentile(&l, 0.99),
                percentile(&l, 1.0),
                missing
            );
        }
    }

    let mut sustained = [0.0f64; 2];
    for http in [false, true] {
        drained(&addr);
        let (rate, l, missing) = highest_sustained(&addr, &claude, &sessions, &seen, http);
        sustained[http as usize] = rate;
        println!(
            "{:<44} {:>9.2} {:>9.2} {:>9.2} {:>8}",
            format!("highest sustained, {}: {rate:.0} hooks/s", shape(http)),
            percentile(&l, 0.5),
            percentile(&l, 0.99),
            percentile(&l, 1.0),
            missing
        );
    }
    let [sustained, sustained_http] = sustained;

    drained(&addr);
    indexed(&db);
    // Transcript appends with no hook, 50 lines/s for 5 s.
    let mut w = SessionWriter::new(99, t0);
    let file = claude.join(w.path());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut sent = HashMap::new();
    for n in 0..250 {
        let text = format!("append line {n}");
        let line = w.prompt(&text, None);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .unwrap();
        sent.insert(text, Instant::now());
        f.write_all(format!("{}\n", line.json).as_bytes()).unwrap();
        drop(f);
        std::thread::sleep(Duration::from_millis(20));
    }
    let (l, missing) = latencies(&sent, &seen, Duration::from_secs(30));
    println!(
        "{:<44} {:>9.2} {:>9.2} {:>9.2} {:>8}",
        "transcript append → SSE turn_created (50/s)",
        percentile(&l, 0.5),
        percentile(&l, 0.99),
        percentile(&l, 1.0),
        missing
    );

    drained(&addr);
    indexed(&db);
    // A 100 MB transcript appended at once.
    let mut big = SessionWriter::new(500, t0);
    let path = claude.join(big.path());
    let (bytes, last_text) = transcript::big(&mut big, 100 << 20);
    let turns_before: i64 = sql(&db, "SELECT count(*) FROM turns").parse().unwrap();
    let mb = bytes.len() as f64 / (1 << 20) as f64;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &bytes).unwrap();
    let begin = Instant::now();
    std::fs::rename(&tmp, &path).unwrap();
    let mut done = None;
    while begin.elapsed() < Duration::from_secs(120) {
        if let Some(t) = seen.lock().unwrap().get(&last_text) {
            done = Some(t.duration_since(begin));
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let turns_after: i64 = sql(&db, "SELECT count(*) FROM turns").parse().unwrap();
    let created = turns_after - turns_before;
    let secs = done.map(|d| d.as_secs_f64()).unwrap_or(f64::NAN);
    println!("{mb:.0} MB transcript appended at once → its {created} turns committed and published: {secs:.2} s");

    // The same rows with a plain batched INSERT into the same database, as the baseline.
    sql(&db, "CREATE TABLE bench_turns (LIKE turns INCLUDING ALL)");
    let rows = created.max(1);
    let insert = format!(
        "INSERT INTO bench_turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source, session_id)
         SELECT g, 1, 1, 'agent', 'progress', 'step of big task ' || g || ': ' || repeat('reading the sources ', 8), now(), 'jsonl', 'uuid-' || g, 'transcript', 's'
         FROM generate_series(1, {rows}) g"
    );
    let b0 = Instant::now();
    sql(&db, &insert);
    let base = b0.elapsed().as_secs_f64();
    println!("{:<44} {:>12}", "insert rate", "rows/s");
    println!(
        "{:<44} {:>12.0}",
        "headspace server (100 MB transcript)",
        created as f64 / secs
    );
    println!(
        "{:<44} {:>12.0}",
        "plain INSERT … SELECT of the same rows",
        rows as f64 / base
    );
    let rates = baseline::measure(&db, 50_000, 1_000);
    println!(
        "{:<44} {:>12.0}",
        format!(
            "client INSERT, 100 rows a commit ({} rows)",
            rates.batched_rows
        ),
        rates.batched
    );
    println!(
        "{:<44} {:>12.0}",
        format!("client INSERT, 1 row a commit ({} rows)", rates.single_rows),
        rates.single
    );
    println!(
        "{:<44} {:>12.0}",
        "headspace: highest sustained hooks/s", sustained
    );
    println!(
        "{:<44} {:>12.0}",
        "headspace: highest sustained, HTTP hooks", sustained_http
    );

    for (p99, how) in [(p99_at_1000, ""), (p99_at_1000_http, ", HTTP hooks")] {
        table::row(
            &format!("hook → turn committed → SSE, p99 at 1,000 hooks/s{how}"),
            &format!("{p99:.2} ms"),
            "≤ 5 ms",
            Some(p99 <= 5.0),
        );
    }
    for (rate, how) in [(sustained, ""), (sustained_http, ", HTTP hooks")] {
        let ratio = rate / rates.batched;
        table::row(
            &format!("sustained hooks/s committed{how}"),
            &format!(
                "{rate:.0}/s = {ratio:.2}× batched INSERT ({:.0} rows/s; 1-row commits {:.0}/s)",
                rates.batched, rates.single
            ),
            "≥ 0.5× 100-row batched INSERT",
            Some(ratio >= 0.5),
        );
    }
    table::row(
        &format!("{mb:.0} MB transcript appended → all turns committed and published"),
        &format!("{secs:.2} s ({created} turns)"),
        "≤ 1 s",
        Some(secs <= 1.0),
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&claude);
}
