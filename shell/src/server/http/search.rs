//! The history routes: `GET /api/search` over every turn, `GET /api/history` (ended agents
//! by project and day) and `POST /api/prune` (the only way a turn is ever deleted).

use super::agents::resolve;
use super::body::{error, json_response, Body};
use super::App;
use crate::server::search::{
    hits_json, parse_bound, parse_day, HistoryAgent, PruneRequest, SearchQuery, DEFAULT_LIMIT,
    MAX_LIMIT, MAX_QUERY_CHARS,
};
use headspace_core::access::percent_decode;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The most ended agents one history answer lists.
const HISTORY_LIMIT: i64 = 1000;

/// A query-string value, `+` read as a space and `%XX` decoded (as browsers send forms).
fn param(query: Option<&str>, key: &str) -> Option<String> {
    query?.split('&').find_map(|kv| {
        let value = kv.strip_prefix(key)?.strip_prefix('=')?;
        Some(percent_decode(&value.replace('+', " ")))
    })
}

/// A non-empty value of `key`, trimmed.
fn nonempty(query: Option<&str>, key: &str) -> Option<String> {
    param(query, key)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The 501 of a server whose store has no archive (search, history, prune).
fn no_archive() -> Response<Body> {
    error(
        StatusCode::NOT_IMPLEMENTED,
        "search, history and prune need the PostgreSQL store, and this server runs without one",
    )
}

/// `GET /api/search?q=…&project=&agent=&actor=&since=&until=&before=&limit=`.
pub(super) async fn search(app: &App, query: Option<&str>) -> Response<Body> {
    let parsed = match search_query(app, query).await {
        Ok(q) => q,
        Err(r) => return r,
    };
    let Some(archive) = app.archive.as_deref() else {
        return no_archive();
    };
    match archive.search(&parsed).await {
        Ok(hits) => json_response(StatusCode::OK, &hits_json(&hits)),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// The search a query string asks for, or the 400 (or 404 for an unknown agent) that says
/// what is wrong with it.
async fn search_query(app: &App, query: Option<&str>) -> Result<SearchQuery, Response<Body>> {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, m);
    let q =
        nonempty(query, "q").ok_or_else(|| bad("q must name something to search for".into()))?;
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(bad(format!(
            "q is too long: at most {MAX_QUERY_CHARS} characters"
        )));
    }
    let limit = match nonempty(query, "limit").map(|l| l.parse::<i64>()) {
        None => DEFAULT_LIMIT,
        Some(Ok(l)) if (1..=MAX_LIMIT).contains(&l) => l,
        Some(_) => return Err(bad(format!("limit must be between 1 and {MAX_LIMIT}"))),
    };
    let actor = nonempty(query, "actor");
    if let Some(a) = &actor {
        if a != "user" && a != "agent" {
            return Err(bad("actor must be user or agent".into()));
        }
    }
    // The message for a bad bound; the 400 is made at the `?` (a response is large).
    let bound = |key: &str, until: bool| match nonempty(query, key) {
        None => Ok(None),
        Some(v) => parse_bound(&v, until).map(Some).ok_or_else(|| {
            format!("{key} must be a day (2026-11-20) or an RFC 3339 time (2026-11-20T10:00:00Z)")
        }),
    };
    let since = bound("since", false).map_err(bad)?;
    let until = bound("until", true).map_err(bad)?;
    let before = match nonempty(query, "before").map(|b| b.parse::<u64>()) {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(_)) => return Err(bad("before must be a turn id".into())),
    };
    let agent = match nonempty(query, "agent") {
        None => None,
        Some(reference) => Some(resolve(app, &reference).await?),
    };
    Ok(SearchQuery {
        q,
        project: nonempty(query, "project"),
        agent,
        actor,
        since,
        until,
        before,
        limit,
    })
}

/// `GET /api/history?project=&day=`: ended agents grouped by day (UTC, newest first) and
/// project, each with its turn count and first command.
pub(super) async fn history(app: &App, query: Option<&str>) -> Response<Body> {
    let day = match nonempty(query, "day") {
        None => None,
        Some(d) => match parse_day(&d) {
            Some(t) => Some(t),
            None => return error(StatusCode::BAD_REQUEST, "day must be a day: 2026-11-20"),
        },
    };
    let project = nonempty(query, "project");
    let Some(archive) = app.archive.as_deref() else {
        return no_archive();
    };
    match archive
        .history(project.as_deref(), day, HISTORY_LIMIT)
        .await
    {
        Ok(agents) => json_response(StatusCode::OK, &history_groups(agents)),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// `[{"day", "project", "agents": [...]}]`: newest day first, projects by name.
fn history_groups(agents: Vec<HistoryAgent>) -> Value {
    let mut groups: BTreeMap<(String, String), Vec<HistoryAgent>> = BTreeMap::new();
    for a in agents {
        let day = a
            .last_seen_at
            .as_str()
            .unwrap_or("")
            .chars()
            .take(10)
            .collect();
        let project = a.project.clone().unwrap_or_default();
        groups.entry((day, project)).or_default().push(a);
    }
    let mut out: Vec<Value> = groups
        .into_iter()
        .map(|((day, project), agents)| json!({"day": day, "project": project, "agents": agents}))
        .collect();
    // Days newest first; the map already holds projects in name order within a day.
    out.sort_by(|a, b| b["day"].as_str().cmp(&a["day"].as_str()));
    Value::Array(out)
}

/// `POST /api/prune` with `{"before": DAY_OR_TIME, "dry_run": bool}`: deletes ended agents
/// last heard of before then, with their turns; refuses without a date.
pub(super) async fn prune(app: &App, body: &[u8]) -> Response<Body> {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let Some(before) = v["before"]
        .as_str()
        .and_then(|b| parse_bound(b.trim(), false))
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "body must be {\"before\": \"2026-11-20\", \"dry_run\": true|false}: prune deletes ended agents last heard of before that day (or RFC 3339 time), and needs one",
        );
    };
    let dry_run = v["dry_run"].as_bool().unwrap_or(false);
    let Some(archive) = app.archive.as_deref() else {
        return no_archive();
    };
    match archive.prune(PruneRequest { before, dry_run }).await {
        Ok(agents) => {
            let turns: i64 = agents.iter().map(|a| a.turns).sum();
            json_response(
                StatusCode::OK,
                &json!({"dry_run": dry_run, "before": before, "agents": agents, "turns": turns}),
            )
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}
