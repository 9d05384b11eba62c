//! One view of an agent: the facts a store returns ([`AgentView::from_rows`]), the card the
//! API shows from them, and which agent a reference names. No store, no clock.

use headspace_core::model::{AgentRow, TaskRow, TurnRow, TurnSource};
use headspace_core::store::MemStore;
use headspace_core::task::question::PREVIEW_CHARS;
use headspace_core::view::{ambiguous_pane, clip, resolve_reference, AgentView, CLIPPED_CHARS};
use headspace_core::{Actor, Intent, TaskState, Timestamp, Write};
use serde_json::json;

/// Each view's agent row with its machine, as `ambiguous_pane` takes them.
fn rows(views: &[AgentView]) -> impl Iterator<Item = (&AgentRow, &str)> {
    views.iter().map(|v| (&v.agent, v.machine.as_str()))
}

fn t(ms: i64) -> Timestamp {
    Timestamp(1_793_523_600_000 + ms)
}

fn agent(id: u64, session: &str, pane: Option<&str>, seen: i64) -> AgentRow {
    AgentRow {
        id,
        session_id: session.into(),
        sessions: vec![format!("old-{session}"), session.into()],
        project: Some("p".into()),
        cwd: Some("/w/p".into()),
        transcript_path: None,
        tmux_pane: pane.map(str::to_string),
        ended: false,
        waiting_permission: false,
        sent_at: None,
        permission: None,
        last_seen_at: t(seen),
        end_reason: None,
        claude_pid: None,
        git_branch: None,
        kind: headspace_core::kind::AgentKind::Claude,
    }
}

fn task(id: u64, agent_id: u64, state: TaskState, started: i64) -> TaskRow {
    TaskRow {
        id,
        agent_id,
        session_id: None,
        state,
        transcript_state: state,
        started_at: t(started),
        hook_turn_end_at: None,
        state_since: t(started),
    }
}

fn turn(id: u64, task: &TaskRow, who: (Actor, Intent), text: &str, at: i64) -> TurnRow {
    let mut r = TurnRow::new(
        task.agent_id,
        task.id,
        who,
        text.into(),
        t(at),
        TurnSource::Transcript,
    );
    r.id = id;
    r
}

fn store(writes: Vec<Write>) -> MemStore {
    let mut s = MemStore::new();
    for w in &writes {
        s.apply(w);
    }
    s
}

#[test]
fn the_card_shows_the_current_task_its_command_the_last_turn_and_the_open_question() {
    let a = agent(1, "s1", Some("%3"), 0);
    let old = task(10, 1, TaskState::Complete, 0);
    let now = task(11, 1, TaskState::AwaitingInput, 100);
    let tool = json!({"questions": [{"question": "Which table?", "options": [{"label": "users"}, {"label": "orders"}]}]});
    let mut q = turn(
        6,
        &now,
        (Actor::Agent, Intent::Question),
        "Which table?",
        130,
    );
    q.question = Some(tool.clone());
    let s = store(vec![
        Write::Agent(a.clone()),
        Write::Task(old.clone()),
        Write::Task(now.clone()),
        Write::Turn(turn(
            1,
            &old,
            (Actor::User, Intent::Command),
            "old command",
            0,
        )),
        Write::Turn(turn(
            2,
            &old,
            (Actor::Agent, Intent::Completion),
            "done",
            10,
        )),
        // Ids out of time order: (timestamp, id) decides, not the id.
        Write::Turn(turn(
            5,
            &now,
            (Actor::User, Intent::Command),
            "add a column",
            100,
        )),
        Write::Turn(turn(
            3,
            &now,
            (Actor::Agent, Intent::Question),
            "Earlier question?",
            110,
        )),
        Write::Turn(q),
    ]);
    let view = s.agent_view(1).unwrap();
    assert_eq!(view.task.as_ref().map(|t| t.id), Some(11));
    assert_eq!(view.command.as_deref(), Some("add a column"));
    assert_eq!(view.turn_count, 5);
    assert_eq!(view.state(), TaskState::AwaitingInput);
    assert_eq!(view.activity(), headspace_core::Activity::Waiting);
    let card = view.card();
    assert_eq!(card["state"], "awaiting_input");
    assert_eq!(card["activity"], "waiting");
    assert_eq!(card["task_id"], 11);
    assert_eq!(card["command"], "add a column");
    assert_eq!(
        card["last_turn"],
        json!({"actor": "agent", "intent": "question", "text": "Which table?", "truncated": false, "timestamp": t(130)})
    );
    assert_eq!(
        card["question"],
        json!({"text": "Which table?", "question": tool}),
        "the latest question of the task awaiting input"
    );
    assert_eq!(view.open_question().unwrap().options(), ["users", "orders"]);
    assert_eq!(card["turn_count"], 5);
    assert_eq!(card["tmux_pane"], "%3");
}

#[test]
fn no_question_is_shown_unless_the_task_awaits_input() {
    let a = agent(1, "s1", None, 0);
    let processing = task(11, 1, TaskState::Processing, 100);
    let s = store(vec![
        Write::Agent(a),
        Write::Task(processing.clone()),
        Write::Turn(turn(
            1,
            &processing,
            (Actor::Agent, Intent::Question),
            "Shall I?",
            100,
        )),
    ]);
    let view = s.agent_view(1).unwrap();
    assert_eq!(view.question, None);
    assert_eq!(view.card()["question"], json!(null));
}

#[test]
fn the_panes_permission_dialog_outranks_the_tasks_question_on_the_card() {
    let mut a = agent(1, "s1", Some("%3"), 0);
    a.permission = Some(
        json!({"question": "Do you want to proceed?", "detail": [], "options": ["Yes", "No"]}),
    );
    a.waiting_permission = true;
    let view = AgentView::from_rows(&a, [], []);
    assert_eq!(view.card()["question"]["text"], "Do you want to proceed?");
    assert_eq!(view.card()["activity"], "waiting");
    assert_eq!(view.card()["state"], "idle", "no task: idle");
    assert!(view.open_question().unwrap().permission);
}

#[test]
fn texts_are_clipped_one_past_the_preview_so_the_card_knows_they_go_on() {
    let long = "é".repeat(PREVIEW_CHARS + 50);
    assert_eq!(clip(&long).chars().count(), CLIPPED_CHARS);
    assert_eq!(clip("short"), "short");
    let a = agent(1, "s1", None, 0);
    let k = task(11, 1, TaskState::Processing, 0);
    let view = AgentView::from_rows(
        &a,
        [&k],
        [&turn(1, &k, (Actor::User, Intent::Command), &long, 0)],
    );
    let card = view.card();
    assert_eq!(card["last_turn"]["truncated"], true);
    assert!(card["command"].as_str().unwrap().ends_with('…'));
    assert_eq!(
        card["command"].as_str().unwrap().chars().count(),
        PREVIEW_CHARS + 1
    );
}

#[test]
fn other_agents_rows_do_not_count() {
    let a = agent(1, "s1", None, 0);
    let mine = task(11, 1, TaskState::Processing, 0);
    let theirs = task(12, 2, TaskState::Processing, 50);
    let view = AgentView::from_rows(
        &a,
        [&mine, &theirs],
        [
            &turn(1, &mine, (Actor::User, Intent::Command), "mine", 0),
            &turn(2, &theirs, (Actor::User, Intent::Command), "theirs", 60),
        ],
    );
    assert_eq!(view.task.as_ref().map(|t| t.id), Some(11));
    assert_eq!(view.turn_count, 1);
    assert_eq!(
        view.last_turn.as_ref().map(|l| l.text.as_str()),
        Some("mine")
    );
}

#[test]
fn a_reference_names_an_agent_by_id_session_past_session_or_pane() {
    let agents = [
        agent(1, "s1", Some("%3"), 100),
        agent(2, "s2", Some("%4"), 50),
    ];
    assert_eq!(resolve_reference(&agents, "1"), Some(1));
    assert_eq!(resolve_reference(&agents, "s2"), Some(2));
    assert_eq!(
        resolve_reference(&agents, "old-s2"),
        Some(2),
        "a past session"
    );
    assert_eq!(resolve_reference(&agents, "%4"), Some(2));
    assert_eq!(resolve_reference(&agents, "%9"), None);
    assert_eq!(resolve_reference(&agents, "3"), None);
    assert_eq!(resolve_reference(&agents, ""), None);
}

#[test]
fn a_reused_pane_names_the_agent_heard_from_last_and_an_id_wins_over_a_session() {
    // Pane %3 went from agent 1 to agent 2; agent 2 was heard from last.
    let agents = [
        agent(1, "s1", Some("%3"), 100),
        agent(2, "s2", Some("%3"), 200),
    ];
    assert_eq!(resolve_reference(&agents, "%3"), Some(2));
    // Agent 2's session id happens to read "1": the id of agent 1 wins, though 2 is newer.
    let agents = [agent(1, "s1", None, 100), agent(2, "1", None, 200)];
    assert_eq!(resolve_reference(&agents, "1"), Some(1));
    // Same pane, same time: the highest id, whatever the order given.
    let (x, y) = (agent(7, "a", Some("%1"), 5), agent(8, "b", Some("%1"), 5));
    assert_eq!(resolve_reference([&x, &y], "%1"), Some(8));
    assert_eq!(resolve_reference([&y, &x], "%1"), Some(8));
}

#[test]
fn the_memory_store_resolves_by_the_same_rule() {
    let s = store(vec![
        Write::Agent(agent(1, "s1", Some("%3"), 100)),
        Write::Agent(agent(2, "s2", Some("%3"), 200)),
    ]);
    assert_eq!(s.resolve("%3"), Some(2));
    assert_eq!(s.resolve("old-s1"), Some(1));
    assert_eq!(s.agent_view(3), None);
}

/// A pane id names a pane on every machine: a reference that is only a pane held by live
/// agents on two machines is refused with both named; one machine's pane, an ended agent's,
/// or a reference that is also an id or a session is not.
#[test]
fn a_pane_held_on_two_machines_is_no_reference() {
    let on = |id: u64, session: &str, pane: &str, machine: &str| {
        let mut v = AgentView::from_rows(&agent(id, session, Some(pane), 0), [], []);
        v.machine = machine.into();
        v
    };
    let views = vec![on(1, "s-a", "%1", "desk"), on(2, "s-b", "%1", "laptop")];
    let why = ambiguous_pane(rows(&views), "%1", "hub").expect("two machines hold %1");
    assert!(why.contains("desk, laptop"), "{why}");
    // This server's own rows (machine empty) count as its machine.
    let mine = vec![on(1, "s-a", "%1", ""), on(2, "s-b", "%1", "laptop")];
    assert!(ambiguous_pane(rows(&mine), "%1", "desk").is_some());
    // One machine's pane, or the other agent ended: the pane names one agent.
    assert!(ambiguous_pane(rows(&views[..1]), "%1", "hub").is_none());
    let mut ended = views.clone();
    ended[1].agent.ended = true;
    assert!(ambiguous_pane(rows(&ended), "%1", "hub").is_none());
    // A session is never ambiguous, even one spelled like a pane.
    let odd = vec![on(1, "%1", "%1", "desk"), on(2, "s-b", "%1", "laptop")];
    assert!(ambiguous_pane(rows(&odd), "%1", "hub").is_none());
}
