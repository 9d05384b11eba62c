//! Commands to panes on another machine, on PostgreSQL (migration 0012; the rules in
//! [`headspace_core::cluster::pane_commands`]): a server writes a row for the machine that holds the
//! pane and announces it; that machine's executor claims it at most once, runs it and writes
//! the result back; the asking server waits for the result.
//!
//! One channel, `pane_commands`, carries every announcement, with the machine's name as the
//! payload: a channel per machine would be an identifier built from the name (`LISTEN` takes
//! no parameter, and names with `.` or `-` need quoting), while commands come at a person's
//! pace, so an executor woken for another machine's row costs nothing. The asking server polls
//! its row with a short backoff instead of holding a listening connection per request.

use super::listen::wake_on;
use super::PgStore;
use crate::server::pane_queue::{Look, PaneQueue, Signed};
use crate::server::store::BoxFuture;
use crate::server::store::StoreError;
use headspace_core::cluster::pane_commands::{CommandState, PaneCommandKind, CLAIM_WITHIN_MS};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Notify;

/// The channel that announces new commands (payload: the machine's name).
pub const COMMANDS_CHANNEL: &str = "pane_commands";

pub use crate::server::pane_queue::PaneCommand;

impl PgStore {
    /// Writes a pending command for `machine` (deadline [`CLAIM_WITHIN_MS`] from now), with
    /// its signature, and announces it, in one transaction: the announcement goes out when the
    /// row is visible.
    pub async fn submit_pane_command(
        &self,
        machine: &str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &Value,
        signed: Option<&Signed>,
    ) -> Result<i64, StoreError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        let row = tx
            .query_one(
                "INSERT INTO pane_commands (machine, agent_id, kind, body, deadline, envelope, signature, signer)
                 VALUES ($1, $2, $3, $4, now() + $5::float8 * interval '1 millisecond', $6, $7, $8) RETURNING id",
                &[
                    &machine,
                    &(agent_id as i64),
                    &kind.as_str(),
                    body,
                    &(CLAIM_WITHIN_MS as f64),
                    &signed.map(|s| s.envelope.as_str()),
                    &signed.map(|s| s.signature.as_str()),
                    &signed.map(|s| s.signer.as_str()),
                ],
            )
            .await?;
        tx.execute("SELECT pg_notify($1, $2)", &[&COMMANDS_CHANNEL, &machine])
            .await?;
        tx.commit().await?;
        Ok(row.get(0))
    }

    /// Writes a command that is refused from the start (its machine is offline), with the
    /// answer given: a record of what was asked, which no executor will ever take.
    pub async fn refuse_pane_command(
        &self,
        machine: &str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &Value,
        result: &Value,
    ) -> Result<i64, StoreError> {
        let c = self.pool.get().await?;
        let row = c
            .query_one(
                "INSERT INTO pane_commands (machine, agent_id, kind, body, state, result, deadline)
                 VALUES ($1, $2, $3, $4, 'refused', $5, now()) RETURNING id",
                &[&machine, &(agent_id as i64), &kind.as_str(), body, result],
            )
            .await?;
        Ok(row.get(0))
    }

    /// Takes up to `limit` of `machine`'s pending commands whose deadline has not passed, in
    /// id order, marking them running: a row is taken by one executor only (`SKIP LOCKED`
    /// lets two executors take different rows at once; neither takes the other's).
    pub async fn claim_pane_commands(
        &self,
        machine: &str,
        limit: i64,
    ) -> Result<Vec<PaneCommand>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                "UPDATE pane_commands SET state = 'running'
                 WHERE id IN (SELECT id FROM pane_commands
                              WHERE machine = $1 AND state = 'pending' AND deadline > now()
                              ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
                 RETURNING id, agent_id, kind, body, envelope, signature, signer",
                &[&machine, &limit],
            )
            .await?;
        let mut taken: Vec<PaneCommand> = rows
            .iter()
            .map(|r| {
                let kind: String = r.get(2);
                Ok(PaneCommand {
                    id: r.get(0),
                    agent_id: r.get::<_, i64>(1) as u64,
                    kind: PaneCommandKind::parse(&kind).ok_or_else(|| StoreError::BadValue {
                        value: kind.clone(),
                        reason: "not a pane command".into(),
                    })?,
                    body: r.get(3),
                    envelope: r.get(4),
                    signature: r.get(5),
                    signer: r.get(6),
                })
            })
            .collect::<Result<_, StoreError>>()?;
        taken.sort_by_key(|c| c.id);
        Ok(taken)
    }

    /// Writes a taken command's result (`{"status": N, "body": …}`); the asking server sees
    /// it at its next look.
    pub async fn finish_pane_command(&self, id: i64, result: &Value) -> Result<(), StoreError> {
        let c = self.pool.get().await?;
        c.execute(
            "UPDATE pane_commands SET state = 'done', result = $2 WHERE id = $1 AND state = 'running'",
            &[&id, result],
        )
        .await?;
        Ok(())
    }

    /// Refuses a command still pending (not taken before its deadline), so it can never run
    /// later. False when an executor took it first.
    pub async fn withdraw_pane_command(&self, id: i64) -> Result<bool, StoreError> {
        let c = self.pool.get().await?;
        let n = c
            .execute(
                "UPDATE pane_commands SET state = 'refused' WHERE id = $1 AND state = 'pending'",
                &[&id],
            )
            .await?;
        Ok(n == 1)
    }

    /// Deletes commands whose deadline passed more than a day ago, whatever their state (a
    /// row left running or pending by a process that died is as old as a finished one: no
    /// one waits for it); returns how many.
    pub async fn prune_pane_commands(&self) -> Result<u64, StoreError> {
        let c = self.pool.get().await?;
        Ok(c.execute(
            "DELETE FROM pane_commands WHERE deadline < now() - interval '1 day'",
            &[],
        )
        .await?)
    }

    /// A command's state, result, and how far past its deadline the database's clock is
    /// (milliseconds; negative before it).
    pub async fn pane_command(
        &self,
        id: i64,
    ) -> Result<Option<(CommandState, Option<Value>, i64)>, StoreError> {
        let c = self.pool.get().await?;
        let row = c
            .query_opt(
                "SELECT state, result, (extract(epoch from now() - deadline) * 1000)::bigint
                 FROM pane_commands WHERE id = $1",
                &[&id],
            )
            .await?;
        row.map(|r| {
            let state: String = r.get(0);
            let parsed = CommandState::parse(&state).ok_or_else(|| StoreError::BadValue {
                value: state.clone(),
                reason: "not a pane command state".into(),
            })?;
            Ok((parsed, r.get(1), r.get(2)))
        })
        .transpose()
    }
}

/// The queue on PostgreSQL: the `pane_commands` table, woken by `NOTIFY pane_commands` on a
/// listening connection of the executor's own.
#[derive(Clone)]
pub struct PgPaneQueue {
    /// The store whose database holds the table.
    pub store: PgStore,
    /// The database's address, for the listening connection.
    pub url: String,
}

impl PaneQueue for PgPaneQueue {
    fn submit<'a>(
        &'a self,
        machine: &'a str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &'a Value,
        signed: Option<&'a Signed>,
    ) -> BoxFuture<'a, Result<i64, StoreError>> {
        Box::pin(
            self.store
                .submit_pane_command(machine, agent_id, kind, body, signed),
        )
    }

    fn refuse<'a>(
        &'a self,
        machine: &'a str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &'a Value,
        result: &'a Value,
    ) -> BoxFuture<'a, Result<i64, StoreError>> {
        Box::pin(
            self.store
                .refuse_pane_command(machine, agent_id, kind, body, result),
        )
    }

    fn claim<'a>(
        &'a self,
        machine: &'a str,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<PaneCommand>, StoreError>> {
        Box::pin(self.store.claim_pane_commands(machine, limit))
    }

    fn finish<'a>(&'a self, id: i64, result: &'a Value) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.store.finish_pane_command(id, result))
    }

    fn look(&self, id: i64) -> BoxFuture<'_, Result<Option<Look>, StoreError>> {
        Box::pin(self.store.pane_command(id))
    }

    fn withdraw(&self, id: i64) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(self.store.withdraw_pane_command(id))
    }

    fn prune(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.store.prune_pane_commands())
    }

    fn wake_for(&self, machine: &str) -> Arc<Notify> {
        wake_on(
            self.url.clone(),
            COMMANDS_CHANNEL,
            Some(machine.to_string()),
        )
    }
}
