//! `make bench` (search part): search latency over 1,000,000 turns, side by side with a
//! plain `ILIKE '%…%'` scan of the same table (no index: what a search without
//! `migrations/0008_search.sql` does). The full-text vectors are in `turn_words`
//! (`migrations/0010_search_off_commit.sql`), all but the newest [`PENDING`] turns': those
//! wait for the background indexer, so every search also parses them on the fly, as it does
//! between a commit and the indexer's next pass.
//!
//! The rows are made inside PostgreSQL (`INSERT … SELECT generate_series`): 200 agents,
//! turns of prose, file paths, a random hex id each, and ten planted needles (an error
//! string with punctuation, a path, an identifier), and a tool step for every 4 turns (a
//! command, a path or a pattern; a planted command every 100,000). Each query runs through
//! [`PgStore::search`] as the API runs it (ranking, snippets, highlights included).
//!
//! Needs DATABASE_URL (run through scripts/with-test-postgres.sh, as `make bench` does).
//! `SEARCH_BENCH_TURNS` changes the table's size. `SEARCH_BENCH_DB=name` times the searches
//! on a database an earlier run filled and kept (`SEARCH_BENCH_KEEP=1`), for `EXPLAIN` and
//! for trying a change without filling the table again.

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::pg::{connect, database_name, fresh_database};
use bench_support::timing::{ms, percentile};

use headspace::server::migrate;
use headspace::server::pgstore::PgStore;
use headspace::server::search::SearchQuery;
use std::time::{Duration, Instant};

/// Searches timed per selective query, and per common one.
const SEARCH_RUNS: usize = 200;
const COMMON_RUNS: usize = 30;
/// Unindexed scans timed per query (each reads the whole table).
const SCAN_RUNS: usize = 5;
/// The newest turns left for the background indexer (its queue rarely holds more).
const PENDING: u64 = 100;

/// The turns: prose from a few phrases, a path, a random hex id, and a needle every 100,000.
const FILL: &str = "
INSERT INTO agents (id, session_id, project, cwd, ended, last_seen_at)
SELECT a, 'bench-' || a, 'project' || (a % 12), '/home/u/project' || (a % 12), a % 3 = 0, now()
FROM generate_series(1, 200) a;
INSERT INTO tasks (id, agent_id, state, transcript_state, started_at, state_since)
SELECT a, a, 'complete', 'complete', now(), now() FROM generate_series(1, 200) a;
INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, source)
SELECT g, 1 + g % 200, 1 + g % 200,
       CASE WHEN g % 5 = 0 THEN 'user' ELSE 'agent' END,
       CASE WHEN g % 5 = 0 THEN 'command' ELSE 'progress' END,
       CASE WHEN g % 100000 = 7
            THEN 'cargo test failed: error[E0599]: no method named `frobnicate_widget` found for struct `Engine` in src/engine/wal_replay.rs:88:14'
            ELSE (ARRAY['Reading the file', 'Running the test suite again after', 'The build passes now with',
                        'Looking at the failing assertion in', 'Editing the parser to handle', 'Checking the migration for',
                        'Refactoring the handler of', 'Adding a unit test for'])[1 + g % 8]
                 || ' ' || (ARRAY['src/lib.rs', 'src/main.rs', 'core/src/engine/mod.rs', 'shell/src/server/http/agents.rs',
                                  'static/app.js', 'migrations/0001_initial.sql', 'Cargo.toml', 'README.md'])[1 + (g / 8) % 8]
                 || ' (' || md5(g::text) || '): '
                 || (ARRAY['it compiles', 'two tests fail with a timeout', 'the lock is held too long', 'the index is not used',
                           'a borrow outlives its owner', 'the snapshot is stale', 'nothing changed',
                           'the query plan looks right'])[1 + (g / 64) % 8] || '.'
       END,
       timestamptz '2025-01-01' + g * interval '20 seconds', 'jsonl', 'transcript'
FROM generate_series(1, $TURNS) g;";

/// Tool steps, one for every 4 turns (250,000 at full size), as the writer stores them: a
/// command, a file path or a pattern each, started just after their turn, and one planted
/// needle (a command only a step holds). `SEARCH_BENCH_STEPS=0` leaves them out.
const FILL_STEPS: &str = "
INSERT INTO steps (agent_id, tool_use_id, task_id, tool, summary, file, outcome, evidence, confirmed, started_at, finished_at)
SELECT 1 + (4 * g) % 200, 'toolu_bench_' || g, 1 + (4 * g) % 200,
       (ARRAY['Bash', 'Edit', 'Read', 'Grep'])[1 + g % 4],
       CASE WHEN g % 100000 = 3 THEN 'cargo test -p quuxfront_needle --release'
            ELSE (ARRAY['cargo test -p headspace --test ', 'src/', 'shell/src/server/', 'grep -rn '])[1 + g % 4]
                 || (ARRAY['search', 'engine.rs', 'pgstore/mod.rs', 'fn main', 'lib.rs', 'turns', 'http/agents.rs', 'TODO'])[1 + (g / 4) % 8]
       END,
       NULL, 'ok', 4, TRUE,
       timestamptz '2025-01-01' + (4 * g) * interval '20 seconds' + interval '5 seconds',
       timestamptz '2025-01-01' + (4 * g) * interval '20 seconds' + interval '9 seconds'
FROM generate_series(1, $TURNS / 4) g;";

/// The bench's queries: (label, query, selective). Selective ones match at most a few
/// hundred turns; common ones a large share of the table.
fn queries() -> Vec<(&'static str, String, bool)> {
    vec![
        (
            "error string with punctuation",
            "error[E0599]: no method named".into(),
            true,
        ),
        ("file path", "src/engine/wal_replay.rs".into(), true),
        ("identifier prefix", "frobnicate_wid".into(), true),
        ("words (full text)", "frobnicate widget engine".into(), true),
        ("hex id fragment", "77732a294f90".into(), true),
        ("quoted phrase", "\"no method named\"".into(), true),
        (
            "common phrase (1 in 8 turns)",
            "two tests fail with a timeout".into(),
            false,
        ),
        ("common path (1 in 8 turns)", "src/lib.rs".into(), false),
        (
            "a command only a step holds",
            "cargo test -p quuxfront_needle".into(),
            true,
        ),
    ]
}

async fn timed<F, Fut>(runs: usize, mut f: F) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        f().await;
        out.push(t.elapsed());
    }
    out.sort();
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cluster = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL: run through scripts/with-test-postgres.sh (make bench)");
    let turns: u64 = std::env::var("SEARCH_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let reuse = std::env::var("SEARCH_BENCH_DB").ok();
    let keep = reuse.is_some() || std::env::var("SEARCH_BENCH_KEEP").is_ok_and(|v| v == "1");
    let db = reuse
        .clone()
        .unwrap_or_else(|| database_name("search_bench"));
    let admin = connect(&cluster).await;
    let url = cluster.replace("dbname=postgres", &format!("dbname={db}"));
    if reuse.is_none() {
        fresh_database(&cluster, &db).await;
        fill(&url, turns).await;
    } else {
        migrate::run(&url).await.expect("migrations");
        println!("search bench: the turns of database {db}, filled by an earlier run");
    }
    let store = PgStore::new(&url, 2).expect("pool");
    // The baseline: the same table, no index allowed (a plain scan, parallel as PostgreSQL
    // chooses), the newest 20 matches as the search returns.
    let scan = connect(&url).await;
    scan.batch_execute("SET enable_bitmapscan = off; SET enable_indexscan = off")
        .await
        .unwrap();
    println!(
        "{:<32} {:>8} {:>9} {:>9} {:>11} {:>11} {:>9}",
        "query", "hits", "search", "p99", "ILIKE scan", "p99", "faster"
    );
    let (mut selective_p50, mut selective_p99, mut scan_p50) = (Vec::new(), Vec::new(), Vec::new());
    for (label, q, selective) in queries() {
        let query = SearchQuery::words(&q);
        let hits = store.search(&query).await.expect("search").len();
        let runs = if selective { SEARCH_RUNS } else { COMMON_RUNS };
        let searched = timed(runs, || async {
            store.search(&query).await.expect("search");
        })
        .await;
        let pattern = headspace::server::search::like_pattern(q.trim_matches('"'));
        let scanned = timed(SCAN_RUNS, || async {
            scan.query(
                "SELECT id FROM turns WHERE text ILIKE $1 ORDER BY \"timestamp\" DESC LIMIT 20",
                &[&pattern],
            )
            .await
            .expect("scan");
        })
        .await;
        let (p50, p99) = (percentile(&searched, 0.5), percentile(&searched, 0.99));
        let (s50, s99) = (percentile(&scanned, 0.5), percentile(&scanned, 0.99));
        println!(
            "{:<32} {:>8} {:>7.2}ms {:>7.2}ms {:>9.1}ms {:>9.1}ms {:>8.0}×",
            label,
            hits,
            ms(p50),
            ms(p99),
            ms(s50),
            ms(s99),
            ms(s50) / ms(p50)
        );
        if selective {
            selective_p50.extend_from_slice(&searched);
            selective_p99.push(p99);
            scan_p50.push(s50);
        }
    }
    selective_p50.sort();
    let all50 = percentile(&selective_p50, 0.5);
    let all99 = percentile(&selective_p50, 0.99);
    scan_p50.sort();
    let scan50 = percentile(&scan_p50, 0.5);
    println!(
        "selective queries together: search p50 {:.2} ms, p99 {:.2} ms; ILIKE scan p50 {:.0} ms → {:.0}× faster at p50 (goal ≥ 50×, p99 ≤ 50 ms)",
        ms(all50),
        ms(all99),
        ms(scan50),
        ms(scan50) / ms(all50)
    );
    drop(store);
    drop(scan);
    if keep {
        println!("search bench: database {db} kept");
        return;
    }
    let _ = admin
        .simple_query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .await;
}

/// Fills the fresh database at `url` with `turns` turns, indexed as after a restore, all but
/// the newest [`PENDING`] in `turn_words`.
async fn fill(url: &str, turns: u64) {
    let c = connect(url).await;

    // Indexes are built after the rows, as a restore would: faster than row by row.
    let t = Instant::now();
    c.batch_execute(
        "DROP INDEX turn_words_search; DROP INDEX turn_words_text_trgm; DROP INDEX turns_time;",
    )
    .await
    .unwrap();
    c.batch_execute(&FILL.replace("$TURNS", &turns.to_string()))
        .await
        .expect("fill");
    if std::env::var("SEARCH_BENCH_STEPS").map_or(true, |v| v != "0") {
        c.batch_execute(&FILL_STEPS.replace("$TURNS", &turns.to_string()))
            .await
            .expect("fill steps");
    }
    let filled = t.elapsed();
    let t = Instant::now();
    c.batch_execute(&format!(
        "SET maintenance_work_mem = '512MB';
         INSERT INTO turn_words (turn_id, words, text)
             SELECT id, to_tsvector('english'::regconfig, left(text, 100000)), text FROM turns
             WHERE id <= (SELECT max(id) FROM turns) - {PENDING};
         DELETE FROM turn_words_pending WHERE turn_id <= (SELECT max(id) FROM turns) - {PENDING};
         CREATE INDEX turn_words_search ON turn_words USING gin (words);
         CREATE INDEX turn_words_text_trgm ON turn_words USING gin (text gin_trgm_ops);
         CREATE INDEX turns_time ON turns (\"timestamp\", id);"
    ))
    .await
    .expect("indexes");
    // The queue held every turn for a moment (the insert's trigger): as small as the
    // indexer and autovacuum keep it.
    for statement in [
        "VACUUM FULL turn_words_pending",
        "VACUUM ANALYZE turns, turn_words, turn_words_pending, steps",
    ] {
        c.batch_execute(statement).await.expect("vacuum");
    }
    let indexed = t.elapsed();
    let size: String = c
        .query_one(
            "SELECT pg_size_pretty(pg_table_size('turns')) || ' table, '
                 || pg_size_pretty(pg_table_size('turn_words')) || ' vectors, '
                 || pg_size_pretty(pg_relation_size('turn_words_search')) || ' full-text index, '
                 || pg_size_pretty(pg_relation_size('turn_words_text_trgm')) || ' trigram index'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    println!(
        "search bench: {turns} turns made in {:.1} s, indexed in {:.1} s (the newest {PENDING} left to the indexer); {size}",
        filled.as_secs_f64(),
        indexed.as_secs_f64()
    );
}
