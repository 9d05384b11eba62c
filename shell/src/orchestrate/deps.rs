//! What the runner needs from the world, behind one trait ([`Deps`]) so the whole loop runs
//! in tests and in the simulation: the project's files and lock, workflows, the helper
//! model, git and the clock.

use super::project_files::{backup, find_tasks, FileError, ProjectFiles};
use headspace_core::orchestration::{
    HelperCase, OrchestrationExecution, OrchestrationState, SpawnRequest, WorkflowView,
};
use serde_json::Value;
use std::path::PathBuf;

/// A held lock; dropping it releases the lock.
pub type Guard = Box<dyn std::any::Any + Send>;

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
        backup(&self.files().state_path())
    }
    /// The text of the `tasks.md` of phase `number`, if there is one.
    fn read_tasks(&self, number: Option<&str>) -> Option<String> {
        let path = find_tasks(self.files().dir(), number)?;
        std::fs::read_to_string(path).ok()
    }
    /// The project's git branch, for rebuilding a lost state.
    fn current_branch(&self) -> Option<String> {
        None
    }
    /// The workflow `id` as it is now; `None` when it cannot be found.
    fn lookup_workflow(&self, id: &str) -> Option<WorkflowView>;
    /// Whether workflow `id`, not found, certainly never started (it has no record, which is
    /// written before any start), rather than perhaps out of reach; `false` when unsure.
    fn never_started(&self, id: &str) -> bool {
        let _ = id;
        false
    }
    /// Starts a workflow; its id, or why it could not start.
    fn spawn(&self, req: &SpawnRequest) -> Result<String, String>;
    /// Starts a workflow under the id `id` the machine chose (and recorded in its spawn
    /// intent first), so that a runner that dies before recording it can be followed by
    /// one that finds it. By default the id is the implementor's own ([`Deps::spawn`]).
    fn spawn_as(&self, req: &SpawnRequest, id: &str) -> Result<String, String> {
        let _ = id;
        self.spawn(req)
    }
    /// Stops a workflow (best effort).
    fn kill(&self, id: &str);
    /// Asks the helper model; `None` when there is none or it gave no usable answer.
    fn helper(&self, case: HelperCase, context: &Value) -> Option<Value>;
    /// Now, in ms since the epoch.
    fn now_ms(&self) -> i64;
}
