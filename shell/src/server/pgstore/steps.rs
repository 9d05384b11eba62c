//! Steps and usage in PostgreSQL: the core's `Write::Step`, `StepsInterrupted` and `Usage`
//! folded into their rows by the same rules as the in-memory store
//! ([`headspace_core::usage::step::merge`], [`headspace_core::usage::sum::merge`]), and the reads the
//! API makes of them.

use super::{at, id, ms, PgStore};
use crate::server::store::StoreError;
use headspace_core::model::AgentId;
use headspace_core::usage::step::{merge, Evidence, StepOutcome, StepRow};
use headspace_core::usage::sum::{self as usage_sum, ModelUsage, UsageBy, UsageRow};
use headspace_core::usage::Tokens;
use headspace_core::Timestamp;
use std::collections::BTreeMap;
use tokio_postgres::{Row, Transaction};

/// The step writes of a batch in order: runs of upserts between the interrupts, so that an
/// interrupt ends exactly the steps written before it, as in the in-memory store.
#[derive(Default)]
pub(super) struct StepOps {
    ops: Vec<StepOp>,
    usage: BTreeMap<(AgentId, String), UsageRow>,
}

enum StepOp {
    Upsert(BTreeMap<(AgentId, String), StepRow>),
    Interrupt(AgentId, Timestamp),
}

impl StepOps {
    /// A step write: folded into the current run (one row per key, as one statement needs).
    pub(super) fn step(&mut self, s: &StepRow) {
        if !matches!(self.ops.last(), Some(StepOp::Upsert(_))) {
            self.ops.push(StepOp::Upsert(BTreeMap::new()));
        }
        let Some(StepOp::Upsert(run)) = self.ops.last_mut() else {
            return;
        };
        let key = (s.agent_id, s.tool_use_id.clone());
        let row = match run.get(&key) {
            Some(old) => merge(old, s),
            None => s.clone(),
        };
        run.insert(key, row);
    }

    /// An interrupt line.
    pub(super) fn interrupt(&mut self, agent_id: AgentId, at: Timestamp) {
        self.ops.push(StepOp::Interrupt(agent_id, at));
    }

    /// A usage write, folded into the batch's row of its message.
    pub(super) fn usage(&mut self, u: &UsageRow) {
        let key = (u.agent_id, u.message_id.clone());
        let row = match self.usage.get(&key) {
            Some(old) => usage_sum::merge(old, u),
            None => u.clone(),
        };
        self.usage.insert(key, row);
    }

    /// Carries them out in `tx`.
    pub(super) async fn apply(self, tx: &Transaction<'_>) -> Result<(), tokio_postgres::Error> {
        for op in self.ops {
            match op {
                StepOp::Upsert(run) => upsert_steps(tx, run.into_values().collect()).await?,
                StepOp::Interrupt(agent, when) => {
                    tx.execute(
                        &format!(
                            "UPDATE steps SET outcome = 'interrupted', evidence = GREATEST(evidence, {}), finished_at = {}
                             WHERE agent_id = $1 AND outcome = 'pending' AND (started_at IS NULL OR started_at <= {})",
                            Evidence::Interrupt.rank(),
                            at("$2::bigint"),
                            at("$2::bigint")
                        ),
                        &[&id(agent), &when.millis()],
                    )
                    .await?;
                }
            }
        }
        if !self.usage.is_empty() {
            upsert_usage(tx, self.usage.into_values().collect()).await?;
        }
        Ok(())
    }
}

/// Moves agent `from`'s steps and usage to `into` (a merge of agents), each folded into
/// `into`'s row of the same key by the merge rules, as the in-memory store does.
pub(super) async fn merge_agent(
    tx: &Transaction<'_>,
    from: i64,
    into: i64,
) -> Result<(), tokio_postgres::Error> {
    let step_cols = STEP_COLUMNS.replacen("agent_id", "$2::bigint", 1);
    tx.execute(
        &format!("INSERT INTO steps AS s ({STEP_COLUMNS}) SELECT {step_cols} FROM steps WHERE agent_id = $1 ORDER BY tool_use_id {}", step_merge()),
        &[&from, &into],
    )
    .await?;
    let usage_cols = USAGE_COLUMNS.replacen("agent_id", "$2::bigint", 1);
    tx.execute(
        &format!("INSERT INTO message_usage AS m ({USAGE_COLUMNS}) SELECT {usage_cols} FROM message_usage WHERE agent_id = $1 ORDER BY message_id {USAGE_MERGE}"),
        &[&from, &into],
    )
    .await?;
    for table in ["steps", "message_usage"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE agent_id = $1"),
            &[&from],
        )
        .await?;
    }
    Ok(())
}

const STEP_COLUMNS: &str = "agent_id, tool_use_id, task_id, tool, summary, file, outcome, evidence, confirmed, started_at, finished_at";

/// The upsert's conflict clause: the stored row `s` and the written one `EXCLUDED` folded by
/// the rule of [`headspace_core::usage::step::merge`].
fn step_merge() -> String {
    // `(new confirmed, old not) and new knows it, or old does not`.
    let start = |col: &str, unknown: &str| {
        format!(
            "{col} = CASE WHEN (EXCLUDED.confirmed AND NOT s.confirmed AND NOT (EXCLUDED.{col} {unknown})) OR (s.{col} {unknown})
                          THEN EXCLUDED.{col} ELSE s.{col} END"
        )
    };
    format!(
        "ON CONFLICT (agent_id, tool_use_id) DO UPDATE SET
           {}, {}, {}, {}, {},
           outcome = CASE WHEN EXCLUDED.evidence > s.evidence THEN EXCLUDED.outcome ELSE s.outcome END,
           finished_at = CASE WHEN EXCLUDED.evidence > s.evidence THEN COALESCE(EXCLUDED.finished_at, s.finished_at)
                              ELSE COALESCE(s.finished_at, EXCLUDED.finished_at) END,
           evidence = GREATEST(s.evidence, EXCLUDED.evidence),
           confirmed = s.confirmed OR EXCLUDED.confirmed",
        start("task_id", "IS NULL"),
        start("tool", "= ''"),
        start("summary", "= ''"),
        start("file", "IS NULL"),
        start("started_at", "IS NULL"),
    )
}

const USAGE_COLUMNS: &str = "agent_id, message_id, task_id, model, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, \"at\"";

/// The usage upsert's conflict clause: [`headspace_core::usage::sum::merge`]'s rule.
const USAGE_MERGE: &str = "ON CONFLICT (agent_id, message_id) DO UPDATE SET
   task_id = COALESCE(m.task_id, EXCLUDED.task_id),
   model = CASE WHEN m.model = '' THEN EXCLUDED.model ELSE m.model END,
   input_tokens = GREATEST(m.input_tokens, EXCLUDED.input_tokens),
   output_tokens = GREATEST(m.output_tokens, EXCLUDED.output_tokens),
   cache_creation_tokens = GREATEST(m.cache_creation_tokens, EXCLUDED.cache_creation_tokens),
   cache_read_tokens = GREATEST(m.cache_read_tokens, EXCLUDED.cache_read_tokens),
   \"at\" = LEAST(m.\"at\", EXCLUDED.\"at\")";

async fn upsert_steps(tx: &Transaction<'_>, s: Vec<StepRow>) -> Result<(), tokio_postgres::Error> {
    let sql = format!(
        "INSERT INTO steps AS s ({STEP_COLUMNS})
         SELECT u.agent_id, u.tool_use_id, u.task_id, u.tool, u.summary, u.file, u.outcome, u.evidence, u.confirmed,
                CASE WHEN u.start_ms IS NULL THEN NULL ELSE {} END, CASE WHEN u.end_ms IS NULL THEN NULL ELSE {} END
         FROM UNNEST($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::smallint[], $9::bool[], $10::bigint[], $11::bigint[])
              AS u(agent_id, tool_use_id, task_id, tool, summary, file, outcome, evidence, confirmed, start_ms, end_ms)
         {}",
        at("u.start_ms"),
        at("u.end_ms"),
        step_merge(),
    );
    tx.execute(
        &sql,
        &[
            &s.iter().map(|r| id(r.agent_id)).collect::<Vec<_>>(),
            &s.iter().map(|r| r.tool_use_id.clone()).collect::<Vec<_>>(),
            &s.iter().map(|r| r.task_id.map(id)).collect::<Vec<_>>(),
            &s.iter().map(|r| r.tool.clone()).collect::<Vec<_>>(),
            &s.iter().map(|r| r.summary.clone()).collect::<Vec<_>>(),
            &s.iter().map(|r| r.file.clone()).collect::<Vec<_>>(),
            &s.iter().map(|r| r.outcome.as_str()).collect::<Vec<_>>(),
            &s.iter().map(|r| r.evidence.rank()).collect::<Vec<_>>(),
            &s.iter().map(|r| r.confirmed).collect::<Vec<_>>(),
            &s.iter()
                .map(|r| r.started_at.map(Timestamp::millis))
                .collect::<Vec<_>>(),
            &s.iter()
                .map(|r| r.finished_at.map(Timestamp::millis))
                .collect::<Vec<_>>(),
        ],
    )
    .await?;
    Ok(())
}

async fn upsert_usage(tx: &Transaction<'_>, u: Vec<UsageRow>) -> Result<(), tokio_postgres::Error> {
    let n = |f: fn(&Tokens) -> u64| -> Vec<i64> {
        u.iter()
            .map(|r| f(&r.tokens).min(i64::MAX as u64) as i64)
            .collect()
    };
    tx.execute(
        &format!(
            "INSERT INTO message_usage AS m ({USAGE_COLUMNS})
             SELECT u.agent_id, u.message_id, u.task_id, u.model, u.i, u.o, u.cw, u.cr, {}
             FROM UNNEST($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
                  AS u(agent_id, message_id, task_id, model, i, o, cw, cr, ms)
             {USAGE_MERGE}",
            at("u.ms")
        ),
        &[
            &u.iter().map(|r| id(r.agent_id)).collect::<Vec<_>>(),
            &u.iter().map(|r| r.message_id.clone()).collect::<Vec<_>>(),
            &u.iter().map(|r| r.task_id.map(id)).collect::<Vec<_>>(),
            &u.iter().map(|r| r.model.clone()).collect::<Vec<_>>(),
            &n(|t| t.input),
            &n(|t| t.output),
            &n(|t| t.cache_creation),
            &n(|t| t.cache_read),
            &u.iter().map(|r| r.at.millis()).collect::<Vec<_>>(),
        ],
    )
    .await?;
    Ok(())
}

fn step_select() -> String {
    format!(
        "SELECT s.agent_id, s.tool_use_id, s.task_id, s.tool, s.summary, s.file, s.outcome, s.evidence, s.confirmed, {}, {} FROM steps s",
        ms("s.started_at"),
        ms("s.finished_at")
    )
}

fn step_row(r: &Row) -> Result<StepRow, StoreError> {
    let outcome: &str = r.get(6);
    Ok(StepRow {
        agent_id: r.get::<_, i64>(0) as u64,
        tool_use_id: r.get(1),
        task_id: r.get::<_, Option<i64>>(2).map(|v| v as u64),
        tool: r.get(3),
        summary: r.get(4),
        file: r.get(5),
        outcome: StepOutcome::parse(outcome).ok_or_else(|| StoreError::BadValue {
            value: outcome.to_string(),
            reason: "not a step outcome".into(),
        })?,
        evidence: Evidence::from_rank(r.get(7)),
        confirmed: r.get(8),
        started_at: r.get::<_, Option<i64>>(9).map(Timestamp),
        finished_at: r.get::<_, Option<i64>>(10).map(Timestamp),
    })
}

impl PgStore {
    /// An agent's steps started in `[from, until)` (see [`crate::server::store::Store::steps`]),
    /// by start.
    pub async fn steps(
        &self,
        agent_id: u64,
        from: Option<Timestamp>,
        until: Option<Timestamp>,
    ) -> Result<Vec<StepRow>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                &format!(
                    "{} WHERE s.agent_id = $1
                       AND (($2::bigint IS NULL AND $3::bigint IS NULL)
                            OR (s.started_at >= COALESCE({}, '-infinity') AND s.started_at < COALESCE({}, 'infinity')))
                     ORDER BY s.started_at NULLS FIRST, s.tool_use_id",
                    step_select(),
                    at("$2::bigint"),
                    at("$3::bigint")
                ),
                &[&id(agent_id), &from.map(Timestamp::millis), &until.map(Timestamp::millis)],
            )
            .await?;
        rows.iter().map(step_row).collect()
    }

    /// An agent's usage rows written in `[from, until)`, by time then message id.
    pub async fn usage_rows(
        &self,
        agent_id: u64,
        from: Option<Timestamp>,
        until: Option<Timestamp>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT u.agent_id, u.message_id, u.task_id, u.model, u.input_tokens, u.output_tokens,
                            u.cache_creation_tokens, u.cache_read_tokens, {}
                     FROM message_usage u
                     WHERE u.agent_id = $1 AND u.\"at\" >= COALESCE({}, '-infinity') AND u.\"at\" < COALESCE({}, 'infinity')
                     ORDER BY u.\"at\", u.message_id COLLATE \"C\"",
                    ms("u.\"at\""),
                    at("$2::bigint"),
                    at("$3::bigint")
                ),
                &[&id(agent_id), &from.map(Timestamp::millis), &until.map(Timestamp::millis)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
                UsageRow {
                    agent_id: r.get::<_, i64>(0) as u64,
                    message_id: r.get(1),
                    task_id: r.get::<_, Option<i64>>(2).map(|t| t as u64),
                    model: r.get(3),
                    tokens: Tokens {
                        input: n(4),
                        output: n(5),
                        cache_creation: n(6),
                        cache_read: n(7),
                    },
                    at: Timestamp(r.get(8)),
                }
            })
            .collect())
    }

    /// Each agent's current step ([`headspace_core::usage::step::current_step`] with its current
    /// task's start): the same rule, in SQL, over the pending steps only.
    pub async fn current_steps(&self) -> Result<BTreeMap<u64, StepRow>, StoreError> {
        let c = self.pool.get().await?;
        let rows = c
            .query(
                &format!(
                    "{} WHERE s.outcome = 'pending' AND s.tool <> ''
                       AND (s.started_at IS NULL OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.agent_id = s.agent_id AND t.started_at > s.started_at))
                     ORDER BY s.agent_id, s.started_at DESC NULLS LAST, s.tool_use_id DESC",
                    step_select().replacen("SELECT", "SELECT DISTINCT ON (s.agent_id)", 1)
                ),
                &[],
            )
            .await?;
        rows.iter()
            .map(|r| step_row(r).map(|s| (s.agent_id, s)))
            .collect()
    }

    /// Usage summed by group and model, of one agent or of all.
    pub async fn usage(
        &self,
        by: UsageBy,
        agent_id: Option<u64>,
    ) -> Result<Vec<ModelUsage>, StoreError> {
        let key = match by {
            UsageBy::Project => "COALESCE(a.project, '')",
            UsageBy::Day => "to_char(u.\"at\" AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
            UsageBy::Agent => "u.agent_id::text",
            UsageBy::Task => "COALESCE(u.task_id::text, '')",
            UsageBy::ProjectDay => {
                "to_char(u.\"at\" AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || COALESCE(a.project, '')"
            }
        };
        let c = self.pool.get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {key}, u.model, sum(u.input_tokens)::bigint, sum(u.output_tokens)::bigint,
                            sum(u.cache_creation_tokens)::bigint, sum(u.cache_read_tokens)::bigint, count(*)
                     FROM message_usage u LEFT JOIN agents a ON a.id = u.agent_id
                     WHERE $1::bigint IS NULL OR u.agent_id = $1
                     GROUP BY 1, 2 ORDER BY 1, 2"
                ),
                &[&agent_id.map(id)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
                ModelUsage {
                    key: r.get(0),
                    model: r.get(1),
                    tokens: Tokens {
                        input: n(2),
                        output: n(3),
                        cache_creation: n(4),
                        cache_read: n(5),
                    },
                    messages: n(6),
                }
            })
            .collect())
    }
}
