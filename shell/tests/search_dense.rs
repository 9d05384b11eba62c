//! Search for words many turns hold (`shell/src/server/pgstore/search_dense.rs`), on real
//! PostgreSQL: once the statistics call a word common, its newest matches are found by a walk
//! back from the newest turn (and step); words each common but rarely together make the walk
//! give up within its bound, and the GIN index still finds every one of them.

mod common;
use common::*;
use headspace::server::pgstore::PgStore;
use headspace::server::search::SearchQuery;

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
         INSERT INTO turn_words (turn_id, words)
             SELECT id, to_tsvector('english'::regconfig, left(text, 100000)) FROM turns;
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

#[test]
fn common_words_are_walked_for_and_rare_pairs_of_common_words_still_all_found() {
    let Some(db) = database("search_dense") else {
        return;
    };
    runtime().block_on(async {
        let pg = PgStore::new(&db, 2).unwrap();
        // "walruses" is no substring of any turn: full text only. Every turn matches; the
        // newest ones come first (equal ranks, newer first).
        let hits = pg.search(&SearchQuery::words("walruses")).await.unwrap();
        assert_eq!(hits.len(), 20, "{hits:?}");
        let ids: Vec<u64> = hits.iter().map(|h| h.turn_id).collect();
        assert_eq!(ids, (11_981..=12_000).rev().collect::<Vec<u64>>());
        assert!(hits.iter().all(|h| !h.exact && h.step.is_none()));
        // Filters hold on the walk: agent 2 has the odd turns.
        let mut by_agent = SearchQuery::words("walruses");
        by_agent.agent = Some(2);
        let hits = pg.search(&by_agent).await.unwrap();
        assert_eq!(hits.len(), 20);
        assert!(hits.iter().all(|h| h.agent_id == 2 && h.turn_id % 2 == 1));
        assert_eq!(hits[0].turn_id, 11_999);

        // Two words each in half the turns, together only in the three oldest: the walk
        // gives up after its bound, the GIN index finds all three.
        let hits = pg
            .search(&SearchQuery::words("kazoos banjos"))
            .await
            .unwrap();
        let mut ids: Vec<u64> = hits.iter().map(|h| h.turn_id).collect();
        ids.sort();
        assert_eq!(ids, vec![5, 7, 9], "{hits:?}");

        // Steps: a common word walked for, found at its turn; a rare one by its index.
        let hits = pg.search(&SearchQuery::words("builds")).await.unwrap();
        assert_eq!(hits.len(), 20, "{hits:?}");
        assert!(hits.iter().all(|h| h.step.is_some() && !h.exact));
        assert_eq!(hits[0].turn_id, 12_000);
        let hits = pg.search(&SearchQuery::words("zithers")).await.unwrap();
        let mut ids: Vec<u64> = hits.iter().map(|h| h.turn_id).collect();
        ids.sort();
        assert_eq!(ids, vec![6, 8, 10], "{hits:?}");
        let mut by_actor = SearchQuery::words("zithers");
        by_actor.actor = Some("agent".into());
        assert_eq!(pg.search(&by_actor).await.unwrap().len(), 3);
        by_actor.actor = Some("user".into());
        assert!(pg.search(&by_actor).await.unwrap().is_empty());
    });
}
