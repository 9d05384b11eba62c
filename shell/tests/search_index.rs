//! Full-text indexing off the commit path (`migrations/0010_search_off_commit.sql`), on real
//! PostgreSQL: a committed turn is found by its words before the background indexer has run
//! and after; a changed text is indexed again; the turns older than the side table are
//! backfilled; a turn is found exactly however long the queue (the trigram side is off the
//! commit path too, `migrations/0016_exact_off_commit.sql`); prune takes the vectors with
//! the turns; and two indexers (two servers on one
//! database) index every turn exactly once while turns keep arriving.

mod common;
use common::*;
use headspace::server::pgstore::search_index::{Backfill, INDEX_BATCH};
use headspace::server::pgstore::PgStore;
use headspace::server::search::SearchQuery;
use headspace_core::model::{TurnRow, TurnSource};
use headspace_core::{Actor, Intent, Timestamp, Write};

/// A database with one agent and task, migrated.
fn database(name: &str) -> Option<String> {
    let db = migrated_db(name)?;
    psql(
        &db,
        "INSERT INTO agents (id, session_id, project, cwd, ended, last_seen_at) VALUES (1, 's1', 'p', '/p', false, now());
         INSERT INTO tasks (id, agent_id, state, transcript_state, started_at, state_since) VALUES (1, 1, 'complete', 'complete', now(), now());",
    );
    Some(db)
}

fn turn(id: u64, text: &str) -> Write {
    let mut t = TurnRow::new(
        1,
        1,
        (Actor::Agent, Intent::Progress),
        text.into(),
        Timestamp(1_767_225_600_000 + id as i64 * 1000),
        TurnSource::Transcript,
    );
    t.id = id;
    Write::Turn(t)
}

#[test]
fn a_turn_is_found_by_its_words_from_its_commit_on_indexed_or_not() {
    let Some(db) = database("index_commit") else {
        return;
    };
    runtime().block_on(async {
        let pg = PgStore::new(&db, 2).unwrap();
        pg.apply(&[turn(1, "The failing tests were flaky on the runner.")])
            .await
            .unwrap();
        // Committed, not indexed: the writer only queued its id.
        assert_eq!(psql(&db, "SELECT count(*) FROM turn_words"), "0");
        assert_eq!(psql(&db, "SELECT turn_id FROM turn_words_pending"), "1");
        // "test fail" is not in the text as such: only full text (stemmed) finds it.
        let before = pg.search(&SearchQuery::words("test fail")).await.unwrap();
        assert_eq!(before.len(), 1, "{before:?}");
        assert_eq!((before[0].turn_id, before[0].exact), (1, false));
        assert!(!before[0].highlights.is_empty(), "{before:?}");

        assert_eq!(pg.index_pending(500).await.unwrap(), 1);
        assert_eq!(psql(&db, "SELECT count(*) FROM turn_words_pending"), "0");
        assert_eq!(psql(&db, "SELECT count(*) FROM turn_words"), "1");
        let after = pg.search(&SearchQuery::words("test fail")).await.unwrap();
        assert_eq!(after, before, "the same hit, indexed or not");
        assert_eq!(pg.index_pending(500).await.unwrap(), 0);

        // A changed text is queued again and indexed again.
        psql(
            &db,
            "UPDATE turns SET text = 'Deploying the canary now.' WHERE id = 1",
        );
        assert_eq!(psql(&db, "SELECT turn_id FROM turn_words_pending"), "1");
        assert_eq!(
            pg.search(&SearchQuery::words("canaries"))
                .await
                .unwrap()
                .len(),
            1
        );
        assert_eq!(pg.index_pending(500).await.unwrap(), 1);
        assert_eq!(
            pg.search(&SearchQuery::words("canaries"))
                .await
                .unwrap()
                .len(),
            1
        );
        assert!(pg
            .search(&SearchQuery::words("test fail"))
            .await
            .unwrap()
            .is_empty());
        // Other updates of a turn (a claim, a merge) do not queue it.
        psql(
            &db,
            "UPDATE turns SET entry_uuid = 'u1', hook_key = 'k' WHERE id = 1",
        );
        assert_eq!(psql(&db, "SELECT count(*) FROM turn_words_pending"), "0");

        // Deleting turns (prune) deletes their vectors.
        psql(&db, "DELETE FROM turns WHERE id = 1");
        assert_eq!(psql(&db, "SELECT count(*) FROM turn_words"), "0");
    });
}

#[test]
fn a_turn_is_found_exactly_from_its_commit_on_however_long_the_queue() {
    let Some(db) = database("index_exact") else {
        return;
    };
    runtime().block_on(async {
        let pg = PgStore::new(&db, 2).unwrap();
        // The writer's insert extracts no trigrams (0016): no GIN index is left on `turns`.
        assert_eq!(
            psql(
                &db,
                "SELECT count(*) FROM pg_indexes WHERE tablename = 'turns' AND indexdef LIKE '%USING gin%'"
            ),
            "0"
        );
        // The needle is the oldest of 600 queued turns: beyond the 500 the full-text side
        // parses on the fly, so only the exact side's read of the whole queue finds it.
        let mut turns = vec![turn(1, "error[E0308]: mismatched types in src/lib.rs")];
        turns.extend((2..=600).map(|i| turn(i, &format!("routine turn {i}"))));
        pg.apply(&turns).await.unwrap();
        let exact = SearchQuery::words("[e0308]: mismatched");
        let queued = pg.search(&exact).await.unwrap();
        assert_eq!(queued.len(), 1, "{queued:?}");
        assert_eq!((queued[0].turn_id, queued[0].exact), (1, true));

        while pg.index_pending(INDEX_BATCH).await.unwrap() > 0 {}
        assert_eq!(
            psql(&db, "SELECT count(*) FROM turn_words w JOIN turns t ON t.id = w.turn_id WHERE w.text = t.text"),
            "600",
            "every indexed turn's text is beside its vector"
        );
        let indexed = pg.search(&exact).await.unwrap();
        assert_eq!(indexed, queued, "the same hit, indexed or not");
        // Found exactly through the side copy: with it emptied, by its words only.
        psql(&db, "UPDATE turn_words SET text = ''");
        let words_only = pg.search(&exact).await.unwrap();
        let found: Vec<(u64, bool)> = words_only.iter().map(|h| (h.turn_id, h.exact)).collect();
        assert_eq!(found, vec![(1, false)], "{words_only:?}");
    });
}

#[test]
fn turns_older_than_the_side_table_are_backfilled_newest_first() {
    let Some(db) = database("index_backfill") else {
        return;
    };
    runtime().block_on(async {
        let pg = PgStore::new(&db, 2).unwrap();
        let texts: Vec<Write> = (1..=7)
            .map(|i| turn(i, &format!("old turn number {i} about zebras")))
            .collect();
        pg.apply(&texts).await.unwrap();
        // As a database migrated from 0008 looks: turns, no vectors, a backfill to do.
        psql(
            &db,
            "DELETE FROM turn_words_pending;
             INSERT INTO turn_words_backfill (below, total) VALUES (8, 7);",
        );
        // Until backfilled, an old turn is found by its exact text only.
        let hits = pg.search(&SearchQuery::words("zebra")).await.unwrap();
        assert!(hits.iter().all(|h| h.exact) && hits.len() == 7, "{hits:?}");
        assert!(pg
            .search(&SearchQuery::words("zebras turn"))
            .await
            .unwrap()
            .is_empty());
        let mut steps = Vec::new();
        loop {
            match pg.backfill_words(3).await.unwrap() {
                Backfill::Indexed {
                    indexed,
                    done,
                    total,
                } => steps.push((indexed, done, total)),
                Backfill::Finished => break,
                Backfill::Busy => panic!("nobody else holds the backfill"),
            }
        }
        assert_eq!(steps, vec![(3, 3, 7), (3, 6, 7), (1, 7, 7)]);
        assert_eq!(psql(&db, "SELECT count(*) FROM turn_words_backfill"), "0");
        assert_eq!(pg.backfill_words(3).await.unwrap(), Backfill::Finished);
        assert_eq!(
            pg.search(&SearchQuery::words("zebras turn"))
                .await
                .unwrap()
                .len(),
            7
        );
    });
}

#[test]
fn two_indexers_on_one_database_index_every_turn_exactly_once() {
    let Some(db) = database("index_two") else {
        return;
    };
    const BATCHES: u64 = 30;
    const PER_BATCH: u64 = 100;
    const OLD: u64 = 1_000;
    runtime().block_on(async {
        let writer = PgStore::new(&db, 1).unwrap();
        // Turns from before the side table, for the backfill.
        let old: Vec<Write> = (1..=OLD)
            .map(|i| turn(i, &format!("older turn {i}: the build of crate{i} passes")))
            .collect();
        writer.apply(&old).await.unwrap();
        psql(
            &db,
            &format!(
                "DELETE FROM turn_words_pending;
                 INSERT INTO turn_words_backfill (below, total) VALUES ({}, {OLD});",
                OLD + 1
            ),
        );
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let indexers: Vec<_> = (0..2)
            .map(|_| {
                let pg = PgStore::new(&db, 1).unwrap();
                let done = done.clone();
                tokio::spawn(async move {
                    let (mut queued, mut backfilled) = (0u64, 0i64);
                    loop {
                        let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                        let n = pg.index_pending(37).await.unwrap();
                        queued += n;
                        let b = pg.backfill_words(41).await.unwrap();
                        if let Backfill::Indexed { indexed, .. } = b {
                            backfilled += indexed;
                        }
                        if finished && n == 0 && b == Backfill::Finished {
                            return (queued, backfilled);
                        }
                    }
                })
            })
            .collect();
        // New turns keep arriving while both index, their ids in two interleaved ranges as
        // two servers' id spaces would commit them.
        for b in 0..BATCHES {
            let base = if b % 2 == 0 { 100_000 } else { 200_000 };
            let rows: Vec<Write> = (0..PER_BATCH)
                .map(|k| {
                    let id = base + b * PER_BATCH + k;
                    turn(
                        id,
                        &format!("new turn {id}: deploying service{id} to staging"),
                    )
                })
                .collect();
            writer.apply(&rows).await.unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut queued = 0;
        let mut backfilled = 0;
        for i in indexers {
            let (q, b) = i.await.unwrap();
            queued += q;
            backfilled += b;
        }
        assert_eq!(queued, BATCHES * PER_BATCH, "every new turn taken once");
        assert_eq!(backfilled as u64, OLD, "every old turn backfilled once");
        let total = OLD + BATCHES * PER_BATCH;
        assert_eq!(
            psql(&db, "SELECT count(*) FROM turn_words"),
            total.to_string()
        );
        assert_eq!(psql(&db, "SELECT count(*) FROM turn_words_pending"), "0");
        // No gaps: every turn's vector is the one of its text.
        assert_eq!(
            psql(
                &db,
                "SELECT count(*) FROM turns t JOIN turn_words w ON w.turn_id = t.id
                 WHERE w.words = to_tsvector('english', left(t.text, 100000))"
            ),
            total.to_string()
        );
        let hits = writer
            .search(&SearchQuery::words("deployed service200150"))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
    });
}

#[test]
fn a_search_while_the_indexer_moves_turns_finds_each_turn_once_and_exactly() {
    let Some(db) = database("index_during_search") else {
        return;
    };
    runtime().block_on(async {
        let pg = PgStore::new(&db, 4).unwrap();
        let turns: Vec<Write> = (1..=100)
            .map(|i| turn(i, &format!("needle number {i}")))
            .collect();
        pg.apply(&turns).await.unwrap();
        // The indexer moves one turn per commit, from the queue to `turn_words`, while
        // searches run: each must see all 100, each exactly, whichever side holds it then.
        let indexer = {
            let pg = pg.clone();
            tokio::spawn(async move { while pg.index_pending(1).await.unwrap() > 0 {} })
        };
        let mut searches = 0;
        while !indexer.is_finished() || searches < 50 {
            let mut query = SearchQuery::words("needle number");
            query.limit = 100;
            let hits = pg.search(&query).await.unwrap();
            let mut found: Vec<(u64, bool)> = hits.iter().map(|h| (h.turn_id, h.exact)).collect();
            found.sort();
            assert_eq!(
                found,
                (1..=100).map(|i| (i, true)).collect::<Vec<_>>(),
                "search {searches} while indexing"
            );
            searches += 1;
        }
        indexer.await.unwrap();
    });
}
