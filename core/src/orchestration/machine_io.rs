//! The orchestration machine's inputs and effects (see the module documentation of
//! [`orchestration`](super) for the drain rule).

use super::decision::Decision;
use super::iteration::Next;
use super::recovery::HelperCase;
use super::spawn_request::SpawnRequest;
use super::specflow_files::{OrchestrationExecution, OrchestrationState};
use super::user::UserCommand;
use super::workflow::WorkflowView;
use serde_json::Value;

/// How a file must be read for a [`Read`] effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Not read at all.
    Skip,
    /// Read if it can be: any error is fed as absent (`None`, [`StateRead::Unreadable`]).
    Optional,
    /// A missing, empty or corrupt file is fed as [`StateRead::Unreadable`]; any other error
    /// ends the iteration with that error.
    Recoverable,
    /// Any error ends the iteration with that error.
    Required,
}

/// Which files to read, and how (answered by [`Input::Files`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    /// The run's file, `.specflow/workflows/orchestration-{id}.json`.
    pub execution: Need,
    /// The project state, `.specflow/orchestration-state.json`.
    pub state: Need,
}

impl Read {
    pub(super) const PEEK: Read = Read {
        execution: Need::Optional,
        state: Need::Optional,
    };
    pub(super) const FILES: Read = Read {
        execution: Need::Required,
        state: Need::Recoverable,
    };
    pub(super) const BOTH: Read = Read {
        execution: Need::Required,
        state: Need::Required,
    };
    pub(super) const RUN: Read = Read {
        execution: Need::Required,
        state: Need::Skip,
    };
    pub(super) const STATE: Read = Read {
        execution: Need::Skip,
        state: Need::Optional,
    };
    pub(super) const RUN_AND_STATE: Read = Read {
        execution: Need::Required,
        state: Need::Optional,
    };
}

/// The state file as read for an [`Input::Files`].
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // fed once per read, never stored in bulk
pub enum StateRead {
    /// Read and parsed.
    Read(OrchestrationState),
    /// Could not be read; why.
    Unreadable(String),
    /// Not asked for.
    NotRead,
}

/// What the shell feeds the machine.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // fed one at a time, never stored in bulk
pub enum Input {
    /// Start an iteration of the runner.
    Begin,
    /// The files a [`Effect::Read`] asked for.
    Files {
        /// The run, when asked for and readable.
        execution: Option<OrchestrationExecution>,
        /// The state.
        state: StateRead,
    },
    /// The workflow a [`Effect::LookUp`] asked for, as it is now; `None` when not found.
    Workflow(Option<WorkflowView>),
    /// The workflow a [`Effect::LookUp`] asked for has no record, from a shell that records
    /// each workflow before it starts it: it never started. Taken as `Workflow(None)`, except
    /// for a dead runner's spawn, which is then started again without waiting for a lookup
    /// that could not reach it (a shell that cannot tell answers `Workflow(None)`).
    NeverStarted,
    /// The text of the phase's `tasks.md` ([`Effect::ReadTasks`]), if there is one.
    Tasks(Option<String>),
    /// The project's git branch ([`Effect::ReadBranch`]), if it has one.
    Branch(Option<String>),
    /// The outcome of a [`Effect::Spawn`]: the workflow's id, or why it could not start.
    Spawned(Result<String, String>),
    /// The helper's answer to a [`Effect::AskHelper`]; `None` when there was none usable.
    HelperAnswer(Option<Value>),
    /// A user command, with the active run and the state read under the project lock.
    User {
        /// The command.
        command: UserCommand,
        /// The project state.
        state: OrchestrationState,
        /// The active run.
        execution: OrchestrationExecution,
    },
}

/// What the machine asks the shell to do, in order.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // drained one at a time, never stored in bulk
pub enum Effect {
    /// Take the project lock (held until [`Effect::Unlock`]).
    Lock,
    /// Release the project lock.
    Unlock,
    /// Read the files; answer with [`Input::Files`].
    Read(Read),
    /// Look the workflow up; answer with [`Input::Workflow`].
    LookUp(String),
    /// Read the phase's `tasks.md` (phase number given); answer with [`Input::Tasks`].
    ReadTasks(Option<String>),
    /// Read the project's git branch; answer with [`Input::Branch`].
    ReadBranch,
    /// Write the state file atomically.
    WriteState(OrchestrationState),
    /// Write the run's file atomically.
    WriteExecution(OrchestrationExecution),
    /// Copy the state file to `.bak` (before anything overwrites a broken one).
    BackupState,
    /// Start a workflow for `request` with `prompt` (typed into the agent's pane, or passed
    /// to a headless process); answer with [`Input::Spawned`].
    Spawn {
        /// What to start.
        request: SpawnRequest,
        /// The text sent: `/flow.design`, `/flow.implement <the batch>`.
        prompt: String,
        /// The id to start it under (recorded in the spawn intent beforehand); a shell that
        /// cannot choose ids answers with its own.
        workflow_id: String,
    },
    /// Stop a workflow (best effort).
    Kill(String),
    /// Ask the helper model about one of its three cases; answer with [`Input::HelperAnswer`].
    AskHelper {
        /// The case.
        case: HelperCase,
        /// What it is told.
        context: Value,
    },
    /// Wait this many ms, then go on draining (a writer caught mid-write settles).
    Pause(u64),
    /// The iteration's decision, and whether it was appended to the decision log.
    LogDecision {
        /// The decision.
        decision: Decision,
        /// Whether it was logged (a repeat is not).
        logged: bool,
    },
    /// The iteration is over; wake the loop as this says.
    Wake(Next),
    /// A user command is over: the run as written, or why it was refused.
    UserAnswer(Result<OrchestrationExecution, String>),
}
