//! The runner: the seed's loop — read, validate, decide, log, act, write, wait — with every
//! dependency on the world behind [`Deps`], so the whole loop runs in tests.
//!
//! One [`iterate`] is three short stretches under the project lock with the slow work (spawn,
//! kill, helper model) between them, never under it:
//!
//! 0. look up the linked workflow (it may ask the server) before the lock is taken;
//! 1. lock; read both files (a missing or corrupt state goes to [`recover_state`]); keep that
//!    lookup if the step is still linked to the same workflow, else look up again; fold its
//!    cost and end into the files, validate and decide (all in the
//!    core: [`evaluate`]); apply the decision, append it to the decision log; record a spawn
//!    intent when the decision spawns; write atomically; unlock.
//! 2. spawn the workflow, or ask the helper about a stale workflow or a failed step.
//! 3. lock; re-read; link the workflow and clear the intent, or carry out the recovery; write;
//!    unlock.
//!
//! Two iterations at once (rapid wake-ups, a second runner, the dashboard) cannot spawn a
//! step twice: the second one sees the first one's intent (younger than 30 s) or its linked
//! workflow, and waits.

use super::files::{FileError, ProjectFiles, RunnerRecord};
use headspace_core::orchestration::{
    apply, apply_to_state, backoff_ms, decide_checked, failed_needs_helper, failed_recovery,
    linked_workflow_id, observe_workflow, parse_batches, stale_recovery, Action, BatchStatus,
    Batches, Decision, DecisionLogEntry, ExecutionPhase, ExecutionStatus, OrchestrationExecution,
    OrchestrationState, Recovery, RecoveryPlan, SpawnCheck, SpawnIntent, Step, StepStatus,
    WorkflowView,
};
use headspace_core::Timestamp;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The execution key holding the spawn intent (`{"skill", "timestamp"}`) while a spawn is
/// under way. It lives in the execution file so that the check and the record are one
/// locked read-modify-write, across processes.
pub const SPAWN_INTENT_KEY: &str = "spawnIntent";
/// The execution key mapping a workflow id to when the helper judged it alive although
/// silent: its silence counts from then.
pub const STALE_ACK_KEY: &str = "staleAcknowledged";
/// The execution key listing tasks recorded as blocked (`[{"task", "reason"}]`).
pub const BLOCKED_TASKS_KEY: &str = "blockedTasks";
/// The execution key counting consecutive failed spawns.
pub const SPAWN_FAILURES_KEY: &str = "spawnFailures";
/// The execution key holding the phase the run was started for (`{"number", "name", …}`),
/// which lets the heuristic rebuild a lost state file.
pub const PHASE_KEY: &str = "phase";
/// How often, and how far apart, an unreadable state file is read again before it counts
/// as broken.
const SETTLE_READS: u32 = 3;
const SETTLE_PAUSE: Duration = Duration::from_millis(200);
/// The most iterations in a row that go on without waiting.
const MAX_AGAIN: u32 = 20;
/// After this many spawns in a row fail, the run needs attention instead of retrying. With
/// the backoff between them (2 s, doubling) that is about two minutes: a server restart is
/// waited out (found by the orchestration simulation, which crashes the server).
pub const MAX_SPAWN_FAILURES: u64 = 7;

/// A held lock; dropping it releases the lock.
pub type Guard = Box<dyn std::any::Any + Send>;

/// The helper model's three cases, and no other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HelperCase {
    /// The state file is missing or unreadable: rebuild it.
    CorruptState,
    /// A running workflow has been silent for more than 10 minutes: diagnose it.
    StaleWorkflow,
    /// The step (or a batch, beyond its heals) failed: diagnose it.
    FailedStep,
}

impl HelperCase {
    /// The seed's task name for the case.
    pub fn task(self) -> &'static str {
        match self {
            HelperCase::CorruptState => "recover_state",
            HelperCase::StaleWorkflow => "diagnose_stale_workflow",
            HelperCase::FailedStep => "diagnose_failed_step",
        }
    }
}

/// A workflow to start.
#[derive(Clone, Debug, PartialEq)]
pub struct SpawnRequest {
    /// The step it works on.
    pub step: Step,
    /// The skill (`flow.design`, …).
    pub skill: String,
    /// For implement: the batch.
    pub batch: Option<usize>,
    /// Whether it heals the failed batch rather than running it.
    pub healer: bool,
    /// Instructions after the skill (the batch's tasks, the failure to heal).
    pub context: Option<String>,
}

/// Everything the runner needs from the world. Storage has defaults on [`ProjectFiles`];
/// workflows, the helper and the clock are the implementor's.
pub trait Deps: Send + Sync {
    /// The project's files.
    fn files(&self) -> &ProjectFiles;

    /// Takes the project lock.
    fn lock(&self) -> Result<Guard, FileError> {
        Ok(Box::new(self.files().lock()?))
    }
    /// Reads the project state.
    fn read_state(&self) -> Result<OrchestrationState, FileError> {
        self.files().read_state()
    }
    /// Reads run `id`.
    fn read_execution(&self, id: &str) -> Result<OrchestrationExecution, FileError> {
        self.files().read_execution(id)
    }
    /// Writes the project state atomically.
    fn write_state(&self, state: &OrchestrationState) -> Result<(), FileError> {
        self.files().write_state(state)
    }
    /// Writes the run atomically.
    fn write_execution(&self, e: &OrchestrationExecution) -> Result<(), FileError> {
        self.files().write_execution(e)
    }
    /// Copies the state file to `.bak`.
    fn backup_state(&self) -> Result<Option<PathBuf>, FileError> {
        super::files::backup(&self.files().state_path())
    }
    /// The text of the phase's `tasks.md`, if there is one.
    fn read_tasks(&self, state: &OrchestrationState) -> Option<String> {
        let number = state
            .orchestration
            .phase
            .number
            .get()
            .and_then(Value::as_str)
            .map(str::to_string);
        let path = find_tasks(self.files().dir(), number.as_deref())?;
        std::fs::read_to_string(path).ok()
    }
    /// The project's git branch, for rebuilding a lost state.
    fn current_branch(&self) -> Option<String> {
        None
    }
    /// The workflow `id` as it is now; `None` when it cannot be found.
    fn lookup_workflow(&self, id: &str) -> Option<WorkflowView>;
    /// Starts a workflow; its id, or why it could not start.
    fn spawn(&self, req: &SpawnRequest) -> Result<String, String>;
    /// Stops a workflow (best effort).
    fn kill(&self, id: &str);
    /// Asks the helper model; `None` when there is none or it gave no usable answer.
    fn helper(&self, case: HelperCase, context: &Value) -> Option<Value>;
    /// Now, in ms since the epoch.
    fn now_ms(&self) -> i64;
}

/// What the loop does after an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Wait for an event or the poll interval.
    Poll,
    /// Wait this many ms (lookup backoff), or less on an event.
    Backoff(u64),
    /// Go on at once: the files moved on and there is more to do.
    Again,
    /// The run is over.
    Stop,
}

/// One iteration's outcome.
#[derive(Clone, Debug)]
pub struct Iteration {
    /// The decision taken.
    pub decision: Decision,
    /// Whether it was appended to the decision log (a repeat of the last entry, with nothing
    /// else changed, is not).
    pub logged: bool,
    /// What the loop does next.
    pub next: Next,
}

/// Why the loop stopped short of a finished run.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// A file could not be read or written.
    #[error(transparent)]
    File(#[from] FileError),
    /// Another live process already runs this orchestration.
    #[error("orchestration {id} is already run by process {pid}")]
    AlreadyRunning {
        /// The orchestration.
        id: String,
        /// The other runner's pid.
        pid: u32,
    },
    /// An iteration's thread panicked or was cancelled.
    #[error("runner iteration failed: {0}")]
    Task(String),
}

/// The decision for the files as they are: the linked workflow folded in, validation, the
/// decision matrix, and the spawn guard (an intent younger than 30 s or an active workflow
/// turns a spawn into a wait). Pure: the runner and `orchestrate decide` both use it.
pub fn evaluate(
    state: &mut OrchestrationState,
    execution: &mut OrchestrationExecution,
    workflow: Option<&WorkflowView>,
    now_ms: i64,
) -> Decision {
    if let Some(wf) = workflow {
        observe_workflow(state, execution, wf);
    }
    let decision = decide_checked(state, execution, workflow, now_ms);
    if !spawns(&decision) {
        return decision;
    }
    let intent = execution
        .extra
        .get(SPAWN_INTENT_KEY)
        .and_then(|v| serde_json::from_value::<SpawnIntent>(v.clone()).ok());
    let active = workflow.is_some_and(WorkflowView::is_active);
    match headspace_core::orchestration::spawn_check(intent.as_ref(), active, now_ms) {
        SpawnCheck::Spawn => decision,
        SpawnCheck::IntentInFlight => Decision::new(
            Action::Wait,
            format!(
                "Spawn of {} already in progress",
                intent.map(|i| i.skill).unwrap_or_default()
            ),
        ),
        SpawnCheck::WorkflowActive => Decision::new(Action::Wait, "Workflow already active"),
    }
}

/// The linked workflow as it is now, its silence counted from a helper's "it is alive"
/// when that came later.
pub fn look_up(
    deps: &dyn Deps,
    state: &OrchestrationState,
    execution: &OrchestrationExecution,
) -> Option<WorkflowView> {
    let id = linked(state, execution)?;
    acknowledged(deps.lookup_workflow(id)?, execution, id)
}

/// The workflow the run's current step is linked to.
fn linked<'a>(
    state: &OrchestrationState,
    execution: &'a OrchestrationExecution,
) -> Option<&'a str> {
    linked_workflow_id(execution, state.orchestration.step.current.as_ref()?)
}

/// The lookup of linked workflow `id` before the lock is taken, with that id: the lookup may
/// ask the server, which takes seconds while it restarts, and the project lock must not wait
/// on it (a pause or a skill's write would). `None` when the files cannot be read unlocked.
fn look_up_unlocked(deps: &dyn Deps, id: &str) -> Option<(String, Option<WorkflowView>)> {
    let exec = deps.read_execution(id).ok()?;
    let state = deps.read_state().ok()?;
    let wf = linked(&state, &exec)?.to_string();
    let view = deps.lookup_workflow(&wf);
    Some((wf, view))
}

/// `view` with the user's acknowledgement of its staleness, if any, as activity.
fn acknowledged(
    mut view: WorkflowView,
    execution: &OrchestrationExecution,
    id: &str,
) -> Option<WorkflowView> {
    if let Some(ack) = execution
        .extra
        .get(STALE_ACK_KEY)
        .and_then(|m| m.get(id))
        .and_then(Value::as_i64)
    {
        view.last_activity_ms = view.last_activity_ms.max(ack);
    }
    Some(view)
}

/// Whether carrying out `decision` starts a workflow.
fn spawns(decision: &Decision) -> bool {
    match decision.action {
        Action::Spawn | Action::SpawnBatch | Action::HealBatch => true,
        // Entering implement spawns nothing yet: its batches come first.
        Action::Transition => decision
            .next_step
            .as_ref()
            .is_some_and(|s| *s != Step::Implement && s.is_known()),
        _ => false,
    }
}

/// What stretch 2 of an iteration does.
enum Act {
    None,
    Spawn(SpawnRequest),
    Stale(Decision, Option<WorkflowView>),
    Failed(Decision),
}

/// One iteration of the loop for run `id` (see the module documentation).
pub fn iterate(deps: &dyn Deps, id: &str) -> Result<Iteration, FileError> {
    let early = look_up_unlocked(deps, id);
    let guard = deps.lock()?;
    let mut exec = deps.read_execution(id)?;
    let mut state = match deps.read_state() {
        Ok(s) => s,
        Err(e) if e.is_recoverable() => {
            drop(guard);
            return recover_state(deps, id, &e);
        }
        Err(e) => return Err(e),
    };
    let now = deps.now_ms();
    let (exec_before, state_before) = (exec.clone(), state.clone());
    // The early lookup stands if the step is still linked to the same workflow; otherwise
    // (the files moved on in between) it is looked up again.
    let view = match (early, linked(&state, &exec)) {
        (Some((wf, view)), Some(now_wf)) if wf == now_wf => {
            view.and_then(|v| acknowledged(v, &exec, &wf))
        }
        _ => look_up(deps, &state, &exec),
    };
    let decision = evaluate(&mut state, &mut exec, view.as_ref(), now);
    apply(&mut exec, &decision, now);
    apply_to_state(&mut state, &decision);

    let mut act = Act::None;
    if spawns(&decision) {
        let req = spawn_request(&state, &exec, &decision);
        exec.extra.insert(
            SPAWN_INTENT_KEY.into(),
            json!(SpawnIntent {
                skill: req.skill.clone(),
                timestamp: now
            }),
        );
        // The step is under way from now, as far as the project is concerned.
        let step = &mut state.orchestration.step;
        if matches!(step.status.get(), None | Some(StepStatus::NotStarted)) {
            step.status = StepStatus::InProgress.into();
        }
        act = Act::Spawn(req);
    } else {
        match decision.action {
            Action::InitializeBatches => {
                let fallback = exec
                    .config
                    .extra
                    .get("batchSizeFallback")
                    .and_then(Value::as_u64)
                    .unwrap_or(15) as usize;
                let items = parse_batches(&deps.read_tasks(&state).unwrap_or_default(), fallback);
                exec.batches = Batches {
                    total: items.len(),
                    current: 0,
                    items,
                    extra: std::mem::take(&mut exec.batches.extra),
                };
                exec.executions.implement.clear();
            }
            Action::RecoverStale => act = Act::Stale(decision.clone(), view.clone()),
            Action::RecoverFailed => act = Act::Failed(decision.clone()),
            // Not one of the helper's cases: the user looks at it.
            Action::RecoverUnknown => escalate(&mut exec, &decision.reason, None, now),
            _ => {}
        }
    }

    let state_changed = state != state_before;
    let logged = state_changed || !is_repeat(&exec_before, &exec);
    if logged {
        if state_changed {
            deps.write_state(&state)?;
        }
        deps.write_execution(&exec)?;
    }
    drop(guard);

    let next = match act {
        Act::Spawn(req) => match finish_spawn(deps, id, &req)? {
            0 => Next::Poll,
            failures => Next::Backoff(backoff_ms(failures as u32)),
        },
        Act::Stale(d, v) => handle_stale(deps, id, &d, v.as_ref(), &state)?,
        Act::Failed(d) => handle_failed(deps, id, &d, &state, &exec)?,
        Act::None => next_after(&decision, &exec),
    };
    Ok(Iteration {
        decision,
        logged,
        next,
    })
}

fn next_after(decision: &Decision, exec: &OrchestrationExecution) -> Next {
    if exec.status.is_finished() {
        return Next::Stop;
    }
    match decision.action {
        Action::Stop | Action::Complete | Action::Fail => Next::Stop,
        Action::WaitWithBackoff => Next::Backoff(decision.backoff_ms.unwrap_or(1_000)),
        Action::Transition
        | Action::AdvanceBatch
        | Action::InitializeBatches
        | Action::ForceStepComplete => Next::Again,
        _ => Next::Poll,
    }
}

/// Whether `after` is `before` plus a log entry equal to the previous one, and nothing else:
/// such a decision (a wait repeated at every poll) is not written again, which keeps the log
/// to the decisions that differ and an idle run from rewriting its file at every poll.
fn is_repeat(before: &OrchestrationExecution, after: &OrchestrationExecution) -> bool {
    let (Some(new), Some(prev)) = (after.decision_log.last(), before.decision_log.last()) else {
        return false;
    };
    if (new.decision.as_str(), new.reason.as_str(), &new.data)
        != (prev.decision.as_str(), prev.reason.as_str(), &prev.data)
    {
        return false;
    }
    let mut a = after.clone();
    a.decision_log.pop();
    a.updated_at.clone_from(&before.updated_at);
    a == *before
}

/// The workflow a spawning decision starts.
fn spawn_request(
    state: &OrchestrationState,
    exec: &OrchestrationExecution,
    decision: &Decision,
) -> SpawnRequest {
    let step = decision
        .next_step
        .clone()
        .or_else(|| state.orchestration.step.current.clone())
        .unwrap_or(Step::Design);
    let skill = decision
        .skill
        .clone()
        .or_else(|| step.skill())
        .unwrap_or_else(|| "flow.implement".into());
    match decision.action {
        Action::HealBatch => {
            let i = decision.batch_index.unwrap_or(exec.batches.current);
            let b = exec.batches.items.get(i);
            SpawnRequest {
                step: Step::Implement,
                skill: "flow.implement".into(),
                batch: Some(i),
                healer: true,
                context: Some(format!(
                    "Heal batch {i} (section \"{}\", tasks {}): it failed with: {}. Fix the failure and finish its tasks.",
                    b.map(|b| b.section.as_str()).unwrap_or_default(),
                    b.map(|b| b.task_ids.join(", ")).unwrap_or_default(),
                    b.and_then(|b| b.error.as_deref()).unwrap_or("unknown error"),
                )),
            }
        }
        Action::SpawnBatch => SpawnRequest {
            step: Step::Implement,
            skill,
            batch: decision.batch_index,
            healer: false,
            // A batch without task ids (no tasks.md) runs the plain skill, not "Execute
            // tasks  in section …".
            context: decision.context.clone().filter(|_| {
                decision
                    .batch_index
                    .and_then(|i| exec.batches.items.get(i))
                    .is_some_and(|b| !b.task_ids.is_empty())
            }),
        },
        _ => SpawnRequest {
            batch: (step == Step::Implement).then_some(exec.batches.current),
            step,
            skill,
            healer: false,
            context: None,
        },
    }
}

/// Stretches 2 and 3 of a spawn: start the workflow (no lock held), then link it to its step
/// or batch and clear the intent, whatever happened. Returns how many spawns in a row have
/// failed now (0 when this one started).
fn finish_spawn(deps: &dyn Deps, id: &str, req: &SpawnRequest) -> Result<u64, FileError> {
    let result = deps.spawn(req);
    let _guard = deps.lock()?;
    let mut exec = deps.read_execution(id)?;
    let now = deps.now_ms();
    exec.extra.remove(SPAWN_INTENT_KEY);
    match result {
        Ok(wf) => {
            link(&mut exec, req, &wf);
            exec.extra.remove(SPAWN_FAILURES_KEY);
            let mut data = Map::new();
            data.insert("workflowId".into(), json!(wf));
            if let Some(i) = req.batch {
                data.insert("batchIndex".into(), json!(i));
            }
            log(
                &mut exec,
                "spawned",
                format!("{} started as workflow {wf}", req.skill),
                Some(data),
                now,
            );
        }
        Err(e) => {
            let failures = exec
                .extra
                .get(SPAWN_FAILURES_KEY)
                .and_then(Value::as_u64)
                .unwrap_or(0)
                + 1;
            exec.extra
                .insert(SPAWN_FAILURES_KEY.into(), json!(failures));
            log(
                &mut exec,
                "spawn_failed",
                format!("{}: {e}", req.skill),
                None,
                now,
            );
            if failures >= MAX_SPAWN_FAILURES {
                escalate(
                    &mut exec,
                    &format!("Could not start {} ({failures} attempts): {e}", req.skill),
                    None,
                    now,
                );
            }
            deps.write_execution(&exec)?;
            return Ok(failures);
        }
    }
    deps.write_execution(&exec)?;
    Ok(0)
}

/// Ties workflow `wf` to what it works on, so the next lookups find it.
fn link(exec: &mut OrchestrationExecution, req: &SpawnRequest, wf: &str) {
    let e = &mut exec.executions;
    match &req.step {
        Step::Design => e.design = Some(wf.into()),
        Step::Analyze => e.analyze = Some(wf.into()),
        Step::Verify => e.verify = Some(wf.into()),
        Step::Merge => e.merge = Some(wf.into()),
        Step::Implement => {
            let i = req.batch.unwrap_or(exec.batches.current);
            if req.healer {
                match e.extra.get_mut("healers").and_then(Value::as_array_mut) {
                    Some(h) => h.push(json!(wf)),
                    None => {
                        e.extra.insert("healers".into(), json!([wf]));
                    }
                }
            } else {
                if e.implement.len() <= i {
                    e.implement.resize(i + 1, String::new());
                }
                e.implement[i] = wf.into();
            }
            if let Some(b) = exec.batches.items.get_mut(i) {
                if req.healer {
                    b.healer_execution_id = Some(wf.into());
                } else {
                    b.workflow_execution_id = Some(wf.into());
                    b.status = BatchStatus::Running;
                    b.error = None;
                }
            }
        }
        Step::Unknown(_) => {}
    }
}

/// Forgets the current step's (or batch's) workflow, so the next iteration spawns afresh.
fn unlink_current(state: &OrchestrationState, exec: &mut OrchestrationExecution) {
    let e = &mut exec.executions;
    match state.orchestration.step.current.as_ref() {
        Some(Step::Design) => e.design = None,
        Some(Step::Analyze) => e.analyze = None,
        Some(Step::Verify) => e.verify = None,
        Some(Step::Merge) => e.merge = None,
        Some(Step::Implement) => {
            let i = exec.batches.current;
            if let Some(b) = exec.batches.items.get_mut(i) {
                if !b.status.is_done() {
                    b.status = BatchStatus::Pending;
                    b.workflow_execution_id = None;
                    b.healer_execution_id = None;
                    b.error = None;
                    if let Some(s) = e.implement.get_mut(i) {
                        s.clear();
                    }
                }
            }
        }
        Some(Step::Unknown(_)) | None => {}
    }
}

/// The only way to the helper model. It is called from exactly three places, one per
/// [`HelperCase`]: [`recover_state`], [`handle_stale`], [`handle_failed`] (a test checks).
/// Its failures are silent by design: `None` takes the case's fallback.
fn ask_helper(deps: &dyn Deps, case: HelperCase, context: Value) -> Option<Value> {
    let answer = deps.helper(case, &context);
    if answer.is_none() {
        tracing::info!(task = case.task(), "no helper answer: taking the fallback");
    }
    answer
}

/// Case 1: the state file is missing or corrupt (still, after a few re-reads 200 ms apart,
/// so a writer caught mid-write is not "recovered" over). It is backed up first (G3.2), then the
/// helper is asked (G3.3, G3.4), then the heuristic (G3.5: the run's own step and phase, or
/// the git branch), and without either the run needs attention (G3.6). A run that already
/// needs attention is not asked about again.
pub fn recover_state(deps: &dyn Deps, id: &str, error: &FileError) -> Result<Iteration, FileError> {
    // A writer that does not write atomically leaves the file empty or half-written for a
    // moment: look again before calling it broken.
    for _ in 0..SETTLE_READS {
        std::thread::sleep(SETTLE_PAUSE);
        if deps.read_state().is_ok() {
            return Ok(readable_again());
        }
    }
    {
        let _guard = deps.lock()?;
        let exec = deps.read_execution(id)?;
        if exec.status.is_finished() {
            return Ok(quiet(
                Decision::new(Action::Stop, format!("Orchestration is {}", exec.status)),
                Next::Stop,
            ));
        }
        if exec.status == ExecutionStatus::NeedsAttention {
            return Ok(quiet(
                Decision::new(
                    Action::Wait,
                    format!("State unreadable, needs attention: {error}"),
                ),
                Next::Poll,
            ));
        }
        deps.backup_state()?;
    }
    let context = json!({
        "projectPath": deps.files().dir(),
        "file": deps.files().state_path(),
        "error": error.to_string(),
    });
    let answer = ask_helper(deps, HelperCase::CorruptState, context);

    let _guard = deps.lock()?;
    let mut exec = deps.read_execution(id)?;
    let now = deps.now_ms();
    if deps.read_state().is_ok() {
        // Repaired meanwhile (by the user or a sub-command): nothing to recover.
        return Ok(readable_again());
    }
    let recovered = headspace_core::orchestration::recovered_state(answer.as_ref())
        .map(|s| (s, "state_recovered", "Recovered by the helper"))
        .or_else(|| {
            heuristic_state(deps, &exec).map(|s| {
                (
                    s,
                    "state_heuristic_recovered",
                    "Rebuilt from the run's step and phase",
                )
            })
        });
    let (decision, next) = match recovered {
        Some((state, name, why)) => {
            // The backup above may predate a later write to the broken file: back up again
            // (a no-op when unchanged), so what is overwritten is always saved.
            deps.backup_state()?;
            if deps.read_state().is_ok() {
                return Ok(readable_again());
            }
            deps.write_state(&state)?;
            log(&mut exec, name, format!("{why}; it was {error}"), None, now);
            (Decision::new(Action::Wait, why), Next::Again)
        }
        None => {
            let issue = format!("Could not recover state: {error}");
            escalate(&mut exec, &issue, None, now);
            (Decision::new(Action::NeedsAttention, issue), Next::Poll)
        }
    };
    deps.write_execution(&exec)?;
    Ok(Iteration {
        decision,
        logged: true,
        next,
    })
}

fn readable_again() -> Iteration {
    quiet(
        Decision::new(Action::Wait, "State file readable again"),
        Next::Again,
    )
}

fn quiet(decision: Decision, next: Next) -> Iteration {
    Iteration {
        decision,
        logged: false,
        next,
    }
}

/// The state the run itself implies: its current step (in progress, or merge complete once
/// the run is past merge) in the phase it was started for, or the phase the git branch names
/// (`0010-core` → `0010`). `None` without a phase.
fn heuristic_state(deps: &dyn Deps, exec: &OrchestrationExecution) -> Option<OrchestrationState> {
    let mut phase = exec
        .extra
        .get(PHASE_KEY)
        .filter(|p| p.get("number").is_some_and(|n| !n.is_null()))
        .cloned();
    if phase.is_none() {
        let branch = deps.current_branch()?;
        let digits: String = branch.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            return None;
        }
        phase = Some(json!({"number": digits, "branch": branch}));
    }
    let (step, status) = match &exec.current_phase {
        Some(ExecutionPhase::Complete) => (Step::Merge, StepStatus::Complete),
        Some(p) if Step::parse(p.as_str()).is_known() => {
            (Step::parse(p.as_str()), StepStatus::InProgress)
        }
        _ => (Step::Design, StepStatus::NotStarted),
    };
    serde_json::from_value(json!({
        "orchestration": {
            "phase": phase,
            "step": {"current": step, "index": step.index(), "status": status}
        }
    }))
    .ok()
}

/// Case 2: a running workflow has been silent for more than 10 minutes (G3.7–G3.10).
pub fn handle_stale(
    deps: &dyn Deps,
    id: &str,
    decision: &Decision,
    view: Option<&WorkflowView>,
    state: &OrchestrationState,
) -> Result<Next, FileError> {
    let wf = decision.workflow_id.clone().unwrap_or_default();
    let now = deps.now_ms();
    let silent_ms = view.map_or(0, |v| now.saturating_sub(v.last_activity_ms));
    let context = json!({
        "workflowId": wf,
        "lastActivity": view.map(|v| Timestamp(v.last_activity_ms).to_string()),
        "staleDurationMs": silent_ms,
        "currentStep": state.orchestration.step.current,
        "currentTask": state.orchestration.extra.get("implement").and_then(|i| i.get("currentTask")),
        "projectPath": deps.files().dir(),
    });
    let answer = ask_helper(deps, HelperCase::StaleWorkflow, context);
    let plan = stale_recovery(answer.as_ref(), (silent_ms + 30_000) / 60_000);
    if plan.kill {
        deps.kill(&wf);
    }
    carry_out(deps, id, &plan, Some(&wf), |state, exec| {
        // Still the same stale workflow? Otherwise the situation moved on by itself.
        state
            .orchestration
            .step
            .current
            .as_ref()
            .and_then(|s| linked_workflow_id(exec, s))
            == Some(wf.as_str())
    })
}

/// Case 3: the step or a batch failed (G3.11–G3.16). With the heal attempts used up the
/// helper is not asked.
pub fn handle_failed(
    deps: &dyn Deps,
    id: &str,
    decision: &Decision,
    state: &OrchestrationState,
    exec: &OrchestrationExecution,
) -> Result<Next, FileError> {
    let heals = exec.heal_attempts.unwrap_or(0);
    let max = exec.config.max_heal_attempts;
    let answer = if failed_needs_helper(heals, max) {
        let context = json!({
            "step": state.orchestration.step.current,
            "status": state.orchestration.step.status,
            "error": decision.error,
            "batch": decision.batch_index.and_then(|i| exec.batches.items.get(i)),
            "healAttempts": heals,
            "maxHealAttempts": max,
            "projectPath": deps.files().dir(),
        });
        ask_helper(deps, HelperCase::FailedStep, context)
    } else {
        None
    };
    let plan = failed_recovery(answer.as_ref(), decision.error.as_deref(), heals, max);
    let batch = decision.batch_index;
    carry_out(deps, id, &plan, None, move |state, exec| match batch {
        Some(i) => exec
            .batches
            .items
            .get(i)
            .is_some_and(|b| b.status == BatchStatus::Failed),
        None => matches!(
            state.orchestration.step.status.get(),
            Some(StepStatus::Failed | StepStatus::Blocked)
        ),
    })
}

/// Stretch 3 of a recovery: under the lock, re-read, check the situation is `still` the one
/// diagnosed, and make the plan's changes to the files.
fn carry_out(
    deps: &dyn Deps,
    id: &str,
    plan: &RecoveryPlan,
    workflow: Option<&str>,
    still: impl FnOnce(&OrchestrationState, &OrchestrationExecution) -> bool,
) -> Result<Next, FileError> {
    let _guard = deps.lock()?;
    let mut exec = deps.read_execution(id)?;
    let mut state = deps.read_state()?;
    if !still(&state, &exec) || exec.status.is_finished() {
        return Ok(Next::Again);
    }
    let now = deps.now_ms();
    let before = state.clone();
    let restart_step = |state: &mut OrchestrationState| {
        let s = &mut state.orchestration.step;
        if matches!(
            s.status.get(),
            Some(StepStatus::Failed | StepStatus::Blocked)
        ) {
            s.status = StepStatus::InProgress.into();
            s.error = None;
        }
    };
    match &plan.recovery {
        Recovery::Acknowledge => {
            if let Some(wf) = workflow {
                let acks = exec.extra.entry(STALE_ACK_KEY).or_insert_with(|| json!({}));
                if let Some(m) = acks.as_object_mut() {
                    m.insert(wf.into(), json!(now));
                }
            }
        }
        Recovery::Restart => unlink_current(&state, &mut exec),
        Recovery::SkipTasks { tasks } => {
            let blocked = exec
                .extra
                .entry(BLOCKED_TASKS_KEY)
                .or_insert_with(|| json!([]));
            if let Some(v) = blocked.as_array_mut() {
                v.extend(
                    tasks
                        .iter()
                        .map(|t| json!({"task": t, "reason": plan.reason})),
                );
            }
            restart_step(&mut state);
            unlink_current(&state, &mut exec);
        }
        Recovery::Retry => {
            exec.heal_attempts = Some(exec.heal_attempts.unwrap_or(0) + 1);
            restart_step(&mut state);
            unlink_current(&state, &mut exec);
        }
        Recovery::RunPrerequisite(step) => {
            // Counted as a heal attempt, so a helper that keeps sending the run back cannot
            // loop forever.
            exec.heal_attempts = Some(exec.heal_attempts.unwrap_or(0) + 1);
            let s = &mut state.orchestration.step;
            s.current = Some(step.clone());
            s.index = step.index().and_then(|i| i64::try_from(i).ok());
            s.status = StepStatus::NotStarted.into();
            s.error = None;
            exec.current_phase = Some(ExecutionPhase::from(step));
            unlink_current(&state, &mut exec);
        }
        Recovery::Escalate(issue) => escalate(&mut exec, issue, workflow, now),
    }
    let mut data = Map::new();
    if let Some(wf) = workflow {
        data.insert("workflowId".into(), json!(wf));
    }
    log(
        &mut exec,
        plan.log,
        plan.reason.clone(),
        (!data.is_empty()).then_some(data),
        now,
    );
    if state != before {
        deps.write_state(&state)?;
    }
    deps.write_execution(&exec)?;
    Ok(match plan.recovery {
        Recovery::Escalate(_) | Recovery::Acknowledge => Next::Poll,
        _ => Next::Again,
    })
}

/// Sets `needs_attention` with a recovery context, through the core's bookkeeping (so it is
/// logged like any decision).
pub fn escalate(exec: &mut OrchestrationExecution, issue: &str, workflow: Option<&str>, now: i64) {
    let mut d = Decision::new(Action::NeedsAttention, issue);
    d.workflow_id = workflow.map(str::to_string);
    apply(exec, &d, now);
}

/// Appends an entry that is not a matrix decision (a spawn, a recovery, a user command) to
/// the decision log, in the same shape.
pub fn log(
    exec: &mut OrchestrationExecution,
    name: &str,
    reason: impl Into<String>,
    data: Option<Map<String, Value>>,
    now: i64,
) {
    let at = Timestamp(now).to_string();
    exec.decision_log.push(DecisionLogEntry {
        timestamp: at.clone(),
        decision: name.into(),
        reason: reason.into(),
        data,
        extra: Map::new(),
    });
    exec.updated_at = Some(at);
}

/// The phase's `tasks.md`: `specs/{phase}-*/tasks.md` (specflow's layout), else the only or
/// newest `specs/*/tasks.md`, else `tasks.md` at the top.
pub fn find_tasks(project: &std::path::Path, phase: Option<&str>) -> Option<PathBuf> {
    let specs = project.join("specs");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(&specs)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path().join("tasks.md"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    if let Some(n) = phase.filter(|n| !n.is_empty()) {
        if let Some(p) = candidates.iter().find(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str())
                .is_some_and(|d| d.starts_with(n))
        }) {
            return Some(p.clone());
        }
    }
    candidates
        .iter()
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .cloned()
        .or_else(|| Some(project.join("tasks.md")).filter(|p| p.is_file()))
}

/// Wake-ups for the loop. Every waiter sees every wake-up, including one that came while it
/// was busy rather than waiting (the seed's event-sleep fix: its single callback per run was
/// overwritten by the second waiter, and a wake-up between two sleeps was lost).
#[derive(Clone, Debug)]
pub struct Wake {
    tx: Arc<watch::Sender<u64>>,
}

impl Default for Wake {
    fn default() -> Self {
        Wake::new()
    }
}

impl Wake {
    /// A new set of wake-ups.
    pub fn new() -> Self {
        Wake {
            tx: Arc::new(watch::channel(0).0),
        }
    }

    /// Wakes every waiter (a file changed, the user pressed something).
    pub fn wake(&self) {
        self.tx.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// A waiter that sees the wake-ups from now on.
    pub fn waiter(&self) -> Waiter {
        Waiter {
            rx: self.tx.subscribe(),
            _tx: self.tx.clone(),
        }
    }
}

/// One waiter of a [`Wake`].
#[derive(Debug)]
pub struct Waiter {
    rx: watch::Receiver<u64>,
    // Keeps the channel open, so `changed()` never fails and turns the wait into a spin.
    _tx: Arc<watch::Sender<u64>>,
}

impl Waiter {
    /// Sleeps `ms`, or less if woken (or if a wake-up came since the last sleep). Returns
    /// whether it was woken.
    pub async fn sleep_or_wake(&mut self, ms: u64) -> bool {
        tokio::select! {
            r = self.rx.changed() => {
                self.rx.borrow_and_update();
                r.is_ok()
            }
            _ = tokio::time::sleep(Duration::from_millis(ms)) => false,
        }
    }
}

/// Runs orchestration `id` until it is over: clears orphaned runner files (refusing when
/// another live process runs it), records this runner (pid, start time), iterates, waits for
/// a wake-up or `poll` between iterations, and removes the runner file at the end.
/// `on_iteration` sees every iteration. Returns the last decision.
pub async fn run(
    deps: Arc<dyn Deps>,
    id: &str,
    wake: &Wake,
    poll: Duration,
    mut on_iteration: impl FnMut(&Iteration),
) -> Result<Decision, RunnerError> {
    let files = deps.files().clone();
    let me = std::process::id();
    // Held for the whole run: a second runner of the same run, even one started in the same
    // instant, finds it taken.
    let Some(_runner_lock) = files.try_lock_runner(id)? else {
        let pid = files
            .reconcile_runners()?
            .into_iter()
            .find(|r| r.orchestration_id == id)
            .map_or(0, |r| r.pid);
        return Err(RunnerError::AlreadyRunning { id: id.into(), pid });
    };
    for r in files.reconcile_runners()? {
        if r.orchestration_id == id && r.pid != me {
            return Err(RunnerError::AlreadyRunning {
                id: id.into(),
                pid: r.pid,
            });
        }
    }
    files.write_runner(&RunnerRecord {
        orchestration_id: id.into(),
        pid: me,
        started_at: deps.now_ms(),
    })?;
    let result = run_loop(deps, id, wake, poll, &mut on_iteration).await;
    let _ = files.clear_runner(id);
    result
}

async fn run_loop(
    deps: Arc<dyn Deps>,
    id: &str,
    wake: &Wake,
    poll: Duration,
    on_iteration: &mut impl FnMut(&Iteration),
) -> Result<Decision, RunnerError> {
    let mut waiter = wake.waiter();
    let poll_ms = u64::try_from(poll.as_millis()).unwrap_or(u64::MAX);
    let mut agains = 0;
    loop {
        let (d, i) = (deps.clone(), id.to_string());
        // The files, the lock and the workflow lookups block: off the async threads.
        let it = tokio::task::spawn_blocking(move || iterate(&*d, &i))
            .await
            .map_err(|e| RunnerError::Task(e.to_string()))??;
        on_iteration(&it);
        match it.next {
            Next::Stop => return Ok(it.decision),
            // Going on at once is for a few steps of bookkeeping in a row; a run that keeps
            // asking for it without settling is polled instead of spinning.
            Next::Again if agains < MAX_AGAIN => {
                agains += 1;
                tokio::task::yield_now().await;
                continue;
            }
            Next::Again | Next::Poll => {
                waiter.sleep_or_wake(poll_ms).await;
            }
            Next::Backoff(ms) => {
                waiter.sleep_or_wake(ms).await;
            }
        }
        agains = 0;
    }
}
