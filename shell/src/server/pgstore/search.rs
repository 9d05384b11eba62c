//! Search, history and prune on PostgreSQL (the indexes of `migrations/0008_search.sql`).

use super::{id, ms, PgStore};
use crate::server::search::{
    exact_snippet, unmark, SearchHit, SearchQuery, MARK_END, MARK_START, SNIPPET_CONTEXT_CHARS,
};
use crate::server::store::StoreError;
use headspace_core::Timestamp;
use serde_json::Value;
use tokio_postgres::types::ToSql;

/// The searchable documents, one row each: `doc_id` (the turn), `agent_id`, `actor`, `ts`,
/// `body` and its full-text vector `body_search`. Written as a plain subquery, not a CTE, so
/// PostgreSQL pushes each filter into it and uses the indexes.
///
/// Tool steps join here as a second branch, with no other change to the statements:
/// `UNION ALL SELECT s.turn_id, s.agent_id, s.actor, s."timestamp", s.summary,
/// s.summary_search FROM steps s`, once `steps` carries its turn's agent, actor and time
/// (copied at insert, so every filter and the time walk have an index of their own there:
/// `(timestamp, turn_id)`, `(agent_id, timestamp)`), a generated `summary_search` tsvector
/// under GIN and a `gin_trgm_ops` index on `summary`, as `turns` has. PostgreSQL pushes the
/// WHERE of a `UNION ALL` subquery into every branch and merges ordered branches (Merge
/// Append), so the plans stay index-only. A step's hit counts for its turn (hits are
/// deduplicated by turn id); the details statement then finds no exact match in the turn
/// text and falls back to the headline, until it also reads the step's summary for the
/// snippet.
const DOCUMENTS: &str = "(SELECT t.id AS doc_id, t.agent_id, t.actor, t.\"timestamp\" AS ts,
        t.text AS body, t.text_search AS body_search FROM turns t) d";

/// The query's words as full text. Written out at each use, not computed once in a CTE: the
/// planner must see the constant tsquery to estimate how many turns it matches.
const TSQUERY: &str = "websearch_to_tsquery('english', $1)";

/// How many of the newest full-text matches are ranked: all of them for a selective query;
/// the newest for words found in a large share of the turns.
const RANKED_CANDIDATES: i64 = 1000;

/// Above this many full-text matches a query is dense: its newest matches are found by
/// walking the time index back (a few thousand rows), not by fetching every match from the
/// GIN index. The planner cannot tell on its own: it takes words that come together ("two
/// tests fail") as independent and expects a thousandth of the rows they match.
const DENSE_MATCHES: i64 = 2000;

/// The filters every statement applies, on parameters `$first..$first+5`: project, agent,
/// actor, since (ms), until (ms), before (a turn id).
fn filters(first: usize) -> String {
    let [project, agent, actor, since, until, before] =
        [0, 1, 2, 3, 4, 5].map(|k| format!("${}", first + k));
    format!(
        "({project}::text IS NULL OR d.agent_id IN (SELECT id FROM agents WHERE project = {project}))
         AND ({agent}::bigint IS NULL OR d.agent_id = {agent})
         AND ({actor}::text IS NULL OR d.actor = {actor})
         AND ({since}::bigint IS NULL OR d.ts >= (timestamptz 'epoch' + {since} * interval '1 millisecond'))
         AND ({until}::bigint IS NULL OR d.ts < (timestamptz 'epoch' + {until} * interval '1 millisecond'))
         AND ({before}::bigint IS NULL OR (d.ts, d.doc_id) < (SELECT \"timestamp\", id FROM turns WHERE id = {before}))"
    )
}

impl PgStore {
    /// The turns matching a search, best first: exact (case-insensitive substring) hits
    /// first, then full-text hits by rank; newer first among equals.
    ///
    /// Exact hits score 1 + their full-text rank, full-text hits their rank alone
    /// (normalisation 32 keeps it in [0, 1)), so an exact phrase always comes first. The
    /// exact side takes the newest `limit` matches (the planner estimates `ILIKE` from the
    /// column's statistics and walks the time index back for a common text, the trigram
    /// index for a rare one); the full-text side ranks the newest [`RANKED_CANDIDATES`]
    /// matches, read from the GIN index when there are few, by walking the time index when
    /// there are many (see [`DENSE_MATCHES`]).
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
        let mut hits: Vec<(i64, f64, bool)> = Vec::new();

        if let Some(pattern) = query.exact_pattern() {
            let sql = format!(
                "SELECT d.doc_id, (1 + ts_rank_cd(d.body_search, {TSQUERY}, 32))::float8 FROM {DOCUMENTS}
                 WHERE d.body ILIKE $2 AND {f}
                 ORDER BY d.ts DESC, d.doc_id DESC LIMIT $9",
                f = filters(3),
            );
            for r in c
                .query(
                    &sql,
                    &[
                        &[&query.q as &(dyn ToSql + Sync), &pattern][..],
                        &filter_params,
                        &[&query.limit],
                    ]
                    .concat(),
                )
                .await?
            {
                hits.push((r.get(0), r.get::<_, f64>(1), true));
            }
        }

        let dense_sql = format!(
            "SELECT count(*) FROM (SELECT 1 FROM {DOCUMENTS} WHERE d.body_search @@ {TSQUERY} AND {f}
             LIMIT {DENSE_MATCHES} + 1) m",
            f = filters(2),
        );
        let matches: i64 = c
            .query_one(
                &dense_sql,
                &[&[&query.q as &(dyn ToSql + Sync)][..], &filter_params].concat(),
            )
            .await?
            .get(0);
        if matches > 0 {
            let sql = format!(
                "SELECT doc_id, ts_rank_cd(body_search, {TSQUERY}, 32)::float8
                 FROM (SELECT d.doc_id, d.body_search, d.ts FROM {DOCUMENTS}
                       WHERE d.body_search @@ {TSQUERY} AND {f}
                       ORDER BY d.ts DESC, d.doc_id DESC LIMIT {RANKED_CANDIDATES}) newest
                 ORDER BY 2 DESC, ts DESC, doc_id DESC LIMIT $8",
                f = filters(2),
            );
            let params = [
                &[&query.q as &(dyn ToSql + Sync)][..],
                &filter_params,
                &[&query.limit],
            ]
            .concat();
            let rows = if matches > DENSE_MATCHES {
                // Many matches: walk back from the newest turn rather than fetch them all (the
                // planner, expecting few, would read them all or scan the table).
                let tx = c.transaction().await?;
                // Serial: starting parallel workers costs more than the short walk.
                tx.batch_execute(
                    "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off;
                     SET LOCAL max_parallel_workers_per_gather = 0",
                )
                .await?;
                let rows = tx.query(&sql, &params).await?;
                tx.commit().await?;
                rows
            } else {
                c.query(&sql, &params).await?
            };
            for r in rows {
                let doc: i64 = r.get(0);
                if !hits.iter().any(|h| h.0 == doc) {
                    hits.push((doc, r.get::<_, f64>(1), false));
                }
            }
        }
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let docs: Vec<i64> = hits.iter().map(|h| h.0).collect();
        let scores: Vec<f64> = hits.iter().map(|h| h.1).collect();
        let exact: Vec<bool> = hits.iter().map(|h| h.2).collect();
        // The page: each hit's turn and agent, the window around an exact match (PostgreSQL's
        // lower() keeps the character count, so strpos of the lowered text is a position in
        // the text), or the full-text headline with its markers.
        let sql = format!(
            "SELECT t.id, t.agent_id, a.project, a.cwd, a.session_id, a.ended, t.actor, t.intent, {ts},
                    b.score, b.exact, m.pos, m.start,
                    CASE WHEN b.exact AND m.pos > 0
                         THEN substr(t.text, m.start, m.pos - m.start + char_length($1) + {ctx}) END,
                    char_length(t.text),
                    CASE WHEN NOT b.exact OR m.pos = 0
                         THEN ts_headline('english', translate(left(t.text, 100000), chr(57344) || chr(57345), ''), {TSQUERY},
                              'StartSel=' || chr(57344) || ', StopSel=' || chr(57345)
                              || ', MaxFragments=2, MaxWords=24, MinWords=8, FragmentDelimiter=\" … \"') END
             FROM unnest($2::bigint[], $3::float8[], $4::bool[]) AS b(doc_id, score, exact)
                  JOIN turns t ON t.id = b.doc_id JOIN agents a ON a.id = t.agent_id,
                  LATERAL (SELECT p AS pos, greatest(1, p - {ctx}) AS start
                           FROM (SELECT CASE WHEN b.exact THEN strpos(lower(t.text), lower($1)) ELSE 0 END AS p) x) m
             ORDER BY b.score DESC, t.\"timestamp\" DESC, t.id DESC LIMIT $5",
            ts = ms("t.\"timestamp\""),
            ctx = SNIPPET_CONTEXT_CHARS,
        );
        let rows = c
            .query(&sql, &[&query.q, &docs, &scores, &exact, &query.limit])
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
                SearchHit {
                    turn_id: r.get::<_, i64>(0) as u64,
                    agent_id: r.get::<_, i64>(1) as u64,
                    machine: None,
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
                }
            })
            .collect())
    }
}

/// Epoch milliseconds as the API writes times (RFC 3339).
pub(super) fn time_json(ms: i64) -> Value {
    serde_json::to_value(Timestamp(ms)).unwrap_or(Value::Null)
}

/// Keeps the highlight markers' code points in one place with the SQL's `chr(57344)`.
const _: () = assert!(MARK_START as u32 == 57344 && MARK_END as u32 == 57345);
