//! The `launches` table (migration 0018): the agents Headspace started, as a [`LaunchBook`].

use super::{at, id, ms, PgStore};
use crate::launch::{Launch, LaunchBook};
use crate::server::store::{BoxFuture, StoreError};
use headspace_core::Timestamp;
use tokio_postgres::Row;

fn columns() -> String {
    format!(
        "id, tmux_pane, kind, project, cwd, worktree, branch, base_branch, base_commit, created_branch, prompt, {}, agent_id, {}, {}",
        ms("started_at"),
        ms("stopped_at"),
        ms("discarded_at")
    )
}

fn launch(r: &Row) -> Launch {
    Launch {
        id: r.get::<_, i64>(0) as u64,
        tmux_pane: r.get(1),
        kind: r.get(2),
        project: r.get(3),
        cwd: r.get(4),
        worktree: r.get(5),
        branch: r.get(6),
        base_branch: r.get(7),
        base_commit: r.get(8),
        created_branch: r.get(9),
        prompt: r.get(10),
        started_at: Timestamp(r.get(11)),
        agent_id: r.get::<_, Option<i64>>(12).map(|v| v as u64),
        stopped_at: r.get::<_, Option<i64>>(13).map(Timestamp),
        discarded_at: r.get::<_, Option<i64>>(14).map(Timestamp),
    }
}

impl PgStore {
    async fn add_launch(&self, l: &Launch) -> Result<u64, StoreError> {
        let c = self.pool.get().await?;
        let row = c
            .query_one(
                &format!(
                    "INSERT INTO launches (tmux_pane, kind, project, cwd, worktree, branch, base_branch, base_commit, created_branch, prompt, started_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, {}) RETURNING id",
                    at("$11::bigint")
                ),
                &[
                    &l.tmux_pane,
                    &l.kind,
                    &l.project,
                    &l.cwd,
                    &l.worktree,
                    &l.branch,
                    &l.base_branch,
                    &l.base_commit,
                    &l.created_branch,
                    &l.prompt,
                    &l.started_at.millis(),
                ],
            )
            .await?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    async fn set_launch(&self, sql: &str, launch: u64, value: i64) -> Result<(), StoreError> {
        let c = self.pool.get().await?;
        c.execute(sql, &[&id(launch), &value]).await?;
        Ok(())
    }

    async fn launch_of(&self, agent_id: u64) -> Result<Option<Launch>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {} FROM launches WHERE agent_id = $1 ORDER BY id DESC LIMIT 1",
                    columns()
                ),
                &[&id(agent_id)],
            )
            .await?;
        Ok(rows.first().map(launch))
    }

    async fn launches_unlinked_in(&self, pane: &str) -> Result<Vec<Launch>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {} FROM launches WHERE tmux_pane = $1 AND agent_id IS NULL ORDER BY id DESC",
                    columns()
                ),
                &[&pane],
            )
            .await?;
        Ok(rows.iter().map(launch).collect())
    }

    async fn launched_worktrees(&self) -> Result<Vec<Launch>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {} FROM launches WHERE worktree IS NOT NULL ORDER BY id DESC",
                    columns()
                ),
                &[],
            )
            .await?;
        Ok(rows.iter().map(launch).collect())
    }
}

impl LaunchBook for PgStore {
    fn add(&self, launch: &Launch) -> BoxFuture<'_, Result<u64, StoreError>> {
        let launch = launch.clone();
        Box::pin(async move { self.add_launch(&launch).await })
    }

    fn link(&self, launch: u64, agent_id: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.set_launch(
            "UPDATE launches SET agent_id = $2 WHERE id = $1",
            launch,
            id(agent_id),
        ))
    }

    fn of_agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<Launch>, StoreError>> {
        Box::pin(self.launch_of(agent_id))
    }

    fn unlinked_in<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<Vec<Launch>, StoreError>> {
        Box::pin(self.launches_unlinked_in(pane))
    }

    fn worktrees(&self) -> BoxFuture<'_, Result<Vec<Launch>, StoreError>> {
        Box::pin(self.launched_worktrees())
    }

    fn stopped(&self, launch: u64, at: Timestamp) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.set_launch(
            "UPDATE launches SET stopped_at = to_timestamp($2::bigint / 1000.0) WHERE id = $1",
            launch,
            at.millis(),
        ))
    }

    fn discarded(&self, launch: u64, at: Timestamp) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.set_launch(
            "UPDATE launches SET discarded_at = to_timestamp($2::bigint / 1000.0) WHERE id = $1",
            launch,
            at.millis(),
        ))
    }
}
