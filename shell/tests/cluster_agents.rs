//! Several machines with stand-in agents (issue 21): two edges, each with its own claude
//! directory, tmux socket and two stand-in Claude Codes that lose hooks, and a hub. Every
//! scripted turn is one turn; `wait`, `send` and `reconcile` asked of the hub are answered by
//! the agent's machine; an orchestration started on the hub runs on the machine whose agent
//! works in the project, and types its steps there; a folder on both machines needs the
//! machine named.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Two tasks: a prompt and two replies, then a prompt and one reply (five turn lines).
const SCRIPT: &str = r#"{"turns": [{"prompt": "first task", "replies": ["Reading.", "Done."]}, {"prompt": "second task", "replies": ["Done again."]}]}"#;
const SCRIPT_TURNS: usize = 5;
/// Four tasks of three replies (sixteen turn lines), for an agent working across an edge's
/// death.
const LONG_SCRIPT: &str = r#"{"turns": [{"prompt": "task one", "replies": ["a", "b", "c"]}, {"prompt": "task two", "replies": ["d", "e", "f"]}, {"prompt": "task three", "replies": ["g", "h", "i"]}, {"prompt": "task four", "replies": ["j", "k", "l"]}]}"#;
const LONG_TURNS: usize = 16;

/// One edge and what runs on its machine.
struct Edge {
    server: Server,
    claude: PathBuf,
    tmux: Tmux,
}

impl Edge {
    fn start(db: &str, name: &str) -> Edge {
        let claude = temp_dir(&format!("cluster-agents-{name}"));
        let tmux = Tmux(format!("hs-ca-{name}-{}", std::process::id()));
        let server = Edge::serve(db, name, &claude, &tmux, "127.0.0.1:0");
        install_hooks(&server, &claude.join("settings.json"));
        std::fs::write(claude.join("script.json"), SCRIPT).unwrap();
        std::fs::write(claude.join("long.json"), LONG_SCRIPT).unwrap();
        Edge {
            server,
            claude,
            tmux,
        }
    }

    fn serve(db: &str, name: &str, claude: &Path, tmux: &Tmux, addr: &str) -> Server {
        Server::start_on(
            db,
            claude,
            addr,
            &[
                "--role",
                "edge",
                "--machine",
                name,
                "--tmux-socket",
                &tmux.0,
                "--pane-poll-seconds",
                "0.3",
            ],
        )
    }

    /// SIGKILLs the edge, waits `down`, and starts it again on the same address (the hooks
    /// its agents run name it), claude directory and tmux socket.
    fn kill_and_restart(self, db: &str, name: &str, down: Duration) -> Edge {
        let addr = self.server.addr.clone();
        self.server.kill();
        std::thread::sleep(down);
        let server = Edge::serve(db, name, &self.claude, &self.tmux, &addr);
        Edge { server, ..self }
    }

    /// A stand-in agent in its own tmux session, working in `folder`.
    fn agent(&self, session: &str, folder: &Path, flags: &str) {
        self.agent_playing("script.json", 60, session, folder, flags)
    }

    /// A stand-in agent playing the script `script` of the claude directory, `think_ms`
    /// between its lines.
    fn agent_playing(
        &self,
        script: &str,
        think_ms: u64,
        session: &str,
        folder: &Path,
        flags: &str,
    ) {
        let cmd = format!(
            "{} --claude-dir {} --script {} --session {session} --auto --think-ms {think_ms} {flags}",
            headspace_testkit::stand_in::stand_in_agent(),
            self.claude.display(),
            self.claude.join(script).display()
        );
        self.tmux.run(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "160",
            "-y",
            "40",
            "-c",
            &folder.display().to_string(),
            &cmd,
        ]);
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(ok.success(), "git {args:?}");
}

/// A project whose orchestration finished its design step: the runner's next step is
/// analyze, typed into the agent's pane.
fn designed_project(dir: &Path) {
    std::fs::create_dir_all(dir.join(".specflow")).unwrap();
    std::fs::create_dir_all(dir.join("specs/0001-widgets")).unwrap();
    std::fs::write(dir.join("README.md"), "# widgets\n").unwrap();
    std::fs::write(
        dir.join("specs/0001-widgets/tasks.md"),
        "## Phase 1: Setup\n\n- [ ] T001 Make the widget\n",
    )
    .unwrap();
    let state = json!({
        "schema_version": "3.0",
        "project": {"id": "widgets", "name": "widgets"},
        "orchestration": {
            "phase": {"id": "0001", "number": "0001", "name": "widgets", "branch": "0001-widgets", "status": "in_progress"},
            "step": {"current": "design", "index": 0, "status": "complete"}
        }
    });
    std::fs::write(
        dir.join(".specflow/orchestration-state.json"),
        state.to_string(),
    )
    .unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "widgets"]);
    git(dir, &["checkout", "-q", "-b", "0001-widgets"]);
}

/// The agent's turns as the hub serves them, once `pred` holds.
fn turns_when(hub: &Server, session: &str, pred: impl Fn(&[Value]) -> bool) -> Option<Vec<Value>> {
    wait_for(Duration::from_secs(40), || {
        let turns = hub.try_json(&format!("/api/agents/{session}/turns?limit=200"))?;
        let turns = turns.as_array()?.clone();
        pred(&turns).then_some(turns)
    })
}

fn prompts_saying(turns: &[Value], text: &str) -> usize {
    turns
        .iter()
        .filter(|t| t["text"].as_str().is_some_and(|c| c.contains(text)))
        .count()
}

#[test]
fn stand_in_agents_on_two_edges_answer_through_one_hub() {
    let Some(db) = fresh_db("cluster_agents") else {
        return;
    };
    let a = Edge::start(&db, "edge-a");
    let mut b = Edge::start(&db, "edge-b");
    let hub = Server::start(&db, &temp_dir("cluster-agents-hub"), &["--role", "hub"]);
    let work = temp_dir("cluster-agents-work");
    let project = work.join("widgets");
    designed_project(&project);
    let shared = work.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let alone = work.join("alone");
    std::fs::create_dir_all(&alone).unwrap();

    // Each machine: one agent that takes prompts after its script (specflow's skills), one
    // that stays idle; all lose hooks, one of them late as well.
    a.agent("ca-a0", &project, "--skills --drop-every 2");
    a.agent("ca-a1", &shared, "--stay --drop-every 2");
    b.agent(
        "ca-b0",
        &alone,
        "--skills --drop-every 3 --delay-hooks-ms 300",
    );
    b.agent("ca-b1", &shared, "--stay --drop-every 2");
    let sessions = ["ca-a0", "ca-a1", "ca-b0", "ca-b1"];

    // Every scripted turn once, whichever hooks were lost, as the hub serves them.
    for s in sessions {
        let turns = turns_when(&hub, s, |t| t.len() >= SCRIPT_TURNS).unwrap_or_else(|| {
            panic!(
                "{s}: the script's turns never reached the hub\n{}\n{}",
                a.server.log(),
                b.server.log()
            )
        });
        std::thread::sleep(Duration::from_millis(300));
        let again = hub.json(&format!("/api/agents/{s}/turns?limit=200"));
        assert_eq!(
            again.as_array().unwrap().len(),
            SCRIPT_TURNS,
            "{s}: {turns:?}"
        );
        let mut uuids: Vec<&str> = turns
            .iter()
            .filter_map(|t| t["entry_uuid"].as_str())
            .collect();
        uuids.sort();
        uuids.dedup();
        assert_eq!(uuids.len(), SCRIPT_TURNS, "{s}: one turn per line");
    }
    let agents = hub.json("/api/agents");
    let mut on: Vec<String> = agents
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}@{}",
                c["session_id"].as_str().unwrap_or(""),
                c["machine"].as_str().unwrap_or("")
            )
        })
        .collect();
    on.sort();
    assert_eq!(
        on,
        [
            "ca-a0@edge-a",
            "ca-a1@edge-a",
            "ca-b0@edge-b",
            "ca-b1@edge-b"
        ],
        "{agents}"
    );

    // An edge serves its API to its own machine's CLI and runners, never a page, and a
    // hostile page reaches it no more than a `--role all` server: a foreign Origin or a
    // rebinding Host is refused and nothing is typed.
    let edge = &a.server.addr;
    let (status, body) = a.server.get("/");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("serves no dashboard"), "{body}");
    let port = edge.rsplit(':').next().unwrap();
    let host = format!("Host: {edge}");
    let evil = format!("Host: evil.example:{port}");
    let attack = r#"{"text": "pwned-through-the-edge"}"#;
    // Even with the credential attached (as a browser attaches a cookie).
    let auth = bearer();
    for headers in [
        vec![
            host.as_str(),
            "Content-Type: application/json",
            "Origin: http://evil.example",
            auth.as_str(),
        ],
        vec![
            evil.as_str(),
            "Content-Type: application/json",
            auth.as_str(),
        ],
        vec![host.as_str(), "Content-Type: text/plain", auth.as_str()],
    ] {
        let (status, answer) = raw(edge, "POST", "/api/agents/ca-a1/send", &headers, attack);
        assert!(status == 403 || status == 415, "{headers:?}: {answer}");
    }
    let (status, _) = raw(edge, "GET", "/api/agents", &[&evil], "");
    assert_eq!(status, 403);

    // `wait` on the hub: idle, as edge A's watchdog and transcripts wrote it.
    let (status, body) = hub.get("/api/agents/ca-a1/wait?timeout=30");
    assert_eq!(status, 200, "{body}");
    let waited: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(waited["status"], "idle", "{waited}");

    // `send` on the hub: typed into edge B's pane, the agent answers, one turn.
    let (status, body) = hub.post(
        "/api/agents/ca-b0/send",
        json!({"text": "hello from the hub"}).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}\n{}", b.server.log());
    let turns = turns_when(&hub, "ca-b0", |t| {
        prompts_saying(t, "hello from the hub") == 1
    })
    .expect("the sent prompt is one turn");
    assert!(turns.len() > SCRIPT_TURNS);

    // `reconcile` on the hub: edge A's core re-reads the transcript and finds nothing missing.
    let (status, body) = hub.post("/api/agents/ca-a1/reconcile", b"{}");
    assert_eq!(status, 200, "{body}");
    let pane_a1 = a.tmux.run(&["capture-pane", "-p", "-t", "ca-a1"]);
    assert!(
        !pane_a1.contains("pwned"),
        "nothing typed by the attacks: {pane_a1}"
    );
    let reconciled: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reconciled["status"], "ok", "{reconciled}");
    assert_eq!(reconciled["created"], 0, "{reconciled}");

    // A folder agents of both machines work in needs the machine named; named, that machine
    // answers (no orchestration there: the hub alone would refuse the folder as unknown).
    let shared_q = shared.display().to_string();
    let (status, body) = hub.get(&format!("/api/orchestrate/status?project={shared_q}"));
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("edge-a") && body.contains("edge-b"), "{body}");
    let (status, body) = hub.get(&format!(
        "/api/orchestrate/status?project={shared_q}&machine=edge-b"
    ));
    assert_eq!(status, 404, "edge B's own answer: {body}");
    let (status, body) = hub.get(&format!(
        "/api/orchestrate/status?project={shared_q}&machine=edge-c"
    ));
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no agent of machine edge-c"), "{body}");

    // An orchestration started on the hub runs on edge A, beside its project, and types its
    // next step into the agent's pane there.
    let agent_id = hub.json("/api/agents/ca-a0")["id"].clone();
    let launch = json!({"project": project, "agent": agent_id.to_string()});
    let (status, body) = hub.post("/api/orchestrate/start", launch.to_string().as_bytes());
    assert_eq!(status, 200, "{body}\n{}", a.server.log());
    let started: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(started["machine"], "edge-a", "{started}");
    let log = project.join(".specflow/workflows/runner.log");
    turns_when(&hub, "ca-a0", |t| prompts_saying(t, "/flow.analyze") >= 1).unwrap_or_else(|| {
        panic!(
            "the runner never typed its step: {}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
            a.server.log()
        )
    });
    let q = project.display().to_string();
    let status_of = hub.json(&format!("/api/orchestrate/status?project={q}"));
    assert!(status_of["runner"]["alive"] == true, "{status_of}");
    let runs = hub.json("/api/orchestrations");
    let listed: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["machine"].as_str())
        .collect();
    assert_eq!(listed, ["edge-a"], "{runs}");
    let (status, body) = hub.post(
        "/api/orchestrate/cancel",
        json!({"project": project}).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");

    // Edge B SIGKILLed while a new agent of its machine works (its hooks fail while the edge
    // is down, and it loses every other one anyway), restarted 3 s later: every line of
    // every agent of B is one turn, nothing doubled by the restart's re-reading.
    b.agent_playing("long.json", 250, "ca-b2", &alone, "--drop-every 2");
    std::thread::sleep(Duration::from_millis(1500));
    b = b.kill_and_restart(&db, "edge-b", Duration::from_secs(3));
    let turns = turns_when(&hub, "ca-b2", |t| t.len() >= LONG_TURNS).unwrap_or_else(|| {
        panic!(
            "ca-b2's turns never all reached the hub: {:?}\n{}",
            hub.try_json("/api/agents/ca-b2/turns?limit=200"),
            b.server.log()
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    let again = hub.json("/api/agents/ca-b2/turns?limit=200");
    assert_eq!(again.as_array().unwrap().len(), LONG_TURNS, "{turns:?}");
    let b1 = hub.json("/api/agents/ca-b1/turns?limit=200");
    assert_eq!(b1.as_array().unwrap().len(), SCRIPT_TURNS, "{b1}");
    let b0 = hub.json("/api/agents/ca-b0/turns?limit=200");
    assert_eq!(
        prompts_saying(b0.as_array().unwrap(), "hello from the hub"),
        1,
        "{b0}"
    );
    assert_eq!(hub.json("/api/agents").as_array().unwrap().len(), 5);
}
