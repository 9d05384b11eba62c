//! This server as a machine of a shared database (issue 21, step 1), on a real PostgreSQL:
//! its name on every agent it writes (in the API and in the rows), `GET /api/machines`,
//! a name that cannot travel refused, a second server on the same id space refused at start,
//! and a machine whose heartbeat stopped shown offline.

mod common;
use common::*;
use headspace::server::pgstore::PgStore;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::time::Duration;

#[test]
fn agents_carry_their_machine_and_the_machines_list_says_who_is_online() {
    let Some(db) = fresh_db("machines") else {
        return;
    };
    let claude = temp_dir("machines");
    // Rows written before machines existed are taken by the first server to register.
    let server = Server::start(&db, &claude, &["--machine", "laptop-1"]);
    let s = SessionWriter::new(1, headspace_core::Timestamp(1_793_523_600_000));
    let (code, _) = server.post(
        "/hook/UserPromptSubmit",
        &hook(
            &s,
            &claude,
            "%3",
            "UserPromptSubmit",
            json!({"prompt": "hello"}),
        ),
    );
    assert_eq!(code, 200);
    let agents = wait_for(Duration::from_secs(10), || {
        server
            .try_json("/api/agents")
            .filter(|a| a.as_array().is_some_and(|a| !a.is_empty()))
    })
    .expect("the agent is listed");
    assert_eq!(agents[0]["machine"], "laptop-1");
    assert_eq!(
        psql(&db, "SELECT machine FROM agents"),
        "laptop-1",
        "the row is stamped by the server's connection"
    );
    let machines = server.json("/api/machines");
    assert_eq!(machines.as_array().unwrap().len(), 1, "{machines}");
    assert_eq!(machines[0]["name"], "laptop-1");
    assert_eq!(machines[0]["online"], true);
    assert_eq!(machines[0]["agents"], 1);
    assert_eq!(machines[0]["id"], 0);

    // A second server on the same database would make ids in the same space: refused,
    // with the reason, before it listens.
    let other = common::headspace()
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            &db,
            "--machine",
            "desk-2",
        ])
        .arg("--claude-dir")
        .arg(&claude)
        .output()
        .unwrap();
    assert!(!other.status.success());
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(
        err.contains("machine id 0 is held by machine \"laptop-1\""),
        "{err}"
    );

    // A machine whose heartbeat stopped is offline within 15 s of it.
    server.stop();
    psql(
        &db,
        "UPDATE machines SET heartbeat_at = now() - interval '16 seconds'",
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rows = rt
        .block_on(PgStore::new(&db, 1).unwrap().machines())
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].online, "{rows:?}");
    assert_eq!(rows[0].agents, 1);
}

#[test]
fn a_machine_name_that_cannot_travel_unquoted_is_refused() {
    let Some(db) = fresh_db("machine_name") else {
        return;
    };
    let claude = temp_dir("machine-name");
    for bad in ["two words", "x -c search_path=evil", "a'b"] {
        let out = common::headspace()
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--database-url",
                &db,
                "--machine",
                bad,
            ])
            .arg("--claude-dir")
            .arg(&claude)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("use 1 to 63 letters"), "{bad}: {err}");
    }
    assert_eq!(psql(&db, "SELECT count(*) FROM machines"), "0");
}

/// An agent another machine wrote (issue 21): its card names that machine; while the
/// machine's heartbeat is stale the card's activity is `unknown` (never its stale
/// "running"), with the machine shown offline; a fresh heartbeat brings its real activity
/// back; an ended agent stays ended. `headspace machines` prints both machines.
#[test]
fn an_agent_of_an_offline_machine_shows_unknown_and_its_real_activity_once_it_reports() {
    let Some(db) = fresh_db("machines_other") else {
        return;
    };
    let claude = temp_dir("machines-other");
    let server = Server::start(&db, &claude, &["--machine", "hub-1"]);
    let id: u64 = 1 << 48; // machine 1's id space
    psql(
        &db,
        &format!(
            "INSERT INTO machines (name, id, heartbeat_at, version) VALUES ('other', 1, now() - interval '20 seconds', 'x');
             {}",
            agent_sql(id, "other", "remote", "processing")
        ),
    );
    let card = |server: &Server| {
        let all = server.json("/api/agents");
        let listed = all
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("the other machine's agent is listed: {all}"));
        assert_eq!(listed, server.json(&format!("/api/agents/{id}")));
        listed
    };
    let a = card(&server);
    assert_eq!(a["machine"], "other", "{a}");
    assert_eq!(a["activity"], "unknown", "{a}");
    assert_eq!(a["machine_online"], false, "{a}");
    assert!(a["machine_last_seen"].is_string(), "{a}");
    assert_eq!(a["state"], "processing", "the task's state is a fact: kept");
    assert!(a["now"].is_null());

    let machines = server.json("/api/machines");
    let other = machines
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "other")
        .unwrap_or_else(|| panic!("{machines}"));
    assert_eq!(other["online"], false);
    assert_eq!(other["agents"], 1);

    // The command line says the same.
    let cli = |args: &[&str]| {
        let out = common::headspace()
            .args(args)
            .args(["--addr", &server.addr])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = cli(&["machines"]);
    let line_of = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_string()
    };
    assert!(text.starts_with("MACHINE "), "{text}");
    let hub = line_of("hub-1");
    assert!(hub.contains(" online "), "{hub}");
    assert!(hub.trim_end().ends_with(" 0"), "{hub}");
    let off = line_of("other");
    assert!(off.contains(" offline since 20"), "{off}");
    assert!(off.contains("s ago"), "{off}");
    assert!(off.trim_end().ends_with(" 1"), "{off}");
    let json: serde_json::Value = serde_json::from_str(&cli(&["machines", "--json"])).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2, "{json}");

    // A fresh heartbeat: the agent's real activity.
    psql(
        &db,
        "UPDATE machines SET heartbeat_at = now() WHERE name = 'other'",
    );
    let a = card(&server);
    assert_eq!(a["activity"], "running", "{a}");
    assert_eq!(a["machine_online"], true, "{a}");
    assert_eq!(a["machine"], "other");

    // Ended stays ended, whatever the machine.
    psql(
        &db,
        &format!(
            "UPDATE machines SET heartbeat_at = now() - interval '1 hour' WHERE name = 'other';
             UPDATE agents SET ended = true WHERE id = {id}"
        ),
    );
    let a = card(&server);
    assert_eq!(a["activity"], "ended", "{a}");
    assert_eq!(a["machine_online"], false, "{a}");
}

/// A pane id names a pane on every machine (issue 31, found by the simulation): a send to
/// `%1` when live agents on two machines hold `%1` is refused with both named, and types
/// nothing; the same send by the agent's id goes to that agent.
#[test]
fn a_pane_held_on_two_machines_is_refused_as_a_reference() {
    let Some(db) = fresh_db("machines_pane_twice") else {
        return;
    };
    let claude = temp_dir("machines-pane-twice");
    let server = Server::start(&db, &claude, &["--machine", "hub-1"]);
    let (a, b): (u64, u64) = (1 << 48, 2 << 48);
    psql(
        &db,
        &format!(
            "INSERT INTO machines (name, id, heartbeat_at, version) VALUES ('desk', 1, now(), 'x'), ('laptop', 2, now(), 'x');
             {} {}
             UPDATE agents SET tmux_pane = '%1';",
            agent_sql(a, "desk", "alpha", "complete"),
            agent_sql(b, "laptop", "beta", "complete")
        ),
    );
    let (status, body) = request(
        &server.addr,
        "POST",
        "/api/agents/%251/send",
        br#"{"text": "rm -rf target"}"#,
    )
    .expect("an answer");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("desk, laptop"), "{body}");
    let commands = psql(&db, "SELECT count(*) FROM pane_commands");
    assert_eq!(commands.trim(), "0", "nothing was forwarded");
    // By id, the agent is found: its card names its machine.
    let card = server.json(&format!("/api/agents/{a}"));
    assert_eq!(card["machine"], "desk", "{card}");
}
