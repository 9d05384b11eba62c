//! Starting a step's workflow: what to start for a spawning decision (skill, batch, the
//! prompt typed or passed), and how the outcome is recorded (the workflow linked to its step
//! or batch, or a failure counted until the run needs attention).

use super::decision::{Action, Decision};
use super::journal::{escalate, log, MAX_SPAWN_FAILURES, SPAWN_FAILURES_KEY, SPAWN_INTENT_KEY};
use super::specflow_files::{BatchStatus, OrchestrationExecution, OrchestrationState, Step};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A workflow to start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// What is typed or passed for a request: `/flow.design`, or `/flow.implement <the batch>`.
pub fn prompt_for(req: &SpawnRequest) -> String {
    match req
        .context
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        Some(c) => format!("/{} {c}", req.skill),
        None => format!("/{}", req.skill),
    }
}

/// The workflow a spawning decision starts.
pub fn spawn_request(
    state: &OrchestrationState,
    execution: &OrchestrationExecution,
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
            let i = decision.batch_index.unwrap_or(execution.batches.current);
            let b = execution.batches.items.get(i);
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
                    .and_then(|i| execution.batches.items.get(i))
                    .is_some_and(|b| !b.task_ids.is_empty())
            }),
        },
        _ => SpawnRequest {
            batch: (step == Step::Implement).then_some(execution.batches.current),
            step,
            skill,
            healer: false,
            context: None,
        },
    }
}

/// Records the outcome of starting `req` (the workflow's id, or why it could not start) in
/// the run, whose spawn intent it clears: the workflow is linked to its step or batch and
/// the failure count cleared, or the failure is counted and, at [`MAX_SPAWN_FAILURES`], the
/// run needs attention. Returns how many spawns in a row have failed now (0 when this one
/// started).
pub fn record_spawn(
    execution: &mut OrchestrationExecution,
    req: &SpawnRequest,
    result: &Result<String, String>,
    now_ms: i64,
) -> u64 {
    execution.extra.remove(SPAWN_INTENT_KEY);
    match result {
        Ok(wf) => {
            link(execution, req, wf);
            execution.extra.remove(SPAWN_FAILURES_KEY);
            let mut data = Map::new();
            data.insert("workflowId".into(), json!(wf));
            if let Some(i) = req.batch {
                data.insert("batchIndex".into(), json!(i));
            }
            log(
                execution,
                "spawned",
                format!("{} started as workflow {wf}", req.skill),
                Some(data),
                now_ms,
            );
            0
        }
        Err(e) => {
            let failures = execution
                .extra
                .get(SPAWN_FAILURES_KEY)
                .and_then(Value::as_u64)
                .unwrap_or(0)
                + 1;
            execution
                .extra
                .insert(SPAWN_FAILURES_KEY.into(), json!(failures));
            log(
                execution,
                "spawn_failed",
                format!("{}: {e}", req.skill),
                None,
                now_ms,
            );
            if failures >= MAX_SPAWN_FAILURES {
                escalate(
                    execution,
                    &format!("Could not start {} ({failures} attempts): {e}", req.skill),
                    None,
                    now_ms,
                );
            }
            failures
        }
    }
}

/// Ties workflow `wf` to what it works on, so the next lookups find it.
pub fn link(execution: &mut OrchestrationExecution, req: &SpawnRequest, wf: &str) {
    let e = &mut execution.executions;
    match &req.step {
        Step::Design => e.design = Some(wf.into()),
        Step::Analyze => e.analyze = Some(wf.into()),
        Step::Verify => e.verify = Some(wf.into()),
        Step::Merge => e.merge = Some(wf.into()),
        Step::Implement => {
            let i = req.batch.unwrap_or(execution.batches.current);
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
            if let Some(b) = execution.batches.items.get_mut(i) {
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
