//! Search for words many turns hold (`shell/src/server/pgstore/search_dense.rs`), on real
//! PostgreSQL: once the statistics call a word common, its newest matches are found by a walk
//! back from the newest turn (and step); words each common but rarely together make the walk
//! give up within its bound, and the GIN index still finds every one of them. Which way a
//! search went is read from PostgreSQL's index statistics: a walk fetches the turns' vectors
//! by id (`turn_words_pkey`) or reads the steps by time (`steps_started`); the GIN indexes
//! (`turn_words_search`, `steps_summary_search`) are not read when the walk is taken and
//! finds enough.

mod common;
use common::*;
use headspace::server::pgstore::PgStore;
use headspace::server::search::{SearchHit, SearchQuery};
use std::time::Duration;

/// 12,000 indexed turns of two agents (more than a walk passes): every one says "walrus",
/// even ones "kazoo", odd ones "banjo", and only turns 5, 7 and 9 (the oldest) "kazoo" and
/// "banjo" together. A step for every 2 turns ("cargo build …"), three of the oldest
/// "cargo zither". Analyzed, as autovacuum leaves a table that grew.
fn database(name: &str) -> Option<String> {
    let db = migrated_db(name)?;
    psql(
        &db,
        "INSERT INTO agents (id, session_id, project, cwd, ended, last_seen_at)
             SELECT a, 's' || a, 'p', '/p', false, now() FROM generate_series(1, 2) a;
         INSERT INTO tasks (id, agent_id, state, transcript_state, started_at, state_since)
             SELECT a, a, 'complete', 'complete', now(), now() FROM generate_series(1, 2) a;
         INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, source)
         SELECT g, 1 + g % 2, 1 + g % 2, 'agent', 'progress',
                'the walrus plays the ' || CASE WHEN g IN (5, 7, 9) THEN 'kazoo and the banjo'
                                                 WHEN g % 2 = 0 THEN 'kazoo' ELSE 'banjo' END || ' ' || md5(g::text),
                timestamptz '2026-01-01' + g * interval '1 second', 'jsonl', 'transcript'
         FROM generate_series(1, 12000) g;
         INSERT INTO turn_words (turn_id, words, text)
             SELECT id, to_tsvector('english'::regconfig, left(text, 100000)), text FROM turns;
         DELETE FROM turn_words_pending;
         INSERT INTO steps (agent_id, tool_use_id, tool, summary, outcome, started_at)
         SELECT 1 + (2 * g) % 2, 'toolu_' || g, 'Bash',
                CASE WHEN g IN (3, 4, 5) THEN 'cargo zither ' ELSE 'cargo build ' END || md5(g::text), 'ok',
                timestamptz '2026-01-01' + (2 * g) * interval '1 second'
         FROM generate_series(1, 6000) g;
         ANALYZE turns, turn_words, steps;",
    );
    Some(db)
}

/// Index scans, as PostgreSQL's statistics count them (a bitmap scan counts once, a nested
/// loop's inner scan once per outer row).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scans {
    /// The turns' full-text GIN index.
    turn_words_search: i64,
    /// The turns' vectors by id: how a walk fetches each turn's vector.
    turn_words_pkey: i64,
    /// The steps' full-text GIN index.
    steps_summary_search: i64,
    /// The steps by time: how a walk reads them, newest first.
    steps_started: i64,
    /// Every index of the database.
    all: i64,
}

fn scans(db: &str) -> Scans {
    let out = psql(
        db,
        "SELECT coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'turn_words_search'), 0) || ' ' ||
                coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'turn_words_pkey'), 0) || ' ' ||
                coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'steps_summary_search'), 0) || ' ' ||
                coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'steps_started'), 0) || ' ' ||
                coalesce(sum(idx_scan), 0)
         FROM pg_stat_user_indexes",
    );
    let n: Vec<i64> = out.split_whitespace().map(|v| v.parse().unwrap()).collect();
    Scans {
        turn_words_search: n[0],
        turn_words_pkey: n[1],
        steps_summary_search: n[2],
        steps_started: n[3],
        all: n[4],
    }
}

/// Runs `query` on a pool of its own, closed after it (a server process writes its
/// statistics when it exits), and returns its hits and the index scans it made: the
/// statistics read once they moved and then held still. Every search of this test goes
/// through here, so no other connection's statistics arrive late in another's count.
fn observed(rt: &tokio::runtime::Runtime, db: &str, query: SearchQuery) -> (Vec<SearchHit>, Scans) {
    let before = scans(db);
    let hits = rt.block_on(async {
        let pg = PgStore::new(db, 1).unwrap();
        pg.search(&query).await.unwrap()
    });
    let mut last = before;
    let after = wait_for(Duration::from_secs(20), || {
        std::thread::sleep(Duration::from_millis(200));
        let now = scans(db);
        let settled = now.all > before.all && now == last;
        last = now;
        settled.then_some(now)
    })
    .expect("the search's index scans reach the statistics");
    let used = Scans {
        turn_words_search: after.turn_words_search - before.turn_words_search,
        turn_words_pkey: after.turn_words_pkey - before.turn_words_pkey,
        steps_summary_search: after.steps_summary_search - before.steps_summary_search,
        steps_started: after.steps_started - before.steps_started,
        all: after.all - before.all,
    };
    (hits, used)
}

#[test]
fn common_words_are_walked_for_and_rare_pairs_of_common_words_still_all_found() {
    let Some(db) = database("search_dense") else {
        return;
    };
    let rt = runtime();
    // "walruses" is no substring of any turn: full text only. Every turn matches; the
    // newest ones come first (equal ranks, newer first), found by the walk, never by the
    // GIN index.
    let (hits, walked) = observed(&rt, &db, SearchQuery::words("walruses"));
    assert_eq!(hits.len(), 20, "{hits:?}");
    let ids: Vec<u64> = hits.iter().map(|h| h.turn_id).collect();
    assert_eq!(ids, (11_981..=12_000).rev().collect::<Vec<u64>>());
    assert!(hits.iter().all(|h| !h.exact && h.step.is_none()));
    // The walk fetched vectors by id, and stopped long before reading all 12,000.
    assert!(
        walked.turn_words_pkey > 0 && walked.turn_words_pkey < 6_000,
        "the walk was taken and stopped at its candidates: {walked:?}"
    );
    assert_eq!(walked.turn_words_search, 0, "{walked:?}");
    // Filters hold on the walk: agent 2 has the odd turns.
    let mut by_agent = SearchQuery::words("walruses");
    by_agent.agent = Some(2);
    let (hits, _) = observed(&rt, &db, by_agent);
    assert_eq!(hits.len(), 20);
    assert!(hits.iter().all(|h| h.agent_id == 2 && h.turn_id % 2 == 1));
    assert_eq!(hits[0].turn_id, 11_999);

    // Two words each in half the turns, together only in the three oldest: the walk is
    // taken and gives up after its bound (it passes far more turns than the walk above, and
    // none of the three), and the statement after it finds all three (on a table this
    // small PostgreSQL may read `turn_words` whole rather than its GIN index).
    let (hits, gave_up) = observed(&rt, &db, SearchQuery::words("kazoos banjos"));
    let mut ids: Vec<u64> = hits.iter().map(|h| h.turn_id).collect();
    ids.sort();
    assert_eq!(ids, vec![5, 7, 9], "{hits:?}");
    assert!(
        gave_up.turn_words_pkey > walked.turn_words_pkey,
        "the walk was taken, and went further: {gave_up:?} {walked:?}"
    );

    // Steps: a common word walked for, found at its turn; a rare one by its index.
    let (hits, walked) = observed(&rt, &db, SearchQuery::words("builds"));
    assert_eq!(hits.len(), 20, "{hits:?}");
    assert!(hits.iter().all(|h| h.step.is_some() && !h.exact));
    assert_eq!(hits[0].turn_id, 12_000);
    assert!(walked.steps_started > 0, "the walk was taken: {walked:?}");
    assert_eq!(walked.steps_summary_search, 0, "{walked:?}");
    let (hits, indexed) = observed(&rt, &db, SearchQuery::words("zithers"));
    let mut ids: Vec<u64> = hits.iter().map(|h| h.turn_id).collect();
    ids.sort();
    assert_eq!(ids, vec![6, 8, 10], "{hits:?}");
    assert!(indexed.steps_summary_search > 0, "{indexed:?}");
    let mut by_actor = SearchQuery::words("zithers");
    by_actor.actor = Some("agent".into());
    assert_eq!(observed(&rt, &db, by_actor.clone()).0.len(), 3);
    by_actor.actor = Some("user".into());
    assert!(observed(&rt, &db, by_actor).0.is_empty());
}
