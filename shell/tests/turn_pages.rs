//! The turns route read backwards, on the real binary and PostgreSQL: `newest=N` gives a
//! conversation's last N turns and `before=TURN` the page before a turn, oldest first like
//! every page, each turn with the same steps as in the whole conversation; paging back from
//! the end meets every turn exactly once; bad or mixed parameters get a 400 that says why,
//! a turn of another agent a 404.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::time::Duration;

/// Turns in the conversation: a prompt and a reply per round.
const ROUNDS: usize = 12;

fn array(v: Value) -> Vec<Value> {
    v.as_array().expect("an array").clone()
}

fn ids(turns: &[Value]) -> Vec<u64> {
    turns.iter().map(|t| t["id"].as_u64().unwrap()).collect()
}

#[test]
fn a_conversation_reads_backwards_from_its_newest_turns() {
    let Some(db) = fresh_db("turn_pages") else {
        return;
    };
    let claude = temp_dir("turn-pages");
    let server = Server::start(&db, &claude, &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut s = SessionWriter::new(1, Timestamp(now - 3_600_000));
    let mut text = String::new();
    for i in 0..ROUNDS {
        s.wait(1_000);
        text.push_str(&format!("{}\n", s.prompt(&format!("round {i}"), None).json));
        s.wait(1_000);
        // A tool call in every round: its step folds under the prompt before it.
        for l in s.tool("Bash", json!({"command": format!("echo {i}")}), "ok") {
            text.push_str(&format!("{}\n", l.json));
        }
        s.wait(1_000);
        text.push_str(&format!("{}\n", s.agent_text(&format!("reply {i}")).json));
    }
    // Another agent: its turns are not this one's.
    let mut o = SessionWriter::new(2, Timestamp(now - 3_600_000));
    append(
        &claude.join(o.path()),
        &format!("{}\n", o.prompt("elsewhere", None).json),
    );
    append(&claude.join(s.path()), &text);
    let base = format!("/api/agents/{}/turns", s.session_id);
    let all = wait_for(Duration::from_secs(20), || {
        let v = array(server.try_json(&base)?);
        (v.len() == 2 * ROUNDS).then_some(v)
    })
    .unwrap_or_else(|| panic!("turns:\n{}", server.log()));
    assert!(
        all.iter().any(|t| t["steps"].is_array()),
        "the conversation has steps: {all:?}"
    );
    let foreign = wait_for(Duration::from_secs(20), || {
        let v = array(server.try_json(&format!("/api/agents/{}/turns", o.session_id))?);
        v.first().map(|t| t["id"].as_u64().unwrap())
    })
    .expect("the other agent's turn");

    // The newest N, oldest first, each exactly as the whole conversation shows it.
    let newest = array(server.json(&format!("{base}?newest=5")));
    assert_eq!(newest, all[all.len() - 5..].to_vec());
    assert_eq!(
        array(server.json(&format!("{base}?newest=100000"))),
        all,
        "more asked than there are: all of them"
    );

    // The page before a turn.
    let at = ids(&all)[9];
    assert_eq!(
        array(server.json(&format!("{base}?before={at}&limit=4"))),
        all[5..9].to_vec()
    );
    assert_eq!(
        array(server.json(&format!("{base}?before={}&limit=4", ids(&all)[2]))),
        all[0..2].to_vec(),
        "four asked, two there"
    );
    assert!(array(server.json(&format!("{base}?before={}", ids(&all)[0]))).is_empty());

    // Paging back from the end meets every turn once, in order.
    let mut pages = array(server.json(&format!("{base}?newest=5")));
    loop {
        let first = ids(&pages)[0];
        let page = array(server.json(&format!("{base}?before={first}&limit=5")));
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 5);
        pages.splice(0..0, page);
    }
    assert_eq!(pages, all);

    // Bad or mixed parameters, and a turn that is not this agent's.
    for (query, says) in [
        ("newest=0", "newest must be between 1 and 100000"),
        ("newest=x", "newest must be between 1 and 100000"),
        ("before=x", "before must be a turn id"),
        (
            format!("before={at}&after={at}").as_str(),
            "after, around, before and newest do not go together",
        ),
        (
            format!("newest=3&around={at}").as_str(),
            "after, around, before and newest do not go together",
        ),
    ] {
        let (status, body) = server.get(&format!("{base}?{query}"));
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.contains(says), "{query}: {body}");
    }
    let (status, body) = server.get(&format!("{base}?before={foreign}"));
    assert_eq!(status, 404, "{body}");
    server.stop();
}
