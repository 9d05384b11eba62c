//! Reading the store: the snapshot that restores the core, agents loaded back, the agent
//! cards and turns the API shows, and the row decoders they share.

use super::{id, ms, parse, PgStore};
use crate::server::store::StoreError;
use headspace_core::model::*;
use headspace_core::view::{resolve_reference, AgentView, LastTurn, CLIPPED_CHARS};
use headspace_core::Timestamp;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

impl PgStore {
    /// Everything the core needs to rebuild itself.
    pub async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let c = self.pool.get().await?;
        // A server named for a machine restores only that machine's agents and offsets: on
        // a shared database each edge's core holds its own (rows stamped by its connections).
        let (mut snapshot, offsets) = match &self.machine {
            Some(m) => (
                rows(&c, "IN (SELECT id FROM agents WHERE machine = $1)", &[m]).await?,
                c.query("SELECT path, session_id, \"offset\", task_id FROM transcript_offsets WHERE machine = $1 ORDER BY path", &[m])
                    .await?,
            ),
            None => (
                rows(&c, "", &[]).await?,
                c.query("SELECT path, session_id, \"offset\", task_id FROM transcript_offsets ORDER BY path", &[])
                    .await?,
            ),
        };
        snapshot.offsets = offsets.iter().map(offset_row).collect();
        Ok(snapshot)
    }

    /// What a restart rebuilds the core from ([`Store::restore_snapshot`](crate::server::store::Store::restore_snapshot)): the live agents'
    /// rows, tasks and turns; the others' rows alone, with their highest task and turn ids;
    /// every offset. Its time and memory grow with the live agents.
    pub async fn restore_snapshot(
        &self,
        live_since: Option<Timestamp>,
    ) -> Result<Snapshot, StoreError> {
        let Some(since) = live_since else {
            return self.snapshot().await;
        };
        let c = self.pool.get().await?;
        let since = since.millis() as f64;
        let live = "(NOT ended AND last_seen_at >= to_timestamp($1::float8 / 1000.0))";
        let (mut snapshot, offsets, dormant) = match &self.machine {
            Some(m) => (
                rows(&c, &format!("IN (SELECT id FROM agents WHERE machine = $2 AND {live})"), &[&since, m]).await?,
                c.query("SELECT path, session_id, \"offset\", task_id FROM transcript_offsets WHERE machine = $1 ORDER BY path", &[m])
                    .await?,
                dormant_rows(&c, &format!("machine = $2 AND NOT {live}"), &[&since, m]).await?,
            ),
            None => (
                rows(&c, &format!("IN (SELECT id FROM agents WHERE {live})"), &[&since]).await?,
                c.query("SELECT path, session_id, \"offset\", task_id FROM transcript_offsets ORDER BY path", &[])
                    .await?,
                dormant_rows(&c, &format!("NOT {live}"), &[&since]).await?,
            ),
        };
        snapshot.offsets = offsets.iter().map(offset_row).collect();
        snapshot.dormant = dormant;
        Ok(snapshot)
    }

    /// The rows of some agents (agent rows, tasks, turns; no offsets): what brings agents the
    /// core evicted from memory back into it.
    pub async fn load_agents(&self, ids: &[u64]) -> Result<Snapshot, StoreError> {
        let c = self.pool.get().await?;
        let ids: Vec<i64> = ids.iter().map(|i| id(*i)).collect();
        rows(&c, "= ANY($1)", &[&ids]).await
    }

    /// All agents with their current task and what their cards show; not the ended agents
    /// whose turns were pruned (see `PgStore::prune`).
    pub async fn agents(&self) -> Result<Vec<AgentView>, StoreError> {
        self.agents_where("WHERE a.pruned_at IS NULL OR NOT a.ended", &[], true)
            .await
    }

    /// Each folder an agent (not pruned) worked in, with its machine, once.
    pub async fn agent_folders(&self) -> Result<Vec<(String, String)>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                "SELECT DISTINCT machine, cwd FROM agents
                 WHERE cwd IS NOT NULL AND (pruned_at IS NULL OR NOT ended) ORDER BY machine, cwd",
                &[],
            )
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// One agent by id.
    pub async fn agent(&self, agent_id: u64) -> Result<Option<AgentView>, StoreError> {
        Ok(self
            .agents_where("WHERE a.id = $1", &[&id(agent_id)], true)
            .await?
            .pop())
    }

    /// One agent by id with `turn_count` 0 (see [`crate::server::store::Store::agent_uncounted`]).
    pub async fn agent_uncounted(&self, agent_id: u64) -> Result<Option<AgentView>, StoreError> {
        Ok(self
            .agents_where("WHERE a.id = $1", &[&id(agent_id)], false)
            .await?
            .pop())
    }

    /// The cards `filter` picks; their turns counted only when `count` says so.
    async fn agents_where(
        &self,
        filter: &str,
        params: &[&(dyn ToSql + Sync)],
        count: bool,
    ) -> Result<Vec<AgentView>, StoreError> {
        let turn_count = if count {
            "(SELECT count(*) FROM turns u WHERE u.agent_id = a.id)"
        } else {
            "0::bigint"
        };
        let c = self.pool.get().await?;
        let sql = format!(
            "SELECT a.id, a.session_id, a.sessions, a.project, a.cwd, a.transcript_path, a.tmux_pane, a.ended, a.waiting_permission, {}, {}, a.permission,
                    t.id, t.agent_id, t.session_id, t.state, t.transcript_state, {}, {}, {},
                    {turn_count},
                    (SELECT left(c.text, {p}) FROM turns c WHERE c.task_id = t.id AND c.actor = 'user' ORDER BY c.\"timestamp\", c.id LIMIT 1),
                    l.actor, l.intent, left(l.text, {p}), {},
                    left(q.text, {p}), q.question, a.end_reason, a.claude_pid, a.git_branch, a.kind, a.machine, a.name,
                    la.worktree, la.branch
             FROM agents a
             LEFT JOIN LATERAL (SELECT * FROM tasks x WHERE x.agent_id = a.id ORDER BY x.started_at DESC, x.id DESC LIMIT 1) t ON true
             LEFT JOIN LATERAL (SELECT * FROM turns y WHERE y.agent_id = a.id ORDER BY y.\"timestamp\" DESC, y.id DESC LIMIT 1) l ON true
             LEFT JOIN LATERAL (SELECT * FROM turns z WHERE z.task_id = t.id AND z.intent = 'question'
                                ORDER BY z.\"timestamp\" DESC, z.id DESC LIMIT 1) q ON t.state = 'awaiting_input'
             LEFT JOIN LATERAL (SELECT CASE WHEN w.discarded_at IS NULL THEN w.worktree END AS worktree, w.branch
                                FROM launches w WHERE w.agent_id = a.id
                                ORDER BY w.id DESC LIMIT 1) la ON true
             {filter} ORDER BY a.id",
            ms("a.last_seen_at"),
            ms("a.sent_at"),
            ms("t.started_at"),
            ms("t.hook_turn_end_at"),
            ms("t.state_since"),
            ms("l.\"timestamp\""),
            // What `AgentView::from_rows` finds, clipped alike (see `view::clip`).
            p = CLIPPED_CHARS,
        );
        let rows = c.query(&sql, params).await?;
        let mut out = Vec::new();
        for r in rows {
            let task = match r.get::<_, Option<i64>>(12) {
                Some(_) => Some(task_at(&r, 12)?),
                None => None,
            };
            let last_turn = match r.get::<_, Option<&str>>(22) {
                Some(actor) => Some(LastTurn {
                    actor: parse(actor)?,
                    intent: parse(r.get::<_, &str>(23))?,
                    text: r.get(24),
                    timestamp: headspace_core::Timestamp(r.get(25)),
                }),
                None => None,
            };
            out.push(AgentView {
                agent: agent_row(&r, 28),
                task,
                turn_count: r.get(20),
                command: r.get(21),
                last_turn,
                question: r.get::<_, Option<String>>(26).map(|text| (text, r.get(27))),
                machine: r.get(32),
                name: r.get(33),
                worktree: r.get(34),
                launch_branch: r.get(35),
            });
        }
        Ok(out)
    }

    /// Gives an agent a name (`None` clears it); false when there is no such agent.
    pub async fn rename(&self, agent_id: u64, name: Option<String>) -> Result<bool, StoreError> {
        let c = self.pool.get().await?;
        let n = c
            .execute(
                "UPDATE agents SET name = $2 WHERE id = $1",
                &[&id(agent_id), &name],
            )
            .await?;
        Ok(n > 0)
    }

    /// The panes of agents still running, for the watchdog.
    pub async fn panes(&self) -> Result<Vec<String>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c.query("SELECT DISTINCT tmux_pane FROM agents WHERE tmux_pane IS NOT NULL AND NOT ended ORDER BY 1", &[]).await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Finds an agent by id, Claude session id (current or past) or tmux pane: the query
    /// finds the agents the reference names, the core's rule picks one.
    pub async fn resolve(&self, reference: &str) -> Result<Option<u64>, StoreError> {
        let named = self.named(reference).await?;
        Ok(resolve_reference(named.iter().map(|(a, _)| a), reference))
    }

    /// Every agent `reference` names (by id, session current or past, or pane), with its
    /// machine: one indexed query, not every agent's card.
    pub async fn named(&self, reference: &str) -> Result<Vec<(AgentRow, String)>, StoreError> {
        let c = self.pool.get().await?;
        let by_id = reference.parse::<i64>().ok();
        Ok(c.query(
            &format!(
                "SELECT id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, {}, {}, permission, end_reason, claude_pid, git_branch, kind, machine
                 FROM agents WHERE $2 <> '' AND (id = $1 OR session_id = $2 OR $2 = ANY(sessions) OR tmux_pane = $2)",
                ms("last_seen_at"),
                ms("sent_at"),
            ),
            &[&by_id.unwrap_or(-1), &reference],
        )
        .await?
        .iter()
        .map(|r| (agent_row(r, 12), r.get::<_, String>(16)))
        .collect())
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

    /// At most `limit` of an agent's turns just before `before` in (timestamp, id) order (its
    /// newest without it), oldest first; empty when `before` is not one of the agent's turns.
    pub async fn turns_before(
        &self,
        agent_id: u64,
        before: Option<u64>,
        limit: i64,
    ) -> Result<Vec<TurnRow>, StoreError> {
        let c = self.pool.get().await?;
        // Newest first through the (agent_id, timestamp, id) index, then turned around.
        let rows = match before {
            Some(b) => {
                c.query(
                    &format!(
                        "{TURN_SELECT} WHERE agent_id = $1 AND (\"timestamp\", id) < (SELECT \"timestamp\", id FROM turns WHERE id = $2 AND agent_id = $1)
                         ORDER BY \"timestamp\" DESC, id DESC LIMIT $3"
                    ),
                    &[&id(agent_id), &id(b), &limit],
                )
                .await?
            }
            None => {
                c.query(
                    &format!("{TURN_SELECT} WHERE agent_id = $1 ORDER BY \"timestamp\" DESC, id DESC LIMIT $2"),
                    &[&id(agent_id), &limit],
                )
                .await?
            }
        };
        let mut turns = rows.iter().map(turn_row).collect::<Result<Vec<_>, _>>()?;
        turns.reverse();
        Ok(turns)
    }

    /// At most `limit` of an agent's turns around `turn_id` (the `limit / 2` before it, it,
    /// and those after), ordered by (timestamp, id); empty when the turn is not the agent's.
    pub async fn turns_around(
        &self,
        agent_id: u64,
        turn_id: u64,
        limit: i64,
    ) -> Result<Vec<TurnRow>, StoreError> {
        let c = self.pool.get().await?;
        let sql = format!(
            "WITH at AS (SELECT \"timestamp\" AS ts, id FROM turns WHERE id = $2 AND agent_id = $1),
             window_ids AS (
               (SELECT t.id FROM turns t, at WHERE t.agent_id = $1 AND (t.\"timestamp\", t.id) < (at.ts, at.id)
                ORDER BY t.\"timestamp\" DESC, t.id DESC LIMIT $3::bigint / 2)
               UNION ALL
               (SELECT t.id FROM turns t, at WHERE t.agent_id = $1 AND (t.\"timestamp\", t.id) >= (at.ts, at.id)
                ORDER BY t.\"timestamp\", t.id LIMIT $3::bigint - $3::bigint / 2))
             {TURN_SELECT} WHERE id IN (SELECT id FROM window_ids) ORDER BY \"timestamp\", id"
        );
        let rows = c
            .query(&sql, &[&id(agent_id), &id(turn_id), &limit.max(1)])
            .await?;
        rows.iter().map(turn_row).collect()
    }
}

const TURN_SELECT: &str = "SELECT id, agent_id, task_id, actor, intent, text, (extract(epoch from \"timestamp\") * 1000)::bigint, timestamp_source,
    entry_uuid, source, hook_key, prompt_id, tool_use_id, question, session_id,
    (extract(epoch from rewound_at) * 1000)::bigint FROM turns";

/// An agent row from columns 0..=11, and its end reason, Claude pid, git branch and kind at
/// `extra` to `extra + 3` (the joined card query has them last).
fn agent_row(r: &Row, extra: usize) -> AgentRow {
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
        end_reason: r.get(extra),
        claude_pid: r.get::<_, Option<i64>>(extra + 1).map(|p| p as u32),
        git_branch: r.get(extra + 2),
        // A kind this version does not know (a newer server's) reads as Claude Code's.
        kind: headspace_core::kind::AgentKind::from_name(r.get::<_, &str>(extra + 3))
            .unwrap_or_default(),
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
        rewound_at: r.get::<_, Option<i64>>(15).map(headspace_core::Timestamp),
    })
}

/// Agents (`id`), tasks and turns (`agent_id`) whose agent id matches `filter` (an SQL
/// condition on it, e.g. `= ANY($1)`; empty for all), without offsets.
/// An offset row as the snapshots read it (`path, session_id, offset, task_id`).
fn offset_row(r: &tokio_postgres::Row) -> OffsetRow {
    OffsetRow {
        path: r.get(0),
        session_id: r.get(1),
        offset: r.get::<_, i64>(2) as u64,
        task_id: r.get::<_, Option<i64>>(3).map(|v| v as u64),
    }
}

/// The agents matching `filter` as dormant rows: the row and its highest task and turn ids
/// (read by index, never the turns themselves).
async fn dormant_rows(
    c: &deadpool_postgres::Object,
    filter: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<DormantAgent>, StoreError> {
    let rows = c
        .query(
            &format!(
                "SELECT id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, {}, {}, permission, end_reason, claude_pid, git_branch, kind,
                        (SELECT max(t.id) FROM tasks t WHERE t.agent_id = agents.id),
                        (SELECT max(u.id) FROM turns u WHERE u.agent_id = agents.id)
                 FROM agents WHERE {filter} ORDER BY id",
                ms("last_seen_at"),
                ms("sent_at"),
            ),
            params,
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| DormantAgent {
            row: agent_row(r, 12),
            max_task: r.get::<_, Option<i64>>(16).map(|v| v as u64),
            max_turn: r.get::<_, Option<i64>>(17).map(|v| v as u64),
        })
        .collect())
}

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
                "SELECT id, session_id, sessions, project, cwd, transcript_path, tmux_pane, ended, waiting_permission, {}, {}, permission, end_reason, claude_pid, git_branch, kind FROM agents {} ORDER BY id",
                ms("last_seen_at"),
                ms("sent_at"),
                on("id")
            ),
            params,
        )
        .await?
        .iter()
        .map(|r| agent_row(r, 12))
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
        dormant: Vec::new(),
    })
}
