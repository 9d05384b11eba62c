//! The audit routes: every conversational transcript line of an agent (or of every agent)
//! against the stored turns. The files are read through the watcher's bounded,
//! regular-file-only reader; what is missing, doubled or mis-assigned is decided by
//! [`headspace_core::audit`].

use super::agents::resolve;
use super::body::{error, json_response, Body};
use super::App;
use crate::server::audit_loop::AuditSummary;
use crate::server::store::Store;
use crate::server::world::{Files, READ_CHUNK};
use headspace_core::audit::{audit, AuditReport, ConversationScan};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /api/agents/{id}/audit`.
pub(super) async fn audit_agent(app: &App, reference: &str) -> Response<Body> {
    let id = match resolve(app, reference).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    match report(app, id).await {
        Ok(r) => json_response(StatusCode::OK, &report_json(&r)),
        Err(r) => r,
    }
}

/// `GET /api/audit`: every agent. The summary is kept as the latest audit's (what
/// `/metrics` and the dashboard show), so a repair is seen at once.
pub(super) async fn audit_all(app: &App) -> Response<Body> {
    let reports = match audit_every_agent(&*app.store, &app.files, app.max_line_bytes).await {
        Ok(r) => r,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let summary = AuditSummary::of(app.clock.now(), &reports);
    crate::server::audit_loop::log(&summary);
    app.audit.set(summary);
    let count = |f: fn(&AuditReport) -> usize| reports.iter().map(f).sum::<usize>();
    let body = json!({
        "clean": reports.iter().all(AuditReport::clean),
        "checked": reports.iter().map(|r| r.checked).sum::<u64>(),
        "missing": count(|r| r.missing.len()),
        "doubled": count(|r| r.doubled.len()),
        "misassigned": count(|r| r.misassigned.len()),
        "agents": reports.iter().map(report_json).collect::<Vec<Value>>(),
    });
    json_response(StatusCode::OK, &body)
}

/// `GET /api/audit/summary`: what the latest audit (periodic, or asked for) found.
pub(super) async fn audit_summary(app: &App) -> Response<Body> {
    let body = app.audit.last().map_or_else(
        || json!({"status": "pending", "message": "no audit has run yet: GET /api/audit runs one now"}),
        |s| s.to_json(),
    );
    json_response(StatusCode::OK, &body)
}

/// Audits one agent: its files' conversational uuids, then the turns holding them.
async fn report(app: &App, agent_id: u64) -> Result<AuditReport, Response<Body>> {
    audit_one(&*app.store, &app.files, app.max_line_bytes, agent_id)
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e))
}

/// Audits one agent from the store and the files.
async fn audit_one(
    store: &dyn Store,
    files: &SharedFiles,
    max_line: usize,
    agent_id: u64,
) -> Result<AuditReport, String> {
    let paths = store
        .agent_files(agent_id)
        .await
        .map_err(|e| e.to_string())?;
    let files = files.clone();
    let uuids =
        tokio::task::spawn_blocking(move || conversational_uuids(&*files, &paths, max_line))
            .await
            .map_err(|e| e.to_string())?;
    let stored = store.entry_turns(&uuids).await.map_err(|e| e.to_string())?;
    Ok(audit(agent_id, &uuids, &stored))
}

/// Audits every agent the store holds (the route and the periodic audit).
pub(crate) async fn audit_every_agent(
    store: &dyn Store,
    files: &SharedFiles,
    max_line: usize,
) -> Result<Vec<AuditReport>, String> {
    let agents = store.agents().await.map_err(|e| e.to_string())?;
    let mut reports = Vec::new();
    for view in agents {
        reports.push(audit_one(store, files, max_line, view.agent.id).await?);
    }
    Ok(reports)
}

/// The uuids of the conversational lines of `paths`, read chunk by chunk to each file's
/// current end (a file gone or refused has none).
fn conversational_uuids(files: &dyn Files, paths: &[String], max_line: usize) -> Vec<String> {
    let mut uuids = Vec::new();
    for path in paths {
        let Some(stat) = files.stat(path) else {
            continue;
        };
        let mut scan = ConversationScan::new(max_line);
        let mut at = 0;
        while at < stat.len {
            let Ok(data) = files.read_at(path, at, (stat.len - at).min(READ_CHUNK)) else {
                break;
            };
            if data.is_empty() {
                break;
            }
            scan.push(at, &data, |e, _| {
                if let Some(u) = e.uuid() {
                    uuids.push(u.to_string());
                }
            });
            at += data.len() as u64;
        }
    }
    uuids
}

fn report_json(r: &AuditReport) -> Value {
    json!({
        "agent_id": r.agent_id,
        "clean": r.clean(),
        "checked": r.checked,
        "missing": r.missing,
        "doubled": r.doubled.iter().map(|(u, ids)| json!({"uuid": u, "turn_ids": ids})).collect::<Vec<_>>(),
        "misassigned": r.misassigned.iter().map(|(u, ids)| json!({"uuid": u, "agent_ids": ids})).collect::<Vec<_>>(),
    })
}

/// Keeps the reader's type in one place for the App.
pub type SharedFiles = Arc<dyn Files>;
