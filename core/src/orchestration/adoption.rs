//! A runner that died while spawning: its spawn intent names the workflow it was starting
//! (chosen before the start) and what for. The next runner, once the intent is stale (no
//! spawn can still be under way), looks that workflow up and adopts it if it started,
//! instead of starting the step a second time.

use super::decision::{Action, Decision};
use super::iteration::Next;
use super::journal::SPAWN_INTENT_KEY;
use super::machine::{Orchestrator, Orphan, Stage, Work};
use super::machine_io::Effect;
use super::observe::count_cost;
use super::spawn::{orphaned_spawn, SpawnIntent, ORPHAN_BACKOFF_MS, ORPHAN_GRACE_MS};
use super::spawn_request::record_spawn;
use super::specflow_files::Step;
use super::workflow::{WorkflowStatus, WorkflowView};

impl Orchestrator {
    /// Stretch 1 with the files read under the lock. A stale spawn intent that names its
    /// workflow is a runner that died while spawning: that workflow is looked up first, and
    /// adopted if it started. Then the linked workflow, looked up again unless the early
    /// lookup was of the same one.
    pub(super) fn locked(
        &mut self,
        work: Work,
        early: Option<(String, Option<WorkflowView>)>,
        now_ms: i64,
    ) {
        let orphan = work
            .exec
            .extra
            .get(SPAWN_INTENT_KEY)
            .and_then(|v| serde_json::from_value::<SpawnIntent>(v.clone()).ok())
            .filter(|_| !work.exec.status.is_finished())
            .and_then(|i| {
                orphaned_spawn(&i, now_ms)
                    .map(|(wf, req)| (wf.to_string(), req.clone(), i.timestamp))
            });
        if let Some((workflow, request, intent_ms)) = orphan {
            self.emit(Effect::LookUp(workflow.clone()));
            self.stage = Stage::Adopting {
                work,
                early,
                orphan: Orphan {
                    workflow,
                    request,
                    intent_ms,
                },
            };
            return;
        }
        self.look_up_linked(work, early, now_ms);
    }

    /// The lookup of a dead runner's spawn: a workflow that started (and did not fail to) is
    /// recorded as this run's, as if its spawn had come back. One that cannot be found may be
    /// one the lookup cannot reach now (the server restarting): it is looked for again, with
    /// a backoff, for [`ORPHAN_GRACE_MS`] after the intent; after that, when it failed, or
    /// when it `never_started` (no record of it, which is written before any start), the step
    /// is spawned again as usual.
    pub(super) fn adopt(
        &mut self,
        mut work: Work,
        early: Option<(String, Option<WorkflowView>)>,
        orphan: Orphan,
        view: Option<WorkflowView>,
        never_started: bool,
        now_ms: i64,
    ) {
        let Orphan {
            workflow,
            request,
            intent_ms,
        } = orphan;
        let Some(view) = view else {
            if !never_started && now_ms.saturating_sub(intent_ms) < ORPHAN_GRACE_MS {
                self.emit(Effect::Unlock);
                let mut d = Decision::new(
                    Action::WaitWithBackoff,
                    format!("Looking for workflow {workflow}, started by a runner that died"),
                );
                d.backoff_ms = Some(ORPHAN_BACKOFF_MS);
                return self.finish(d, false, Next::Backoff(ORPHAN_BACKOFF_MS));
            }
            return self.look_up_linked(work, early, now_ms);
        };
        if view.status == WorkflowStatus::Failed {
            return self.look_up_linked(work, early, now_ms);
        }
        // The run moved past its step meanwhile (the step's skill marked it complete before
        // its last words): once adopted it would never be looked up again, nor its cost
        // counted; it is waited for, as a linked workflow would be, until it ends.
        let exec = &work.exec;
        let moved_on = work.state.orchestration.step.current.as_ref() != Some(&request.step)
            || (request.step == Step::Implement && request.batch != Some(exec.batches.current));
        if view.is_active() && moved_on {
            self.emit(Effect::Unlock);
            let mut d = Decision::new(
                Action::WaitWithBackoff,
                format!("Waiting for workflow {workflow}, started by a runner that died, to end"),
            );
            d.backoff_ms = Some(ORPHAN_BACKOFF_MS);
            return self.finish(d, false, Next::Backoff(ORPHAN_BACKOFF_MS));
        }
        record_spawn(&mut work.exec, &request, &Ok(workflow.clone()), now_ms);
        // Its cost now: the run may have moved past its step while the intent stood, and
        // then it is never looked up again.
        count_cost(&mut work.exec, &view);
        let reason = format!(
            "{} adopted as workflow {workflow} (its runner died before recording it)",
            request.skill
        );
        if let Some(entry) = work.exec.decision_log.last_mut() {
            entry.reason.clone_from(&reason);
        }
        self.emit(Effect::WriteExecution(work.exec));
        self.emit(Effect::Unlock);
        let mut d = Decision::new(Action::Wait, reason);
        d.workflow_id = Some(workflow);
        self.finish(d, true, Next::Again);
    }
}
