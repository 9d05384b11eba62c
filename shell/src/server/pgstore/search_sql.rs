//! The statements both sides of search build on (`search.rs`, the exact and full-text sides;
//! `search_dense.rs`, the walks for dense queries): the documents (turns and tool steps), the
//! query as full text, the filters every statement applies, the ranking, and how a
//! statement runs.

use crate::server::store::StoreError;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// Turns as searchable documents: `doc_id` (the turn), `agent_id`, `actor`, `ts`, `body`.
/// Written as a plain subquery, not a CTE, so PostgreSQL pushes each filter into it and uses
/// the indexes.
pub(super) const TURNS: &str = "(SELECT t.id AS doc_id, t.agent_id, t.actor, t.\"timestamp\" AS ts,
        t.text AS body FROM turns t) d";

/// Tool steps as documents of the turn they are shown under (the latest of the agent's turns
/// at or before the step's start, else its first: [`headspace_core::usage::step::turn_indices_at`]):
/// `doc_id`, `agent_id`, `actor` and `ts` are that turn's, so every filter means the same as
/// for turns; `body` is the step's one-line summary, `step_at` its start (the walk's order).
pub(super) const STEPS: &str = "(SELECT m.id AS doc_id, m.agent_id, m.actor, m.\"timestamp\" AS ts, s.summary AS body,
        s.agent_id AS step_agent, s.tool_use_id, s.started_at AS step_at
      FROM steps s
      CROSS JOIN LATERAL (SELECT COALESCE(
          (SELECT u.id FROM turns u WHERE u.agent_id = s.agent_id AND u.\"timestamp\" <= s.started_at
           ORDER BY u.\"timestamp\" DESC, u.id DESC LIMIT 1),
          (SELECT u.id FROM turns u WHERE u.agent_id = s.agent_id ORDER BY u.\"timestamp\", u.id LIMIT 1)) AS turn_id) k
      JOIN turns m ON m.id = k.turn_id
      WHERE s.started_at IS NOT NULL) d";

/// A step summary's vector: the expression of the `steps_summary_search` index, word for word.
pub(super) const STEP_WORDS: &str = "to_tsvector('english'::regconfig, left(d.body, 100000))";

/// The query's words as full text. Written out at each use, not computed once in a CTE: the
/// planner must see the constant tsquery to estimate how many turns it matches.
pub(super) const TSQUERY: &str = "websearch_to_tsquery('english', $1)";

/// How many of the newest full-text matches are ranked when the GIN index gives them: all
/// of them for a selective query.
pub(super) const RANKED_CANDIDATES: i64 = 1000;

/// Runs `sql`, prepared once per connection (parsed and analyzed once, not per search).
pub(super) async fn run(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, StoreError> {
    let statement = tx.prepare_cached(sql).await?;
    Ok(tx.query(&statement, params).await?)
}

/// The filters every statement applies, on parameters `$first..$first+5`: project, agent,
/// actor, since (ms), until (ms), before (a turn id).
pub(super) fn filters(first: usize) -> String {
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

/// The full-text statement over `documents` (with `body_search`): the newest
/// [`RANKED_CANDIDATES`] matches, ranked, the best `$8`.
pub(super) fn ranked(documents: &str) -> String {
    format!(
        "SELECT doc_id, ts_rank_cd(body_search, {TSQUERY}, 32)::float8
         FROM (SELECT d.doc_id, d.body_search, d.ts FROM {documents}
               WHERE d.body_search @@ {TSQUERY} AND {f}
               ORDER BY d.ts DESC, d.doc_id DESC LIMIT {RANKED_CANDIDATES}) newest
         ORDER BY 2 DESC, ts DESC, doc_id DESC LIMIT $8",
        f = filters(2),
    )
}
