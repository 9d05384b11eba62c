//! The background audit: every few minutes, every conversational transcript line of every
//! agent is checked against the stored turns ([`headspace_core::transcript::audit`], the same check as
//! `headspace audit`), and the result is kept for `/metrics`, `GET /api/audit/summary` and
//! the dashboard's "all N turns accounted for". It only reads; a repair is a reconcile.

use crate::server::store::Store;
use crate::server::world::{Clock, Files, READ_CHUNK};
use headspace_core::transcript::audit::{audit, AuditReport, ConversationScan};
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::{info, warn};

/// What the last audit found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditSummary {
    /// When it ran.
    pub at: Timestamp,
    /// Conversational lines checked.
    pub checked: u64,
    /// Lines without a turn.
    pub missing: usize,
    /// Lines with more than one turn.
    pub doubled: usize,
    /// Lines whose only turn is under another agent.
    pub misassigned: usize,
    /// The agents with something missing, doubled or mis-assigned.
    pub agents: Vec<u64>,
}

impl AuditSummary {
    /// The summary of a set of reports made at `at`.
    pub fn of(at: Timestamp, reports: &[AuditReport]) -> AuditSummary {
        AuditSummary {
            at,
            checked: reports.iter().map(|r| r.checked).sum(),
            missing: reports.iter().map(|r| r.missing.len()).sum(),
            doubled: reports.iter().map(|r| r.doubled.len()).sum(),
            misassigned: reports.iter().map(|r| r.misassigned.len()).sum(),
            agents: reports
                .iter()
                .filter(|r| !r.clean())
                .map(|r| r.agent_id)
                .collect(),
        }
    }

    /// True when every line has exactly one turn, under its own agent.
    pub fn clean(&self) -> bool {
        self.missing == 0 && self.doubled == 0 && self.misassigned == 0
    }

    /// The JSON of `GET /api/audit/summary`.
    pub fn to_json(&self) -> Value {
        json!({
            "status": "done",
            "at": self.at,
            "clean": self.clean(),
            "checked": self.checked,
            "missing": self.missing,
            "doubled": self.doubled,
            "misassigned": self.misassigned,
            "agents": self.agents,
        })
    }
}

/// The last audit's summary, shared by the loop, the routes and `/metrics`.
#[derive(Default)]
pub struct AuditStatus(Mutex<Option<AuditSummary>>);

impl AuditStatus {
    /// Keeps a new summary.
    pub fn set(&self, summary: AuditSummary) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(summary);
    }

    /// The last summary, if an audit has run.
    pub fn last(&self) -> Option<AuditSummary> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The audit's Prometheus families (nothing before the first audit).
    pub fn render(&self) -> String {
        let Some(s) = self.last() else {
            return String::new();
        };
        let mut out = String::new();
        for (name, help, value) in [
            (
                "headspace_audit_checked_lines",
                "Conversational transcript lines the last audit checked.",
                s.checked as i64,
            ),
            (
                "headspace_audit_missing_turns",
                "Lines the last audit found without a turn.",
                s.missing as i64,
            ),
            (
                "headspace_audit_doubled_turns",
                "Lines the last audit found with more than one turn.",
                s.doubled as i64,
            ),
            (
                "headspace_audit_misassigned_turns",
                "Lines the last audit found with their turn under another agent.",
                s.misassigned as i64,
            ),
            (
                "headspace_audit_last_run_seconds",
                "When the last audit ran (Unix time).",
                s.at.millis() / 1000,
            ),
        ] {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        }
        out
    }
}

/// Runs the audit every `every`, the first one `every` after the start.
pub fn start(
    store: Arc<dyn Store>,
    files: Arc<dyn Files>,
    clock: Arc<dyn Clock>,
    max_line_bytes: usize,
    status: Arc<AuditStatus>,
    every: Duration,
) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match audit_every_agent(&*store, &files, max_line_bytes).await {
                Ok(reports) => {
                    let summary = AuditSummary::of(clock.now(), &reports);
                    log(&summary);
                    status.set(summary);
                }
                Err(e) => warn!("[AUDIT] could not run the periodic audit: {e}"),
            }
        }
    });
}

/// The audit's log line: INFO when clean, WARN with what to do otherwise.
pub fn log(s: &AuditSummary) {
    if s.clean() {
        info!(
            "[AUDIT] all {} conversational lines accounted for: one turn each",
            s.checked
        );
    } else {
        warn!(
            "[AUDIT] of {} lines, {} missing, {} doubled, {} mis-assigned (agents {:?}); `headspace audit AGENT` names them, `POST /api/agents/AGENT/reconcile` restores missing ones",
            s.checked, s.missing, s.doubled, s.misassigned, s.agents
        );
    }
}

/// Keeps the reader's type in one place for the App.
pub type SharedFiles = Arc<dyn Files>;

/// Audits one agent from the store and the files.
pub(crate) async fn audit_one(
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
        let kind = headspace_core::kind::AgentKind::of_transcript(path);
        let mut scan = ConversationScan::of_kind(kind, max_line);
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

#[cfg(test)]
mod tests {
    use super::{AuditStatus, AuditSummary};
    use headspace_core::Timestamp;

    #[test]
    fn metrics_appear_after_the_first_audit_and_say_what_it_found() {
        let status = AuditStatus::default();
        assert_eq!(status.render(), "");
        status.set(AuditSummary {
            at: Timestamp(1_800_000_000_000),
            checked: 40,
            missing: 1,
            doubled: 2,
            misassigned: 0,
            agents: vec![3],
        });
        let text = status.render();
        assert!(
            text.contains("headspace_audit_checked_lines 40\n"),
            "{text}"
        );
        assert!(text.contains("headspace_audit_missing_turns 1\n"), "{text}");
        assert!(text.contains("headspace_audit_doubled_turns 2\n"), "{text}");
        assert!(
            text.contains("headspace_audit_misassigned_turns 0\n"),
            "{text}"
        );
        assert!(text.contains("headspace_audit_last_run_seconds 1800000000\n"));
        assert!(!status.last().unwrap().clean());
    }
}
