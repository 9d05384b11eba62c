//! Search, history and prune on PostgreSQL (the indexes of `migrations/0008_search.sql` and
//! `migrations/0010_search_off_commit.sql`). The full-text side over the indexed turns and
//! the steps, walked for or read from the GIN index, is in [`super::search_dense`].

use super::search_dense::{indexed_matches, step_matches, WordShares};
use super::search_index::TURN_WORDS;
use super::search_sql::{filters, ranked, run, STEPS, STEP_WORDS, TSQUERY};
use super::{id, ms, PgStore};
use crate::server::search::{
    exact_snippet, unmark, SearchHit, SearchQuery, StepMatch, MARK_END, MARK_START,
    SNIPPET_CONTEXT_CHARS,
};
use crate::server::store::StoreError;
use headspace_core::Timestamp;
use serde_json::Value;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// A turn's columns as a document (`doc_id`, `agent_id`, `actor`, `ts`), from `turns t`.
const DOC_COLUMNS: &str = "t.id AS doc_id, t.agent_id, t.actor, t.\"timestamp\" AS ts";

/// Queued turns (`queue`: `turn_words_pending` or a subquery of it, as `p`) as documents
/// with `columns` (over `t.doc_id`, `t.agent_id`, `t.actor`, `t.ts`, `t.text`). The
/// `OFFSET 0` fences keep the planner from pushing a test on the text down into a scan of
/// `turns` (parsing or matching every turn) and make it fetch each queued turn by its id.
fn queued_turns(queue: &str, columns: &str) -> String {
    format!(
        "(SELECT {columns} FROM {queue} p
          CROSS JOIN LATERAL (SELECT {DOC_COLUMNS}, t.text FROM turns t WHERE t.id = p.turn_id OFFSET 0) t
          OFFSET 0) d"
    )
}

/// Turns committed but not indexed yet (the newest [`PENDING_SCANNED`] of them), their vector
/// parsed on the fly: a turn is found by its words from the moment it is committed.
fn pending_turns() -> String {
    queued_turns(
        &format!("(SELECT turn_id FROM turn_words_pending ORDER BY turn_id DESC LIMIT {PENDING_SCANNED})"),
        &format!("t.doc_id, t.agent_id, t.actor, t.ts, {TURN_WORDS} AS body_search"),
    )
}

/// Turns as documents of the exact side (`migrations/0016_exact_off_commit.sql`), one
/// subquery per source, each with `words`, the stored vector when there is one: the indexed
/// turns by the text beside their vector (the trigram index reads it), every queued turn by
/// its text in `turns`, and while the 0010 backfill runs the turns below its mark it has not
/// reached. A committed turn is found exactly from the moment it is committed, indexed or
/// not. Separate statements, not one `UNION ALL`: over a union the planner sorts every match
/// of a common text instead of walking the time index back (600 ms against 0.4 ms for a path
/// in one turn of eight, of a million).
fn exact_sources(backfill: bool) -> Vec<String> {
    let mut sources = vec![
        format!(
            "(SELECT {DOC_COLUMNS}, w.text AS body, w.words FROM turn_words w JOIN turns t ON t.id = w.turn_id) d"
        ),
        // Fenced: else the planner may walk every turn back by time looking for queued ones.
        queued_turns(
            "turn_words_pending",
            "t.doc_id, t.agent_id, t.actor, t.ts, t.text AS body, NULL::tsvector AS words",
        ),
    ];
    if backfill {
        sources.push(format!(
            "(SELECT {DOC_COLUMNS}, t.text AS body, NULL::tsvector AS words
                FROM turns t WHERE t.id < (SELECT below FROM turn_words_backfill)
                 AND NOT EXISTS (SELECT 1 FROM turn_words w WHERE w.turn_id = t.id)) d"
        ));
    }
    sources
}

/// Pending turns parsed per search at most: the indexer keeps the queue far shorter (it takes
/// [`super::search_index::INDEX_BATCH`] every pass); a longer one means it is stopped or a
/// large transcript was just read, and then the exact side still finds the rest
/// ([`exact_sources`] reads every queued turn).
const PENDING_SCANNED: i64 = 500;

/// Settings for every statement of a search, in its own transaction: no parallel workers
/// (starting them costs 5–15 ms, more than most of these statements take, and the planner
/// asks for them when it overestimates a GIN match), no JIT compilation, and a plan made
/// for each query's own text and filters (the statements are prepared once per connection,
/// and a generic plan cannot see how many turns a tsquery or a pattern matches).
const SEARCH_SETTINGS: &str = "SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL jit = off;
     SET LOCAL plan_cache_mode = force_custom_plan";

/// A hit before its details are read: the turn, its score, whether the text holds the query
/// exactly, and the step (agent, tool-use id) that matched, when a step did.
struct Found {
    doc: i64,
    score: f64,
    exact: bool,
    step: Option<(i64, String)>,
}

/// Adds `found` unless its turn is already a hit (the first way a turn was found wins: exact
/// before full text, the turn's own text before its steps').
fn add(hits: &mut Vec<Found>, found: Found) {
    if !hits.iter().any(|h| h.doc == found.doc) {
        hits.push(found);
    }
}

/// Rows `(doc_id, score[, step_agent, tool_use_id])` as hits.
fn add_rows(hits: &mut Vec<Found>, rows: &[Row], exact: bool, steps: bool) {
    for r in rows {
        add(
            hits,
            Found {
                doc: r.get(0),
                score: r.get(1),
                exact,
                step: steps.then(|| (r.get(2), r.get(3))),
            },
        );
    }
}

impl PgStore {
    /// The turns matching a search, best first: exact (case-insensitive substring) hits
    /// first, then full-text hits by rank; newer first among equals. A turn is also found by
    /// its tool steps' summaries (a command, a path), and the hit says which step matched.
    ///
    /// Exact hits score 1 + their full-text rank, full-text hits their rank alone
    /// (normalisation 32 keeps it in [0, 1)), so an exact phrase always comes first. The
    /// exact side takes the newest `limit` matches (the planner estimates `ILIKE` from the
    /// column's statistics and walks the time index back for a common text, the trigram
    /// index for a rare one); the full-text side ranks the newest matches, read from the GIN
    /// index when there are few, by walking the time index when there are many (see
    /// `indexed_matches`), plus the turns not indexed yet, parsed on the fly. Steps are
    /// searched the same two ways by their own indexes. All in one transaction, with the
    /// settings of `SEARCH_SETTINGS`.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError> {
        let mut c = self.pool.get().await?;
        let agent = query.agent.map(id);
        let since = query.since.map(Timestamp::millis);
        let until = query.until.map(Timestamp::millis);
        let before = query.before.map(id);
        let filter_params: [&(dyn ToSql + Sync); 6] = [
            &query.project,
            &agent,
            &query.actor,
            &since,
            &until,
            &before,
        ];
        let q: &(dyn ToSql + Sync) = &query.q;
        let mut hits: Vec<Found> = Vec::new();
        // One snapshot for every statement: the indexer moves a turn from the queue to
        // `turn_words` while a search runs, and under READ COMMITTED a statement over the
        // index could run before that commit and the one over the queue after it, so the
        // turn would be missing from the exact side (found only by full text, or not at all).
        let tx = c
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        tx.batch_execute(SEARCH_SETTINGS).await?;

        if let Some(pattern) = query.exact_pattern() {
            let params = [&[q, &pattern][..], &filter_params, &[&query.limit]].concat();
            let backfill = tx
                .query_opt("SELECT 1 FROM turn_words_backfill", &[])
                .await?
                .is_some();
            // Each source's newest matches, then the newest of them all. The rank is computed
            // for the chosen rows only, from the stored vector or, for a turn not indexed
            // yet, the text.
            let mut rows = Vec::new();
            for turns in &exact_sources(backfill) {
                let sql = format!(
                    "SELECT x.doc_id, (1 + ts_rank_cd(COALESCE(x.words, {words}), {TSQUERY}, 32))::float8,
                            floor(extract(epoch FROM x.ts) * 1000000)::int8
                     FROM (SELECT d.doc_id, d.body, d.words, d.ts FROM {turns} WHERE d.body ILIKE $2 AND {f}
                           ORDER BY d.ts DESC, d.doc_id DESC LIMIT $9) x",
                    words = TURN_WORDS.replace("t.text", "x.body"),
                    f = filters(3),
                );
                rows.extend(run(&tx, &sql, &params).await?);
            }
            rows.sort_by_key(|r| std::cmp::Reverse((r.get::<_, i64>(2), r.get::<_, i64>(0))));
            rows.truncate(usize::try_from(query.limit).unwrap_or(0));
            add_rows(&mut hits, &rows, true, false);
            let sql = format!(
                "SELECT x.doc_id, (1 + ts_rank_cd({words}, {TSQUERY}, 32))::float8, x.step_agent, x.tool_use_id
                 FROM (SELECT d.doc_id, d.body, d.step_agent, d.tool_use_id FROM {STEPS}
                       WHERE d.body ILIKE $2 AND {f}
                       ORDER BY d.step_at DESC, d.tool_use_id DESC LIMIT $9) x",
                words = STEP_WORDS.replace("d.body", "x.body"),
                f = filters(3),
            );
            add_rows(&mut hits, &run(&tx, &sql, &params).await?, true, true);
        }

        let params = [&[q][..], &filter_params, &[&query.limit]].concat();
        let shares = WordShares::of(&tx, q).await?;
        add_rows(
            &mut hits,
            &indexed_matches(&tx, &params, &shares).await?,
            false,
            false,
        );
        add_rows(
            &mut hits,
            &run(&tx, &ranked(&pending_turns()), &params).await?,
            false,
            false,
        );
        // Filters on the step's turn (not only on its agent).
        let by_turn =
            query.actor.is_some() || since.is_some() || until.is_some() || before.is_some();
        add_rows(
            &mut hits,
            &step_matches(&tx, &params, &shares, by_turn).await?,
            false,
            true,
        );
        let page = if hits.is_empty() {
            Vec::new()
        } else {
            details(&tx, query, &hits).await?
        };
        tx.commit().await?;
        Ok(page)
    }
}

/// The page: each hit's turn and agent, the window around an exact match in the text that
/// matched (the turn's, or the step's summary), or the full-text headline with its markers.
/// PostgreSQL's lower() keeps the character count, so strpos of the lowered text is a
/// position in the text.
async fn details(
    tx: &deadpool_postgres::Transaction<'_>,
    query: &SearchQuery,
    hits: &[Found],
) -> Result<Vec<SearchHit>, StoreError> {
    let docs: Vec<i64> = hits.iter().map(|h| h.doc).collect();
    let scores: Vec<f64> = hits.iter().map(|h| h.score).collect();
    let exact: Vec<bool> = hits.iter().map(|h| h.exact).collect();
    let step_agents: Vec<Option<i64>> = hits.iter().map(|h| h.step.as_ref().map(|s| s.0)).collect();
    let step_ids: Vec<Option<&str>> = hits
        .iter()
        .map(|h| h.step.as_ref().map(|s| s.1.as_str()))
        .collect();
    let sql = format!(
        "SELECT t.id, t.agent_id, a.project, a.cwd, a.session_id, a.ended, t.actor, t.intent, {ts},
                b.score, b.exact, m.pos, m.start,
                CASE WHEN b.exact AND m.pos > 0
                     THEN substr(x.body, m.start, m.pos - m.start + char_length($1) + {ctx}) END,
                char_length(x.body),
                CASE WHEN NOT b.exact OR m.pos = 0
                     THEN ts_headline('english', translate(left(x.body, 100000), chr(57344) || chr(57345), ''), {TSQUERY},
                          'StartSel=' || chr(57344) || ', StopSel=' || chr(57345)
                          || ', MaxFragments=2, MaxWords=24, MinWords=8, FragmentDelimiter=\" … \"') END,
                s.tool_use_id, s.tool, s.summary, a.machine
         FROM unnest($2::bigint[], $3::float8[], $4::bool[], $6::bigint[], $7::text[])
                  AS b(doc_id, score, exact, step_agent, tool_use_id)
              JOIN turns t ON t.id = b.doc_id JOIN agents a ON a.id = t.agent_id
              LEFT JOIN steps s ON s.agent_id = b.step_agent AND s.tool_use_id = b.tool_use_id,
              LATERAL (SELECT CASE WHEN s.tool_use_id IS NULL THEN t.text ELSE s.summary END AS body) x,
              LATERAL (SELECT p AS pos, greatest(1, p - {ctx}) AS start
                       FROM (SELECT CASE WHEN b.exact THEN strpos(lower(x.body), lower($1)) ELSE 0 END AS p) y) m
         ORDER BY b.score DESC, t.\"timestamp\" DESC, t.id DESC LIMIT $5",
        ts = ms("t.\"timestamp\""),
        ctx = SNIPPET_CONTEXT_CHARS,
    );
    let rows = run(
        tx,
        &sql,
        &[
            &query.q,
            &docs,
            &scores,
            &exact,
            &query.limit,
            &step_agents,
            &step_ids,
        ],
    )
    .await?;
    let q_chars = query.q.chars().count();
    Ok(rows
        .iter()
        .map(|r| {
            let exact: bool = r.get(10);
            let window: Option<String> = r.get(13);
            let (snippet, highlights) = match window {
                Some(window) => {
                    let pos: i32 = r.get(11);
                    let start: i32 = r.get(12);
                    let total: i32 = r.get(14);
                    let shown = window.chars().count() as i32;
                    exact_snippet(
                        &window,
                        (pos - start) as usize,
                        q_chars,
                        start > 1,
                        start - 1 + shown < total,
                    )
                }
                None => unmark(r.get::<_, Option<&str>>(15).unwrap_or_default()),
            };
            let step = r.get::<_, Option<String>>(16).map(|tool_use_id| StepMatch {
                tool_use_id,
                tool: r.get(17),
                summary: r.get(18),
            });
            SearchHit {
                turn_id: r.get::<_, i64>(0) as u64,
                agent_id: r.get::<_, i64>(1) as u64,
                machine: Some(r.get::<_, String>(19)).filter(|m| !m.is_empty()),
                project: r.get(2),
                cwd: r.get(3),
                session_id: r.get(4),
                ended: r.get(5),
                actor: r.get(6),
                intent: r.get(7),
                timestamp: time_json(r.get(8)),
                snippet,
                highlights,
                exact,
                score: r.get(9),
                step,
            }
        })
        .collect())
}

/// Epoch milliseconds as the API writes times (RFC 3339).
pub(super) fn time_json(ms: i64) -> Value {
    serde_json::to_value(Timestamp(ms)).unwrap_or(Value::Null)
}

/// Keeps the highlight markers' code points in one place with the SQL's `chr(57344)`.
const _: () = assert!(MARK_START as u32 == 57344 && MARK_END as u32 == 57345);
