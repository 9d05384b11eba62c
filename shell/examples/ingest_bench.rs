//! `make bench` (ingest part): how much storing tool steps and token usage costs the
//! ingest of a transcript. The core reads a large transcript (agent text, `Bash` calls with
//! long results, usage on every assistant line) once, in the watcher's 256 KiB reads, and its
//! store writes are recorded. The same writes are then committed into two fresh databases of
//! the durable cluster the way the server's writer commits them (up to 5,000 writes a
//! transaction): all of them, and all but the step and usage writes (what the store wrote
//! before steps and usage were kept). The core's own time is in both figures.
//!
//! Needs DATABASE_URL (run through scripts/with-test-postgres.sh --durable, as `make bench`
//! does). `INGEST_BENCH_MB` changes the transcript's size (default 50).

#[path = "bench_support/mod.rs"]
mod bench_support;

use bench_support::pg::{database_name, fresh_database};
use bench_support::{table, transcript};
use headspace::server::pgstore::PgStore;
use headspace_core::harness::replay::Replayer;
use headspace_core::harness::trace::Step;
use headspace_core::io::Write;
use headspace_core::Timestamp;
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use std::time::Instant;

/// The watcher's read size.
const READ: usize = 256 << 10;
/// The writer's largest batch.
const BATCH: usize = 5_000;

/// Seconds to commit `writes` into the database at `url` in the writer's batches.
async fn commit_all(url: &str, writes: &[Write]) -> f64 {
    let store = PgStore::new(url, 1).expect("pool");
    let t = Instant::now();
    for batch in writes.chunks(BATCH) {
        store.apply(batch).await.expect("apply");
    }
    t.elapsed().as_secs_f64()
}

fn is_step_or_usage(w: &Write) -> bool {
    matches!(
        w,
        Write::Step(_) | Write::StepsInterrupted { .. } | Write::Usage(_)
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cluster = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL: run through scripts/with-test-postgres.sh --durable (make bench)");
    let mb: usize = std::env::var("INGEST_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let t0 = Timestamp(1_793_523_600_000);
    let mut writer = SessionWriter::new(700, t0);
    let (bytes, _) = transcript::big(&mut writer, mb << 20);

    let mut replayer = Replayer::new(CLAUDE_DIR);
    replayer.record_writes();
    let core_start = Instant::now();
    for chunk in bytes.chunks(READ) {
        replayer.step(
            t0,
            Step::Append {
                path: writer.path(),
                data: chunk.to_vec(),
            },
        );
    }
    let core_secs = core_start.elapsed().as_secs_f64();
    let all = replayer.take_writes();
    let turns = all.iter().filter(|w| matches!(w, Write::Turn(_))).count();
    let plain: Vec<Write> = all
        .iter()
        .filter(|w| !is_step_or_usage(w))
        .cloned()
        .collect();
    println!(
        "{:.0} MB transcript: {turns} turns, {} writes ({} of them steps and usage); the core took {core_secs:.2} s",
        bytes.len() as f64 / (1 << 20) as f64,
        all.len(),
        all.len() - plain.len()
    );

    let with_url = fresh_database(&cluster, &database_name("ingest_with")).await;
    let without_url = fresh_database(&cluster, &database_name("ingest_without")).await;
    // The variant without steps first: any warming of the cluster favours the one with them
    // less, not more.
    let without = commit_all(&without_url, &plain).await;
    let with = commit_all(&with_url, &all).await;
    let rate = |store_secs: f64| turns as f64 / (core_secs + store_secs);
    let (r_with, r_without) = (rate(with), rate(without));
    println!(
        "{:<52} {:>10} {:>12}",
        "ingest (core + durable commits)", "seconds", "turns/s"
    );
    println!(
        "{:<52} {:>10.2} {:>12.0}",
        "without steps and usage (the store before them)",
        core_secs + without,
        r_without
    );
    println!(
        "{:<52} {:>10.2} {:>12.0}",
        "with steps and usage stored",
        core_secs + with,
        r_with
    );
    let ratio = r_with / r_without;
    table::row(
        "ingest with steps and usage stored",
        &format!("{r_with:.0} turns/s = {ratio:.2}× without them ({r_without:.0} turns/s)"),
        "≥ 0.7×",
        Some(ratio >= 0.7),
    );
}
