//! The history view's reads and prune on PostgreSQL.

use super::search::time_json;
use super::{at, id, ms, PgStore};
use crate::server::search::{HistoryAgent, PruneRequest, PrunedAgent};
use crate::server::store::StoreError;
use headspace_core::Timestamp;

impl PgStore {
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
