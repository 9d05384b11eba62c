//! Proof on demand, on the real binary and PostgreSQL: `headspace audit` names a turn whose
//! row was deleted and one doubled by hand, by uuid, and fails; the forced reconcile brings
//! the deleted one back (`created: 1`); the audit is clean once the hand-made copy is gone
//! (a reconcile only creates, never deletes: a double is for the audit to report).

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

fn turn_count(server: &Server, agent: &str) -> usize {
    server
        .try_json(&format!("/api/agents/{agent}/turns"))
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or(0)
}

fn audit(server: &Server, agent: Option<&str>) -> (i32, String) {
    let mut cmd = common::headspace();
    cmd.arg("audit");
    if let Some(a) = agent {
        cmd.arg(a);
    }
    let out = cmd.args(["--addr", &server.addr]).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn audit_names_missing_and_doubled_turns_and_reconcile_repairs_the_missing_one() {
    let Some(db) = fresh_db("audit_repair") else {
        return;
    };
    let claude = temp_dir("audit-repair");
    let server = Server::start(&db, &claude, &[]);
    let start = Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap();
    let mut a = SessionWriter::new(1, start);
    let mut b = SessionWriter::new(2, start);
    let a_lines = [
        a.prompt("fix the build", None),
        a.agent_text("Looking at the failing test."),
        a.agent_text("Done. All tests pass."),
    ];
    let b_lines = [b.prompt("write the docs", None), b.agent_text("Written.")];
    for (w, lines) in [(&a, &a_lines[..]), (&b, &b_lines[..])] {
        let text: String = lines.iter().map(|l| format!("{}\n", l.json)).collect();
        append(&claude.join(w.path()), &text);
    }
    for (w, n) in [(&a, 3), (&b, 2)] {
        wait_for(Duration::from_secs(10), || {
            (turn_count(&server, &w.session_id) == n).then_some(())
        })
        .unwrap_or_else(|| panic!("turns of {}:\n{}", w.session_id, server.log()));
    }
    let (code, text) = audit(&server, None);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("all 5 turn(s) accounted for"), "{text}");

    // A turn's row is lost; another line is stored twice (the copy under the other agent:
    // one agent cannot hold a uuid twice, PostgreSQL's unique index forbids it).
    let lost = &a_lines[1].uuid;
    let doubled = &a_lines[2].uuid;
    psql(
        &db,
        &format!("DELETE FROM turns WHERE entry_uuid = '{lost}'"),
    );
    let b_id = psql(
        &db,
        &format!(
            "SELECT id FROM agents WHERE session_id = '{}'",
            b.session_id
        ),
    );
    psql(
        &db,
        &format!(
            "INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source, session_id)
             SELECT 900000, {b_id}, (SELECT task_id FROM turns WHERE agent_id = {b_id} LIMIT 1), actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source, session_id
             FROM turns WHERE entry_uuid = '{doubled}'"
        ),
    );

    let (code, text) = audit(&server, None);
    assert_ne!(code, 0, "{text}");
    assert!(line_of(&text, lost).starts_with("missing"), "{text}");
    assert!(line_of(&text, doubled).starts_with("doubled"), "{text}");
    assert!(line_of(&text, doubled).contains("900000"), "{text}");
    assert!(text.contains("2 problem(s)"), "{text}");
    // One agent's audit, through the API: the same uuids.
    let report = server.json(&format!("/api/agents/{}/audit", a.session_id));
    assert_eq!(report["clean"], false);
    assert_eq!(report["missing"], json!([lost]));
    assert_eq!(report["doubled"][0]["uuid"], json!(doubled));
    let (code, _) = audit(&server, Some(&b.session_id));
    assert_eq!(code, 0, "the other agent's own lines are all there");

    // The forced reconcile re-reads the whole transcript: the lost turn comes back.
    let (status, body) = server.post(&format!("/api/agents/{}/reconcile", a.session_id), b"");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        json!({"status": "ok", "created": 1})
    );
    assert_eq!(
        psql(
            &db,
            &format!("SELECT count(*) FROM turns WHERE entry_uuid = '{lost}'")
        ),
        "1"
    );
    // Again: nothing is missing now, nothing is doubled by it.
    let (_, body) = server.post(&format!("/api/agents/{}/reconcile", a.session_id), b"");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        json!({"status": "ok", "created": 0})
    );
    // The double is the audit's to report, not the reconcile's to delete.
    let (code, text) = audit(&server, None);
    assert_ne!(code, 0, "{text}");
    assert!(!text.contains(lost.as_str()), "{text}");
    assert!(line_of(&text, doubled).starts_with("doubled"), "{text}");
    psql(&db, "DELETE FROM turns WHERE id = 900000");
    let (code, text) = audit(&server, None);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("all 5 turn(s) accounted for"), "{text}");
    server.stop();
}

/// The output line naming `uuid` (empty when none does).
fn line_of(text: &str, uuid: &str) -> String {
    text.lines()
        .find(|l| l.contains(uuid))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_background_audit_reports_a_lost_row_on_metrics_and_the_summary_until_repaired() {
    let Some(db) = fresh_db("audit_periodic") else {
        return;
    };
    let claude = temp_dir("audit-periodic");
    // An audit every 0.6 s.
    let server = Server::start(&db, &claude, &["--audit-minutes", "0.01"]);
    let mut a = SessionWriter::new(1, Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap());
    let lines = [a.prompt("tidy up", None), a.agent_text("Tidied.")];
    let text: String = lines.iter().map(|l| format!("{}\n", l.json)).collect();
    append(&claude.join(a.path()), &text);
    let summary = |want: &dyn Fn(&serde_json::Value) -> bool| {
        wait_for(Duration::from_secs(15), || {
            server
                .try_json("/api/audit/summary")
                .filter(|s| s["status"] == "done" && want(s))
        })
    };
    summary(&|s| s["clean"] == true && s["checked"] == 2)
        .unwrap_or_else(|| panic!("a clean audit of 2 lines:\n{}", server.log()));
    let (_, metrics) = server.get("/metrics");
    assert!(
        metrics.contains("headspace_audit_checked_lines 2\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("headspace_audit_missing_turns 0\n"),
        "{metrics}"
    );

    psql(
        &db,
        &format!("DELETE FROM turns WHERE entry_uuid = '{}'", lines[1].uuid),
    );
    let found = summary(&|s| s["missing"] == 1).expect("the periodic audit finds the lost row");
    let agent = found["agents"][0].as_u64().expect("the agent named");
    let (_, metrics) = server.get("/metrics");
    assert!(
        metrics.contains("headspace_audit_missing_turns 1\n"),
        "{metrics}"
    );
    assert!(server.log().contains("[AUDIT] of 2 lines, 1 missing"));

    // The dashboard's repair: reconcile the agents named, then audit again.
    let (status, body) = server.post(&format!("/api/agents/{agent}/reconcile"), b"{}");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"created\":1"), "{body}");
    let all = server.json("/api/audit");
    assert_eq!(all["clean"], true, "{all}");
    let now = server.json("/api/audit/summary");
    assert_eq!(
        now["clean"], true,
        "the summary follows an audit asked for: {now}"
    );
}
