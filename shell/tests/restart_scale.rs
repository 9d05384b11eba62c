//! A restart loads the agents that are live, not every agent ever seen: 20,000 ended agents
//! (each with a task, five turns and a transcript offset) cost the start-up their rows only,
//! and one of them comes back whole when news of it arrives.

mod common;
use common::*;
use std::time::{Duration, Instant};

/// 20,000 ended agents of machine `machine`, each with a task, five 400-byte turns and an
/// offset, and two live ones (heard of now), in one statement each.
fn many_agents(db: &str, machine: &str) {
    psql(
        db,
        &format!(
            "INSERT INTO agents (id, session_id, sessions, project, last_seen_at, machine, ended, transcript_path)
               SELECT g, 'old-' || g, ARRAY['old-' || g], 'project' || (g % 50), now() - interval '3 days', '{machine}', true,
                      'projects/-p/old-' || g || '.jsonl'
               FROM generate_series(1, 20000) g;
             INSERT INTO agents (id, session_id, sessions, project, last_seen_at, machine)
               SELECT g, 'live-' || g, ARRAY['live-' || g], 'live', now(), '{machine}' FROM generate_series(20001, 20002) g;
             INSERT INTO tasks (id, agent_id, session_id, state, transcript_state, started_at)
               SELECT g, g, session_id, 'complete', 'complete', now() - interval '3 days'
               FROM generate_series(1, 20002) g JOIN agents a ON a.id = g;
             INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source, session_id)
               SELECT a.id * 10 + k, a.id, a.id, CASE WHEN k = 0 THEN 'user' ELSE 'agent' END,
                      CASE WHEN k = 0 THEN 'command' ELSE 'progress' END,
                      repeat('word ' || k || ' ', 50), now() - interval '3 days' + k * interval '1 second',
                      'jsonl', md5(a.id || '-' || k), 'transcript', a.session_id
               FROM agents a, generate_series(0, 4) k;
             INSERT INTO transcript_offsets (path, session_id, \"offset\", task_id, machine)
               SELECT 'projects/-p/' || session_id || '.jsonl', session_id, 1000, id, '{machine}' FROM agents;
             ANALYZE;"
        ),
    );
}

#[test]
fn a_restart_loads_the_live_agents_and_the_others_on_demand() {
    let Some(db) = migrated_db("restart_scale") else {
        return;
    };
    let machine = headspace::server::machines::default_name();
    many_agents(&db, &machine);
    let claude = temp_dir("restart-scale");
    let started = Instant::now();
    let server = Server::start(&db, &claude, &[]);
    let restored = "rebuilt 2 agent(s) from the store; 20000 more load when news of them comes";
    let log = wait_for(Duration::from_secs(60), || {
        let log = server.log();
        log.contains(restored).then_some(log)
    });
    let took = started.elapsed();
    assert!(log.is_some(), "{}", server.log());
    // Settle: the restart's reads of every offset are answered (their files are gone).
    std::thread::sleep(Duration::from_secs(2));
    let rss_kb = proc_kb(server.child.id(), "VmRSS");
    eprintln!("start-up {took:?}, RSS {} MB", rss_kb / 1024);
    // Measured here (debug build): about 75 MB, and 2 s to the restore's log line. The
    // version that loaded every agent whole took 253 MB in its release build.
    assert!(rss_kb < 120 * 1024, "RSS {rss_kb} kB after starting");
    assert!(took < Duration::from_secs(20), "start-up took {took:?}");
    // News of an ended agent (its session resumed) brings it back whole: its new prompt
    // joins its own history, no second agent is made.
    let s = headspace_testkit::synth::SessionWriter::new(
        1,
        headspace_core::Timestamp::parse_rfc3339("2026-11-27T05:00:00Z").unwrap(),
    );
    let mut body: serde_json::Value = serde_json::from_slice(&hook(
        &s,
        &claude,
        "%77",
        "UserPromptSubmit",
        serde_json::json!({"prompt": "back again"}),
    ))
    .unwrap();
    body["session_id"] = serde_json::json!("old-17");
    body["transcript_path"] = serde_json::json!(claude
        .join("projects/-p/old-17.jsonl")
        .display()
        .to_string());
    let (status, answer) = server.post("/hook/UserPromptSubmit", body.to_string().as_bytes());
    assert_eq!(status, 200, "{answer}");
    let turns = wait_for(Duration::from_secs(10), || {
        let t = server.try_json("/api/agents/17/turns")?;
        (t.as_array()?.len() == 6).then_some(t)
    })
    .expect("the resumed agent's sixth turn");
    assert_eq!(turns[5]["text"], "back again");
    assert_eq!(
        psql(&db, "SELECT count(*) FROM agents"),
        "20002",
        "no new agent"
    );
    let agent = server.json("/api/agents/17");
    assert_eq!(agent["activity"], "running", "{agent}");
}
