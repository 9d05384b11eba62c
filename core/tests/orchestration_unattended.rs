//! A run a user can leave alone (issue 19): the seed's loop order in `decide_checked`
//! (gates, then validation, then the terminal states), what an agent's step costs from its
//! transcript's `usage`, and tasks that stay skipped until the user unblocks them.

use headspace_core::orchestration::{
    batch_context, blocked_tasks, decide_checked, status_json, user_command, Action, BatchItem,
    BatchStatus, ExecutionStatus, OrchestrationExecution, OrchestrationState, RecoveryContext,
    UserCommand, BLOCKED_TASKS_KEY,
};
use headspace_core::usage::{transcript_cost_usd, PriceTable, Tokens, UsageTally};
use headspace_core::Timestamp;
use serde_json::json;

const T0: &str = "2026-03-02T09:00:00.000Z";
const HOUR: i64 = 3_600_000;

fn t0() -> i64 {
    Timestamp::parse_rfc3339(T0).unwrap().millis()
}

fn now() -> i64 {
    t0() + HOUR
}

fn state(step: &str, index: i64, status: &str) -> OrchestrationState {
    serde_json::from_value(json!({
        "orchestration": {
            "phase": {"number": "0010", "name": "core"},
            "step": {"current": step, "index": index, "status": status}
        }
    }))
    .unwrap()
}

fn exec(phase: &str, status: &str) -> OrchestrationExecution {
    serde_json::from_value(json!({
        "id": "run-1",
        "status": status,
        "config": {"budget": {"maxTotal": 10.0}},
        "currentPhase": phase,
        "batches": {"total": 0, "current": 0, "items": []},
        "startedAt": T0,
        "decisionLog": [],
        "totalCostUsd": 0
    }))
    .unwrap()
}

// ============================== the seed's loop order ==============================

#[test]
fn a_run_over_budget_fails_on_the_budget_even_when_its_state_is_inconsistent() {
    // The step index is wrong (validation would say needs_attention), and the run is over.
    let s = state("analyze", 3, "in_progress");
    let mut e = exec("analyze", "running");
    e.total_cost_usd = 12.5;
    let d = decide_checked(&s, &e, None, now());
    assert_eq!(d.action, Action::Fail, "{d:?}");
    assert_eq!(d.reason, "Budget exceeded: $12.50 (limit $10.00)");
    // Within the budget, the inconsistency is what it is about.
    e.total_cost_usd = 1.0;
    let d = decide_checked(&s, &e, None, now());
    assert_eq!(d.action, Action::NeedsAttention);
    assert_eq!(d.reason, "Step index mismatch: analyze should be 1, got 3");
}

#[test]
fn a_run_running_too_long_is_stopped_by_the_gate_before_validation() {
    let s = state("analyze", 3, "in_progress");
    let e = exec("analyze", "running");
    let d = decide_checked(&s, &e, None, t0() + 5 * HOUR);
    assert_eq!(d.action, Action::NeedsAttention);
    assert_eq!(d.reason, "Orchestration running too long");
}

#[test]
fn g7_6_a_needs_attention_run_without_a_recovery_context_is_reported() {
    let s = state("design", 0, "in_progress");
    let e = exec("design", "needs_attention");
    assert!(e.recovery_context.is_none());
    let d = decide_checked(&s, &e, None, now());
    assert_eq!(d.action, Action::NeedsAttention, "{d:?}");
    assert_eq!(d.reason, "needs_attention status requires recoveryContext");

    // With its context it waits for the user, even with the inconsistency it was raised for.
    let mut e = e;
    e.recovery_context = Some(RecoveryContext {
        issue: "Step index mismatch".into(),
        options: vec![],
        failed_workflow_id: None,
        extra: Default::default(),
    });
    let broken = state("design", 4, "in_progress");
    let d = decide_checked(&broken, &e, None, now());
    assert_eq!(
        (d.action, d.reason.as_str()),
        (
            Action::Wait,
            "Orchestration needs attention: waiting for the user"
        )
    );
}

#[test]
fn a_paused_run_over_budget_fails_and_an_inconsistent_paused_run_waits() {
    let broken = state("design", 4, "in_progress");
    let mut e = exec("design", "paused");
    assert_eq!(
        decide_checked(&broken, &e, None, now()).action,
        Action::Wait
    );
    e.total_cost_usd = 10.0;
    assert_eq!(
        decide_checked(&broken, &e, None, now()).action,
        Action::Fail
    );
}

#[test]
fn a_cancelled_or_completed_run_ends_the_loop() {
    let s = state("design", 0, "not_started");
    for status in ["cancelled", "completed", "failed"] {
        let mut e = exec("design", status);
        // Not even an exhausted budget turns a finished run into a failure.
        e.total_cost_usd = 99.0;
        let d = decide_checked(&s, &e, None, now());
        assert_eq!(d.action, Action::Stop, "{status}");
        assert_eq!(d.reason, format!("Orchestration is {status}"));
    }
}

// ============================== usage and prices ==============================

fn assistant(id: &str, model: &str, at: &str, usage: serde_json::Value) -> String {
    json!({"type": "assistant", "timestamp": at, "requestId": "r",
           "message": {"id": id, "model": model, "role": "assistant", "usage": usage}})
    .to_string()
}

#[test]
fn the_shipped_price_table_reads_and_prices_by_model_family() {
    let p = PriceTable::builtin();
    let sonnet = p.price_of("claude-sonnet-4-5-20250929").unwrap();
    assert_eq!((sonnet.input, sonnet.output), (3.0, 15.0));
    let opus45 = p.price_of("claude-opus-4-5-20251101").unwrap();
    assert_eq!(opus45.input, 5.0, "the longest matching key wins");
    let opus41 = p.price_of("claude-opus-4-1-20250805").unwrap();
    assert_eq!(opus41.input, 15.0);
    // An unknown model is priced as the dearest, so a budget is never silently unspent.
    assert_eq!(p.price_of("some-new-model").unwrap().output, 75.0);
    // A user's table replaces entries.
    let mine = PriceTable::parse(
        r#"{"claude-sonnet-4": {"input": 1, "output": 2, "cache_write": 0, "cache_read": 0}}"#,
    )
    .unwrap();
    let p = p.overridden_by(mine);
    assert_eq!(p.price_of("claude-sonnet-4-5").unwrap().output, 2.0);
    assert!(PriceTable::parse("{\"x\": {\"input\": \"free\"}}").is_err());
}

#[test]
fn a_transcripts_usage_is_counted_once_per_message_from_the_steps_start() {
    let model = "claude-sonnet-4-5-20250929";
    let u = json!({"input_tokens": 1000, "output_tokens": 2000,
                   "cache_creation_input_tokens": 100000, "cache_read_input_tokens": 1000000});
    let text = [
        // Before the step: not its cost.
        assistant("msg_old", model, "2026-03-02T08:59:00.000Z", u.clone()),
        json!({"type": "user", "timestamp": T0, "message": {"role": "user", "content": "/flow.design"}}).to_string(),
        // One message written as two lines (two content blocks): counted once.
        assistant("msg_1", model, "2026-03-02T09:00:05.000Z", u.clone()),
        assistant("msg_1", model, "2026-03-02T09:00:05.100Z", u.clone()),
        "{\"type\": \"assistant\", \"message\": {\"usage\"".to_string(),
    ]
    .join("\n");
    let mut tally = UsageTally::default();
    tally.add_text(&text, Some(t0()));
    assert_eq!(
        tally.tokens(),
        Tokens {
            input: 1000,
            output: 2000,
            cache_creation: 100_000,
            cache_read: 1_000_000
        }
    );
    // 1000×3 + 2000×15 + 100000×3.75 + 1000000×0.30, per million: $0.708.
    let cost = transcript_cost_usd(&text, Some(t0()), &PriceTable::builtin());
    assert!((cost - 0.708).abs() < 1e-9, "{cost}");
    // Without the start, the earlier message counts too.
    let all = transcript_cost_usd(&text, None, &PriceTable::builtin());
    assert!((all - 2.0 * 0.708).abs() < 1e-9, "{all}");
}

// ============================== blocked tasks ==============================

fn batch(i: usize, tasks: &[&str]) -> BatchItem {
    BatchItem::new(
        i,
        format!("Section {i}"),
        tasks.iter().map(|t| t.to_string()).collect(),
    )
}

#[test]
fn skipped_tasks_stay_out_of_the_next_batch_until_unblocked() {
    let mut s = state("implement", 2, "in_progress");
    let mut e = exec("implement", "running");
    e.batches.items = vec![batch(0, &["T001", "T002"]), batch(1, &["T003", "T004"])];
    e.batches.items[0].status = BatchStatus::Completed;
    e.batches.total = 2;
    e.batches.current = 1;
    e.extra.insert(
        BLOCKED_TASKS_KEY.into(),
        json!([{"task": "T004", "reason": "needs an API key"}]),
    );
    let d = decide_checked(&s, &e, None, now());
    assert_eq!(d.action, Action::SpawnBatch);
    assert_eq!(
        d.context.as_deref(),
        Some("Execute tasks T003 in section \"Section 1\"")
    );
    // Shown to the user.
    let v = status_json(&e, &s, None, None, None);
    assert_eq!(v["blockedTasks"][0]["task"], "T004");
    assert_eq!(v["blockedTasks"][0]["reason"], "needs an API key");

    // Every task blocked: nothing to execute, said so.
    e.extra.insert(
        BLOCKED_TASKS_KEY.into(),
        json!([{"task": "T003"}, {"task": "T004"}, {"task": "T004"}]),
    );
    assert_eq!(blocked_tasks(&e), ["T003", "T004"]);
    assert!(batch_context(&e.batches.items[1], &e).starts_with("Nothing to execute"));

    // Unblocked by the user: logged, and the batch has its tasks again.
    user_command(UserCommand::Unblock, &mut s, &mut e, now()).unwrap();
    assert!(blocked_tasks(&e).is_empty());
    let last = e.decision_log.last().unwrap();
    assert_eq!(last.decision, "unblock");
    assert_eq!(last.reason, "Unblocked by the user: T003, T004");
    let d = decide_checked(&s, &e, None, now());
    assert_eq!(
        d.context.as_deref(),
        Some("Execute tasks T003, T004 in section \"Section 1\"")
    );
    // Nothing left to unblock: refused, files unchanged.
    let before = e.clone();
    assert!(user_command(UserCommand::Unblock, &mut s, &mut e, now()).is_err());
    assert_eq!(e, before);
    // A finished run is not changed.
    e.status = ExecutionStatus::Completed;
    e.extra
        .insert(BLOCKED_TASKS_KEY.into(), json!([{"task": "T001"}]));
    assert!(user_command(UserCommand::Unblock, &mut s, &mut e, now()).is_err());
}

// ============================== a runner that died while spawning ==============================

use headspace_core::orchestration::{
    Effect, Input, Next, Orchestrator, SpawnIntent, StateRead, Step, WorkflowStatus, WorkflowView,
    ORPHAN_BACKOFF_MS, ORPHAN_GRACE_MS, SPAWN_INTENT_KEY, SPAWN_INTENT_TTL_MS,
};

fn drain(m: &mut Orchestrator) -> Vec<Effect> {
    std::iter::from_fn(|| m.poll_effect()).collect()
}

/// A run whose runner recorded a spawn intent for design at `intent_ms`, naming `wf-dead`,
/// and died before recording the spawn.
fn orphaned(intent_ms: i64) -> (OrchestrationState, OrchestrationExecution) {
    orphaned_at(Step::Design, state("design", 0, "in_progress"), intent_ms)
}

/// A run in state `s` whose runner recorded a spawn intent for `step` at `intent_ms`, naming
/// `wf-dead`, and died before recording the spawn.
fn orphaned_at(
    step: Step,
    s: OrchestrationState,
    intent_ms: i64,
) -> (OrchestrationState, OrchestrationExecution) {
    let mut e = exec(&step.to_string(), "running");
    let skill = step.skill().expect("a step with a skill");
    let request = headspace_core::orchestration::SpawnRequest {
        step,
        skill,
        batch: None,
        healer: false,
        context: None,
    };
    e.extra.insert(
        SPAWN_INTENT_KEY.into(),
        serde_json::to_value(SpawnIntent {
            skill: request.skill.clone(),
            timestamp: intent_ms,
            workflow_id: Some("wf-dead".into()),
            request: Some(request),
        })
        .unwrap(),
    );
    (s, e)
}

/// Begins an iteration on `(s, e)` and feeds the locked read; the effects after it.
fn locked_read(
    m: &mut Orchestrator,
    s: &OrchestrationState,
    e: &OrchestrationExecution,
) -> Vec<Effect> {
    m.handle(now(), Input::Begin);
    drain(m);
    let files = |e: &OrchestrationExecution| Input::Files {
        execution: Some(e.clone()),
        state: StateRead::Read(s.clone()),
    };
    m.handle(now(), files(e));
    drain(m);
    m.handle(now(), files(e));
    drain(m)
}

/// A machine that read a run whose dead runner recorded its spawn intent at `intent_ms` and
/// now looks that workflow up (asserted).
fn looking_up_dead_spawn(intent_ms: i64) -> Orchestrator {
    let (s, e) = orphaned(intent_ms);
    let mut m = Orchestrator::new("/p", "/p/s.json");
    assert_eq!(
        locked_read(&mut m, &s, &e),
        [Effect::LookUp("wf-dead".into())]
    );
    m
}

/// The dead runner's workflow as a lookup finds it.
fn dead_spawn(status: WorkflowStatus, cost_usd: f64) -> WorkflowView {
    WorkflowView {
        id: "wf-dead".into(),
        status,
        last_activity_ms: now(),
        cost_usd,
    }
}

#[test]
fn a_workflow_started_by_a_runner_that_died_is_adopted_not_started_again() {
    let mut m = looking_up_dead_spawn(now() - SPAWN_INTENT_TTL_MS);
    m.handle(
        now(),
        Input::Workflow(Some(dead_spawn(WorkflowStatus::Running, 0.0))),
    );
    let fx = drain(&mut m);
    let Effect::WriteExecution(written) = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(written.executions.design.as_deref(), Some("wf-dead"));
    assert!(!written.extra.contains_key(SPAWN_INTENT_KEY));
    let last = written.decision_log.last().unwrap();
    assert_eq!(last.decision, "spawned");
    assert!(last.reason.contains("adopted"), "{}", last.reason);
    assert_eq!(fx[1], Effect::Unlock);
    assert!(
        !fx.iter().any(|f| matches!(f, Effect::Spawn { .. })),
        "not spawned again: {fx:?}"
    );
}

#[test]
fn a_dead_runners_spawn_that_never_started_is_spawned_again_and_a_fresh_intent_waits() {
    // Not found soon after: perhaps the server cannot be asked now; looked for again.
    let mut m = looking_up_dead_spawn(now() - SPAWN_INTENT_TTL_MS);
    m.handle(now(), Input::Workflow(None));
    let fx = drain(&mut m);
    assert!(
        !fx.iter().any(|f| matches!(f, Effect::Spawn { .. })),
        "{fx:?}"
    );
    assert!(
        fx.contains(&Effect::Wake(Next::Backoff(ORPHAN_BACKOFF_MS))),
        "{fx:?}"
    );

    // Still not found after the grace: it never started; spawned again, under a new id.
    let mut m = looking_up_dead_spawn(now() - ORPHAN_GRACE_MS);
    m.handle(now(), Input::Workflow(None));
    let fx = drain(&mut m);
    let spawned: Vec<&String> = fx
        .iter()
        .filter_map(|f| match f {
            Effect::Spawn { workflow_id, .. } => Some(workflow_id),
            _ => None,
        })
        .collect();
    assert_eq!(spawned.len(), 1, "{fx:?}");
    assert_ne!(spawned[0], "wf-dead");
    // The new intent names the id the workflow is started under, before it starts.
    let intent = fx.iter().find_map(|f| match f {
        Effect::WriteExecution(e) => e.extra.get(SPAWN_INTENT_KEY).cloned(),
        _ => None,
    });
    assert_eq!(intent.unwrap()["workflowId"], json!(spawned[0]));

    // A fresh intent may be a spawn still under way: no lookup, no spawn, a wait.
    let (s, e) = orphaned(now() - 1_000);
    let mut m = Orchestrator::new("/p", "/p/s.json");
    let fx = locked_read(&mut m, &s, &e);
    assert!(
        !fx.iter()
            .any(|f| matches!(f, Effect::Spawn { .. } | Effect::LookUp(_))),
        "{fx:?}"
    );
}

#[test]
fn a_dead_runners_spawn_with_no_record_is_spawned_again_without_the_grace() {
    // Its record (written before any start) is missing: it never started, so the minute's
    // wait for a lookup that could not reach it is not needed.
    let mut m = looking_up_dead_spawn(now() - SPAWN_INTENT_TTL_MS);
    m.handle(now(), Input::NeverStarted);
    let fx = drain(&mut m);
    let spawned = fx
        .iter()
        .filter(|f| matches!(f, Effect::Spawn { workflow_id, .. } if workflow_id != "wf-dead"))
        .count();
    assert_eq!(spawned, 1, "{fx:?}");
    assert!(
        !fx.contains(&Effect::Wake(Next::Backoff(ORPHAN_BACKOFF_MS))),
        "{fx:?}"
    );
}

#[test]
fn a_run_whose_last_step_a_dead_runner_started_completes_only_after_adopting_it() {
    // Found by killing the runner right after verify: the next one started merge and died
    // before recording it; merge's skill marked the step complete.
    let done = state("merge", 4, "complete");
    let fresh = now() - 1_000;
    let (mut s, mut e) = orphaned_at(Step::Merge, done.clone(), fresh);
    let d = headspace_core::orchestration::evaluate(&mut s, &mut e, None, now());
    assert_eq!(
        d.action,
        Action::Wait,
        "not completed while a spawn may be under way: {d:?}"
    );
    assert!(d.reason.contains("completing after it"), "{}", d.reason);

    // Once the intent is stale the workflow is adopted, its cost counted, and the run ends.
    let (s, e) = orphaned_at(Step::Merge, done, now() - SPAWN_INTENT_TTL_MS);
    let mut m = Orchestrator::new("/p", "/p/s.json");
    assert_eq!(
        locked_read(&mut m, &s, &e),
        [Effect::LookUp("wf-dead".into())]
    );
    let view = dead_spawn(WorkflowStatus::Completed, 0.25);
    m.handle(now(), Input::Workflow(Some(view.clone())));
    let fx = drain(&mut m);
    let Some(Effect::WriteExecution(adopted)) = fx.first() else {
        panic!("{fx:?}")
    };
    assert_eq!(adopted.total_cost_usd, 0.25);
    assert_eq!(adopted.executions.merge.as_deref(), Some("wf-dead"));
    let (mut s, mut e) = (s, adopted.clone());
    let d = headspace_core::orchestration::evaluate(&mut s, &mut e, Some(&view), now());
    assert_eq!(d.action, Action::Complete, "{d:?}");
    assert_eq!(e.total_cost_usd, 0.25, "counted once");
}

#[test]
fn a_transition_cut_between_its_two_writes_is_mended_not_escalated() {
    use headspace_core::orchestration::{evaluate, mend_torn_transition, ExecutionPhase};
    // The state moved on to analyze (and its spawn marked it in progress); the run did not.
    let mut s = state("analyze", 1, "in_progress");
    let mut e = exec("design", "running");
    e.executions.design = Some("wf-design".into());
    // The design workflow is the one looked up, so its cost (lost with the cut write) counts.
    assert_eq!(
        headspace_core::orchestration::linked(&s, &e),
        Some("wf-design")
    );
    let design = headspace_core::orchestration::WorkflowView {
        id: "wf-design".into(),
        status: headspace_core::orchestration::WorkflowStatus::Completed,
        last_activity_ms: now(),
        cost_usd: 0.25,
    };
    let d = evaluate(&mut s, &mut e, Some(&design), now());
    assert_eq!(e.total_cost_usd, 0.25);
    assert_eq!(d.action, Action::Spawn, "{d:?}");
    assert_eq!(d.skill.as_deref(), Some("flow.analyze"));
    assert_eq!(e.current_phase, Some(ExecutionPhase::Analyze));
    assert_eq!(e.decision_log.last().unwrap().decision, "mended");

    // Two steps apart is not a cut write: validation reports it.
    let s = state("implement", 2, "in_progress");
    let mut e = exec("design", "running");
    assert!(!mend_torn_transition(&s, &mut e, now()));
    let mut s = s;
    let d = evaluate(&mut s, &mut e, None, now());
    assert_eq!(d.action, Action::NeedsAttention);
    assert_eq!(
        d.reason,
        "Step mismatch: state has implement, execution has design"
    );
}
