//! What agents did and spent: each card's current step, tokens and cost; the steps folded
//! under each turn of a conversation; an agent's usage and changed files per task; usage by
//! project, day or agent; the token and cost families of `/metrics`. The rules are the
//! core's ([`headspace_core::usage::step`], [`headspace_core::usage::sum`]); this file reads the store
//! and prices with the server's table.

use super::body::{error, json_response, Body};
use super::{query_param, App};
use crate::server::machines::presence_of;
use crate::server::store::StoreError;
use headspace_core::cluster::machines::add_machine;
use headspace_core::model::TurnRow;
use headspace_core::usage::step::{files_changed, fold_under_turns, turn_indices_at, StepRow};
use headspace_core::usage::sum::{sum_by_model, totals, UsageBy, UsageRow, UsageTotal};
use headspace_core::view::AgentView;
use headspace_core::Activity;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The cards of `views` with `now` (the step the agent runs, while it runs), `tokens`,
/// `cost_usd`, `messages` and `models` added.
pub(super) async fn cards(app: &App, views: &[AgentView]) -> Result<Vec<Value>, StoreError> {
    let only = match views {
        [one] => Some(one.agent.id),
        _ => None,
    };
    let now = app.store.current_steps().await?;
    let machines = app.store.machines().await?;
    let usage = app.store.usage(UsageBy::Agent, only).await?;
    let spent = totals(&usage, &app.prices);
    Ok(views
        .iter()
        .map(|v| {
            let mut card = v.card();
            let step = now
                .get(&v.agent.id)
                .filter(|_| v.activity() == Activity::Running);
            let total = spent
                .get(&v.agent.id.to_string())
                .cloned()
                .unwrap_or_default();
            add_usage(&mut card, &total);
            if let Some(o) = card.as_object_mut() {
                o.insert("now".into(), step.map_or(Value::Null, now_json));
            }
            // The agent's own machine; offline, its activity is unknown (never stale).
            let machine = presence_of(&machines, &app.machine, &v.machine);
            add_machine(&mut card, v.activity(), &machine);
            card
        })
        .collect())
}

/// The card's "now": the step's tool, summary and label (`Bash: cargo test`).
fn now_json(s: &StepRow) -> Value {
    json!({
        "tool_use_id": s.tool_use_id,
        "tool": s.tool,
        "summary": s.summary,
        "label": s.label(),
        "started_at": s.started_at,
    })
}

/// `tokens`, `cost_usd`, `messages` and `models` of `total`, added to `v`.
fn add_usage(v: &mut Value, total: &UsageTotal) {
    if let (Some(o), Value::Object(u)) = (v.as_object_mut(), total.to_json()) {
        o.extend(u);
    }
}

/// The turns' JSON, each with the `steps` folded under it (only where it has any). `after`
/// says the page does not start the conversation (steps before its first turn belong to the
/// page before); `next` is the first turn after the page, whose steps are its own.
pub(super) async fn turns_json(
    app: &App,
    agent_id: u64,
    rows: &[TurnRow],
    after: bool,
    next: Option<&TurnRow>,
) -> Result<Vec<Value>, StoreError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let from = rows.first().filter(|_| after).map(|t| t.timestamp);
    let until = next.map(|t| t.timestamp);
    // A page asks only for the steps in its span.
    let steps: Vec<StepRow> = app
        .store
        .steps(agent_id, from, until)
        .await?
        .into_iter()
        .filter(|s| {
            s.started_at
                .is_some_and(|at| from.is_none_or(|f| at >= f) && until.is_none_or(|u| at < u))
        })
        .collect();
    let folded = fold_under_turns(rows, &steps);
    // Each message's tokens go under its turn by the same rule.
    let usage = app.store.usage_rows(agent_id, from, until).await?;
    let times: Vec<_> = usage.iter().map(|u| u.at).collect();
    let mut spent: BTreeMap<usize, Vec<&UsageRow>> = BTreeMap::new();
    for (u, turn) in usage.iter().zip(turn_indices_at(rows, &times)) {
        if let Some(t) = turn {
            spent.entry(t).or_default().push(u);
        }
    }
    Ok(rows
        .iter()
        .zip(folded)
        .enumerate()
        .map(|(i, (t, steps))| {
            let mut v = headspace_core::engine::turn_json(t);
            if !steps.is_empty() {
                v["steps"] = Value::Array(steps.iter().map(|s| s.to_json()).collect());
            }
            if let Some(messages) = spent.get(&i) {
                let by_model = sum_by_model(messages.iter().copied(), UsageBy::Agent, |_| None);
                let mut total = UsageTotal::default();
                for m in &by_model {
                    total.add(m, &app.prices);
                }
                v["usage"] = total.to_json();
            }
            v
        })
        .collect())
}

/// `GET /api/agents/{id}/usage`: the agent's tokens and cost, and per task its tokens, cost
/// and the files its steps wrote or edited.
pub(super) async fn agent_usage(app: &App, agent_id: u64) -> Response<Body> {
    let (by_task, steps) = match tokio::try_join!(
        app.store.usage(UsageBy::Task, Some(agent_id)),
        app.store.steps(agent_id, None, None)
    ) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let per_task = totals(&by_task, &app.prices);
    let mut total = UsageTotal::default();
    for m in &by_task {
        total.add(m, &app.prices);
    }
    let mut task_ids: BTreeSet<u64> = per_task.keys().filter_map(|k| k.parse().ok()).collect();
    task_ids.extend(steps.iter().filter_map(|s| s.task_id));
    let tasks: Vec<Value> = task_ids
        .into_iter()
        .map(|t| {
            let mut v = per_task
                .get(&t.to_string())
                .cloned()
                .unwrap_or_default()
                .to_json();
            let files = files_changed(steps.iter().filter(|s| s.task_id == Some(t)));
            v["task_id"] = json!(t);
            v["steps"] = json!(steps.iter().filter(|s| s.task_id == Some(t)).count());
            v["files"] = json!(files);
            v
        })
        .collect();
    let mut body = total.to_json();
    body["agent_id"] = json!(agent_id);
    body["files"] = json!(files_changed(&steps));
    body["tasks"] = Value::Array(tasks);
    json_response(StatusCode::OK, &body)
}

/// `GET /api/agents/{id}/usage?since=T`: the agent's tokens and cost in messages written from
/// `T` on (RFC 3339, or milliseconds since the epoch): what an orchestration step spent,
/// from the server's own figures (the runner never rereads a transcript to price a step).
pub(super) async fn agent_usage_since(app: &App, agent_id: u64, since: &str) -> Response<Body> {
    let since = headspace_core::access::percent_decode(since);
    let from = match since.parse::<i64>() {
        Ok(ms) => headspace_core::Timestamp(ms),
        Err(_) => match headspace_core::Timestamp::parse_rfc3339(&since) {
            Some(t) => t,
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "since={since:?}: give an RFC 3339 time or milliseconds since the epoch"
                    ),
                )
            }
        },
    };
    let rows = match app.store.usage_rows(agent_id, Some(from), None).await {
        Ok(r) => r,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let mut total = UsageTotal::default();
    for m in sum_by_model(&rows, UsageBy::Agent, |_| None) {
        total.add(&m, &app.prices);
    }
    let mut body = total.to_json();
    body["agent_id"] = json!(agent_id);
    body["since"] = json!(from.to_string());
    json_response(StatusCode::OK, &body)
}

/// `GET /api/usage?by=project|day|agent|task|project_day`: tokens and cost per group, groups
/// in order (`project_day`: by day, then project, with both fields).
pub(super) async fn usage(app: &App, query: Option<&str>) -> Response<Body> {
    let name = query_param(query, "by").unwrap_or("project");
    let Some(by) = UsageBy::parse(name) else {
        return error(
            StatusCode::BAD_REQUEST,
            "by must be project, day, agent, task or project_day",
        );
    };
    match app.store.usage(by, None).await {
        Ok(rows) => {
            let groups: Vec<Value> = totals(&rows, &app.prices)
                .into_iter()
                .map(|(key, total)| {
                    let mut v = total.to_json();
                    v["key"] = json!(key);
                    match (by, key.split_once(' ')) {
                        (UsageBy::ProjectDay, Some((day, project))) => {
                            v["day"] = json!(day);
                            v["project"] = json!(project);
                        }
                        _ => v[name] = json!(key),
                    }
                    v
                })
                .collect();
            json_response(StatusCode::OK, &Value::Array(groups))
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// The token and cost families of `/metrics` (empty while the store does not answer: the
/// server's own counters still show).
pub(super) async fn metrics_text(app: &App) -> String {
    let Ok(rows) = app.store.usage(UsageBy::Agent, None).await else {
        return String::new();
    };
    let mut by_model: BTreeMap<String, UsageTotal> = BTreeMap::new();
    for m in &rows {
        by_model
            .entry(m.model.clone())
            .or_default()
            .add(m, &app.prices);
    }
    crate::server::metrics::render_usage(&by_model)
}
