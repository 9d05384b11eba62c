//! The PostgreSQL store: applies the core's writes (batched, in order, idempotent), loads the
//! snapshot that restores the core, and answers the API's reads.

use crate::server::store::StoreError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use headspace_core::model::*;
use headspace_core::{Event, Write};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use tokio_postgres::NoTls;
use tracing::{error, warn};

mod audit;
pub mod db_url;
pub mod events;
mod history;
pub mod launches;
pub mod listen;
pub mod machines;
pub mod pane_commands;
mod reads;
mod search;
mod search_dense;
pub mod search_index;
mod search_sql;
mod steps;
mod store_impl;
pub mod tls;

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        StoreError::Database(crate::server::migrate::describe(&e))
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        StoreError::Unavailable(e.to_string())
    }
}

/// A pool of connections to the store.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// The machine this server is: its snapshot restores only that machine's agents.
    machine: Option<String>,
    /// Whether the events a batch causes are committed with it into `events` (an edge's,
    /// read by hubs).
    shares_events: bool,
}

/// Epoch milliseconds (a column or parameter) to `timestamptz`, exactly.
fn at(ms: &str) -> String {
    format!("(timestamptz 'epoch' + {ms} * interval '1 millisecond')")
}

/// Why a batch failed: the connection (retry it) or its data (split it).
enum Failure {
    Connection(StoreError),
    Data(StoreError),
}

impl Failure {
    fn of(e: tokio_postgres::Error) -> Failure {
        if is_about_the_rows(&e) {
            Failure::Data(e.into())
        } else {
            Failure::Connection(e.into())
        }
    }
}

/// True when `e` says the statement or its values cannot be taken, so the same write would
/// fail again on any connection: retried "until the database is back" it would hold every
/// later write for ever. The database's classes 22 (data exception), 23 (integrity
/// constraint) and 54 (program limit, such as an index row too large) are about the rows;
/// so are the driver's own refusals before anything is sent (a parameter it cannot encode,
/// a count of parameters or columns that does not match), which carry no SQLSTATE. Anything
/// else (the connection, the server's resources, a lock, a shutdown) may pass.
fn is_about_the_rows(e: &tokio_postgres::Error) -> bool {
    if let Some(code) = e.code() {
        let code = code.code();
        return ["22", "23", "54"]
            .iter()
            .any(|class| code.starts_with(class));
    }
    // tokio_postgres names its error kinds only in their text.
    let text = e.to_string();
    [
        "error serializing parameter",
        "expected ",
        "invalid column",
        "query returned an unexpected number",
    ]
    .iter()
    .any(|kind| text.starts_with(kind))
}

fn ms(col: &str) -> String {
    format!("(extract(epoch from {col}) * 1000)::bigint")
}

fn name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn parse<T: DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|e| {
        StoreError::BadValue {
            value: s.to_string(),
            reason: e.to_string(),
        }
    })
}

fn id(v: u64) -> i64 {
    v as i64
}

impl PgStore {
    /// A pool for `url` (a libpq-style connection string or URL).
    pub fn new(url: &str, size: usize) -> Result<PgStore, StoreError> {
        PgStore::for_machine(url, size, None)
    }

    /// A pool whose connections name `machine` (see migration 0011: the agent rows they
    /// insert are stamped with it). The name must pass [`crate::server::machines::valid_name`].
    pub fn for_machine(
        url: &str,
        size: usize,
        machine: Option<&str>,
    ) -> Result<PgStore, StoreError> {
        let target = tls::DbTarget::parse(url).map_err(StoreError::BadUrl)?;
        let mut cfg = target.config;
        if let Some(name) = machine {
            let given = cfg.get_options().unwrap_or("").to_string();
            cfg.options(format!("{given} -c headspace.machine={name}").trim());
        }
        let recycling = || ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let mgr = match target.tls {
            Some(tls) => Manager::from_config(cfg, tls, recycling()),
            None => Manager::from_config(cfg, NoTls, recycling()),
        };
        let pool = Pool::builder(mgr)
            .max_size(size)
            .build()
            .map_err(|e| StoreError::Pool(e.to_string()))?;
        Ok(PgStore {
            pool,
            machine: machine.map(str::to_string),
            shares_events: false,
        })
    }

    /// The same pool, committing each batch's events into the shared `events` table and
    /// announcing them (`NOTIFY hs_events`), for hubs to serve (`--role edge`).
    pub fn sharing_events(mut self) -> PgStore {
        self.shares_events = true;
        self
    }

    /// True when a query goes through.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let c = self.pool.get().await?;
        c.simple_query("SELECT 1").await?;
        Ok(())
    }

    /// Applies writes in one transaction. Each kind of write becomes one multi-row statement,
    /// in foreign-key order (agents, tasks, turns, claims, hook matches, offsets); agent, task
    /// and offset rows are full-row upserts, so only the last version of each is written.
    /// Safe to retry after any failure. A batch that fails on its data (not the connection) is
    /// applied write by write, and a write the database refuses is logged and dropped so one
    /// bad row can never stall the server.
    pub async fn apply(&self, writes: &[Write]) -> Result<(), StoreError> {
        self.apply_announcing(writes, &[]).await
    }

    /// As [`PgStore::apply`], with the events the writes cause committed in the same
    /// transaction when this store shares events ([`PgStore::sharing_events`]): a hub never
    /// shows an event whose change it cannot read, nor misses one whose change committed.
    pub async fn apply_announcing(
        &self,
        writes: &[Write],
        events: &[&Event],
    ) -> Result<(), StoreError> {
        let events = if self.shares_events { events } else { &[] };
        if writes.is_empty() && events.is_empty() {
            return Ok(());
        }
        match self.apply_batch(writes, events).await {
            Err(Failure::Data(e)) => {
                warn!(
                    "[STORE] batch refused ({e}); applying its {} writes one by one",
                    writes.len()
                );
                for w in writes {
                    match self.apply_batch(std::slice::from_ref(w), &[]).await {
                        Ok(()) => {}
                        Err(Failure::Data(e)) => {
                            error!("[STORE] write dropped, the database refuses it: {e}: {w:?}")
                        }
                        Err(Failure::Connection(e)) => return Err(e),
                    }
                }
                // The events after every write that could be kept.
                match self.apply_batch(&[], events).await {
                    Ok(()) => Ok(()),
                    Err(Failure::Data(e)) => {
                        error!(
                            "[STORE] {} events dropped, the database refuses them: {e}",
                            events.len()
                        );
                        Ok(())
                    }
                    Err(Failure::Connection(e)) => Err(e),
                }
            }
            Err(Failure::Connection(e)) => Err(e),
            Ok(()) => Ok(()),
        }
    }

    async fn apply_batch(&self, writes: &[Write], events: &[&Event]) -> Result<(), Failure> {
        let mut agents: BTreeMap<u64, &AgentRow> = BTreeMap::new();
        let mut tasks: BTreeMap<u64, &TaskRow> = BTreeMap::new();
        let mut offsets: BTreeMap<&str, &OffsetRow> = BTreeMap::new();
        let mut turns: Vec<&TurnRow> = Vec::new();
        let mut claims: Vec<(i64, &str, Option<i64>, i64)> = Vec::new();
        let mut claimed = std::collections::BTreeSet::new();
        let mut matched: BTreeMap<i64, &str> = BTreeMap::new();
        let mut merges: Vec<(i64, i64)> = Vec::new();
        let mut rewinds: Vec<(i64, &str, i64)> = Vec::new();
        let mut step_ops = steps::StepOps::default();
        for w in writes {
            match w {
                Write::Agent(a) => {
                    agents.insert(a.id, a);
                }
                Write::Task(t) => {
                    tasks.insert(t.id, t);
                }
                Write::Turn(t) => turns.push(t),
                Write::Claim {
                    turn_id,
                    entry_uuid,
                    timestamp,
                    task_id,
                } => {
                    if claimed.insert(entry_uuid.as_str()) {
                        claims.push((
                            id(*turn_id),
                            entry_uuid,
                            timestamp.map(|t| t.millis()),
                            id(*task_id),
                        ));
                    }
                }
                Write::HookMatched { turn_id, hook_key } => {
                    matched.entry(id(*turn_id)).or_insert(hook_key);
                }
                Write::Rewound {
                    agent_id,
                    entry_uuid,
                    at,
                } => rewinds.push((id(*agent_id), entry_uuid, at.millis())),
                Write::Offset(o) => {
                    offsets.insert(&o.path, o);
                }
                Write::MergeAgent { from, into } => merges.push((id(*from), id(*into))),
                Write::Step(st) => step_ops.step(st),
                Write::StepsInterrupted { agent_id, at } => step_ops.interrupt(*agent_id, *at),
                Write::Usage(u) => step_ops.usage(u),
            }
        }
        let mut client = self
            .pool
            .get()
            .await
            .map_err(|e| Failure::Connection(e.into()))?;
        let tx = client.transaction().await.map_err(Failure::of)?;
        if !agents.is_empty() {
            let a: Vec<&AgentRow> = agents.into_values().collect();
            run(
                &tx,
                &format!(
                    "INSERT INTO agents (id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, last_seen_at, sent_at, permission, end_reason, claude_pid, git_branch, kind)
                     SELECT u.id, u.session_id, ARRAY(SELECT jsonb_array_elements_text(u.sessions::jsonb)), u.project, u.cwd, u.transcript_path,
                            u.tmux_pane, u.ended, u.waiting, {}, CASE WHEN u.sent_ms IS NULL THEN NULL ELSE {} END, u.permission, u.end_reason, u.claude_pid, u.git_branch, u.kind
                     FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::bool[], $10::bigint[], $11::bigint[], $12::jsonb[], $13::text[], $14::bigint[], $15::text[], $16::text[])
                          AS u(id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting, ms, sent_ms, permission, end_reason, claude_pid, git_branch, kind)
                     ON CONFLICT (id) DO UPDATE SET session_id=EXCLUDED.session_id, sessions=EXCLUDED.sessions, project=EXCLUDED.project,
                       cwd=EXCLUDED.cwd, transcript_path=EXCLUDED.transcript_path, tmux_pane=EXCLUDED.tmux_pane, ended=EXCLUDED.ended,
                       waiting_permission=EXCLUDED.waiting_permission, last_seen_at=EXCLUDED.last_seen_at, sent_at=EXCLUDED.sent_at,
                       permission=EXCLUDED.permission, end_reason=EXCLUDED.end_reason, claude_pid=EXCLUDED.claude_pid, git_branch=EXCLUDED.git_branch, kind=EXCLUDED.kind",
                    at("u.ms"),
                    at("u.sent_ms")
                ),
                &[
                    &a.iter().map(|r| id(r.id)).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.session_id.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| serde_json::to_string(&r.sessions).unwrap_or_default()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.project.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.cwd.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.transcript_path.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.tmux_pane.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.ended).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.waiting_permission).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.last_seen_at.millis()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.sent_at.map(|t| t.millis())).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.permission.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.end_reason.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.claude_pid.map(i64::from)).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.git_branch.clone()).collect::<Vec<_>>(),
                    &a.iter().map(|r| r.kind.name()).collect::<Vec<_>>(),
                ],
            )
            .await?;
        }
        if !tasks.is_empty() {
            let t: Vec<&TaskRow> = tasks.into_values().collect();
            run(
                &tx,
                &format!(
                    "INSERT INTO tasks (id, agent_id, session_id, state, transcript_state, started_at, hook_turn_end_at, state_since)
                     SELECT u.id, u.agent_id, u.session_id, u.state, u.tx, {}, CASE WHEN u.end_ms IS NULL THEN NULL ELSE {} END, {}
                     FROM UNNEST($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[])
                          AS u(id, agent_id, session_id, state, tx, ms, end_ms, since_ms)
                     ON CONFLICT (id) DO UPDATE SET state=EXCLUDED.state, transcript_state=EXCLUDED.transcript_state,
                       started_at=EXCLUDED.started_at, hook_turn_end_at=EXCLUDED.hook_turn_end_at, session_id=EXCLUDED.session_id,
                       agent_id=EXCLUDED.agent_id,
                       state_since=EXCLUDED.state_since",
                    at("u.ms"),
                    at("u.end_ms"),
                    at("u.since_ms")
                ),
                &[
                    &t.iter().map(|r| id(r.id)).collect::<Vec<_>>(),
                    &t.iter().map(|r| id(r.agent_id)).collect::<Vec<_>>(),
                    &t.iter().map(|r| r.session_id.clone()).collect::<Vec<_>>(),
                    &t.iter().map(|r| r.state.as_str()).collect::<Vec<_>>(),
                    &t.iter().map(|r| r.transcript_state.as_str()).collect::<Vec<_>>(),
                    &t.iter().map(|r| r.started_at.millis()).collect::<Vec<_>>(),
                    &t.iter().map(|r| r.hook_turn_end_at.map(|x| x.millis())).collect::<Vec<_>>(),
                    &t.iter().map(|r| r.state_since.millis()).collect::<Vec<_>>(),
                ],
            )
            .await?;
        }
        if !turns.is_empty() {
            run(
                &tx,
                &format!(
                    "INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source, hook_key, prompt_id, tool_use_id, question, session_id)
                     SELECT u.id, u.agent_id, u.task_id, u.actor, u.intent, u.text, {}, u.ts_source, u.entry_uuid, u.source, u.hook_key, u.prompt_id,
                            u.tool_use_id, u.question, u.session_id
                     FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[],
                                 $10::text[], $11::text[], $12::text[], $13::text[], $14::jsonb[], $15::text[])
                          AS u(id, agent_id, task_id, actor, intent, text, ms, ts_source, entry_uuid, source, hook_key, prompt_id, tool_use_id, question, session_id)
                     ON CONFLICT DO NOTHING",
                    at("u.ms")
                ),
                &[
                    &turns.iter().map(|r| id(r.id)).collect::<Vec<_>>(),
                    &turns.iter().map(|r| id(r.agent_id)).collect::<Vec<_>>(),
                    &turns.iter().map(|r| id(r.task_id)).collect::<Vec<_>>(),
                    &turns.iter().map(|r| name(&r.actor)).collect::<Vec<_>>(),
                    &turns.iter().map(|r| name(&r.intent)).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.text.clone()).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.timestamp.millis()).collect::<Vec<_>>(),
                    &turns.iter().map(|r| name(&r.timestamp_source)).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.entry_uuid.clone()).collect::<Vec<_>>(),
                    &turns.iter().map(|r| name(&r.source)).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.hook_key.clone()).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.prompt_id.clone()).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.tool_use_id.clone()).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.question.clone()).collect::<Vec<_>>(),
                    &turns.iter().map(|r| r.session_id.clone()).collect::<Vec<_>>(),
                ],
            )
            .await?;
        }
        if !claims.is_empty() || !matched.is_empty() {
            // The updates below find their turns by id. A plan made while `turns` was small
            // (a new database, before autovacuum's first analyze) would scan the table on
            // every hook from then on: 3 ms each at 3,600 turns, in the 1,000-agent bench.
            tx.batch_execute("SET LOCAL enable_seqscan = off")
                .await
                .map_err(Failure::of)?;
        }
        if !claims.is_empty() {
            run(
                &tx,
                &format!(
                    "UPDATE turns t SET entry_uuid = c.entry_uuid, task_id = c.task_id,
                       \"timestamp\" = CASE WHEN c.ms IS NULL THEN t.\"timestamp\" ELSE {} END,
                       timestamp_source = CASE WHEN c.ms IS NULL THEN t.timestamp_source ELSE 'jsonl' END
                     FROM UNNEST($1::bigint[], $2::text[], $3::bigint[], $4::bigint[]) AS c(turn_id, entry_uuid, ms, task_id)
                     WHERE t.id = c.turn_id AND t.entry_uuid IS NULL
                       AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.agent_id = t.agent_id AND o.entry_uuid = c.entry_uuid)",
                    at("c.ms")
                ),
                &[
                    &claims.iter().map(|c| c.0).collect::<Vec<_>>(),
                    &claims.iter().map(|c| c.1).collect::<Vec<_>>(),
                    &claims.iter().map(|c| c.2).collect::<Vec<_>>(),
                    &claims.iter().map(|c| c.3).collect::<Vec<_>>(),
                ],
            )
            .await?;
        }
        if !matched.is_empty() {
            let (ids, keys): (Vec<i64>, Vec<&str>) = matched.into_iter().unzip();
            run(
                &tx,
                "UPDATE turns t SET hook_key = COALESCE(t.hook_key, m.key) FROM UNNEST($1::bigint[], $2::text[]) AS m(id, key) WHERE t.id = m.id",
                &[&ids, &keys],
            )
            .await?;
        }
        // After the turns and claims: the message gone back to may be in this batch.
        for (agent, entry_uuid, ms) in rewinds {
            run(
                &tx,
                &format!(
                    "UPDATE turns t SET rewound_at = {}
                     FROM (SELECT session_id, \"timestamp\", id FROM turns WHERE agent_id = $1 AND entry_uuid = $2 LIMIT 1) r
                     WHERE t.agent_id = $1 AND t.rewound_at IS NULL AND t.session_id IS NOT DISTINCT FROM r.session_id
                       AND (t.\"timestamp\", t.id) >= (r.\"timestamp\", r.id)",
                    at("$3::bigint")
                ),
                &[&agent, &entry_uuid, &ms],
            )
            .await?;
        }
        if !offsets.is_empty() {
            let o: Vec<&OffsetRow> = offsets.into_values().collect();
            run(
                &tx,
                "INSERT INTO transcript_offsets (path, session_id, \"offset\", task_id)
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::bigint[])
                 ON CONFLICT (machine, path) DO UPDATE SET session_id=EXCLUDED.session_id, \"offset\"=EXCLUDED.\"offset\", task_id=EXCLUDED.task_id",
                &[
                    &o.iter().map(|r| r.path.clone()).collect::<Vec<_>>(),
                    &o.iter().map(|r| r.session_id.clone()).collect::<Vec<_>>(),
                    &o.iter().map(|r| r.offset as i64).collect::<Vec<_>>(),
                    &o.iter().map(|r| r.task_id.map(id)).collect::<Vec<_>>(),
                ],
            )
            .await?;
        }
        step_ops.apply(&tx).await.map_err(Failure::of)?;
        // Merges last: whatever this batch wrote for the agent that goes moves with it.
        for (from, into) in merges {
            steps::merge_agent(&tx, from, into)
                .await
                .map_err(Failure::of)?;
            tx.execute(
                "UPDATE tasks SET agent_id = $2 WHERE agent_id = $1",
                &[&from, &into],
            )
            .await
            .map_err(Failure::of)?;
            tx.execute(
                "UPDATE turns SET agent_id = $2 WHERE agent_id = $1",
                &[&from, &into],
            )
            .await
            .map_err(Failure::of)?;
            tx.execute("DELETE FROM agents WHERE id = $1", &[&from])
                .await
                .map_err(Failure::of)?;
        }
        if !events.is_empty() {
            let machine = self.machine.as_deref().unwrap_or("");
            run(
                &tx,
                events::APPEND_MANY,
                &events::append_params(machine, events).refs(),
            )
            .await?;
            // Delivered on commit, so a hub never wakes for an event it cannot read yet.
            run(&tx, events::ANNOUNCE, &[&events::CHANNEL]).await?;
        }
        tx.commit().await.map_err(Failure::of)?;
        Ok(())
    }
}

/// Runs one statement of a batch, prepared once per connection: a batch's statements are the
/// same few texts every time, and an unprepared one costs a second round trip.
async fn run(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<u64, Failure> {
    let statement = tx.prepare_cached(sql).await.map_err(Failure::of)?;
    tx.execute(&statement, params).await.map_err(Failure::of)
}

#[cfg(test)]
mod tests {
    use super::is_about_the_rows;

    /// Real errors from a real PostgreSQL (`DATABASE_URL`, set by `make test`), sorted into
    /// "about the rows" (split the batch, drop the write) and "about the connection" (retry).
    #[tokio::test]
    async fn a_write_the_driver_cannot_encode_is_about_the_rows_not_the_connection() {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            assert!(
                std::env::var_os("CI").is_none(),
                "DATABASE_URL must be set on CI"
            );
            eprintln!("skipped: no DATABASE_URL");
            return;
        };
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        let connection = tokio::spawn(connection);

        // A parameter of the wrong type is refused by the driver before anything is sent:
        // no SQLSTATE, and it would fail the same way on every retry.
        let unencodable = client
            .execute("SELECT $1::bigint", &[&1i32])
            .await
            .unwrap_err();
        assert!(unencodable.code().is_none(), "{unencodable}");
        assert!(is_about_the_rows(&unencodable), "{unencodable}");
        let miscounted = client.execute("SELECT $1::bigint", &[]).await.unwrap_err();
        assert!(is_about_the_rows(&miscounted), "{miscounted}");
        // A value the database refuses (22021: a NUL in text) and a broken constraint (23).
        let refused = client
            .execute("SELECT $1::text", &[&"a\0b"])
            .await
            .unwrap_err();
        assert!(is_about_the_rows(&refused), "{refused}");
        let broken = client
            .batch_execute("CREATE TEMP TABLE t (x int PRIMARY KEY); INSERT INTO t VALUES (1), (1)")
            .await
            .unwrap_err();
        assert!(is_about_the_rows(&broken), "{broken}");

        // The connection ended under the statement: retry.
        let _ = client
            .batch_execute("SELECT pg_terminate_backend(pg_backend_pid())")
            .await;
        let gone = client.execute("SELECT 1", &[]).await.unwrap_err();
        assert!(!is_about_the_rows(&gone), "{gone}");
        let _ = connection.await;
    }
}
