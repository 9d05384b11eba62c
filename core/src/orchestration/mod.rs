//! # Orchestration: what the runner does next, decided purely
//!
//! Specflow runs a phase as five steps — design, analyze, implement (in batches), verify,
//! merge — each carried out by a sub-command workflow that marks `step.status = "complete"`
//! when done. The runner trusts that file: it reads the state, decides, acts, and waits. This
//! module is the deciding part, with no I/O and no clock (time is a parameter), so every
//! rule of the orchestration simplification plan is a unit-testable function.
//!
//! | piece | what it is |
//! |---|---|
//! | [`specflow_files`] | the two files' types: [`OrchestrationState`] (`.specflow/orchestration-state.json`) and [`OrchestrationExecution`] (`.specflow/workflows/orchestration-{id}.json`), read leniently and written back without loss; [`STEP_INDEX_MAP`], [`next_step`] |
//! | [`workflow`] | [`WorkflowView`]: what the shell found when it looked up the linked workflow |
//! | [`decision`] | [`Decision`] and [`Action`]: `{"action": "wait", "reason": "…", …}` |
//! | [`decide`](mod@decide) | [`decide()`](decide::decide): gates (budget, duration), batches ([`decide_batch`]), workflow status, step status (G1, G2) |
//! | [`validate`](mod@validate) | [`validate()`](validate::validate): the consistency checks (G7), each a [`Violation`] |
//! | [`apply`](mod@apply) | [`apply()`](apply::apply) / [`apply_to_state`]: a decision's bookkeeping on the files (decision log, batch index, heal attempts, status) |
//! | [`blocked`] | tasks the run skips ([`blocked_tasks`]), kept out of batch prompts ([`batch_context`]) until [`unblock_all`] |
//! | [`spawn`] | the spawn-intent guard: [`spawn_intent_is_stale`], [`spawn_check`] |
//! | [`observe`] | [`observe_workflow`]: the linked workflow's cost and end folded into the files before deciding |
//! | [`recovery`] | the helper's three cases and their fallback chains: [`recovered_state`], [`stale_recovery`], [`failed_recovery`] |
//! | [`tasks_md`] | [`parse_batches`]: implement's batches from `tasks.md` |
//! | [`lenient`] | unknown names kept as `Unknown(..)`, `null` kept as `null` |
//! | [`iteration`] | the rules around the matrix: [`evaluate`] (with the spawn guard), [`next_after`], [`is_repeat`], [`escalate`], [`log`] |
//! | [`spawn_request`](mod@spawn_request) | [`spawn_request()`](spawn_request::spawn_request), [`prompt_for`], [`record_spawn`]: what a spawning decision starts, and how its outcome is recorded |
//! | [`carry_out`](mod@carry_out) | a recovery plan carried out: [`carry_out()`](carry_out::carry_out), [`Diagnosed`], the helper's contexts |
//! | [`rebuild`] | [`heuristic_state`]: a lost state rebuilt from the run or the branch name |
//! | [`user`] | [`user_command`] (pause, resume, cancel, merge, confirm-gate), [`new_execution`], [`fresh_state`], [`link_run`], [`status_json`] |
//! | [`progress`] | a step's workflow seen through its agent's activity ([`follow_agent`]) or its headless process |
//! | [`machine`] / [`machine_io`] / [`corrupt_state`] / [`adoption`] | the [`Orchestrator`] machine, its [`Input`]s and [`Effect`]s |
//!
//! ## The orchestration machine ([`Orchestrator`])
//!
//! The second sans-IO machine of the crate, shaped like the turn core: the shell feeds
//! [`Input`]s and carries out [`Effect`]s; every decision is the machine's. One machine runs
//! one runner iteration (fed [`Input::Begin`]) or one user command (fed [`Input::User`]).
//!
//! | input | what the shell found |
//! |---|---|
//! | `Begin` | an iteration starts (a wake-up, the poll interval, or "go on at once") |
//! | `Files { execution, state }` | the files an `Effect::Read` asked for ([`StateRead`]) |
//! | `Workflow(view)` | the workflow an `Effect::LookUp` asked for (its agent's activity mapped by [`follow_agent`], or its process's exit) |
//! | `NeverStarted` | that workflow has no record, so it never started (`Workflow(None)` when the shell cannot tell) |
//! | `Tasks(text)` / `Branch(name)` | the phase's `tasks.md`, the git branch |
//! | `Spawned(result)` | the step's workflow id, or why it could not start |
//! | `HelperAnswer(answer)` | the helper model's answer, `None` when there was none |
//! | `User { command, state, execution }` | pause / resume / cancel / merge / confirm-gate, with the files read under the lock |
//!
//! | effect | what the shell does | what comes back |
//! |---|---|---|
//! | `Lock` / `Unlock` | take / release the project lock | — |
//! | `Read(Read)` | read the files as each [`Need`] says | `Input::Files` |
//! | `LookUp(id)` | look the workflow up (may ask the server) | `Input::Workflow` or `Input::NeverStarted` |
//! | `ReadTasks(phase)` / `ReadBranch` | read `tasks.md` / `git rev-parse` | `Input::Tasks` / `Input::Branch` |
//! | `WriteState` / `WriteExecution` / `BackupState` | write a file atomically / copy the state to `.bak` | — |
//! | `Spawn { request, prompt }` | start the step: send `prompt` to the agent's pane, or run it headless | `Input::Spawned` |
//! | `Kill(id)` | stop a workflow (best effort) | — |
//! | `AskHelper { case, context }` | ask the helper model about one of its three [`HelperCase`]s | `Input::HelperAnswer` |
//! | `Pause(ms)` | sleep, then go on draining | — |
//! | `LogDecision { decision, logged }` | report the iteration's decision (the CLI prints logged ones) | — |
//! | `Wake(next)` | the iteration is over: schedule the next as [`Next`] says | — |
//! | `UserAnswer(result)` | the user command is over: the run as written, or the refusal | — |
//!
//! **The drain rule.** Call [`Orchestrator::handle`] with the time and one input, then drain
//! [`Orchestrator::poll_effect`] until it returns `None`, carrying each effect out in order.
//! An effect that asks for an answer (`Read`, `LookUp`, `ReadTasks`, `ReadBranch`, `Spawn`,
//! `AskHelper`) is always the last of its drain: feed its answer with `handle`, and drain
//! again. A failed read the [`Need`] does not allow, or a failed write, ends the iteration
//! with that error (release the lock); the next iteration starts afresh from the files. The
//! lock is held from `Lock` to `Unlock` only, and slow effects (`Spawn`, `AskHelper`,
//! `Kill`, `LookUp` before the lock) never come while it is held. After `Wake` (or
//! `UserAnswer`) the machine is over ([`Orchestrator::is_over`]); the next iteration uses a
//! new one.
//!
//! One iteration is three short stretches under the lock with the slow work between them:
//! (0) the linked workflow looked up before the lock; (1) lock, read both files (an
//! unreadable state goes to [`corrupt_state`]'s stages), decide ([`evaluate`]), apply, log,
//! record a spawn intent, write, unlock; (2) spawn, or ask the helper about a stale workflow
//! or a failed step; (3) lock, re-read, record the spawn or carry out the recovery, write,
//! unlock. Two iterations at once cannot spawn a step twice: the second sees the first one's
//! intent (younger than 30 s) or its linked workflow, and waits.
//!
//! Unknown statuses are never a silent default: they decide [`Action::RecoverUnknown`] and log
//! an ERROR.

pub mod adoption;
pub mod apply;
pub mod blocked;
pub mod carry_out;
pub mod corrupt_state;
pub mod decide;
pub mod decision;
pub mod iteration;
pub mod journal;
pub mod lenient;
pub mod machine;
pub mod machine_io;
pub mod observe;
pub mod progress;
pub mod rebuild;
pub mod recovery;
pub mod spawn;
pub mod spawn_request;
pub mod specflow_files;
pub mod tasks_md;
pub mod user;
pub mod validate;
pub mod workflow;

pub use apply::{apply, apply_to_state};
pub use blocked::{batch_context, blocked_tasks, open_tasks, unblock_all};
pub use carry_out::{carry_out, failed_context, stale_context, unlink_current, Diagnosed};
pub use decide::{
    backoff_ms, decide, decide_batch, decide_checked, linked_workflow_id, MAX_DURATION_MS,
    STALE_THRESHOLD_MS,
};
pub use decision::{Action, Decision};
pub use iteration::{
    acknowledged, evaluate, is_repeat, linked, mend_torn_transition, next_after, spawns, Iteration,
    Next,
};
pub use journal::{
    escalate, log, BLOCKED_TASKS_KEY, MAX_SPAWN_FAILURES, PHASE_KEY, SPAWN_FAILURES_KEY,
    SPAWN_INTENT_KEY, STALE_ACK_KEY,
};
pub use lenient::Nullable;
pub use machine::{Orchestrator, SETTLE_PAUSE_MS, SETTLE_READS};
pub use machine_io::{Effect, Input, Need, Read, StateRead};
pub use observe::{observe_workflow, WORKFLOW_COSTS_KEY};
pub use progress::{
    activity_named, follow_agent, headless_exit, headless_running, Progress,
    HEADLESS_START_GRACE_MS,
};
pub use rebuild::{heuristic_state, phase_of_branch, started_phase};
pub use recovery::{
    failed_needs_helper, failed_recovery, recovered_state, stale_recovery, HelperCase, Recovery,
    RecoveryPlan,
};
pub use spawn::{
    orphaned_spawn, spawn_check, spawn_intent_is_stale, workflow_id_for, SpawnCheck, SpawnIntent,
    ORPHAN_BACKOFF_MS, ORPHAN_GRACE_MS, SPAWN_INTENT_TTL_MS,
};
pub use spawn_request::{link, prompt_for, record_spawn, spawn_request, SpawnRequest};
pub use specflow_files::{
    next_step, BatchItem, BatchStatus, Batches, Budget, DecisionLogEntry, ExecutionConfig,
    ExecutionPhase, ExecutionStatus, Executions, Orchestration, OrchestrationExecution,
    OrchestrationState, Phase, RecoveryContext, Step, StepState, StepStatus, UserGateStatus,
    STEP_INDEX_MAP, USER_ACTED_KEY,
};
pub use tasks_md::parse_batches;
pub use user::{
    fresh_state, link_run, new_execution, status_json, user_command, RunOptions, UserCommand,
    UserOutcome, DEFAULT_PHASE,
};
pub use validate::{validate, Violation};
pub use workflow::{WorkflowStatus, WorkflowView};
