//! Machines on PostgreSQL: registering this server under its name and id, its heartbeat,
//! and the list every dashboard shows (docs/multi-machine.md).

use super::PgStore;
use crate::server::machines::{MachineRow, HEARTBEAT_EVERY};
use crate::server::store::StoreError;
use headspace_core::cluster::machines::is_online;
use tracing::{info, warn};

impl PgStore {
    /// Registers machine `name` with id `id` (started now), and gives it the agent rows no
    /// machine holds (rows from before machines existed). An id held by another name is an
    /// error that names it: two servers must never make ids in one space.
    pub async fn register_machine(
        &self,
        name: &str,
        id: u16,
        version: &str,
    ) -> Result<(), StoreError> {
        let c = self.pool.get().await?;
        let holder = c
            .query_opt(
                "SELECT name FROM machines WHERE id = $1 AND name <> $2",
                &[&(id as i16), &name],
            )
            .await?;
        if let Some(row) = holder {
            let other: String = row.get(0);
            return Err(StoreError::Unavailable(format!(
                "machine id {id} is held by machine {other:?} in this database; two servers cannot make ids in one id space: stop the other server, or start this one with --machine {other} if it replaces it"
            )));
        }
        c.execute(
            "INSERT INTO machines (name, id, started_at, heartbeat_at, version) VALUES ($1, $2, now(), now(), $3)
             ON CONFLICT (name) DO UPDATE SET id = EXCLUDED.id, started_at = now(), heartbeat_at = now(), version = EXCLUDED.version",
            &[&name, &(id as i16), &version],
        )
        .await?;
        adopt_unowned(&c, name).await
    }

    /// Registers edge `name` (started now) and returns its id: the one it held before, so its
    /// restarts keep making ids in the same space, or else the smallest id no machine holds
    /// (from 1: id 0 is `--role all`'s). Like any machine, it takes the rows no machine holds. Two edges registering at once cannot take one id (it
    /// is unique); the loser tries again.
    pub async fn register_edge(&self, name: &str, version: &str) -> Result<u16, StoreError> {
        let c = self.pool.get().await?;
        let mut tries = 0;
        loop {
            let got = c
                .query_one(
                    "INSERT INTO machines (name, id, started_at, heartbeat_at, version)
                     SELECT $1, (SELECT min(g) FROM generate_series(1, 31) g WHERE g NOT IN (SELECT id FROM machines)),
                            now(), now(), $2
                     ON CONFLICT (name) DO UPDATE SET started_at = now(), heartbeat_at = now(), version = EXCLUDED.version
                     RETURNING id",
                    &[&name, &version],
                )
                .await;
            match got {
                Ok(row) => {
                    adopt_unowned(&c, name).await?;
                    return Ok(row.get::<_, i16>(0).max(0) as u16);
                }
                Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::NOT_NULL_VIOLATION) => {
                    return Err(StoreError::Unavailable(
                        "all 31 machine ids of this database are taken: remove a machine that is gone (DELETE FROM machines WHERE name = '…') and start again".into(),
                    ))
                }
                Err(e) if tries < 5 && e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
                    tries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Says machine `name` lives.
    pub async fn heartbeat_machine(&self, name: &str) -> Result<(), StoreError> {
        let c = self.pool.get().await?;
        c.execute(
            "UPDATE machines SET heartbeat_at = now() WHERE name = $1",
            &[&name],
        )
        .await?;
        Ok(())
    }

    /// Every machine, by name: online by the core's rule ([`is_online`]) with the
    /// heartbeat and the database's clock (one clock for both: the machines' own may
    /// differ), with its live agents.
    pub async fn machines(&self) -> Result<Vec<MachineRow>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                "SELECT m.name, m.id, floor(extract(epoch from m.heartbeat_at) * 1000)::bigint,
                        (extract(epoch from now()) * 1000)::bigint, m.version,
                        (SELECT count(*) FROM agents a WHERE a.machine = m.name AND NOT a.ended)
                 FROM machines m ORDER BY m.name",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| MachineRow {
                name: r.get(0),
                id: r.get::<_, i16>(1).max(0) as u16,
                last_seen_ms: r.get(2),
                online: is_online(r.get(2), r.get(3)),
                version: r.get(4),
                agents: r.get::<_, i64>(5).max(0) as u64,
            })
            .collect())
    }
}

/// Gives machine `name` the agent rows and transcript offsets no machine holds (rows from
/// before machines existed): the first machine to register after an upgrade restores them,
/// instead of reading those transcripts again from their start.
async fn adopt_unowned(c: &deadpool_postgres::Object, name: &str) -> Result<(), StoreError> {
    c.execute(
        "UPDATE agents SET machine = $1 WHERE machine = ''",
        &[&name],
    )
    .await?;
    c.execute(
        "UPDATE transcript_offsets SET machine = $1 WHERE machine = ''
           AND NOT EXISTS (SELECT 1 FROM transcript_offsets o WHERE o.machine = $1 AND o.path = transcript_offsets.path)",
        &[&name],
    )
    .await?;
    Ok(())
}

/// Registers this machine and keeps its heartbeat going while the server runs (a failed
/// beat is retried at the next; the database being down shows as the machine offline).
/// `id`: the id to hold (`--role all` holds 0), or `None` for an edge's own (kept across its
/// restarts, else the smallest free). Returns the id: the core's id space.
pub async fn register_and_beat(
    store: PgStore,
    name: String,
    id: Option<u16>,
) -> Result<u16, String> {
    let version = env!("CARGO_PKG_VERSION");
    let id = match id {
        Some(id) => store
            .register_machine(&name, id, version)
            .await
            .map(|()| id),
        None => store.register_edge(&name, version).await,
    }
    .map_err(|e| format!("cannot register machine {name:?}: {e}"))?;
    info!("[MACHINE] this server is machine {name:?} (id {id})");
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            tokio::time::sleep(HEARTBEAT_EVERY).await;
            match store.heartbeat_machine(&name).await {
                Ok(()) => failing = false,
                Err(e) if !failing => {
                    failing = true;
                    warn!("[MACHINE] heartbeat failed (retrying): {e}");
                }
                Err(_) => {}
            }
        }
    });
    Ok(id)
}
