//! The orchestration machine and the decisions moved into it from the shell's runner: the
//! status rules of the user's commands, what the loop does next, repeated decisions, the
//! spawn request and its record, the recovery carry-out, the state rebuilt from the branch,
//! a workflow's status from its agent's activity, and whole iterations driven through the
//! machine's inputs and effects. No files, no tmux, no PostgreSQL, no clock.

use headspace_core::orchestration::{
    carry_out, follow_agent, headless_exit, headless_running, heuristic_state, is_repeat, log,
    next_after, prompt_for, record_spawn, spawn_request, stale_context, user_command, Action,
    Decision, Diagnosed, Effect, ExecutionStatus, HelperCase, Input, Need, Next,
    OrchestrationExecution, OrchestrationState, Orchestrator, Progress, Read, Recovery,
    RecoveryPlan, StateRead, Step, StepStatus, UserCommand, UserGateStatus, WorkflowStatus,
    WorkflowView, BLOCKED_TASKS_KEY, MAX_SPAWN_FAILURES, PHASE_KEY, SPAWN_FAILURES_KEY,
    SPAWN_INTENT_KEY, STALE_ACK_KEY, USER_ACTED_KEY,
};
use headspace_core::view::activity::Activity;
use headspace_core::Timestamp;
use serde_json::json;

const T0: &str = "2026-03-02T09:00:00.000Z";
const HOUR: i64 = 3_600_000;

fn now() -> i64 {
    Timestamp::parse_rfc3339(T0).unwrap().millis() + HOUR
}

fn state(step: &str, status: &str) -> OrchestrationState {
    serde_json::from_value(json!({
        "schema_version": "3.0",
        "orchestration": {
            "phase": {"number": "0010", "name": "core", "status": "in_progress"},
            "step": {"current": step, "index": Step::parse(step).index(), "status": status}
        }
    }))
    .unwrap()
}

fn exec(phase: &str) -> OrchestrationExecution {
    serde_json::from_value(json!({
        "id": "run-1",
        "status": "running",
        "config": {"autoMerge": false, "maxHealAttempts": 1, "batchSizeFallback": 15,
                   "budget": {"maxTotal": 50.0}},
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

// ================================ the user's commands ================================

#[test]
fn pause_is_refused_on_a_paused_run_or_one_that_needs_attention() {
    let mut s = state("design", "in_progress");
    for status in [ExecutionStatus::Paused, ExecutionStatus::NeedsAttention] {
        let mut e = exec("design");
        e.status = status;
        let before = e.clone();
        let err = user_command(UserCommand::Pause, &mut s, &mut e, now()).unwrap_err();
        assert!(
            err.starts_with("cannot pause: orchestration run-1 is"),
            "{err}"
        );
        assert_eq!(e, before, "a refused command changes nothing");
    }
}

#[test]
fn pause_pauses_logs_by_the_user_and_restarts_the_four_hour_clock() {
    let mut s = state("design", "in_progress");
    let mut e = exec("design");
    let out = user_command(UserCommand::Pause, &mut s, &mut e, now()).unwrap();
    assert_eq!(out.stop_workflow, None);
    assert_eq!(e.status, ExecutionStatus::Paused);
    let last = e.decision_log.last().unwrap();
    assert_eq!(
        (
            last.decision.as_str(),
            last.data.as_ref().unwrap()["by"].as_str()
        ),
        ("pause", Some("user"))
    );
    assert_eq!(e.extra[USER_ACTED_KEY], json!(Timestamp(now()).to_string()));
}

#[test]
fn resume_is_refused_on_a_running_run_and_clears_the_recovery_of_one_needing_attention() {
    let mut s = state("design", "in_progress");
    let mut e = exec("design");
    assert!(user_command(UserCommand::Resume, &mut s, &mut e, now()).is_err());

    e.status = ExecutionStatus::NeedsAttention;
    e.recovery_context = Some(Default::default());
    e.extra.insert(SPAWN_FAILURES_KEY.into(), json!(7));
    user_command(UserCommand::Resume, &mut s, &mut e, now()).unwrap();
    assert_eq!(e.status, ExecutionStatus::Running);
    assert_eq!(e.recovery_context, None);
    assert!(!e.extra.contains_key(SPAWN_FAILURES_KEY));
}

#[test]
fn cancel_cancels_and_names_the_current_workflow_to_stop() {
    let mut s = state("design", "in_progress");
    let mut e = exec("design");
    e.executions.design = Some("wf-9".into());
    let out = user_command(UserCommand::Cancel, &mut s, &mut e, now()).unwrap();
    assert_eq!(out.stop_workflow.as_deref(), Some("wf-9"));
    assert_eq!(e.status, ExecutionStatus::Cancelled);
}

#[test]
fn merge_needs_verify_complete_and_no_unconfirmed_gate() {
    let mut s = state("verify", "in_progress");
    let mut e = exec("verify");
    let err = user_command(UserCommand::Merge, &mut s, &mut e, now()).unwrap_err();
    assert!(err.contains("verify is not complete"), "{err}");

    let mut s = state("verify", "complete");
    s.orchestration.phase.has_user_gate = Some(true);
    s.orchestration.phase.user_gate_status = Some(UserGateStatus::Pending);
    let err = user_command(UserCommand::Merge, &mut s, &mut e, now()).unwrap_err();
    assert!(err.contains("USER_GATE is not confirmed"), "{err}");

    s.orchestration.phase.user_gate_status = Some(UserGateStatus::Confirmed);
    user_command(UserCommand::Merge, &mut s, &mut e, now()).unwrap();
    assert_eq!(s.orchestration.step.current, Some(Step::Merge));
    let last = e.decision_log.last().unwrap();
    assert_eq!(last.decision, "transition");
    assert_eq!(last.extra["by"], "user");

    // A run waiting for the merge may merge whatever the step says.
    let mut s = state("verify", "in_progress");
    let mut e = exec("verify");
    e.status = ExecutionStatus::WaitingMerge;
    assert!(user_command(UserCommand::Merge, &mut s, &mut e, now()).is_ok());
}

#[test]
fn confirm_gate_needs_a_gate_and_puts_a_waiting_run_back_to_running() {
    let mut s = state("verify", "complete");
    let mut e = exec("verify");
    assert_eq!(
        user_command(UserCommand::ConfirmGate, &mut s, &mut e, now()).unwrap_err(),
        "the current phase has no USER_GATE to confirm"
    );
    s.orchestration.phase.has_user_gate = Some(true);
    e.status = ExecutionStatus::WaitingUserGate;
    user_command(UserCommand::ConfirmGate, &mut s, &mut e, now()).unwrap();
    assert_eq!(
        s.orchestration.phase.user_gate_status,
        Some(UserGateStatus::Confirmed)
    );
    assert_eq!(e.status, ExecutionStatus::Running);
}

#[test]
fn a_new_run_is_linked_from_the_state_and_starts_on_the_states_step() {
    let mut s = state("analyze", "in_progress");
    headspace_core::orchestration::link_run(&mut s, "run-7", now());
    assert_eq!(
        s.orchestration.extra["dashboard"],
        json!({"active": {"id": "run-7", "startedAt": Timestamp(now()).to_string(), "status": "running"}})
    );
    let opts = headspace_core::orchestration::RunOptions {
        auto_merge: true,
        budget: Some(9.0),
        settings: Some(("headspace".into(), json!({"agent": "%1"}))),
        ..Default::default()
    };
    let e = headspace_core::orchestration::new_execution("run-7", Some(&s), &opts, now());
    assert_eq!(
        e.current_phase.as_ref().map(|p| p.as_str().to_string()),
        Some("analyze".into())
    );
    assert!(e.config.auto_merge);
    assert_eq!(e.config.budget.max_total, 9.0);
    assert_eq!(e.config.extra["headspace"], json!({"agent": "%1"}));
    assert_eq!(e.extra[PHASE_KEY]["number"], "0010");
}

/// All of a machine's effects until it waits for an input.
fn drain(m: &mut Orchestrator) -> Vec<Effect> {
    std::iter::from_fn(|| m.poll_effect()).collect()
}

#[test]
fn a_user_command_through_the_machine_writes_unlocks_then_stops_the_workflow() {
    let mut m = Orchestrator::new("/p", "/p/.specflow/orchestration-state.json");
    let mut e = exec("design");
    e.executions.design = Some("wf-3".into());
    m.handle(
        now(),
        Input::User {
            command: UserCommand::Cancel,
            state: state("design", "in_progress"),
            execution: e,
        },
    );
    let fx = drain(&mut m);
    assert!(matches!(&fx[0], Effect::WriteExecution(e) if e.status == ExecutionStatus::Cancelled));
    assert_eq!(fx[1], Effect::Unlock);
    assert_eq!(fx[2], Effect::Kill("wf-3".into()));
    assert!(matches!(&fx[3], Effect::UserAnswer(Ok(_))));

    let mut m = Orchestrator::new("/p", "/p/s.json");
    m.handle(
        now(),
        Input::User {
            command: UserCommand::Resume,
            state: state("design", "in_progress"),
            execution: exec("design"),
        },
    );
    let fx = drain(&mut m);
    assert_eq!(fx[0], Effect::Unlock, "a refusal writes nothing");
    assert!(matches!(&fx[1], Effect::UserAnswer(Err(_))));
}

// ============================== next, repeats, spawns ==============================

#[test]
fn next_after_stops_backs_off_goes_on_or_polls() {
    let e = exec("design");
    let d = |a: Action| Decision::new(a, "r");
    assert_eq!(next_after(&d(Action::Complete), &e), Next::Stop);
    assert_eq!(next_after(&d(Action::Fail), &e), Next::Stop);
    let mut backoff = d(Action::WaitWithBackoff);
    backoff.backoff_ms = Some(4_000);
    assert_eq!(next_after(&backoff, &e), Next::Backoff(4_000));
    assert_eq!(
        next_after(&d(Action::WaitWithBackoff), &e),
        Next::Backoff(1_000)
    );
    for a in [
        Action::Transition,
        Action::AdvanceBatch,
        Action::InitializeBatches,
        Action::ForceStepComplete,
    ] {
        assert_eq!(next_after(&d(a), &e), Next::Again, "{a:?}");
    }
    assert_eq!(next_after(&d(Action::Wait), &e), Next::Poll);
    let mut over = exec("design");
    over.status = ExecutionStatus::Cancelled;
    assert_eq!(
        next_after(&d(Action::Wait), &over),
        Next::Stop,
        "a finished run stops"
    );
}

#[test]
fn a_decision_repeated_with_nothing_else_changed_is_a_repeat() {
    let mut before = exec("design");
    log(&mut before, "wait", "Workflow running", None, now());
    let mut after = before.clone();
    log(&mut after, "wait", "Workflow running", None, now() + 5_000);
    assert!(is_repeat(&before, &after));

    let mut other = before.clone();
    log(&mut other, "wait", "Something else", None, now() + 5_000);
    assert!(!is_repeat(&before, &other), "another reason is news");

    let mut changed = after.clone();
    changed.total_cost_usd = 1.0;
    assert!(!is_repeat(&before, &changed), "another change is news");
    assert!(!is_repeat(&exec("design"), &after), "a first entry is news");
}

#[test]
fn a_heal_request_carries_the_failure_and_a_spawn_prompt_its_context() {
    let mut e = exec("implement");
    e.batches.items = vec![headspace_core::orchestration::BatchItem::new(
        0,
        "Core",
        vec!["T001".into(), "T002".into()],
    )];
    e.batches.items[0].error = Some("tests fail".into());
    e.batches.total = 1;
    let d = Decision::new(Action::HealBatch, "heal").with_batch(0);
    let req = spawn_request(&state("implement", "in_progress"), &e, &d);
    assert!(req.healer);
    assert_eq!(req.batch, Some(0));
    assert_eq!(
        prompt_for(&req),
        "/flow.implement Heal batch 0 (section \"Core\", tasks T001, T002): it failed with: tests fail. Fix the failure and finish its tasks."
    );
    let design = spawn_request(
        &state("design", "not_started"),
        &exec("design"),
        &Decision::new(Action::Spawn, "go"),
    );
    assert_eq!(
        (design.step.clone(), prompt_for(&design)),
        (Step::Design, "/flow.design".to_string())
    );
}

#[test]
fn a_spawn_links_its_workflow_and_failures_escalate_at_the_limit() {
    let req = spawn_request(
        &state("design", "not_started"),
        &exec("design"),
        &Decision::new(Action::Spawn, "go"),
    );
    let mut e = exec("design");
    e.extra.insert(
        SPAWN_INTENT_KEY.into(),
        json!({"skill": "flow.design", "timestamp": 1}),
    );
    assert_eq!(record_spawn(&mut e, &req, &Ok("wf-1".into()), now()), 0);
    assert_eq!(e.executions.design.as_deref(), Some("wf-1"));
    assert!(
        !e.extra.contains_key(SPAWN_INTENT_KEY),
        "the intent is cleared"
    );

    let mut e = exec("design");
    for n in 1..=MAX_SPAWN_FAILURES {
        assert_eq!(record_spawn(&mut e, &req, &Err("down".into()), now()), n);
        let attention = e.status == ExecutionStatus::NeedsAttention;
        assert_eq!(attention, n == MAX_SPAWN_FAILURES, "after {n} failures");
    }
}

// ================================ recovery carry-out ================================

fn plan(recovery: Recovery) -> RecoveryPlan {
    RecoveryPlan {
        recovery,
        log: "test_plan",
        reason: "because".into(),
        kill: false,
    }
}

#[test]
fn acknowledging_a_stale_workflow_counts_its_silence_from_now() {
    let (mut s, mut e) = (state("design", "in_progress"), exec("design"));
    let next = carry_out(
        &mut s,
        &mut e,
        &plan(Recovery::Acknowledge),
        Some("wf-1"),
        now(),
    );
    assert_eq!(next, Next::Poll);
    assert_eq!(e.extra[STALE_ACK_KEY]["wf-1"], json!(now()));
    assert_eq!(
        e.decision_log.last().unwrap().data.as_ref().unwrap()["workflowId"],
        "wf-1"
    );
}

#[test]
fn a_retry_counts_a_heal_restarts_the_step_and_forgets_its_workflow() {
    let (mut s, mut e) = (state("design", "failed"), exec("design"));
    e.executions.design = Some("wf-1".into());
    let next = carry_out(&mut s, &mut e, &plan(Recovery::Retry), None, now());
    assert_eq!(next, Next::Again);
    assert_eq!(e.heal_attempts, Some(1));
    assert_eq!(
        s.orchestration.step.status.get(),
        Some(&StepStatus::InProgress)
    );
    assert_eq!(e.executions.design, None);
}

#[test]
fn skipped_tasks_are_recorded_as_blocked() {
    let (mut s, mut e) = (state("design", "blocked"), exec("design"));
    carry_out(
        &mut s,
        &mut e,
        &plan(Recovery::SkipTasks {
            tasks: vec!["T004".into()],
        }),
        None,
        now(),
    );
    assert_eq!(
        e.extra[BLOCKED_TASKS_KEY],
        json!([{"task": "T004", "reason": "because"}])
    );
    assert_eq!(
        s.orchestration.step.status.get(),
        Some(&StepStatus::InProgress)
    );
}

#[test]
fn a_prerequisite_sends_the_run_back_and_an_escalation_needs_attention() {
    let (mut s, mut e) = (state("analyze", "failed"), exec("analyze"));
    carry_out(
        &mut s,
        &mut e,
        &plan(Recovery::RunPrerequisite(Step::Design)),
        None,
        now(),
    );
    assert_eq!(s.orchestration.step.current, Some(Step::Design));
    assert_eq!(
        s.orchestration.step.status.get(),
        Some(&StepStatus::NotStarted)
    );
    assert_eq!(
        e.heal_attempts,
        Some(1),
        "counted, so it cannot loop forever"
    );

    let (mut s, mut e) = (state("analyze", "failed"), exec("analyze"));
    let next = carry_out(
        &mut s,
        &mut e,
        &plan(Recovery::Escalate("stuck".into())),
        None,
        now(),
    );
    assert_eq!(next, Next::Poll);
    assert_eq!(e.status, ExecutionStatus::NeedsAttention);
}

#[test]
fn a_plan_is_carried_out_only_while_the_diagnosed_situation_holds() {
    let mut e = exec("design");
    e.executions.design = Some("wf-1".into());
    let stale = Diagnosed::StaleWorkflow("wf-1".into());
    assert!(stale.still_holds(&state("design", "in_progress"), &e));
    e.executions.design = Some("wf-2".into());
    assert!(
        !stale.still_holds(&state("design", "in_progress"), &e),
        "respawned meanwhile"
    );
    assert!(Diagnosed::FailedStep.still_holds(&state("design", "failed"), &e));
    assert!(!Diagnosed::FailedStep.still_holds(&state("design", "in_progress"), &e));
}

#[test]
fn the_helper_is_told_how_long_a_workflow_was_silent_in_rounded_minutes() {
    let mut d = Decision::new(Action::RecoverStale, "stale");
    d.workflow_id = Some("wf-1".into());
    let v = WorkflowView {
        id: "wf-1".into(),
        status: WorkflowStatus::Running,
        last_activity_ms: now() - 12 * 60_000 - 31_000,
        cost_usd: 0.0,
    };
    let (ctx, minutes) = stale_context(&d, Some(&v), &state("design", "in_progress"), "/p", now());
    assert_eq!(minutes, 13);
    assert_eq!(ctx["workflowId"], "wf-1");
    assert_eq!(ctx["projectPath"], "/p");
}

// ================================ the heuristic ================================

#[test]
fn a_lost_state_is_rebuilt_from_the_run_or_the_phase_the_branch_names() {
    let mut e = exec("analyze");
    let s = heuristic_state(&e, Some("0010-core")).unwrap();
    assert_eq!(s.orchestration.phase.number.get(), Some(&json!("0010")));
    assert_eq!(s.orchestration.step.current, Some(Step::Analyze));
    assert_eq!(
        s.orchestration.step.status.get(),
        Some(&StepStatus::InProgress)
    );
    assert!(
        heuristic_state(&e, Some("main")).is_none(),
        "no digits, no phase"
    );
    assert!(heuristic_state(&e, None).is_none());

    e.extra
        .insert(PHASE_KEY.into(), json!({"number": "0042", "name": "x"}));
    let s = heuristic_state(&e, Some("0010-core")).unwrap();
    assert_eq!(
        s.orchestration.phase.number.get(),
        Some(&json!("0042")),
        "the run's phase wins"
    );

    let done = exec("complete");
    let s = heuristic_state(&done, Some("0010-x")).unwrap();
    assert_eq!(
        (
            s.orchestration.step.current,
            s.orchestration.step.status.get().cloned()
        ),
        (Some(Step::Merge), Some(StepStatus::Complete))
    );
}

// ============================ activity → workflow status ============================

fn progress() -> Progress {
    Progress {
        status: WorkflowStatus::Running,
        last_activity_ms: 10,
        cost_usd: 0.0,
        error: None,
    }
}

#[test]
fn an_agents_activity_is_its_steps_status() {
    let cases = [
        (Activity::Running, WorkflowStatus::Running),
        (Activity::Waiting, WorkflowStatus::WaitingForInput),
        (Activity::Idle, WorkflowStatus::Completed),
        (Activity::Ended, WorkflowStatus::Failed),
    ];
    for (activity, status) in cases {
        let mut p = progress();
        follow_agent(&mut p, activity, Some(50), "%3", 100);
        assert_eq!(p.status, status, "{activity:?}");
    }
    let mut p = progress();
    follow_agent(&mut p, Activity::Running, Some(50), "%3", 100);
    assert_eq!(
        p.last_activity_ms, 50,
        "running: as of the agent's last sighting"
    );
    let mut p = progress();
    follow_agent(&mut p, Activity::Ended, None, "%3", 100);
    assert_eq!(p.error.as_deref(), Some("agent %3 ended"));
}

#[test]
fn a_headless_exit_completes_or_fails_with_its_cost_and_reason() {
    let mut p = progress();
    headless_exit(
        &mut p,
        "0\n",
        r#"{"total_cost_usd":0.25,"is_error":false}"#,
        "",
        100,
    );
    assert_eq!(
        (p.status.clone(), p.cost_usd),
        (WorkflowStatus::Completed, 0.25)
    );
    let mut p = progress();
    headless_exit(&mut p, "3", r#"{"is_error":true,"result":"boom"}"#, "", 100);
    assert_eq!(p.status, WorkflowStatus::Failed);
    assert_eq!(p.error.as_deref(), Some("exit 3: boom"));
    let mut p = progress();
    headless_running(&mut p, Some(false), 0, 0, 100);
    assert_eq!(
        p.status,
        WorkflowStatus::Failed,
        "gone without an exit code"
    );
}

#[test]
fn a_headless_process_with_no_pid_yet_is_unknown_until_the_start_grace_ends() {
    use headspace_core::orchestration::HEADLESS_START_GRACE_MS;
    // Its runner may have died between starting it and recording its pid: not failed (a
    // failed step is started again, beside the one still running).
    let mut p = progress();
    let before = p.clone();
    headless_running(&mut p, None, 0, 1_000, 1_000 + HEADLESS_START_GRACE_MS - 1);
    assert_eq!(p, before, "still unknown within the grace");
    headless_running(&mut p, None, 0, 1_000, 1_000 + HEADLESS_START_GRACE_MS);
    assert_eq!(p.status, WorkflowStatus::Failed, "never started");
    assert_eq!(p.error.as_deref(), Some("the process never started"));
    let mut p = progress();
    headless_running(&mut p, Some(true), 70, 0, 1_000_000);
    assert_eq!(
        (p.status, p.last_activity_ms),
        (WorkflowStatus::Running, 70),
        "alive: active as of its output"
    );
}

// ============================ whole iterations, driven ============================

fn files(execution: Option<OrchestrationExecution>, state: StateRead) -> Input {
    Input::Files { execution, state }
}

#[test]
fn an_iteration_spawns_design_between_two_short_locked_stretches() {
    let mut m = Orchestrator::new("/p", "/p/s.json");
    m.handle(now(), Input::Begin);
    assert_eq!(
        drain(&mut m),
        [Effect::Read(Read {
            execution: Need::Optional,
            state: Need::Optional
        })]
    );
    m.handle(
        now(),
        files(
            Some(exec("design")),
            StateRead::Read(state("design", "not_started")),
        ),
    );
    assert_eq!(
        drain(&mut m),
        [
            Effect::Lock,
            Effect::Read(Read {
                execution: Need::Required,
                state: Need::Recoverable
            })
        ]
    );
    m.handle(
        now(),
        files(
            Some(exec("design")),
            StateRead::Read(state("design", "not_started")),
        ),
    );
    let fx = drain(&mut m);
    assert!(
        matches!(&fx[0], Effect::WriteState(s) if s.orchestration.step.status.get() == Some(&StepStatus::InProgress))
    );
    assert!(matches!(&fx[1], Effect::WriteExecution(e) if e.extra.contains_key(SPAWN_INTENT_KEY)));
    assert_eq!(fx[2], Effect::Unlock, "the spawn runs without the lock");
    assert!(matches!(&fx[3], Effect::Spawn { prompt, .. } if prompt == "/flow.design"));
    assert_eq!(fx.len(), 4);

    m.handle(now(), Input::Spawned(Ok("wf-1".into())));
    assert_eq!(
        drain(&mut m),
        [
            Effect::Lock,
            Effect::Read(Read {
                execution: Need::Required,
                state: Need::Skip
            })
        ]
    );
    m.handle(now(), files(Some(exec("design")), StateRead::NotRead));
    let fx = drain(&mut m);
    assert!(
        matches!(&fx[0], Effect::WriteExecution(e) if e.executions.design.as_deref() == Some("wf-1"))
    );
    assert_eq!(fx[1], Effect::Unlock);
    assert!(
        matches!(&fx[2], Effect::LogDecision { decision, logged: true } if decision.action == Action::Spawn)
    );
    assert_eq!(fx[3], Effect::Wake(Next::Poll));
    assert!(m.is_over());
}

#[test]
fn an_unreadable_state_settles_then_is_rebuilt_by_the_heuristic_after_a_backup() {
    let mut m = Orchestrator::new("/p", "/p/s.json");
    let mut e = exec("analyze");
    e.extra.insert(PHASE_KEY.into(), json!({"number": "0010"}));
    m.handle(now(), Input::Begin);
    let _ = drain(&mut m);
    m.handle(now(), files(None, StateRead::Unreadable("gone".into())));
    let _ = drain(&mut m);
    m.handle(
        now(),
        files(Some(e.clone()), StateRead::Unreadable("corrupt".into())),
    );
    for _ in 0..3 {
        let fx = drain(&mut m);
        assert!(fx.contains(&Effect::Pause(200)), "{fx:?}");
        m.handle(now(), files(None, StateRead::Unreadable("corrupt".into())));
    }
    assert_eq!(
        drain(&mut m),
        [
            Effect::Lock,
            Effect::Read(Read {
                execution: Need::Required,
                state: Need::Skip
            })
        ]
    );
    m.handle(now(), files(Some(e.clone()), StateRead::NotRead));
    let fx = drain(&mut m);
    assert_eq!(fx[0], Effect::BackupState, "backed up before anything else");
    assert!(
        matches!(&fx[2], Effect::AskHelper { case: HelperCase::CorruptState, context } if context["error"] == "corrupt")
    );
    m.handle(now(), Input::HelperAnswer(None));
    let _ = drain(&mut m);
    m.handle(
        now(),
        files(Some(e.clone()), StateRead::Unreadable("corrupt".into())),
    );
    assert_eq!(
        drain(&mut m),
        [
            Effect::BackupState,
            Effect::Read(Read {
                execution: Need::Skip,
                state: Need::Optional
            })
        ]
    );
    m.handle(now(), files(None, StateRead::Unreadable("corrupt".into())));
    let fx = drain(&mut m);
    assert!(
        matches!(&fx[0], Effect::WriteState(s) if s.orchestration.step.current == Some(Step::Analyze))
    );
    assert!(
        matches!(&fx[1], Effect::WriteExecution(e) if e.decision_log.last().unwrap().decision == "state_heuristic_recovered")
    );
    assert_eq!(fx[2], Effect::Unlock);
    assert_eq!(fx[4], Effect::Wake(Next::Again));
}

#[test]
fn a_state_readable_again_while_settling_is_not_recovered_over() {
    let mut m = Orchestrator::new("/p", "/p/s.json");
    m.handle(now(), Input::Begin);
    let _ = drain(&mut m);
    m.handle(now(), files(None, StateRead::Unreadable("x".into())));
    let _ = drain(&mut m);
    m.handle(
        now(),
        files(
            Some(exec("design")),
            StateRead::Unreadable("half-written".into()),
        ),
    );
    let _ = drain(&mut m);
    m.handle(
        now(),
        files(None, StateRead::Read(state("design", "in_progress"))),
    );
    let fx = drain(&mut m);
    assert!(matches!(&fx[0], Effect::LogDecision { logged: false, .. }));
    assert_eq!(fx[1], Effect::Wake(Next::Again));
    assert!(!fx
        .iter()
        .any(|f| matches!(f, Effect::BackupState | Effect::WriteState(_))));
}

#[test]
fn a_failed_step_out_of_heals_escalates_without_asking_the_helper() {
    let mut m = Orchestrator::new("/p", "/p/s.json");
    let mut e = exec("design");
    e.heal_attempts = Some(1);
    m.handle(now(), Input::Begin);
    let _ = drain(&mut m);
    m.handle(now(), files(None, StateRead::NotRead));
    let _ = drain(&mut m);
    m.handle(
        now(),
        files(Some(e.clone()), StateRead::Read(state("design", "failed"))),
    );
    let fx = drain(&mut m);
    assert!(
        !fx.iter().any(|f| matches!(f, Effect::AskHelper { .. })),
        "{fx:?}"
    );
    assert_eq!(
        fx[fx.len() - 2..],
        [
            Effect::Lock,
            Effect::Read(Read {
                execution: Need::Required,
                state: Need::Required
            })
        ]
    );
    m.handle(
        now(),
        files(Some(e), StateRead::Read(state("design", "failed"))),
    );
    let fx = drain(&mut m);
    assert!(
        matches!(&fx[0], Effect::WriteExecution(e) if e.status == ExecutionStatus::NeedsAttention)
    );
    assert_eq!(fx.last(), Some(&Effect::Wake(Next::Poll)));
}
