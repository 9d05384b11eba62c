//! The audit routes: every conversational transcript line of an agent (or of every agent)
//! against the stored turns. The files are read through the watcher's bounded,
//! regular-file-only reader; what is missing, doubled or mis-assigned is decided by
//! [`headspace_core::transcript::audit`].

use super::agents::resolve;
use super::body::{error, json_response, Body};
use super::App;
use crate::server::audit_loop::{audit_every_agent, audit_one, AuditSummary};
use headspace_core::transcript::audit::AuditReport;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

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
