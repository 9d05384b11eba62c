//! The full-text side of a search over the indexed turns (`turn_words`) and the steps, by
//! the cheaper of two ways: the GIN index for words few of them hold, a walk back from the
//! newest for words many hold together. Reading the GIN index costs what the query words'
//! posting lists weigh, whatever the query matches: four words that each come in an eighth
//! or more of a million turns cost ~30 ms before the first match is known. So the choice is
//! made from the planner's statistics first (its most common lexemes), and the index counted
//! only for queries the statistics cannot bound (`or`, `-word`).

use super::search_sql::{filters, ranked, run, STEPS, STEP_WORDS, TSQUERY, TURNS};
use crate::server::store::StoreError;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// Indexed turns with their full-text vector `body_search` (filled in the background, see
/// [`super::search_index`]).
const INDEXED_TURNS: &str = "(SELECT t.id AS doc_id, t.agent_id, t.actor, t.\"timestamp\" AS ts,
        w.words AS body_search FROM turns t JOIN turn_words w ON w.turn_id = t.id) d";

/// Above this many full-text matches a query is dense: its newest matches are found by
/// walking the time index back, not by fetching every match from the GIN index. The planner
/// cannot tell on its own: it takes words that come together ("two tests fail") as
/// independent and expects a thousandth of the rows they match.
const DENSE_MATCHES: i64 = 2000;

/// How many of the newest matches a walk ranks. Fewer than [`RANKED_CANDIDATES`]: a walk
/// costs ~2.7 µs per turn it passes (the time index, then the turn's vector by id), so at
/// one match in eight turns 200 candidates are ~1,600 turns (~5 ms), 1000 would be ~25 ms.
/// What it gives up: for words found in thousands of turns, the best-ranked of the newest
/// 200 matches come first, not of the newest 1000 (older ones are reached with `before`).
const WALK_CANDIDATES: i64 = 200;

/// The most turns a walk passes before it gives up and the GIN index is read instead: a
/// walk only pays when at least one turn in `WALK_TURNS / WALK_CANDIDATES` (50) matches.
const WALK_TURNS: i64 = 10_000;

/// The share of the rows of `table`'s tsvector column (or expression index) `column` that
/// hold the query's rarest word, from `pg_stats` (its most common lexemes and their
/// frequencies): an upper bound on the share the query matches when all its words must be
/// there. A word not listed counts as rare, unless the list is full (then as frequent as the
/// least frequent listed). NULL when the query has `or` or `-word`, which no single word
/// bounds; 0 before the table is analyzed.
fn rarest_word_share(table: &str, column: &str) -> String {
    format!(
        "CASE WHEN websearch_to_tsquery('english', $1)::text ~ '[|!]' THEN NULL::float8
         ELSE (SELECT COALESCE(min(COALESCE(s.freqs[array_position(s.elems, l.lexeme)],
                      CASE WHEN cardinality(s.elems) >= current_setting('default_statistics_target')::int * 10
                           THEN s.freqs[cardinality(s.elems) + 1] ELSE 0 END)), 0)::float8
               FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS l(lexeme)
               LEFT JOIN (SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
                          FROM pg_stats WHERE schemaname = current_schema() AND tablename = '{table}'
                            AND attname = '{column}') s ON true)
         END"
    )
}

/// How common the query's words are among the indexed turns and among the steps, from the
/// planner's statistics (one statement, ~0.1 ms).
pub(super) struct WordShares {
    /// [`rarest_word_share`] of `turn_words`.
    turns: Option<f64>,
    /// Rows in `turn_words` (0 before it is analyzed).
    turn_rows: f64,
    /// [`rarest_word_share`] of the steps' summaries (`steps_summary_search`).
    steps: Option<f64>,
    /// Rows in `steps` (0 before it is analyzed).
    step_rows: f64,
}

impl WordShares {
    /// The shares of query `q`.
    pub(super) async fn of(
        tx: &deadpool_postgres::Transaction<'_>,
        q: &(dyn ToSql + Sync),
    ) -> Result<WordShares, StoreError> {
        let sql = format!(
            "SELECT {turns}, greatest((SELECT reltuples FROM pg_class WHERE oid = 'turn_words'::regclass), 0)::float8,
                    {steps}, greatest((SELECT reltuples FROM pg_class WHERE oid = 'steps'::regclass), 0)::float8",
            turns = rarest_word_share("turn_words", "words"),
            steps = rarest_word_share("steps_summary_search", "to_tsvector"),
        );
        let row = &run(tx, &sql, &[q]).await?[0];
        Ok(WordShares {
            turns: row.get(0),
            turn_rows: row.get(1),
            steps: row.get(2),
            step_rows: row.get(3),
        })
    }
}

/// Whether a walk back from the newest row likely finds [`WALK_CANDIDATES`] matches within
/// [`WALK_TURNS`] rows: the rarest word is in at least one row of 50.
fn worth_walking(share: f64) -> bool {
    share >= WALK_CANDIDATES as f64 / WALK_TURNS as f64
}

/// Planner settings for the walk: the time index read backwards, each turn's vector fetched
/// by id as the walk reaches it (a nested loop), no sort that would read every match first.
const WALK_SETTINGS: &str = "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off;
     SET LOCAL enable_mergejoin = off; SET LOCAL enable_hashjoin = off; SET LOCAL enable_sort = off";
/// Undoes [`WALK_SETTINGS`] for the statements after the walk.
const WALK_SETTINGS_RESET: &str = "RESET enable_bitmapscan; RESET enable_seqscan;
     RESET enable_mergejoin; RESET enable_hashjoin; RESET enable_sort";

/// Rows `(doc_id, score)`: the full-text matches among the indexed turns, best first, at
/// most `$8`. `params` are the query, the six filters and the limit. Words the statistics
/// call common are walked for (see [`walk`]); if the walk gives up, or the words are rare,
/// the GIN index answers; a query the statistics cannot bound counts its matches in the GIN
/// index first (up to [`DENSE_MATCHES`]).
pub(super) async fn indexed_matches(
    tx: &deadpool_postgres::Transaction<'_>,
    params: &[&(dyn ToSql + Sync)],
    shares: &WordShares,
) -> Result<Vec<Row>, StoreError> {
    let try_walk = match shares.turns {
        Some(share) => share * shares.turn_rows >= DENSE_MATCHES as f64 && worth_walking(share),
        None => {
            let sql = format!(
                "SELECT count(*) FROM (SELECT 1 FROM {INDEXED_TURNS} WHERE d.body_search @@ {TSQUERY} AND {f}
                 LIMIT {DENSE_MATCHES} + 1) m",
                f = filters(2),
            );
            let matches: i64 = run(tx, &sql, &params[..7]).await?[0].get(0);
            if matches == 0 {
                return Ok(Vec::new());
            }
            matches > DENSE_MATCHES
        }
    };
    if try_walk {
        tx.batch_execute(WALK_SETTINGS).await?;
        // A failed statement aborts the transaction: its own error, not the reset's.
        let walked = run(tx, &walk(), params).await?;
        tx.batch_execute(WALK_SETTINGS_RESET).await?;
        // Complete when it found all the candidates it ranks; else it gave up (or the
        // filters leave fewer turns than it may pass), and the GIN index answers.
        if walked.first().map(|r| r.get::<_, i64>(2)) == Some(WALK_CANDIDATES) {
            return Ok(walked);
        }
    }
    run(tx, &ranked(INDEXED_TURNS), params).await
}

/// The walk: the newest [`WALK_TURNS`] turns the filters leave, newest first, each turn's
/// vector tested as it comes, stopped at the [`WALK_CANDIDATES`]th match; those ranked,
/// the best `$8`, with how many there were.
fn walk() -> String {
    format!(
        "SELECT doc_id, ts_rank_cd(body_search, {TSQUERY}, 32)::float8, count(*) OVER ()
         FROM (SELECT d.doc_id, d.ts, w.words AS body_search
               FROM (SELECT d.doc_id, d.ts FROM {TURNS} WHERE {f}
                     ORDER BY d.ts DESC, d.doc_id DESC LIMIT {WALK_TURNS}) d
               JOIN turn_words w ON w.turn_id = d.doc_id
               WHERE w.words @@ {TSQUERY}
               ORDER BY d.ts DESC, d.doc_id DESC LIMIT {WALK_CANDIDATES}) newest
         ORDER BY 2 DESC, ts DESC, doc_id DESC LIMIT $8",
        f = filters(2),
    )
}

/// How many of the newest full-text matches among the steps are ranked. A step's vector is
/// not stored: a walk back from the newest step parses each summary it passes (~3 µs), and
/// each match's turn is looked up (~5 µs), so for a word in one step of 32, 1000 candidates
/// took 120 ms on a million turns and 250,000 steps. What it gives up, as for the turns'
/// walk: a common word's best-ranked step among the newest 200 matches comes first, not
/// among the newest 1000.
const STEP_CANDIDATES: i64 = 200;

/// Whether walking the steps for a word in `share` of `rows` steps costs less than reading
/// its matches from the GIN index. The walk parses each summary it passes (~3 µs) and stops
/// at [`STEP_CANDIDATES`] matches: `STEP_CANDIDATES / share` summaries. The index fetches
/// every match (~1.5 µs each): `share * rows`. Twice the one against the other: on 250,000
/// steps the walk pays from one step in 25 on (a word in one of 32: walk ~20 ms, index
/// ~12 ms; in one of 8: walk ~5 ms, index ~45 ms).
fn walk_steps(share: f64, rows: f64) -> bool {
    share > 0.0 && 2.0 * STEP_CANDIDATES as f64 / share <= share * rows
}

/// Rows `(doc_id, score, step_agent, tool_use_id)`: the steps whose summary matches, as hits
/// of the turn each is shown under, best first, at most `$8`. `by_turn`: a filter applies to
/// the step's turn (actor, dates, `before`), not only to its agent.
///
/// Common words: a walk back from the newest step (steps_started), as long as it takes to
/// find [`STEP_CANDIDATES`]. Rare words: every match from the GIN index first (a walk would
/// parse every summary it passes, all of them when nothing matches: 0.8 s for 250,000
/// steps), then the newest of them; without turn filters only those newest get their turn
/// looked up.
pub(super) async fn step_matches(
    tx: &deadpool_postgres::Transaction<'_>,
    params: &[&(dyn ToSql + Sync)],
    shares: &WordShares,
    by_turn: bool,
) -> Result<Vec<Row>, StoreError> {
    let f = filters(2);
    let newest = |documents: &str, test: &str| {
        format!(
            "SELECT doc_id, ts_rank_cd(body_search, {TSQUERY}, 32)::float8, step_agent, tool_use_id
             FROM (SELECT d.doc_id, {STEP_WORDS} AS body_search, d.step_at, d.step_agent, d.tool_use_id
                   FROM {documents} WHERE {test} {f}
                   ORDER BY d.step_at DESC, d.tool_use_id DESC LIMIT {STEP_CANDIDATES}) newest
             ORDER BY 2 DESC, step_at DESC, tool_use_id DESC LIMIT $8"
        )
    };
    if shares
        .steps
        .is_some_and(|share| walk_steps(share, shares.step_rows))
    {
        tx.batch_execute(WALK_SETTINGS).await?;
        let sql = newest(STEPS, &format!("{STEP_WORDS} @@ {TSQUERY} AND"));
        let walked = run(tx, &sql, params).await?;
        tx.batch_execute(WALK_SETTINGS_RESET).await?;
        return Ok(walked);
    }
    let found = format!(
        "(SELECT s.agent_id, s.tool_use_id, s.started_at, s.summary FROM steps s
          WHERE {words} @@ {TSQUERY} AND s.started_at IS NOT NULL
            AND ($2::text IS NULL OR s.agent_id IN (SELECT id FROM agents WHERE project = $2))
            AND ($3::bigint IS NULL OR s.agent_id = $3))",
        words = STEP_WORDS.replace("d.body", "s.summary"),
    );
    if by_turn {
        // Every match's turn is looked up (then filtered): by its id, as for the newest
        // 200, not by hashing all of `turns` (the planner's choice for a few thousand
        // matches: 0.6 s on a million turns).
        let sql = format!(
            "WITH found AS MATERIALIZED {found} {select}",
            select = newest(&STEPS.replace("FROM steps s", "FROM found s"), ""),
        );
        tx.batch_execute("SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off")
            .await?;
        let rows = run(tx, &sql, params).await?;
        tx.batch_execute("RESET enable_hashjoin; RESET enable_mergejoin")
            .await?;
        return Ok(rows);
    }
    // No filter on the turn: only the newest matches get their turn looked up.
    let source = format!(
        "(SELECT * FROM found ORDER BY started_at DESC, tool_use_id DESC LIMIT {STEP_CANDIDATES})"
    );
    let sql = format!(
        "WITH found AS MATERIALIZED {found} {select}",
        select = newest(
            &STEPS.replace("FROM steps s", &format!("FROM {source} s")),
            ""
        ),
    );
    run(tx, &sql, params).await
}

#[cfg(test)]
mod tests {
    use super::{walk_steps, worth_walking};

    #[test]
    fn turns_are_walked_for_words_in_one_turn_of_fifty_or_more() {
        // 200 matches within the 10,000 turns a walk may pass.
        assert!(worth_walking(1.0 / 8.0));
        assert!(worth_walking(1.0 / 50.0));
        assert!(!worth_walking(1.0 / 51.0));
        assert!(!worth_walking(0.0));
    }

    #[test]
    fn steps_are_walked_only_where_the_walk_costs_less_than_the_index() {
        let rows = 250_000.0;
        assert!(walk_steps(1.0 / 8.0, rows), "common: the walk is cheaper");
        assert!(walk_steps(1.0 / 25.0, rows), "the bound, as documented");
        assert!(
            !walk_steps(1.0 / 32.0, rows),
            "the common path's word: the index"
        );
        assert!(
            !walk_steps(0.0, rows),
            "a word in no step is never walked for"
        );
        assert!(!walk_steps(1.0 / 8.0, 1_000.0), "a few steps: the index");
    }
}
