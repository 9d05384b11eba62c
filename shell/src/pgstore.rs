//! The PostgreSQL store: applies the core's writes (batched, in order, idempotent), loads the
//! snapshot that restores the core, and answers the API's reads.

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use headspace_core::model::*;
use headspace_core::Write;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

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

/// Epoch milliseconds to `timestamptz`, exactly.
const TS: &str = "(timestamptz 'epoch' + $N::bigint * interval '1 millisecond')";

fn ts(n: usize) -> String {
    TS.replace("$N", &format!("${n}"))
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

    /// Applies writes in one transaction, in order. Agent and task rows are full-row upserts,
    /// so within a batch only the last version of each is written, at the place of the first
    /// (rows must exist before the turns that name them). Safe to retry after any failure.
    pub async fn apply(&self, writes: &[Write]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let mut last_agent = BTreeMap::new();
        let mut last_task = BTreeMap::new();
        for (i, w) in writes.iter().enumerate() {
            match w {
                Write::Agent(a) => {
                    last_agent.insert(a.id, i);
                }
                Write::Task(t) => {
                    last_task.insert(t.id, i);
                }
                _ => {}
            }
        }
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let up_agent = tx
            .prepare_cached(&format!(
                "INSERT INTO agents (id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, last_seen_at)
                 VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,{})
                 ON CONFLICT (id) DO UPDATE SET session_id=EXCLUDED.session_id, sessions=EXCLUDED.sessions, project=EXCLUDED.project,
                   cwd=EXCLUDED.cwd, transcript_path=EXCLUDED.transcript_path, tmux_pane=EXCLUDED.tmux_pane, ended=EXCLUDED.ended,
                   waiting_permission=EXCLUDED.waiting_permission, last_seen_at=EXCLUDED.last_seen_at",
                ts(10)
            ))
            .await?;
        let up_task = tx
            .prepare_cached(&format!(
                "INSERT INTO tasks (id, agent_id, session_id, state, transcript_state, started_at, hook_turn_end_at)
                 VALUES ($1,$2,$3,$4,$5,{},CASE WHEN $7::bigint IS NULL THEN NULL ELSE {} END)
                 ON CONFLICT (id) DO UPDATE SET state=EXCLUDED.state, transcript_state=EXCLUDED.transcript_state,
                   started_at=EXCLUDED.started_at, hook_turn_end_at=EXCLUDED.hook_turn_end_at, session_id=EXCLUDED.session_id",
                ts(6),
                ts(7)
            ))
            .await?;
        let ins_turn = tx
            .prepare_cached(&format!(
                "INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source, hook_key, prompt_id, tool_use_id, question, session_id)
                 VALUES ($1,$2,$3,$4,$5,$6,{},$8,$9,$10,$11,$12,$13,$14,$15) ON CONFLICT DO NOTHING",
                ts(7)
            ))
            .await?;
        let claim = tx
            .prepare_cached(&format!(
                "UPDATE turns t SET entry_uuid=$2, task_id=$4,
                   \"timestamp\" = CASE WHEN $3::bigint IS NULL THEN t.\"timestamp\" ELSE {} END,
                   timestamp_source = CASE WHEN $3::bigint IS NULL THEN t.timestamp_source ELSE 'jsonl' END
                 WHERE t.id=$1 AND t.entry_uuid IS NULL
                   AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.agent_id = t.agent_id AND o.entry_uuid = $2)",
                ts(3)
            ))
            .await?;
        let matched = tx
            .prepare_cached("UPDATE turns SET hook_key = COALESCE(hook_key, $2) WHERE id=$1")
            .await?;
        let offset = tx
            .prepare_cached(
                "INSERT INTO transcript_offsets (path, session_id, \"offset\", task_id) VALUES ($1,$2,$3,$4)
                 ON CONFLICT (path) DO UPDATE SET session_id=EXCLUDED.session_id, \"offset\"=EXCLUDED.\"offset\", task_id=EXCLUDED.task_id",
            )
            .await?;
        // Pipelined: every statement is sent at once, in order, and awaited together.
        let mut futures = Vec::with_capacity(writes.len());
        let mut written_agents = std::collections::BTreeSet::new();
        let mut written_tasks = std::collections::BTreeSet::new();
        for w in writes {
            let params: Vec<Box<dyn ToSql + Sync + Send>> = match w {
                Write::Agent(a) => {
                    if !written_agents.insert(a.id) {
                        continue;
                    }
                    let Write::Agent(a) = &writes[last_agent[&a.id]] else {
                        unreachable!()
                    };
                    vec![
                        Box::new(id(a.id)),
                        Box::new(a.session_id.clone()),
                        Box::new(a.sessions.clone()),
                        Box::new(a.project.clone()),
                        Box::new(a.cwd.clone()),
                        Box::new(a.transcript_path.clone()),
                        Box::new(a.tmux_pane.clone()),
                        Box::new(a.ended),
                        Box::new(a.waiting_permission),
                        Box::new(a.last_seen_at.millis()),
                    ]
                }
                Write::Task(t) => {
                    if !written_tasks.insert(t.id) {
                        continue;
                    }
                    let Write::Task(t) = &writes[last_task[&t.id]] else {
                        unreachable!()
                    };
                    vec![
                        Box::new(id(t.id)),
                        Box::new(id(t.agent_id)),
                        Box::new(t.session_id.clone()),
                        Box::new(t.state.as_str().to_string()),
                        Box::new(t.transcript_state.as_str().to_string()),
                        Box::new(t.started_at.millis()),
                        Box::new(t.hook_turn_end_at.map(|x| x.millis())),
                    ]
                }
                Write::Turn(t) => vec![
                    Box::new(id(t.id)),
                    Box::new(id(t.agent_id)),
                    Box::new(id(t.task_id)),
                    Box::new(name(&t.actor)),
                    Box::new(name(&t.intent)),
                    Box::new(t.text.clone()),
                    Box::new(t.timestamp.millis()),
                    Box::new(name(&t.timestamp_source)),
                    Box::new(t.entry_uuid.clone()),
                    Box::new(name(&t.source)),
                    Box::new(t.hook_key.clone()),
                    Box::new(t.prompt_id.clone()),
                    Box::new(t.tool_use_id.clone()),
                    Box::new(t.question.clone()),
                    Box::new(t.session_id.clone()),
                ],
                Write::Claim {
                    turn_id,
                    entry_uuid,
                    timestamp,
                    task_id,
                } => vec![
                    Box::new(id(*turn_id)),
                    Box::new(entry_uuid.clone()),
                    Box::new(timestamp.map(|t| t.millis())),
                    Box::new(id(*task_id)),
                ],
                Write::HookMatched { turn_id, hook_key } => {
                    vec![Box::new(id(*turn_id)), Box::new(hook_key.clone())]
                }
                Write::Offset(o) => vec![
                    Box::new(o.path.clone()),
                    Box::new(o.session_id.clone()),
                    Box::new(o.offset as i64),
                    Box::new(o.task_id.map(id)),
                ],
            };
            let stmt = match w {
                Write::Agent(_) => &up_agent,
                Write::Task(_) => &up_task,
                Write::Turn(_) => &ins_turn,
                Write::Claim { .. } => &claim,
                Write::HookMatched { .. } => &matched,
                Write::Offset(_) => &offset,
            };
            let tx = &tx;
            futures.push(async move {
                let refs: Vec<&(dyn ToSql + Sync)> = params
                    .iter()
                    .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                    .collect();
                tx.execute(stmt, &refs).await
            });
        }
        for r in futures_util::future::join_all(futures).await {
            r?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Everything the core needs to rebuild itself.
    pub async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let c = self.pool.get().await?;
        let agents = c
            .query(&format!("SELECT id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, {} FROM agents ORDER BY id", ms("last_seen_at")), &[])
            .await?
            .iter()
            .map(agent_row)
            .collect();
        let tasks = c
            .query(&format!("SELECT id, agent_id, session_id, state, transcript_state, {}, {} FROM tasks ORDER BY id", ms("started_at"), ms("hook_turn_end_at")), &[])
            .await?
            .iter()
            .map(task_row)
            .collect::<Result<_, _>>()?;
        let turns = c
            .query(&format!("{TURN_SELECT} ORDER BY id"), &[])
            .await?
            .iter()
            .map(turn_row)
            .collect::<Result<_, _>>()?;
        let offsets = c
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
        Ok(Snapshot {
            agents,
            tasks,
            turns,
            offsets,
        })
    }

    /// All agents with their current task and turn count.
    pub async fn agents(&self) -> Result<Vec<(AgentRow, Option<TaskRow>, i64)>, StoreError> {
        self.agents_where("", &[]).await
    }

    /// One agent by id.
    pub async fn agent(
        &self,
        agent_id: u64,
    ) -> Result<Option<(AgentRow, Option<TaskRow>, i64)>, StoreError> {
        Ok(self
            .agents_where("WHERE a.id = $1", &[&id(agent_id)])
            .await?
            .pop())
    }

    async fn agents_where(
        &self,
        filter: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<(AgentRow, Option<TaskRow>, i64)>, StoreError> {
        let c = self.pool.get().await?;
        let sql = format!(
            "SELECT a.id, a.session_id, a.sessions, a.project, a.cwd, a.transcript_path, a.tmux_pane, a.ended, a.waiting_permission, {},
                    t.id, t.agent_id, t.session_id, t.state, t.transcript_state, {}, {},
                    (SELECT count(*) FROM turns u WHERE u.agent_id = a.id)
             FROM agents a
             LEFT JOIN LATERAL (SELECT * FROM tasks x WHERE x.agent_id = a.id ORDER BY x.started_at DESC, x.id DESC LIMIT 1) t ON true
             {filter} ORDER BY a.id",
            ms("a.last_seen_at"),
            ms("t.started_at"),
            ms("t.hook_turn_end_at")
        );
        let rows = c.query(&sql, params).await?;
        let mut out = Vec::new();
        for r in rows {
            let agent = agent_row(&r);
            let task = match r.get::<_, Option<i64>>(10) {
                Some(_) => Some(task_at(&r, 10)?),
                None => None,
            };
            out.push((agent, task, r.get::<_, i64>(17)));
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
