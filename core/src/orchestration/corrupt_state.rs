//! The orchestration machine's stages for case 1 of the helper: the state file missing or
//! corrupt (G3.2–G3.6).

use super::decision::{Action, Decision};
use super::iteration::Next;
use super::journal::{escalate, log as log_entry};
use super::machine::{Orchestrator, Stage, SETTLE_PAUSE_MS};
use super::machine_io::{Effect, Input, Read, StateRead};
use super::rebuild::{heuristic_state, started_phase};
use super::recovery::{recovered_state, HelperCase};
use super::specflow_files::{ExecutionStatus, OrchestrationExecution, OrchestrationState};
use serde_json::json;

impl Orchestrator {
    /// Case 1 begins: a writer that does not write atomically leaves the file empty or
    /// half-written for a moment, so it is read again a few times before it counts as broken.
    pub(super) fn settle(&mut self, error: String, reads_left: u32) {
        self.emit(Effect::Pause(SETTLE_PAUSE_MS));
        self.read(Read::STATE);
        self.stage = Stage::Settling { error, reads_left };
    }

    /// The stages of case 1, the state file missing or corrupt (G3.2–G3.6): backed up first,
    /// then the helper is asked, then the heuristic (the run's own step and phase, or the git
    /// branch), and without either the run needs attention. A run that already needs
    /// attention is not asked about again. Returns whether `input` was one it waited for.
    pub(super) fn recovering(&mut self, stage: Stage, input: Input, now_ms: i64) -> bool {
        let readable = |state: &StateRead| matches!(state, StateRead::Read(_));
        match (stage, input) {
            (Stage::Settling { error, reads_left }, Input::Files { state, .. }) => {
                if readable(&state) {
                    self.readable_again();
                } else if reads_left > 1 {
                    self.settle(error, reads_left - 1);
                } else {
                    self.emit(Effect::Lock);
                    self.read(Read::RUN);
                    self.stage = Stage::CheckingRun { error };
                }
            }
            (
                Stage::CheckingRun { error },
                Input::Files {
                    execution: Some(exec),
                    ..
                },
            ) => {
                if exec.status.is_finished() {
                    self.emit(Effect::Unlock);
                    let d =
                        Decision::new(Action::Stop, format!("Orchestration is {}", exec.status));
                    self.finish(d, false, Next::Stop);
                } else if exec.status == ExecutionStatus::NeedsAttention {
                    self.emit(Effect::Unlock);
                    let d = Decision::new(
                        Action::Wait,
                        format!("State unreadable, needs attention: {error}"),
                    );
                    self.finish(d, false, Next::Poll);
                } else {
                    self.emit(Effect::BackupState);
                    self.emit(Effect::Unlock);
                    let context = json!({
                        "projectPath": self.project_dir,
                        "file": self.state_file,
                        "error": error,
                    });
                    self.emit(Effect::AskHelper {
                        case: HelperCase::CorruptState,
                        context,
                    });
                    self.stage = Stage::AskedCorrupt { error };
                }
            }
            (Stage::AskedCorrupt { error }, Input::HelperAnswer(answer)) => {
                self.emit(Effect::Lock);
                self.read(Read::RUN_AND_STATE);
                self.stage = Stage::Rereading { error, answer };
            }
            (
                Stage::Rereading { error, answer },
                Input::Files {
                    execution: Some(exec),
                    state,
                },
            ) => {
                if readable(&state) {
                    // Repaired meanwhile (by the user or a sub-command): nothing to recover.
                    self.emit(Effect::Unlock);
                    self.readable_again();
                } else if let Some(s) = recovered_state(answer.as_ref()) {
                    self.rebuilt(error, exec, s, "state_recovered", "Recovered by the helper");
                } else if started_phase(&exec).is_some() {
                    let s = heuristic_state(&exec, None);
                    self.heuristic(error, exec, s, now_ms);
                } else {
                    self.emit(Effect::ReadBranch);
                    self.stage = Stage::ReadingBranch { error, exec };
                }
            }
            (Stage::ReadingBranch { error, exec }, Input::Branch(branch)) => {
                let s = heuristic_state(&exec, branch.as_deref());
                self.heuristic(error, exec, s, now_ms);
            }
            (
                Stage::Confirming {
                    error,
                    mut exec,
                    state,
                    log,
                    why,
                },
                Input::Files { state: now, .. },
            ) => {
                if readable(&now) {
                    self.emit(Effect::Unlock);
                    self.readable_again();
                } else {
                    self.emit(Effect::WriteState(state));
                    log_entry(
                        &mut exec,
                        log,
                        format!("{why}; it was {error}"),
                        None,
                        now_ms,
                    );
                    self.emit(Effect::WriteExecution(exec));
                    self.emit(Effect::Unlock);
                    self.finish(Decision::new(Action::Wait, why), true, Next::Again);
                }
            }
            (stage, _) => {
                self.stage = stage;
                return false;
            }
        }
        true
    }

    fn heuristic(
        &mut self,
        error: String,
        mut exec: OrchestrationExecution,
        state: Option<OrchestrationState>,
        now_ms: i64,
    ) {
        match state {
            Some(s) => self.rebuilt(
                error,
                exec,
                s,
                "state_heuristic_recovered",
                "Rebuilt from the run's step and phase",
            ),
            None => {
                let issue = format!("Could not recover state: {error}");
                escalate(&mut exec, &issue, None, now_ms);
                self.emit(Effect::WriteExecution(exec));
                self.emit(Effect::Unlock);
                self.finish(
                    Decision::new(Action::NeedsAttention, issue),
                    true,
                    Next::Poll,
                );
            }
        }
    }

    /// A rebuilt state is written only after a second backup (the first may predate a later
    /// write to the broken file: what is overwritten is always saved), and only if the file
    /// is still unreadable.
    fn rebuilt(
        &mut self,
        error: String,
        exec: OrchestrationExecution,
        state: OrchestrationState,
        log: &'static str,
        why: &'static str,
    ) {
        self.emit(Effect::BackupState);
        self.read(Read::STATE);
        self.stage = Stage::Confirming {
            error,
            exec,
            state,
            log,
            why,
        };
    }

    fn readable_again(&mut self) {
        self.finish(
            Decision::new(Action::Wait, "State file readable again"),
            false,
            Next::Again,
        );
    }
}
