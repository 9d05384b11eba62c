//! Full-text indexing in the background (`migrations/0010_search_off_commit.sql`): turns are
//! committed with only their id queued in `turn_words_pending`, and this task writes their
//! vectors, and the text the trigram index reads (`migrations/0016_exact_off_commit.sql`),
//! into `turn_words`, off the writer's commit path. Safe with several servers on one
//! database: each batch takes its queue rows `FOR UPDATE SKIP LOCKED` and deletes them in the
//! transaction that writes the vectors, so no turn is indexed by two servers and none leaves
//! the queue unindexed. The turns that predate the migration are indexed the same way, newest
//! first, by whichever server holds the backfill row's lock.

use super::PgStore;
use crate::server::store::StoreError;
use std::time::Duration;
use tracing::{info, warn};

/// The text a turn's vector is made of: the first 100,000 characters (a tsvector is capped
/// at 1 MB, and a turn the database refused to index would be a turn lost). Search parses
/// not-yet-indexed turns with the same expression.
pub(super) const TURN_WORDS: &str = "to_tsvector('english'::regconfig, left(t.text, 100000))";

/// Turns indexed per transaction: a few hundred keep each one short (a 6 KB turn parses in
/// about 1 ms) while amortising the round trip.
pub const INDEX_BATCH: i64 = 500;

/// How long the task waits when there was nothing to index.
const IDLE: Duration = Duration::from_millis(300);

/// How long it waits after a failure (the database is away, or restarting).
const RETRY: Duration = Duration::from_secs(5);

/// Progress of the backfill, logged every this many turns.
const LOG_EVERY: i64 = 100_000;

/// One backfill batch's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backfill {
    /// Indexed a batch of `indexed` turns: `done` of the `total` that predate the side table.
    Indexed {
        /// Turns this batch indexed.
        indexed: i64,
        /// Turns indexed so far.
        done: i64,
        /// Turns there were when the migration ran.
        total: i64,
    },
    /// Another server holds the backfill (or the last batch is being committed).
    Busy,
    /// Nothing left: every turn older than the migration is indexed.
    Finished,
}

impl PgStore {
    /// Indexes up to `batch` queued turns (newest first); returns how many queue rows this
    /// call took. Rows whose turn has gone (pruned) are dropped.
    pub async fn index_pending(&self, batch: i64) -> Result<u64, StoreError> {
        let c = self.pool.get().await?;
        let row = c
            .query_one(
                &format!(
                    "WITH taken AS (
                       DELETE FROM turn_words_pending WHERE turn_id IN (
                         SELECT turn_id FROM turn_words_pending ORDER BY turn_id DESC LIMIT $1
                         FOR UPDATE SKIP LOCKED)
                       RETURNING turn_id),
                     indexed AS (
                       INSERT INTO turn_words (turn_id, words, text)
                       SELECT t.id, {TURN_WORDS}, t.text FROM turns t JOIN taken ON taken.turn_id = t.id
                       ON CONFLICT (turn_id) DO UPDATE SET words = EXCLUDED.words, text = EXCLUDED.text
                       RETURNING 1)
                     SELECT (SELECT count(*) FROM taken), (SELECT count(*) FROM indexed)"
                ),
                &[&batch],
            )
            .await?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// Indexes the next `batch` of the turns that predate the side table, newest first.
    pub async fn backfill_words(&self, batch: i64) -> Result<Backfill, StoreError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        let Some(row) = tx
            .query_opt(
                "SELECT below, total, done FROM turn_words_backfill FOR UPDATE SKIP LOCKED",
                &[],
            )
            .await?
        else {
            let left: i64 = tx
                .query_one("SELECT count(*) FROM turn_words_backfill", &[])
                .await?
                .get(0);
            return Ok(if left == 0 {
                Backfill::Finished
            } else {
                Backfill::Busy
            });
        };
        let (below, total, done): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        // A turn already indexed (queued again, then indexed) keeps its newer vector.
        let step = tx
            .query_one(
                &format!(
                    "WITH batch AS (SELECT t.id, {TURN_WORDS} AS words, t.text FROM turns t
                                    WHERE t.id < $1 ORDER BY t.id DESC LIMIT $2),
                     written AS (INSERT INTO turn_words (turn_id, words, text) SELECT id, words, text FROM batch
                                 ON CONFLICT (turn_id) DO NOTHING RETURNING 1)
                     SELECT min(id), count(*), (SELECT count(*) FROM written) FROM batch"
                ),
                &[&below, &batch],
            )
            .await?;
        let (lowest, n): (Option<i64>, i64) = (step.get(0), step.get(1));
        let result = match lowest {
            Some(lowest) => {
                tx.execute(
                    "UPDATE turn_words_backfill SET below = $1, done = done + $2",
                    &[&lowest, &n],
                )
                .await?;
                Backfill::Indexed {
                    indexed: n,
                    done: done + n,
                    total,
                }
            }
            None => {
                tx.execute("DELETE FROM turn_words_backfill", &[]).await?;
                if total > 0 {
                    info!("[SEARCH] indexed all {done} older turns; full text covers every turn");
                }
                Backfill::Finished
            }
        };
        tx.commit().await?;
        Ok(result)
    }
}

/// Starts the background indexer of `store`: the queue first (new turns are what users
/// search for), the backfill when the queue is empty.
pub fn start_indexer(store: PgStore) {
    tokio::spawn(async move {
        let mut backfill_finished = false;
        let mut failing = false;
        loop {
            let started = crate::clock::instant();
            let pass = index_pass(&store, &mut backfill_finished).await;
            match pass {
                Ok(busy) => {
                    if failing {
                        info!("[SEARCH] indexing again");
                        failing = false;
                    }
                    // At most half the time while there is more: a large transcript read
                    // at once leaves the writer, on the same cores, the other half.
                    tokio::time::sleep(if busy {
                        crate::clock::since(started)
                    } else {
                        IDLE
                    })
                    .await;
                }
                Err(e) => {
                    if !failing {
                        warn!("[SEARCH] full-text indexing paused: {e}");
                        failing = true;
                    }
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    });
}

/// One pass: a queue batch, else a backfill batch. True when there may be more to do now.
async fn index_pass(store: &PgStore, backfill_finished: &mut bool) -> Result<bool, StoreError> {
    let taken = store.index_pending(INDEX_BATCH).await?;
    if taken as i64 >= INDEX_BATCH {
        return Ok(true);
    }
    if *backfill_finished {
        return Ok(false);
    }
    match store.backfill_words(INDEX_BATCH).await? {
        Backfill::Indexed {
            indexed,
            done,
            total,
        } => {
            if done / LOG_EVERY != (done - indexed) / LOG_EVERY || done - indexed == 0 {
                info!("[SEARCH] indexed {done} of {total} turns");
            }
            Ok(true)
        }
        Backfill::Busy => Ok(false),
        Backfill::Finished => {
            *backfill_finished = true;
            Ok(false)
        }
    }
}
