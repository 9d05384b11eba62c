//! The seed's acceptance criteria that belong to the core, and the recorded incidents, each
//! as a named test driving the real core through the in-memory store.

use headspace_core::harness::replay::Replayer;
use headspace_core::harness::trace::Step;
use headspace_core::io::Reply;
use headspace_core::model::{TimestampSource, TurnRow, TurnSource};
use headspace_core::{Actor, Intent, TaskState, Timestamp};
use headspace_testkit::synth::{Line, SessionWriter, CLAUDE_DIR};
use serde_json::json;

struct World {
    r: Replayer,
    now: Timestamp,
    s: SessionWriter,
}

impl World {
    fn new() -> World {
        let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
        World {
            r: Replayer::new(CLAUDE_DIR),
            now: t0,
            s: SessionWriter::new(1, t0),
        }
    }
    fn tick(&mut self, ms: i64) {
        self.now = self.now.add_millis(ms);
        if self.s.clock < self.now {
            self.s.clock = self.now;
        }
    }
    fn append(&mut self, line: &Line) {
        self.tick(5);
        let data = format!("{}\n", line.json).into_bytes();
        self.r.step(
            self.now,
            Step::Append {
                path: self.s.path(),
                data,
            },
        );
    }
    fn hook(&mut self, event: &str, extra: serde_json::Value) {
        self.hook_stamped(event, Some(self.now), extra);
    }
    fn hook_stamped(&mut self, event: &str, stamp: Option<Timestamp>, extra: serde_json::Value) {
        self.tick(5);
        let body = self.s.hook(event, Some("%1"), stamp, extra);
        self.r.step(
            self.now,
            Step::Hook {
                agent: headspace_core::kind::AgentKind::Claude,
                event: Some(event.into()),
                body,
            },
        );
    }
    fn prompt_hook(&mut self, text: &str) {
        self.hook("UserPromptSubmit", json!({"prompt": text}));
    }
    fn stop_hook(&mut self, msg: Option<&str>) {
        let extra = msg.map_or(json!({}), |m| json!({"last_assistant_message": m}));
        self.hook("Stop", extra);
    }
    fn restart(&mut self) {
        self.tick(1);
        self.r.step(self.now, Step::Restart);
    }
    fn reconcile(&mut self) -> Reply {
        self.tick(1);
        let agent = self.s.session_id.clone();
        self.r.step(self.now, Step::Reconcile { agent });
        self.r.replies().last().expect("a reply").1.clone()
    }
    fn turns(&self) -> Vec<TurnRow> {
        let mut t: Vec<TurnRow> = self.r.store().turns().cloned().collect();
        t.sort_by_key(|t| (t.timestamp, t.id));
        t
    }
    fn texts(&self) -> Vec<String> {
        self.turns().into_iter().map(|t| t.text).collect()
    }
    fn state(&self) -> TaskState {
        let tasks: Vec<_> = self.r.store().tasks().cloned().collect();
        headspace_core::view::activity::agent_state(headspace_core::view::activity::current_task(
            &tasks,
        ))
    }
}

// ----- AC 1.x: structural dedup ------------------------------------------------------------

#[test]
fn ac_1_1_same_first_200_chars_are_two_turns() {
    let mut w = World::new();
    let a = format!("{} alpha", "x".repeat(200));
    let b = format!("{} beta", "x".repeat(200));
    w.prompt_hook(&a);
    let la = w.s.prompt(&a, None);
    w.append(&la);
    w.stop_hook(Some("ok"));
    let t = w.s.agent_text("ok");
    w.append(&t);
    let lb = w.s.prompt(&b, None);
    w.append(&lb);
    let turns = w.turns();
    assert_eq!(turns.iter().filter(|t| t.actor == Actor::User).count(), 2);
    assert_eq!(
        turns
            .iter()
            .find(|t| t.text == a)
            .unwrap()
            .entry_uuid
            .as_deref(),
        Some(la.uuid.as_str())
    );
    assert_eq!(
        turns
            .iter()
            .find(|t| t.text == b)
            .unwrap()
            .entry_uuid
            .as_deref(),
        Some(lb.uuid.as_str())
    );
}

#[test]
fn ac_1_2_turn_stored_before_a_restart_is_claimed_not_duplicated() {
    let mut w = World::new();
    w.prompt_hook("refactor the parser");
    w.restart();
    let l = w.s.prompt("refactor the parser", None);
    w.append(&l);
    let turns = w.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].source, TurnSource::Hook);
    assert_eq!(turns[0].entry_uuid.as_deref(), Some(l.uuid.as_str()));
    assert_eq!(turns[0].timestamp_source, TimestampSource::Jsonl);
}

#[test]
fn ac_1_3_different_entry_sharing_a_prefix_creates_a_new_turn() {
    let mut w = World::new();
    let base = "y".repeat(250);
    w.prompt_hook(&format!("{base} one"));
    let l = w.s.prompt(&format!("{base} two"), None);
    w.append(&l);
    // The hook's turn stays provisional; the entry made its own.
    assert_eq!(w.turns().len(), 2);
    assert_eq!(
        w.turns().iter().filter(|t| t.entry_uuid.is_some()).count(),
        1
    );
}

// ----- AC 2.x: the state machine absorbs what happens ----------------------------------------

#[test]
fn ac_2_1_idle_plus_agent_progress_is_processing() {
    // A transcript read from the middle of a conversation: agent output with no command.
    let mut w = World::new();
    let l = w.s.agent_text("Reading the configuration files.");
    w.append(&l);
    assert_eq!(w.state(), TaskState::Processing);
}

#[test]
fn ac_2_2_idle_plus_agent_question_awaits_input() {
    let mut w = World::new();
    let l = w.s.agent_text("Which database should I use?");
    w.append(&l);
    assert_eq!(w.state(), TaskState::AwaitingInput);
}

#[test]
fn ac_2_3_no_real_combination_is_rejected() {
    use headspace_core::task::state::{transition, Outcome};
    for s in TaskState::ALL {
        for i in [
            Intent::Question,
            Intent::Completion,
            Intent::Progress,
            Intent::EndOfTask,
        ] {
            assert_ne!(transition(s, Actor::Agent, i), Outcome::Reject);
        }
        for i in [Intent::Command, Intent::Answer] {
            assert_ne!(transition(s, Actor::User, i), Outcome::Reject);
        }
    }
}

// ----- AC 3.x: a turn never depends on its state change ----------------------------------------

#[test]
fn ac_3_1_agent_583_question_while_awaiting_input_is_kept_and_applied() {
    let mut w = World::new();
    w.prompt_hook("set up the database");
    w.stop_hook(Some("Should I use Postgres or SQLite?"));
    assert_eq!(w.state(), TaskState::AwaitingInput);
    // The seed's crash: AWAITING_INPUT + agent QUESTION rolled the turn back.
    w.stop_hook(Some("Also, which port should it listen on?"));
    assert_eq!(w.state(), TaskState::AwaitingInput);
    assert_eq!(w.turns().len(), 3);
}

#[test]
fn ac_3_2_turn_write_comes_before_its_state_change() {
    use headspace_core::{Command, Config, Core, Input, Write};
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let s = SessionWriter::new(1, Timestamp(0));
    core.handle(
        Timestamp(1),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook("UserPromptSubmit", None, None, json!({"prompt": "go"})),
        },
    );
    core.handle(
        Timestamp(2),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook(
                "Stop",
                None,
                None,
                json!({"last_assistant_message": "All tests pass."}),
            ),
        },
    );
    let mut order = Vec::new();
    while let Some(c) = core.poll_command() {
        if let Command::Store(w) = c {
            order.push(match w {
                Write::Turn(t) => format!("turn {}", t.intent.as_str()),
                Write::Task(t) => format!("task {}", t.state.as_str()),
                _ => continue,
            });
        }
    }
    let turn = order.iter().position(|o| o == "turn completion").unwrap();
    let done = order.iter().position(|o| o == "task complete").unwrap();
    assert!(turn < done, "{order:?}");
}

#[test]
fn ac_3_3_user_turn_is_kept_when_tool_hooks_follow_at_once() {
    // user-turn-data-loss: PostToolUse 0.7 ms after the prompt.
    let mut w = World::new();
    w.prompt_hook("run the tests");
    w.r.step(
        w.now.add_millis(1),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("PostToolUse".into()),
            body: w.s.hook(
                "PostToolUse",
                Some("%1"),
                Some(w.now),
                json!({"tool_name": "Bash"}),
            ),
        },
    );
    assert_eq!(w.texts(), vec!["run the tests"]);
    assert_eq!(w.state(), TaskState::Commanded);
}

#[test]
fn ac_3_6_rejection_warning_wording() {
    assert_eq!(
        headspace_core::task::state::preserved_warning("HOOK_RECEIVER", TaskState::Complete, Actor::Agent, Intent::Command, 42),
        "[HOOK_RECEIVER] state transition failed: from=complete actor=agent intent=command error=invalid transition — turn 42 preserved"
    );
}

// ----- AC 5.x: the transcript guarantees completeness -------------------------------------------

#[test]
fn ac_5_1_unmatched_entry_creates_a_turn() {
    let mut w = World::new();
    let l = w.s.prompt("add a README", None);
    w.append(&l);
    let t = &w.turns()[0];
    assert_eq!(
        (t.actor, t.intent, t.text.as_str()),
        (Actor::User, Intent::Command, "add a README")
    );
    assert_eq!(t.entry_uuid.as_deref(), Some(l.uuid.as_str()));
    assert_eq!(t.timestamp_source, TimestampSource::Jsonl);
    assert_eq!(t.source, TurnSource::Transcript);
}

#[test]
fn ac_5_2_reading_twice_creates_nothing_twice() {
    let mut w = World::new();
    for l in [
        w.s.prompt("a", None),
        w.s.agent_text("b"),
        w.s.prompt("c", None),
    ] {
        w.append(&l);
    }
    let before = w.turns();
    // The file is replaced by itself (re-read from 0), reconciled, and the server restarts.
    w.r.step(w.now, Step::Restart);
    assert!(matches!(
        w.reconcile(),
        Reply::Reconciled { created: 0, .. }
    ));
    assert_eq!(w.turns(), before);
}

#[test]
fn ac_5_3_entry_long_after_its_hook_is_still_matched_and_one_without_hook_still_created() {
    let mut w = World::new();
    w.prompt_hook("first");
    w.tick(45_000);
    let l = w.s.prompt("first", None);
    w.append(&l);
    w.tick(600_000);
    let l2 = w.s.prompt("second, hook lost", None);
    w.append(&l2);
    assert_eq!(w.turns().len(), 2);
    assert!(w.turns().iter().all(|t| t.entry_uuid.is_some()));
}

// ----- AC 6.x: recovered turns drive the lifecycle -----------------------------------------------

#[test]
fn ac_6_1_recovered_question_awaits_input() {
    let mut w = World::new();
    w.prompt_hook("deploy");
    let p = w.s.prompt("deploy", None);
    w.append(&p);
    let (q, _, _) = w.s.question("Which environment?", &["staging", "prod"]);
    w.append(&q);
    assert_eq!(w.state(), TaskState::AwaitingInput);
}

#[test]
fn ac_6_2_recovered_completion_completes() {
    let mut w = World::new();
    let p = w.s.prompt("fix the build", None);
    w.append(&p);
    let t = w.s.agent_text("Done. All tests pass.");
    w.append(&t);
    assert_eq!(w.state(), TaskState::Complete);
}

#[test]
fn ac_6_3_recovered_progress_leaves_processing_unchanged() {
    let mut w = World::new();
    let p = w.s.prompt("fix the build", None);
    w.append(&p);
    let t = w.s.agent_text("Reading the build script.");
    w.append(&t);
    assert_eq!(w.state(), TaskState::Processing);
    let events = w.r.events();
    let t = w.s.agent_text("Reading the test config.");
    w.append(&t);
    assert_eq!(w.state(), TaskState::Processing);
    assert_eq!(
        w.r.events(),
        events + 1,
        "only turn_created, no state_changed"
    );
}

#[test]
fn ac_6_4_recovered_transition_broadcasts_card_refresh() {
    use headspace_core::{Command, Config, Core, Input};
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let mut s = SessionWriter::new(1, Timestamp(0));
    let data = format!(
        "{}\n{}\n",
        s.prompt("go", None).json,
        s.agent_text("Which one?").json
    )
    .into_bytes();
    core.handle(
        Timestamp(1),
        Input::Transcript {
            path: s.path(),
            offset: 0,
            data,
            read: None,
        },
    );
    let names: Vec<&str> = std::iter::from_fn(|| core.poll_command())
        .filter_map(|c| {
            if let Command::Publish(e) = c {
                Some(e.name)
            } else {
                None
            }
        })
        .collect();
    assert!(
        names.contains(&"state_changed") && names.contains(&"card_refresh"),
        "{names:?}"
    );
}

#[test]
fn ac_6_5_transcript_turn_is_kept_when_its_transition_is_not_taken() {
    // A late progress line of a task a Stop already completed does not reopen it, and is kept.
    let mut w = World::new();
    w.prompt_hook("go");
    w.stop_hook(Some("Finished: all tests pass."));
    assert_eq!(w.state(), TaskState::Complete);
    let p = w.s.prompt("go", None);
    w.append(&p);
    let mid = w.s.agent_text("Running the tests now");
    w.append(&mid);
    assert!(w.texts().contains(&"Running the tests now".to_string()));
    assert_eq!(w.state(), TaskState::Complete);
}

// ----- recorded incidents and matching rules ------------------------------------------------------

#[test]
fn hook_after_its_entry_adds_nothing() {
    let mut w = World::new();
    let p = w.s.prompt("late hook", None);
    w.append(&p);
    w.prompt_hook("late hook");
    let t = w.s.agent_text("Done, all tests pass.");
    w.append(&t);
    w.stop_hook(Some("Done, all tests pass."));
    assert_eq!(w.turns().len(), 2);
    assert!(
        w.turns().iter().all(|t| t.hook_key.is_some()),
        "both entries remember their hook"
    );
}

#[test]
fn hook_storm_counts_once() {
    let mut w = World::new();
    let body = w.s.hook(
        "UserPromptSubmit",
        Some("%1"),
        Some(w.now),
        json!({"prompt": "storm"}),
    );
    for i in 0..300 {
        w.r.step(
            w.now.add_millis(i),
            Step::Hook {
                agent: headspace_core::kind::AgentKind::Claude,
                event: Some("user-prompt-submit".into()),
                body: body.clone(),
            },
        );
    }
    let p = w.s.prompt("storm", None);
    w.append(&p);
    assert_eq!(w.turns().len(), 1);
}

#[test]
fn identical_short_replies_are_two_turns() {
    let mut w = World::new();
    w.prompt_hook("start");
    w.stop_hook(Some("Proceed with option A?"));
    w.prompt_hook("yes");
    w.stop_hook(Some("Proceed with option B?"));
    w.prompt_hook("yes");
    for l in [
        w.s.prompt("start", None),
        w.s.agent_text("Proceed with option A?"),
        w.s.prompt("yes", None),
        w.s.agent_text("Proceed with option B?"),
        w.s.prompt("yes", None),
    ] {
        w.append(&l);
    }
    let yes: Vec<_> = w.turns().into_iter().filter(|t| t.text == "yes").collect();
    assert_eq!(yes.len(), 2);
    assert!(yes.iter().all(|t| t.entry_uuid.is_some()));
    assert_eq!(w.turns().len(), 5);
}

#[test]
fn prompt_ids_decide_over_text() {
    let mut w = World::new();
    w.hook(
        "UserPromptSubmit",
        json!({"prompt": "<ide_selection>x</ide_selection> go", "prompt_id": "p-1"}),
    );
    let l = w.s.prompt("go now", Some("p-1"));
    w.append(&l);
    assert_eq!(w.turns().len(), 1);
}

#[test]
fn stop_before_transcript_uses_last_assistant_message() {
    let mut w = World::new();
    w.prompt_hook("summarise");
    w.stop_hook(Some("Here is the summary: it works."));
    assert_eq!(w.turns().len(), 2);
    assert_eq!(w.state(), TaskState::Complete);
    for l in [
        w.s.prompt("summarise", None),
        w.s.agent_text("Here is the summary: it works."),
    ] {
        w.append(&l);
    }
    assert_eq!(w.turns().len(), 2);
    assert!(w
        .turns()
        .iter()
        .all(|t| t.timestamp_source == TimestampSource::Jsonl));
    assert_eq!(w.state(), TaskState::Complete);
}

#[test]
fn sm232_late_stop_does_not_end_the_newer_task() {
    let mut w = World::new();
    w.prompt_hook("first task");
    let stop_emitted = w.now.add_millis(1);
    w.tick(2_000);
    w.prompt_hook("second task");
    // The first task's Stop, emitted before the second prompt, arrives after it.
    w.hook_stamped("Stop", Some(stop_emitted), json!({}));
    assert_eq!(w.state(), TaskState::Commanded);
}

#[test]
fn sm240_lost_stop_is_made_up_by_the_transcript() {
    let mut w = World::new();
    w.prompt_hook("quick job");
    for l in [
        w.s.prompt("quick job", None),
        w.s.agent_text("Here is the output you asked for."),
        w.s.turn_duration(),
    ] {
        w.append(&l);
    }
    assert_eq!(w.state(), TaskState::Complete);
}

#[test]
fn interrupt_ends_the_turn() {
    let mut w = World::new();
    for l in [
        w.s.prompt("long job", None),
        w.s.agent_text("Working on it"),
        w.s.interrupt(),
    ] {
        w.append(&l);
    }
    assert_eq!(w.state(), TaskState::Complete);
}

#[test]
fn answer_to_ask_user_question_resumes_work() {
    let mut w = World::new();
    let p = w.s.prompt("pick a dir", None);
    w.append(&p);
    let (q, id, input) = w.s.question("Where?", &["a/", "b/"]);
    w.hook(
        "PreToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": id, "tool_input": input}),
    );
    assert_eq!(w.state(), TaskState::AwaitingInput);
    w.append(&q);
    let a = w.s.answer(&id, "Where?", "b/");
    w.append(&a);
    assert_eq!(w.state(), TaskState::Processing);
    let turns = w.turns();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[2].text, "b/");
    assert_eq!(turns[2].intent, Intent::Answer);
}

#[test]
fn clear_gives_a_new_session_in_the_same_agent() {
    let mut w = World::new();
    w.prompt_hook("before clear");
    let old = w.s.clone();
    w.s = SessionWriter::new(2, w.now);
    w.hook("SessionStart", json!({"source": "clear"}));
    w.prompt_hook("after clear");
    let agents: Vec<_> = w.r.store().agents().cloned().collect();
    assert_eq!(agents.len(), 1);
    assert_eq!(
        agents[0].sessions,
        vec![old.session_id.clone(), w.s.session_id.clone()]
    );
    // The old session's Stop cannot end the new session's task.
    let body = old.hook("Stop", Some("%1"), Some(w.now), json!({}));
    w.r.step(
        w.now.add_millis(1),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body,
        },
    );
    assert_eq!(w.state(), TaskState::Commanded);
}

#[test]
fn partial_line_is_completed_by_the_next_append() {
    let mut w = World::new();
    let l = w.s.prompt("split me", None);
    let (a, b) = l.json.split_at(10);
    w.r.step(
        w.now,
        Step::Append {
            path: w.s.path(),
            data: a.as_bytes().to_vec(),
        },
    );
    assert!(w.turns().is_empty());
    w.r.step(
        w.now,
        Step::Append {
            path: w.s.path(),
            data: format!("{b}\n").into_bytes(),
        },
    );
    assert_eq!(w.texts(), vec!["split me"]);
    assert_eq!(
        w.r.store().offset(&w.s.path()),
        Some(l.json.len() as u64 + 1)
    );
}

#[test]
fn garbage_line_is_skipped_and_neighbours_kept() {
    let mut w = World::new();
    let a = w.s.prompt("before", None);
    let b = w.s.prompt("after", None);
    let data = format!("{}\n\u{0}\u{1}not json at all\n{}\n", a.json, b.json);
    w.r.step(
        w.now,
        Step::Append {
            path: w.s.path(),
            data: data.into_bytes(),
        },
    );
    assert_eq!(w.texts(), vec!["before", "after"]);
}

#[test]
fn transcript_path_outside_the_claude_dir_is_refused() {
    let mut w = World::new();
    let body = serde_json::to_vec(
        &json!({"session_id": "s", "transcript_path": "/etc/passwd", "prompt": "x"}),
    )
    .unwrap();
    w.r.step(
        w.now,
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("UserPromptSubmit".into()),
            body,
        },
    );
    assert_eq!(w.r.store().offset("etc/passwd"), None);
    assert!(w.r.store().agents().all(|a| a.transcript_path.is_none()));
}

#[test]
fn reconcile_reports_recovered_turns_and_refuses_a_second_at_once() {
    use headspace_core::{Command, Config, Core, Input};
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let mut s = SessionWriter::new(1, Timestamp(0));
    // The hook names the transcript; the core asks to read it (that read is lost here).
    core.handle(
        Timestamp(1),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook("SessionStart", Some("%7"), None, json!({})),
        },
    );
    // The agent's row, for the store's answer to the reconcile's `LoadAgents`.
    let mut agent_rows = Vec::new();
    while let Some(c) = core.poll_command() {
        if let Command::Store(headspace_core::Write::Agent(row)) = c {
            agent_rows.push(row);
        }
    }
    core.handle(
        Timestamp(2),
        Input::Reconcile {
            agent: "%7".into(),
            request: 1,
        },
    );
    core.handle(
        Timestamp(3),
        Input::Reconcile {
            agent: "%7".into(),
            request: 2,
        },
    );
    let mut read = None;
    let mut replies = Vec::new();
    while let Some(c) = core.poll_command() {
        match c {
            Command::ReadTranscript {
                path,
                from,
                read: r,
            } => read = Some((path, from, r)),
            Command::Reply { request, reply } => replies.push((request, reply)),
            _ => {}
        }
    }
    assert_eq!(replies, vec![(2, Reply::ReconcileBusy)]);
    let (path, from, r) = read.expect("a read");
    assert_eq!(from, 0);
    let data = format!(
        "{}\n{}\n{}\n",
        s.prompt("a", None).json,
        s.thinking("hm").json,
        s.agent_text("b").json
    );
    core.handle(
        Timestamp(4),
        Input::Transcript {
            path,
            offset: 0,
            data: data.into_bytes(),
            read: Some(r),
        },
    );
    // The forced reconcile asked for the agent's stored rows (nothing was stored before it
    // began, so its re-read from byte 0 has no line to check).
    core.handle(
        Timestamp(4),
        Input::AgentsLoaded(headspace_core::model::Snapshot {
            agents: agent_rows,
            ..Default::default()
        }),
    );
    let replies: Vec<_> = std::iter::from_fn(|| core.poll_command())
        .filter_map(|c| {
            if let Command::Reply { request, reply } = c {
                Some((request, reply))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        replies,
        vec![(
            1,
            Reply::Reconciled {
                agent_id: 1,
                created: 2
            }
        )]
    );
    core.handle(
        Timestamp(5),
        Input::Reconcile {
            agent: "nobody".into(),
            request: 3,
        },
    );
    assert_eq!(
        core.poll_command(),
        Some(Command::Reply {
            request: 3,
            reply: Reply::UnknownAgent
        })
    );
}

// ----- the pane watchdog (seed Task 8) -------------------------------------------------------

fn watchdog_core() -> (headspace_core::Core, SessionWriter) {
    watchdog_core_showing("❯ go\n✳ Working…")
}

/// A core whose agent in pane %4 works on "go", its pane first captured showing `screen`.
fn watchdog_core_showing(screen: &str) -> (headspace_core::Core, SessionWriter) {
    use headspace_core::{Config, Core, Input};
    // Only the watchdog's timers here: agents never leave memory in these tests.
    let mut config = Config::new(CLAUDE_DIR);
    config.evict_after_ms = 0;
    let mut core = Core::new(config);
    let s = SessionWriter::new(1, Timestamp(0));
    core.handle(
        Timestamp(1_000),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook(
                "UserPromptSubmit",
                Some("%4"),
                None,
                json!({"prompt": "go"}),
            ),
        },
    );
    core.handle(
        Timestamp(1_100),
        Input::Pane {
            pane: "%4".into(),
            text: screen.into(),
        },
    );
    while core.poll_command().is_some() {}
    (core, s)
}

fn gaps(core: &mut headspace_core::Core) -> (usize, usize) {
    use headspace_core::Command;
    let cmds: Vec<Command> = std::iter::from_fn(|| core.poll_command()).collect();
    (
        cmds.iter()
            .filter(|c| matches!(c, Command::GapDetected { .. }))
            .count(),
        cmds.iter()
            .filter(|c| matches!(c, Command::ReadTranscript { .. }))
            .count(),
    )
}

#[test]
fn ac_8_1_new_pane_output_without_a_turn_triggers_a_transcript_read() {
    use headspace_core::Input;
    let (mut core, _) = watchdog_core();
    core.handle(
        Timestamp(2_000),
        Input::Pane {
            pane: "%4".into(),
            text: "⏺ Here is the answer".into(),
        },
    );
    assert_eq!(core.poll_timeout(), Some(Timestamp(7_000)));
    core.handle(Timestamp(6_999), Input::Tick);
    assert_eq!(gaps(&mut core), (0, 0));
    core.handle(Timestamp(7_000), Input::Tick);
    assert_eq!(gaps(&mut core), (1, 1));
    assert_eq!(core.poll_timeout(), None);
}

#[test]
fn pane_output_followed_by_a_turn_is_no_gap() {
    use headspace_core::Input;
    let (mut core, s) = watchdog_core();
    core.handle(
        Timestamp(2_000),
        Input::Pane {
            pane: "%4".into(),
            text: "⏺ Done".into(),
        },
    );
    core.handle(
        Timestamp(3_000),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook(
                "Stop",
                Some("%4"),
                None,
                json!({"last_assistant_message": "Done"}),
            ),
        },
    );
    core.handle(Timestamp(8_000), Input::Tick);
    assert_eq!(gaps(&mut core).0, 0);
}

#[test]
fn ac_8_2_unchanged_or_unknown_panes_are_no_gap() {
    use headspace_core::Input;
    let (mut core, _) = watchdog_core();
    core.handle(
        Timestamp(2_000),
        Input::Pane {
            pane: "%4".into(),
            text: "❯ go\n✳ Working…\n\n".into(),
        },
    );
    core.handle(
        Timestamp(2_000),
        Input::Pane {
            pane: "%99".into(),
            text: "anything".into(),
        },
    );
    core.handle(Timestamp(60_000), Input::Tick);
    assert_eq!(gaps(&mut core).0, 0);
    assert_eq!(core.poll_timeout(), None);
}

/// Claude Code working on "go": a spinner whose glyph, elapsed time and token counter tick,
/// text typed in the input box and a status line under it, at second `t`.
fn ticking_screen(t: i64, extra_output: &str) -> String {
    let glyph = ["✳", "✶", "✻", "✽", "✢", "·"][(t % 6) as usize];
    let rule = "─".repeat(60);
    let typed = &"next: write the docs"[..(t as usize % 20)];
    let mode = if t % 10 < 5 {
        "? for shortcuts"
    } else {
        "⏵⏵ accept edits on (shift+tab to cycle)"
    };
    let bullet = if t % 2 == 0 { "⏺" } else { " " };
    format!(
        "❯ go\n\n{bullet} Bash(cargo build)\n  ⎿  Running… ({t}s)\n{extra_output}\n{glyph} Simmering… ({t}s · ↓ {}.{}k tokens · esc to interrupt)\n  ⎿  Tip: press esc to interrupt\n\n{rule}\n❯ {typed}\n{rule}\n  {mode}\n",
        t / 10,
        t % 10
    )
}

#[test]
fn ac_8_1_a_ticking_spinner_typing_and_status_lines_are_no_gap() {
    use headspace_core::Input;
    let (mut core, _) = watchdog_core_showing(&ticking_screen(0, ""));
    // A minute of captures, one a second, in which only the spinner, its counters, the
    // typed text, the mode line and the blinking tool bullet change.
    for t in 1..=60 {
        core.handle(
            Timestamp(1_000 + t * 1_000),
            Input::Pane {
                pane: "%4".into(),
                text: ticking_screen(t, ""),
            },
        );
        core.handle(Timestamp(1_500 + t * 1_000), Input::Tick);
    }
    assert_eq!(gaps(&mut core), (0, 0), "no GapDetected, no ReadTranscript");
    assert_eq!(core.poll_timeout(), None, "no gap clock running");

    // Real output under the same ticking spinner, and no turn: a gap after the threshold.
    core.handle(
        Timestamp(62_000),
        Input::Pane {
            pane: "%4".into(),
            text: ticking_screen(61, "⏺ The build passes; now the tests."),
        },
    );
    for t in 62..=65 {
        core.handle(
            Timestamp(1_000 + t * 1_000),
            Input::Pane {
                pane: "%4".into(),
                text: ticking_screen(t, "⏺ The build passes; now the tests."),
            },
        );
    }
    core.handle(Timestamp(66_999), Input::Tick);
    assert_eq!(gaps(&mut core), (0, 0));
    core.handle(Timestamp(67_000), Input::Tick);
    assert_eq!(gaps(&mut core), (1, 1));
}

#[test]
fn a_transcript_clock_behind_the_hooks_still_orders_tasks() {
    // The hook is stamped now; the transcript's lines are a minute older.
    let mut w = World::new();
    w.prompt_hook("first");
    w.s.clock = w.now.add_millis(-60_000);
    let p = w.s.prompt("first", None);
    let a = w.s.agent_text("Done. All tests pass.");
    w.append(&p);
    w.append(&a);
    assert_eq!(w.state(), TaskState::Complete);
    w.s.clock = w.now.add_millis(-40_000);
    let q = w.s.prompt("second, hook lost", None);
    w.append(&q);
    assert_eq!(
        w.state(),
        TaskState::Commanded,
        "the new task is the current one"
    );
}

// ----- activity: sm#232 (late /clear Stop) and sm#240 (lost Stop) as behaviours ----------------

impl World {
    fn activity(&self) -> headspace_core::Activity {
        let tasks: Vec<_> = self.r.store().tasks().cloned().collect();
        let agent = self.r.store().agents().next().expect("an agent").clone();
        headspace_core::view::activity::agent_activity(
            &agent,
            headspace_core::view::activity::current_task(&tasks),
        )
    }
    fn sent(&mut self) {
        self.tick(5);
        self.r.step(
            self.now,
            Step::Sent {
                agent: "%1".into(),
                text: None,
            },
        );
    }
    fn pane(&mut self, text: &str) {
        self.tick(1_000);
        self.r.step(
            self.now,
            Step::Pane {
                pane: "%1".into(),
                text: text.into(),
            },
        );
    }
    /// A finished task: prompt, reply, Stop.
    fn finished_task(&mut self, prompt: &str) {
        self.prompt_hook(prompt);
        self.stop_hook(Some("Done. All tests pass."));
    }
    /// `headspace clear`: /clear typed, a new session in the same pane.
    fn cleared(&mut self, n: u64) -> SessionWriter {
        self.sent();
        let old = self.s.clone();
        self.s = SessionWriter::new(n, self.now);
        self.hook("SessionStart", json!({"source": "clear"}));
        old
    }
}

use headspace_core::Activity;
const IDLE_SCREEN: &str = "⏺ Done.\n\n────────────────────────────────────────\n❯\u{a0}\n────────────────────────────────────────\n  ? for shortcuts\n";
const BUSY_SCREEN: &str = "✳ Working… (3s · esc to interrupt)\n\n────────────────────────────────────────\n❯\u{a0}\n────────────────────────────────────────\n";

#[test]
fn sm232_test_late_clear_stop_hook_does_not_set_idle() {
    let mut w = World::new();
    w.finished_task("first");
    let old = w.cleared(2);
    let clear_stop = old.hook("Stop", Some("%1"), Some(w.now), json!({}));
    w.sent(); // `send` dispatches the next task
    w.r.step(
        w.now.add_millis(1_500),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: clear_stop,
        },
    ); // the /clear Stop, late
    assert_eq!(
        w.activity(),
        Activity::Running,
        "the late /clear Stop must not idle the new task"
    );
    w.prompt_hook("the next task");
    assert_eq!(w.activity(), Activity::Running);
    assert_eq!(w.state(), TaskState::Commanded);
}

#[test]
fn sm232_test_normal_stop_hook_sets_idle() {
    let mut w = World::new();
    w.prompt_hook("task");
    assert_eq!(w.activity(), Activity::Running);
    w.stop_hook(None);
    assert_eq!(w.activity(), Activity::Idle);
}

#[test]
fn sm232_test_clear_stop_hook_before_dispatch_leaves_idle_as_it_was() {
    let mut w = World::new();
    w.finished_task("first");
    let old = w.cleared(2);
    w.r.step(
        w.now,
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: old.hook("Stop", Some("%1"), Some(w.now), json!({})),
        },
    );
    w.prompt_hook("/clear"); // the /clear itself is a prompt the transcript never shows
    assert_eq!(w.activity(), Activity::Idle, "previously idle: still idle");
}

#[test]
fn sm232_test_lost_clear_stop_does_not_absorb_the_next_stop() {
    // The seed's "stale skip count": here there is no fence to go stale.
    let mut w = World::new();
    w.finished_task("first");
    w.cleared(2); // its Stop is lost
    w.prompt_hook("next task");
    w.tick(20_000);
    w.stop_hook(Some("Done. All tests pass."));
    assert_eq!(w.activity(), Activity::Idle);
}

#[test]
fn sm232_test_wait_sees_no_false_idle_after_clear_and_dispatch() {
    let mut w = World::new();
    w.finished_task("first");
    let old = w.cleared(2);
    w.prompt_hook("/clear");
    w.sent();
    // Until the new prompt arrives, the agent is running whatever else comes.
    for _ in 0..5 {
        w.r.step(
            w.now.add_millis(200),
            Step::Hook {
                agent: headspace_core::kind::AgentKind::Claude,
                event: None,
                body: old.hook("Stop", Some("%1"), Some(w.now.add_millis(-100)), json!({})),
            },
        );
        assert_eq!(w.activity(), Activity::Running);
    }
}

#[test]
fn sm232_test_fast_task_right_after_a_lost_clear_stop_is_idle() {
    // The seed's residual risk: its fence absorbs this Stop and the task is stuck. Here it is idle.
    let mut w = World::new();
    w.finished_task("first");
    w.cleared(2); // the /clear Stop is lost
    w.prompt_hook("/clear");
    w.sent();
    w.prompt_hook("quick one");
    w.tick(1_000); // well within the seed's 8 s window
    w.stop_hook(Some("Done."));
    assert_eq!(w.activity(), Activity::Idle);
}

#[test]
fn sm232_test_two_clears_in_a_row() {
    let mut w = World::new();
    w.finished_task("first");
    let a = w.cleared(2);
    let b = w.cleared(3);
    w.sent();
    w.prompt_hook("after two clears");
    for old in [a, b] {
        w.r.step(
            w.now,
            Step::Hook {
                agent: headspace_core::kind::AgentKind::Claude,
                event: None,
                body: old.hook("Stop", Some("%1"), Some(w.now.add_millis(-50)), json!({})),
            },
        );
    }
    assert_eq!(w.activity(), Activity::Running);
    w.stop_hook(Some("Done."));
    assert_eq!(w.activity(), Activity::Idle);
}

#[test]
fn sm240_lost_stop_is_made_up_by_the_pane_after_the_trust_window() {
    let mut w = World::new();
    w.prompt_hook("a task whose Stop is lost");
    w.pane(BUSY_SCREEN);
    w.pane(IDLE_SCREEN);
    w.pane(IDLE_SCREEN);
    assert_eq!(
        w.activity(),
        Activity::Running,
        "within the trust window the hooks are believed"
    );
    w.tick(10_000);
    w.pane(IDLE_SCREEN);
    w.pane(IDLE_SCREEN);
    assert_eq!(
        w.activity(),
        Activity::Idle,
        "two idle readings after the trust window end the turn"
    );
    assert_eq!(w.state(), TaskState::Complete);
}

#[test]
fn a_permission_dialog_means_waiting() {
    let mut w = World::new();
    w.prompt_hook("clean up");
    w.pane("│ Bash command │\n│ Do you want to proceed? │\n│ ❯ 1. Yes │\n│   2. No, and tell Claude what to do differently (esc) │\n");
    assert_eq!(w.activity(), Activity::Waiting);
    let agent = w.r.store().agents().next().unwrap().clone();
    let dialog = agent.permission.expect("the dialog is on the agent");
    assert_eq!(dialog["question"], "Do you want to proceed?");
    assert_eq!(dialog["options"][0], "Yes");
    w.pane(BUSY_SCREEN);
    assert_eq!(w.activity(), Activity::Running);
    assert!(w.r.store().agents().next().unwrap().permission.is_none());
}

#[test]
fn a_send_whose_prompt_never_comes_expires() {
    let mut w = World::new();
    w.finished_task("first");
    w.sent();
    assert_eq!(w.activity(), Activity::Running);
    w.tick(61_000);
    w.r.step(w.now, Step::Tick);
    assert_eq!(w.activity(), Activity::Idle);
}

#[test]
fn a_new_session_whose_transcript_comes_before_its_hooks_joins_its_pane_agent() {
    // After /clear (or compaction) the new session's first line is read before any hook
    // names it; then SessionStart arrives with the pane: one pane, one agent.
    let mut w = World::new();
    w.finished_task("before the clear");
    w.s = SessionWriter::new(2, w.now);
    let p = w.s.prompt("after the clear", None);
    w.append(&p);
    assert_eq!(
        w.r.store().agents().count(),
        2,
        "until a hook names the session, it looks like another agent"
    );
    w.hook("SessionStart", json!({"source": "clear"}));
    let check = |w: &World| {
        let agents: Vec<_> = w.r.store().agents().cloned().collect();
        assert_eq!(agents.len(), 1, "{agents:?}");
        assert_eq!(agents[0].sessions.len(), 2);
        assert_eq!(agents[0].tmux_pane.as_deref(), Some("%1"));
        assert!(w.r.store().turns().all(|t| t.agent_id == agents[0].id));
        assert_eq!(w.r.store().turns().count(), 3);
        assert_eq!(w.state(), TaskState::Commanded);
    };
    check(&w);
    w.restart();
    check(&w);
    let a = w.s.agent_text("Done.");
    w.append(&a);
    w.stop_hook(Some("Done."));
    assert_eq!(w.r.store().turns().count(), 4);
    assert_eq!(w.state(), TaskState::Complete);
}

// ----- activity cases the random simulation found ---------------------------------------------

#[test]
fn a_prompt_after_an_ask_user_question_opens_a_new_task() {
    let mut w = World::new();
    w.prompt_hook("pick a dir");
    let (_, id, input) = w.s.question("Where?", &["a/", "b/"]);
    w.hook(
        "PreToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": id, "tool_input": input}),
    );
    assert_eq!(w.state(), TaskState::AwaitingInput);
    w.hook(
        "PostToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": id}),
    );
    // The tool took its answer; this prompt is the next turn, not an answer to the dialog.
    w.prompt_hook("yes");
    assert_eq!(w.r.store().tasks().count(), 2);
    assert_eq!(w.activity(), Activity::Running);
}

#[test]
fn an_answer_line_after_a_stale_stop_shows_running() {
    let mut w = World::new();
    for l in [
        w.s.prompt("review the change", None),
        w.s.agent_text("Which file should I change first?"),
    ] {
        w.append(&l);
    }
    w.stop_hook(None);
    w.tick(3_000);
    let answer = w.s.prompt("yes", None);
    w.append(&answer);
    assert_eq!(w.r.store().tasks().count(), 1, "the answer joins the task");
    assert_eq!(w.state(), TaskState::Processing);
}

#[test]
fn a_task_emptied_by_a_claim_is_never_the_current_task() {
    let mut w = World::new();
    // The prompt's hook is lost; the question's hook comes before the transcript.
    let p = w.s.prompt("pick a dir", None);
    w.tick(2_000);
    let (q, id, input) = w.s.question("Where?", &["a/", "b/"]);
    w.hook(
        "PreToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": id, "tool_input": input}),
    );
    w.append(&p);
    w.append(&q);
    assert_eq!(w.turns().len(), 2);
    assert_eq!(
        w.state(),
        TaskState::AwaitingInput,
        "the question's task, not the empty one its hook opened"
    );
    w.restart();
    assert_eq!(w.state(), TaskState::AwaitingInput);
}

#[test]
fn a_stop_emitted_before_a_later_user_line_of_its_task_does_not_end_it() {
    let mut w = World::new();
    w.prompt_hook("go");
    for l in [w.s.prompt("go", None), w.s.agent_text("Looking at it.")] {
        w.append(&l);
    }
    let stop_emitted = w.now;
    w.tick(400);
    let answer = w.s.prompt("yes", None);
    w.append(&answer);
    w.tick(1_000);
    w.hook_stamped("Stop", Some(stop_emitted), json!({}));
    assert_eq!(w.r.store().tasks().count(), 1);
    assert_eq!(w.activity(), Activity::Running);
}

#[test]
fn a_late_hook_does_not_age_the_news_the_pane_must_wait_for() {
    let mut w = World::new();
    w.prompt_hook("a long job");
    let prompt_at = w.now;
    w.tick(5_000);
    w.hook("PostToolUse", json!({"tool_name": "Bash"}));
    // A hook emitted back at the prompt arrives now, very late.
    w.hook_stamped("PreToolUse", Some(prompt_at), json!({"tool_name": "Bash"}));
    w.tick(4_000);
    w.pane(IDLE_SCREEN);
    w.pane(IDLE_SCREEN);
    assert_eq!(
        w.activity(),
        Activity::Running,
        "the PostToolUse 7 s ago is still within the trust window"
    );
}

#[test]
fn a_growing_transcript_publishes_session_activity_at_most_every_five_seconds() {
    // A session started from a terminal, with no hooks at all, is still tracked.
    let mut w = World::new();
    let p = w.s.prompt("started in a terminal", None);
    w.append(&p);
    assert_eq!(w.r.events_named("session_created"), 1);
    assert_eq!(w.r.events_named("session_activity"), 1);
    for _ in 0..5 {
        let l = w.s.agent_text("Looking at it.");
        w.append(&l);
    }
    assert_eq!(w.r.events_named("session_activity"), 1, "throttled");
    w.tick(5_000);
    let l = w.s.agent_text("Done.");
    w.append(&l);
    assert_eq!(w.r.events_named("session_activity"), 2);
    assert_eq!(w.r.events_named("session_created"), 1);
    let agent = w.r.store().agents().next().unwrap().clone();
    assert_eq!(
        agent.last_seen_at, w.now,
        "the transcript's growth counts as the agent being seen"
    );
}

#[test]
fn reading_the_same_bytes_again_is_no_session_activity() {
    use headspace_core::{Command, Config, Core, Input};
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
    let mut s = SessionWriter::new(1, t0);
    let data = format!("{}\n", s.prompt("started in a terminal", None).json).into_bytes();
    let more = format!("{}\n", s.agent_text("Looking at it.").json).into_bytes();
    let path = s.path();
    let activity_at = |core: &mut Core, at: Timestamp, offset: u64, data: &[u8]| {
        core.handle(
            at,
            Input::Transcript {
                path: path.clone(),
                offset,
                data: data.to_vec(),
                read: None,
            },
        );
        std::iter::from_fn(|| core.poll_command())
            .filter(|c| matches!(c, Command::Publish(e) if e.name == "session_activity"))
            .count()
    };
    assert_eq!(activity_at(&mut core, t0, 0, &data), 1);
    let later = t0.add_millis(10_000);
    assert_eq!(
        activity_at(&mut core, later, 0, &data),
        0,
        "the same bytes again (a sweep re-delivering them) are nothing new"
    );
    assert_eq!(activity_at(&mut core, later, data.len() as u64, &more), 1);
}

#[test]
fn a_custom_command_is_a_turn_its_hook_announces_and_its_transcript_line_claims() {
    let mut w = World::new();
    w.prompt_hook("/flow.design the login page");
    assert_eq!(
        w.activity(),
        Activity::Running,
        "the model works on a custom command"
    );
    // How Claude Code records it: the command's own line, then the expanded prompt (meta).
    let line = serde_json::json!({
        "type": "user", "uuid": "00000001-0000-4000-8000-0000000000c1",
        "timestamp": w.now.to_string(), "sessionId": w.s.session_id, "isSidechain": false,
        "message": {"role": "user", "content": "<command-message>flow.design</command-message>\n<command-name>/flow.design</command-name>\n<command-args>the login page</command-args>"}
    });
    w.append(&headspace_testkit::synth::Line {
        json: line.to_string(),
        uuid: "00000001-0000-4000-8000-0000000000c1".into(),
        is_turn: true,
    });
    let turns = w.turns();
    assert_eq!(turns.len(), 1, "claimed, not doubled: {turns:?}");
    assert_eq!(turns[0].text, "/flow.design the login page");
    assert_eq!(
        turns[0].entry_uuid.as_deref(),
        Some("00000001-0000-4000-8000-0000000000c1")
    );
    // Claude Code's own commands announce no turn.
    w.prompt_hook("/clear");
    assert_eq!(w.turns().len(), 1);
}

// ----- memory: ended and silent agents leave it, and come back --------------------------------

#[test]
fn twenty_thousand_ended_sessions_leave_memory_and_a_resumed_one_comes_back_whole() {
    let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
    let mut r = Replayer::new(CLAUDE_DIR);
    let mut at = t0;
    let mut first = None;
    for n in 0..20_000u64 {
        let mut s = SessionWriter::new(1_000 + n, at);
        let pane = format!("%{n}");
        for (event, extra) in [
            ("UserPromptSubmit", json!({"prompt": format!("task {n}")})),
            ("SessionEnd", json!({"reason": "logout"})),
        ] {
            at = at.add_millis(1);
            s.clock = at;
            let body = s.hook(event, Some(&pane), Some(at), extra);
            r.step(
                at,
                Step::Hook {
                    agent: headspace_core::kind::AgentKind::Claude,
                    event: Some(event.into()),
                    body,
                },
            );
        }
        first.get_or_insert(s);
    }
    assert_eq!(r.core().memory_counts(), (20_000, 0));
    // A minute and a bit later every ended agent has left memory; the store keeps them all.
    r.step(at.add_millis(61_000), Step::Tick);
    assert_eq!(r.core().memory_counts(), (0, 20_000));
    assert_eq!(r.store().agents().count(), 20_000);
    // The first session resumes: its agent comes back with its history, not as a new one.
    let mut s = first.unwrap();
    let later = at.add_millis(120_000);
    s.clock = later;
    let body = s.hook(
        "UserPromptSubmit",
        Some("%0"),
        Some(later),
        json!({"prompt": "and now?"}),
    );
    r.step(
        later,
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("UserPromptSubmit".into()),
            body,
        },
    );
    assert_eq!(r.core().memory_counts(), (1, 19_999));
    assert_eq!(r.store().agents().count(), 20_000, "no new agent");
    let texts: Vec<String> = r
        .store()
        .turns()
        .filter(|t| t.agent_id == 1)
        .map(|t| t.text.clone())
        .collect();
    assert_eq!(texts, ["task 0", "and now?"]);
}

/// The core says why it wants a tick: the pane gap first, then nothing once it fired.
#[test]
fn the_next_timer_names_its_agent_and_reason() {
    use headspace_core::{Input, TimerReason};
    let (mut core, _) = watchdog_core();
    core.handle(
        Timestamp(2_000),
        Input::Pane {
            pane: "%4".into(),
            text: "⏺ Here is the answer".into(),
        },
    );
    let timer = core.next_timer().expect("a gap timer");
    assert_eq!(
        (timer.at, timer.reason),
        (Timestamp(7_000), TimerReason::PaneGap)
    );
    assert_eq!(Some(timer.agent), core.resolve_agent("%4"));
    core.handle(Timestamp(7_000), Input::Tick);
    while core.poll_command().is_some() {}
    assert_eq!(core.next_timer().map(|t| t.reason), None);
}

/// Seed 300693: an agent shown running is never evicted, however long it is quiet, because
/// only its pane can still end a turn whose Stop was lost, and an unchanged screen never
/// brings an evicted agent back.
#[test]
fn a_running_agent_stays_in_memory_until_its_pane_ends_the_turn() {
    let mut config = headspace_core::Config::new(CLAUDE_DIR);
    config.evict_after_ms = 20_000;
    let mut w = World::new();
    w.r = Replayer::with_config(config);
    w.prompt_hook("a task whose Stop is lost");
    w.pane(BUSY_SCREEN);
    w.tick(120_000);
    w.r.step(w.now, Step::Tick);
    assert_eq!(w.r.core().memory_counts(), (1, 0), "kept while it runs");
    w.pane(IDLE_SCREEN);
    w.pane(IDLE_SCREEN);
    assert_eq!(w.activity(), Activity::Idle, "the pane ended the turn");
    // Its new screen is a gap first (read the transcript), then it may leave.
    w.tick(6_000);
    w.r.step(w.now, Step::Tick);
    // The gap's read finds nothing new (an empty read of an evicted agent's file brings it
    // back no more): it leaves at once, or at its eviction timer.
    if let Some(timer) = w.r.core().next_timer() {
        assert_eq!(timer.reason, headspace_core::TimerReason::Evict);
        w.r.step(timer.at, Step::Tick);
    }
    assert_eq!(w.r.core().memory_counts(), (0, 1), "then it may leave");
}

/// Seed 6951: the pane's inferred turn end is stamped when the idle prompt first showed, so a
/// prompt typed long after (its hook lost, a bare "yes" read as an answer) reopens the turn.
#[test]
fn a_prompt_typed_after_the_pane_went_idle_reopens_the_turn() {
    let mut w = World::new();
    w.prompt_hook("go on");
    let p = w.s.prompt("go on", None);
    w.append(&p);
    let a = w.s.agent_text("Looking at it.");
    w.append(&a);
    w.pane(IDLE_SCREEN);
    w.pane(IDLE_SCREEN);
    w.tick(12_000);
    w.pane(IDLE_SCREEN);
    assert_eq!(w.activity(), Activity::Idle, "the pane ended the turn");
    // Typed before the last capture, its line arriving after it.
    w.s.clock = w.now.add_millis(-600);
    let yes = w.s.prompt("yes", None);
    w.append(&yes);
    assert_eq!(
        w.activity(),
        Activity::Running,
        "the prompt came after the screen went idle"
    );
}

/// A prompt a UserPromptSubmit hook blocked: Claude Code writes its notice in the prompt's
/// place and the model never runs. The user saw that notice, so it is a turn of its own (the
/// agent's, ending the task), exactly once however often the line is read, and the agent is
/// idle after it. Before, the conversation showed the prompt and then nothing.
#[test]
fn a_prompt_a_hook_blocked_shows_its_notice_once() {
    use headspace_core::task::intent::{Actor, Intent};
    let mut w = World::new();
    w.prompt_hook("deploy to prod");
    let notice = w.s.blocked_by_hook("deployments are frozen until Monday");
    w.append(&notice);
    let check = |w: &World| {
        let t = w.turns();
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(
            (t[0].actor, t[0].text.as_str()),
            (Actor::User, "deploy to prod")
        );
        assert_eq!((t[1].actor, t[1].intent), (Actor::Agent, Intent::EndOfTask));
        assert_eq!(
            t[1].text,
            "Operation stopped by hook: deployments are frozen until Monday"
        );
        assert_eq!(t[1].entry_uuid.as_deref(), Some(notice.uuid.as_str()));
    };
    check(&w);
    assert_eq!(w.activity(), headspace_core::Activity::Idle);
    w.reconcile();
    check(&w);
    w.restart();
    w.reconcile();
    check(&w);
}
