//! This server as a machine of a shared database (issue 21, step 1), on a real PostgreSQL:
//! its name on every agent it writes (in the API and in the rows), `GET /api/machines`,
//! a name that cannot travel refused, a second server on the same id space refused at start,
//! and a machine whose heartbeat stopped shown offline.

mod common;
use common::*;
use headspace::server::pgstore::PgStore;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::process::Command;
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
    let other = Command::new(env!("CARGO_BIN_EXE_headspace"))
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
        let out = Command::new(env!("CARGO_BIN_EXE_headspace"))
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
