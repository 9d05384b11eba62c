//! Search, history and prune on PostgreSQL (the indexes of `migrations/0008_search.sql`).

use super::{at, id, ms, PgStore};
use crate::server::search::{
    exact_snippet, unmark, HistoryAgent, PruneRequest, PrunedAgent, SearchHit, SearchQuery,
    MARK_END, MARK_START, SNIPPET_CONTEXT_CHARS,
};
use crate::server::store::StoreError;
use headspace_core::Timestamp;
use serde_json::Value;

/// The searchable documents, one row each: `doc_id` (the turn), `agent_id`, `actor`, `ts`,
/// `body` and its full-text vector `body_search`. Written as a plain subquery, not a CTE, so
/// PostgreSQL pushes each filter into it and uses the indexes.
///
/// Tool steps join here as a second branch, with no other change to the query:
/// `UNION ALL SELECT s.turn_id, t.agent_id, t.actor, t."timestamp", s.summary,
/// s.summary_search FROM steps s JOIN turns t ON t.id = s.turn_id`, once `steps` has a
/// generated `summary_search` tsvector and a `gin_trgm_ops` index on `summary` like `turns`
/// (PostgreSQL pushes the WHERE of a `UNION ALL` subquery into every branch). A step's hit
/// then counts for its turn; its snippet comes from the turn text unless the step's summary
/// is carried through `hits` as well.
const DOCUMENTS: &str = "(SELECT t.id AS doc_id, t.agent_id, t.actor, t.\"timestamp\" AS ts,
        t.text AS body, t.text_search AS body_search FROM turns t) d";

/// How many of the newest full-text matches are ranked: all of them for any selective
/// query; the newest for a word found in a large share of the turns.
const RANKED_CANDIDATES: i64 = 1000;

/// The filters every branch applies ($3 project, $4 agent, $5 actor, $6 since ms, $7 until
/// ms, $8 before turn id).
const FILTERS: &str = "($3::text IS NULL OR d.agent_id IN (SELECT id FROM agents WHERE project = $3))
    AND ($4::bigint IS NULL OR d.agent_id = $4)
    AND ($5::text IS NULL OR d.actor = $5)
    AND ($6::bigint IS NULL OR d.ts >= (timestamptz 'epoch' + $6 * interval '1 millisecond'))
    AND ($7::bigint IS NULL OR d.ts < (timestamptz 'epoch' + $7 * interval '1 millisecond'))
    AND ($8::bigint IS NULL OR (d.ts, d.doc_id) < (SELECT \"timestamp\", id FROM turns WHERE id = $8))";

impl PgStore {
    /// The turns matching a search, best first: exact (case-insensitive substring) hits
    /// first, then full-text hits by rank; newer first among equals.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError> {
        let c = self.pool.get().await?;
        // Exact hits rank 1 + their full-text rank, full-text hits their rank alone
        // (normalisation 32 keeps it in [0, 1)): an exact phrase always comes first. The
        // exact side takes the newest `limit` matches, the full-text side the `limit` best
        // ranked of the newest RANKED_CANDIDATES matches. Both sides are bounded by recency
        // so that the planner may answer a query matching a large share of the turns by
        // walking `turns_time` back from the newest (cheap when matches are dense) and a rare
        // one from the GIN indexes (cheap when they are sparse), never by ranking them all.
        let sql = format!(
            "WITH query AS (SELECT websearch_to_tsquery('english', $1) AS q),
             hits AS (
               (SELECT d.doc_id, 1 + ts_rank_cd(d.body_search, query.q, 32) AS score, true AS exact
                FROM {DOCUMENTS}, query
                WHERE $2::text IS NOT NULL AND d.body ILIKE $2 AND {FILTERS}
                ORDER BY d.ts DESC, d.doc_id DESC LIMIT $9)
               UNION ALL
               (SELECT doc_id, ts_rank_cd(body_search, q, 32), false
                FROM (SELECT d.doc_id, d.body_search, d.ts, query.q
                      FROM {DOCUMENTS}, query
                      WHERE d.body_search @@ query.q AND {FILTERS}
                      ORDER BY d.ts DESC, d.doc_id DESC LIMIT {RANKED_CANDIDATES}) newest
                ORDER BY 2 DESC, ts DESC LIMIT $9)),
             best AS (SELECT doc_id, max(score) AS score, bool_or(exact) AS exact FROM hits GROUP BY doc_id)
             SELECT t.id, t.agent_id, a.project, a.cwd, a.session_id, a.ended, t.actor, t.intent, {ts},
                    b.score::float8, b.exact, m.pos, m.start,
                    CASE WHEN b.exact AND m.pos > 0
                         THEN substr(t.text, m.start, m.pos - m.start + char_length($1) + {ctx}) END,
                    char_length(t.text),
                    CASE WHEN NOT b.exact OR m.pos = 0
                         THEN ts_headline('english', translate(left(t.text, 100000), chr(57344) || chr(57345), ''), query.q,
                              'StartSel=' || chr(57344) || ', StopSel=' || chr(57345)
                              || ', MaxFragments=2, MaxWords=24, MinWords=8, FragmentDelimiter=\" … \"') END
             FROM best b JOIN turns t ON t.id = b.doc_id JOIN agents a ON a.id = t.agent_id, query,
                  LATERAL (SELECT p AS pos, greatest(1, p - {ctx}) AS start
                           FROM (SELECT CASE WHEN b.exact THEN strpos(lower(t.text), lower($1)) ELSE 0 END AS p) x) m
             ORDER BY b.score DESC, t.\"timestamp\" DESC, t.id DESC LIMIT $9",
            ts = ms("t.\"timestamp\""),
            ctx = SNIPPET_CONTEXT_CHARS,
        );
        let rows = c
            .query(
                &sql,
                &[
                    &query.q,
                    &query.exact_pattern(),
                    &query.project,
                    &query.agent.map(id),
                    &query.actor,
                    &query.since.map(Timestamp::millis),
                    &query.until.map(Timestamp::millis),
                    &query.before.map(id),
                    &query.limit,
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

    /// Ended agents, most recently seen first: of one project, one day (UTC), or all.
    pub async fn history(
        &self,
        project: Option<&str>,
        day: Option<Timestamp>,
        limit: i64,
    ) -> Result<Vec<HistoryAgent>, StoreError> {
        let c = self.pool.get().await?;
        let sql = format!(
            "SELECT a.id, a.session_id, a.project, a.cwd, {seen}, a.end_reason,
                    (SELECT count(*) FROM turns u WHERE u.agent_id = a.id),
                    (SELECT left(f.text, 200) FROM turns f WHERE f.agent_id = a.id AND f.actor = 'user'
                     ORDER BY f.\"timestamp\", f.id LIMIT 1)
             FROM agents a
             WHERE a.ended AND a.pruned_at IS NULL AND ($1::text IS NULL OR a.project = $1)
               AND ($2::bigint IS NULL OR (a.last_seen_at >= {from} AND a.last_seen_at < {to}))
             ORDER BY a.last_seen_at DESC, a.id DESC LIMIT $3",
            seen = ms("a.last_seen_at"),
            from = at("$2"),
            to = at("($2 + 86400000)"),
        );
        let rows = c
            .query(&sql, &[&project, &day.map(Timestamp::millis), &limit])
            .await?;
        Ok(rows
            .iter()
            .map(|r| HistoryAgent {
                id: r.get::<_, i64>(0) as u64,
                session_id: r.get(1),
                project: r.get(2),
                cwd: r.get(3),
                last_seen_at: time_json(r.get(4)),
                end_reason: r.get(5),
                turn_count: r.get(6),
                first_command: r.get(7),
            })
            .collect())
    }

    /// Deletes (or, dry, lists) the turns of the ended agents last heard of before `before`
    /// and with no turn since, in one transaction. A live agent is never touched. The agent
    /// row, its tasks and its transcript offsets stay, marked `pruned_at`: the core restores
    /// the agent with its files read to the end, so the watcher never reads the pruned
    /// transcripts back in, and a resumed session still has its tasks. Pruned agents leave
    /// the agent list (so the audit), the history and search. Tables added later that point
    /// at turns (tool steps) must be deleted here too, before the turns.
    pub async fn prune(&self, request: PruneRequest) -> Result<Vec<PrunedAgent>, StoreError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        let sql = format!(
            "SELECT a.id, a.project, a.session_id, {seen},
                    (SELECT count(*) FROM turns u WHERE u.agent_id = a.id)
             FROM agents a
             WHERE a.ended AND a.last_seen_at < {before}
               AND NOT EXISTS (SELECT 1 FROM turns u WHERE u.agent_id = a.id AND u.\"timestamp\" >= {before})
               AND (a.pruned_at IS NULL OR EXISTS (SELECT 1 FROM turns u WHERE u.agent_id = a.id))
             ORDER BY a.last_seen_at, a.id
             FOR UPDATE OF a",
            seen = ms("a.last_seen_at"),
            before = at("$1::bigint"),
        );
        let rows = tx.query(&sql, &[&request.before.millis()]).await?;
        let agents: Vec<PrunedAgent> = rows
            .iter()
            .map(|r| PrunedAgent {
                id: r.get::<_, i64>(0) as u64,
                project: r.get(1),
                session_id: r.get(2),
                last_seen_at: time_json(r.get(3)),
                turns: r.get(4),
            })
            .collect();
        if request.dry_run || agents.is_empty() {
            return Ok(agents);
        }
        let ids: Vec<i64> = agents.iter().map(|a| id(a.id)).collect();
        for statement in [
            "UPDATE agents SET pruned_at = now() WHERE id = ANY($1) AND ended",
            "DELETE FROM turns WHERE agent_id = ANY($1)",
        ] {
            tx.execute(statement, &[&ids]).await?;
        }
        tx.commit().await?;
        Ok(agents)
    }
}

/// Epoch milliseconds as the API writes times (RFC 3339).
fn time_json(ms: i64) -> Value {
    serde_json::to_value(Timestamp(ms)).unwrap_or(Value::Null)
}

/// Keeps the highlight markers' code points in one place with the SQL's `chr(57344)`.
const _: () = assert!(MARK_START as u32 == 57344 && MARK_END as u32 == 57345);
