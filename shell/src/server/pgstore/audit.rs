//! The audit's reads: an agent's transcript files and the turns holding given entry uuids.

use super::{id, PgStore};
use crate::server::store::StoreError;
use headspace_core::transcript::audit::StoredTurn;

impl PgStore {
    /// The transcript files read for an agent's sessions (current and past), in path order.
    pub async fn agent_files(&self, agent_id: u64) -> Result<Vec<String>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                "SELECT o.path FROM transcript_offsets o JOIN agents a
                   ON o.session_id = a.session_id OR o.session_id = ANY(a.sessions)
                 WHERE a.id = $1 ORDER BY o.path",
                &[&id(agent_id)],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Every turn, under any agent, holding one of `uuids`.
    pub async fn entry_turns(&self, uuids: &[String]) -> Result<Vec<StoredTurn>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                "SELECT id, agent_id, entry_uuid FROM turns WHERE entry_uuid = ANY($1)",
                &[&uuids],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| StoredTurn {
                turn_id: r.get::<_, i64>(0) as u64,
                agent_id: r.get::<_, i64>(1) as u64,
                entry_uuid: r.get(2),
            })
            .collect())
    }
}
