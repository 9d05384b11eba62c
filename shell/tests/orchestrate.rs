//! The orchestration runner: its loop with injected dependencies (fake workflows, helper and
//! clock; real files in a temp dir), the files' safety rules, wake-ups, workflows run as
//! headless processes and as agents, and `headspace orchestrate decide` through the binary.

mod common;

use headspace::orchestrate::control::{self, StartOptions};
use headspace::orchestrate::live::Settings;
use headspace::orchestrate::project_files::{self, ProjectFiles, RunnerRecord};
use headspace::orchestrate::runner::{
    iterate, run, Deps, HelperCase, Next, SpawnRequest, Wake, PHASE_KEY,
};
use headspace::orchestrate::steps::{StepRunner, Steps};
use headspace_core::orchestration::{
    Action, BatchStatus, ExecutionStatus, OrchestrationExecution, OrchestrationState, Step,
    StepStatus, WorkflowStatus, WorkflowView,
};
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------ fixtures

/// A request to start the design step.
fn design_request() -> SpawnRequest {
    SpawnRequest {
        step: Step::Design,
        skill: "flow.design".into(),
        batch: None,
        healer: false,
        context: None,
    }
}

/// A temporary project folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "headspace-orch-{tag}-{}-{}",
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

const T0: &str = "2026-03-02T09:00:00.000Z";

fn t0() -> i64 {
    Timestamp::parse_rfc3339(T0).unwrap().millis()
}

/// A project state in phase 0010 on `step` with `status`.
fn state_json(step: &str, status: &str) -> Value {
    json!({
        "schema_version": "3.0",
        "project": {"id": "p-1", "name": "test-app"},
        "orchestration": {
            "phase": {"id": "0010", "number": "0010", "name": "core", "branch": "0010-core", "status": "in_progress"},
            "step": {"current": step, "index": Step::parse(step).index(), "status": status}
        }
    })
}

const TASKS_MD: &str = "# Tasks\n\n## Phase 1: Setup\n- [x] T001 Done already\n- [ ] T002 Create the crate\n\n## Phase 2: Core\n- [ ] T003 Write the core\n- [ ] T004 [P] Test it\n\n## Phase 3: Polish\n- [x] T005 Nothing left here\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What a fake workflow does once spawned.
#[derive(Clone, Copy, PartialEq)]
enum Agent {
    /// Does its step at once: marks the step complete in the state file (as specflow's
    /// sub-commands do; batches are the runner's business) and ends, costing $0.50.
    Finishes,
    /// Keeps running, active now.
    KeepsRunning,
}

/// Fake dependencies: real files, fake workflows, helper and clock.
struct Fake {
    files: ProjectFiles,
    now: AtomicI64,
    agent: Agent,
    spawn_delay: Duration,
    spawns: Mutex<Vec<SpawnRequest>>,
    workflows: Mutex<HashMap<String, WorkflowView>>,
    kills: Mutex<Vec<String>>,
    helper_calls: Mutex<Vec<HelperCase>>,
    helper_answers: Mutex<HashMap<HelperCase, Value>>,
    /// Writes over a corrupt state file made without an identical `.bak` beside it.
    unsafe_writes: Mutex<Vec<String>>,
    counter: AtomicU64,
}

impl Fake {
    fn new(dir: &Path, agent: Agent) -> Fake {
        Fake {
            files: ProjectFiles::new(dir),
            now: AtomicI64::new(t0() + 60_000),
            agent,
            spawn_delay: Duration::ZERO,
            spawns: Mutex::new(Vec::new()),
            workflows: Mutex::new(HashMap::new()),
            kills: Mutex::new(Vec::new()),
            helper_calls: Mutex::new(Vec::new()),
            helper_answers: Mutex::new(HashMap::new()),
            unsafe_writes: Mutex::new(Vec::new()),
            counter: AtomicU64::new(0),
        }
    }

    fn skills(&self) -> Vec<(String, Option<usize>)> {
        self.spawns
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.skill.clone(), r.batch))
            .collect()
    }

    fn exec(&self, id: &str) -> OrchestrationExecution {
        self.files.read_execution(id).unwrap()
    }

    fn state(&self) -> OrchestrationState {
        self.files.read_state().unwrap()
    }
}

impl Deps for Fake {
    fn files(&self) -> &ProjectFiles {
        &self.files
    }

    fn write_state(&self, s: &OrchestrationState) -> Result<(), project_files::FileError> {
        let path = self.files.state_path();
        if let Ok(old) = std::fs::read(&path) {
            if serde_json::from_slice::<OrchestrationState>(&old).is_err() {
                let bak = std::fs::read(project_files::with_suffix(&path, ".bak")).ok();
                if bak.as_deref() != Some(&old[..]) {
                    self.unsafe_writes
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&old).into_owned());
                }
            }
        }
        self.files.write_state(s)
    }

    fn lookup_workflow(&self, id: &str) -> Option<WorkflowView> {
        self.workflows.lock().unwrap().get(id).cloned()
    }

    fn spawn(&self, req: &SpawnRequest) -> Result<String, String> {
        std::thread::sleep(self.spawn_delay);
        self.spawns.lock().unwrap().push(req.clone());
        let id = format!("wf-{}", self.counter.fetch_add(1, Ordering::SeqCst));
        let now = self.now.load(Ordering::SeqCst);
        let status = match self.agent {
            Agent::Finishes => {
                if req.step != Step::Implement {
                    // The sub-command marks its step, without the runner's lock.
                    let mut s = self.files.read_state().unwrap();
                    s.orchestration.step.status = StepStatus::Complete.into();
                    self.files.write_state(&s).unwrap();
                }
                WorkflowStatus::Completed
            }
            Agent::KeepsRunning => WorkflowStatus::Running,
        };
        self.workflows.lock().unwrap().insert(
            id.clone(),
            WorkflowView {
                id: id.clone(),
                status,
                last_activity_ms: now,
                cost_usd: if self.agent == Agent::Finishes {
                    0.5
                } else {
                    0.0
                },
            },
        );
        Ok(id)
    }

    fn kill(&self, id: &str) {
        self.kills.lock().unwrap().push(id.into());
        if let Some(w) = self.workflows.lock().unwrap().get_mut(id) {
            w.status = WorkflowStatus::Cancelled;
        }
    }

    fn helper(&self, case: HelperCase, _context: &Value) -> Option<Value> {
        self.helper_calls.lock().unwrap().push(case);
        self.helper_answers.lock().unwrap().get(&case).cloned()
    }

    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// A project on `step`/`status` with a `tasks.md`, and a run started on it (started at T0).
fn project(tag: &str, step: &str, status: &str, opts: StartOptions) -> (TempDir, String) {
    let dir = TempDir::new(tag);
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state_json(step, status).to_string(),
    );
    write(&dir.path().join("specs/0010-core/tasks.md"), TASKS_MD);
    let clock = Fake::new(dir.path(), Agent::Finishes);
    clock.now.store(t0(), Ordering::SeqCst);
    let (exec, created) = control::start(&clock, &opts).unwrap();
    assert!(created);
    (dir, exec.id)
}

/// Iterates until the run stops or `until` holds, at most `max` times; the decisions.
fn drive(
    deps: &dyn Deps,
    id: &str,
    max: usize,
    until: impl Fn(&OrchestrationExecution) -> bool,
) -> Vec<Action> {
    let mut actions = Vec::new();
    for _ in 0..max {
        let it = iterate(deps, id).unwrap();
        actions.push(it.decision.action);
        if it.next == Next::Stop || until(&deps.read_execution(id).unwrap()) {
            return actions;
        }
    }
    panic!("the run did not get there in {max} iterations: {actions:?}");
}

fn logged(exec: &OrchestrationExecution) -> Vec<String> {
    exec.decision_log
        .iter()
        .map(|e| e.decision.clone())
        .collect()
}

fn full_path() -> Vec<(String, Option<usize>)> {
    vec![
        ("flow.design".into(), None),
        ("flow.analyze".into(), None),
        ("flow.implement".into(), Some(0)),
        ("flow.implement".into(), Some(1)),
        ("flow.verify".into(), None),
        ("flow.merge".into(), None),
    ]
}

// ------------------------------------------------------------------ the loop

#[tokio::test]
async fn happy_path_with_auto_merge_runs_each_step_once_and_completes() {
    let opts = StartOptions {
        auto_merge: true,
        ..Default::default()
    };
    let (dir, id) = project("happy", "design", "not_started", opts);
    let fake = Arc::new(Fake::new(dir.path(), Agent::Finishes));
    let wake = Wake::new();
    let last = tokio::time::timeout(
        Duration::from_secs(30),
        run(fake.clone(), &id, &wake, Duration::from_millis(5), |_| {}),
    )
    .await
    .expect("the run ends")
    .unwrap();

    assert_eq!(last.action, Action::Complete);
    // design → analyze → implement (the two sections with open tasks) → verify → merge.
    assert_eq!(fake.skills(), full_path());
    let exec = fake.exec(&id);
    assert_eq!(exec.status, ExecutionStatus::Completed);
    let state = fake.state();
    assert_eq!(state.orchestration.step.current, Some(Step::Merge));
    assert_eq!(
        state.orchestration.step.status.get(),
        Some(&StepStatus::Complete)
    );
    // Two batches from tasks.md's open tasks, both done.
    let sections: Vec<_> = exec
        .batches
        .items
        .iter()
        .map(|b| b.section.as_str())
        .collect();
    assert_eq!(sections, ["Phase 1: Setup", "Phase 2: Core"]);
    assert_eq!(exec.batches.items[1].task_ids, ["T003", "T004"]);
    assert!(exec
        .batches
        .items
        .iter()
        .all(|b| b.status == BatchStatus::Completed));
    // Six workflows at $0.50, each counted once however often it was looked at.
    assert!(
        (exec.total_cost_usd - 3.0).abs() < 1e-9,
        "{}",
        exec.total_cost_usd
    );
    // Every decision is in the log, with its time, action and reason.
    let log = logged(&exec);
    for expected in [
        "spawn",
        "spawned",
        "transition",
        "initialize_batches",
        "spawn_batch",
        "advance_batch",
        "force_step_complete",
        "complete",
    ] {
        assert!(
            log.iter().any(|d| d == expected),
            "{expected} missing from {log:?}"
        );
    }
    assert!(exec
        .decision_log
        .iter()
        .all(|e| Timestamp::parse_rfc3339(&e.timestamp).is_some() && !e.reason.is_empty()));
    // The runner file is gone once the loop is over.
    assert!(!fake.files.runner_path(&id).exists());
}

#[test]
fn manual_merge_stops_at_waiting_merge_and_merge_finishes_it() {
    let (dir, id) = project("manual", "design", "not_started", StartOptions::default());
    let fake = Fake::new(dir.path(), Agent::Finishes);
    drive(&fake, &id, 60, |e| {
        e.status == ExecutionStatus::WaitingMerge
    });
    assert!(!fake.skills().iter().any(|(s, _)| s == "flow.merge"));
    let state = fake.state();
    assert_eq!(state.orchestration.step.current, Some(Step::Verify));
    assert_eq!(
        state.orchestration.step.status.get(),
        Some(&StepStatus::Complete)
    );

    // It stays there: the same wait again and again, not even rewriting its file.
    let before = std::fs::read(fake.files.execution_path(&id)).unwrap();
    for _ in 0..5 {
        let it = iterate(&fake, &id).unwrap();
        assert_eq!(it.decision.action, Action::WaitMerge);
        assert!(!it.logged);
    }
    assert_eq!(
        std::fs::read(fake.files.execution_path(&id)).unwrap(),
        before
    );
    assert_eq!(fake.skills().len(), 5);

    let exec = control::merge(&fake).unwrap();
    assert_eq!(exec.status, ExecutionStatus::Running);
    drive(&fake, &id, 20, |_| false);
    assert_eq!(fake.skills(), full_path());
    assert_eq!(fake.exec(&id).status, ExecutionStatus::Completed);
    assert!(fake
        .exec(&id)
        .decision_log
        .iter()
        .any(|e| e.reason == "Merge requested by the user"));
}

#[test]
fn user_gate_waits_for_confirmation_before_merging() {
    let opts = StartOptions {
        auto_merge: true,
        ..Default::default()
    };
    let (dir, id) = project("gate", "verify", "in_progress", opts);
    let fake = Fake::new(dir.path(), Agent::Finishes);
    let mut s = fake.state();
    s.orchestration.phase.has_user_gate = Some(true);
    fake.files.write_state(&s).unwrap();

    drive(&fake, &id, 10, |e| {
        e.status == ExecutionStatus::WaitingUserGate
    });
    assert!(matches!(
        control::merge(&fake),
        Err(control::ControlError::Refused(_))
    ));
    assert!(!fake.skills().iter().any(|(s, _)| s == "flow.merge"));
    control::confirm_gate(&fake).unwrap();
    drive(&fake, &id, 10, |_| false);
    assert_eq!(fake.skills().last().unwrap().0, "flow.merge");
    assert_eq!(fake.exec(&id).status, ExecutionStatus::Completed);
}

#[test]
fn concurrent_iterations_spawn_a_step_once() {
    let (dir, id) = project("race", "design", "not_started", StartOptions::default());
    let mut fake = Fake::new(dir.path(), Agent::KeepsRunning);
    fake.spawn_delay = Duration::from_millis(150);
    let fake = Arc::new(fake);
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (fake, id, barrier) = (fake.clone(), id.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                iterate(&*fake, &id).unwrap().decision
            })
        })
        .collect();
    let decisions: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(fake.skills(), [("flow.design".to_string(), None)]);
    assert_eq!(
        decisions
            .iter()
            .filter(|d| d.action == Action::Spawn)
            .count(),
        1
    );
    // The others waited on the intent (or, later, on the linked running workflow).
    assert!(decisions
        .iter()
        .filter(|d| d.action != Action::Spawn)
        .all(|d| d.action == Action::Wait));
    // Once linked, more iterations still do not spawn it again.
    for _ in 0..5 {
        iterate(&*fake, &id).unwrap();
    }
    assert_eq!(fake.spawns.lock().unwrap().len(), 1);
    assert_eq!(fake.exec(&id).executions.design.as_deref(), Some("wf-0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_triggers_during_a_whole_run_spawn_each_step_once() {
    let opts = StartOptions {
        auto_merge: true,
        ..Default::default()
    };
    let (dir, id) = project("storm", "design", "not_started", opts);
    let mut fake = Fake::new(dir.path(), Agent::Finishes);
    fake.spawn_delay = Duration::from_millis(20);
    let fake = Arc::new(fake);
    let wake = Wake::new();
    let done = Arc::new(AtomicBool::new(false));

    // A storm of wake-ups, and three more runners iterating as fast as they can.
    let storm = {
        let (wake, done) = (wake.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                wake.wake();
                std::thread::yield_now();
            }
        })
    };
    let rivals: Vec<_> = (0..3)
        .map(|_| {
            let (fake, id, done) = (fake.clone(), id.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    if iterate(&*fake, &id).unwrap().next == Next::Stop {
                        break;
                    }
                }
            })
        })
        .collect();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        run(fake.clone(), &id, &wake, Duration::from_millis(2), |_| {}),
    )
    .await;
    done.store(true, Ordering::SeqCst);
    storm.join().unwrap();
    for r in rivals {
        r.join().unwrap();
    }
    result.expect("the run ends").unwrap();
    assert_eq!(fake.skills(), full_path());
    assert_eq!(fake.exec(&id).status, ExecutionStatus::Completed);
}

#[tokio::test]
async fn a_wake_up_reaches_every_waiter() {
    let wake = Wake::new();
    let waiters: Vec<_> = (0..5)
        .map(|_| {
            let mut w = wake.waiter();
            tokio::spawn(async move { w.sleep_or_wake(60_000).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let start = Instant::now();
    wake.wake();
    for w in waiters {
        assert!(tokio::time::timeout(Duration::from_secs(5), w)
            .await
            .expect("every waiter wakes")
            .unwrap());
    }
    assert!(start.elapsed() < Duration::from_secs(5));

    // A wake-up while nobody sleeps is not lost: the next sleep returns at once.
    let mut w = wake.waiter();
    wake.wake();
    let start = Instant::now();
    assert!(w.sleep_or_wake(60_000).await);
    assert!(start.elapsed() < Duration::from_secs(1));
    // And without one, it sleeps its time.
    assert!(!w.sleep_or_wake(20).await);
}

#[test]
fn paused_does_nothing() {
    let (dir, id) = project("paused", "design", "not_started", StartOptions::default());
    let fake = Fake::new(dir.path(), Agent::Finishes);
    control::pause(&fake).unwrap();
    let state_before = std::fs::read(fake.files.state_path()).unwrap();
    for _ in 0..5 {
        let it = iterate(&fake, &id).unwrap();
        assert_eq!(it.decision.action, Action::Wait);
        assert_eq!(it.decision.reason, "Orchestration paused");
    }
    assert!(fake.spawns.lock().unwrap().is_empty());
    assert!(fake.helper_calls.lock().unwrap().is_empty());
    assert_eq!(
        std::fs::read(fake.files.state_path()).unwrap(),
        state_before
    );
    assert_eq!(fake.exec(&id).status, ExecutionStatus::Paused);

    control::resume(&fake).unwrap();
    iterate(&fake, &id).unwrap();
    assert_eq!(fake.skills(), [("flow.design".to_string(), None)]);
}

/// A run on design with a linked workflow that went silent 11 minutes ago.
fn stale_project(tag: &str) -> (TempDir, String, Fake) {
    let (dir, id) = project(tag, "design", "in_progress", StartOptions::default());
    let fake = Fake::new(dir.path(), Agent::KeepsRunning);
    let now = fake.now_ms();
    fake.workflows.lock().unwrap().insert(
        "wf-stale".into(),
        WorkflowView {
            id: "wf-stale".into(),
            status: WorkflowStatus::Running,
            last_activity_ms: now - 11 * 60_000,
            cost_usd: 0.0,
        },
    );
    let mut e = fake.exec(&id);
    e.executions.design = Some("wf-stale".into());
    fake.files.write_execution(&e).unwrap();
    (dir, id, fake)
}

#[test]
fn a_stale_workflow_is_diagnosed_and_without_a_helper_needs_attention() {
    let (_dir, id, fake) = stale_project("stale");
    let it = iterate(&fake, &id).unwrap();
    assert_eq!(it.decision.action, Action::RecoverStale);
    assert_eq!(it.decision.workflow_id.as_deref(), Some("wf-stale"));
    assert_eq!(
        *fake.helper_calls.lock().unwrap(),
        [HelperCase::StaleWorkflow]
    );
    let exec = fake.exec(&id);
    assert_eq!(exec.status, ExecutionStatus::NeedsAttention);
    let rc = exec
        .recovery_context
        .expect("needs_attention has a recovery context");
    assert_eq!(
        rc.issue,
        "Workflow appears stale for 11 minutes - diagnosis failed"
    );
    assert_eq!(rc.failed_workflow_id.as_deref(), Some("wf-stale"));
    // The conservative fallback kills nothing and spawns nothing.
    assert!(fake.kills.lock().unwrap().is_empty());
    assert!(fake.spawns.lock().unwrap().is_empty());
    // And it is not asked again while the user looks at it.
    iterate(&fake, &id).unwrap();
    assert_eq!(fake.helper_calls.lock().unwrap().len(), 1);
}

#[test]
fn a_stale_workflow_the_helper_restarts_is_killed_and_spawned_again_once() {
    let (_dir, id, fake) = stale_project("restart");
    fake.helper_answers.lock().unwrap().insert(
        HelperCase::StaleWorkflow,
        json!({"action": "restart_task", "reasoning": "stuck on a prompt"}),
    );
    assert_eq!(
        iterate(&fake, &id).unwrap().decision.action,
        Action::RecoverStale
    );
    assert_eq!(*fake.kills.lock().unwrap(), ["wf-stale"]);
    assert_eq!(fake.exec(&id).executions.design, None);
    for _ in 0..4 {
        iterate(&fake, &id).unwrap();
    }
    assert_eq!(fake.skills(), [("flow.design".to_string(), None)]);
    assert!(logged(&fake.exec(&id)).contains(&"stale_restart".to_string()));
    assert_eq!(fake.exec(&id).status, ExecutionStatus::Running);
}

#[test]
fn a_failed_step_retries_once_without_a_helper_then_needs_attention() {
    let (dir, id) = project("failed", "design", "failed", StartOptions::default());
    let fake = Fake::new(dir.path(), Agent::KeepsRunning);
    assert_eq!(
        iterate(&fake, &id).unwrap().decision.action,
        Action::RecoverFailed
    );
    assert_eq!(*fake.helper_calls.lock().unwrap(), [HelperCase::FailedStep]);
    let exec = fake.exec(&id);
    assert_eq!(exec.heal_attempts, Some(1));
    assert!(logged(&exec).contains(&"failed_fallback_retry".to_string()));
    assert_eq!(
        fake.state().orchestration.step.status.get(),
        Some(&StepStatus::InProgress)
    );
    iterate(&fake, &id).unwrap();
    assert_eq!(fake.skills(), [("flow.design".to_string(), None)]);

    // It fails again: the heal attempts are used up, so no helper, and the user decides.
    let mut s = fake.state();
    s.orchestration.step.status = StepStatus::Failed.into();
    s.orchestration.step.error = Some("tests fail".into());
    fake.files.write_state(&s).unwrap();
    fake.workflows
        .lock()
        .unwrap()
        .get_mut("wf-0")
        .unwrap()
        .status = WorkflowStatus::Failed;
    assert_eq!(
        iterate(&fake, &id).unwrap().decision.action,
        Action::RecoverFailed
    );
    assert_eq!(fake.helper_calls.lock().unwrap().len(), 1);
    let exec = fake.exec(&id);
    assert_eq!(exec.status, ExecutionStatus::NeedsAttention);
    assert_eq!(
        exec.recovery_context.unwrap().issue,
        "Max heal attempts (1) reached"
    );
    assert_eq!(fake.spawns.lock().unwrap().len(), 1);
}

#[test]
fn a_failed_batch_is_healed_then_the_run_goes_on() {
    let (dir, id) = project("heal", "implement", "in_progress", StartOptions::default());
    let fake = Fake::new(dir.path(), Agent::KeepsRunning);
    // Batches initialised, batch 0 spawned and linked.
    drive(&fake, &id, 5, |e| {
        e.batches
            .items
            .first()
            .is_some_and(|b| b.status == BatchStatus::Running)
    });
    fake.workflows
        .lock()
        .unwrap()
        .get_mut("wf-0")
        .unwrap()
        .status = WorkflowStatus::Failed;
    let it = iterate(&fake, &id).unwrap();
    assert_eq!(it.decision.action, Action::HealBatch);
    let exec = fake.exec(&id);
    assert_eq!(exec.batches.items[0].heal_attempts, 1);
    assert_eq!(
        exec.batches.items[0].healer_execution_id.as_deref(),
        Some("wf-1")
    );
    assert!(fake.spawns.lock().unwrap()[1].healer);
    fake.workflows
        .lock()
        .unwrap()
        .get_mut("wf-1")
        .unwrap()
        .status = WorkflowStatus::Completed;
    iterate(&fake, &id).unwrap();
    assert_eq!(fake.exec(&id).batches.items[0].status, BatchStatus::Healed);
    drive(&fake, &id, 5, |e| {
        e.batches.current == 1 && e.batches.items[1].status == BatchStatus::Running
    });
    assert_eq!(fake.skills()[2], ("flow.implement".to_string(), Some(1)));
    // No helper for a batch that a healer could fix.
    assert!(fake.helper_calls.lock().unwrap().is_empty());
}

// ------------------------------------------------------------------ corrupt state

const GARBAGE: &str = "{\"orchestration\": {\"step\": {\"current\": \"desi";

#[test]
fn a_corrupt_state_is_backed_up_before_it_is_rebuilt_from_the_run() {
    let (dir, id) = project("corrupt", "analyze", "in_progress", StartOptions::default());
    let fake = Fake::new(dir.path(), Agent::KeepsRunning);
    std::fs::write(fake.files.state_path(), GARBAGE).unwrap();

    iterate(&fake, &id).unwrap();
    assert_eq!(
        *fake.helper_calls.lock().unwrap(),
        [HelperCase::CorruptState]
    );
    let bak = project_files::with_suffix(&fake.files.state_path(), ".bak");
    assert_eq!(std::fs::read_to_string(bak).unwrap(), GARBAGE);
    assert!(
        fake.unsafe_writes.lock().unwrap().is_empty(),
        "overwritten without a .bak"
    );
    // The heuristic: the run's own step and the phase it was started for.
    let s = fake.state();
    assert_eq!(s.orchestration.phase.number.get(), Some(&json!("0010")));
    assert_eq!(s.orchestration.step.current, Some(Step::Analyze));
    assert_eq!(s.orchestration.step.index, Some(1));
    assert!(logged(&fake.exec(&id)).contains(&"state_heuristic_recovered".to_string()));
    // And the run goes on from there.
    iterate(&fake, &id).unwrap();
    assert_eq!(fake.skills(), [("flow.analyze".to_string(), None)]);
}

#[test]
fn a_corrupt_state_with_no_way_back_is_kept_and_needs_attention() {
    let (dir, id) = project("lost", "design", "in_progress", StartOptions::default());
    let fake = Fake::new(dir.path(), Agent::KeepsRunning);
    let mut e = fake.exec(&id);
    e.extra.remove(PHASE_KEY);
    fake.files.write_execution(&e).unwrap();
    std::fs::write(fake.files.state_path(), GARBAGE).unwrap();

    let it = iterate(&fake, &id).unwrap();
    assert_eq!(it.decision.action, Action::NeedsAttention);
    assert_eq!(
        std::fs::read_to_string(fake.files.state_path()).unwrap(),
        GARBAGE
    );
    let bak = project_files::with_suffix(&fake.files.state_path(), ".bak");
    assert_eq!(std::fs::read_to_string(bak).unwrap(), GARBAGE);
    let exec = fake.exec(&id);
    assert_eq!(exec.status, ExecutionStatus::NeedsAttention);
    assert!(exec
        .recovery_context
        .unwrap()
        .issue
        .contains("orchestration-state.json"));
    // Not asked again while it needs attention.
    iterate(&fake, &id).unwrap();
    assert_eq!(fake.helper_calls.lock().unwrap().len(), 1);
    assert!(fake.spawns.lock().unwrap().is_empty());
}

#[test]
fn the_helpers_recovered_state_is_used_only_when_confident() {
    for (confidence, expected) in [(0.9, Step::Verify), (0.5, Step::Design)] {
        let (dir, id) = project("helper", "design", "in_progress", StartOptions::default());
        let fake = Fake::new(dir.path(), Agent::KeepsRunning);
        fake.helper_answers.lock().unwrap().insert(
            HelperCase::CorruptState,
            json!({"recoverable": true, "confidence": confidence, "reasoning": "tasks all done",
                   "state": state_json("verify", "in_progress")}),
        );
        std::fs::write(fake.files.state_path(), GARBAGE).unwrap();
        iterate(&fake, &id).unwrap();
        assert_eq!(
            fake.state().orchestration.step.current,
            Some(expected),
            "confidence {confidence}"
        );
        assert!(fake.unsafe_writes.lock().unwrap().is_empty());
    }
}

#[test]
fn writing_over_a_corrupt_file_backs_it_up_first_and_keeps_older_backups() {
    let dir = TempDir::new("bak");
    let f = ProjectFiles::new(dir.path());
    let path = f.state_path();
    write(&path, "first garbage");
    f.write_state(&serde_json::from_value(state_json("design", "complete")).unwrap())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(project_files::with_suffix(&path, ".bak")).unwrap(),
        "first garbage"
    );
    assert_eq!(
        f.read_state().unwrap().orchestration.step.current,
        Some(Step::Design)
    );

    write(&path, "second garbage");
    f.write_state(&serde_json::from_value(state_json("analyze", "complete")).unwrap())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(project_files::with_suffix(&path, ".bak")).unwrap(),
        "second garbage"
    );
    assert_eq!(
        std::fs::read_to_string(project_files::with_suffix(&path, ".bak.1")).unwrap(),
        "first garbage"
    );
    // A valid file is simply replaced, with no temporary file left behind.
    f.write_state(&serde_json::from_value(state_json("verify", "complete")).unwrap())
        .unwrap();
    assert!(!project_files::with_suffix(&path, ".bak.2").exists());
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".tmp.")), "{names:?}");
}

#[test]
fn read_errors_name_the_file_and_what_is_wrong() {
    let dir = TempDir::new("errors");
    let f = ProjectFiles::new(dir.path());
    let missing = f.read_state().unwrap_err().to_string();
    assert!(
        missing.ends_with("orchestration-state.json: missing"),
        "{missing}"
    );
    write(&f.state_path(), GARBAGE);
    let corrupt = f.read_state().unwrap_err().to_string();
    assert!(
        corrupt.contains("orchestration-state.json: corrupt orchestration state"),
        "{corrupt}"
    );
    assert!(corrupt.contains("line 1"), "{corrupt}");
    let e = ProjectFiles::open(dir.path().join("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope") && e.contains("no such directory"), "{e}");
}

// ------------------------------------------------------------------ runner files

#[test]
fn orphaned_runner_files_are_cleared_at_start_up() {
    let dir = TempDir::new("orphans");
    let f = ProjectFiles::new(dir.path());
    let dead = RunnerRecord {
        orchestration_id: "dead".into(),
        pid: i32::MAX as u32,
        started_at: t0(),
        pid_started: None,
    };
    let alive = RunnerRecord {
        orchestration_id: "alive".into(),
        pid: std::process::id(),
        started_at: t0(),
        pid_started: None,
    };
    f.write_runner(&dead).unwrap();
    f.write_runner(&alive).unwrap();
    assert_eq!(f.reconcile_runners().unwrap(), [alive]);
    assert!(!f.runner_path("dead").exists());
    assert!(f.runner_path("alive").exists());
}

/// The whole loop on `fake`, polling every millisecond.
async fn run_briefly(
    fake: &Arc<Fake>,
    id: &str,
) -> Result<headspace_core::orchestration::Decision, headspace::orchestrate::runner::RunnerError> {
    run(
        fake.clone(),
        id,
        &Wake::new(),
        Duration::from_millis(1),
        |_| {},
    )
    .await
}

#[tokio::test]
async fn a_run_already_driven_by_a_live_process_is_refused() {
    let (dir, id) = project("twice", "design", "not_started", StartOptions::default());
    let fake = Arc::new(Fake::new(dir.path(), Agent::KeepsRunning));
    fake.files
        .write_runner(&RunnerRecord {
            orchestration_id: id.clone(),
            pid: std::os::unix::process::parent_id(),
            started_at: t0(),
            pid_started: None,
        })
        .unwrap();
    let r = run_briefly(&fake, &id).await;
    assert!(
        matches!(r, Err(headspace::orchestrate::runner::RunnerError::AlreadyRunning { pid, .. }) if pid == std::os::unix::process::parent_id())
    );
    assert!(fake.spawns.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_runner_holding_the_runner_lock_keeps_a_second_one_out_without_any_record() {
    let (dir, id) = project("lock", "design", "not_started", StartOptions::default());
    let fake = Arc::new(Fake::new(dir.path(), Agent::KeepsRunning));
    // The first runner has the lock but has not written its record yet (the race a record
    // check alone loses).
    let held = fake
        .files
        .try_lock_runner(&id)
        .unwrap()
        .expect("free at first");
    let r = run_briefly(&fake, &id).await;
    assert!(
        matches!(
            r,
            Err(headspace::orchestrate::runner::RunnerError::AlreadyRunning { .. })
        ),
        "{r:?}"
    );
    assert!(fake.spawns.lock().unwrap().is_empty());
    drop(held);
    assert!(
        fake.files.try_lock_runner(&id).unwrap().is_some(),
        "free once released"
    );
}

// ------------------------------------------------------------------ the helper's three cases

/// Every Rust file under `dir`, with its path.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((p.clone(), std::fs::read_to_string(&p).unwrap()));
        }
    }
    out
}

#[test]
fn the_helper_is_asked_from_exactly_the_three_cases() {
    let src = sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut calls = Vec::new();
    let mut deps_calls = 0;
    for (path, text) in &src {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains("ask_helper(") && !code.contains("fn ask_helper(") {
                calls.push((
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                    n,
                    code.trim().to_string(),
                ));
            }
            if code.contains(".helper(") {
                deps_calls += 1;
                assert!(
                    path.ends_with("orchestrate/runner.rs"),
                    "the helper dependency is called outside ask_helper: {}:{}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
    assert_eq!(deps_calls, 1, "only ask_helper calls the helper dependency");
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls.iter().all(|(f, _, _)| f == "runner.rs"));
    for case in [
        "HelperCase::CorruptState",
        "HelperCase::StaleWorkflow",
        "HelperCase::FailedStep",
    ] {
        assert_eq!(
            calls.iter().filter(|(_, _, c)| c.contains(case)).count(),
            1,
            "{case}: {calls:?}"
        );
    }
    // And each in its own case's function.
    let runner = &src
        .iter()
        .find(|(p, _)| p.ends_with("orchestrate/runner.rs"))
        .unwrap()
        .1;
    for (func, case) in [
        ("fn recover_state(", "CorruptState"),
        ("fn handle_stale(", "StaleWorkflow"),
        ("fn handle_failed(", "FailedStep"),
    ] {
        let body = &runner[runner.find(func).unwrap()..];
        let end = body[1..]
            .find("\npub fn ")
            .or_else(|| body[1..].find("\nfn "))
            .unwrap_or(body.len() - 1);
        assert!(
            body[..end].contains(&format!("ask_helper(deps, HelperCase::{case}")),
            "{func}"
        );
    }
}

// ------------------------------------------------------------------ steps

/// A stand-in `claude -p --output-format json`: records its prompt, prints a result.
fn fake_claude(dir: &Path, exit: i32, is_error: bool) -> PathBuf {
    let script = dir.join(format!("fake-claude-{exit}.sh"));
    write(
        &script,
        &format!(
            "#!/bin/sh\nfor a; do last=$a; done\nprintf '%s' \"$last\" > prompt.txt\necho '{{\"type\":\"result\",\"is_error\":{is_error},\"total_cost_usd\":0.25,\"result\":\"done\"}}'\nexit {exit}\n"
        ),
    );
    make_executable(&script);
    script
}

/// Lets `path` (a script the test wrote) run.
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn wait_final(steps: &Steps, id: &str) -> WorkflowView {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = steps.lookup(id, t0()).expect("recorded");
        if !v.is_active() || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_headless_step_runs_the_command_and_reports_its_cost() {
    let dir = TempDir::new("headless");
    let ok = fake_claude(dir.path(), 0, false);
    let records = dir.path().join(project_files::WORKFLOWS_DIR);
    let runner = |cmd: &Path| StepRunner::Headless {
        command: vec![cmd.to_string_lossy().into_owned(), "-p".into()],
        claude_dir: dir.path().join("claude"),
    };
    let steps = Steps::new(runner(&ok), dir.path(), &records, false);
    let req = SpawnRequest {
        step: Step::Implement,
        skill: "flow.implement".into(),
        batch: Some(1),
        healer: false,
        context: Some("Execute tasks T003, T004 in section \"Core\"".into()),
    };
    let id = steps.spawn(&req, t0()).unwrap();
    let v = wait_final(&steps, &id);
    assert_eq!(v.status, WorkflowStatus::Completed);
    assert!((v.cost_usd - 0.25).abs() < 1e-9);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("prompt.txt")).unwrap(),
        "/flow.implement Execute tasks T003, T004 in section \"Core\""
    );
    // The final status stays in the record.
    let rec: Value = serde_json::from_str(
        &std::fs::read_to_string(records.join(format!("workflow-{id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(rec["status"], "completed");

    let bad = fake_claude(dir.path(), 3, true);
    let steps = Steps::new(runner(&bad), dir.path(), &records, false);
    let id = steps.spawn(&req, t0()).unwrap();
    assert_eq!(wait_final(&steps, &id).status, WorkflowStatus::Failed);
}

#[test]
fn a_headless_record_without_a_pid_is_followed_by_its_wrappers_pid_file() {
    use headspace_core::orchestration::HEADLESS_START_GRACE_MS;
    let dir = TempDir::new("pidfile");
    let slow = dir.path().join("slow.sh");
    write(
        &slow,
        "#!/bin/sh\nwhile [ ! -e go ]; do sleep 0.05; done\necho '{\"is_error\":false,\"total_cost_usd\":0.5}'\n",
    );
    make_executable(&slow);
    let records = dir.path().join(project_files::WORKFLOWS_DIR);
    let steps = Steps::new(
        StepRunner::Headless {
            command: vec![slow.to_string_lossy().into_owned()],
            claude_dir: dir.path().join("claude"),
        },
        dir.path(),
        &records,
        false,
    );
    assert!(steps.never_started("wf-x-1-0"), "no record: never started");
    let id = steps
        .spawn_with_id(&design_request(), "wf-x-1-0", t0())
        .unwrap();
    assert!(!steps.never_started(&id));
    // The wrapper writes its pid file as it starts (the runner that died would have been
    // looked after a while, not at once).
    let pid_file = records.join(format!("workflow-{id}.pid"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pid_file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(pid_file.exists(), "the wrapper wrote no pid file");
    // As a runner that died before recording the pid leaves it.
    let path = records.join(format!("workflow-{id}.json"));
    let mut rec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let pid = rec["pid"].as_u64().unwrap();
    let obj = rec.as_object_mut().unwrap();
    obj.remove("pid");
    obj.remove("pidStarted");
    std::fs::write(&path, rec.to_string()).unwrap();
    // Long past the start grace, it is still running: its wrapper's pid file says so.
    let late = t0() + HEADLESS_START_GRACE_MS * 10;
    assert_eq!(
        steps.lookup(&id, late).unwrap().status,
        WorkflowStatus::Running
    );
    let rec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(rec["pid"].as_u64(), Some(pid), "learned from the pid file");
    assert!(rec["pidStarted"].is_u64(), "with its start time: {rec}");
    write(&dir.path().join("go"), "");
    let deadline = Instant::now() + Duration::from_secs(10);
    while steps.lookup(&id, late).unwrap().is_active() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        steps.lookup(&id, late).unwrap().status,
        WorkflowStatus::Completed
    );

    // A record with neither a pid nor a pid file: unknown within the grace, then failed.
    let mut rec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let obj = rec.as_object_mut().unwrap();
    obj.insert("id".into(), json!("wf-x-2-0"));
    obj.insert("status".into(), json!("running"));
    obj.remove("pid");
    obj.remove("pidStarted");
    std::fs::write(records.join("workflow-wf-x-2-0.json"), rec.to_string()).unwrap();
    assert_eq!(
        steps.lookup("wf-x-2-0", t0() + 1_000).unwrap().status,
        WorkflowStatus::Running
    );
    assert_eq!(
        steps
            .lookup("wf-x-2-0", t0() + HEADLESS_START_GRACE_MS)
            .unwrap()
            .status,
        WorkflowStatus::Failed
    );
}

/// A stand-in Headspace server: answers the agent routes, with the agent running from a
/// send until `turn` more `wait`s have seen it; every request line is recorded.
fn fake_server(turn: usize) -> (String, Arc<Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
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
            let req = format!("{} {}", line.trim(), String::from_utf8_lossy(&body));
            log.lock().unwrap().push(req.trim().to_string());
            let answer = if line.contains("/send") {
                running_for = turn;
                json!({"status": "sent", "pane": "%7", "verified": true})
            } else if line.contains("/wait") {
                let activity = if running_for > 0 {
                    running_for -= 1;
                    "running"
                } else {
                    "idle"
                };
                json!({"status": if activity == "idle" {"idle"} else {"timeout"}, "activity": activity, "waited_ms": 0})
            } else if line.contains("/clear") {
                json!({"status": "sent", "pane": "%7", "verified": true})
            } else {
                json!({"id": 7, "tmux_pane": "%7", "last_seen_at": T0})
            }
            .to_string();
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (addr, seen)
}

#[test]
fn an_agent_step_is_typed_into_the_pane_and_ends_when_the_agent_is_idle() {
    let dir = TempDir::new("agent");
    let (addr, seen) = fake_server(2);
    let steps = Steps::new(
        StepRunner::Agent {
            agent: "%7".into(),
            addr,
            token: None,
            clear_first: true,
        },
        dir.path(),
        &dir.path().join(project_files::WORKFLOWS_DIR),
        false,
    );
    let req = design_request();
    let id = steps.spawn(&req, t0()).unwrap();
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests[0].starts_with("POST /api/agents/%257/clear"),
        "{requests:?}"
    );
    assert!(
        requests[1].starts_with("GET /api/agents/%257/wait"),
        "{requests:?}"
    );
    assert!(
        requests[2].starts_with("POST /api/agents/%257/send"),
        "{requests:?}"
    );
    assert!(
        requests[2].ends_with(r#"{"text":"/flow.design"}"#),
        "{requests:?}"
    );

    let later = t0() + 5_000;
    let first = steps.lookup(&id, later).unwrap();
    assert_eq!(first.status, WorkflowStatus::Running);
    assert_eq!(first.last_activity_ms, t0());
    assert_eq!(
        steps.lookup(&id, later).unwrap().status,
        WorkflowStatus::Running
    );
    assert_eq!(
        steps.lookup(&id, later).unwrap().status,
        WorkflowStatus::Completed
    );
    // Completed for good, even if the agent goes on to other work.
    let n = seen.lock().unwrap().len();
    assert_eq!(
        steps.lookup(&id, later).unwrap().status,
        WorkflowStatus::Completed
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        n,
        "a finished workflow is not asked about"
    );
    // Nor stopped: cancelling a run must not press Escape on the agent's next work.
    steps.kill(&id);
    assert_eq!(
        seen.lock().unwrap().len(),
        n,
        "a finished workflow is not killed"
    );
    assert_eq!(
        steps.lookup(&id, later).unwrap().status,
        WorkflowStatus::Completed
    );
}

// ------------------------------------------------------------------ the CLI

fn headspace(args: &[&str]) -> std::process::Output {
    common::headspace()
        .args(args)
        .env_remove("HEADSPACE_ADDR")
        .output()
        .unwrap()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.insert(p.clone(), Vec::new());
            out.extend(snapshot(&p));
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

fn decide(dir: &Path) -> Value {
    let before = snapshot(dir);
    let o = headspace(&["orchestrate", "decide", "--project", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(snapshot(dir), before, "decide wrote something");
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON object: {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn decide_on_a_clean_slate_spawns_design() {
    let dir = TempDir::new("cli-clean");
    assert_eq!(
        decide(dir.path()),
        json!({"action": "spawn", "reason": "Step design not started", "skill": "flow.design"})
    );
}

#[test]
fn decide_after_design_transitions_to_analyze() {
    let dir = TempDir::new("cli-design");
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state_json("design", "complete").to_string(),
    );
    // Without a run: judged against the run `start` would create.
    let expected = json!({"action": "transition", "reason": "design complete, advancing to analyze",
                          "nextStep": "analyze", "nextIndex": 1});
    assert_eq!(decide(dir.path()), expected);

    // With a run whose design workflow has finished (an agent run; the server is not
    // needed for a finished workflow).
    let state: OrchestrationState =
        serde_json::from_value(state_json("design", "complete")).unwrap();
    let mut exec = control::new_execution(
        "run-1",
        Some(&state),
        &StartOptions {
            settings: Settings {
                agent: Some("%9".into()),
                addr: Some("127.0.0.1:9".into()),
                ..Default::default()
            },
            ..Default::default()
        },
        t0(),
    );
    exec.started_at = Some(Timestamp(headspace::orchestrate::live::now_ms()).to_string());
    exec.executions.design = Some("wf-d".into());
    let f = ProjectFiles::new(dir.path());
    f.write_execution(&exec).unwrap();
    write(
        &f.workflows_dir().join("workflow-wf-d.json"),
        &json!({"id": "wf-d", "skill": "flow.design", "prompt": "/flow.design", "agent": "%9",
                "startedAtMs": t0(), "status": "completed", "costUsd": 0.0, "lastActivityMs": t0()})
        .to_string(),
    );
    assert_eq!(decide(dir.path()), expected);

    // Its workflow unknown: the runner would wait with a backoff, not spawn.
    std::fs::remove_file(f.workflows_dir().join("workflow-wf-d.json")).unwrap();
    let d = decide(dir.path());
    assert_eq!(d["action"], "wait_with_backoff");
    assert_eq!(d["backoffMs"], 1000);
}

#[test]
fn decide_names_a_corrupt_or_missing_file_and_fails() {
    let dir = TempDir::new("cli-corrupt");
    write(&dir.path().join(project_files::STATE_FILE), GARBAGE);
    let o = headspace(&[
        "orchestrate",
        "decide",
        "--project",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(".specflow/orchestration-state.json: corrupt"),
        "{err}"
    );
    assert!(o.stdout.is_empty());

    let gone = dir.path().join("no-such-project");
    let o = headspace(&["orchestrate", "status", "--project", gone.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no-such-project: no such directory"));

    // A run but no state file: missing, named.
    let dir = TempDir::new("cli-missing");
    let f = ProjectFiles::new(dir.path());
    f.write_execution(&control::new_execution(
        "run-1",
        None,
        &StartOptions::default(),
        t0(),
    ))
    .unwrap();
    let o = headspace(&[
        "orchestrate",
        "decide",
        "--project",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("orchestration-state.json: missing"));
}

#[test]
fn pause_resume_and_status_through_the_cli() {
    let (dir, id) = project(
        "cli-pause",
        "analyze",
        "in_progress",
        StartOptions::default(),
    );
    // Started now, so the 4-hour gate stays out of the way of the real clock.
    let f = ProjectFiles::new(dir.path());
    let mut e = f.read_execution(&id).unwrap();
    e.started_at = Some(Timestamp(headspace::orchestrate::live::now_ms()).to_string());
    f.write_execution(&e).unwrap();
    let p = dir.path().to_str().unwrap();
    let o = headspace(&["orchestrate", "pause", "--project", p]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("orchestration {id}: paused")
    );
    let o = headspace(&["orchestrate", "pause", "--project", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot pause"));
    assert_eq!(
        decide(dir.path()),
        json!({"action": "wait", "reason": "Orchestration paused"})
    );

    let o = headspace(&["orchestrate", "status", "--project", p, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "paused");
    assert_eq!(v["step"]["current"], "analyze");
    assert_eq!(v["phase"]["number"], "0010");
    assert_eq!(
        v["decisions"].as_array().unwrap().last().unwrap()["decision"],
        "pause"
    );
    let o = headspace(&["orchestrate", "status", "--project", p]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("step analyze (2/5) in_progress"), "{text}");
    assert!(text.contains("cost: $0.00 of $50.00"), "{text}");

    assert!(headspace(&["orchestrate", "resume", "--project", p])
        .status
        .success());
    assert_eq!(decide(dir.path())["action"], "spawn");
}

/// A repository's `.specflow` text reaches the terminal through `orchestrate status`; its
/// escape sequences must not: OSC 52 writes the clipboard, others set the window title or
/// overwrite a line. Each control character prints as a space.
#[test]
fn status_prints_no_escape_sequence_from_a_repositorys_files() {
    let (dir, _id) = project(
        "cli-escapes",
        "analyze",
        "in_progress",
        StartOptions::default(),
    );
    let hostile = "core\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]0;owned\u{7}\r\u{1b}[2K\u{9b}31m";
    let mut state = state_json("analyze", "in_progress");
    state["orchestration"]["phase"]["number"] = json!(hostile);
    state["orchestration"]["step"]["status"] = json!(hostile);
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state.to_string(),
    );
    let p = dir.path().to_str().unwrap();
    let o = headspace(&["orchestrate", "status", "--project", p]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bad: Vec<u8> = o
        .stdout
        .iter()
        .copied()
        .filter(|b| (*b < 0x20 && *b != b'\n' && *b != b'\t') || *b == 0x7f)
        .collect();
    assert!(
        bad.is_empty(),
        "control bytes {bad:?} in {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains('\u{9b}'), "{text:?}");
    assert!(text.contains("core ]52;c;cm0gLXJmIH4= "), "{text:?}");
    // `--json` escapes them as JSON does.
    let o = headspace(&["orchestrate", "status", "--project", p, "--json"]);
    assert!(
        !o.stdout.contains(&0x1b),
        "{:?}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// A stand-in headless `claude` playing the `/flow.*` skills: a step's skill marks its step
/// complete in the state file (a batch's does not: batches are the runner's), then it prints
/// its result with a cost.
fn fake_skills(dir: &Path) -> PathBuf {
    let script = dir.join("fake-skills.sh");
    write(
        &script,
        r#"#!/bin/sh
for a; do last=$a; done
echo "$last" >> skills.log
step=$(printf '%s' "$last" | sed 's#^/flow\.\([a-z]*\).*#\1#')
case $step in
  design) i=0;; analyze) i=1;; verify) i=3;; merge) i=4;; *) i=;;
esac
if [ -n "$i" ]; then
  printf '{"orchestration": {"phase": {"number": "0010", "name": "core"}, "step": {"current": "%s", "index": %s, "status": "complete"}}}\n' "$step" "$i" > .specflow/orchestration-state.json.new
  mv .specflow/orchestration-state.json.new .specflow/orchestration-state.json
fi
echo '{"type":"result","is_error":false,"total_cost_usd":0.25,"result":"ok"}'
"#,
    );
    make_executable(&script);
    script
}

#[test]
fn start_runs_a_headless_orchestration_to_completion_through_the_binary() {
    let dir = TempDir::new("cli-start");
    write(
        &dir.path().join(project_files::STATE_FILE),
        &state_json("design", "not_started").to_string(),
    );
    write(&dir.path().join("specs/0010-core/tasks.md"), TASKS_MD);
    let script = fake_skills(dir.path());
    let p = dir.path().to_str().unwrap();
    let o = headspace(&[
        "orchestrate",
        "start",
        "--project",
        p,
        "--headless",
        "--headless-cmd",
        script.to_str().unwrap(),
        "--auto-merge",
        "--poll",
        "0.05",
        "--claude-dir",
        dir.path().join("claude").to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.lines().last().unwrap().ends_with(": completed"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("skills.log")).unwrap(),
        "/flow.design\n/flow.analyze\n/flow.implement Execute tasks T002 in section \"Phase 1: Setup\"\n/flow.implement Execute tasks T003, T004 in section \"Phase 2: Core\"\n/flow.verify\n/flow.merge\n"
    );
    let o = headspace(&["orchestrate", "status", "--project", p, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "completed");
    assert_eq!(v["costUsd"], 1.5);
    assert!(
        v["runner"].is_null(),
        "the runner file is removed at the end"
    );
}

#[test]
fn start_without_a_way_to_run_steps_says_what_to_give() {
    let dir = TempDir::new("cli-nostart");
    let o = headspace(&[
        "orchestrate",
        "start",
        "--project",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give --agent AGENT"));
    assert!(snapshot(dir.path()).is_empty(), "nothing created");
}

// ------------------------------------------------------------------ the server's routes

#[test]
fn the_server_finds_a_projects_orchestration_and_drives_it_like_the_cli() {
    let Some(db) = common::fresh_db("orchestrate_http") else {
        return;
    };
    let (dir, id) = project("http", "analyze", "in_progress", StartOptions::default());
    let f = ProjectFiles::new(dir.path());
    let mut e = f.read_execution(&id).unwrap();
    e.started_at = Some(Timestamp(headspace::orchestrate::live::now_ms()).to_string());
    f.write_execution(&e).unwrap();
    let claude = common::temp_dir("orchestrate_http");
    let server = common::Server::start(&db, &claude, &[]);
    // An agent working in the project: that is how the server knows the folder.
    let mut s = headspace_testkit::synth::SessionWriter::new(1, Timestamp(t0()));
    s.cwd = dir.path().display().to_string();
    let (status, _) = server.post(
        "/hook/SessionStart",
        &common::hook(
            &s,
            &claude,
            "%4",
            "SessionStart",
            json!({"source": "startup"}),
        ),
    );
    assert_eq!(status, 200);
    let p = dir.path().to_str().unwrap().to_string();
    let found = common::wait_for(Duration::from_secs(5), || {
        let v = server.try_json("/api/orchestrations")?;
        (v.as_array()?.len() == 1).then_some(v)
    })
    .expect("the project's orchestration is listed");
    assert_eq!(found[0]["project"], p.as_str());
    assert_eq!(found[0]["id"], id.as_str());
    assert_eq!(found[0]["step"]["current"], "analyze");

    let q = p.replace('/', "%2F");
    let (status, body) = server.get(&format!("/api/orchestrate/decide?project={q}"));
    assert_eq!(status, 200, "{body}");
    let over_http: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        over_http,
        decide(dir.path()),
        "the route and the CLI decide alike"
    );

    let post = |command: &str, body: Value| {
        let (status, text) = server.post(
            &format!("/api/orchestrate/{command}"),
            body.to_string().as_bytes(),
        );
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    // An <img> on any page GETs what it likes: a GET never changes the run.
    for command in ["pause", "cancel", "merge", "confirm-gate", "resume"] {
        let (status, body) = server.get(&format!("/api/orchestrate/{command}?project={q}"));
        assert_eq!(status, 405, "GET {command}: {body}");
    }
    assert_eq!(
        f.read_execution(&id).unwrap().status,
        ExecutionStatus::Running,
        "GET changed nothing"
    );
    let (status, v) = post("pause", json!({"project": p}));
    assert_eq!((status, &v["status"]), (200, &json!("paused")), "{v}");
    let (status, v) = post("pause", json!({"project": p}));
    assert_eq!(status, 409, "{v}");
    assert!(v["error"].as_str().unwrap().contains("cannot pause"), "{v}");
    assert_eq!(
        f.read_execution(&id).unwrap().status,
        ExecutionStatus::Paused
    );
    let (status, v) = post("resume", json!({"project": p}));
    assert_eq!((status, &v["status"]), (200, &json!("running")), "{v}");

    let (status, v) = post("frobnicate", json!({"project": p}));
    assert_eq!(status, 404);
    assert!(v["error"].as_str().unwrap().contains("confirm-gate"), "{v}");
    let (status, _) = post("pause", json!({}));
    assert_eq!(status, 400);
    let (status, body) = server.get("/api/orchestrate/status?project=%2Fno%2Fsuch%2Fdir");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("/no/such/dir"), "{body}");
    let (status, v) = post("start", json!({"project": p}));
    assert_eq!(status, 400, "an agent is needed: {v}");
    // Only a known agent's folder, and only as JSON (a cross-site page cannot send that).
    let elsewhere = TempDir::new("http-elsewhere");
    let (status, v) = post("pause", json!({"project": elsewhere.path()}));
    assert_eq!(status, 403, "{v}");
    assert!(
        !elsewhere.path().join(".specflow").exists(),
        "nothing written there"
    );
    let (status, v) = post("start", json!({"project": elsewhere.path(), "agent": "1"}));
    assert_eq!(status, 403, "{v}");
    let (status, text) = common::request(
        &server.addr,
        "POST",
        "/api/orchestrate/pause",
        json!({"project": p}).to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(status, 200, "the CLI's client sends JSON: {text}");
    let raw = format!(
        "POST /api/orchestrate/cancel HTTP/1.1\r\nHost: {}\r\n{}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}",
        server.addr,
        common::bearer()
    );
    let mut conn = std::net::TcpStream::connect(&server.addr).unwrap();
    std::io::Write::write_all(&mut conn, raw.as_bytes()).unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut conn, &mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 415"), "{answer}");
    assert_eq!(
        f.read_execution(&id).unwrap().status,
        ExecutionStatus::Paused,
        "not cancelled"
    );
    server.stop();
}

#[test]
fn a_projects_files_never_choose_where_the_token_is_sent() {
    // A cloned repository's run file names the attacker's address as the server.
    let thief = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let thief_addr = thief.local_addr().unwrap().to_string();
    thief.set_nonblocking(true).unwrap();
    let (dir, id) = project(
        "token-thief",
        "design",
        "in_progress",
        StartOptions::default(),
    );
    let f = ProjectFiles::new(dir.path());
    let mut e = f.read_execution(&id).unwrap();
    e.config.extra.insert(
        headspace::orchestrate::live::SETTINGS_KEY.into(),
        json!({"agent": "%3", "addr": thief_addr, "claudeDir": "/etc"}),
    );
    f.write_execution(&e).unwrap();
    let s = Settings::of(&f.read_execution(&id).unwrap());
    assert_eq!(s.addr, None, "the address is never read from the project");
    assert_eq!(s.claude_dir, None);
    // Every command that may talk to the server, with a token in the environment.
    for command in ["status", "decide", "cancel"] {
        let out = common::headspace()
            .args(["orchestrate", command, "--project"])
            .arg(dir.path())
            .env("HEADSPACE_TOKEN", "stolen-token-123")
            .env_remove("HEADSPACE_ADDR")
            .output()
            .unwrap();
        let _ = out;
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut got = String::new();
    while let Ok((mut conn, _)) = thief.accept() {
        conn.set_nonblocking(false).unwrap();
        conn.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 4096];
        let n = std::io::Read::read(&mut conn, &mut buf).unwrap_or(0);
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(
        !got.contains("stolen-token-123"),
        "the token went to the project's address: {got}"
    );
}

#[test]
fn commands_are_never_taken_from_a_projects_files() {
    // A cloned repository's run file could name any command; none of it is ever run.
    let (dir, id) = project(
        "no-commands",
        "design",
        "not_started",
        StartOptions::default(),
    );
    let f = ProjectFiles::new(dir.path());
    let mut e = f.read_execution(&id).unwrap();
    e.config.extra.insert(
        headspace::orchestrate::live::SETTINGS_KEY.into(),
        json!({"headless": ["sh", "-c", "touch pwned"], "helper": ["sh", "-c", "touch pwned"], "agent": "%3"}),
    );
    f.write_execution(&e).unwrap();
    let s = Settings::of(&f.read_execution(&id).unwrap());
    assert_eq!(s.helper, None);
    assert_eq!(
        s.headless,
        Some(Vec::new()),
        "the mode is kept, the command is not"
    );
    assert_eq!(s.agent.as_deref(), Some("%3"));
    // And what `start` stores has no commands either.
    let opts = StartOptions {
        settings: Settings {
            headless: Some(vec!["my-claude".into()]),
            helper: Some(vec!["my-helper".into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    let (dir, id) = project("no-commands-stored", "design", "not_started", opts);
    let stored = &ProjectFiles::new(dir.path())
        .read_execution(&id)
        .unwrap()
        .config
        .extra[headspace::orchestrate::live::SETTINGS_KEY];
    assert_eq!(stored.get("helper"), None, "{stored}");
    assert_eq!(stored["headless"], json!([]), "{stored}");
}

#[test]
fn cancelling_a_headless_step_stops_its_process_and_nothing_else() {
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("headless-kill");
    let records = dir.path().join(project_files::WORKFLOWS_DIR);
    let sleeper = dir.path().join("sleeper.sh");
    write(&sleeper, "#!/bin/sh\nexec sleep 30\n");
    make_executable(&sleeper);
    let steps = Steps::new(
        StepRunner::Headless {
            command: vec![sleeper.to_string_lossy().into_owned()],
            claude_dir: dir.path().join("claude"),
        },
        dir.path(),
        &records,
        false,
    );
    let req = design_request();
    let id = steps.spawn(&req, t0()).unwrap();
    let record_path = records.join(format!("workflow-{id}.json"));
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    let pid = record["pid"].as_u64().unwrap() as u32;
    assert!(record["pidStarted"].is_u64(), "{record}");

    // A record naming another process (here one of ours, in its own group, but not the one
    // the record started) is not signalled.
    // (Start times count in 10 ms ticks; a reused pid comes much later than this.)
    std::thread::sleep(Duration::from_millis(100));
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let mut forged = record.clone();
    forged["pid"] = json!(other.id());
    write(&record_path, &forged.to_string());
    steps.kill(&id);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        other.try_wait().unwrap().is_none(),
        "a process the runner did not start lives on"
    );
    let _ = other.kill();
    let _ = other.wait();

    // The genuine record: its group is stopped.
    let id = steps.spawn(&req, t0()).unwrap();
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(records.join(format!("workflow-{id}.json"))).unwrap(),
    )
    .unwrap();
    let pid2 = record["pid"].as_u64().unwrap() as u32;
    assert!(project_files::pid_alive(pid2));
    steps.kill(&id);
    let gone = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        !project_files::pid_alive(pid2)
    });
    assert!(gone, "the step's process group was stopped");
    // The first step, whose record was forged above, is still ours to clean up.
    let _ = std::process::Command::new("kill")
        .args(["-TERM", "--", &format!("-{pid}")])
        .status();
}

#[test]
fn only_news_wakes_the_runner() {
    use headspace::orchestrate::live::wakes_the_runner;
    for news in [
        "orchestration-state.json",
        "orchestration-7f3a.json",
        "workflow-wf-1.exit",
    ] {
        assert!(wakes_the_runner(news), "{news}");
    }
    // What the runner writes itself at every look, and temporary files.
    for own in [
        "workflow-wf-1.json",
        "runner.log",
        "runner-7f3a.json",
        ".orchestration.lock",
        ".orchestration-state.json.tmp",
        "workflow-wf-1.exit.tmp",
    ] {
        assert!(!wakes_the_runner(own), "{own}");
    }
}
