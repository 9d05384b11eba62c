//! The PostgreSQL store: applies the core's writes (batched, in order, idempotent), loads the
//! snapshot that restores the core, and answers the API's reads.

use crate::world::{BoxFuture, Waited};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use headspace_core::model::*;
use headspace_core::Write;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};
use tracing::{error, warn};

/// An agent as the API shows it: its row, its current task, and what its card needs.
#[derive(Clone, Debug)]
pub struct AgentView {
    /// The agent.
    pub agent: AgentRow,
    /// Its current task.
    pub task: Option<TaskRow>,
    /// All its turns.
    pub turn_count: i64,
    /// The current task's command (its first user turn).
    pub command: Option<String>,
    /// Its latest turn.
    pub last_turn: Option<LastTurn>,
    /// The open question (text and structure) while it awaits input.
    pub question: Option<(String, Option<serde_json::Value>)>,
}

/// An agent's latest turn, as its card shows it.
#[derive(Clone, Debug)]
pub struct LastTurn {
    /// `user` or `agent`.
    pub actor: String,
    /// Its intent.
    pub intent: String,
    /// Its text.
    pub text: String,
    /// Its time.
    pub timestamp: headspace_core::Timestamp,
}

/// A store error, with the server's own message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        StoreError(crate::migrate::describe(&e))
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        StoreError(format!("database unavailable: {e}"))
    }
}

/// A pool of connections to the store.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
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
        // Classes 22 (data exception) and 23 (integrity constraint) are about the rows.
        let data = e
            .code()
            .is_some_and(|c| c.code().starts_with("22") || c.code().starts_with("23"));
        if data {
            Failure::Data(e.into())
        } else {
            Failure::Connection(e.into())
        }
    }
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
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|e| StoreError(format!("bad stored value {s:?}: {e}")))
}

fn id(v: u64) -> i64 {
    v as i64
}

impl PgStore {
    /// A pool for `url` (a libpq-style connection string or URL).
    pub fn new(url: &str, size: usize) -> Result<PgStore, StoreError> {
        let cfg: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| StoreError(format!("bad database url: {e}")))?;
        let mgr = Manager::from_config(
            cfg,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(mgr)
            .max_size(size)
            .build()
            .map_err(|e| StoreError(e.to_string()))?;
        Ok(PgStore { pool })
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
        if writes.is_empty() {
            return Ok(());
        }
        match self.apply_batch(writes).await {
            Err(Failure::Data(e)) => {
                warn!(
                    "[STORE] batch refused ({e}); applying its {} writes one by one",
                    writes.len()
                );
                for w in writes {
                    match self.apply_batch(std::slice::from_ref(w)).await {
                        Ok(()) => {}
                        Err(Failure::Data(e)) => {
                            error!("[STORE] write dropped, the database refuses it: {e}: {w:?}")
                        }
                        Err(Failure::Connection(e)) => return Err(e),
                    }
                }
                Ok(())
            }
            Err(Failure::Connection(e)) => Err(e),
            Ok(()) => Ok(()),
        }
    }

    async fn apply_batch(&self, writes: &[Write]) -> Result<(), Failure> {
        let mut agents: BTreeMap<u64, &AgentRow> = BTreeMap::new();
        let mut tasks: BTreeMap<u64, &TaskRow> = BTreeMap::new();
        let mut offsets: BTreeMap<&str, &OffsetRow> = BTreeMap::new();
        let mut turns: Vec<&TurnRow> = Vec::new();
        let mut claims: Vec<(i64, &str, Option<i64>, i64)> = Vec::new();
        let mut claimed = std::collections::BTreeSet::new();
        let mut matched: BTreeMap<i64, &str> = BTreeMap::new();
        let mut merges: Vec<(i64, i64)> = Vec::new();
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
                Write::Offset(o) => {
                    offsets.insert(&o.path, o);
                }
                Write::MergeAgent { from, into } => merges.push((id(*from), id(*into))),
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
            tx.execute(
                &format!(
                    "INSERT INTO agents (id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, last_seen_at, sent_at, permission)
                     SELECT u.id, u.session_id, ARRAY(SELECT jsonb_array_elements_text(u.sessions::jsonb)), u.project, u.cwd, u.transcript_path,
                            u.tmux_pane, u.ended, u.waiting, {}, CASE WHEN u.sent_ms IS NULL THEN NULL ELSE {} END, u.permission
                     FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::bool[], $10::bigint[], $11::bigint[], $12::jsonb[])
                          AS u(id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting, ms, sent_ms, permission)
                     ON CONFLICT (id) DO UPDATE SET session_id=EXCLUDED.session_id, sessions=EXCLUDED.sessions, project=EXCLUDED.project,
                       cwd=EXCLUDED.cwd, transcript_path=EXCLUDED.transcript_path, tmux_pane=EXCLUDED.tmux_pane, ended=EXCLUDED.ended,
                       waiting_permission=EXCLUDED.waiting_permission, last_seen_at=EXCLUDED.last_seen_at, sent_at=EXCLUDED.sent_at,
                       permission=EXCLUDED.permission",
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
                ],
            )
            .await
            .map_err(Failure::of)?;
        }
        if !tasks.is_empty() {
            let t: Vec<&TaskRow> = tasks.into_values().collect();
            tx.execute(
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
            .await
            .map_err(Failure::of)?;
        }
        if !turns.is_empty() {
            tx.execute(
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
            .await
            .map_err(Failure::of)?;
        }
        if !claims.is_empty() {
            tx.execute(
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
            .await
            .map_err(Failure::of)?;
        }
        if !matched.is_empty() {
            let (ids, keys): (Vec<i64>, Vec<&str>) = matched.into_iter().unzip();
            tx.execute(
                "UPDATE turns t SET hook_key = COALESCE(t.hook_key, m.key) FROM UNNEST($1::bigint[], $2::text[]) AS m(id, key) WHERE t.id = m.id",
                &[&ids, &keys],
            )
            .await
            .map_err(Failure::of)?;
        }
        if !offsets.is_empty() {
            let o: Vec<&OffsetRow> = offsets.into_values().collect();
            tx.execute(
                "INSERT INTO transcript_offsets (path, session_id, \"offset\", task_id)
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::bigint[])
                 ON CONFLICT (path) DO UPDATE SET session_id=EXCLUDED.session_id, \"offset\"=EXCLUDED.\"offset\", task_id=EXCLUDED.task_id",
                &[
                    &o.iter().map(|r| r.path.clone()).collect::<Vec<_>>(),
                    &o.iter().map(|r| r.session_id.clone()).collect::<Vec<_>>(),
                    &o.iter().map(|r| r.offset as i64).collect::<Vec<_>>(),
                    &o.iter().map(|r| r.task_id.map(id)).collect::<Vec<_>>(),
                ],
            )
            .await
            .map_err(Failure::of)?;
        }
        // Merges last: whatever this batch wrote for the agent that goes moves with it.
        for (from, into) in merges {
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
        tx.commit().await.map_err(Failure::of)?;
        Ok(())
    }

    /// Everything the core needs to rebuild itself.
    pub async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let c = self.pool.get().await?;
        let mut snapshot = rows(&c, "", &[]).await?;
        snapshot.offsets = c
            .query("SELECT path, session_id, \"offset\", task_id FROM transcript_offsets ORDER BY path", &[])
            .await?
            .iter()
            .map(|r| OffsetRow {
                path: r.get(0),
                session_id: r.get(1),
                offset: r.get::<_, i64>(2) as u64,
                task_id: r.get::<_, Option<i64>>(3).map(|v| v as u64),
            })
            .collect();
        Ok(snapshot)
    }

    /// The rows of some agents (agent rows, tasks, turns; no offsets): what brings agents the
    /// core evicted from memory back into it.
    pub async fn load_agents(&self, ids: &[u64]) -> Result<Snapshot, StoreError> {
        let c = self.pool.get().await?;
        let ids: Vec<i64> = ids.iter().map(|i| id(*i)).collect();
        rows(&c, "= ANY($1)", &[&ids]).await
    }

    /// All agents with their current task and what their cards show.
    pub async fn agents(&self) -> Result<Vec<AgentView>, StoreError> {
        self.agents_where("", &[]).await
    }

    /// One agent by id.
    pub async fn agent(&self, agent_id: u64) -> Result<Option<AgentView>, StoreError> {
        Ok(self
            .agents_where("WHERE a.id = $1", &[&id(agent_id)])
            .await?
            .pop())
    }

    async fn agents_where(
        &self,
        filter: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<AgentView>, StoreError> {
        let c = self.pool.get().await?;
        let sql = format!(
            "SELECT a.id, a.session_id, a.sessions, a.project, a.cwd, a.transcript_path, a.tmux_pane, a.ended, a.waiting_permission, {}, {}, a.permission,
                    t.id, t.agent_id, t.session_id, t.state, t.transcript_state, {}, {}, {},
                    (SELECT count(*) FROM turns u WHERE u.agent_id = a.id),
                    (SELECT left(c.text, {p}) FROM turns c WHERE c.task_id = t.id AND c.actor = 'user' ORDER BY c.\"timestamp\", c.id LIMIT 1),
                    l.actor, l.intent, left(l.text, {p}), {},
                    left(q.text, {p}), q.question
             FROM agents a
             LEFT JOIN LATERAL (SELECT * FROM tasks x WHERE x.agent_id = a.id ORDER BY x.started_at DESC, x.id DESC LIMIT 1) t ON true
             LEFT JOIN LATERAL (SELECT * FROM turns y WHERE y.agent_id = a.id ORDER BY y.\"timestamp\" DESC, y.id DESC LIMIT 1) l ON true
             LEFT JOIN LATERAL (SELECT * FROM turns z WHERE z.task_id = t.id AND z.intent = 'question'
                                ORDER BY z.\"timestamp\" DESC, z.id DESC LIMIT 1) q ON t.state = 'awaiting_input'
             {filter} ORDER BY a.id",
            ms("a.last_seen_at"),
            ms("a.sent_at"),
            ms("t.started_at"),
            ms("t.hook_turn_end_at"),
            ms("t.state_since"),
            ms("l.\"timestamp\""),
            // A card shows previews; one more character than shown tells the text goes on.
            p = headspace_core::question::PREVIEW_CHARS + 1,
        );
        let rows = c.query(&sql, params).await?;
        let mut out = Vec::new();
        for r in rows {
            let task = match r.get::<_, Option<i64>>(12) {
                Some(_) => Some(task_at(&r, 12)?),
                None => None,
            };
            let last_turn = r.get::<_, Option<String>>(22).map(|actor| LastTurn {
                actor,
                intent: r.get(23),
                text: r.get(24),
                timestamp: headspace_core::Timestamp(r.get(25)),
            });
            out.push(AgentView {
                agent: agent_row(&r),
                task,
                turn_count: r.get(20),
                command: r.get(21),
                last_turn,
                question: r.get::<_, Option<String>>(26).map(|text| (text, r.get(27))),
            });
        }
        Ok(out)
    }

    /// The panes of agents still running, for the watchdog.
    pub async fn panes(&self) -> Result<Vec<String>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c.query("SELECT DISTINCT tmux_pane FROM agents WHERE tmux_pane IS NOT NULL AND NOT ended ORDER BY 1", &[]).await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Finds an agent by id, Claude session id (current or past) or tmux pane.
    pub async fn resolve(&self, reference: &str) -> Result<Option<u64>, StoreError> {
        let c = self.pool.get().await?;
        let by_id = reference.parse::<i64>().ok();
        let row = c
            .query_opt(
                "SELECT id FROM agents WHERE id = $1 OR session_id = $2 OR $2 = ANY(sessions) OR tmux_pane = $2 ORDER BY (id = $1) DESC, last_seen_at DESC LIMIT 1",
                &[&by_id.unwrap_or(-1), &reference],
            )
            .await?;
        Ok(row.map(|r| r.get::<_, i64>(0) as u64))
    }

    /// Runs `f` holding the cluster-wide reconcile lock of an agent, so two replicas never
    /// reconcile the same agent at once; `None` when another holds it.
    pub async fn with_reconcile_lock<T>(
        &self,
        agent_id: u64,
        f: impl std::future::Future<Output = T>,
    ) -> Result<Option<T>, StoreError> {
        let c = self.pool.get().await?;
        let key = id(agent_id);
        let got: bool = c
            .query_one(
                "SELECT pg_try_advisory_lock(726854002, $1::int)",
                &[&(key as i32)],
            )
            .await?
            .get(0);
        if !got {
            return Ok(None);
        }
        let out = f.await;
        c.execute(
            "SELECT pg_advisory_unlock(726854002, $1::int)",
            &[&(key as i32)],
        )
        .await?;
        Ok(Some(out))
    }

    /// An agent's turns ordered by (timestamp, id), after the turn `after` in that order.
    pub async fn turns(
        &self,
        agent_id: u64,
        after: Option<u64>,
        limit: i64,
    ) -> Result<Vec<TurnRow>, StoreError> {
        let c = self.pool.get().await?;
        let rows = match after {
            Some(a) => {
                c.query(
                    &format!(
                        "{TURN_SELECT} WHERE agent_id = $1 AND (\"timestamp\", id) > (SELECT \"timestamp\", id FROM turns WHERE id = $2)
                         ORDER BY \"timestamp\", id LIMIT $3"
                    ),
                    &[&id(agent_id), &id(a), &limit],
                )
                .await?
            }
            None => c.query(&format!("{TURN_SELECT} WHERE agent_id = $1 ORDER BY \"timestamp\", id LIMIT $2"), &[&id(agent_id), &limit]).await?,
        };
        rows.iter().map(turn_row).collect()
    }
}

const TURN_SELECT: &str = "SELECT id, agent_id, task_id, actor, intent, text, (extract(epoch from \"timestamp\") * 1000)::bigint, timestamp_source,
    entry_uuid, source, hook_key, prompt_id, tool_use_id, question, session_id FROM turns";

fn agent_row(r: &Row) -> AgentRow {
    AgentRow {
        id: r.get::<_, i64>(0) as u64,
        session_id: r.get(1),
        sessions: r.get(2),
        project: r.get(3),
        cwd: r.get(4),
        transcript_path: r.get(5),
        tmux_pane: r.get(6),
        ended: r.get(7),
        waiting_permission: r.get(8),
        last_seen_at: headspace_core::Timestamp(r.get(9)),
        sent_at: r.get::<_, Option<i64>>(10).map(headspace_core::Timestamp),
        permission: r.get(11),
    }
}

fn task_row(r: &Row) -> Result<TaskRow, StoreError> {
    task_at(r, 0)
}

fn task_at(r: &Row, o: usize) -> Result<TaskRow, StoreError> {
    Ok(TaskRow {
        id: r.get::<_, i64>(o) as u64,
        agent_id: r.get::<_, i64>(o + 1) as u64,
        session_id: r.get(o + 2),
        state: parse(r.get::<_, &str>(o + 3))?,
        transcript_state: parse(r.get::<_, &str>(o + 4))?,
        started_at: headspace_core::Timestamp(r.get(o + 5)),
        hook_turn_end_at: r
            .get::<_, Option<i64>>(o + 6)
            .map(headspace_core::Timestamp),
        state_since: headspace_core::Timestamp(r.get(o + 7)),
    })
}

fn turn_row(r: &Row) -> Result<TurnRow, StoreError> {
    Ok(TurnRow {
        id: r.get::<_, i64>(0) as u64,
        agent_id: r.get::<_, i64>(1) as u64,
        task_id: r.get::<_, i64>(2) as u64,
        actor: parse(r.get::<_, &str>(3))?,
        intent: parse(r.get::<_, &str>(4))?,
        text: r.get(5),
        timestamp: headspace_core::Timestamp(r.get(6)),
        timestamp_source: parse(r.get::<_, &str>(7))?,
        entry_uuid: r.get(8),
        source: parse(r.get::<_, &str>(9))?,
        hook_key: r.get(10),
        prompt_id: r.get(11),
        tool_use_id: r.get(12),
        question: r.get(13),
        session_id: r.get(14),
    })
}

impl crate::world::Store for PgStore {
    fn ping(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(PgStore::ping(self))
    }

    fn apply<'a>(&'a self, writes: &'a [Write]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(PgStore::apply(self, writes))
    }

    fn snapshot(&self) -> BoxFuture<'_, Result<Snapshot, StoreError>> {
        Box::pin(PgStore::snapshot(self))
    }

    fn load_agents<'a>(&'a self, ids: &'a [u64]) -> BoxFuture<'a, Result<Snapshot, StoreError>> {
        Box::pin(PgStore::load_agents(self, ids))
    }

    fn agents(&self) -> BoxFuture<'_, Result<Vec<AgentView>, StoreError>> {
        Box::pin(PgStore::agents(self))
    }

    fn agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<AgentView>, StoreError>> {
        Box::pin(PgStore::agent(self, agent_id))
    }

    fn panes(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(PgStore::panes(self))
    }

    fn resolve<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(PgStore::resolve(self, reference))
    }

    fn with_reconcile_lock<'a>(
        &'a self,
        agent_id: u64,
        f: BoxFuture<'a, Waited>,
    ) -> BoxFuture<'a, Result<Option<Waited>, StoreError>> {
        Box::pin(PgStore::with_reconcile_lock(self, agent_id, f))
    }

    fn turns(
        &self,
        agent_id: u64,
        after: Option<u64>,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<TurnRow>, StoreError>> {
        Box::pin(PgStore::turns(self, agent_id, after, limit))
    }
}

/// Agents (`id`), tasks and turns (`agent_id`) whose agent id matches `filter` (an SQL
/// condition on it, e.g. `= ANY($1)`; empty for all), without offsets.
async fn rows(
    c: &deadpool_postgres::Object,
    filter: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Snapshot, StoreError> {
    let on = |col: &str| {
        if filter.is_empty() {
            String::new()
        } else {
            format!("WHERE {col} {filter}")
        }
    };
    let agents = c
        .query(
            &format!(
                "SELECT id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, {}, {}, permission FROM agents {} ORDER BY id",
                ms("last_seen_at"),
                ms("sent_at"),
                on("id")
            ),
            params,
        )
        .await?
        .iter()
        .map(agent_row)
        .collect();
    let tasks = c
        .query(
            &format!(
                "SELECT id, agent_id, session_id, state, transcript_state, {}, {}, {} FROM tasks {} ORDER BY id",
                ms("started_at"),
                ms("hook_turn_end_at"),
                ms("state_since"),
                on("agent_id")
            ),
            params,
        )
        .await?
        .iter()
        .map(task_row)
        .collect::<Result<_, _>>()?;
    let turns = c
        .query(
            &format!("{TURN_SELECT} {} ORDER BY id", on("agent_id")),
            params,
        )
        .await?
        .iter()
        .map(turn_row)
        .collect::<Result<_, _>>()?;
    Ok(Snapshot {
        agents,
        tasks,
        turns,
        offsets: Vec::new(),
    })
}
