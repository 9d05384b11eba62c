//! What `--notify-command` is told: an agent starting to wait, a task finishing; not noise,
//! not sub-agents, not too often. No clock: the times are given.

use headspace_core::model::{AgentRow, TaskRow};
use headspace_core::view::notice::{Notices, AGENT_QUIET_MS, MAX_PER_MINUTE, QUESTION_WAIT_MS};
use headspace_core::view::AgentView;
use headspace_core::{TaskState, Timestamp};

fn t(ms: i64) -> Timestamp {
    Timestamp(1_793_523_600_000 + ms)
}

fn agent(id: u64) -> AgentRow {
    AgentRow {
        id,
        session_id: format!("s{id}"),
        sessions: vec![format!("s{id}")],
        project: Some("shop".into()),
        cwd: Some("/w/shop".into()),
        transcript_path: Some(format!("projects/-w-shop/s{id}.jsonl")),
        tmux_pane: Some(format!("%{id}")),
        ended: false,
        waiting_permission: false,
        sent_at: None,
        permission: None,
        last_seen_at: t(0),
        end_reason: None,
        claude_pid: None,
        git_branch: None,
        kind: headspace_core::kind::AgentKind::Claude,
    }
}

fn view(a: &AgentRow, state: TaskState, command: &str) -> AgentView {
    let task = TaskRow {
        id: 1,
        agent_id: a.id,
        session_id: None,
        state,
        transcript_state: state,
        started_at: t(0),
        hook_turn_end_at: None,
        state_since: t(0),
    };
    let mut v = AgentView::from_rows(a, [&task], []);
    v.command = Some(command.into());
    if state == TaskState::AwaitingInput {
        v.question = Some(("Which one?".into(), None));
    }
    v
}

/// A wait whose question is not known yet (a permission's hook before its dialog is read).
fn waiting_unasked(a: &AgentRow) -> AgentView {
    let mut v = view(a, TaskState::AwaitingInput, "go");
    v.question = None;
    v
}

#[test]
fn starting_to_wait_and_finishing_are_told_once() {
    let mut n = Notices::new();
    let a = agent(1);
    assert_eq!(
        n.observe(&view(&a, TaskState::Processing, "go"), t(0)),
        None
    );
    let told = n
        .observe(&view(&a, TaskState::AwaitingInput, "go"), t(1_000))
        .expect("waiting is told");
    assert_eq!(told["event"], "needs_you");
    assert_eq!(told["title"], "shop needs you");
    assert_eq!(told["agent_id"], 1);
    assert_eq!(
        n.observe(&view(&a, TaskState::AwaitingInput, "go"), t(1_500)),
        None,
        "the same state again is no news"
    );
    let done = n
        .observe(&view(&a, TaskState::Complete, "go"), t(2_000))
        .expect("finishing is told");
    assert_eq!(done["event"], "finished");
    assert_eq!(done["title"], "shop is done");
}

#[test]
fn a_complete_agent_seen_first_a_slash_command_a_sub_agent_and_an_ended_one_are_not_told() {
    let mut n = Notices::new();
    let a = agent(1);
    assert_eq!(n.observe(&view(&a, TaskState::Complete, "go"), t(0)), None);
    n.observe(&view(&a, TaskState::Commanded, "/clear"), t(10));
    assert_eq!(
        n.observe(&view(&a, TaskState::Complete, "/clear"), t(20)),
        None
    );
    let mut sub = agent(2);
    sub.transcript_path = Some("projects/-w-shop/s1/subagents/agent-a1.jsonl".into());
    assert_eq!(
        n.observe(&view(&sub, TaskState::AwaitingInput, "go"), t(30)),
        None
    );
    let mut gone = agent(3);
    n.observe(&view(&gone, TaskState::Processing, "go"), t(40));
    gone.ended = true;
    assert_eq!(
        n.observe(&view(&gone, TaskState::Complete, "go"), t(50)),
        None
    );
}

#[test]
fn the_same_news_is_rate_limited_per_agent_and_in_all() {
    let mut n = Notices::new();
    let a = agent(1);
    let flap = |n: &mut Notices, at: i64| {
        n.observe(&view(&a, TaskState::Processing, "go"), t(at));
        n.observe(&view(&a, TaskState::AwaitingInput, "go"), t(at + 1))
    };
    assert!(flap(&mut n, 0).is_some());
    assert!(flap(&mut n, 1_000).is_none(), "again within the quiet time");
    assert!(flap(&mut n, AGENT_QUIET_MS + 10).is_some());
    // Many agents at once: only so many a minute.
    let mut n = Notices::new();
    let told = (10..30)
        .filter(|id| {
            n.observe(&view(&agent(*id), TaskState::AwaitingInput, "go"), t(0))
                .is_some()
        })
        .count();
    assert_eq!(told, MAX_PER_MINUTE);
    assert!(n
        .observe(&view(&agent(40), TaskState::AwaitingInput, "go"), t(61_000))
        .is_some());
}

#[test]
fn a_wait_is_told_once_its_question_is_known_or_when_its_time_is_up() {
    let mut n = Notices::new();
    let (a, b, c) = (agent(1), agent(2), agent(3));
    for x in [&a, &b, &c] {
        n.observe(&view(x, TaskState::Processing, "go"), t(0));
    }
    // a: the question comes 500 ms after the wait: told then, saying what is asked.
    assert_eq!(n.observe(&waiting_unasked(&a), t(1_000)), None, "held");
    assert_eq!(n.next_due(), Some(t(1_000 + QUESTION_WAIT_MS)));
    let told = n
        .observe(&view(&a, TaskState::AwaitingInput, "go"), t(1_500))
        .expect("told with its question");
    assert_eq!(told["body"], "Which one?");
    assert_eq!(n.next_due(), None);
    // b: no question ever comes: told when its time is up, once.
    assert_eq!(n.observe(&waiting_unasked(&b), t(2_000)), None);
    assert_eq!(
        n.observe(&waiting_unasked(&b), t(2_100)),
        None,
        "still held"
    );
    assert!(n.due(t(2_000 + QUESTION_WAIT_MS - 1)).is_empty());
    let due = n.due(t(2_000 + QUESTION_WAIT_MS));
    assert_eq!(due.len(), 1);
    assert_eq!(due[0]["agent_id"], 2);
    assert_eq!(due[0]["body"], "It waits on a permission.");
    assert!(n.due(t(10_000)).is_empty(), "told once");
    // c: goes back to work before its time is up: nothing is told.
    assert_eq!(n.observe(&waiting_unasked(&c), t(3_000)), None);
    n.observe(&view(&c, TaskState::Processing, "go"), t(3_500));
    assert!(n.due(t(3_000 + QUESTION_WAIT_MS)).is_empty());
}

#[test]
fn a_named_agent_is_told_by_its_name() {
    let mut n = Notices::new();
    let a = agent(1);
    n.observe(&view(&a, TaskState::Processing, "go"), t(0));
    let mut waiting = view(&a, TaskState::AwaitingInput, "go");
    waiting.name = Some("login fix".into());
    let told = n.observe(&waiting, t(1_000)).expect("told");
    assert_eq!(told["title"], "login fix needs you");
}
