//! `make bench` (turn inserts): what full-text search costs the writer. The same turns are
//! inserted, 100 per statement and one commit each as the writer batches them, into two
//! tables on one durable cluster:
//!
//! * **generated column** (migration 0008): a table shaped like `turns` was, with its
//!   `to_tsvector` column computed in the insert and its GIN index, and the trigram index
//!   on its text;
//! * **side table** (migrations 0010 and 0016): `turns` as it is now, whose insert only
//!   queues the ids (`turn_words_pending`), the vectors and the text under the trigram index
//!   written later by the background indexer.
//!
//! A third table, `turns` without the queue trigger and the foreign keys, shows what is left
//! of the writer's cost. Batches alternate between the tables so all see the same machine.
//! The indexer's own pass over the same turns is timed after, to show the work moved off the
//! commit path, not away.
//!
//! Needs DATABASE_URL (scripts/with-test-postgres.sh --durable, as `make bench` does).
//! `INSERT_BENCH_TURNS` changes how many turns per size (default 20,000).

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::pg::{connect, database_name, fresh_database};
use bench_support::table;
use bench_support::timing::{ms, percentile};

use headspace::server::pgstore::search_index::INDEX_BATCH;
use headspace::server::pgstore::PgStore;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// Turns per statement and commit.
const BATCH: usize = 100;

/// The old shape: today's table and indexes (copied), plus 0008's generated column.
const OLD_TABLE: &str = "
CREATE TABLE turns_generated (LIKE turns INCLUDING DEFAULTS INCLUDING INDEXES);
ALTER TABLE turns_generated ADD COLUMN text_search tsvector
    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, left(text, 100000))) STORED;
CREATE INDEX turns_generated_text_search ON turns_generated USING gin (text_search);
CREATE INDEX turns_generated_text_trgm ON turns_generated USING gin (text gin_trgm_ops);
CREATE TABLE turns_plain (LIKE turns INCLUDING DEFAULTS INCLUDING INDEXES);
DO $$ DECLARE i text; BEGIN
  FOR i IN SELECT indexname FROM pg_indexes WHERE tablename = 'turns_plain' AND indexdef LIKE '%USING gin%' LOOP
    EXECUTE 'DROP INDEX ' || quote_ident(i);
  END LOOP;
END $$;";

/// The writer's statement shape (`pgstore::apply_batch`), for either table.
fn insert(table: &str) -> String {
    format!(
        "INSERT INTO {table} (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, source)
         SELECT u.id, 1, 1, 'agent', 'progress', u.text, timestamptz '2026-01-01' + u.id * interval '1 second', 'jsonl', 'transcript'
         FROM UNNEST($1::bigint[], $2::text[]) AS u(id, text)"
    )
}

/// Prose-like text of about `bytes` bytes: sentences of words, paths and numbers drawn by a
/// fixed generator, different for every turn.
fn text(seed: u64, bytes: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "test",
        "fails",
        "because",
        "parser",
        "handles",
        "trailing",
        "commas",
        "in",
        "src/lib.rs",
        "build",
        "passes",
        "now",
        "with",
        "index",
        "lock",
        "held",
        "too",
        "long",
        "snapshot",
        "stale",
        "query",
        "plan",
        "looks",
        "right",
        "refactoring",
        "handler",
        "migration",
        "checking",
        "error[E0308]",
        "mismatched",
        "types",
        "expected",
        "found",
        "cargo",
        "clippy",
        "warnings",
        "function",
        "returns",
        "value",
        "borrow",
        "outlives",
    ];
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::with_capacity(bytes + 32);
    while out.len() < bytes {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let w = WORDS[(state >> 33) as usize % WORDS.len()];
        out.push_str(w);
        out.push(if (state >> 20).is_multiple_of(11) {
            '.'
        } else {
            ' '
        });
        if (state >> 40).is_multiple_of(37) {
            out.push_str(&format!("{} ", state % 100_000));
        }
    }
    out
}

/// Times one batch insert and its commit.
async fn timed_batch(c: &mut Client, sql: &str, ids: &[i64], texts: &[String]) -> Duration {
    let t = Instant::now();
    let tx = c.transaction().await.expect("begin");
    tx.execute(sql, &[&ids, &texts]).await.expect("insert");
    tx.commit().await.expect("commit");
    t.elapsed()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cluster = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL: run through scripts/with-test-postgres.sh --durable (make bench)");
    let per_size: usize = std::env::var("INSERT_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let db = database_name("insert_bench");
    let url = fresh_database(&cluster, &db).await;
    let admin = connect(&cluster).await;
    let mut c = connect(&url).await;
    c.batch_execute(OLD_TABLE).await.expect("old table");
    c.batch_execute(
        "INSERT INTO agents (id, session_id, project, cwd, ended, last_seen_at) VALUES (1, 'bench', 'p', '/p', false, now());
         INSERT INTO tasks (id, agent_id, state, transcript_state, started_at, state_since) VALUES (1, 1, 'complete', 'complete', now(), now());",
    )
    .await
    .expect("agent");
    let store = PgStore::new(&url, 1).expect("pool");
    let (old_sql, new_sql, plain_sql) = (
        insert("turns_generated"),
        insert("turns"),
        insert("turns_plain"),
    );
    println!(
        "turn inserts: {per_size} turns per size, {BATCH} per statement and commit, durable cluster"
    );
    println!(
        "{:<10} {:>22} {:>22} {:>9} {:>24} {:>22}",
        "turn size",
        "generated column",
        "side table",
        "faster",
        "indexer, later",
        "no trigger or keys"
    );
    let mut next_id: i64 = 1;
    for kb in [2usize, 6] {
        let (mut old, mut new, mut plain) = (Vec::new(), Vec::new(), Vec::new());
        let mut ids_this_size = 0;
        for b in 0..per_size.div_ceil(BATCH) {
            let ids: Vec<i64> = (0..BATCH as i64).map(|k| next_id + k).collect();
            next_id += BATCH as i64;
            ids_this_size += ids.len();
            let texts: Vec<String> = ids.iter().map(|&i| text(i as u64, kb * 1024)).collect();
            // Alternate which table goes first, so neither always meets a warmer cache.
            if b % 2 == 0 {
                old.push(timed_batch(&mut c, &old_sql, &ids, &texts).await);
                new.push(timed_batch(&mut c, &new_sql, &ids, &texts).await);
            } else {
                new.push(timed_batch(&mut c, &new_sql, &ids, &texts).await);
                old.push(timed_batch(&mut c, &old_sql, &ids, &texts).await);
            }
            plain.push(timed_batch(&mut c, &plain_sql, &ids, &texts).await);
        }
        let per_turn = |d: &[Duration]| -> f64 {
            d.iter().map(|x| x.as_secs_f64()).sum::<f64>() * 1e6 / ids_this_size as f64
        };
        let (old_us, new_us, plain_us) = (per_turn(&old), per_turn(&new), per_turn(&plain));
        old.sort();
        new.sort();
        // The background indexer's pass over the same turns (its own transactions).
        let t = Instant::now();
        let mut indexed = 0;
        loop {
            let n = store.index_pending(INDEX_BATCH).await.expect("index");
            if n == 0 {
                break;
            }
            indexed += n;
        }
        let index_us = t.elapsed().as_secs_f64() * 1e6 / indexed.max(1) as f64;
        println!(
            "{:<10} {:>9.0} µs/turn ({:>5.1} ms p50) {:>7.0} µs/turn ({:>5.1} ms p50) {:>8.1}× {:>11.0} µs/turn ({indexed}) {plain_us:>12.0} µs/turn",
            format!("{kb} KB"),
            old_us,
            ms(percentile(&old, 0.5)),
            new_us,
            ms(percentile(&new, 0.5)),
            old_us / new_us,
            index_us,
        );
        table::row(
            &format!("turn insert, {kb} KB text, {BATCH} per commit"),
            &format!(
                "{new_us:.0} µs/turn (generated tsvector column: {old_us:.0} µs/turn, {:.1}× slower); indexed later at {index_us:.0} µs/turn",
                old_us / new_us
            ),
            "full text off the commit path",
            Some(new_us < old_us),
        );
    }
    drop(store);
    drop(c);
    let _ = admin
        .simple_query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .await;
}
