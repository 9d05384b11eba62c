//! Stored usage: one row per assistant message (keyed by agent and `message.id`), and its
//! sums per task, agent, project or day, priced by a [`PriceTable`].
//!
//! Claude Code repeats a message's `usage` on every line of it, and a streamed message's
//! counts only grow; a store keeps, per message, the larger of each count ([`merge`]), which
//! is the last line's, whatever order or how many times the lines are read.

use crate::model::{AgentId, TaskId};
use crate::time::Timestamp;
use crate::usage::{PriceTable, Tokens};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One assistant message's usage, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRow {
    /// Its agent.
    pub agent_id: AgentId,
    /// `message.id` (see `crate::transcript::step_line::LineUsage`): with the agent, the key.
    pub message_id: String,
    /// The task it was spent in, when known.
    pub task_id: Option<TaskId>,
    /// The model.
    pub model: String,
    /// Its tokens.
    pub tokens: Tokens,
    /// When it was written (the line's time).
    pub at: Timestamp,
}

/// The row a store keeps when `new` is written over `old` (same key): each count the larger,
/// the earliest time, the first task and model known.
pub fn merge(old: &UsageRow, new: &UsageRow) -> UsageRow {
    let max = |a: u64, b: u64| a.max(b);
    UsageRow {
        agent_id: old.agent_id,
        message_id: old.message_id.clone(),
        task_id: old.task_id.or(new.task_id),
        model: if old.model.is_empty() {
            new.model.clone()
        } else {
            old.model.clone()
        },
        tokens: Tokens {
            input: max(old.tokens.input, new.tokens.input),
            output: max(old.tokens.output, new.tokens.output),
            cache_creation: max(old.tokens.cache_creation, new.tokens.cache_creation),
            cache_read: max(old.tokens.cache_read, new.tokens.cache_read),
        },
        at: old.at.min(new.at),
    }
}

/// How usage is grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageBy {
    /// By the agent's project.
    Project,
    /// By UTC day (`YYYY-MM-DD`).
    Day,
    /// By agent id.
    Agent,
    /// By task id.
    Task,
    /// By UTC day and project: the key is `YYYY-MM-DD project` (a project is a folder's
    /// last name and holds no `/`; an empty project leaves a trailing space).
    ProjectDay,
}

impl UsageBy {
    /// The grouping a query names (`project`, `day`, `agent`, `task`, `project_day`).
    pub fn parse(name: &str) -> Option<UsageBy> {
        Some(match name {
            "project" => UsageBy::Project,
            "day" => UsageBy::Day,
            "agent" => UsageBy::Agent,
            "task" => UsageBy::Task,
            "project_day" => UsageBy::ProjectDay,
            _ => return None,
        })
    }
}

/// The tokens of one group and one model, as a store sums them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// The group (a project, a day, an agent or task id as text; empty when unknown).
    pub key: String,
    /// The model.
    pub model: String,
    /// Summed tokens.
    pub tokens: Tokens,
    /// Messages summed.
    pub messages: u64,
}

/// The key of `row` under `by`; `project` is the project of the row's agent.
pub fn group_key(row: &UsageRow, by: UsageBy, project: Option<&str>) -> String {
    match by {
        UsageBy::Project => project.unwrap_or("").to_string(),
        UsageBy::Day => row.at.to_string().chars().take(10).collect(),
        UsageBy::Agent => row.agent_id.to_string(),
        UsageBy::Task => row.task_id.map(|t| t.to_string()).unwrap_or_default(),
        UsageBy::ProjectDay => format!(
            "{} {}",
            group_key(row, UsageBy::Day, None),
            project.unwrap_or("")
        ),
    }
}

/// Sums `rows` by group and model (what a store's query returns), groups and models in
/// order. `project_of` names each agent's project.
pub fn sum_by_model<'a>(
    rows: impl IntoIterator<Item = &'a UsageRow>,
    by: UsageBy,
    project_of: impl Fn(AgentId) -> Option<String>,
) -> Vec<ModelUsage> {
    let mut sums: BTreeMap<(String, String), (Tokens, u64)> = BTreeMap::new();
    for r in rows {
        let key = group_key(r, by, project_of(r.agent_id).as_deref());
        let e = sums.entry((key, r.model.clone())).or_default();
        e.0 = e.0.plus(r.tokens);
        e.1 += 1;
    }
    sums.into_iter()
        .map(|((key, model), (tokens, messages))| ModelUsage {
            key,
            model,
            tokens,
            messages,
        })
        .collect()
}

/// One group's total: tokens, messages and what they cost.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct UsageTotal {
    /// Summed tokens over all models.
    pub tokens: Tokens,
    /// Messages.
    pub messages: u64,
    /// Dollars at the price table (a model without a price costs nothing).
    pub cost_usd: f64,
    /// The models used.
    pub models: Vec<String>,
}

impl UsageTotal {
    /// Adds one model's usage, priced by `prices`.
    pub fn add(&mut self, m: &ModelUsage, prices: &PriceTable) {
        self.tokens = self.tokens.plus(m.tokens);
        self.messages += m.messages;
        self.cost_usd += prices
            .price_of(&m.model)
            .map_or(0.0, |p| p.cost_usd(&m.tokens));
        if !m.model.is_empty() && !self.models.contains(&m.model) {
            self.models.push(m.model.clone());
        }
    }

    /// The JSON the API shows: `tokens` (`input`, `output`, `cache_read`, `cache_creation`),
    /// `cost_usd`, `messages`, `models`.
    pub fn to_json(&self) -> Value {
        json!({
            "tokens": tokens_json(&self.tokens),
            "cost_usd": self.cost_usd,
            "messages": self.messages,
            "models": self.models,
        })
    }
}

/// Tokens as the API names them.
pub fn tokens_json(t: &Tokens) -> Value {
    json!({
        "input": t.input,
        "output": t.output,
        "cache_read": t.cache_read,
        "cache_creation": t.cache_creation,
    })
}

/// Per-model sums folded into one total per group, priced, groups in order.
pub fn totals(by_model: &[ModelUsage], prices: &PriceTable) -> BTreeMap<String, UsageTotal> {
    let mut out: BTreeMap<String, UsageTotal> = BTreeMap::new();
    for m in by_model {
        out.entry(m.key.clone()).or_default().add(m, prices);
    }
    out
}
