//! The pane commands the machines of one database pass each other (docs/multi-machine.md,
//! "Commands to panes"; the rules in [`headspace_core::cluster::pane_commands`]): the one boundary
//! that forwarding a send, an answer or an orchestration command crosses. A server writes a
//! command for the machine that holds the pane; that machine's executor claims it at most
//! once, runs it and writes the result; the asking server waits for the result.
//!
//! PostgreSQL implements it (`PgPaneQueue` in `pgstore/pane_commands.rs`), and so does
//! the simulation's shared database, so the simulation reaches cross-machine commands. A
//! server without a queue (its database is its alone) types into its own panes only.

use crate::server::backoff::Backoff;
use crate::server::store::{BoxFuture, StoreError};
use headspace_core::cluster::pane_commands::{
    await_step, AwaitStep, CommandState, PaneCommandKind,
};
use headspace_core::Config;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A command as signed: what goes into the row's `envelope`, `signature` and `signer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    /// The envelope's exact JSON text.
    pub envelope: String,
    /// The Ed25519 signature of [`headspace_core::cluster::pane_commands::SIGNED_PREFIX`] and the envelope, in hex.
    pub signature: String,
    /// The signer's public key, in hex.
    pub signer: String,
}

/// A command an executor took.
#[derive(Clone, Debug, PartialEq)]
pub struct PaneCommand {
    /// Its row.
    pub id: i64,
    /// The agent whose pane it is for.
    pub agent_id: u64,
    /// What to do.
    pub kind: PaneCommandKind,
    /// The request's arguments (and the reference it was asked with), as the row holds them:
    /// shown, never run (the executor runs the signed envelope's).
    pub body: Value,
    /// The signed envelope's text ([`crate::server::pane_keys`]), if the row has one.
    pub envelope: Option<String>,
    /// Its signature, in hex.
    pub signature: Option<String>,
    /// The signer's public key, in hex.
    pub signer: Option<String>,
}

/// How waiting on a forwarded command ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Awaited {
    /// The executor's result: `{"status": N, "body": …}`.
    Result(Value),
    /// Not taken before its deadline: refused, it will never run.
    NotTaken,
    /// Taken, but no result in time (it may still finish).
    NoResult,
}

/// A command's state, its result, and how far past its deadline the queue's clock is
/// (milliseconds; negative before it).
pub type Look = (CommandState, Option<Value>, i64);

/// The pane commands shared by the machines of one database. Deadlines are on the queue's
/// own clock (the database's), never a server's.
pub trait PaneQueue: Send + Sync {
    /// Writes a pending command for `machine` (deadline
    /// [`headspace_core::cluster::pane_commands::CLAIM_WITHIN_MS`] from now) with its signature, and
    /// wakes that machine's executor once the command is visible; its id.
    fn submit<'a>(
        &'a self,
        machine: &'a str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &'a Value,
        signed: Option<&'a Signed>,
    ) -> BoxFuture<'a, Result<i64, StoreError>>;

    /// Writes a command refused from the start (its machine is offline) with the answer
    /// given: a record of what was asked, which no executor will ever take; its id.
    fn refuse<'a>(
        &'a self,
        machine: &'a str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &'a Value,
        result: &'a Value,
    ) -> BoxFuture<'a, Result<i64, StoreError>>;

    /// Takes up to `limit` of `machine`'s pending commands whose deadline has not passed, in
    /// id order: each is taken by one executor only.
    fn claim<'a>(
        &'a self,
        machine: &'a str,
        limit: i64,
    ) -> BoxFuture<'a, Result<Vec<PaneCommand>, StoreError>>;

    /// Writes a taken command's result (`{"status": N, "body": …}`).
    fn finish<'a>(&'a self, id: i64, result: &'a Value) -> BoxFuture<'a, Result<(), StoreError>>;

    /// A command's state, result and distance from its deadline; `None` when it is gone.
    fn look(&self, id: i64) -> BoxFuture<'_, Result<Option<Look>, StoreError>>;

    /// Refuses a command still pending, so it can never run later. False when an executor
    /// took it first.
    fn withdraw(&self, id: i64) -> BoxFuture<'_, Result<bool, StoreError>>;

    /// Deletes commands whose deadline passed more than a day ago; how many.
    fn prune(&self) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// Woken when a command for `machine` may have been written (and once at the start);
    /// an executor also looks on its own every second, which covers a lost wake-up.
    fn wake_for(&self, machine: &str) -> Arc<Notify>;
}

/// Waits for a forwarded command's result, looking with a backoff from 20 ms to 200 ms; the
/// command is withdrawn when it is not taken by its deadline ([`await_step`] decides, on the
/// queue's clock).
pub async fn await_result(
    queue: &dyn PaneQueue,
    id: i64,
    rules: &Config,
) -> Result<Awaited, StoreError> {
    let mut pause = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    loop {
        let (state, result, past_deadline_ms) = queue
            .look(id)
            .await?
            .ok_or_else(|| StoreError::Database(format!("pane command {id} is gone")))?;
        match await_step(rules, state, past_deadline_ms) {
            AwaitStep::Answer => {
                return Ok(match (state, result) {
                    (CommandState::Done, Some(r)) => Awaited::Result(r),
                    _ => Awaited::NotTaken,
                })
            }
            AwaitStep::Withdraw => {
                if queue.withdraw(id).await? {
                    return Ok(Awaited::NotTaken);
                }
                // Taken in the meantime: it runs; wait for its result.
            }
            AwaitStep::GiveUp => return Ok(Awaited::NoResult),
            AwaitStep::LookAgain => {}
        }
        pause.pause().await;
    }
}
