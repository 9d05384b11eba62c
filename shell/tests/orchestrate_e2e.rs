//! End to end: `headspace orchestrate` drives the stand-in agent, playing specflow's `/flow.*`
//! skills in a real tmux pane, through a real server, on a throwaway git project carrying the
//! seed's tagged states (`test/clean-slate`, `test/design-complete`, …). Every live case checks
//! which `/flow.*` prompts reached the agent (its turns, as the server recorded them) and the
//! run's decision log; `decide` is checked on every tagged state through the binary.

mod common;
use common::*;
use headspace_core::orchestration::{validate, OrchestrationExecution, OrchestrationState};
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------ the throwaway project

/// The phase's tasks: two sections of open tasks, so implement runs two batches.
const TASKS_MD: &str = "# Tasks: widgets\n\n## Phase 1: Setup\n- [ ] T001 Create the widget module\n- [ ] T002 Add its configuration\n\n## Phase 2: Core\n- [ ] T003 Draw widgets\n- [ ] T004 [P] Test the drawing\n";
const TASKS_PATH: &str = "specs/0001-widgets/tasks.md";
const STATE: &str = ".specflow/orchestration-state.json";
const BRANCH: &str = "0001-widgets";

const BATCH_0: &str = "/flow.implement Execute tasks T001, T002 in section \"Phase 1: Setup\"";
const BATCH_1: &str = "/flow.implement Execute tasks T003, T004 in section \"Phase 2: Core\"";

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The project state on `step` with `status`, in specflow's shape.
fn state(step: &str, status: &str) -> Value {
    let index = ["design", "analyze", "implement", "verify", "merge"]
        .iter()
        .position(|s| *s == step)
        .unwrap();
    json!({
        "schema_version": "3.0",
        "project": {"id": "test-app", "name": "test-app"},
        "orchestration": {
            "phase": {"id": "0001", "number": "0001", "name": "widgets", "branch": BRANCH, "status": "in_progress"},
            "step": {"current": step, "index": index, "status": status}
        }
    })
}

/// A run in specflow's shape, started now, whose workflows ran in an agent that is long
/// gone (`%99`): live cases continue it with their own agent.
fn run(id: &str, phase: &str) -> Value {
    let now = Timestamp(now_ms()).to_string();
    json!({
        "id": id, "status": "running",
        "config": {"autoMerge": false, "pauseBetweenBatches": false, "autoHealEnabled": true,
                   "maxHealAttempts": 1, "budget": {"maxTotal": 50},
                   "headspace": {"agent": "%99", "addr": "127.0.0.1:9"}},
        "currentPhase": phase,
        "batches": {"total": 0, "current": 0, "items": []},
        "executions": {"implement": []},
        "startedAt": now, "updatedAt": now, "decisionLog": [], "totalCostUsd": 0
    })
}

fn batch(i: usize, status: &str, workflow: Option<&str>) -> Value {
    let (section, tasks) = if i == 0 {
        ("Phase 1: Setup", ["T001", "T002"])
    } else {
        ("Phase 2: Core", ["T003", "T004"])
    };
    let mut b = json!({"index": i, "section": section, "taskIds": tasks, "status": status, "healAttempts": 0});
    if let Some(w) = workflow {
        b["workflowExecutionId"] = json!(w);
    }
    b
}

/// A finished workflow's record, as the runner keeps it.
fn finished_workflow(id: &str, skill: &str, status: &str) -> Value {
    let t = now_ms() - 60_000;
    json!({"id": id, "skill": skill, "prompt": format!("/{skill}"), "agent": "%99",
           "startedAtMs": t, "status": status, "costUsd": 0.0, "lastActivityMs": t})
}

/// What a tag holds besides the code: `.specflow/` files and tasks ticked.
#[derive(Default)]
struct Tagged {
    state: Option<String>,
    run: Option<Value>,
    workflows: Vec<Value>,
    batch_0_ticked: bool,
}

/// A git project with the seed's tags, each a commit on top of the clean slate.
struct Repo {
    dir: PathBuf,
}

impl Repo {
    fn create(name: &str) -> Repo {
        let dir = std::env::temp_dir().join(format!(
            "headspace-orch-e2e-project-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        git(&dir, &["init", "-q", "-b", "main"]);
        write(&dir.join("README.md"), "# test-app\n");
        write(&dir.join(TASKS_PATH), TASKS_MD);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "test-app"]);
        git(&dir, &["checkout", "-q", "-b", BRANCH]);
        git(&dir, &["tag", "test/clean-slate"]);
        let repo = Repo { dir };
        for (tag, tagged) in tags(&repo.dir) {
            repo.tag(tag, tagged);
        }
        repo
    }

    fn tag(&self, tag: &str, t: Tagged) {
        let d = &self.dir;
        if let Some(s) = &t.state {
            write(&d.join(STATE), s);
        }
        if let Some(r) = &t.run {
            let id = r["id"].as_str().unwrap();
            write(
                &d.join(format!(".specflow/workflows/orchestration-{id}.json")),
                &r.to_string(),
            );
        }
        for w in &t.workflows {
            let id = w["id"].as_str().unwrap();
            write(
                &d.join(format!(".specflow/workflows/workflow-{id}.json")),
                &w.to_string(),
            );
        }
        if t.batch_0_ticked {
            write(
                &d.join(TASKS_PATH),
                &TASKS_MD
                    .replace("- [ ] T001", "- [x] T001")
                    .replace("- [ ] T002", "- [x] T002"),
            );
        }
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "--allow-empty", "-m", tag]);
        git(d, &["tag", tag]);
        git(d, &["reset", "-q", "--hard", "test/clean-slate"]);
        git(d, &["clean", "-q", "-fdx"]);
    }

    /// The project as the tag left it, on the phase's branch (as the seed's harness resets).
    fn checkout(&self, tag: &str) {
        git(&self.dir, &["checkout", "-q", "-f", "-B", BRANCH, tag]);
        git(&self.dir, &["clean", "-q", "-fdx"]);
    }

    fn path(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    fn tasks(&self) -> String {
        std::fs::read_to_string(self.dir.join(TASKS_PATH)).unwrap()
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The seed's tagged states (but clean slate, the first commit). `test/waiting-for-input`
/// needs an agent really waiting: the live question case makes it.
fn tags(dir: &Path) -> Vec<(&'static str, Tagged)> {
    let s = |step, status| Some(state(step, status).to_string());
    let mut out = vec![(
        "test/design-complete",
        Tagged {
            state: s("design", "complete"),
            ..Default::default()
        },
    )];

    // Runs continued by the live cases: their own options hold, so auto-merge is set here.
    let mut r = run("run-batch-1", "implement");
    r["config"]["autoMerge"] = json!(true);
    r["batches"] = json!({"total": 2, "current": 0, "items": [batch(0, "completed", Some("wf-b0")), batch(1, "pending", None)]});
    r["executions"]["implement"] = json!(["wf-b0"]);
    out.push((
        "test/implement-batch-1",
        Tagged {
            state: s("implement", "in_progress"),
            run: Some(r),
            workflows: vec![finished_workflow("wf-b0", "flow.implement", "completed")],
            batch_0_ticked: true,
        },
    ));

    // The seed: "Batch 2 failed, heal attempts = 1", here with 2 allowed.
    let mut r = run("run-batch-failed", "implement");
    let mut failed = batch(1, "failed", Some("wf-b1"));
    failed["healAttempts"] = json!(1);
    failed["error"] = json!("Workflow wf-b1 failed");
    r["config"]["maxHealAttempts"] = json!(2);
    r["config"]["autoMerge"] = json!(true);
    r["batches"] =
        json!({"total": 2, "current": 1, "items": [batch(0, "completed", Some("wf-b0")), failed]});
    r["executions"]["implement"] = json!(["wf-b0", "wf-b1"]);
    out.push((
        "test/implement-batch-failed",
        Tagged {
            state: s("implement", "in_progress"),
            run: Some(r),
            workflows: vec![
                finished_workflow("wf-b0", "flow.implement", "completed"),
                finished_workflow("wf-b1", "flow.implement", "failed"),
            ],
            batch_0_ticked: true,
        },
    ));

    let mut gate = state("verify", "complete");
    gate["orchestration"]["phase"]["hasUserGate"] = json!(true);
    gate["orchestration"]["phase"]["userGateStatus"] = json!("pending");
    out.push((
        "test/verify-user-gate",
        Tagged {
            state: Some(gate.to_string()),
            ..Default::default()
        },
    ));

    for (tag, auto) in [
        ("test/verify-auto-merge", true),
        ("test/verify-manual-merge", false),
    ] {
        let mut r = run(&format!("run-{}", &tag[12..]), "verify");
        r["config"]["autoMerge"] = json!(auto);
        r["executions"]["verify"] = json!("wf-v");
        out.push((
            tag,
            Tagged {
                state: s("verify", "complete"),
                run: Some(r),
                workflows: vec![finished_workflow("wf-v", "flow.verify", "completed")],
                ..Default::default()
            },
        ));
    }

    out.push((
        "test/corrupt-state",
        Tagged {
            state: Some("{\"orchestration\": {\"step\": {\"current\": \"desi".into()),
            ..Default::default()
        },
    ));

    // A headless design workflow whose process is alive (this test's) but silent for 11
    // minutes: no agent can be made to look that quiet.
    let mut r = run("run-stale", "design");
    r["config"]["headspace"] =
        json!({"headless": ["claude", "-p"], "claudeDir": dir.join("no-claude")});
    r["executions"]["design"] = json!("wf-stale");
    let t = now_ms();
    out.push((
        "test/stale-workflow",
        Tagged {
            state: s("design", "in_progress"),
            run: Some(r),
            workflows: vec![
                json!({"id": "wf-stale", "skill": "flow.design", "prompt": "/flow.design",
                "pid": std::process::id(), "startedAtMs": t - 12 * 60_000, "status": "running",
                "costUsd": 0.0, "lastActivityMs": t - 11 * 60_000}),
            ],
            ..Default::default()
        },
    ));

    let mut r = run("run-paused", "analyze");
    r["status"] = json!("paused");
    out.push((
        "test/paused",
        Tagged {
            state: s("analyze", "not_started"),
            run: Some(r),
            ..Default::default()
        },
    ));
    out
}

// ------------------------------------------------------------------ the CLI

/// `headspace` with tmux pointed away from any real tmux server: the runner's own tmux calls
/// must not reach a developer's session.
fn headspace_cmd(claude: &Path, args: &[&str]) -> Command {
    let mut c = common::headspace();
    c.args(args)
        .env_remove("HEADSPACE_ADDR")
        .env_remove("TMUX")
        .env("TMUX_TMPDIR", claude);
    if let Ok(addr) = std::fs::read_to_string(claude.join("server-addr")) {
        c.env("HEADSPACE_ADDR", addr);
    }
    c
}

fn orchestrate(claude: &Path, args: &[&str]) -> Output {
    let mut all = vec!["orchestrate"];
    all.extend_from_slice(args);
    headspace_cmd(claude, &all).output().unwrap()
}

fn decide(claude: &Path, repo: &Repo) -> Value {
    let o = orchestrate(claude, &["decide", "--project", repo.path()]);
    assert!(
        o.status.success(),
        "decide: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn status(claude: &Path, repo: &Repo) -> Value {
    let o = orchestrate(claude, &["status", "--project", repo.path(), "--json"]);
    assert!(
        o.status.success(),
        "status: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `status --json`, or `None` while there is no run yet (the runner creates it).
fn try_status(claude: &Path, repo: &Repo) -> Option<Value> {
    let o = orchestrate(claude, &["status", "--project", repo.path(), "--json"]);
    o.status
        .success()
        .then(|| serde_json::from_slice(&o.stdout).ok())
        .flatten()
}

/// Every decision-log entry's name, in order.
fn logged(exec: &OrchestrationExecution) -> Vec<String> {
    exec.decision_log
        .iter()
        .map(|e| e.decision.clone())
        .collect()
}

/// The skills spawned, in order, from the decision log's `spawned` entries.
fn spawned(exec: &OrchestrationExecution) -> Vec<String> {
    exec.decision_log
        .iter()
        .filter(|e| e.decision == "spawned")
        .map(|e| e.reason.split(' ').next().unwrap_or("").to_string())
        .collect()
}

/// The run file and the state, read with the core's types and checked with its validation.
fn valid_run(repo: &Repo) -> (OrchestrationExecution, OrchestrationState) {
    let runs: Vec<PathBuf> = std::fs::read_dir(repo.dir.join(".specflow/workflows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("orchestration-")
        })
        .collect();
    assert_eq!(runs.len(), 1, "one run: {runs:?}");
    let exec: OrchestrationExecution =
        serde_json::from_slice(&std::fs::read(&runs[0]).unwrap()).expect("the run file parses");
    let state: OrchestrationState =
        serde_json::from_slice(&std::fs::read(repo.dir.join(STATE)).unwrap())
            .expect("the state parses");
    let violations = validate(&state, Some(&exec));
    assert!(violations.is_empty(), "{violations:?}");
    (exec, state)
}

// ------------------------------------------------------------------ live: server, pane, agent

/// A server, a stand-in agent (skills on) in a tmux pane whose folder is the project at a
/// tag, and the runner started on it.
struct Live {
    server: Server,
    claude: PathBuf,
    repo: Repo,
    pane: String,
    runner: Option<Child>,
    runner_out: PathBuf,
    _tmux: Tmux,
}

impl Live {
    /// `None` (skipped) without PostgreSQL, as every server test.
    fn start(name: &str, tag: &str, agent_flags: &[&str]) -> Option<Live> {
        let PaneWorld {
            server,
            claude,
            tmux,
        } = PaneWorld::start(&format!("orch_e2e_{name}"))?;
        // The CLI finds a server off the default port only as a user tells it (a run's file
        // never names it): `headspace_cmd` passes this on as HEADSPACE_ADDR.
        std::fs::write(claude.join("server-addr"), &server.addr).unwrap();
        let repo = Repo::create(name);
        repo.checkout(tag);
        let cmd = format!(
            "{} --claude-dir {} --skills --think-ms 100 {}",
            headspace_testkit::stand_in::stand_in_agent(),
            claude.display(),
            agent_flags.join(" ")
        );
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "a",
            "-x",
            "200",
            "-y",
            "50",
            "-c",
            repo.path(),
            &cmd,
        ]);
        let pane = tmux.run(&["display-message", "-p", "-t", "a", "#{pane_id}"]);
        let live = Live {
            server,
            runner_out: claude.join("runner.out"),
            claude,
            repo,
            pane,
            runner: None,
            _tmux: tmux,
        };
        wait_for(Duration::from_secs(15), || {
            live.agent().filter(|a| a["activity"] == "idle")
        })
        .unwrap_or_else(|| panic!("the agent registers, idle:\n{}", live.server.log()));
        Some(live)
    }

    fn agent_path(&self) -> String {
        format!("/api/agents/{}", self.pane.replace('%', "%25"))
    }

    fn agent(&self) -> Option<Value> {
        self.server.try_json(&self.agent_path())
    }

    /// `orchestrate start` in the background, steps typed into this agent's pane.
    fn start_runner(&mut self, extra: &[&str]) {
        let mut args = vec![
            "orchestrate",
            "start",
            "--project",
            self.repo.path(),
            "--agent",
            &self.pane,
            "--addr",
            &self.server.addr,
            "--poll",
            "0.2",
        ];
        args.extend_from_slice(extra);
        let out = std::fs::File::create(&self.runner_out).unwrap();
        let child = headspace_cmd(&self.claude, &args)
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .unwrap();
        self.runner = Some(child);
    }

    fn runner_output(&self) -> String {
        std::fs::read_to_string(&self.runner_out).unwrap_or_default()
    }

    /// Waits for the runner to exit; its exit code (it is killed, and the test fails, after
    /// `timeout`).
    fn runner_exit(&mut self, timeout: Duration) -> i32 {
        let child = self.runner.as_mut().expect("runner started");
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                self.runner = None;
                return s.code().unwrap_or(-1);
            }
            if Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                self.runner = None;
                panic!(
                    "the runner did not finish in {timeout:?}:\n{}\nagent: {:?}\nturns: {:?}",
                    self.runner_output(),
                    self.agent(),
                    self.prompts()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls `status --json` until `pred` holds.
    fn wait_status(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        wait_for(Duration::from_secs(40), || {
            try_status(&self.claude, &self.repo).filter(|s| pred(s))
        })
        .unwrap_or_else(|| {
            panic!(
                "{what}: {:?}\nrunner:\n{}\nturns: {:?}",
                try_status(&self.claude, &self.repo),
                self.runner_output(),
                self.prompts()
            )
        })
    }

    /// The `/flow.*` prompts the agent received, from its turns on the server.
    fn prompts(&self) -> Vec<String> {
        self.server
            .try_json(&format!("{}/turns", self.agent_path()))
            .and_then(|t| t.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|t| t["actor"] == "user")
            .filter_map(|t| t["text"].as_str())
            .filter(|t| t.starts_with("/flow."))
            .map(str::to_string)
            .collect()
    }

    /// The prompts once the agent is idle and they have all been recorded (a prompt's turn
    /// lands a moment after the runner moved on).
    fn settled_prompts(&self, n: usize) -> Vec<String> {
        wait_for(Duration::from_secs(10), || {
            let p = self.prompts();
            (p.len() >= n).then_some(p)
        })
        .unwrap_or_else(|| self.prompts())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(c) = self.runner.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// ------------------------------------------------------------------ the cases

#[test]
fn a_clean_slate_runs_design_to_merge_spawning_each_step_once() {
    let Some(mut live) = Live::start("happy", "test/clean-slate", &[]) else {
        return;
    };
    assert!(!live.repo.dir.join(".specflow").exists());
    let t0 = Instant::now();
    live.start_runner(&["--auto-merge"]);
    let code = live.runner_exit(Duration::from_secs(60));
    let out = live.runner_output();
    assert_eq!(code, 0, "{out}");
    assert!(
        out.trim_end().ends_with(": completed"),
        "the runner says how the run ended: {out}"
    );
    eprintln!("clean slate to merged in {:?}", t0.elapsed());

    let expected = strings(&[
        "/flow.design",
        "/flow.analyze",
        BATCH_0,
        BATCH_1,
        "/flow.verify",
        "/flow.merge",
    ]);
    assert_eq!(
        live.settled_prompts(6),
        expected,
        "each step typed once, in order"
    );

    let (exec, state) = valid_run(&live.repo);
    assert_eq!(exec.status.as_str(), "completed");
    assert_eq!(
        spawned(&exec),
        strings(&[
            "flow.design",
            "flow.analyze",
            "flow.implement",
            "flow.implement",
            "flow.verify",
            "flow.merge"
        ]),
        "{:?}",
        logged(&exec)
    );
    let transitions: Vec<_> = exec
        .decision_log
        .iter()
        .filter(|e| e.decision == "transition")
        .map(|e| e.data.as_ref().unwrap()["nextStep"].clone())
        .collect();
    assert_eq!(
        transitions,
        [
            json!("analyze"),
            json!("implement"),
            json!("verify"),
            json!("merge")
        ]
    );
    let names = logged(&exec);
    for once in ["initialize_batches", "advance_batch", "complete"] {
        assert_eq!(
            names.iter().filter(|n| *n == once).count(),
            1,
            "{once}: {names:?}"
        );
    }
    assert_eq!(names.last().unwrap(), "complete");
    for bad in [
        "recover_failed",
        "needs_attention",
        "spawn_failed",
        "heal_batch",
    ] {
        assert!(!names.iter().any(|n| n == bad), "{bad}: {names:?}");
    }
    let batches: Vec<_> = exec
        .batches
        .items
        .iter()
        .map(|b| (b.section.as_str(), b.status.as_str()))
        .collect();
    assert_eq!(
        batches,
        [
            ("Phase 1: Setup", "completed"),
            ("Phase 2: Core", "completed")
        ]
    );
    assert_eq!(state.orchestration.step.current.unwrap().as_str(), "merge");
    assert_eq!(
        state.orchestration.step.status.get().unwrap().as_str(),
        "complete"
    );
    assert!(
        !live.repo.tasks().contains("- [ ]"),
        "the skills ticked every task: {}",
        live.repo.tasks()
    );
    let s = status(&live.claude, &live.repo);
    assert_eq!(s["status"], "completed");
    assert!(s["runner"].is_null(), "the runner file is gone: {s}");
}

#[test]
fn a_user_gate_then_a_manual_merge_wait_for_the_user_and_merge_once() {
    let Some(mut live) = Live::start("gate", "test/verify-user-gate", &[]) else {
        return;
    };
    let (claude, repo) = (live.claude.clone(), live.repo.path().to_string());
    let cli = |cmd: &str| orchestrate(&claude, &[cmd, "--project", &repo]);
    live.start_runner(&[]);
    live.wait_status("waits for the gate", |s| s["status"] == "waiting_user_gate");
    assert_eq!(decide(&live.claude, &live.repo)["action"], "wait_user_gate");
    let refused = cli("merge");
    assert_eq!(refused.status.code(), Some(1), "no merge before the gate");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("USER_GATE"));

    assert!(cli("confirm-gate").status.success());
    live.wait_status("auto-merge off: waits for the merge", |s| {
        s["status"] == "waiting_merge"
    });
    assert_eq!(
        decide(&live.claude, &live.repo),
        json!({"action": "wait_merge", "reason": "Auto-merge disabled, waiting for user"})
    );
    std::thread::sleep(Duration::from_millis(600));
    assert!(live.prompts().is_empty(), "nothing typed while waiting");
    assert!(
        live.runner.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the runner waits, it does not stop"
    );

    assert!(cli("merge").status.success());
    assert_eq!(live.runner_exit(Duration::from_secs(40)), 0);
    assert_eq!(live.settled_prompts(1), ["/flow.merge"]);
    let (exec, _) = valid_run(&live.repo);
    assert_eq!(exec.status.as_str(), "completed");
    assert_eq!(spawned(&exec), ["flow.merge"]);
    let names = logged(&exec);
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n}: {names:?}"))
    };
    assert!(pos("wait_user_gate") < pos("confirm_gate"));
    assert!(pos("confirm_gate") < pos("wait_merge"));
    assert!(pos("wait_merge") < pos("transition"));
    assert!(pos("transition") < pos("spawned"));
}

#[test]
fn a_batch_that_fails_once_is_healed_and_the_run_goes_on() {
    let Some(mut live) = Live::start(
        "heal",
        "test/implement-batch-1",
        &["--fail-skills", "implement:1"],
    ) else {
        return;
    };
    live.start_runner(&[]);
    assert_eq!(
        live.runner_exit(Duration::from_secs(60)),
        0,
        "{}",
        live.runner_output()
    );
    let prompts = live.settled_prompts(4);
    assert_eq!(prompts.len(), 4, "{prompts:?}");
    assert_eq!(prompts[0], BATCH_1, "the pending batch, not the done one");
    assert!(
        prompts[1].starts_with(
            "/flow.implement Heal batch 1 (section \"Phase 2: Core\", tasks T003, T004)"
        ) && prompts[1].contains("flow.implement was told to fail"),
        "a healer for the batch, told why it failed: {}",
        prompts[1]
    );
    assert_eq!(prompts[2..], ["/flow.verify", "/flow.merge"]);

    let (exec, _) = valid_run(&live.repo);
    assert_eq!(exec.status.as_str(), "completed");
    assert_eq!(exec.batches.items[0].status.as_str(), "completed");
    assert_eq!(exec.batches.items[1].status.as_str(), "healed");
    assert_eq!(exec.batches.items[1].heal_attempts, 1);
    let names = logged(&exec);
    assert_eq!(
        names.iter().filter(|n| *n == "heal_batch").count(),
        1,
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n == "recover_failed"), "{names:?}");
    assert!(
        !live.repo.tasks().contains("- [ ]"),
        "{}",
        live.repo.tasks()
    );
}

#[test]
fn a_skill_that_always_fails_ends_in_needs_attention_within_its_attempts() {
    let Some(mut live) = Live::start(
        "fail",
        "test/implement-batch-1",
        &["--fail-skills", "implement"],
    ) else {
        return;
    };
    live.start_runner(&[]);
    let s = live.wait_status("needs attention", |s| s["status"] == "needs_attention");
    assert_eq!(
        s["recoveryContext"]["issue"],
        "Max heal attempts (1) reached"
    );
    assert_eq!(s["step"]["status"], "failed");
    assert_eq!(s["step"]["error"], "flow.implement was told to fail");
    // One heal of the batch, one retry of the step: maxHealAttempts 1 each.
    let prompts = live.settled_prompts(3);
    assert_eq!(prompts.len(), 3, "{prompts:?}");
    assert_eq!(prompts[0], BATCH_1);
    assert!(
        prompts[1].starts_with("/flow.implement Heal batch 1"),
        "{prompts:?}"
    );
    assert_eq!(prompts[2], BATCH_1, "the step retried once");
    // The run waits for the user and spawns nothing more.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        live.prompts().len(),
        3,
        "nothing spawned while it needs attention"
    );
    assert_eq!(
        decide(&live.claude, &live.repo),
        json!({"action": "wait", "reason": "Orchestration needs attention: waiting for the user"})
    );
    let (exec, _) = valid_run(&live.repo);
    assert_eq!(spawned(&exec), ["flow.implement"; 3]);
    let names = logged(&exec);
    for (n, times) in [
        ("heal_batch", 1),
        ("failed_fallback_retry", 1),
        ("failed_max_attempts", 1),
    ] {
        assert_eq!(
            names.iter().filter(|x| *x == n).count(),
            times,
            "{n}: {names:?}"
        );
    }
    assert!(
        live.repo.tasks().contains("- [ ] T003"),
        "a failing skill ticks nothing"
    );

    let o = orchestrate(&live.claude, &["cancel", "--project", live.repo.path()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        live.runner_exit(Duration::from_secs(20)),
        0,
        "a cancelled run ends its runner"
    );
    assert!(live.runner_output().trim_end().ends_with(": cancelled"));
}

#[test]
fn a_question_in_a_skill_waits_for_the_answer_then_the_run_goes_on() {
    let Some(mut live) = Live::start(
        "question",
        "test/verify-auto-merge",
        &["--ask-in-skill", "merge"],
    ) else {
        return;
    };
    live.start_runner(&[]);
    let asked = wait_for(Duration::from_secs(30), || {
        live.agent().filter(|a| {
            a["activity"] == "waiting" && a["question"]["text"] == "How should flow.merge go on?"
        })
    })
    .unwrap_or_else(|| {
        panic!(
            "the skill asks: {:?}\n{}",
            live.agent(),
            live.runner_output()
        )
    });
    assert_eq!(
        asked["question"]["question"]["questions"][0]["options"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "the options reach the card: {asked}"
    );
    // The seed's test/waiting-for-input: a workflow waiting, its question in the transcript.
    let s = live.wait_status("the workflow waits for input", |s| {
        s["workflow"]["status"] == "waiting_for_input"
    });
    assert_eq!(s["status"], "running");
    assert_eq!(
        decide(&live.claude, &live.repo),
        json!({"action": "wait", "reason": "Waiting for user input"})
    );
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        live.prompts(),
        ["/flow.merge"],
        "no second spawn while it waits"
    );

    let (code, body) = live.server.post(
        &format!("{}/answer", live.agent_path()),
        json!({"option": 1}).to_string().as_bytes(),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        live.runner_exit(Duration::from_secs(30)),
        0,
        "{}",
        live.runner_output()
    );
    let (exec, _) = valid_run(&live.repo);
    assert_eq!(exec.status.as_str(), "completed");
    assert_eq!(spawned(&exec), ["flow.merge"]);
    assert!(
        logged(&exec).iter().any(|n| n == "wait")
            && exec
                .decision_log
                .iter()
                .any(|e| e.reason == "Waiting for user input"),
        "{:?}",
        logged(&exec)
    );
    let turns = live.server.json(&format!("{}/turns", live.agent_path()));
    assert!(
        turns
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["intent"] == "answer" && t["text"] == "As planned"),
        "the answer reached the transcript: {turns}"
    );
}

/// `decide` on each tagged state, through the binary: what the runner would do there.
#[test]
fn decide_on_the_seeds_tagged_states() {
    let claude = temp_dir("orch-e2e-decide");
    let repo = Repo::create("decide");
    let spawn_design =
        json!({"action": "spawn", "reason": "Step design not started", "skill": "flow.design"});
    let cases = [
        ("test/clean-slate", spawn_design),
        (
            "test/design-complete",
            json!({"action": "transition", "reason": "design complete, advancing to analyze", "nextStep": "analyze", "nextIndex": 1}),
        ),
        (
            "test/implement-batch-1",
            json!({"action": "advance_batch", "reason": "Batch 0 complete, advancing to batch 1", "batchIndex": 1}),
        ),
        (
            "test/implement-batch-failed",
            json!({"action": "heal_batch", "reason": "Batch failed, attempting heal", "batchIndex": 1}),
        ),
        (
            "test/verify-user-gate",
            json!({"action": "wait_user_gate", "reason": "USER_GATE requires confirmation"}),
        ),
        (
            "test/verify-auto-merge",
            json!({"action": "transition", "reason": "Verify complete, auto-merge enabled", "nextStep": "merge", "nextIndex": 4}),
        ),
        (
            "test/verify-manual-merge",
            json!({"action": "wait_merge", "reason": "Auto-merge disabled, waiting for user"}),
        ),
        (
            "test/stale-workflow",
            json!({"action": "recover_stale", "reason": "No activity for 11 minutes", "workflowId": "wf-stale"}),
        ),
        (
            "test/paused",
            json!({"action": "wait", "reason": "Orchestration paused"}),
        ),
    ];
    for (tag, expected) in cases {
        repo.checkout(tag);
        let o = orchestrate(&claude, &["decide", "--project", repo.path()]);
        assert!(
            o.status.success(),
            "{tag}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(got, expected, "{tag}");
        let dirty = Command::new("git")
            .args(["status", "--porcelain", "--ignored"])
            .current_dir(&repo.dir)
            .output()
            .unwrap();
        assert!(
            dirty.stdout.is_empty(),
            "{tag}: decide wrote {}",
            String::from_utf8_lossy(&dirty.stdout)
        );
    }

    repo.checkout("test/corrupt-state");
    let o = orchestrate(&claude, &["decide", "--project", repo.path()]);
    assert_eq!(o.status.code(), Some(2), "a corrupt state is an error");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(".specflow/orchestration-state.json: corrupt orchestration state"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}
