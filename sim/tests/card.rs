//! The simulated store shows the same agent card as PostgreSQL: the core's writes of a
//! session that asks an AskUserQuestion, applied to the simulator's world, give a card with
//! the question and its options (the simulator once never set it).

use headspace_core::{Command, Config, Core, Input, Timestamp};
use headspace_sim::rng::Rng;
use headspace_sim::world::{AdapterFaults, SimWorld};
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::json;
use std::future::Future;
use std::task::{Context, Poll, Waker};

/// The simulated store answers at once: one poll finishes its future.
fn now<T>(f: impl Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the simulated store does not wait"),
    }
}

#[test]
fn the_simulated_card_shows_the_question_the_agent_waits_on() {
    let world = SimWorld::new(Rng::new(1), AdapterFaults::default());
    let store = world.adapters().store;
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let t0 = Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap();
    let mut s = SessionWriter::new(1, t0);
    let mut t = t0;
    let mut feed = |core: &mut Core, input: Input| {
        t = t.add_millis(100);
        core.handle(t, input);
        while let Some(c) = core.poll_command() {
            if let Command::Store(w) = c {
                world.lock().store.apply(&w);
            }
        }
    };
    let hook = Input::Hook {
        agent: headspace_core::kind::AgentKind::Claude,
        event: Some("UserPromptSubmit".into()),
        body: s.hook(
            "UserPromptSubmit",
            Some("%5"),
            Some(t0),
            json!({"prompt": "pick a database"}),
        ),
    };
    feed(&mut core, hook);
    let prompt = s.prompt("pick a database", None);
    let (question, _, input) = s.question("Which option?", &["a", "b"]);
    let data = format!("{}\n{}\n", prompt.json, question.json).into_bytes();
    let transcript = Input::Transcript {
        path: s.path(),
        offset: 0,
        data,
        read: None,
    };
    feed(&mut core, transcript);

    let named = now(store.named("%5")).unwrap();
    let id = headspace_core::view::resolve_reference(named.iter().map(|(a, _)| a), "%5")
        .expect("the pane names the agent");
    let view = now(store.agent(id)).unwrap().expect("the agent's card");
    let card = view.card();
    assert_eq!(card["state"], "awaiting_input");
    assert_eq!(card["activity"], "waiting");
    assert_eq!(card["question"]["text"], "Which option?");
    assert_eq!(card["question"]["question"], input);
    let q = view.open_question().expect("an open question");
    assert_eq!(q.choose(1), Ok("a".to_string()), "answer can pick from it");
    let all = now(store.agents()).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].card(), card, "the list shows the same card");
}
