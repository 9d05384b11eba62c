//! The store contract: the same write sequences applied to the in-memory store and to
//! PostgreSQL give the same rows, even when every batch is applied twice (a retry after an
//! unknown outcome) and batches are cut anywhere.

mod common;
use common::*;
use headspace::server::pgstore::PgStore;
use headspace_core::model::Snapshot;
use headspace_core::store::MemStore;
use headspace_core::{Command, Config, Core, Input, Timestamp, Write};
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::json;

/// A conversation with hooks before and after their lines, a question, a late Stop, a
/// restart in the middle, and identical replies: all the kinds of write.
fn writes() -> Vec<Write> {
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let mut mem = MemStore::new();
    let t0 = Timestamp::parse_rfc3339("2026-11-22T08:00:00Z").unwrap();
    let mut s = SessionWriter::new(1, t0);
    let mut out = Vec::new();
    let mut t = t0;
    let feed = |core: &mut Core,
                mem: &mut MemStore,
                input: Input,
                out: &mut Vec<Write>,
                t: &mut Timestamp| {
        *t = t.add_millis(100);
        core.handle(*t, input);
        while let Some(c) = core.poll_command() {
            if let Command::Store(w) = c {
                mem.apply(&w);
                out.push(w);
            }
        }
    };
    let hook = |s: &SessionWriter, e: &str, extra: serde_json::Value, at: Timestamp| Input::Hook {
        agent: headspace_core::kind::AgentKind::Claude,
        event: Some(e.into()),
        body: s.hook(e, Some("%2"), Some(at), extra),
    };
    let append = |s: &SessionWriter, lines: &[&str], offset: &mut u64| {
        let data = lines
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .into_bytes();
        let input = Input::Transcript {
            path: s.path(),
            offset: *offset,
            data: data.clone(),
            read: None,
        };
        *offset += data.len() as u64;
        input
    };
    let mut offset = 0u64;
    feed(
        &mut core,
        &mut mem,
        hook(
            &s,
            "UserPromptSubmit",
            json!({"prompt": "yes", "prompt_id": "p1"}),
            t,
        ),
        &mut out,
        &mut t,
    );
    let p1 = s.prompt("yes", Some("p1"));
    let a1 = s.agent_text("Which table?");
    feed(
        &mut core,
        &mut mem,
        append(&s, &[&p1.json, &a1.json], &mut offset),
        &mut out,
        &mut t,
    );
    feed(
        &mut core,
        &mut mem,
        hook(
            &s,
            "Stop",
            json!({"last_assistant_message": "Which table?"}),
            t,
        ),
        &mut out,
        &mut t,
    );
    let (q, id, input) = s.question("Pick one", &["a", "b"]);
    feed(
        &mut core,
        &mut mem,
        hook(
            &s,
            "PreToolUse",
            json!({"tool_name": "AskUserQuestion", "tool_use_id": id, "tool_input": input}),
            t,
        ),
        &mut out,
        &mut t,
    );
    let ans = s.answer(&id, "Pick one", "a");
    feed(
        &mut core,
        &mut mem,
        append(&s, &[&q.json, &ans.json], &mut offset),
        &mut out,
        &mut t,
    );
    core = Core::new(Config::new(CLAUDE_DIR));
    let snap = mem.snapshot();
    feed(&mut core, &mut mem, Input::Restore(snap), &mut out, &mut t);
    let early = t;
    feed(
        &mut core,
        &mut mem,
        hook(&s, "UserPromptSubmit", json!({"prompt": "yes"}), t),
        &mut out,
        &mut t,
    );
    feed(
        &mut core,
        &mut mem,
        hook(&s, "Stop", json!({}), early),
        &mut out,
        &mut t,
    );
    let p2 = s.prompt("yes", None);
    let d = s.agent_text("Done. All tests pass.");
    let dur = s.turn_duration();
    feed(
        &mut core,
        &mut mem,
        append(&s, &[&p2.json, &d.json, &dur.json], &mut offset),
        &mut out,
        &mut t,
    );
    // The pane shows a permission dialog: it goes on the agent.
    let dialog = "│ Bash command │\n│ Do you want to proceed? │\n│ ❯ 1. Yes │\n│   2. No │\n";
    feed(
        &mut core,
        &mut mem,
        Input::Pane {
            pane: "%2".into(),
            text: dialog.into(),
        },
        &mut out,
        &mut t,
    );
    assert!(mem.agents().next().unwrap().permission.is_some());
    // A new session (after /clear) whose transcript comes before its hooks: a merge.
    let mut s2 = SessionWriter::new(2, t);
    let mut offset2 = 0u64;
    let p3 = s2.prompt("after the clear", None);
    feed(
        &mut core,
        &mut mem,
        append(&s2, &[&p3.json], &mut offset2),
        &mut out,
        &mut t,
    );
    feed(
        &mut core,
        &mut mem,
        hook(&s2, "SessionStart", json!({"source": "clear"}), t),
        &mut out,
        &mut t,
    );
    feed(
        &mut core,
        &mut mem,
        hook(&s2, "SessionEnd", json!({"reason": "logout"}), t),
        &mut out,
        &mut t,
    );
    assert!(mem.violations().is_empty());
    assert_eq!(mem.agents().count(), 1, "merged");
    // The CLI took its conversation back to the second prompt (Gemini's /rewind): that
    // turn and the later ones of its session are marked, the earlier ones not.
    let agent_id = mem.agents().next().unwrap().id;
    let w = Write::Rewound {
        agent_id,
        entry_uuid: p2.uuid.clone(),
        at: t,
    };
    mem.apply(&w);
    out.push(w);
    assert!(mem.turns().any(|x| x.rewound_at.is_some()));
    assert!(mem.turns().any(|x| x.rewound_at.is_none()));
    out
}

fn normalise(mut s: Snapshot) -> Snapshot {
    s.agents.sort_by_key(|a| a.id);
    s.tasks.sort_by_key(|t| t.id);
    s.turns.sort_by_key(|t| t.id);
    s.offsets.sort_by(|a, b| a.path.cmp(&b.path));
    s
}

#[test]
fn postgres_and_memory_stores_agree_under_retries_and_any_batching() {
    let _errors = headspace_testkit::error_logs::fail_on_error_logs();
    let writes = writes();
    assert!(writes.iter().any(|w| matches!(w, Write::Claim { .. })));
    assert!(writes
        .iter()
        .any(|w| matches!(w, Write::HookMatched { .. })));
    let mut mem = MemStore::new();
    for w in &writes {
        mem.apply(w);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (i, batch) in [1usize, 3, 7, writes.len()].into_iter().enumerate() {
        let Some(db) = fresh_db(&format!("contract{i}")) else {
            return;
        };
        rt.block_on(async {
            headspace::server::migrate::run(&db).await.unwrap();
            let pg = PgStore::new(&db, 2).unwrap();
            for chunk in writes.chunks(batch) {
                pg.apply(chunk).await.unwrap();
                pg.apply(chunk).await.unwrap(); // a retry after an unknown outcome
            }
            let got = normalise(pg.snapshot().await.unwrap());
            let want = normalise(mem.snapshot());
            assert_eq!(got.agents, want.agents, "agents, batch {batch}");
            assert_eq!(got.tasks, want.tasks, "tasks, batch {batch}");
            assert_eq!(got.turns, want.turns, "turns, batch {batch}");
            assert_eq!(got.offsets, want.offsets, "offsets, batch {batch}");
            // Loading agents back (after the core evicted them) gives the same rows too.
            let ids: Vec<u64> = want.agents.iter().map(|a| a.id).chain([424_242]).collect();
            for some in [&ids[..1], &ids[..]] {
                let got = normalise(pg.load_agents(some).await.unwrap());
                let want = normalise(mem.load_agents(some));
                assert!(!want.turns.is_empty(), "the load brings turns back");
                assert_eq!(got, want, "load_agents {some:?}, batch {batch}");
            }
            // Postgres refuses a second turn for an entry exactly as the memory store does.
            let mut dup = want
                .turns
                .iter()
                .find(|t| t.entry_uuid.is_some())
                .unwrap()
                .clone();
            dup.id = 9_999;
            pg.apply(&[Write::Turn(dup)]).await.unwrap();
            assert_eq!(pg.snapshot().await.unwrap().turns.len(), want.turns.len());
        });
    }
}

#[test]
fn a_write_the_database_refuses_is_dropped_and_the_rest_of_its_batch_kept() {
    let errors = headspace_testkit::error_logs::fail_on_error_logs();
    errors.expect_error("write dropped, the database refuses it");
    let Some(db) = fresh_db("contract_poison") else {
        return;
    };
    let writes = writes();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        headspace::server::migrate::run(&db).await.unwrap();
        let pg = PgStore::new(&db, 2).unwrap();
        // A turn naming a task that does not exist (a foreign-key violation) in the middle.
        let mut poison = writes
            .iter()
            .find_map(|w| {
                if let Write::Turn(t) = w {
                    Some(t.clone())
                } else {
                    None
                }
            })
            .unwrap();
        poison.id = 77_777;
        poison.task_id = 88_888;
        poison.entry_uuid = Some("poison".into());
        let mut batch = writes.clone();
        batch.insert(batch.len() / 2, Write::Turn(poison));
        pg.apply(&batch).await.expect("the batch goes through");
        let mut mem = MemStore::new();
        for w in &writes {
            mem.apply(w);
        }
        assert_eq!(
            normalise(pg.snapshot().await.unwrap()).turns,
            normalise(mem.snapshot()).turns
        );
    });
}

/// One view of an agent: after every write, PostgreSQL's card query and the in-memory
/// store (the simulator's) give the same [`AgentView`]s, and resolve references alike.
#[test]
fn postgres_and_memory_stores_show_the_same_cards_and_resolve_alike() {
    let Some(db) = fresh_db("contract_views") else {
        return;
    };
    let writes = writes();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        headspace::server::migrate::run(&db).await.unwrap();
        let pg = PgStore::new(&db, 2).unwrap();
        let mut mem = MemStore::new();
        let mut saw_question = false;
        for w in &writes {
            pg.apply(std::slice::from_ref(w)).await.unwrap();
            mem.apply(w);
            let want: Vec<_> = mem.agents().filter_map(|a| mem.agent_view(a.id)).collect();
            let got = pg.agents().await.unwrap();
            assert_eq!(got, want, "cards after {w:?}");
            for v in &want {
                assert_eq!(pg.agent(v.agent.id).await.unwrap().as_ref(), Some(v));
                saw_question |= v.question.is_some();
            }
            let mut references: Vec<String> = vec!["%2".into(), "nobody".into(), "424242".into()];
            for a in mem.agents() {
                references.push(a.id.to_string());
                references.push(a.session_id.clone());
                references.extend(a.sessions.iter().cloned());
            }
            for r in &references {
                assert_eq!(
                    pg.resolve(r).await.unwrap(),
                    mem.resolve(r),
                    "resolve {r:?} after {w:?}"
                );
            }
        }
        assert!(saw_question, "the writes open a question at some point");
    });
}
