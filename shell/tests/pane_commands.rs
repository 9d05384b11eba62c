//! Commands to panes through the database (issue 21, step 4), on a real PostgreSQL and a
//! real tmux on a private socket: two executors claiming at once run each command exactly
//! once, and never a refused one or one past its deadline; a send asked of server A for an
//! agent on machine B is typed into B's pane once, by B's executor, and answered with B's
//! result; with B's heartbeat stale A answers 503 at once, and that refused command never
//! runs, even after B comes back.

mod common;
use common::*;
use headspace::server::driver::CoreHome;
use headspace::server::pane_keys::{default_trusted_file, PaneKeys};
use headspace::server::pane_queue::{await_result, Awaited};
use headspace::server::pgstore::pane_commands::PgPaneQueue;
use headspace::server::pgstore::PgStore;
use headspace::server::world::{DiskFiles, SystemClock, TmuxPanes, World};
use headspace::server::{start, Settings};
use headspace_core::access::AccessPolicy;
use headspace_core::cluster::pane_commands::PaneCommandKind;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn two_claimers_run_each_command_once_and_never_a_refused_or_late_one() {
    let Some(db) = migrated_db("pane_cmd_claim") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let store = PgStore::new(&db, 4).unwrap();
        let queue = PgPaneQueue {
            store: store.clone(),
            url: db.clone(),
        };
        let rules = headspace_core::Config::new("/c");
        let send = PaneCommandKind::Send;
        let mut pending = BTreeSet::new();
        for i in 0..40u64 {
            let body = json!({"text": format!("t{i}")});
            pending.insert(store.submit_pane_command("b", i, send, &body, None)
.await.unwrap());
        }
        // Another machine's row, a row refused at once, and one past its deadline.
        let other = store
            .submit_pane_command("c", 1, send, &json!({}), None)
            .await
            .unwrap();
        let refused = store
            .refuse_pane_command("b", 1, send, &json!({}), &json!({"status": 503}))
            .await
            .unwrap();
        let late = store
            .submit_pane_command("b", 1, send, &json!({}), None)
            .await
            .unwrap();
        psql(
            &db,
            &format!("UPDATE pane_commands SET deadline = now() - interval '1 second' WHERE id = {late}"),
        );

        // Two executors of machine b at once, each taking three rows at a time.
        let claimer = |store: PgStore| {
            tokio::spawn(async move {
                let mut ran = Vec::new();
                loop {
                    let taken = store.claim_pane_commands("b", 3).await.unwrap();
                    if taken.is_empty() {
                        return ran;
                    }
                    for c in taken {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        store
                            .finish_pane_command(c.id, &json!({"status": 200, "body": {"ran": c.id}}))
                            .await
                            .unwrap();
                        ran.push(c.id);
                    }
                }
            })
        };
        let (one, two) = (claimer(store.clone()), claimer(store.clone()));
        let (one, two) = (one.await.unwrap(), two.await.unwrap());
        assert!(!one.is_empty() && !two.is_empty(), "both took rows: {one:?} {two:?}");
        let mut all: Vec<i64> = one.iter().chain(&two).copied().collect();
        all.sort();
        let unique: BTreeSet<i64> = all.iter().copied().collect();
        assert_eq!(all.len(), unique.len(), "a row ran twice: {all:?}");
        assert_eq!(unique, pending, "every pending row of b ran, and only those");

        // The refused row stays refused; the late one is never taken, and the waiting
        // server's withdrawal makes it refused for good.
        assert!(store.claim_pane_commands("b", 10).await.unwrap().is_empty());
        assert!(store.withdraw_pane_command(late).await.unwrap());
        assert!(!store.withdraw_pane_command(refused).await.unwrap());
        psql(
            &db,
            &format!("UPDATE pane_commands SET deadline = now() + interval '1 minute' WHERE id IN ({late}, {refused})"),
        );
        assert!(
            store.claim_pane_commands("b", 10).await.unwrap().is_empty(),
            "a refused row is never taken, whatever its deadline"
        );
        // A finished row's result is what the waiting server gets.
        let first = *pending.iter().next().unwrap();
        assert_eq!(
            await_result(&queue, first, &rules).await.unwrap(),
            Awaited::Result(json!({"status": 200, "body": {"ran": first}}))
        );
        // A waiting server withdraws a row not taken by its deadline (it is then refused and
        // never taken), and stops waiting on a taken one that gives no result in time.
        let unheard = store
            .submit_pane_command("z", 1, send, &json!({}), None)
            .await
            .unwrap();
        psql(
            &db,
            &format!("UPDATE pane_commands SET deadline = now() - interval '1 millisecond' WHERE id = {unheard}"),
        );
        assert_eq!(await_result(&queue, unheard, &rules).await.unwrap(), Awaited::NotTaken);
        psql(
            &db,
            &format!("UPDATE pane_commands SET deadline = now() + interval '1 minute' WHERE id = {unheard}"),
        );
        assert!(store.claim_pane_commands("z", 10).await.unwrap().is_empty());
        let silent = store
            .submit_pane_command("y", 1, send, &json!({}), None)
            .await
            .unwrap();
        assert_eq!(store.claim_pane_commands("y", 10).await.unwrap().len(), 1);
        psql(
            &db,
            &format!("UPDATE pane_commands SET deadline = now() - interval '31 seconds' WHERE id = {silent}"),
        );
        assert_eq!(await_result(&queue, silent, &rules).await.unwrap(), Awaited::NoResult);
        // Machine c's row is c's alone.
        let theirs = store.claim_pane_commands("c", 10).await.unwrap();
        assert_eq!(theirs.iter().map(|c| c.id).collect::<Vec<_>>(), [other]);
    });
}

/// The settings of the in-process server that plays machine B.
fn machine_b_settings(claude: &Path) -> Settings {
    let home = headspace::config::default_home().unwrap();
    Settings {
        core: headspace_core::Config::new(claude.display().to_string()),
        sweep_every: Duration::from_secs(1),
        pane_interval: Duration::from_secs(1),
        pane_lines: 20,
        audit_every: None,
        max_body: 1 << 20,
        access: AccessPolicy::new(["127.0.0.1"], "paneToken"),
        token: "paneToken".into(),
        // Machine A runs with the default home: B trusts A's key by sharing it.
        pane_keys: Arc::new(
            PaneKeys::load(&home, &default_trusted_file(&home)).expect("the pane key"),
        ),
        self_addr: "127.0.0.1:1".into(),
        max_connections: 16,
        header_timeout: Duration::from_secs(10),
        static_dir: "/nonexistent".into(),
        core_home: CoreHome::Thread,
        prices: headspace_core::usage::PriceTable::builtin(),
        prices_file: None,
        machine: "B".into(),
        role: headspace::server::role::Role::Edge,
        hold_limits: headspace_core::store::outage::HoldLimits::default(),
        spool_dir: None,
    }
}

fn commands(db: &str, kind: &str) -> Vec<String> {
    let out = psql(
        db,
        &format!("SELECT state FROM pane_commands WHERE kind = '{kind}' ORDER BY id"),
    );
    out.lines().map(str::to_string).collect()
}

#[test]
fn a_send_for_a_pane_on_another_machine_is_typed_there_once_or_refused_at_once_when_it_is_offline()
{
    let Some(db) = fresh_db("pane_cmd_fwd") else {
        return;
    };
    let claude = temp_dir("pane-cmd-a");
    let claude_b = temp_dir("pane-cmd-b");
    let tmux = Tmux(format!("hs-panecmd-{}", std::process::id()));
    // B's pane: whatever is typed and entered lands in a file, once per Enter.
    let typed = claude_b.join("typed.txt");
    let pane = tmux.recording_pane(&typed);
    let server = Server::start(&db, &claude, &["--machine", "A", "--tmux-socket", &tmux.0]);
    let agent = agent_held_by_b(&server, &db, &claude, &pane);
    let rt = start_machine_b(&db, &claude_b, &tmux);

    // Asked of A, typed by B, answered with B's result.
    let asked = Instant::now();
    let (status, body) = server.post(
        &format!("/api/agents/{agent}/send"),
        json!({"text": "hello-from-a"}).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}\n{}", server.log());
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["status"], "sent", "{answer}");
    assert_eq!(answer["pane"], pane.as_str(), "{answer}");
    assert!(asked.elapsed() < Duration::from_secs(10));
    typed_once(&typed, "hello-from-a");
    assert_eq!(commands(&db, "send"), ["done"]);

    // Interrupt goes the same way.
    let (status, body) = server.post(&format!("/api/agents/{agent}/interrupt"), b"{}");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"interrupted\""), "{body}");
    assert_eq!(commands(&db, "interrupt"), ["done"]);

    // Clear types `/clear` there; an answer with no question open gets B's 409, worded
    // with the reference the client used.
    let (status, body) = server.post(&format!("/api/agents/{agent}/clear"), b"{}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(commands(&db, "clear"), ["done"]);
    wait_for(Duration::from_secs(5), || {
        let text = std::fs::read_to_string(&typed).ok()?;
        text.contains("/clear").then_some(())
    })
    .expect("/clear reached B's pane");
    let (status, body) = server.post(
        &format!("/api/agents/{agent}/answer"),
        json!({"option": 1}).to_string().as_bytes(),
    );
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"error": format!("agent {agent} is not waiting on a question")})
    );
    assert_eq!(commands(&db, "answer"), ["done"]);

    // B stops reporting: A answers 503 at once, naming B and its last heartbeat.
    psql(
        &db,
        "UPDATE machines SET heartbeat_at = now() - interval '20 seconds' WHERE name = 'B'",
    );
    let since = psql(
        &db,
        "SELECT to_char(heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM machines WHERE name = 'B'",
    );
    let asked = Instant::now();
    let (status, body) = server.post(
        &format!("/api/agents/{agent}/send"),
        json!({"text": "never-typed"}).to_string().as_bytes(),
    );
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(status, 503, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        answer,
        json!({"error": format!("machine B is offline since {since}")})
    );
    assert_eq!(commands(&db, "send"), ["done", "refused"]);

    // B comes back; its executor looks every second: the refused command never runs.
    psql(
        &db,
        "UPDATE machines SET heartbeat_at = now() WHERE name = 'B'",
    );
    std::thread::sleep(Duration::from_secs(3));
    let text = std::fs::read_to_string(&typed).unwrap();
    assert!(!text.contains("never-typed"), "{text:?}");
    assert_eq!(commands(&db, "send"), ["done", "refused"]);
    drop(rt);
}

/// An agent whose row machine B holds, its pane `pane` on B's tmux (its hook posted to A).
fn agent_held_by_b(server: &Server, db: &str, claude: &Path, pane: &str) -> u64 {
    let s = SessionWriter::new(7, headspace_core::Timestamp(1_793_523_600_000));
    let (code, _) = server.post(
        "/hook/SessionStart",
        &hook(&s, claude, pane, "SessionStart", json!({})),
    );
    assert_eq!(code, 200);
    let card = wait_for(Duration::from_secs(10), || {
        server
            .try_json("/api/agents")
            .and_then(|a| a.as_array().and_then(|a| a.first().cloned()))
    })
    .expect("the agent is listed");
    let agent = card["id"].as_u64().unwrap();
    psql(
        db,
        &format!("UPDATE agents SET machine = 'B' WHERE id = {agent}"),
    );
    psql(
        db,
        "INSERT INTO machines (name, id, heartbeat_at) VALUES ('B', 1, now())",
    );
    agent
}

/// Machine B: a server's insides on its own pool (named B) and B's tmux, with its executor,
/// on the returned runtime.
fn start_machine_b(db: &str, claude_b: &Path, tmux: &Tmux) -> tokio::runtime::Runtime {
    let rt = runtime();
    rt.block_on(async {
        let store = PgStore::for_machine(db, 4, Some("B")).unwrap();
        let world = World {
            clock: Arc::new(SystemClock),
            store: Arc::new(store.clone()),
            files: Arc::new(DiskFiles::new(claude_b.to_path_buf())),
            panes: Arc::new(TmuxPanes {
                socket: Some(tmux.0.clone()),
            }),
            pane_queue: Some(Arc::new(PgPaneQueue {
                store: store.clone(),
                url: db.to_string(),
            })),
            archive: Some(Arc::new(store)),
            launcher: None,
            push: None,
        };
        let app = start(&world, machine_b_settings(claude_b), None)
            .await
            .unwrap();
        headspace::server::http::start_pane_executor(app);
    });
    rt
}

/// The state and result status of pane command `id`, once it is no longer pending.
fn settled(db: &str, id: &str) -> (String, String) {
    wait_for(Duration::from_secs(10), || {
        let row = psql(
            db,
            &format!(
                "SELECT state, coalesce(result->>'status', '') FROM pane_commands WHERE id = {id}"
            ),
        );
        let (state, status) = row.split_once('|')?;
        (state != "pending" && state != "running").then(|| (state.to_string(), status.to_string()))
    })
    .unwrap_or_else(|| panic!("command {id} was never taken"))
}

#[test]
fn a_row_written_into_the_database_alone_never_makes_a_machine_type() {
    let Some(db) = fresh_db("pane_cmd_forged") else {
        return;
    };
    let claude = temp_dir("pane-forged-a");
    let claude_b = temp_dir("pane-forged-b");
    let tmux = Tmux(format!("hs-paneforged-{}", std::process::id()));
    let typed = claude_b.join("typed.txt");
    let pane = tmux.recording_pane(&typed);
    let server = Server::start(&db, &claude, &["--machine", "A", "--tmux-socket", &tmux.0]);
    let agent = agent_held_by_b(&server, &db, &claude, &pane);
    let rt = start_machine_b(&db, &claude_b, &tmux);
    // A user's request through A: signed by A, typed by B.
    let (status, body) = server.post(
        &format!("/api/agents/{agent}/send"),
        json!({"text": "asked-by-the-user"}).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    typed_once(&typed, "asked-by-the-user");

    // A database client writes rows itself: with no signature; with a key of its own; as a
    // copy of the signed row (a replay); and the signed row with its body changed.
    let insert = |values: &str| {
        let id = psql(
            &db,
            &format!(
                "INSERT INTO pane_commands (machine, agent_id, kind, body, deadline, envelope, signature, signer)
                 {values} RETURNING id"
            ),
        );
        psql(&db, "NOTIFY pane_commands, 'B'");
        id.lines().next().unwrap().to_string()
    };
    let unsigned = insert(&format!(
        "VALUES ('B', {agent}, 'send', '{{\"text\": \"forged-unsigned\"}}', now() + interval '30 seconds', NULL, NULL, NULL)"
    ));
    let stranger = PaneKeys::ephemeral().sign(
        "B",
        agent,
        PaneCommandKind::Send,
        &json!({"text": "forged-stranger"}),
        headspace::server::world::Clock::now(&SystemClock).millis(),
    );
    let own_key = insert(&format!(
        "VALUES ('B', {agent}, 'send', '{{}}', now() + interval '30 seconds', '{}', '{}', '{}')",
        stranger.envelope.replace('\'', "''"),
        stranger.signature,
        stranger.signer
    ));
    let copy = "SELECT machine, agent_id, kind, body, now() + interval '30 seconds', envelope, signature, signer
                FROM pane_commands WHERE kind = 'send' AND state = 'done' AND signature IS NOT NULL ORDER BY id LIMIT 1";
    let replay = insert(copy);
    let tampered = insert(&copy.replace(
        "envelope, signature",
        "replace(envelope, 'asked-by-the-user', 'forged-tampered'), signature",
    ));
    for (what, id) in [
        ("unsigned", &unsigned),
        ("signed by an unknown key", &own_key),
        ("a replay", &replay),
        ("tampered", &tampered),
    ] {
        let (state, status) = settled(&db, id);
        assert_eq!((state.as_str(), status.as_str()), ("done", "403"), "{what}");
    }
    std::thread::sleep(Duration::from_secs(1));
    let text = std::fs::read_to_string(&typed).unwrap();
    assert!(!text.contains("forged"), "a forged row was typed: {text:?}");
    assert_eq!(text.matches("asked-by-the-user").count(), 1, "{text:?}");
    drop(rt);
}
