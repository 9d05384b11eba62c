//! The orchestration machine: one runner iteration (or one user command) as inputs in and
//! effects out, with the same shape as the turn core. See the module documentation of
//! [`orchestration`](super) for the inputs, the effects and the drain rule.

use super::apply::{apply, apply_to_state};
use super::carry_out::{carry_out, failed_context, stale_context, Diagnosed};
use super::decide::backoff_ms;
use super::decision::{Action, Decision};
use super::iteration::{acknowledged, evaluate, is_repeat, linked, next_after, spawns, Next};
use super::journal::{escalate, SPAWN_INTENT_KEY};
use super::machine_io::{Effect, Input, Read, StateRead};
use super::recovery::{
    failed_needs_helper, failed_recovery, stale_recovery, HelperCase, RecoveryPlan,
};
use super::spawn::{workflow_id_for, SpawnIntent};
use super::spawn_request::{prompt_for, record_spawn, spawn_request, SpawnRequest};
use super::specflow_files::{Batches, OrchestrationExecution, OrchestrationState, StepStatus};
use super::tasks_md::parse_batches;
use super::user::user_command;
use super::workflow::WorkflowView;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// The two files of an iteration, read under the lock and changed by its decision.
#[derive(Clone, Debug)]
pub(super) struct Work {
    pub(super) state: OrchestrationState,
    pub(super) exec: OrchestrationExecution,
}

/// What the iteration carries out after its first write.
enum Act {
    None,
    Spawn(SpawnRequest, String),
    Stale(Option<WorkflowView>),
    Failed,
}

/// A dead runner's spawn, as its intent names it.
pub(super) struct Orphan {
    /// The workflow it started (or was about to).
    pub(super) workflow: String,
    /// What for.
    pub(super) request: SpawnRequest,
    /// When the intent was recorded.
    pub(super) intent_ms: i64,
}

/// Where the machine is: what it waits for.
#[allow(clippy::large_enum_variant)] // one per machine, replaced whole at each input
pub(super) enum Stage {
    /// Not started: waits for `Begin` (or a user command).
    Idle,
    /// Waits for the files read without the lock, to look the linked workflow up early.
    Peeking,
    /// Waits for that early lookup.
    EarlyLookUp {
        workflow: String,
    },
    /// Waits for the files read under the lock (stretch 1).
    Reading {
        early: Option<(String, Option<WorkflowView>)>,
    },
    /// Waits for the lookup of a workflow the files link now, the early one being another.
    LookingUp {
        work: Work,
        workflow: String,
    },
    /// Waits for the lookup of the workflow a dead runner's spawn intent names.
    Adopting {
        work: Work,
        early: Option<(String, Option<WorkflowView>)>,
        orphan: Orphan,
    },
    /// Waits for `tasks.md`, to initialise implement's batches.
    ReadingTasks {
        work: Work,
        before: Work,
        decision: Decision,
    },
    /// Waits for the spawn's outcome (stretch 2).
    Spawning {
        request: SpawnRequest,
    },
    /// Waits for the run read under the lock, to record the spawn (stretch 3).
    RecordingSpawn {
        request: SpawnRequest,
        result: Result<String, String>,
    },
    /// Waits for the helper's diagnosis of a stale workflow.
    AskedStale {
        workflow: String,
        stale_minutes: i64,
    },
    /// Waits for the helper's diagnosis of a failed step.
    AskedFailed {
        decision: Decision,
        heals: u32,
        max: u32,
    },
    /// Waits for the files read under the lock, to carry a recovery plan out (stretch 3).
    CarryingOut {
        plan: RecoveryPlan,
        workflow: Option<String>,
        diagnosed: Diagnosed,
    },
    /// Waits for a re-read of an unreadable state (a writer may be mid-write).
    Settling {
        error: String,
        reads_left: u32,
    },
    /// Waits for the run, to see whether a broken state is worth recovering.
    CheckingRun {
        error: String,
    },
    /// Waits for the helper's rebuilt state.
    AskedCorrupt {
        error: String,
    },
    /// Waits for both files under the lock, to rebuild the state.
    Rereading {
        error: String,
        answer: Option<Value>,
    },
    /// Waits for the git branch, the heuristic's last source of a phase.
    ReadingBranch {
        error: String,
        exec: OrchestrationExecution,
    },
    /// Waits for a last read of the state before a rebuilt one is written over it.
    Confirming {
        error: String,
        exec: OrchestrationExecution,
        state: OrchestrationState,
        log: &'static str,
        why: &'static str,
    },
    Over,
}

/// How often, and how far apart, an unreadable state file is read again before it counts
/// as broken.
pub const SETTLE_READS: u32 = 3;
/// The pause between those reads, in ms.
pub const SETTLE_PAUSE_MS: u64 = 200;

/// One runner iteration, or one user command, as a machine: [`handle`](Orchestrator::handle)
/// an input, then drain [`poll_effect`](Orchestrator::poll_effect).
pub struct Orchestrator {
    pub(super) project_dir: String,
    pub(super) state_file: String,
    pub(super) stage: Stage,
    effects: VecDeque<Effect>,
    /// The decision of the iteration so far, and whether it was logged.
    outcome: Option<(Decision, bool)>,
}

impl Orchestrator {
    /// A machine for the project at `project_dir` whose state file is `state_file` (both
    /// only told to the helper).
    pub fn new(project_dir: impl Into<String>, state_file: impl Into<String>) -> Orchestrator {
        Orchestrator {
            project_dir: project_dir.into(),
            state_file: state_file.into(),
            stage: Stage::Idle,
            effects: VecDeque::new(),
            outcome: None,
        }
    }

    /// The next effect to carry out, in order; `None` when the machine waits for an input
    /// (or is over).
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// Whether the iteration (or command) is over.
    pub fn is_over(&self) -> bool {
        matches!(self.stage, Stage::Over) && self.effects.is_empty()
    }

    pub(super) fn emit(&mut self, e: Effect) {
        self.effects.push_back(e);
    }

    pub(super) fn finish(&mut self, decision: Decision, logged: bool, next: Next) {
        self.emit(Effect::LogDecision { decision, logged });
        self.emit(Effect::Wake(next));
        self.stage = Stage::Over;
    }

    /// Ends the iteration with the decision already taken, and `next`.
    pub(super) fn finish_taken(&mut self, next: Next) {
        let (d, logged) = self
            .outcome
            .take()
            .unwrap_or_else(|| (Decision::new(Action::Wait, "No decision"), false));
        self.finish(d, logged, next);
    }

    pub(super) fn read(&mut self, what: Read) {
        self.emit(Effect::Read(what));
    }

    /// Feeds `input`, which happened at `now_ms`. An input the machine does not wait for is
    /// a bug in the shell's drain: it is logged and ignored.
    pub fn handle(&mut self, now_ms: i64, input: Input) {
        let stage = std::mem::replace(&mut self.stage, Stage::Over);
        // Only a dead runner's spawn makes more of a workflow never started than of one not
        // found (see `adopt`).
        let input = match (&stage, input) {
            (Stage::Adopting { .. }, input) => input,
            (_, Input::NeverStarted) => Input::Workflow(None),
            (_, input) => input,
        };
        match (stage, input) {
            (
                _,
                Input::User {
                    command,
                    mut state,
                    mut execution,
                },
            ) => {
                let before = state.clone();
                match user_command(command, &mut state, &mut execution, now_ms) {
                    Ok(outcome) => {
                        if state != before {
                            self.emit(Effect::WriteState(state));
                        }
                        self.emit(Effect::WriteExecution(execution.clone()));
                        self.emit(Effect::Unlock);
                        if let Some(wf) = outcome.stop_workflow {
                            self.emit(Effect::Kill(wf));
                        }
                        self.emit(Effect::UserAnswer(Ok(execution)));
                    }
                    Err(why) => {
                        self.emit(Effect::Unlock);
                        self.emit(Effect::UserAnswer(Err(why)));
                    }
                }
            }
            (Stage::Idle, Input::Begin) => {
                self.read(Read::PEEK);
                self.stage = Stage::Peeking;
            }
            // The lookup may ask the server, which takes seconds while it restarts: it is
            // made before the lock is taken, and kept if the files still link that workflow.
            (Stage::Peeking, Input::Files { execution, state }) => {
                let linked_now = match (&execution, &state) {
                    (Some(e), StateRead::Read(s)) => linked(s, e).map(str::to_string),
                    _ => None,
                };
                match linked_now {
                    Some(wf) => {
                        self.emit(Effect::LookUp(wf.clone()));
                        self.stage = Stage::EarlyLookUp { workflow: wf };
                    }
                    None => self.lock_and_read(None),
                }
            }
            (Stage::EarlyLookUp { workflow }, Input::Workflow(view)) => {
                self.lock_and_read(Some((workflow, view)));
            }
            (
                Stage::Reading { early },
                Input::Files {
                    execution: Some(exec),
                    state,
                },
            ) => match state {
                StateRead::Read(state) => self.locked(Work { state, exec }, early, now_ms),
                StateRead::Unreadable(error) => {
                    self.emit(Effect::Unlock);
                    self.settle(error, SETTLE_READS);
                }
                StateRead::NotRead => {
                    self.emit(Effect::Unlock);
                    self.settle("the state file was not read".into(), SETTLE_READS);
                }
            },
            (
                Stage::Adopting {
                    work,
                    early,
                    orphan,
                },
                Input::Workflow(view),
            ) => self.adopt(work, early, orphan, view, false, now_ms),
            (
                Stage::Adopting {
                    work,
                    early,
                    orphan,
                },
                Input::NeverStarted,
            ) => self.adopt(work, early, orphan, None, true, now_ms),
            (Stage::LookingUp { work, workflow }, Input::Workflow(view)) => {
                let view = view.map(|v| acknowledged(v, &work.exec, &workflow));
                self.evaluate(work, view, now_ms);
            }
            (
                Stage::ReadingTasks {
                    mut work,
                    before,
                    decision,
                },
                Input::Tasks(text),
            ) => {
                let fallback = work
                    .exec
                    .config
                    .extra
                    .get("batchSizeFallback")
                    .and_then(Value::as_u64)
                    .unwrap_or(15) as usize;
                let items = parse_batches(&text.unwrap_or_default(), fallback);
                let exec = &mut work.exec;
                exec.batches = Batches {
                    total: items.len(),
                    current: 0,
                    items,
                    extra: std::mem::take(&mut exec.batches.extra),
                };
                exec.executions.implement.clear();
                self.write_and_act(work, before, decision, Act::None, now_ms);
            }
            (Stage::Spawning { request }, Input::Spawned(result)) => {
                self.emit(Effect::Lock);
                self.read(Read::RUN);
                self.stage = Stage::RecordingSpawn { request, result };
            }
            (
                Stage::RecordingSpawn { request, result },
                Input::Files {
                    execution: Some(mut exec),
                    ..
                },
            ) => {
                let failures = record_spawn(&mut exec, &request, &result, now_ms);
                self.emit(Effect::WriteExecution(exec));
                self.emit(Effect::Unlock);
                let next = match failures {
                    0 => Next::Poll,
                    n => Next::Backoff(backoff_ms(u32::try_from(n).unwrap_or(u32::MAX))),
                };
                self.finish_taken(next);
            }
            (
                Stage::AskedStale {
                    workflow,
                    stale_minutes,
                },
                Input::HelperAnswer(answer),
            ) => {
                let plan = stale_recovery(answer.as_ref(), stale_minutes);
                if plan.kill {
                    self.emit(Effect::Kill(workflow.clone()));
                }
                let diagnosed = Diagnosed::StaleWorkflow(workflow.clone());
                self.carry(plan, Some(workflow), diagnosed);
            }
            (
                Stage::AskedFailed {
                    decision,
                    heals,
                    max,
                },
                Input::HelperAnswer(answer),
            ) => {
                let plan = failed_recovery(answer.as_ref(), decision.error.as_deref(), heals, max);
                self.carry(plan, None, Diagnosed::failure(&decision));
            }
            (
                Stage::CarryingOut {
                    plan,
                    workflow,
                    diagnosed,
                },
                Input::Files {
                    execution: Some(mut exec),
                    state: StateRead::Read(mut state),
                },
            ) => {
                // The situation may have moved on by itself while the helper thought.
                if !diagnosed.still_holds(&state, &exec) || exec.status.is_finished() {
                    self.emit(Effect::Unlock);
                    return self.finish_taken(Next::Again);
                }
                let before = state.clone();
                let next = carry_out(&mut state, &mut exec, &plan, workflow.as_deref(), now_ms);
                if state != before {
                    self.emit(Effect::WriteState(state));
                }
                self.emit(Effect::WriteExecution(exec));
                self.emit(Effect::Unlock);
                self.finish_taken(next);
            }
            (stage, input) => {
                if !self.recovering(stage, input, now_ms) {
                    tracing::warn!(
                        "orchestration machine: an input it did not wait for was ignored"
                    );
                }
            }
        }
    }

    fn lock_and_read(&mut self, early: Option<(String, Option<WorkflowView>)>) {
        self.emit(Effect::Lock);
        self.read(Read::FILES);
        self.stage = Stage::Reading { early };
    }

    /// Stretch 1 with the files read under the lock (after [`locked`](Self::locked)'s
    /// check for a dead runner's spawn): the linked workflow, looked up again unless the
    /// early lookup was of the same one.
    pub(super) fn look_up_linked(
        &mut self,
        work: Work,
        early: Option<(String, Option<WorkflowView>)>,
        now_ms: i64,
    ) {
        let now_linked = linked(&work.state, &work.exec).map(str::to_string);
        match (early, now_linked) {
            (Some((wf, view)), Some(now_wf)) if wf == now_wf => {
                let view = view.map(|v| acknowledged(v, &work.exec, &wf));
                self.evaluate(work, view, now_ms);
            }
            (_, Some(now_wf)) => {
                self.emit(Effect::LookUp(now_wf.clone()));
                self.stage = Stage::LookingUp {
                    work,
                    workflow: now_wf,
                };
            }
            (_, None) => self.evaluate(work, None, now_ms),
        }
    }

    /// Decides, applies, and works out what the iteration carries out.
    fn evaluate(&mut self, mut work: Work, view: Option<WorkflowView>, now_ms: i64) {
        let before = work.clone();
        let decision = evaluate(&mut work.state, &mut work.exec, view.as_ref(), now_ms);
        apply(&mut work.exec, &decision, now_ms);
        apply_to_state(&mut work.state, &decision);
        let act = if spawns(&decision) {
            let req = spawn_request(&work.state, &work.exec, &decision);
            let id = workflow_id_for(&work.exec.id, now_ms, work.exec.decision_log.len());
            work.exec.extra.insert(
                SPAWN_INTENT_KEY.into(),
                json!(SpawnIntent {
                    skill: req.skill.clone(),
                    timestamp: now_ms,
                    workflow_id: Some(id.clone()),
                    request: Some(req.clone()),
                }),
            );
            // The step is under way from now, as far as the project is concerned.
            let step = &mut work.state.orchestration.step;
            if matches!(step.status.get(), None | Some(StepStatus::NotStarted)) {
                step.status = StepStatus::InProgress.into();
            }
            Act::Spawn(req, id)
        } else {
            match decision.action {
                Action::InitializeBatches => {
                    let phase = work
                        .state
                        .orchestration
                        .phase
                        .number
                        .get()
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    self.emit(Effect::ReadTasks(phase));
                    self.stage = Stage::ReadingTasks {
                        work,
                        before,
                        decision,
                    };
                    return;
                }
                Action::RecoverStale => Act::Stale(view),
                Action::RecoverFailed => Act::Failed,
                // Not one of the helper's cases: the user looks at it.
                Action::RecoverUnknown => {
                    escalate(&mut work.exec, &decision.reason, None, now_ms);
                    Act::None
                }
                _ => Act::None,
            }
        };
        self.write_and_act(work, before, decision, act, now_ms);
    }

    /// Writes what changed (a repeated decision with nothing else changed is not written),
    /// releases the lock, then starts the slow part: a spawn, or asking the helper.
    fn write_and_act(
        &mut self,
        work: Work,
        before: Work,
        decision: Decision,
        act: Act,
        now_ms: i64,
    ) {
        let state_changed = work.state != before.state;
        let logged = state_changed || !is_repeat(&before.exec, &work.exec);
        if logged {
            if state_changed {
                self.emit(Effect::WriteState(work.state.clone()));
            }
            self.emit(Effect::WriteExecution(work.exec.clone()));
        }
        self.emit(Effect::Unlock);
        self.outcome = Some((decision.clone(), logged));
        match act {
            Act::None => self.finish_taken(next_after(&decision, &work.exec)),
            Act::Spawn(request, workflow_id) => {
                let prompt = prompt_for(&request);
                self.emit(Effect::Spawn {
                    request: request.clone(),
                    prompt,
                    workflow_id,
                });
                self.stage = Stage::Spawning { request };
            }
            Act::Stale(view) => {
                let (context, stale_minutes) = stale_context(
                    &decision,
                    view.as_ref(),
                    &work.state,
                    &self.project_dir,
                    now_ms,
                );
                self.emit(Effect::AskHelper {
                    case: HelperCase::StaleWorkflow,
                    context,
                });
                let workflow = decision.workflow_id.clone().unwrap_or_default();
                self.stage = Stage::AskedStale {
                    workflow,
                    stale_minutes,
                };
            }
            Act::Failed => {
                let heals = work.exec.heal_attempts.unwrap_or(0);
                let max = work.exec.config.max_heal_attempts;
                // With the heal attempts used up the helper is not asked.
                if failed_needs_helper(heals, max) {
                    let context =
                        failed_context(&decision, &work.state, &work.exec, &self.project_dir);
                    self.emit(Effect::AskHelper {
                        case: HelperCase::FailedStep,
                        context,
                    });
                    self.stage = Stage::AskedFailed {
                        decision,
                        heals,
                        max,
                    };
                } else {
                    let plan = failed_recovery(None, decision.error.as_deref(), heals, max);
                    self.carry(plan, None, Diagnosed::failure(&decision));
                }
            }
        }
    }

    /// Stretch 3 of a recovery: under the lock, re-read and carry the plan out.
    fn carry(&mut self, plan: RecoveryPlan, workflow: Option<String>, diagnosed: Diagnosed) {
        self.emit(Effect::Lock);
        self.read(Read::BOTH);
        self.stage = Stage::CarryingOut {
            plan,
            workflow,
            diagnosed,
        };
    }
}
