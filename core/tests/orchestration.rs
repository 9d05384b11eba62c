//! The orchestration plan's checklists, one named test per item: the decision matrix (G1),
//! implement's batch state machine (G2) and state validation (G7), plus the files' round trip
//! and the bookkeeping of applied decisions.

use headspace_core::orchestration::*;
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const T0: &str = "2026-03-02T09:00:00.000Z";
const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;

fn t0() -> i64 {
    Timestamp::parse_rfc3339(T0).unwrap().millis()
}

/// One hour into the run: well inside the duration gate.
fn now() -> i64 {
    t0() + HOUR
}

fn step_index(step: &str) -> Value {
    match Step::parse(step).index() {
        Some(i) => json!(i),
        None => json!(0),
    }
}

/// A project state on `step` with `status` (a JSON value, so `null` can be given).
fn state_with(step: &str, status: Value) -> OrchestrationState {
    serde_json::from_value(json!({
        "schema_version": "3.0",
        "project": {"id": "p-1", "name": "test-app", "path": "/home/u/dev/test-app"},
        "orchestration": {
            "phase": {"id": "0010", "number": "0010", "name": "core", "branch": "0010-core", "status": "in_progress"},
            "step": {"current": step, "index": step_index(step), "status": status}
        }
    }))
    .unwrap()
}

fn state(step: &str, status: &str) -> OrchestrationState {
    state_with(step, json!(status))
}

/// A running execution started at T0, on `phase`, with specflow's default config.
fn exec(phase: &str) -> OrchestrationExecution {
    serde_json::from_value(json!({
        "id": "0b7d2c1e-0000-4000-8000-000000000001",
        "projectId": "p-1",
        "status": "running",
        "config": {
            "autoMerge": false, "additionalContext": "", "skipDesign": false, "skipAnalyze": false,
            "autoHealEnabled": true, "maxHealAttempts": 1, "batchSizeFallback": 15,
            "pauseBetweenBatches": false,
            "budget": {"maxPerBatch": 5.0, "maxTotal": 50.0, "healingBudget": 2.0, "decisionBudget": 0.5}
        },
        "currentPhase": phase,
        "batches": {"total": 0, "current": 0, "items": []},
        "executions": {"implement": [], "healers": []},
        "startedAt": T0,
        "updatedAt": T0,
        "decisionLog": [],
        "totalCostUsd": 0
    }))
    .unwrap()
}

/// An implement execution with one batch per status, `current` pointing at `current`.
fn exec_batches(statuses: &[&str], current: usize) -> OrchestrationExecution {
    let mut e = exec("implement");
    e.batches.items = statuses
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut b = BatchItem::new(
                i,
                format!("Section {i}"),
                vec![format!("T{:03}", 2 * i + 1), format!("T{:03}", 2 * i + 2)],
            );
            b.status = BatchStatus::parse(s);
            b
        })
        .collect();
    e.batches.total = statuses.len();
    e.batches.current = current;
    e
}

/// A workflow in `status`, last active `silent_ms` before [`now`].
fn wf(status: &str, silent_ms: i64) -> WorkflowView {
    WorkflowView {
        id: "wf-1".into(),
        status: WorkflowStatus::parse(status),
        last_activity_ms: now() - silent_ms,
        cost_usd: 0.0,
    }
}

fn action(d: &Decision) -> &'static str {
    d.action.as_str()
}

// ---- an ERROR counter, to see that unknown states are logged, not silently handled ----

struct ErrorCounter(Arc<AtomicUsize>);

impl tracing::Subscriber for ErrorCounter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        if *e.metadata().level() == tracing::Level::ERROR {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Runs `f` and counts the ERROR events it logs.
fn errors_logged<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let n = Arc::new(AtomicUsize::new(0));
    let out = tracing::subscriber::with_default(ErrorCounter(n.clone()), f);
    (out, n.load(Ordering::SeqCst))
}

// ================================ G1: decision matrix ================================

#[test]
fn g1_1_budget_exceeded_fails() {
    let s = state("design", "in_progress");
    let mut e = exec("design");
    let running = wf("running", MIN);

    e.total_cost_usd = 49.99;
    assert_eq!(action(&decide(&s, &e, Some(&running), now())), "wait");

    // At the limit, and before any other rule (a healthy running workflow would wait).
    e.total_cost_usd = 50.0;
    let d = decide(&s, &e, Some(&running), now());
    assert_eq!(d.action, Action::Fail);
    assert!(
        d.reason.starts_with("Budget exceeded: $50.00"),
        "{}",
        d.reason
    );

    e.config.budget.max_total = 80.0;
    assert_eq!(action(&decide(&s, &e, Some(&running), now())), "wait");
}

#[test]
fn g1_2_running_over_four_hours_needs_attention() {
    let s = state("design", "in_progress");
    let e = exec("design");
    let at_limit = t0() + MAX_DURATION_MS;
    let mut running = wf("running", 0);
    running.last_activity_ms = at_limit;

    assert_eq!(action(&decide(&s, &e, Some(&running), at_limit)), "wait");
    let d = decide(&s, &e, Some(&running), at_limit + 1);
    assert_eq!(d.action, Action::NeedsAttention);
    assert_eq!(d.reason, "Orchestration running too long");
    assert_eq!(MAX_DURATION_MS, 4 * HOUR);
}

#[test]
fn g1_2_the_four_hour_clock_stops_while_the_user_is_awaited_and_restarts_when_they_act() {
    let late = t0() + MAX_DURATION_MS + HOUR;
    // A finished verify waiting for a manual merge overnight still waits for the merge.
    let s = state("verify", "complete");
    let mut e = exec("verify");
    e.status = ExecutionStatus::WaitingMerge;
    assert_eq!(decide(&s, &e, None, late).action, Action::WaitMerge);
    // Resumed (the user acted an hour ago): it goes on instead of needing attention again.
    let s = state("design", "in_progress");
    let mut e = exec("design");
    e.extra.insert(
        headspace_core::orchestration::USER_ACTED_KEY.into(),
        serde_json::json!(headspace_core::Timestamp(late - HOUR).to_string()),
    );
    let mut running = wf("running", 0);
    running.last_activity_ms = late;
    assert_eq!(action(&decide(&s, &e, Some(&running), late)), "wait");
    assert_eq!(
        decide(&s, &e, Some(&running), late - HOUR + MAX_DURATION_MS + 1).action,
        Action::NeedsAttention,
        "four more hours of running after the user acted"
    );
}

#[test]
fn g1_3_implement_checks_batches_before_workflow() {
    // A fresh running workflow would mean "wait" anywhere else; implement with no batches
    // must initialise them first.
    let s = state("implement", "in_progress");
    let e = exec("implement");
    let d = decide(&s, &e, Some(&wf("running", MIN)), now());
    assert_eq!(d.action, Action::InitializeBatches);

    // A finished batch advances even while the old workflow waits for input.
    let e = exec_batches(&["completed", "pending"], 0);
    let d = decide(&s, &e, Some(&wf("waiting_for_input", MIN)), now());
    assert_eq!(d.action, Action::AdvanceBatch);
    assert_eq!(d.batch_index, Some(1));

    // The same workflow on verify just waits.
    let d = decide(
        &state("verify", "in_progress"),
        &exec("verify"),
        Some(&wf("waiting_for_input", MIN)),
        now(),
    );
    assert_eq!(d.action, Action::Wait);
}

#[test]
fn g1_4_running_workflow_with_recent_activity_waits() {
    let s = state("analyze", "in_progress");
    let e = exec("analyze");
    for silent in [0, MIN, STALE_THRESHOLD_MS] {
        let d = decide(&s, &e, Some(&wf("running", silent)), now());
        assert_eq!(d.action, Action::Wait, "silent {silent} ms");
        assert_eq!(d.reason, "Workflow running");
    }
    assert_eq!(STALE_THRESHOLD_MS, 10 * MIN);
}

#[test]
fn g1_5_running_workflow_silent_over_ten_minutes_recovers_stale() {
    let s = state("analyze", "in_progress");
    let e = exec("analyze");
    let d = decide(&s, &e, Some(&wf("running", STALE_THRESHOLD_MS + 1)), now());
    assert_eq!(d.action, Action::RecoverStale);
    assert_eq!(d.workflow_id.as_deref(), Some("wf-1"));
    assert_eq!(d.reason, "No activity for 10 minutes");

    let d = decide(&s, &e, Some(&wf("running", 11 * MIN + 40_000)), now());
    assert_eq!(d.reason, "No activity for 12 minutes");
}

#[test]
fn g1_6_waiting_for_input_waits() {
    // Even on a complete step, which would otherwise transition.
    let d = decide(
        &state("design", "complete"),
        &exec("design"),
        Some(&wf("waiting_for_input", HOUR / 2)),
        now(),
    );
    assert_eq!(d.action, Action::Wait);
    assert_eq!(d.reason, "Waiting for user input");
}

#[test]
fn g1_7_linked_workflow_not_found_waits_with_backoff() {
    let s = state("design", "in_progress");
    let mut e = exec("design");
    // Nothing linked: spawn.
    assert_eq!(action(&decide(&s, &e, None, now())), "spawn");

    e.executions.design = Some("wf-9".into());
    let d = decide(&s, &e, None, now());
    assert_eq!(d.action, Action::WaitWithBackoff);
    assert_eq!(d.reason, "Workflow wf-9 lookup failed, waiting...");
    assert_eq!(d.backoff_ms, Some(1_000));

    e.lookup_failures = Some(3);
    assert_eq!(decide(&s, &e, None, now()).backoff_ms, Some(8_000));
    e.lookup_failures = Some(40);
    assert_eq!(decide(&s, &e, None, now()).backoff_ms, Some(60_000));

    // Implement: the current batch's workflow is the linked one.
    let mut e = exec_batches(&["running", "pending"], 0);
    e.batches.items[0].workflow_execution_id = Some("wf-b0".into());
    assert_eq!(linked_workflow_id(&e, &Step::Implement), Some("wf-b0"));
    let d = decide(&state("implement", "in_progress"), &e, None, now());
    assert_eq!(d.action, Action::WaitWithBackoff);
    assert!(d.reason.contains("wf-b0"));
}

#[test]
fn g1_8_verify_complete_with_unconfirmed_user_gate_waits_for_gate() {
    let mut s = state("verify", "complete");
    s.orchestration.phase.has_user_gate = Some(true);
    let mut e = exec("verify");
    e.config.auto_merge = true;

    for gate in [
        None,
        Some(UserGateStatus::Pending),
        Some(UserGateStatus::parse("later")),
    ] {
        s.orchestration.phase.user_gate_status = gate;
        assert_eq!(decide(&s, &e, None, now()).action, Action::WaitUserGate);
    }
    s.orchestration.phase.user_gate_status = Some(UserGateStatus::Confirmed);
    assert_eq!(decide(&s, &e, None, now()).action, Action::Transition);
}

#[test]
fn g1_9_verify_complete_without_auto_merge_waits_for_merge() {
    let s = state("verify", "complete");
    let e = exec("verify");
    assert!(!e.config.auto_merge);
    let d = decide(&s, &e, None, now());
    assert_eq!(d.action, Action::WaitMerge);
    assert_eq!(d.reason, "Auto-merge disabled, waiting for user");
}

#[test]
fn g1_10_verify_complete_with_auto_merge_transitions_to_merge() {
    let s = state("verify", "complete");
    let mut e = exec("verify");
    e.config.auto_merge = true;
    let d = decide(&s, &e, None, now());
    assert_eq!(d.action, Action::Transition);
    assert_eq!(d.next_step, Some(Step::Merge));
    assert_eq!(d.next_index, Some(4));
    assert_eq!(
        serde_json::to_value(&d).unwrap(),
        json!({"action": "transition", "reason": "Verify complete, auto-merge enabled", "nextStep": "merge", "nextIndex": 4})
    );
}

#[test]
fn g1_11_merge_complete_completes() {
    let d = decide(&state("merge", "complete"), &exec("merge"), None, now());
    assert_eq!(d.action, Action::Complete);
    assert_eq!(d.reason, "All steps finished");
    assert_eq!(next_step(&Step::Merge), None);
}

#[test]
fn g1_12_other_complete_steps_transition_to_the_next() {
    for (from, to, idx) in [
        ("design", Step::Analyze, 1),
        ("analyze", Step::Implement, 2),
    ] {
        let d = decide(&state(from, "complete"), &exec(from), None, now());
        assert_eq!(d.action, Action::Transition, "{from}");
        assert_eq!(d.next_step.as_ref(), Some(&to));
        assert_eq!(d.next_index, Some(idx));
        assert_eq!(d.reason, format!("{from} complete, advancing to {to}"));
    }
    // Implement, with every batch done.
    let e = exec_batches(&["completed", "healed"], 1);
    let d = decide(&state("implement", "complete"), &e, None, now());
    assert_eq!(
        (d.action, d.next_step, d.next_index),
        (Action::Transition, Some(Step::Verify), Some(3))
    );
}

#[test]
fn g1_13_failed_step_recovers_failed() {
    let mut s = state("analyze", "failed");
    s.orchestration.step.error = Some("spec.md missing".into());
    let d = decide(&s, &exec("analyze"), None, now());
    assert_eq!(d.action, Action::RecoverFailed);
    assert_eq!(d.reason, "Step analyze is failed");
    assert_eq!(d.error.as_deref(), Some("spec.md missing"));
}

#[test]
fn g1_14_blocked_step_recovers_failed() {
    let d = decide(&state("verify", "blocked"), &exec("verify"), None, now());
    assert_eq!(d.action, Action::RecoverFailed);
    assert_eq!(d.reason, "Step verify is blocked");
}

#[test]
fn g1_15_in_progress_without_active_workflow_spawns() {
    let s = state("analyze", "in_progress");
    let d = decide(&s, &exec("analyze"), None, now());
    assert_eq!(d.action, Action::Spawn);
    assert_eq!(d.skill.as_deref(), Some("flow.analyze"));

    // The linked workflow finished without the step being marked: it no longer holds the step.
    let mut e = exec("analyze");
    e.executions.analyze = Some("wf-1".into());
    for done in ["completed", "failed", "cancelled"] {
        let d = decide(&s, &e, Some(&wf(done, HOUR / 2)), now());
        assert_eq!(d.action, Action::Spawn, "{done}");
    }
}

#[test]
fn g1_16_not_started_spawns_or_initialises_batches() {
    let d = decide(
        &state("design", "not_started"),
        &exec("design"),
        None,
        now(),
    );
    assert_eq!(d.action, Action::Spawn);
    assert_eq!(d.skill.as_deref(), Some("flow.design"));

    let d = decide(
        &state("implement", "not_started"),
        &exec("implement"),
        None,
        now(),
    );
    assert_eq!(d.action, Action::InitializeBatches);

    // With batches, implement spawns its first batch.
    let e = exec_batches(&["pending", "pending"], 0);
    let d = decide(&state("implement", "not_started"), &e, None, now());
    assert_eq!(d.action, Action::SpawnBatch);
    assert_eq!(d.batch_index, Some(0));
}

#[test]
fn g1_17_null_or_missing_status_spawns() {
    let null = state_with("verify", Value::Null);
    assert_eq!(null.orchestration.step.status, lenient::Nullable::Null);
    let d = decide(&null, &exec("verify"), None, now());
    assert_eq!(d.action, Action::Spawn);
    assert_eq!(d.skill.as_deref(), Some("flow.verify"));

    let mut absent = state("verify", "complete");
    absent.orchestration.step.status = lenient::Nullable::Absent;
    assert_eq!(
        decide(&absent, &exec("verify"), None, now()).action,
        Action::Spawn
    );
}

#[test]
fn g1_18_unknown_states_recover_unknown_and_log_an_error() {
    // A known state logs no error: the counter is not trivially positive.
    let (d, n) = errors_logged(|| {
        decide(
            &state("design", "in_progress"),
            &exec("design"),
            None,
            now(),
        )
    });
    assert_eq!((d.action, n), (Action::Spawn, 0));

    let mut hibernating = exec("design");
    hibernating.status = ExecutionStatus::parse("hibernating");
    let cases = [
        (
            "step status",
            state("design", "exploded"),
            exec("design"),
            None,
        ),
        (
            "pending status",
            state("design", "pending"),
            exec("design"),
            None,
        ),
        (
            "skipped status",
            state("design", "skipped"),
            exec("design"),
            None,
        ),
        (
            "step name",
            state("deploy", "in_progress"),
            exec("design"),
            None,
        ),
        (
            "workflow status",
            state("design", "in_progress"),
            exec("design"),
            Some(wf("zombie", 0)),
        ),
        (
            "execution status",
            state("design", "in_progress"),
            hibernating,
            None,
        ),
        (
            "batch status",
            state("implement", "in_progress"),
            exec_batches(&["lost", "pending"], 0),
            None,
        ),
    ];
    for (what, s, e, w) in cases {
        let (d, n) = errors_logged(|| decide(&s, &e, w.as_ref(), now()));
        assert_eq!(d.action, Action::RecoverUnknown, "{what}");
        assert!(d.reason.starts_with("Unknown"), "{what}: {}", d.reason);
        assert!(n >= 1, "{what}: no error logged");
    }
}

#[test]
fn unknown_step_status_yields_recover_unknown() {
    let s: OrchestrationState = serde_json::from_value(json!({
        "orchestration": {"phase": {"number": "0010"}, "step": {"current": "verify", "index": 3, "status": "half_done"}}
    }))
    .unwrap();
    assert_eq!(
        s.orchestration.step.status.get(),
        Some(&StepStatus::Unknown("half_done".into()))
    );
    let d = decide(&s, &exec("verify"), None, now());
    assert_eq!(
        serde_json::to_value(&d).unwrap(),
        json!({"action": "recover_unknown", "reason": "Unknown status: half_done"})
    );
}

#[test]
fn finished_paused_and_attention_runs_do_not_act() {
    let s = state("design", "not_started");
    for (status, want) in [
        ("completed", Action::Stop),
        ("cancelled", Action::Stop),
        ("failed", Action::Stop),
        ("paused", Action::Wait),
        ("needs_attention", Action::Wait),
        ("waiting_merge", Action::Spawn),
    ] {
        let mut e = exec("design");
        e.status = ExecutionStatus::parse(status);
        assert_eq!(decide(&s, &e, None, now()).action, want, "{status}");
    }
}

// ============================= G2: batch state machine =============================

fn implementing() -> StepState {
    state("implement", "in_progress").orchestration.step
}

#[test]
fn g2_1_no_batches_initialises() {
    let d = decide_batch(&implementing(), &exec("implement"), None).unwrap();
    assert_eq!(d.action, Action::InitializeBatches);
    assert_eq!(d.reason, "No batches populated");
}

#[test]
fn g2_2_all_batches_done_but_step_not_complete_forces_completion() {
    let e = exec_batches(&["completed", "healed", "completed"], 2);
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::ForceStepComplete);

    // One batch still pending: not forced.
    let e = exec_batches(&["completed", "healed", "pending"], 2);
    assert_eq!(
        decide_batch(&implementing(), &e, None).unwrap().action,
        Action::SpawnBatch
    );
}

#[test]
fn g2_3_all_batches_done_and_step_complete_defers_to_the_matrix() {
    let s = state("implement", "complete");
    let e = exec_batches(&["completed", "healed"], 1);
    assert_eq!(decide_batch(&s.orchestration.step, &e, None), None);
    assert_eq!(decide(&s, &e, None, now()).action, Action::Transition);
}

#[test]
fn g2_4_pending_batch_without_workflow_spawns_it() {
    let e = exec_batches(&["completed", "pending"], 1);
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::SpawnBatch);
    assert_eq!(d.batch_index, Some(1));
    assert_eq!(d.skill.as_deref(), Some("flow.implement"));
    assert_eq!(
        d.context.as_deref(),
        Some("Execute tasks T003, T004 in section \"Section 1\"")
    );

    // Its workflow already running (spawned, not yet marked): no second spawn.
    assert_eq!(
        decide_batch(&implementing(), &e, Some(&wf("running", MIN))),
        None
    );
}

#[test]
fn g2_5_running_batch_with_running_workflow_defers_to_staleness() {
    let e = exec_batches(&["running", "pending"], 0);
    assert_eq!(
        decide_batch(&implementing(), &e, Some(&wf("running", MIN))),
        None
    );
    let s = state("implement", "in_progress");
    assert_eq!(
        decide(&s, &e, Some(&wf("running", MIN)), now()).action,
        Action::Wait
    );
    assert_eq!(
        decide(&s, &e, Some(&wf("running", 15 * MIN)), now()).action,
        Action::RecoverStale
    );
}

#[test]
fn g2_6_completed_batch_with_pause_between_batches_pauses() {
    let mut e = exec_batches(&["completed", "pending"], 0);
    e.config.pause_between_batches = true;
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::Pause);
    assert_eq!(d.reason, "Batch complete, pauseBetweenBatches enabled");
    // The batch to run on resume.
    assert_eq!(d.batch_index, Some(1));
}

#[test]
fn g2_7_completed_batch_advances_to_the_next() {
    let e = exec_batches(&["completed", "pending", "pending"], 0);
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::AdvanceBatch);
    assert_eq!(d.batch_index, Some(1));
    assert_eq!(d.reason, "Batch 0 complete, advancing to batch 1");
}

#[test]
fn g2_8_healed_batch_advances_to_the_next() {
    let e = exec_batches(&["completed", "healed", "pending"], 1);
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::AdvanceBatch);
    assert_eq!(d.batch_index, Some(2));
}

#[test]
fn g2_9_failed_batch_with_attempts_left_heals() {
    let mut e = exec_batches(&["failed", "pending"], 0);
    e.config.max_heal_attempts = 2;
    e.batches.items[0].heal_attempts = 1;
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::HealBatch);
    assert_eq!(d.batch_index, Some(0));

    // Auto-heal switched off: straight to recovery.
    e.config.auto_heal_enabled = false;
    assert_eq!(
        decide_batch(&implementing(), &e, None).unwrap().action,
        Action::RecoverFailed
    );
}

#[test]
fn g2_10_failed_batch_out_of_attempts_recovers_failed() {
    let mut e = exec_batches(&["failed", "pending"], 0);
    e.batches.items[0].heal_attempts = 1;
    e.batches.items[0].error = Some("tests fail".into());
    assert_eq!(e.config.max_heal_attempts, 1);
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::RecoverFailed);
    assert_eq!(d.reason, "Batch 0 failed after 1 heal attempts");
    assert_eq!(d.error.as_deref(), Some("tests fail"));
}

// ================================ G7: validation ================================

#[test]
fn g7_1_step_index_must_match_the_step() {
    assert_eq!(validate(&state("verify", "in_progress"), None), vec![]);
    let mut s = state("verify", "in_progress");
    s.orchestration.step.index = Some(2);
    let v = validate(&s, None);
    assert_eq!(
        v,
        vec![Violation::StepIndexMismatch {
            step: Step::Verify,
            expected: 3,
            actual: Some(2)
        }]
    );
    assert_eq!(
        v[0].to_string(),
        "Step index mismatch: verify should be 3, got 2"
    );
    s.orchestration.step.index = None;
    assert_eq!(
        validate(&s, None)[0].to_string(),
        "Step index mismatch: verify should be 3, got undefined"
    );
}

#[test]
fn g7_2_step_must_be_one_of_the_five() {
    let v = validate(&state("deploy", "in_progress"), None);
    assert_eq!(v, vec![Violation::InvalidStep("deploy".into())]);
    assert_eq!(v[0].to_string(), "Invalid step: deploy");
    for s in ["design", "analyze", "implement", "verify", "merge"] {
        assert_eq!(validate(&state(s, "in_progress"), None), vec![], "{s}");
    }
}

#[test]
fn g7_3_status_must_be_valid() {
    let v = validate(&state("design", "exploded"), None);
    assert_eq!(v, vec![Violation::InvalidStatus("exploded".into())]);
    assert_eq!(v[0].to_string(), "Invalid status: exploded");
    for s in [
        "not_started",
        "pending",
        "in_progress",
        "complete",
        "failed",
        "blocked",
        "skipped",
    ] {
        assert_eq!(validate(&state("design", s), None), vec![], "{s}");
    }
    assert_eq!(validate(&state_with("design", Value::Null), None), vec![]);
}

#[test]
fn g7_4_batch_index_must_match_its_position() {
    let s = state("implement", "in_progress");
    let mut e = exec_batches(&["completed", "pending", "pending"], 1);
    assert_eq!(validate(&s, Some(&e)), vec![]);
    e.batches.items[1].index = Some(2);
    let v = validate(&s, Some(&e));
    assert_eq!(
        v,
        vec![Violation::BatchIndexMismatch {
            position: 1,
            index: Some(2)
        }]
    );
    assert_eq!(
        v[0].to_string(),
        "Batch index mismatch: position 1 has index 2"
    );
}

#[test]
fn g7_5_current_batch_must_be_in_range_unless_all_done() {
    let s = state("implement", "in_progress");
    let e = exec_batches(&["completed", "running", "pending"], 3);
    let v = validate(&s, Some(&e));
    assert_eq!(
        v,
        vec![Violation::BatchCurrentOutOfRange {
            current: 3,
            total: 3
        }]
    );
    assert_eq!(v[0].to_string(), "Batch current (3) >= total (3)");

    let done = exec_batches(&["completed", "healed", "completed"], 3);
    assert_eq!(validate(&s, Some(&done)), vec![]);
    // No batches yet: nothing to be out of range of.
    assert_eq!(validate(&s, Some(&exec("implement"))), vec![]);
}

#[test]
fn g7_6_needs_attention_requires_recovery_context() {
    let s = state("design", "in_progress");
    let mut e = exec("design");
    e.status = ExecutionStatus::NeedsAttention;
    let v = validate(&s, Some(&e));
    assert_eq!(v, vec![Violation::MissingRecoveryContext]);
    assert_eq!(
        v[0].to_string(),
        "needs_attention status requires recoveryContext"
    );

    e.recovery_context = Some(RecoveryContext {
        issue: "stale".into(),
        ..Default::default()
    });
    assert_eq!(validate(&s, Some(&e)), vec![]);
}

#[test]
fn g7_7_state_step_and_execution_phase_must_agree() {
    let s = state("implement", "in_progress");
    let v = validate(&s, Some(&exec("design")));
    assert_eq!(
        v,
        vec![Violation::StepMismatch {
            state_step: Step::Implement,
            execution_phase: ExecutionPhase::Design
        }]
    );
    assert_eq!(
        v[0].to_string(),
        "Step mismatch: state has implement, execution has design"
    );
    assert_eq!(validate(&s, Some(&exec("implement"))), vec![]);
    assert_eq!(validate(&s, Some(&exec("complete"))), vec![]);
}

#[test]
fn no_active_phase_is_reported() {
    let mut s = state("design", "not_started");
    s.orchestration.phase.number = lenient::Nullable::Null;
    assert_eq!(validate(&s, None), vec![Violation::NoActivePhase]);
    assert_eq!(Violation::NoActivePhase.to_string(), "No active phase");
}

// ============================ files, round trip, apply ============================

#[test]
fn real_files_round_trip_keeping_unknown_fields() {
    let state_json = json!({
        "schema_version": "3.0",
        "project": {"id": "8c6c…", "name": "test-app", "path": "/home/u/dev/test-app"},
        "last_updated": "2026-03-02T09:41:07.120Z",
        "orchestration": {
            "phase": {"id": "0010", "number": "0010", "name": "core-engine", "branch": "0010-core-engine",
                      "status": "in_progress", "hasUserGate": true, "userGateStatus": "pending",
                      "gateNote": "from a newer specflow"},
            "next_phase": null,
            "step": {"current": "implement", "index": 2, "status": "in_progress", "startedBy": "cli"},
            "implement": {"currentTask": "T004", "tasks_completed": 3},
            "dashboard": {"active": null},
            "progress": {"tasks_total": 12, "tasks_done": 3}
        },
        "health": {"status": "healthy", "last_check": "2026-03-02T09:41:07.120Z", "issues": []},
        "futureTopLevel": [1, 2, 3]
    });
    let exec_json = json!({
        "id": "0b7d2c1e-0000-4000-8000-000000000001",
        "projectId": "p-1",
        "status": "running",
        "config": {"autoMerge": true, "additionalContext": "", "skipDesign": false, "skipAnalyze": false,
                   "autoHealEnabled": true, "maxHealAttempts": 2, "batchSizeFallback": 15,
                   "pauseBetweenBatches": false,
                   "budget": {"maxPerBatch": 5.0, "maxTotal": 50.0, "healingBudget": 2.0, "decisionBudget": 0.5}},
        "currentPhase": "implement",
        "batches": {"total": 2, "current": 1, "items": [
            {"index": 0, "section": "Setup", "taskIds": ["T001", "T002"], "status": "completed",
             "startedAt": "2026-03-02T09:05:00.000Z", "completedAt": "2026-03-02T09:30:00.000Z",
             "healAttempts": 0, "workflowExecutionId": "wf-a"},
            {"index": 1, "section": "Core", "taskIds": ["T003", "T004"], "status": "running",
             "healAttempts": 0, "workflowExecutionId": "wf-b", "priority": "high"}
        ]},
        "executions": {"design": "wf-d", "analyze": "wf-n", "implement": ["wf-a", "wf-b"], "healers": []},
        "startedAt": "2026-03-02T09:00:00.000Z",
        "updatedAt": "2026-03-02T09:41:07.120Z",
        "decisionLog": [
            {"timestamp": "2026-03-02T09:30:01.000Z", "decision": "advance_batch",
             "reason": "Batch 0 complete, advancing to batch 1", "data": {"batchIndex": 1}, "by": "runner"}
        ],
        "totalCostUsd": 3.25,
        "runnerPid": 4242
    });

    let s: OrchestrationState = serde_json::from_value(state_json.clone()).unwrap();
    let e: OrchestrationExecution = serde_json::from_value(exec_json.clone()).unwrap();
    // Typed where the decisions need it…
    assert!(s.orchestration.phase.gate_blocks());
    assert_eq!(s.orchestration.step.current, Some(Step::Implement));
    assert_eq!(e.config.max_heal_attempts, 2);
    assert_eq!(e.batches.items[1].status, BatchStatus::Running);
    assert_eq!(e.started_at_ms(), Some(t0()));
    // …and the unknown keys kept, at every level.
    assert_eq!(s.extra["futureTopLevel"], json!([1, 2, 3]));
    assert_eq!(
        s.orchestration.phase.extra["gateNote"],
        json!("from a newer specflow")
    );
    assert_eq!(e.batches.items[1].extra["priority"], json!("high"));
    assert_eq!(e.extra["runnerPid"], json!(4242));

    assert_eq!(serde_json::to_value(&s).unwrap(), state_json);
    assert_eq!(serde_json::to_value(&e).unwrap(), exec_json);

    // Unknown statuses are values, not errors, and are written back as read.
    let mut odd = exec_json.clone();
    odd["status"] = json!("hibernating");
    odd["currentPhase"] = json!("retro");
    odd["batches"]["items"][1]["status"] = json!("quarantined");
    let e: OrchestrationExecution = serde_json::from_value(odd.clone()).unwrap();
    assert_eq!(e.status, ExecutionStatus::Unknown("hibernating".into()));
    assert_eq!(serde_json::to_value(&e).unwrap(), odd);

    // A fresh project's nulls stay nulls; a minimal execution takes specflow's defaults.
    let fresh = json!({"orchestration": {"phase": {"id": null, "number": null}, "step": {"current": "design", "index": 0, "status": null}}});
    let s: OrchestrationState = serde_json::from_value(fresh.clone()).unwrap();
    assert_eq!(serde_json::to_value(&s).unwrap(), fresh);
    let e: OrchestrationExecution = serde_json::from_value(json!({"status": "running"})).unwrap();
    assert_eq!(
        (
            e.config.auto_heal_enabled,
            e.config.max_heal_attempts,
            e.config.budget.max_total
        ),
        (true, 1, 50.0)
    );
}

#[test]
fn decision_log_reads_the_seeds_time_action_names() {
    let e: OrchestrationExecution = serde_json::from_value(json!({
        "status": "running",
        "decisionLog": [{"time": "2026-03-02T09:00:00.000Z", "action": "wait", "reason": "Workflow running"}]
    }))
    .unwrap();
    let entry = &e.decision_log[0];
    assert_eq!(
        (entry.timestamp.as_str(), entry.decision.as_str()),
        ("2026-03-02T09:00:00.000Z", "wait")
    );
}

#[test]
fn apply_records_decisions_and_their_bookkeeping() {
    let mut e = exec_batches(&["completed", "pending"], 0);
    let d = decide_batch(&implementing(), &e, None).unwrap();
    apply(&mut e, &d, now());
    assert_eq!(e.batches.current, 1);
    let entry = e.decision_log.last().unwrap();
    assert_eq!(entry.decision, "advance_batch");
    assert_eq!(entry.reason, "Batch 0 complete, advancing to batch 1");
    assert_eq!(entry.timestamp, "2026-03-02T10:00:00.000Z");
    assert_eq!(entry.data.as_ref().unwrap()["batchIndex"], json!(1));
    assert_eq!(e.updated_at.as_deref(), Some("2026-03-02T10:00:00.000Z"));

    // heal_batch counts an attempt, so the next failure runs out of them.
    let mut e = exec_batches(&["failed", "pending"], 0);
    let d = decide_batch(&implementing(), &e, None).unwrap();
    assert_eq!(d.action, Action::HealBatch);
    apply(&mut e, &d, now());
    assert_eq!(e.batches.items[0].heal_attempts, 1);
    assert_eq!(
        decide_batch(&implementing(), &e, None).unwrap().action,
        Action::RecoverFailed
    );

    // Backoff grows with each failed lookup and resets once a lookup succeeds.
    let s = state("design", "in_progress");
    let mut e = exec("design");
    e.executions.design = Some("wf-9".into());
    let mut waits = vec![];
    for _ in 0..3 {
        let d = decide(&s, &e, None, now());
        waits.push(d.backoff_ms.unwrap());
        apply(&mut e, &d, now());
    }
    assert_eq!(waits, vec![1_000, 2_000, 4_000]);
    let d = decide(&s, &e, Some(&wf("running", 0)), now());
    assert_eq!(d.action, Action::Wait);
    apply(&mut e, &d, now());
    assert_eq!(e.lookup_failures, Some(0));

    // needs_attention leaves a valid execution behind (G7.6).
    let mut e = exec("design");
    let late = t0() + MAX_DURATION_MS + 1;
    let d = decide(&s, &e, None, late);
    apply(&mut e, &d, late);
    assert_eq!(e.status, ExecutionStatus::NeedsAttention);
    assert_eq!(
        e.recovery_context.as_ref().unwrap().issue,
        "Orchestration running too long"
    );
    assert_eq!(validate(&s, Some(&e)), vec![]);

    // A pause between batches resumes on the next batch, not into another pause.
    let mut e = exec_batches(&["completed", "pending"], 0);
    e.config.pause_between_batches = true;
    let d = decide_batch(&implementing(), &e, None).unwrap();
    apply(&mut e, &d, now());
    assert_eq!(
        (e.status.clone(), e.batches.current),
        (ExecutionStatus::Paused, 1)
    );
    e.status = ExecutionStatus::Running;
    assert_eq!(
        decide_batch(&implementing(), &e, None).unwrap().action,
        Action::SpawnBatch
    );
}

#[test]
fn a_run_walks_design_to_merge() {
    // The sub-commands' part is played here: each spawned step completes its work.
    let mut s = state("design", "not_started");
    let mut e = exec("design");
    e.config.auto_merge = true;
    let mut t = now();
    let mut seen = vec![];
    for _ in 0..40 {
        t += MIN;
        let d = decide(&s, &e, None, t);
        assert!(
            validate(&s, Some(&e)).is_empty(),
            "{:?}",
            validate(&s, Some(&e))
        );
        seen.push(d.action.as_str().to_string());
        apply(&mut e, &d, t);
        apply_to_state(&mut s, &d);
        match d.action {
            Action::Spawn => s.orchestration.step.status = StepStatus::Complete.into(),
            Action::InitializeBatches => {
                e.batches = exec_batches(&["pending", "pending"], 0).batches;
            }
            Action::SpawnBatch => {
                e.batches.items[d.batch_index.unwrap()].status = BatchStatus::Completed
            }
            Action::Complete => break,
            _ => {}
        }
    }
    assert_eq!(
        seen,
        [
            "spawn",
            "transition",
            "spawn",
            "transition",
            "initialize_batches",
            "spawn_batch",
            "advance_batch",
            "spawn_batch",
            "force_step_complete",
            "transition",
            "spawn",
            "transition",
            "spawn",
            "complete"
        ]
    );
    assert_eq!(e.status, ExecutionStatus::Completed);
    assert_eq!(e.current_phase, Some(ExecutionPhase::Complete));
    assert_eq!(e.decision_log.len(), seen.len());
}

#[test]
fn spawn_intent_blocks_for_thirty_seconds() {
    let intent = SpawnIntent {
        skill: "flow.design".into(),
        timestamp: now(),
        workflow_id: None,
        request: None,
    };
    assert!(!spawn_intent_is_stale(
        now(),
        now() + SPAWN_INTENT_TTL_MS - 1
    ));
    assert!(spawn_intent_is_stale(now(), now() + SPAWN_INTENT_TTL_MS));
    assert_eq!(
        spawn_check(Some(&intent), false, now() + 29_999),
        SpawnCheck::IntentInFlight
    );
    assert_eq!(
        spawn_check(Some(&intent), false, now() + 30_000),
        SpawnCheck::Spawn
    );
    assert_eq!(
        spawn_check(Some(&intent), true, now() + 30_000),
        SpawnCheck::WorkflowActive
    );
    assert_eq!(spawn_check(None, false, now()), SpawnCheck::Spawn);
}

// ============================ shell support: batches, observation, recovery ============================

#[test]
fn tasks_md_sections_with_open_tasks_become_batches() {
    let md = "# Tasks\n- [ ] T000 Loose task\n## Setup\n- [x] T001 done\n- [ ] T002 Make it\n## Done\n- [x] T003 old\n## Core\n* [ ] T004 [P] Core\n- [ ] not a task\n";
    let b = parse_batches(md, 15);
    let got: Vec<_> = b
        .iter()
        .map(|b| (b.index, b.section.as_str(), b.task_ids.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (Some(0), "Tasks", vec!["T000".to_string()]),
            (Some(1), "Setup", vec!["T002".to_string()]),
            (Some(2), "Core", vec!["T004".to_string()]),
        ]
    );
    assert!(b.iter().all(|b| b.status == BatchStatus::Pending));
}

#[test]
fn tasks_without_sections_are_cut_by_the_fallback_size_and_nothing_open_is_one_batch() {
    let md: String = (1..=5).map(|i| format!("- [ ] T{i:03} x\n")).collect();
    let sizes: Vec<_> = parse_batches(&md, 2)
        .iter()
        .map(|b| b.task_ids.len())
        .collect();
    assert_eq!(sizes, [2, 2, 1]);
    let none = parse_batches("## Done\n- [x] T001\n", 15);
    assert_eq!(none.len(), 1);
    assert!(none[0].task_ids.is_empty());
}

#[test]
fn observing_a_workflow_counts_its_cost_once() {
    let mut s = state("design", "in_progress");
    let mut e = exec("design");
    e.executions.design = Some("wf-1".into());
    let mut w = wf("running", 0);
    w.cost_usd = 0.4;
    assert!(observe_workflow(&mut s, &mut e, &w));
    assert!(!observe_workflow(&mut s, &mut e, &w));
    w.cost_usd = 1.0;
    observe_workflow(&mut s, &mut e, &w);
    assert!((e.total_cost_usd - 1.0).abs() < 1e-9);
    assert_eq!(e.extra[WORKFLOW_COSTS_KEY]["wf-1"], json!(1.0));
}

#[test]
fn observing_a_batch_workflow_settles_the_batch() {
    let mut s = state("implement", "in_progress");
    let mut e = exec_batches(&["running", "pending"], 0);
    e.batches.items[0].workflow_execution_id = Some("wf-1".into());
    observe_workflow(&mut s, &mut e, &wf("completed", 0));
    assert_eq!(e.batches.items[0].status, BatchStatus::Completed);

    let mut e = exec_batches(&["running"], 0);
    e.batches.items[0].workflow_execution_id = Some("wf-1".into());
    observe_workflow(&mut s, &mut e, &wf("failed", 0));
    assert_eq!(e.batches.items[0].status, BatchStatus::Failed);
    assert_eq!(
        e.batches.items[0].error.as_deref(),
        Some("Workflow wf-1 failed")
    );

    // A healer that finishes heals it.
    e.batches.items[0].healer_execution_id = Some("wf-1".into());
    observe_workflow(&mut s, &mut e, &wf("completed", 0));
    assert_eq!(e.batches.items[0].status, BatchStatus::Healed);
    // The step itself is the sub-command's, not the runner's.
    assert_eq!(
        s.orchestration.step.status.get(),
        Some(&StepStatus::InProgress)
    );
}

#[test]
fn a_batch_whose_skill_marked_the_step_failed_failed_though_its_workflow_completed() {
    // An agent's turn ends the same way whether /flow.implement succeeded or not: the step's
    // status carries the verdict.
    let mut s = state("implement", "failed");
    s.orchestration.step.error = Some("tests fail".into());
    let mut e = exec_batches(&["running", "pending"], 0);
    e.batches.items[0].workflow_execution_id = Some("wf-1".into());
    assert!(observe_workflow(&mut s, &mut e, &wf("completed", 0)));
    assert_eq!(e.batches.items[0].status, BatchStatus::Failed);
    assert_eq!(e.batches.items[0].error.as_deref(), Some("tests fail"));
    // So the batch is healed, not advanced past (and implement not forced complete).
    let d = decide(&s, &e, Some(&wf("completed", 0)), now());
    assert_eq!(action(&d), "heal_batch");

    // A healer whose skill failed too leaves the batch failed; one that succeeded heals it.
    e.batches.items[0].healer_execution_id = Some("wf-1".into());
    assert!(!observe_workflow(&mut s, &mut e, &wf("completed", 0)));
    assert_eq!(e.batches.items[0].status, BatchStatus::Failed);
    let mut ok = state("implement", "in_progress");
    observe_workflow(&mut ok, &mut e, &wf("completed", 0));
    assert_eq!(e.batches.items[0].status, BatchStatus::Healed);

    // Blocked counts as failed; without an error the status says why.
    let mut s = state("implement", "blocked");
    let mut e = exec_batches(&["running"], 0);
    e.batches.items[0].workflow_execution_id = Some("wf-1".into());
    observe_workflow(&mut s, &mut e, &wf("completed", 0));
    assert_eq!(
        e.batches.items[0].error.as_deref(),
        Some("Step implement is blocked")
    );
}

#[test]
fn spawning_a_batch_or_a_healer_puts_a_failed_step_back_in_progress() {
    for a in [Action::SpawnBatch, Action::HealBatch] {
        let mut s = state("implement", "failed");
        s.orchestration.step.error = Some("tests fail".into());
        apply_to_state(&mut s, &Decision::new(a, "x").with_batch(0));
        assert_eq!(
            s.orchestration.step.status.get(),
            Some(&StepStatus::InProgress),
            "{a:?}"
        );
        assert_eq!(s.orchestration.step.error, None);
        // A step already complete (the last batch's skill said so) is left alone.
        let mut s = state("implement", "complete");
        apply_to_state(&mut s, &Decision::new(a, "x").with_batch(0));
        assert_eq!(
            s.orchestration.step.status.get(),
            Some(&StepStatus::Complete)
        );
    }
    // Other spawns leave the step to the sub-command (a failed design is recovered, not reset).
    let mut s = state("design", "failed");
    apply_to_state(&mut s, &Decision::new(Action::Spawn, "x"));
    assert_eq!(s.orchestration.step.status.get(), Some(&StepStatus::Failed));
}

#[test]
fn a_step_workflow_that_ended_without_completing_its_step_fails_the_step() {
    let mut s = state("analyze", "in_progress");
    let mut e = exec("analyze");
    e.executions.analyze = Some("wf-1".into());
    assert!(observe_workflow(&mut s, &mut e, &wf("completed", 0)));
    assert_eq!(s.orchestration.step.status.get(), Some(&StepStatus::Failed));
    assert_eq!(
        s.orchestration.step.error.as_deref(),
        Some("Workflow wf-1 completed without marking step analyze complete")
    );
    // A completed step is left alone; so is a workflow not linked to the step.
    let mut s = state("analyze", "complete");
    assert!(!observe_workflow(&mut s, &mut e, &wf("completed", 0)));
    let mut s = state("analyze", "in_progress");
    let mut other = wf("failed", 0);
    other.id = "wf-other".into();
    assert!(!observe_workflow(&mut s, &mut e, &other));
    assert_eq!(
        s.orchestration.step.status.get(),
        Some(&StepStatus::InProgress)
    );
}

#[test]
fn decide_checked_validates_first_except_when_the_user_is_on_it() {
    let mut s = state("analyze", "complete");
    s.orchestration.step.index = Some(3);
    let e = exec("analyze");
    let d = decide_checked(&s, &e, None, now());
    assert_eq!(action(&d), "needs_attention");
    assert_eq!(d.reason, "Step index mismatch: analyze should be 1, got 3");
    let mut paused = e.clone();
    paused.status = ExecutionStatus::Paused;
    assert_eq!(action(&decide_checked(&s, &paused, None, now())), "wait");
    let mut done = e;
    done.status = ExecutionStatus::Completed;
    assert_eq!(action(&decide_checked(&s, &done, None, now())), "stop");
}

#[test]
fn g3_4_a_recovered_state_needs_confidence_above_0_7() {
    let st = json!({"orchestration": {"phase": {"number": "0010"}, "step": {"current": "verify", "index": 3}}});
    let ok = json!({"recoverable": true, "confidence": 0.8, "state": st});
    assert_eq!(
        recovered_state(Some(&ok))
            .unwrap()
            .orchestration
            .step
            .current,
        Some(Step::Verify)
    );
    let low = json!({"recoverable": true, "confidence": 0.7, "state": st});
    assert!(recovered_state(Some(&low)).is_none());
    let no = json!({"recoverable": false, "confidence": 0.99, "state": st});
    assert!(recovered_state(Some(&no)).is_none());
    assert!(recovered_state(None).is_none());
}

#[test]
fn g3_9_g3_10_stale_answers_and_fallback() {
    let p = stale_recovery(
        Some(&json!({"action": "continue", "reasoning": "thinking"})),
        12,
    );
    assert_eq!(
        (p.recovery, p.log, p.kill),
        (Recovery::Acknowledge, "stale_false_alarm", false)
    );
    let p = stale_recovery(Some(&json!({"action": "restart_task"})), 12);
    assert_eq!((p.recovery, p.kill), (Recovery::Restart, true));
    let p = stale_recovery(
        Some(&json!({"action": "skip_task", "task": "T004", "blockReason": "needs a key"})),
        12,
    );
    assert_eq!(
        p.recovery,
        Recovery::SkipTasks {
            tasks: vec!["T004".into()]
        }
    );
    assert_eq!(p.reason, "needs a key");
    let p = stale_recovery(
        Some(&json!({"action": "abort", "reasoning": "crashed"})),
        12,
    );
    assert_eq!(
        (p.recovery, p.kill),
        (Recovery::Escalate("crashed".into()), true)
    );
    for answer in [None, Some(json!({"action": "dance"}))] {
        let p = stale_recovery(answer.as_ref(), 12);
        assert_eq!(
            (p.recovery, p.kill),
            (
                Recovery::Escalate(
                    "Workflow appears stale for 12 minutes - diagnosis failed".into()
                ),
                false
            )
        );
    }
}

#[test]
fn g3_12_to_g3_16_failed_step_answers_and_fallbacks() {
    assert!(!failed_needs_helper(1, 1));
    let p = failed_recovery(None, Some("boom"), 1, 1);
    assert_eq!(
        p.recovery,
        Recovery::Escalate("Max heal attempts (1) reached".into())
    );
    assert!(failed_needs_helper(0, 1));
    let p = failed_recovery(None, Some("boom"), 0, 1);
    assert_eq!(
        (p.recovery, p.log),
        (Recovery::Retry, "failed_fallback_retry")
    );
    let p = failed_recovery(
        Some(&json!({"action": "retry", "reasoning": "flaky"})),
        None,
        0,
        2,
    );
    assert_eq!((p.recovery, p.log), (Recovery::Retry, "failed_retry"));
    let p = failed_recovery(
        Some(&json!({"action": "skip_tasks", "tasksToSkip": ["T1", "T2"]})),
        None,
        0,
        2,
    );
    assert_eq!(
        p.recovery,
        Recovery::SkipTasks {
            tasks: vec!["T1".into(), "T2".into()]
        }
    );
    let p = failed_recovery(
        Some(&json!({"action": "run_prerequisite", "prerequisiteStep": "design"})),
        None,
        0,
        2,
    );
    assert_eq!(p.recovery, Recovery::RunPrerequisite(Step::Design));
    let p = failed_recovery(
        Some(&json!({"action": "run_prerequisite", "prerequisiteStep": "lunch"})),
        None,
        0,
        2,
    );
    assert_eq!(p.recovery, Recovery::Retry);
    let p = failed_recovery(Some(&json!({"action": "abort"})), Some("boom"), 0, 2);
    assert_eq!(p.recovery, Recovery::Escalate("boom".into()));
}
