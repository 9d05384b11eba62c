//! Steps (tool calls) and usage: every `tool_use` with a `tool_result` becomes exactly one
//! step with the right outcome, whether the hooks come first, late or never, and wherever
//! the server crashes; each message's tokens count once; cost is the price table applied.

use headspace_core::io::{Command, Input, Write};
use headspace_core::model::{AgentId, TurnRow, TurnSource};
use headspace_core::store::MemStore;
use headspace_core::usage::step::{
    current_step, files_changed, fold_under_turns, merge, turn_indices_at, Evidence, StepOutcome,
    StepRow,
};
use headspace_core::usage::sum::{sum_by_model, totals, UsageBy, UsageRow};
use headspace_core::usage::{PriceTable, Tokens, UsageTally};
use headspace_core::{Actor, Config, Core, Intent, Timestamp};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};

const CLAUDE_DIR: &str = "/home/u/.claude";
const SESSION: &str = "5e550001-0000-4000-8000-000000000001";
const PATH: &str = "projects/-home-u-app/5e550001-0000-4000-8000-000000000001.jsonl";

fn t0() -> Timestamp {
    Timestamp::parse_rfc3339("2026-11-01T09:00:00Z").unwrap()
}

/// One thing that happens: a transcript line appended, or a hook posted.
#[derive(Clone, Debug)]
enum Event {
    Line(String),
    Hook(&'static str, Value),
}

/// Writes a conversation's transcript lines and the hooks Claude Code would fire with them.
struct Script {
    events: Vec<Event>,
    clock: Timestamp,
    seq: u64,
}

impl Script {
    fn new() -> Script {
        Script {
            events: Vec::new(),
            clock: t0(),
            seq: 0,
        }
    }

    fn line(&mut self, kind: &str, message: Value, extra: Value) -> Value {
        self.seq += 1;
        self.clock = self.clock.add_millis(1_000);
        let mut v = json!({
            "type": kind, "message": message, "sessionId": SESSION, "cwd": "/home/u/app",
            "uuid": format!("00000000-0000-4000-8000-{:012x}", self.seq),
            "timestamp": self.clock.to_string(),
        });
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        self.events.push(Event::Line(v.to_string()));
        v
    }

    fn hook(&mut self, event: &'static str, extra: Value) {
        let mut v = json!({
            "session_id": SESSION, "hook_event_name": event, "cwd": "/home/u/app",
            "transcript_path": format!("{CLAUDE_DIR}/{PATH}"), "tmux_pane": "%1",
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        self.events.push(Event::Hook(event, v));
    }

    fn prompt(&mut self, text: &str) {
        self.hook("UserPromptSubmit", json!({"prompt": text}));
        self.line("user", json!({"role": "user", "content": text}), json!({}));
    }

    fn usage(input: u64, output: u64, write: u64, read: u64) -> Value {
        json!({"input_tokens": input, "output_tokens": output,
               "cache_creation_input_tokens": write, "cache_read_input_tokens": read})
    }

    fn text(&mut self, msg: &str, text: &str, usage: Value) {
        self.line(
            "assistant",
            json!({"id": msg, "model": "claude-sonnet-4-5", "role": "assistant", "usage": usage,
                   "content": [{"type": "text", "text": text}]}),
            json!({"requestId": format!("req_{msg}")}),
        );
    }

    /// A tool call: PreToolUse, its `tool_use` line, then (when it has one) its result line
    /// and the hook Claude Code fires after it.
    fn tool(
        &mut self,
        msg: &str,
        id: &str,
        name: &str,
        input: Value,
        result: Option<(&str, bool)>,
        usage: Value,
    ) {
        self.hook(
            "PreToolUse",
            json!({"tool_name": name, "tool_input": input, "tool_use_id": id}),
        );
        self.line(
            "assistant",
            json!({"model": "claude-sonnet-4-5", "id": msg, "role": "assistant",
                   "content": [{"type": "tool_use", "id": id, "name": name, "input": input}], "usage": usage}),
            json!({}),
        );
        let Some((content, is_error)) = result else {
            return;
        };
        self.line(
            "user",
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                   "content": content, "is_error": is_error}]}),
            json!({"toolUseResult": content}),
        );
        if !content.starts_with("The user doesn't want") && !content.starts_with("[Request") {
            let event = if is_error {
                "PostToolUseFailure"
            } else {
                "PostToolUse"
            };
            self.hook(
                event,
                json!({"tool_name": name, "tool_input": input, "tool_use_id": id}),
            );
        }
    }
}

/// The conversation every test below runs: each outcome once.
fn conversation() -> Script {
    let mut s = Script::new();
    s.prompt("fix the build");
    s.text("msg_1", "Let me look.", Script::usage(10, 2, 4_000, 0));
    let bash = json!({"command": "cargo test\ncargo build", "description": "Run the tests"});
    s.tool(
        "msg_1",
        "toolu_bash1",
        "Bash",
        bash,
        Some(("Exit code 1\nerror[E0425]", true)),
        Script::usage(10, 40, 4_000, 0),
    );
    let edit = json!({"file_path": "src/lib.rs", "old_string": "a", "new_string": "b"});
    s.tool(
        "msg_2",
        "toolu_edit",
        "Edit",
        edit,
        Some(("The file src/lib.rs has been updated.", false)),
        Script::usage(3, 90, 200, 4_000),
    );
    let write = json!({"file_path": "src/new.rs", "content": "fn main() {}"});
    s.tool(
        "msg_3",
        "toolu_write",
        "Write",
        write,
        Some((
            "The user doesn't want to proceed with this tool use. The tool use was rejected.",
            true,
        )),
        Script::usage(2, 30, 100, 4_200),
    );
    s.line("user", json!({"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}), json!({}));
    s.prompt("go on, but do not write files");
    s.tool(
        "msg_4",
        "toolu_sleep",
        "Bash",
        json!({"command": "sleep 100"}),
        Some(("[Request interrupted by user for tool use]", true)),
        Script::usage(5, 20, 50, 4_300),
    );
    s.prompt("try again");
    s.tool(
        "msg_5",
        "toolu_read",
        "Read",
        json!({"file_path": "src/main.rs"}),
        None,
        Script::usage(5, 25, 60, 4_400),
    );
    s.line("user", json!({"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}), json!({}));
    s.prompt("search instead");
    s.tool(
        "msg_6",
        "toolu_grep",
        "Grep",
        json!({"pattern": "fn main", "path": "src"}),
        Some(("src/main.rs", false)),
        Script::usage(6, 30, 0, 4_500),
    );
    s.text("msg_7", "Found it.", Script::usage(1, 5, 0, 4_600));
    s.hook("Stop", json!({"last_assistant_message": "Found it."}));
    s.line(
        "system",
        json!(null),
        json!({"subtype": "turn_duration", "durationMs": 1000}),
    );
    s
}

/// The expected outcome of each tool call of [`conversation`].
fn expected() -> BTreeMap<&'static str, StepOutcome> {
    BTreeMap::from([
        ("toolu_bash1", StepOutcome::Error),
        ("toolu_edit", StepOutcome::Ok),
        ("toolu_write", StepOutcome::Denied),
        ("toolu_sleep", StepOutcome::Interrupted),
        ("toolu_read", StepOutcome::Interrupted),
        ("toolu_grep", StepOutcome::Ok),
    ])
}

/// The core, the in-memory store and the files, run like the shell runs them; it can crash
/// after any number of store writes.
struct Rig {
    path: String,
    core: Core,
    store: MemStore,
    file: Vec<u8>,
    now: Timestamp,
    writes: usize,
    crash_at: Option<usize>,
}

impl Rig {
    fn new(crash_at: Option<usize>) -> Rig {
        Rig::at(PATH, crash_at)
    }

    fn at(path: &str, crash_at: Option<usize>) -> Rig {
        Rig {
            path: path.to_string(),
            core: Core::new(Config::new(CLAUDE_DIR)),
            store: MemStore::new(),
            file: Vec::new(),
            now: t0(),
            writes: 0,
            crash_at,
        }
    }

    fn feed(&mut self, event: &Event) {
        self.now = self.now.add_millis(100);
        match event {
            Event::Line(l) => {
                let offset = self.file.len() as u64;
                let data = format!("{l}\n").into_bytes();
                self.file.extend_from_slice(&data);
                self.input(Input::Transcript {
                    path: self.path.clone(),
                    offset,
                    data,
                    read: None,
                });
            }
            Event::Hook(name, body) => self.input(Input::Hook {
                agent: headspace_core::kind::AgentKind::Claude,
                event: Some(name.to_string()),
                body: serde_json::to_vec(body).unwrap(),
            }),
        }
    }

    fn input(&mut self, input: Input) {
        let mut queue = VecDeque::from([input]);
        while let Some(input) = queue.pop_front() {
            self.core.handle(self.now, input);
            while let Some(cmd) = self.core.poll_command() {
                match cmd {
                    Command::Store(w) => {
                        if self.crash_at == Some(self.writes) {
                            self.crash();
                            return;
                        }
                        self.writes += 1;
                        self.store.apply(&w);
                    }
                    Command::ReadTranscript { from, read, .. } => {
                        queue.push_back(Input::Transcript {
                            path: self.path.clone(),
                            offset: from,
                            data: self.file.get(from as usize..).unwrap_or(&[]).to_vec(),
                            read: Some(read),
                        })
                    }
                    Command::LoadAgents { ids } => {
                        queue.push_back(Input::AgentsLoaded(self.store.load_agents(&ids)))
                    }
                    _ => {}
                }
            }
        }
    }

    /// The server dies: every command not carried out yet is lost; a new core is rebuilt
    /// from the store and reads the files from their stored offsets.
    fn crash(&mut self) {
        self.crash_at = None;
        self.core = Core::new(Config::new(CLAUDE_DIR));
        let snapshot = self.store.snapshot();
        self.input(Input::Restore(snapshot));
    }

    fn steps(&self) -> BTreeMap<String, StepRow> {
        self.store
            .steps()
            .map(|s| (s.tool_use_id.clone(), s.clone()))
            .collect()
    }
}

fn run(events: &[Event], crash_at: Option<usize>) -> Rig {
    let mut rig = Rig::new(crash_at);
    for e in events {
        rig.feed(e);
    }
    rig
}

fn without_hooks(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .filter(|e| matches!(e, Event::Line(_)))
        .cloned()
        .collect()
}

fn hooks_late(events: &[Event]) -> Vec<Event> {
    let (lines, hooks): (Vec<Event>, Vec<Event>) = events
        .iter()
        .cloned()
        .partition(|e| matches!(e, Event::Line(_)));
    lines.into_iter().chain(hooks).collect()
}

/// A step's tool-use id, tool, summary, file, outcome, start and end.
type Essence = (
    String,
    String,
    String,
    Option<String>,
    StepOutcome,
    Option<Timestamp>,
    Option<Timestamp>,
);

/// What must not depend on hooks, order or crashes: per step, its tool, summary, file,
/// outcome and times.
fn essence(steps: &BTreeMap<String, StepRow>) -> Vec<Essence> {
    steps
        .values()
        .map(|s| {
            (
                s.tool_use_id.clone(),
                s.tool.clone(),
                s.summary.clone(),
                s.file.clone(),
                s.outcome,
                s.started_at,
                s.finished_at,
            )
        })
        .collect()
}

#[test]
fn every_tool_call_is_one_step_with_its_outcome() {
    let rig = run(&conversation().events, None);
    let steps = rig.steps();
    let outcomes: BTreeMap<&str, StepOutcome> = steps
        .values()
        .map(|s| (s.tool_use_id.as_str(), s.outcome))
        .collect();
    assert_eq!(outcomes, expected());
    let bash = &steps["toolu_bash1"];
    assert_eq!(bash.label(), "Bash: cargo test", "one line of the command");
    assert!(bash.confirmed && bash.task_id.is_some());
    assert_eq!(
        bash.duration_ms(),
        Some(1_000),
        "tool_use to tool_result, transcript times"
    );
    assert_eq!(steps["toolu_edit"].file.as_deref(), Some("src/lib.rs"));
    assert_eq!(steps["toolu_grep"].summary, "fn main");
    assert_eq!(
        files_changed(steps.values()),
        vec!["src/lib.rs".to_string()],
        "the refused Write changed nothing"
    );
    assert!(rig.store.violations().is_empty());
}

#[test]
fn hooks_first_late_or_lost_make_the_same_steps() {
    let events = conversation().events;
    let with = essence(&run(&events, None).steps());
    assert_eq!(
        essence(&run(&without_hooks(&events), None).steps()),
        with,
        "hooks lost"
    );
    assert_eq!(
        essence(&run(&hooks_late(&events), None).steps()),
        with,
        "hooks late"
    );
}

#[test]
fn a_crash_after_any_write_leaves_each_step_once_with_its_outcome() {
    let events = conversation().events;
    let clean = run(&events, None);
    let want = essence(&clean.steps());
    let usage: Vec<UsageRow> = clean.store.usage().cloned().collect();
    for variant in [events.clone(), without_hooks(&events)] {
        let total = run(&variant, None).writes;
        for k in 0..total {
            let rig = run(&variant, Some(k));
            assert_eq!(
                essence(&rig.steps()),
                want,
                "crash after {k} of {total} writes"
            );
            let got: Vec<UsageRow> = rig.store.usage().cloned().collect();
            let tokens = |u: &[UsageRow]| {
                u.iter()
                    .map(|r| (r.message_id.clone(), r.tokens))
                    .collect::<Vec<_>>()
            };
            assert_eq!(tokens(&got), tokens(&usage), "usage after a crash at {k}");
        }
    }
}

#[test]
fn a_hook_only_step_shows_until_the_transcript_confirms_it() {
    let mut rig = Rig::new(None);
    let mut s = Script::new();
    s.prompt("run it");
    s.hook("PreToolUse", json!({"tool_name": "Bash", "tool_input": {"command": "cargo test -p core"}, "tool_use_id": "toolu_x"}));
    for e in &s.events {
        rig.feed(e);
    }
    let steps = rig.steps();
    let now = current_step(steps.values(), None).expect("the open step");
    assert_eq!(now.label(), "Bash: cargo test -p core");
    assert_eq!(now.outcome, StepOutcome::Pending);
    assert!(!now.confirmed);
    // PostToolUseFailure with is_interrupt, then PermissionDenied for another call.
    rig.feed(&Event::Hook("PostToolUseFailure", json!({"session_id": SESSION, "tool_use_id": "toolu_x", "tool_name": "Bash", "is_interrupt": true})));
    rig.feed(&Event::Hook("PermissionDenied", json!({"session_id": SESSION, "tool_use_id": "toolu_y", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}})));
    let steps = rig.steps();
    assert_eq!(steps["toolu_x"].outcome, StepOutcome::Interrupted);
    assert_eq!(steps["toolu_y"].outcome, StepOutcome::Denied);
    assert_eq!(current_step(steps.values(), None), None, "nothing runs now");
}

#[test]
fn the_transcript_result_wins_over_hooks_and_the_interrupt_line() {
    let a = StepRow::new(1, "toolu_a").with_tool("Bash", Some(&json!({"command": "make"})));
    let mut pre = a.clone();
    pre.started_at = Some(Timestamp(5_000));
    let mut post_hook = StepRow::new(1, "toolu_a");
    post_hook.outcome = StepOutcome::Ok;
    post_hook.evidence = Evidence::Hook;
    post_hook.finished_at = Some(Timestamp(9_000));
    let mut used = a.clone();
    used.confirmed = true;
    used.started_at = Some(Timestamp(4_000));
    used.task_id = Some(3);
    let mut result = StepRow::new(1, "toolu_a");
    result.outcome = StepOutcome::Error;
    result.evidence = Evidence::Result;
    result.finished_at = Some(Timestamp(8_000));
    let writes = [pre, post_hook, used, result];
    // Every order, each write applied twice: one row, the transcript's facts.
    let mut seen = Vec::new();
    for perm in permutations(writes.len()) {
        let mut store = MemStore::new();
        for &i in &perm {
            store.apply(&Write::Step(writes[i].clone()));
            store.apply(&Write::Step(writes[i].clone()));
        }
        let rows: Vec<StepRow> = store.steps().cloned().collect();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.outcome, r.started_at, r.finished_at, r.task_id),
            (
                StepOutcome::Error,
                Some(Timestamp(4_000)),
                Some(Timestamp(8_000)),
                Some(3)
            ),
            "order {perm:?}"
        );
        seen.push(r.clone());
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
    // The interrupt line ends a pending step, and a result read later still wins.
    let mut store = MemStore::new();
    store.apply(&Write::Step(writes[2].clone()));
    store.apply(&Write::StepsInterrupted {
        agent_id: 1,
        at: Timestamp(3_000),
    });
    assert_eq!(
        store.steps().next().unwrap().outcome,
        StepOutcome::Pending,
        "started after the interrupt"
    );
    store.apply(&Write::StepsInterrupted {
        agent_id: 2,
        at: Timestamp(6_000),
    });
    assert_eq!(
        store.steps().next().unwrap().outcome,
        StepOutcome::Pending,
        "another agent's interrupt"
    );
    store.apply(&Write::StepsInterrupted {
        agent_id: 1,
        at: Timestamp(6_000),
    });
    assert_eq!(
        store.steps().next().unwrap().outcome,
        StepOutcome::Interrupted
    );
    store.apply(&Write::Step(writes[1].clone()));
    assert_eq!(
        store.steps().next().unwrap().outcome,
        StepOutcome::Interrupted,
        "a hook is weaker"
    );
    store.apply(&Write::Step(writes[3].clone()));
    assert_eq!(store.steps().next().unwrap().outcome, StepOutcome::Error);
    assert_eq!(merge(&writes[3], &writes[3]), writes[3]);
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

#[test]
fn each_message_counts_once_and_cost_is_the_price_table_applied() {
    let s = conversation();
    let rig = run(&s.events, None);
    let text: String = s
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Line(l) => Some(format!("{l}\n")),
            Event::Hook(..) => None,
        })
        .collect();
    let mut tally = UsageTally::default();
    tally.add_text(&text, None);
    let rows: Vec<UsageRow> = rig.store.usage().cloned().collect();
    assert_eq!(rows.len(), 7, "seven messages, msg_1 on two lines");
    let msg1 = rows.iter().find(|r| r.message_id == "msg_1").unwrap();
    assert_eq!(
        msg1.tokens,
        Tokens {
            input: 10,
            output: 40,
            cache_creation: 4_000,
            cache_read: 0
        },
        "its last line's usage"
    );
    let by_agent = sum_by_model(&rows, UsageBy::Agent, |_| Some("app".into()));
    let prices = PriceTable::builtin();
    let total = &totals(&by_agent, &prices)[&rows[0].agent_id.to_string()];
    assert_eq!(total.tokens, tally.tokens());
    assert!((total.cost_usd - tally.cost_usd(&prices)).abs() < 1e-9);
    let p = prices.price_of("claude-sonnet-4-5").unwrap();
    assert!((total.cost_usd - p.cost_usd(&tally.tokens())).abs() < 1e-9);
    // An override file's price is the one applied.
    let dear = PriceTable::parse(
        r#"{"claude-sonnet-4-5": {"input": 1000, "output": 0, "cache_write": 0, "cache_read": 0}}"#,
    )
    .unwrap();
    let overridden = prices.clone().overridden_by(dear);
    let total = &totals(&by_agent, &overridden)[&rows[0].agent_id.to_string()];
    assert!((total.cost_usd - tally.tokens().input as f64 * 1000.0 / 1e6).abs() < 1e-9);
    // By task: every message is in a task, and the tasks sum to the agent.
    let by_task = totals(&sum_by_model(&rows, UsageBy::Task, |_| None), &overridden);
    assert!(!by_task.contains_key(""), "no message without a task");
    let sum = by_task
        .values()
        .fold(Tokens::default(), |a, t| a.plus(t.tokens));
    assert_eq!(sum, tally.tokens());
    // By day and project.
    let by_day = totals(&sum_by_model(&rows, UsageBy::Day, |_| None), &prices);
    assert_eq!(by_day.keys().collect::<Vec<_>>(), vec!["2026-11-01"]);
    let by_project = totals(
        &sum_by_model(&rows, UsageBy::Project, |_| Some("app".into())),
        &prices,
    );
    assert_eq!(by_project["app"].tokens, tally.tokens());
}

fn turn(id: u64, ms: i64) -> TurnRow {
    let mut t = TurnRow::new(
        1,
        1,
        (Actor::Agent, Intent::Progress),
        format!("turn {id}"),
        Timestamp(ms),
        TurnSource::Transcript,
    );
    t.id = id;
    t
}

fn step_at(id: &str, agent: AgentId, ms: Option<i64>) -> StepRow {
    let mut s = StepRow::new(agent, id).with_tool("Bash", Some(&json!({"command": id})));
    s.started_at = ms.map(Timestamp);
    s
}

#[test]
fn steps_fold_under_the_turn_before_them() {
    let turns = vec![turn(2, 2_000), turn(1, 1_000), turn(3, 3_000)];
    let steps = vec![
        step_at("before", 1, Some(500)),
        step_at("at_1", 1, Some(1_000)),
        step_at("mid", 1, Some(2_500)),
        step_at("late", 1, Some(9_000)),
        step_at("other_agent", 2, Some(2_500)),
        step_at("no_time", 1, None),
    ];
    let folded = fold_under_turns(&turns, &steps);
    let ids = |i: usize| {
        folded[i]
            .iter()
            .map(|s| s.tool_use_id.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(1),
        vec!["before", "at_1"],
        "turn 1 (first) takes what came before it"
    );
    assert_eq!(ids(0), vec!["mid"], "turn 2");
    assert_eq!(ids(2), vec!["late"], "turn 3");
    assert!(fold_under_turns(&[], &steps).is_empty());
    let at = |ms: &[i64]| ms.iter().map(|&m| Timestamp(m)).collect::<Vec<_>>();
    assert_eq!(
        turn_indices_at(&turns, &at(&[0, 1_000, 1_999, 2_000, 10_000])),
        vec![Some(1), Some(1), Some(1), Some(0), Some(2)]
    );
    assert_eq!(turn_indices_at(&[], &at(&[5])), vec![None]);
}

#[test]
fn the_current_step_is_the_latest_pending_one_of_the_current_task() {
    let mut done = step_at("done", 1, Some(3_000));
    done.outcome = StepOutcome::Ok;
    let steps = vec![
        step_at("old", 1, Some(500)),
        step_at("open", 1, Some(2_000)),
        done,
    ];
    assert_eq!(
        current_step(&steps, Some(Timestamp(1_000)))
            .unwrap()
            .tool_use_id,
        "open"
    );
    assert_eq!(
        current_step(&steps[..1], Some(Timestamp(1_000))),
        None,
        "an older task's leftover"
    );
}

// ----- the real corpus ------------------------------------------------------------------

/// The real transcripts (`HEADSPACE_CORPUS`, else `../shared/corpus/` beside the
/// repository), when present: never copied into the repository.
fn corpus_transcripts() -> Vec<std::path::PathBuf> {
    #[allow(clippy::disallowed_methods)]
    let root = std::env::var_os("HEADSPACE_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus")
        });
    #[allow(clippy::disallowed_methods)]
    let Ok(dir) = std::fs::read_dir(root.join("transcripts")) else {
        eprintln!(
            "real corpus absent at {} (set HEADSPACE_CORPUS to run it)",
            root.display()
        );
        return Vec::new();
    };
    let mut files: Vec<_> = dir
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// What a transcript says, read here on its own (not by the core's reader): each tool call
/// answered by a result and the outcome the result's text and `is_error` give, and each
/// message's usage (its last line wins) with its model.
struct Truth {
    outcomes: BTreeMap<String, StepOutcome>,
    tools: BTreeMap<String, String>,
    usage: BTreeMap<String, (String, Tokens)>,
}

fn truth(text: &str) -> Truth {
    let mut uses = BTreeMap::new();
    let mut results = BTreeMap::new();
    let mut usage = BTreeMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let m = &v["message"];
        if m["usage"].is_object() {
            let id = m["id"]
                .as_str()
                .or(v["requestId"].as_str())
                .or(v["uuid"].as_str())
                .unwrap()
                .to_string();
            let u = &m["usage"];
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let tokens = Tokens {
                input: n("input_tokens"),
                output: n("output_tokens"),
                cache_creation: n("cache_creation_input_tokens"),
                cache_read: n("cache_read_input_tokens"),
            };
            usage.insert(id, (m["model"].as_str().unwrap_or("").to_string(), tokens));
        }
        for b in m["content"].as_array().into_iter().flatten() {
            match (v["type"].as_str(), b["type"].as_str()) {
                (Some("assistant"), Some("tool_use")) => {
                    uses.insert(
                        b["id"].as_str().unwrap().to_string(),
                        b["name"].as_str().unwrap().to_string(),
                    );
                }
                (Some("user"), Some("tool_result")) => {
                    let text = match &b["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(a) => a
                            .iter()
                            .find_map(|x| x["text"].as_str())
                            .unwrap_or("")
                            .to_string(),
                        _ => String::new(),
                    };
                    let outcome = if text.starts_with("[Request interrupted by user") {
                        StepOutcome::Interrupted
                    } else if text
                        .starts_with("The user doesn't want to proceed with this tool use")
                        || (text.starts_with("Permission to use") && text.contains("denied"))
                    {
                        StepOutcome::Denied
                    } else if b["is_error"] == json!(true) {
                        StepOutcome::Error
                    } else {
                        StepOutcome::Ok
                    };
                    results.insert(b["tool_use_id"].as_str().unwrap().to_string(), outcome);
                }
                _ => {}
            }
        }
    }
    let outcomes: BTreeMap<String, StepOutcome> = results
        .into_iter()
        .filter(|(id, _)| uses.contains_key(id))
        .collect();
    Truth {
        outcomes,
        tools: uses,
        usage,
    }
}

/// The transcript's lines with the hooks Claude Code fires around its tool calls: a
/// PreToolUse before each call, a PostToolUse / PostToolUseFailure after each result.
fn with_tool_hooks(text: &str, session: &str, path: &str) -> Vec<Event> {
    let mut out = Vec::new();
    let hook = |event: &'static str, extra: Value| {
        let mut v = json!({"session_id": session, "hook_event_name": event, "transcript_path": format!("{CLAUDE_DIR}/{path}")});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Event::Hook(event, v)
    };
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let blocks: Vec<Value> = v["message"]["content"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
            out.push(hook(
                "PreToolUse",
                json!({"tool_name": b["name"], "tool_input": b["input"], "tool_use_id": b["id"]}),
            ));
        }
        out.push(Event::Line(line.to_string()));
        for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
            let event = if b["is_error"] == json!(true) {
                "PostToolUseFailure"
            } else {
                "PostToolUse"
            };
            out.push(hook(event, json!({"tool_use_id": b["tool_use_id"]})));
        }
    }
    out
}

#[test]
fn real_transcripts_make_one_step_per_answered_call_across_restarts_and_hook_loss() {
    let files = corpus_transcripts();
    for (n, file) in files.iter().enumerate() {
        #[allow(clippy::disallowed_methods)]
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        let session = format!("c0ffee00-0000-4000-8000-{n:012x}");
        let path = format!("projects/-corpus/{session}.jsonl");
        let truth = truth(&text);
        let all = with_tool_hooks(&text, &session, &path);
        let mut dropped = false;
        let some_lost: Vec<Event> = all
            .iter()
            .filter(|e| {
                matches!(e, Event::Line(_)) || {
                    dropped = !dropped;
                    dropped
                }
            })
            .cloned()
            .collect();
        let check = |rig: &Rig, how: &str| {
            let name = format!("{}: {how}", file.display());
            let steps = rig.steps();
            for (id, outcome) in &truth.outcomes {
                let s = steps
                    .get(id)
                    .unwrap_or_else(|| panic!("{name}: no step for {id}"));
                assert_eq!(s.outcome, *outcome, "{name}: outcome of {id}");
                assert_eq!(&s.tool, &truth.tools[id], "{name}: tool of {id}");
                assert!(
                    s.confirmed && s.started_at.is_some() && s.finished_at.is_some(),
                    "{name}: {id} from the transcript"
                );
            }
            // One step per call: none made of anything else.
            assert!(
                steps.keys().all(|id| truth.tools.contains_key(id)),
                "{name}: a step no call made"
            );
            assert_eq!(
                steps
                    .values()
                    .filter(|s| truth.outcomes.contains_key(&s.tool_use_id))
                    .count(),
                truth.outcomes.len(),
                "{name}"
            );
            // Tokens per message and per agent; cost at the price table.
            let rows: Vec<UsageRow> = rig.store.usage().cloned().collect();
            let stored: BTreeMap<String, (String, Tokens)> = rows
                .iter()
                .map(|r| (r.message_id.clone(), (r.model.clone(), r.tokens)))
                .collect();
            assert_eq!(stored, truth.usage, "{name}: usage by message");
            let want = truth
                .usage
                .values()
                .fold(Tokens::default(), |a, (_, t)| a.plus(*t));
            let prices = PriceTable::builtin();
            let want_cost: f64 = truth
                .usage
                .values()
                .map(|(m, t)| prices.price_of(m).map_or(0.0, |p| p.cost_usd(t)))
                .sum();
            let agents = totals(&sum_by_model(&rows, UsageBy::Agent, |_| None), &prices);
            let got = agents
                .values()
                .fold(Tokens::default(), |a, t| a.plus(t.tokens));
            let cost: f64 = agents.values().map(|t| t.cost_usd).sum();
            assert_eq!(got, want, "{name}: tokens per agent");
            assert!(
                (cost - want_cost).abs() < 1e-6,
                "{name}: cost {cost} against {want_cost}"
            );
            let mut tally = UsageTally::default();
            tally.add_text(&text, None);
            assert_eq!(got, tally.tokens(), "{name}: the budget gate's figures");
        };
        let clean = run_at(&path, &all, None);
        check(&clean, "all hooks");
        check(&run_at(&path, &without_hooks(&all), None), "no hooks");
        check(&run_at(&path, &some_lost, None), "every other hook lost");
        let total = clean.writes;
        for k in (0..total).step_by((total / 12).max(1)) {
            check(
                &run_at(&path, &some_lost, Some(k)),
                &format!("crash after {k} of {total} writes"),
            );
        }
        eprintln!(
            "{}: {} answered calls, {} messages",
            file.display(),
            truth.outcomes.len(),
            truth.usage.len()
        );
    }
}

fn run_at(path: &str, events: &[Event], crash_at: Option<usize>) -> Rig {
    let mut rig = Rig::at(path, crash_at);
    for e in events {
        rig.feed(e);
    }
    // A line after the last one: a crash at the very end is followed by more of the file.
    rig.feed(&Event::Line(
        json!({"type": "system", "subtype": "informational"}).to_string(),
    ));
    rig
}

#[test]
fn an_over_long_result_or_call_still_makes_its_step_and_counts_its_tokens() {
    // Lines longer than max_line_bytes keep only their head and last 64 KiB.
    let mut config = Config::new(CLAUDE_DIR);
    config.max_line_bytes = 4_096;
    let big = "x".repeat(200_000);
    let mut s = Script::new();
    s.prompt("write the data file");
    let usage = Script::usage(7, 11, 13, 17);
    s.tool(
        "msg_big",
        "toolu_big_write",
        "Write",
        json!({"file_path": "data/big.txt", "content": big}),
        Some(("File created.", false)),
        usage.clone(),
    );
    s.tool(
        "msg_cat",
        "toolu_big_cat",
        "Bash",
        json!({"command": "cat data/big.txt"}),
        Some((&format!("{big}\nexit 1"), true)),
        Script::usage(1, 2, 3, 4),
    );
    let mut rig = Rig::new(None);
    rig.core = Core::new(config.clone());
    for e in &s.events {
        rig.feed(e);
    }
    let steps = rig.steps();
    let write = &steps["toolu_big_write"];
    assert_eq!(
        (write.tool.as_str(), write.summary.as_str(), write.outcome),
        ("Write", "data/big.txt", StepOutcome::Ok)
    );
    assert_eq!(write.file.as_deref(), Some("data/big.txt"));
    assert!(write.confirmed && write.started_at.is_some());
    let cat = &steps["toolu_big_cat"];
    assert_eq!(
        (cat.summary.as_str(), cat.outcome),
        ("cat data/big.txt", StepOutcome::Error)
    );
    assert!(cat.finished_at.is_some());
    let usage: BTreeMap<String, Tokens> = rig
        .store
        .usage()
        .map(|u| (u.message_id.clone(), u.tokens))
        .collect();
    assert_eq!(
        usage["msg_big"],
        Tokens {
            input: 7,
            output: 11,
            cache_creation: 13,
            cache_read: 17
        }
    );
    // Without hooks, the cut-out `is_error` is guessed as ok; the step is still one, ended.
    let mut rig = Rig::new(None);
    rig.core = Core::new(config);
    for e in &without_hooks(&s.events) {
        rig.feed(e);
    }
    let cat = &rig.steps()["toolu_big_cat"];
    assert_eq!(
        (cat.outcome, cat.evidence),
        (StepOutcome::Ok, Evidence::Guess)
    );
    assert_eq!(rig.steps().len(), 2);
}
