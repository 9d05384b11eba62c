//! A run a user can leave alone (issue 19), through the real runner and binary: the budget
//! binds in agent mode (a step's cost from the server's usage figures), a cancelled run's
//! `decide` stops, blocked tasks are shown and unblocked from the CLI, and a runner killed
//! with SIGKILL after each stage is noticed, resumed, and does each step once.

use headspace::orchestrate::control::{self, StartOptions};
use headspace::orchestrate::live::{LiveDeps, Settings};
use headspace::orchestrate::project_files::{self, ProjectFiles};
use headspace::orchestrate::runner::{iterate, BLOCKED_TASKS_KEY};
use headspace_core::orchestration::{Action, ExecutionStatus};
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A temporary project folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "headspace-unattended-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const TASKS_MD: &str = "# Tasks\n\n## Phase 1: Setup\n- [x] T001 Done already\n- [ ] T002 Create the crate\n\n## Phase 2: Core\n- [ ] T003 Write the core\n- [ ] T004 [P] Test it\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn state_json(step: &str, index: u32, status: &str) -> String {
    json!({"orchestration": {"phase": {"number": "0010", "name": "core"},
           "step": {"current": step, "index": index, "status": status}}})
    .to_string()
}

fn headspace(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_headspace"));
    c.args(args).env_remove("HEADSPACE_ADDR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// A stand-in Headspace server for one agent (`%7`) whose transcript is `transcript` and
/// whose usage since any time costs `cost` dollars: a step sent to it runs for two `wait`s,
/// then it is idle.
fn fake_server(transcript: PathBuf, cost: f64) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut running_for = 0usize;
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { break };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let mut len = 0;
            loop {
                let mut h = String::new();
                r.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            let answer = if line.contains("/send") {
                running_for = 2;
                json!({"status": "sent", "pane": "%7", "verified": true})
            } else if line.contains("/wait") {
                let activity = if running_for > 0 {
                    running_for -= 1;
                    "running"
                } else {
                    "idle"
                };
                json!({"status": "ok", "activity": activity, "waited_ms": 0})
            } else if line.contains("/clear") {
                json!({"status": "sent", "pane": "%7", "verified": true})
            } else if line.contains("/usage?since=") {
                json!({"agent_id": 7, "cost_usd": cost, "messages": 1})
            } else {
                json!({"id": 7, "tmux_pane": "%7", "last_seen_at": Timestamp(headspace::orchestrate::live::now_ms()).to_string(),
                       "transcript_path": transcript})
            }
            .to_string();
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    addr
}

#[test]
fn an_agent_mode_run_over_budget_stops_with_fail_and_the_reason() {
    let dir = TempDir::new("agent-budget");
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state_json("design", 0, "not_started"),
    );
    // What the agent's session used for the step, as the server counted it: $0.708. Its
    // transcript is a 100 MB file the runner must never read to price the step (it did, on
    // every look): here one it cannot read at all, so a reread would find nothing to price.
    let transcript = dir.path().join("no-such-transcript.jsonl");
    let addr = fake_server(transcript, 0.708);
    let settings = Settings {
        agent: Some("%7".into()),
        addr: Some(addr),
        ..Default::default()
    };
    let files = ProjectFiles::new(dir.path());
    let deps = LiveDeps::new(files.clone(), &settings, None, false);
    let opts = StartOptions {
        budget: Some(0.5),
        settings: settings.clone(),
        ..Default::default()
    };
    let (exec, _) = control::start(&deps, &opts).unwrap();
    let mut last = None;
    for _ in 0..20 {
        let it = iterate(&deps, &exec.id).unwrap();
        let stop = matches!(it.decision.action, Action::Fail | Action::Complete);
        last = Some(it.decision);
        if stop {
            break;
        }
    }
    let d = last.unwrap();
    assert_eq!(d.action, Action::Fail, "{d:?}");
    assert_eq!(d.reason, "Budget exceeded: $0.71 (limit $0.50)");
    let e = files.read_execution(&exec.id).unwrap();
    assert_eq!(e.status, ExecutionStatus::Failed);
    assert!(
        (e.total_cost_usd - 0.708).abs() < 1e-9,
        "{}",
        e.total_cost_usd
    );
    assert_eq!(
        e.error_message.as_deref(),
        Some("Budget exceeded: $0.71 (limit $0.50)")
    );
}

#[test]
fn decide_on_a_cancelled_run_stops_instead_of_starting_over() {
    let dir = TempDir::new("cancelled");
    let p = dir.path().to_str().unwrap();
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state_json("analyze", 1, "not_started"),
    );
    let files = ProjectFiles::new(dir.path());
    let deps = LiveDeps::new(files, &Settings::default(), None, false);
    control::start(&deps, &StartOptions::default()).unwrap();
    let o = headspace(&["orchestrate", "cancel", "--project", p], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = json_of(&headspace(&["orchestrate", "decide", "--project", p], &[]));
    assert_eq!(
        d,
        json!({"action": "stop", "reason": "Orchestration is cancelled"})
    );
    // A new run lists the cancelled one among its past runs, with its outcome.
    let mut cancelled_id = None;
    if let Ok(Some(mut e)) = ProjectFiles::new(dir.path()).find_execution(true) {
        cancelled_id = Some(e.id.clone());
        // A long log before the cancel: the past run shows its last 50 decisions.
        let cancel = e.decision_log.pop().unwrap();
        for i in 0..60 {
            headspace_core::orchestration::log(&mut e, "wait", format!("<b>step {i}</b>"), None, 0);
        }
        e.decision_log.push(cancel);
        ProjectFiles::new(dir.path()).write_execution(&e).unwrap();
    }
    let files = ProjectFiles::new(dir.path());
    let deps = LiveDeps::new(files, &Settings::default(), None, false);
    let (next, created) = control::start(&deps, &StartOptions::default()).unwrap();
    assert!(created);
    let v = json_of(&headspace(
        &["orchestrate", "status", "--project", p, "--json"],
        &[],
    ));
    assert_eq!(v["id"], json!(next.id));
    assert_eq!(v["pastRuns"][0]["id"], json!(cancelled_id.unwrap()));
    assert_eq!(v["pastRuns"][0]["status"], "cancelled");
    assert_eq!(v["pastRuns"][0]["lastDecision"]["decision"], "cancel");
    // With the last 50 decisions of its log, oldest first, ending with the cancel.
    let log = v["pastRuns"][0]["decisions"]
        .as_array()
        .expect("the decision log");
    assert_eq!(log.len(), 50);
    assert_eq!(log.last(), Some(&v["pastRuns"][0]["lastDecision"]));
    assert_eq!(log[0]["reason"], "<b>step 11</b>", "{:?}", log[0]);
}

#[test]
fn blocked_tasks_are_shown_and_unblocked_from_the_cli() {
    let dir = TempDir::new("blocked");
    let p = dir.path().to_str().unwrap();
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state_json("implement", 2, "in_progress"),
    );
    let files = ProjectFiles::new(dir.path());
    let deps = LiveDeps::new(files.clone(), &Settings::default(), None, false);
    let (mut e, _) = control::start(&deps, &StartOptions::default()).unwrap();
    e.extra.insert(
        BLOCKED_TASKS_KEY.into(),
        json!([{"task": "T004", "reason": "needs a key"}]),
    );
    files.write_execution(&e).unwrap();
    let v = json_of(&headspace(
        &["orchestrate", "status", "--project", p, "--json"],
        &[],
    ));
    assert_eq!(
        v["blockedTasks"],
        json!([{"task": "T004", "reason": "needs a key"}])
    );
    let text = headspace(&["orchestrate", "status", "--project", p], &[]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("blocked tasks: T004"));

    let o = headspace(&["orchestrate", "unblock", "--project", p], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_of(&headspace(
        &["orchestrate", "status", "--project", p, "--json"],
        &[],
    ));
    assert_eq!(v["blockedTasks"], json!([]));
    assert_eq!(
        v["decisions"].as_array().unwrap().last().unwrap()["decision"],
        "unblock"
    );
    // Nothing left: refused (exit 1), nothing written.
    let o = headspace(&["orchestrate", "unblock", "--project", p], &[]);
    assert_eq!(o.status.code(), Some(1));
}

/// A stand-in headless `claude` playing the `/flow.*` skills, as in `orchestrate.rs`: each
/// invocation is logged when it starts (`skills.log`) and when it has done its work
/// (`done.log`).
fn fake_skills(dir: &Path) -> PathBuf {
    let script = dir.join("fake-skills.sh");
    write(
        &script,
        r#"#!/bin/sh
for a; do last=$a; done
echo "$last" >> skills.log
# While `hold` exists, each step waits for `go` before doing its work.
if [ -e hold ]; then while [ ! -e go ]; do sleep 0.05; done; fi
step=$(printf '%s' "$last" | sed 's#^/flow\.\([a-z]*\).*#\1#')
case $step in
  design) i=0;; analyze) i=1;; verify) i=3;; merge) i=4;; *) i=;;
esac
if [ -n "$i" ]; then
  printf '{"orchestration": {"phase": {"number": "0010", "name": "core"}, "step": {"current": "%s", "index": %s, "status": "complete"}}}\n' "$step" "$i" > .specflow/orchestration-state.json.new
  mv .specflow/orchestration-state.json.new .specflow/orchestration-state.json
fi
echo "$last" >> done.log
echo '{"type":"result","is_error":false,"total_cost_usd":0.25,"result":"ok"}'
"#,
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `headspace orchestrate resume` on project `p` (in `dir`), then waits for the new runner's
/// record: the project's files, the run's id and the new runner's pid.
fn resume(dir: &Path, p: &str, env: &[(&str, &str)]) -> (ProjectFiles, String, u32) {
    let o = headspace(&["orchestrate", "resume", "--project", p], env);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = ProjectFiles::new(dir);
    let id = files.find_execution(true).unwrap().unwrap().id;
    // Generous: a loaded 2-core machine once took over 20 s to start the runner.
    wait_for("the new runner's record", Duration::from_secs(60), || {
        control::runner_record(&files, &id).is_some_and(|r| r.is_alive())
    });
    let runner = control::runner_record(&files, &id).unwrap().pid;
    (files, id, runner)
}

/// A project whose run starts at design, with [`TASKS_MD`] for implement's batches.
fn fresh_project(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state_json("design", 0, "not_started"),
    );
    write(&dir.path().join("specs/0010-core/tasks.md"), TASKS_MD);
    dir
}

/// `headspace orchestrate start` of project `p`, headless with auto-merge, as a runner in the
/// foreground of the returned command (output dropped, no server to talk to).
fn foreground_start(p: &str, env: &[(&str, &str)]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_headspace"));
    c.args([
        "orchestrate",
        "start",
        "--project",
        p,
        "--headless",
        "--auto-merge",
    ])
    .envs(env.iter().copied())
    .env_remove("HEADSPACE_ADDR")
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    c
}

fn sigkill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

#[test]
fn a_runner_killed_after_each_stage_is_resumed_and_does_each_step_once() {
    let dir = fresh_project("killed");
    let p = dir.path().to_str().unwrap();
    let script = fake_skills(dir.path());
    let claude = dir.path().join("claude");
    let env = [
        ("HEADSPACE_HEADLESS_CMD", script.to_str().unwrap()),
        ("HEADSPACE_CLAUDE_DIR", claude.to_str().unwrap()),
        ("HEADSPACE_ORCHESTRATE_POLL", "0.05"),
    ];
    let done = dir.path().join("done.log");
    // The first runner, in the foreground of a child process.
    let mut first = foreground_start(p, &env).spawn().unwrap();
    let mut runner = first.id();
    // After design (1 step done), analyze (2), the first batch (3) and verify (5).
    for (stage, after) in [("design", 1), ("analyze", 2), ("a batch", 3), ("verify", 5)] {
        wait_for(stage, Duration::from_secs(120), || lines(&done) >= after);
        sigkill(runner);
        wait_for("the runner to die", Duration::from_secs(10), || {
            gone(runner)
        });
        let status = json_of(&headspace(
            &["orchestrate", "status", "--project", p, "--json"],
            &env,
        ));
        assert_eq!(status["runnerGone"], true, "after {stage}: {status}");
        assert_ne!(status["status"], "completed", "after {stage}");
        let text = headspace(&["orchestrate", "status", "--project", p], &env);
        assert!(
            String::from_utf8_lossy(&text.stdout).contains("runner gone"),
            "after {stage}"
        );
        // Resume restarts the runner (detached), which continues from the files.
        runner = resume(dir.path(), p, &env).2;
    }
    // A step killed between its start and its record holds the next spawn for 30 s.
    // Reaped here (a zombie till then, which counts as gone).
    let _ = first.wait();
    wait_for("completion", Duration::from_secs(240), || {
        json_of(&headspace(
            &["orchestrate", "status", "--project", p, "--json"],
            &env,
        ))["status"]
            == "completed"
    });
    let skills = std::fs::read_to_string(dir.path().join("skills.log")).unwrap();
    assert_eq!(
        skills,
        "/flow.design\n/flow.analyze\n/flow.implement Execute tasks T002 in section \"Phase 1: Setup\"\n/flow.implement Execute tasks T003, T004 in section \"Phase 2: Core\"\n/flow.verify\n/flow.merge\n",
        "each step was worked on once"
    );
    let v = json_of(&headspace(
        &["orchestrate", "status", "--project", p, "--json"],
        &env,
    ));
    let files = ProjectFiles::new(dir.path());
    let run = files.find_execution(true).unwrap().unwrap();
    assert_eq!(
        v["costUsd"],
        1.5,
        "each step counted once: {:#?}",
        (&run.extra, &run.decision_log)
    );
    assert_eq!(v["runnerGone"], false);
    // The last runner ends with the run.
    wait_for("the last runner to end", Duration::from_secs(20), || {
        gone(runner)
    });
}

#[test]
fn a_runner_that_dies_between_a_steps_start_and_recording_its_pid_does_the_step_once() {
    let dir = fresh_project("pidwindow");
    let p = dir.path().to_str().unwrap();
    write(&dir.path().join("hold"), "");
    let script = fake_skills(dir.path());
    let claude = dir.path().join("claude");
    let env = [
        ("HEADSPACE_HEADLESS_CMD", script.to_str().unwrap()),
        ("HEADSPACE_CLAUDE_DIR", claude.to_str().unwrap()),
        ("HEADSPACE_ORCHESTRATE_POLL", "0.05"),
    ];
    // The first runner dies right after starting design, before recording its pid.
    let first = foreground_start(p, &env)
        .env("HEADSPACE_TEST_DIE_AFTER_START", "1")
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(137), "died by the test seam");
    let skills = dir.path().join("skills.log");
    wait_for("design to start", Duration::from_secs(20), || {
        lines(&skills) == 1
    });
    let records = dir.path().join(project_files::WORKFLOWS_DIR);
    let record = std::fs::read_dir(&records)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("workflow-") && name.ends_with(".json")
        })
        .expect("the step's record");
    let rec: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(rec["status"], "running");
    assert!(
        rec.get("pid").is_none(),
        "the pid was never recorded: {rec}"
    );

    // The next runner waits out the dead one's spawn intent, then finds the process by the
    // pid file its wrapper wrote, and adopts it instead of starting design again.
    let (files, id, runner) = resume(dir.path(), p, &env);
    wait_for("the adoption", Duration::from_secs(120), || {
        lines(&skills) > 1
            || files.read_execution(&id).is_ok_and(|run| {
                run.decision_log
                    .iter()
                    .any(|d| d.reason.contains("adopted"))
            })
    });
    assert_eq!(lines(&skills), 1, "design was not started a second time");
    write(&dir.path().join("go"), "");
    wait_for("completion", Duration::from_secs(240), || {
        json_of(&headspace(
            &["orchestrate", "status", "--project", p, "--json"],
            &env,
        ))["status"]
            == "completed"
    });
    assert_eq!(
        std::fs::read_to_string(&skills).unwrap(),
        "/flow.design\n/flow.analyze\n/flow.implement Execute tasks T002 in section \"Phase 1: Setup\"\n/flow.implement Execute tasks T003, T004 in section \"Phase 2: Core\"\n/flow.verify\n/flow.merge\n",
        "each step was worked on once"
    );
    wait_for("the last runner to end", Duration::from_secs(20), || {
        gone(runner)
    });
}

/// Whether process `pid` has ended (gone, or a zombie waiting to be reaped).
fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}
