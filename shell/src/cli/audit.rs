//! `headspace audit [AGENT]`: every conversational transcript line against the stored turns.
//! One line per problem, with its uuid, then a summary; exits 0 only when none.

use super::agents::call;
use super::output::outln;
use super::ServerArg;
use serde_json::Value;
use std::process::ExitCode;

/// The exit code when the audit found problems; a failure to audit at all is [`ERROR`], so a
/// script can tell the two apart.
const PROBLEMS: u8 = 1;
/// The exit code when the server could not be asked or refused.
const ERROR: u8 = 2;

pub(crate) fn audit(agent: Option<&str>, server: &ServerArg) -> ExitCode {
    let path = match agent {
        Some(a) => format!("/api/agents/{}/audit", headspace::client::encode_segment(a)),
        None => "/api/audit".to_string(),
    };
    let reports = match call(server, "GET", &path) {
        Ok((200, v)) if agent.is_some() => vec![v],
        Ok((200, v)) => v["agents"].as_array().cloned().unwrap_or_default(),
        Ok((status, v)) => {
            eprintln!(
                "headspace audit: {}",
                super::agents::server_error(status, &v)
            );
            return ExitCode::from(ERROR);
        }
        Err(e) => {
            eprintln!("headspace audit: {e}");
            return ExitCode::from(ERROR);
        }
    };
    let (mut checked, mut problems) = (0, 0);
    for r in &reports {
        let agent = &r["agent_id"];
        checked += r["checked"].as_u64().unwrap_or(0);
        for uuid in list(r, "missing") {
            problems += 1;
            outln!("missing      {} agent {agent}: no stored turn", text(uuid));
        }
        for d in list(r, "doubled") {
            problems += 1;
            outln!(
                "doubled      {} agent {agent}: turns {}",
                text(&d["uuid"]),
                ids(&d["turn_ids"])
            );
        }
        for m in list(r, "misassigned") {
            problems += 1;
            outln!(
                "misassigned  {} agent {agent}: stored under agent {}",
                text(&m["uuid"]),
                ids(&m["agent_ids"])
            );
        }
    }
    if problems == 0 {
        outln!(
            "all {checked} turn(s) accounted for ({} agent(s))",
            reports.len()
        );
        ExitCode::SUCCESS
    } else {
        outln!(
            "{problems} problem(s) in {checked} conversational line(s) ({} agent(s)); `headspace reconcile AGENT` recreates missing turns",
            reports.len()
        );
        ExitCode::from(PROBLEMS)
    }
}

fn list<'a>(r: &'a Value, key: &str) -> &'a [Value] {
    r[key].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("?")
}

fn ids(v: &Value) -> String {
    list_of(v).join(", ")
}

fn list_of(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(Value::to_string).collect())
        .unwrap_or_default()
}
