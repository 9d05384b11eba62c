//! Several machines on one PostgreSQL (issue 21), with real processes: two edges (each its
//! own claude directory and machine name) and two hubs. Every transcript line is one turn
//! whichever process is killed; both hubs list every agent and stream the same events in
//! the same order; a client whose hub is killed reconnects to the other with
//! `Last-Event-ID` and gets exactly what it missed.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// One edge's agents: a synthetic session per agent, its transcript under the edge's claude
/// directory, each line's uuid remembered.
struct Machine {
    claude: PathBuf,
    sessions: Vec<SessionWriter>,
    uuids: Vec<String>,
}

impl Machine {
    fn new(name: &str, first_session: u64) -> Machine {
        let start = Timestamp::parse_rfc3339("2026-11-24T08:00:00Z").unwrap();
        Machine {
            claude: temp_dir(name),
            sessions: (first_session..first_session + 2)
                .map(|n| SessionWriter::new(n, start))
                .collect(),
            uuids: Vec::new(),
        }
    }

    /// One exchange per agent: a prompt hook (when `edge` is up) and the prompt and answer
    /// lines in the transcript.
    fn exchange(&mut self, edge: Option<&Server>, round: usize) {
        for (i, s) in self.sessions.iter_mut().enumerate() {
            let prompt = format!("round {round} for agent {i}");
            if let Some(edge) = edge {
                let pane = format!("%{i}");
                let body = hook(
                    s,
                    &self.claude,
                    &pane,
                    "UserPromptSubmit",
                    json!({ "prompt": prompt }),
                );
                assert_eq!(edge.post("/hook/UserPromptSubmit", &body).0, 200);
            }
            let file = self.claude.join(s.path());
            let p = s.prompt(&prompt, None);
            let a = s.agent_text(&format!("done with {prompt}"));
            append(&file, &format!("{}\n{}\n", p.json, a.json));
            self.uuids.push(p.uuid);
            self.uuids.push(a.uuid);
        }
    }
}

fn edge(db: &str, m: &Machine, name: &str, tmux: &Tmux) -> Server {
    Server::start(
        db,
        &m.claude,
        &[
            "--role",
            "edge",
            "--machine",
            name,
            "--tmux-socket",
            &tmux.0,
        ],
    )
}

fn hub(db: &str) -> Server {
    Server::start(db, &temp_dir("hub"), &["--role", "hub"])
}

/// Waits until every line's uuid is exactly one stored turn; panics with the counts if not.
fn every_line_once(db: &str, uuids: &[String], what: &str) {
    let list = uuids
        .iter()
        .map(|u| format!("'{u}'"))
        .collect::<Vec<_>>()
        .join(",");
    let sql = format!(
        "SELECT count(*) || ' ' || count(DISTINCT entry_uuid) FROM turns WHERE entry_uuid IN ({list})"
    );
    let want = format!("{0} {0}", uuids.len());
    let got = wait_for(Duration::from_secs(30), || {
        let got = psql(db, &sql);
        (got == want).then_some(got)
    });
    assert!(
        got.is_some(),
        "{what}: want {want} (turns, distinct lines), got {}",
        psql(db, &sql)
    );
}

/// The events of a raw SSE stream: (id, name, data), in the order sent.
fn events_of(raw: &str) -> Vec<(u64, String, String)> {
    raw.split("\n\n")
        .filter_map(|frame| {
            let field = |name: &str| {
                frame
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(str::to_string)
            };
            let id = field("id: ")?.parse().ok()?;
            Some((id, field("event: ")?, field("data: ").unwrap_or_default()))
        })
        .collect()
}

/// Waits until the stream holds every event sequenced in the database so far.
fn caught_up(
    db: &str,
    stream: &std::sync::Mutex<String>,
    what: &str,
) -> Vec<(u64, String, String)> {
    let newest: u64 = wait_for(Duration::from_secs(20), || {
        psql(db, "SELECT count(*) FROM events WHERE pos IS NULL")
            .eq("0")
            .then(|| {
                psql(db, "SELECT coalesce(max(pos), 0) FROM events")
                    .parse()
                    .ok()
            })
            .flatten()
    })
    .expect("every event sequenced");
    wait_for(Duration::from_secs(20), || {
        let evs = events_of(&stream.lock().unwrap());
        evs.last().filter(|e| e.0 >= newest).map(|_| evs.clone())
    })
    .unwrap_or_else(|| {
        panic!(
            "{what}: the stream never reached position {newest}:\n{}",
            stream.lock().unwrap()
        )
    })
}

#[test]
fn two_edges_two_hubs_every_turn_once_and_every_event_in_order() {
    let Some(db) = fresh_db("cluster") else {
        return;
    };
    let mut a = Machine::new("cluster-a", 1);
    let mut b = Machine::new("cluster-b", 11);
    // Edge A's tmux: its first pane (%0, agent 0's) writes whatever is typed into a file.
    let tmux_a = Tmux(format!("hs-cluster-a-{}", std::process::id()));
    let tmux_b = Tmux(format!("hs-cluster-b-{}", std::process::id()));
    let typed = a.claude.join("typed.txt");
    let pane = tmux_a.recording_pane(&typed);
    assert_eq!(pane, "%0");
    let edge_a = edge(&db, &a, "edge-a", &tmux_a);
    let edge_b = edge(&db, &b, "edge-b", &tmux_b);
    let hub_1 = hub(&db);
    let hub_2 = hub(&db);
    // Ids: the edges hold their own spaces.
    assert_eq!(
        psql(
            &db,
            "SELECT string_agg(name || '=' || id, ' ' ORDER BY name) FROM machines"
        ),
        "edge-a=1 edge-b=2"
    );
    // The edge serves no page, the hub takes no hooks.
    let (code, body) = edge_a.get("/");
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("edge"), "{body}");
    let (code, body) = hub_1.post("/hook/Stop", b"{}");
    assert_eq!(code, 404, "{body}");

    let stream_1 = sse(&hub_1.addr, None);
    let stream_2 = sse(&hub_2.addr, None);
    std::thread::sleep(Duration::from_millis(300));
    for round in 0..3 {
        a.exchange(Some(&edge_a), round);
        b.exchange(Some(&edge_b), round);
    }
    every_line_once(&db, &a.uuids, "edge A");
    every_line_once(&db, &b.uuids, "edge B");

    // Both hubs list all four agents, each with its machine.
    let listed = wait_for(Duration::from_secs(10), || {
        hub_2
            .try_json("/api/agents")
            .filter(|v| v.as_array().is_some_and(|a| a.len() == 4))
    })
    .expect("hub 2 lists the four agents");
    assert_eq!(hub_1.json("/api/agents").as_array().unwrap().len(), 4);
    let mut on: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["machine"].as_str())
        .collect();
    on.sort();
    assert_eq!(on, ["edge-a", "edge-a", "edge-b", "edge-b"], "{listed}");
    let machines = hub_1.json("/api/machines");
    let names: Vec<&str> = machines
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["edge-a", "edge-b"],
        "a hub is no machine: {machines}"
    );
    assert!(
        machines
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["agents"] == 2 && m["online"] == true && m["last_seen_at"].is_string()),
        "{machines}"
    );
    assert_eq!(
        psql(
            &db,
            "SELECT string_agg(machine, ' ' ORDER BY machine) FROM agents"
        ),
        "edge-a edge-a edge-b edge-b",
        "{listed}"
    );
    assert!(
        psql(&db, "SELECT count(*) FROM agents WHERE (id >> 48) <> (SELECT id FROM machines m WHERE m.name = agents.machine)") == "0",
        "every agent's id is in its machine's id space"
    );

    // Asked of hub 2, typed by edge A into its pane, once.
    let agent = psql(
        &db,
        "SELECT id FROM agents WHERE machine = 'edge-a' AND tmux_pane = '%0'",
    );
    let (status, body) = hub_2.post(
        &format!("/api/agents/{agent}/send"),
        json!({"text": "hello-through-the-hub"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 200, "{body}\n{}\n{}", hub_2.log(), edge_a.log());
    typed_once(&typed, "hello-through-the-hub");

    // The same events, in the same order, on both hubs.
    let seen_1 = caught_up(&db, &stream_1, "hub 1");
    let seen_2 = caught_up(&db, &stream_2, "hub 2");
    assert!(seen_1.len() >= 4 * 3 * 2, "{seen_1:?}");
    assert_eq!(seen_1, seen_2);
    let ids: Vec<u64> = seen_1.iter().map(|e| e.0).collect();
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "positions without a hole: {ids:?}"
    );

    // Hub 1 killed; its client reconnects to hub 2 from the last id it saw and misses
    // nothing while edge B's agents go on.
    let last_seen = seen_1.last().unwrap().0;
    hub_1.kill();
    b.exchange(Some(&edge_b), 3);
    let resumed = sse(&hub_2.addr, Some(last_seen));
    every_line_once(&db, &b.uuids, "edge B after hub 1 died");
    let rest = caught_up(&db, &resumed, "the resumed client");
    let whole = caught_up(&db, &stream_2, "hub 2");
    let mut joined = seen_1.clone();
    joined.extend(rest.iter().cloned());
    assert_eq!(
        joined, whole,
        "the client switched hubs without a loss or a repeat"
    );
    assert!(!resumed.lock().unwrap().contains("event: gap"));

    // Edge A SIGKILLed; its agents go on writing; restarted, it catches up: every line once,
    // in the same agents.
    let ids_before = psql(
        &db,
        "SELECT string_agg(id::text, ' ' ORDER BY id) FROM agents",
    );
    edge_a.kill();
    a.exchange(None, 4);
    a.exchange(None, 5);
    let edge_a = edge(&db, &a, "edge-a", &tmux_a);
    every_line_once(&db, &a.uuids, "edge A after its restart");
    assert_eq!(
        psql(
            &db,
            "SELECT string_agg(id::text, ' ' ORDER BY id) FROM agents"
        ),
        ids_before,
        "no agent made twice"
    );
    assert_eq!(
        psql(&db, "SELECT id FROM machines WHERE name = 'edge-a'"),
        "1"
    );
    let whole = caught_up(&db, &stream_2, "hub 2 after edge A's restart");
    let ids: Vec<u64> = whole.iter().map(|e| e.0).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");

    // PostgreSQL stopped for 20 s: the edges go on taking hooks, the transcripts are the
    // buffer; back, every line is one turn and hub 2's client goes on without a hole.
    pg_ctl(&["-m", "fast", "stop"]);
    a.exchange(Some(&edge_a), 6);
    b.exchange(Some(&edge_b), 6);
    std::thread::sleep(Duration::from_secs(20));
    a.exchange(Some(&edge_a), 7);
    pg_ctl(&["start"]);
    every_line_once(&db, &a.uuids, "edge A after the outage");
    every_line_once(&db, &b.uuids, "edge B after the outage");
    let whole = caught_up(&db, &stream_2, "hub 2 after the outage");
    let ids: Vec<u64> = whole.iter().map(|e| e.0).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let texts = whole
        .iter()
        .filter(|e| e.1 == "turn_created")
        .filter(|e| e.2.contains("round 7 for agent"))
        .count();
    assert_eq!(
        texts, 4,
        "round 7's two prompts and two answers, once each, reach hub 2's client"
    );
    assert_eq!(hub_2.json("/api/agents").as_array().unwrap().len(), 4);
    drop(edge_a);
    drop(edge_b);
    drop(hub_2);
}
