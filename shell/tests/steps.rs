//! Steps and usage on real PostgreSQL: the core's step and usage writes give the same rows
//! in PostgreSQL as in the in-memory store under retries and any batching, and the server's
//! routes show them: steps folded under turns, the card's current step, tokens and cost,
//! usage by project, day and agent, the files a task changed, `/metrics`, across a restart.

mod common;
use common::*;
use headspace::server::pgstore::PgStore;
use headspace_core::store::MemStore;
use headspace_core::usage::step::{current_step, StepOutcome, StepRow};
use headspace_core::usage::sum::{sum_by_model, UsageBy};
use headspace_core::usage::{PriceTable, UsageTally};
use headspace_core::{Command, Config, Core, Input, Timestamp, Write};
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::{json, Value};
use std::time::Duration;

/// A conversation's transcript lines (JSON text, one per line) with tool calls of every
/// outcome and usage on its assistant lines, for session `s`.
fn lines(s: &SessionWriter, start: Timestamp) -> Vec<String> {
    let mut at = start;
    let mut n = 0u64;
    let mut out = Vec::new();
    let mut line = |kind: &str, message: Value, extra: Value| {
        n += 1;
        at = at.add_millis(1_000);
        let mut v = json!({"type": kind, "message": message, "sessionId": s.session_id, "cwd": s.cwd,
            "uuid": format!("0000{n:04x}-0000-4000-8000-{:012x}", n), "timestamp": at.to_string()});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        out.push(v.to_string());
    };
    let usage = |i: u64, o: u64| json!({"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1_000});
    let tool_use = |msg: &str, id: &str, name: &str, input: Value, u: Value| {
        json!({"id": msg, "model": "claude-sonnet-4-5", "role": "assistant", "usage": u,
               "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]})
    };
    let result = |id: &str, text: &str, is_error: bool| json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error}]});
    line(
        "user",
        json!({"role": "user", "content": "fix the build"}),
        json!({}),
    );
    line(
        "assistant",
        tool_use(
            "msg_1",
            "toolu_test",
            "Bash",
            json!({"command": "cargo test"}),
            usage(10, 5),
        ),
        json!({}),
    );
    line(
        "assistant",
        tool_use(
            "msg_1",
            "toolu_test",
            "Bash",
            json!({"command": "cargo test"}),
            usage(10, 50),
        ),
        json!({}),
    );
    line(
        "user",
        result("toolu_test", "Exit code 101", true),
        json!({}),
    );
    line(
        "assistant",
        tool_use(
            "msg_2",
            "toolu_edit",
            "Edit",
            json!({"file_path": "/home/u/project1/src/lib.rs", "old_string": "a", "new_string": "b"}),
            usage(3, 80),
        ),
        json!({}),
    );
    line(
        "user",
        result("toolu_edit", "The file has been updated.", false),
        json!({}),
    );
    line(
        "assistant",
        tool_use(
            "msg_3",
            "toolu_write",
            "Write",
            json!({"file_path": "/home/u/project1/NOTES.md", "content": "x"}),
            usage(2, 20),
        ),
        json!({}),
    );
    line(
        "user",
        result(
            "toolu_write",
            "The user doesn't want to proceed with this tool use. The tool use was rejected.",
            true,
        ),
        json!({}),
    );
    line(
        "user",
        json!({"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}),
        json!({}),
    );
    line(
        "user",
        json!({"role": "user", "content": "go on"}),
        json!({}),
    );
    line(
        "assistant",
        json!({"id": "msg_4", "model": "claude-sonnet-4-5", "role": "assistant", "usage": usage(4, 9),
        "content": [{"type": "text", "text": "Fixed: the test passes now."}]}),
        json!({}),
    );
    line(
        "system",
        Value::Null,
        json!({"subtype": "turn_duration", "durationMs": 5}),
    );
    out
}

/// The writes the core makes of [`lines`] with PreToolUse hooks ahead of their calls.
fn writes() -> Vec<Write> {
    let t0 = Timestamp::parse_rfc3339("2026-11-22T08:00:00Z").unwrap();
    let s = SessionWriter::new(1, t0);
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let mut out = Vec::new();
    let mut offset = 0u64;
    let mut t = t0;
    for line in lines(&s, t0) {
        t = t.add_millis(1_000);
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(b) = v["message"]["content"]
            .as_array()
            .and_then(|c| c.first())
            .filter(|b| b["type"] == "tool_use")
        {
            let body = s.hook(
                "PreToolUse",
                Some("%2"),
                Some(t),
                json!({"tool_name": b["name"], "tool_input": b["input"], "tool_use_id": b["id"]}),
            );
            core.handle(
                t,
                Input::Hook {
                    agent: headspace_core::kind::AgentKind::Claude,
                    event: Some("PreToolUse".into()),
                    body,
                },
            );
        }
        let data = format!("{line}\n").into_bytes();
        let len = data.len() as u64;
        core.handle(
            t,
            Input::Transcript {
                path: s.path(),
                offset,
                data,
                read: None,
            },
        );
        offset += len;
        while let Some(c) = core.poll_command() {
            if let Command::Store(w) = c {
                out.push(w);
            }
        }
    }
    out
}

#[test]
fn steps_and_usage_are_the_same_rows_in_postgres_and_in_memory() {
    let writes = writes();
    assert!(writes
        .iter()
        .any(|w| matches!(w, Write::StepsInterrupted { .. })));
    let mut mem = MemStore::new();
    for w in &writes {
        mem.apply(w);
    }
    let want: Vec<StepRow> = mem.steps().cloned().collect();
    assert_eq!(want.len(), 3);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (i, batch) in [1usize, 4, writes.len()].into_iter().enumerate() {
        let Some(db) = fresh_db(&format!("steps_contract{i}")) else {
            return;
        };
        rt.block_on(async {
            headspace::server::migrate::run(&db).await.unwrap();
            let pg = PgStore::new(&db, 2).unwrap();
            for chunk in writes.chunks(batch) {
                pg.apply(chunk).await.unwrap();
                pg.apply(chunk).await.unwrap(); // a retry after an unknown outcome
            }
            let agent = want[0].agent_id;
            let mut got = pg.steps(agent, None, None).await.unwrap();
            got.sort_by(|a, b| a.tool_use_id.cmp(&b.tool_use_id));
            assert_eq!(got, want, "steps, batch {batch}");
            for by in [
                UsageBy::Agent,
                UsageBy::Task,
                UsageBy::Day,
                UsageBy::Project,
                UsageBy::ProjectDay,
            ] {
                for of in [None, Some(agent), Some(424_242)] {
                    let mut got = pg.usage(by, of).await.unwrap();
                    got.sort_by(|a, b| (&a.key, &a.model).cmp(&(&b.key, &b.model)));
                    assert_eq!(
                        got,
                        mem.usage_by(by, of),
                        "usage by {by:?} of {of:?}, batch {batch}"
                    );
                }
            }
            let rows: Vec<_> = mem.usage().cloned().collect();
            assert_eq!(
                mem.usage_by(UsageBy::Agent, None),
                sum_by_model(&rows, UsageBy::Agent, |_| None)
            );
            // Usage rows in a span, as the turns route asks for them.
            let when = |s: &str| Some(Timestamp::parse_rfc3339(s).unwrap());
            for (from, until) in [
                (None, None),
                (when("2026-11-22T08:00:04Z"), None),
                (None, when("2026-11-22T08:00:06Z")),
            ] {
                let got = pg.usage_rows(agent, from, until).await.unwrap();
                assert_eq!(
                    got,
                    mem.usage_of(agent, from, until),
                    "usage rows in [{from:?}, {until:?})"
                );
            }
            // Steps in a span, as the turns route asks for them.
            let at = |s: &str| Some(Timestamp::parse_rfc3339(s).unwrap());
            for (from, until) in [
                (None, None),
                (at("2026-11-22T08:00:03Z"), None),
                (None, at("2026-11-22T08:00:06Z")),
                (at("2026-11-22T08:00:03Z"), at("2026-11-22T08:00:06Z")),
            ] {
                let got = pg.steps(agent, from, until).await.unwrap();
                assert_eq!(
                    got,
                    mem.steps_of(agent, from, until),
                    "steps in [{from:?}, {until:?})"
                );
            }
            // The current step: none (every call ended), as the core's rule says.
            let snapshot = mem.snapshot();
            let since =
                headspace_core::view::activity::current_task(&snapshot.tasks).map(|t| t.started_at);
            assert_eq!(current_step(&want, since), None);
            assert!(pg.current_steps().await.unwrap().is_empty());
            assert!(mem.current_steps().is_empty());
            // A call still running is the current one in both; one started before the
            // current task is not.
            let mut open = StepRow::new(agent, "toolu_open")
                .with_tool("Bash", Some(&json!({"command": "make"})));
            open.started_at = Some(Timestamp::parse_rfc3339("2026-11-22T09:00:00Z").unwrap());
            let mut stale = StepRow::new(agent, "toolu_stale").with_tool("Read", None);
            stale.started_at = at("2026-11-22T08:00:00.500Z");
            let mut mem = mem.clone();
            for w in [Write::Step(open.clone()), Write::Step(stale.clone())] {
                pg.apply(std::slice::from_ref(&w)).await.unwrap();
                mem.apply(&w);
            }
            assert_eq!(pg.current_steps().await.unwrap().get(&agent), Some(&open));
            assert_eq!(pg.current_steps().await.unwrap(), mem.current_steps());
            let mut open_only = mem.clone();
            open_only.apply(&Write::StepsInterrupted {
                agent_id: agent,
                at: Timestamp::parse_rfc3339("2026-11-22T09:30:00Z").unwrap(),
            });
            pg.apply(&[Write::StepsInterrupted {
                agent_id: agent,
                at: Timestamp::parse_rfc3339("2026-11-22T09:30:00Z").unwrap(),
            }])
            .await
            .unwrap();
            assert_eq!(
                pg.steps(agent, None, None).await.unwrap(),
                open_only.steps_of(agent, None, None),
                "the interrupt ended both"
            );
            assert!(pg.current_steps().await.unwrap().is_empty());
            // A merge of agents folds the steps and usage of the one that goes into the
            // other's rows of the same key, in both stores.
            let (from, into) = (900, 901);
            let mut hook_made =
                StepRow::new(into, "toolu_both").with_tool("Bash", Some(&json!({"command": "ls"})));
            hook_made.started_at = at("2026-11-22T10:00:05Z");
            let mut read = StepRow::new(from, "toolu_both")
                .with_tool("Bash", Some(&json!({"command": "ls -la"})));
            read.confirmed = true;
            read.started_at = at("2026-11-22T10:00:01Z");
            read.outcome = StepOutcome::Ok;
            read.evidence = headspace_core::usage::step::Evidence::Result;
            let only_from = StepRow::new(from, "toolu_from");
            let usage = |agent: u64, output: u64| headspace_core::usage::sum::UsageRow {
                agent_id: agent,
                message_id: "msg_m".into(),
                task_id: None,
                model: "m".into(),
                tokens: headspace_core::usage::Tokens {
                    output,
                    ..Default::default()
                },
                at: Timestamp(1_000),
            };
            let merge = [
                Write::Step(hook_made),
                Write::Step(read),
                Write::Step(only_from),
                Write::Usage(usage(into, 5)),
                Write::Usage(usage(from, 9)),
                Write::MergeAgent { from, into },
            ];
            let mut mem2 = MemStore::new();
            for w in &merge {
                mem2.apply(w);
            }
            pg.apply(&merge[..5]).await.unwrap();
            pg.apply(&merge[5..]).await.unwrap();
            assert_eq!(
                pg.steps(into, None, None).await.unwrap(),
                mem2.steps_of(into, None, None),
                "merged steps"
            );
            assert_eq!(
                mem2.steps_of(into, None, None)[1].summary,
                "ls -la",
                "the transcript's facts"
            );
            assert!(pg.steps(from, None, None).await.unwrap().is_empty());
            assert_eq!(
                pg.usage(UsageBy::Agent, Some(into)).await.unwrap(),
                mem2.usage_by(UsageBy::Agent, Some(into))
            );
            assert!(pg
                .usage(UsageBy::Agent, Some(from))
                .await
                .unwrap()
                .is_empty());
        });
    }
}

#[test]
fn the_routes_show_steps_tokens_cost_and_files_across_a_restart() {
    let Some(db) = fresh_db("steps_routes") else {
        return;
    };
    let claude = temp_dir("steps-routes");
    let prices = claude.join("prices.json");
    std::fs::write(&prices, r#"{"claude-sonnet-4-5": {"input": 1000, "output": 2000, "cache_write": 0, "cache_read": 0}}"#).unwrap();
    let prices_arg = prices.display().to_string();
    let server = Server::start(&db, &claude, &["--prices", &prices_arg]);
    let t0 = Timestamp::parse_rfc3339("2026-11-22T08:00:00Z").unwrap();
    let s = SessionWriter::new(1, t0);
    let file = claude.join(s.path());
    let all = lines(&s, t0);

    // The hooks first: a prompt and a call the transcript has not written yet.
    let (status, _) = server.post(
        "/hook/UserPromptSubmit",
        &hook(
            &s,
            &claude,
            "%7",
            "UserPromptSubmit",
            json!({"prompt": "fix the build"}),
        ),
    );
    assert_eq!(status, 200);
    server.post("/hook/PreToolUse", &hook(&s, &claude, "%7", "PreToolUse", json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_use_id": "toolu_test"})));
    let card = wait_for(Duration::from_secs(5), || {
        let a = server.try_json("/api/agents")?;
        (a[0]["now"]["label"] == "Bash: cargo test").then(|| a[0].clone())
    })
    .expect("the card says what the agent runs");
    assert_eq!(card["activity"], "running");

    // Then the whole transcript.
    append(
        &file,
        &all.iter().map(|l| format!("{l}\n")).collect::<String>(),
    );
    let agent = card["id"].as_u64().unwrap();
    let text: String = all.iter().map(|l| format!("{l}\n")).collect();
    let mut tally = UsageTally::default();
    tally.add_text(&text, None);
    let table = PriceTable::builtin()
        .overridden_by(PriceTable::parse(&std::fs::read_to_string(&prices).unwrap()).unwrap());
    let cost = tally.cost_usd(&table);
    let check = |server: &Server| {
        let turns = wait_for(Duration::from_secs(10), || {
            let t = server.try_json(&format!("/api/agents/{agent}/turns"))?;
            let steps: usize = t
                .as_array()?
                .iter()
                .map(|t| t["steps"].as_array().map_or(0, Vec::len))
                .sum();
            (steps == 3 && t.as_array()?.len() == 3).then_some(t)
        })
        .expect("three steps folded under the turns");
        let first = &turns[0];
        assert_eq!(first["text"], "fix the build");
        let steps = first["steps"].as_array().unwrap();
        let outcomes: Vec<(&str, &str, &str)> = steps
            .iter()
            .map(|s| {
                (
                    s["tool"].as_str().unwrap(),
                    s["summary"].as_str().unwrap(),
                    s["outcome"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            outcomes,
            [
                ("Bash", "cargo test", "error"),
                ("Edit", "/home/u/project1/src/lib.rs", "ok"),
                ("Write", "/home/u/project1/NOTES.md", "denied")
            ]
        );
        assert_eq!(
            steps[0]["duration_ms"], 2_000,
            "from its first tool_use line to its result"
        );
        assert!(
            turns[1].get("steps").is_none(),
            "a turn without steps has none"
        );
        // Each message's tokens under its turn: the three calls' under the prompt, the
        // reply's under the reply; together the agent's.
        assert_eq!(turns[0]["usage"]["messages"], 3);
        assert!(turns[1].get("usage").is_none());
        assert_eq!(turns[2]["usage"]["messages"], 1);
        let per_turn: u64 = turns
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["usage"]["tokens"]["output"].as_u64())
            .sum();
        assert_eq!(per_turn, tally.tokens().output);
        // Paging: a page of the first turn alone still holds its steps, the next page none.
        let page = server.json(&format!("/api/agents/{agent}/turns?limit=1"));
        assert_eq!(page[0]["steps"].as_array().unwrap().len(), 3);
        let id = page[0]["id"].as_u64().unwrap();
        let rest = server.json(&format!("/api/agents/{agent}/turns?after={id}"));
        assert!(rest
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("steps").is_none()));

        let card = wait_for(Duration::from_secs(5), || {
            let c = server.try_json(&format!("/api/agents/{agent}"))?;
            (c["activity"] != "running").then_some(c)
        })
        .expect("the turn ends");
        assert_eq!(card["now"], Value::Null);
        let tokens = tally.tokens();
        assert_eq!(
            card["tokens"],
            json!({"input": tokens.input, "output": tokens.output, "cache_read": tokens.cache_read, "cache_creation": tokens.cache_creation})
        );
        assert!(
            (card["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9,
            "{card}"
        );
        assert_eq!(card["messages"], 4);
        let list = server.json("/api/agents");
        assert_eq!(list[0]["tokens"], card["tokens"]);

        let usage = server.json(&format!("/api/agents/{agent}/usage"));
        assert_eq!(usage["files"], json!(["/home/u/project1/src/lib.rs"]));
        let tasks = usage["tasks"].as_array().unwrap();
        assert_eq!(tasks[0]["files"], json!(["/home/u/project1/src/lib.rs"]));
        assert_eq!(tasks[0]["steps"], 3);
        let task_tokens: u64 = tasks
            .iter()
            .map(|t| t["tokens"]["output"].as_u64().unwrap())
            .sum();
        assert_eq!(task_tokens, tokens.output);
        // Since a time: what an orchestration step is priced by. From the start, all of it;
        // from after the last message, nothing; a time that does not read is refused.
        let all = server.json(&format!("/api/agents/{agent}/usage?since=0"));
        assert!(
            (all["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9,
            "{all}"
        );
        assert_eq!(all["messages"], 4);
        let later = server.json(&format!(
            "/api/agents/{agent}/usage?since=2100-01-01T00:00:00Z"
        ));
        assert_eq!(later["messages"], 0, "{later}");
        assert_eq!(
            server
                .get(&format!("/api/agents/{agent}/usage?since=noon"))
                .0,
            400
        );

        for by in ["project", "day", "agent", "project_day"] {
            let groups = server.json(&format!("/api/usage?by={by}"));
            assert_eq!(groups.as_array().unwrap().len(), 1, "{by}: {groups}");
            assert_eq!(groups[0]["tokens"], card["tokens"], "{by}");
            assert!((groups[0]["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9);
        }
        assert_eq!(
            server.json("/api/usage?by=project")[0]["project"],
            "project1"
        );
        assert_eq!(server.json("/api/usage?by=day")[0]["key"], "2026-11-22");
        let cell = &server.json("/api/usage?by=project_day")[0];
        assert_eq!(
            (&cell["day"], &cell["project"], &cell["key"]),
            (
                &json!("2026-11-22"),
                &json!("project1"),
                &json!("2026-11-22 project1")
            )
        );
        assert_eq!(server.get("/api/usage?by=week").0, 400);

        let (_, metrics) = server.get("/metrics");
        assert!(
            metrics.contains(&format!(
                "headspace_tokens_total{{model=\"claude-sonnet-4-5\",kind=\"output\"}} {}\n",
                tokens.output
            )),
            "{metrics}"
        );
        let line = metrics
            .lines()
            .find(|l| l.starts_with("headspace_cost_usd_total{"))
            .unwrap();
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!((value - cost).abs() < 1e-9);
    };
    check(&server);
    // A restart reads nothing twice and loses nothing.
    server.kill();
    let server = Server::start(&db, &claude, &["--prices", &prices_arg]);
    check(&server);
    let count = psql(&db, "SELECT count(*) FROM steps");
    assert_eq!(count, "3");
    assert_eq!(
        psql(
            &db,
            "SELECT outcome FROM steps WHERE tool_use_id = 'toolu_test'"
        ),
        StepOutcome::Error.as_str()
    );
}

#[test]
fn a_price_file_that_does_not_parse_stops_the_server() {
    let Some(db) = fresh_db("steps_bad_prices") else {
        return;
    };
    let claude = temp_dir("steps-bad-prices");
    let prices = claude.join("prices.json");
    std::fs::write(&prices, "{not json").unwrap();
    let out = common::headspace()
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            &db,
            "--claude-dir",
        ])
        .arg(&claude)
        .arg("--prices")
        .arg(&prices)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("prices.json"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
