//! The runner: a loop that reads, feeds the orchestration machine
//! ([`Orchestrator`]), and carries out its
//! effects — every decision is the machine's; this file reads, writes, spawns and waits.
//!
//! One [`iterate`] is one machine: fed [`Input::Begin`], then drained as the core's drain
//! rule says (each effect in order; an effect that asks for an answer is the last of its
//! drain, and its answer is fed back). The machine keeps the project lock to short
//! stretches, with the slow work (a lookup before the lock, spawn, kill, helper model)
//! between them, never under it.

pub use super::deps::{Deps, Guard};
pub use super::project_files::find_tasks;
use super::project_files::{FileError, RunnerRecord};
pub use super::wake::{Waiter, Wake};
use headspace_core::orchestration::{
    acknowledged, linked, Action, Decision, Effect, Input, Need, OrchestrationExecution,
    OrchestrationState, Orchestrator, Read, StateRead, WorkflowView,
};
pub use headspace_core::orchestration::{
    HelperCase, Iteration, Next, SpawnRequest, BLOCKED_TASKS_KEY, MAX_SPAWN_FAILURES, PHASE_KEY,
    SPAWN_FAILURES_KEY, SPAWN_INTENT_KEY, STALE_ACK_KEY,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The most iterations in a row that go on without waiting.
const MAX_AGAIN: u32 = 20;

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

/// The linked workflow as it is now, its silence counted from a helper's "it is alive"
/// when that came later.
pub fn look_up(
    deps: &dyn Deps,
    state: &OrchestrationState,
    execution: &OrchestrationExecution,
) -> Option<WorkflowView> {
    let id = linked(state, execution)?;
    Some(acknowledged(deps.lookup_workflow(id)?, execution, id))
}

/// A new machine for the project of `deps`.
pub fn machine(deps: &dyn Deps) -> Orchestrator {
    let files = deps.files();
    Orchestrator::new(
        files.dir().to_string_lossy(),
        files.state_path().to_string_lossy(),
    )
}

/// One iteration of the loop for run `id`: a machine fed [`Input::Begin`] and drained.
pub fn iterate(deps: &dyn Deps, id: &str) -> Result<Iteration, FileError> {
    let mut machine = machine(deps);
    let mut lock = None;
    let mut outcome = Outcome::default();
    let mut input = Some(Input::Begin);
    while let Some(now) = input.take() {
        machine.handle(deps.now_ms(), now);
        while let Some(effect) = machine.poll_effect() {
            input = execute(deps, id, effect, &mut lock, &mut outcome)?.or(input);
        }
    }
    Ok(Iteration {
        decision: outcome
            .decision
            .unwrap_or_else(|| Decision::new(Action::Wait, "No decision")),
        logged: outcome.logged,
        next: outcome.next.unwrap_or(Next::Poll),
    })
}

/// What an iteration's effects reported: its decision and its wake-up.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The decision taken.
    pub decision: Option<Decision>,
    /// Whether it was logged.
    pub logged: bool,
    /// The wake-up asked for.
    pub next: Option<Next>,
}

/// Carries out one effect of the machine for run `id`, holding the project lock in `lock`
/// from `Lock` to `Unlock`. Returns the answer to feed back, for an effect that asks for
/// one. A file that cannot be read or written as the effect needs ends the iteration.
pub fn execute(
    deps: &dyn Deps,
    id: &str,
    effect: Effect,
    lock: &mut Option<Guard>,
    outcome: &mut Outcome,
) -> Result<Option<Input>, FileError> {
    let answer = match effect {
        Effect::Lock => {
            *lock = Some(deps.lock()?);
            None
        }
        Effect::Unlock => {
            *lock = None;
            None
        }
        Effect::Read(what) => Some(read(deps, id, what)?),
        Effect::LookUp(wf) => Some(match deps.lookup_workflow(&wf) {
            None if deps.never_started(&wf) => Input::NeverStarted,
            view => Input::Workflow(view),
        }),
        Effect::ReadTasks(phase) => Some(Input::Tasks(deps.read_tasks(phase.as_deref()))),
        Effect::ReadBranch => Some(Input::Branch(deps.current_branch())),
        Effect::Spawn {
            request,
            workflow_id,
            ..
        } => Some(Input::Spawned(deps.spawn_as(&request, &workflow_id))),
        Effect::AskHelper { case, context } => Some(Input::HelperAnswer(match case {
            HelperCase::CorruptState => recover_state(deps, context),
            HelperCase::StaleWorkflow => handle_stale(deps, context),
            HelperCase::FailedStep => handle_failed(deps, context),
        })),
        Effect::WriteState(s) => {
            deps.write_state(&s)?;
            None
        }
        Effect::WriteExecution(e) => {
            deps.write_execution(&e)?;
            None
        }
        Effect::BackupState => {
            deps.backup_state()?;
            None
        }
        Effect::Kill(wf) => {
            deps.kill(&wf);
            None
        }
        Effect::Pause(ms) => {
            std::thread::sleep(Duration::from_millis(ms));
            None
        }
        Effect::LogDecision { decision, logged } => {
            outcome.decision = Some(decision);
            outcome.logged = logged;
            None
        }
        Effect::Wake(next) => {
            outcome.next = Some(next);
            None
        }
        // A user command's answer: not part of an iteration.
        Effect::UserAnswer(_) => None,
    };
    Ok(answer)
}

/// The files as `what` asks for them (see [`Need`]).
pub fn read(deps: &dyn Deps, id: &str, what: Read) -> Result<Input, FileError> {
    let execution = match what.execution {
        Need::Skip => None,
        Need::Optional => deps.read_execution(id).ok(),
        Need::Recoverable | Need::Required => Some(deps.read_execution(id)?),
    };
    let state = match what.state {
        Need::Skip => StateRead::NotRead,
        need => match deps.read_state() {
            Ok(s) => StateRead::Read(s),
            Err(e)
                if need == Need::Optional || (need == Need::Recoverable && e.is_recoverable()) =>
            {
                StateRead::Unreadable(e.to_string())
            }
            Err(e) => return Err(e),
        },
    };
    Ok(Input::Files { execution, state })
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

/// Case 1: the state file is missing or corrupt (still, after a few re-reads). The machine
/// has backed it up; its fallbacks are the heuristic, then the user (G3.2–G3.6).
fn recover_state(deps: &dyn Deps, context: Value) -> Option<Value> {
    ask_helper(deps, HelperCase::CorruptState, context)
}

/// Case 2: a running workflow has been silent for more than 10 minutes (G3.7–G3.10).
fn handle_stale(deps: &dyn Deps, context: Value) -> Option<Value> {
    ask_helper(deps, HelperCase::StaleWorkflow, context)
}

/// Case 3: the step or a batch failed, with heal attempts left (G3.11–G3.16).
fn handle_failed(deps: &dyn Deps, context: Value) -> Option<Value> {
    ask_helper(deps, HelperCase::FailedStep, context)
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
    files.write_runner(&RunnerRecord::of_this_process(id, deps.now_ms()))?;
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
