//! Every transcript line, hook payload and pane capture of Claude Code is read correctly.
//!
//! Each test runs on two sources: always on the project's own fixtures
//! (`core/tests/fixtures/`, written by hand in the shapes of Claude Code 2.0.74 to 2.1.220,
//! see its README), and in addition on the real corpus wherever it is present
//! (`HEADSPACE_CORPUS`, else `../shared/corpus/` beside the repository). The real corpus holds
//! real people's paths and prompts and is never copied into the repository, so a clone alone
//! runs the fixtures only. Each test says on stderr which sources it ran
//! (`cargo test --test corpus -- --nocapture`).
// A test reads its fixtures from disk; the core itself never does (core/clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use headspace_core::harness::replay::Replayer;
use headspace_core::harness::trace::Step;
use headspace_core::hook::Hook;
use headspace_core::model::TurnRow;
use headspace_core::pane::{read_pane, PaneState};
use headspace_core::transcript::entry::{classify, Entry};
use headspace_core::{Actor, Timestamp};
use std::path::{Path, PathBuf};

/// Where test data comes from: the project's fixtures or the real corpus.
struct Source {
    /// What the test output calls it: `fixtures` or `real corpus at PATH`.
    label: String,
    /// Its root folder.
    root: PathBuf,
    /// True for the real corpus, whose files have their own names and expectations.
    real: bool,
}

impl Source {
    /// The folder of pane captures: the corpus calls it `tui`, the fixtures `panes`.
    fn panes(&self) -> &'static str {
        if self.real {
            "tui"
        } else {
            "panes"
        }
    }

    /// The sorted files of `sub` ending in `.ext`; says how many it found.
    fn files(&self, sub: &str, ext: &str) -> Vec<PathBuf> {
        let dir = self.root.join(sub);
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {sub} missing: {e}", self.label))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        v.sort();
        assert!(!v.is_empty(), "{}: no .{ext} files in {sub}/", self.label);
        eprintln!("{}: {} files in {sub}/", self.label, v.len());
        v
    }
}

/// The project's own fixtures, always present.
fn fixtures() -> Source {
    Source {
        label: "fixtures".to_string(),
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
        real: false,
    }
}

/// The real corpus, when it is here; says so either way.
fn real_corpus() -> Option<Source> {
    let root = std::env::var_os("HEADSPACE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    if root.join("transcripts").is_dir() {
        Some(Source {
            label: format!("real corpus at {}", root.display()),
            root,
            real: true,
        })
    } else {
        eprintln!(
            "real corpus absent at {} (set HEADSPACE_CORPUS to run it too)",
            root.display()
        );
        None
    }
}

/// The fixtures, then the real corpus when present.
fn sources() -> Vec<Source> {
    std::iter::once(fixtures()).chain(real_corpus()).collect()
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().to_string()
}

#[test]
fn every_hook_payload_parses() {
    for src in sources() {
        for path in src.files("hooks", "json") {
            let name = file_name(&path);
            if name.starts_with("real_settings") {
                continue; // settings files, not payloads
            }
            let body = std::fs::read(&path).unwrap();
            let hook = Hook::parse(None, &body).unwrap_or_else(|e| panic!("{name}: {e}"));
            // The event named by the file (<set>_<Event>.json) is the one parsed.
            let event = name.trim_end_matches(".json").rsplit('_').next().unwrap();
            if !name.contains("Stop_SubagentStop") {
                assert_eq!(hook.event.name(), event, "{name}");
            }
            // Every payload of either field set names its session and transcript.
            assert!(hook.session_id.is_some(), "{name}: session_id");
            assert!(hook.transcript_path.is_some(), "{name}: transcript_path");
            // The older (2025-11) set has no cwd on SessionStart, Stop and PreCompact: every
            // field is optional. All other payloads carry it.
            let older = name.contains("2025-11");
            let no_cwd = older
                && ["SessionStart", "Stop", "SubagentStop", "PreCompact"]
                    .iter()
                    .any(|e| name.contains(&format!("_{e}")));
            assert_eq!(hook.cwd.is_none(), no_cwd, "{name}: cwd");
            match hook.event.name() {
                "UserPromptSubmit" => assert!(hook.prompt.is_some(), "{name}: prompt"),
                "PreToolUse" | "PostToolUse" => {
                    assert!(hook.tool_name.is_some(), "{name}: tool_name");
                    assert!(hook.tool_input.is_some(), "{name}: tool_input");
                }
                _ => {}
            }
            // And the route's event wins over hook_event_name.
            let routed = Hook::parse(Some("session-end"), &body).unwrap();
            assert_eq!(routed.event.name(), "SessionEnd");
        }
    }
}

/// The current field set of the fixtures: one payload for every event, with the fields the
/// core reads.
#[test]
fn fixture_hooks_cover_every_event_and_the_fields_the_core_reads() {
    let src = fixtures();
    let current: Vec<String> = src
        .files("hooks", "json")
        .iter()
        .map(|p| file_name(p))
        .filter(|n| n.starts_with("current_"))
        .collect();
    assert_eq!(current.len(), 31, "one payload per event of the reference");
    let hook = |name: &str| {
        let body = std::fs::read(src.root.join("hooks").join(name)).unwrap();
        Hook::parse(None, &body).unwrap()
    };
    let pre = hook("current_PreToolUse.json");
    assert!(pre.prompt_id.is_some() && pre.tool_use_id.is_some());
    let note = hook("current_Notification.json");
    assert_eq!(note.notification_type.as_deref(), Some("permission_prompt"));
    let stop = hook("current_Stop.json");
    assert!(stop.last_assistant_message.is_some());
    assert_eq!(
        hook("current_SessionStart.json").source.as_deref(),
        Some("startup")
    );
    assert_eq!(
        hook("current_SessionEnd.json").reason.as_deref(),
        Some("prompt_input_exit")
    );
    // The older set: no notification_type, no last_assistant_message.
    assert_eq!(hook("2025-11_Notification.json").notification_type, None);
    assert_eq!(hook("2025-11_Stop.json").last_assistant_message, None);
}

#[test]
fn every_transcript_line_is_read_without_errors() {
    for src in sources() {
        for path in src.files("transcripts", "jsonl") {
            let data = std::fs::read(&path).unwrap();
            let mut errors = 0;
            let mut lines = 0;
            for line in data.split(|b| *b == b'\n') {
                lines += 1;
                if classify(line).is_err() {
                    errors += 1;
                }
            }
            assert_eq!(
                errors,
                0,
                "{}: {errors} of {lines} lines failed",
                path.display()
            );
        }
    }
}

#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Counts {
    prompt: usize,
    agent_text: usize,
    question: usize,
    answer: usize,
}

const fn counts(prompt: usize, agent_text: usize, question: usize, answer: usize) -> Counts {
    Counts {
        prompt,
        agent_text,
        question,
        answer,
    }
}

/// The turns of each fixture transcript, counted by hand from what was written (the README of
/// the fixtures tells what each file holds): (Claude Code version, file, turns).
const FIXTURE_TURNS: &[(&str, &str, Counts)] = &[
    // The prompt after its IDE block; the text after thinking + Write.
    (
        "2.0.74",
        "v2.0.74_queue_operation.jsonl",
        counts(1, 1, 0, 0),
    ),
    // Two prompts (the /exit lines, the caveat, the synthetic "No response requested." and the
    // compact summary are not turns); five texts: three before the boundary, two after.
    ("2.0.76", "v2.0.76_compaction.jsonl", counts(2, 5, 0, 0)),
    // One prompt; one message over three lines (thinking / text / Task): one text.
    (
        "2.1.4",
        "v2.1.4_summary_split_message.jsonl",
        counts(1, 1, 0, 0),
    ),
    // Three typed prompts and the custom command /open-pr; /mcp is machinery. Four texts.
    (
        "2.1.12",
        "v2.1.12_commands_mcp_todo.jsonl",
        counts(4, 4, 0, 0),
    ),
    // Three prompts; three texts; the api_error retries and the interrupt are not turns.
    (
        "2.1.17",
        "v2.1.17_api_error_retries.jsonl",
        counts(3, 3, 0, 0),
    ),
    // One prompt (/ide and the skill's meta prompt are not); two texts of the main agent,
    // none of the sub-agent's (they are inside `agent_progress` lines).
    ("2.1.19", "v2.1.19_task_subagent.jsonl", counts(1, 2, 0, 0)),
    // Three typed prompts ("fix the failing test" twice, then "change the test instead; the
    // code is correct"); Claude Code's "Operation stopped by hook: …" notice is no prompt: it
    // is a turn of its own (the user saw it; it ends the blocked turn, like an interrupt).
    // Four texts and the notice.
    (
        "2.1.29",
        "v2.1.29_interrupted_rejected.jsonl",
        counts(3, 5, 0, 0),
    ),
    // One prompt, three texts, the question and its answer.
    (
        "2.1.33",
        "v2.1.33_ask_user_question.jsonl",
        counts(1, 3, 1, 1),
    ),
    // Two prompts (with promptId); four texts; attachment and bookkeeping lines are not turns.
    (
        "2.1.220",
        "v2.1.220_newest_format.jsonl",
        counts(2, 4, 0, 0),
    ),
];

/// The turns of each real transcript. Counted by hand for the two small files: 2.0.74 has one
/// typed prompt (its IDE block left out) and one final text after thinking + Write; 2.1.4 has
/// one prompt and one text before its Task call. The other figures were checked once against
/// a throwaway script (not kept). 2.1.12: four typed prompts and the custom command `/pr`
/// (line 141), which the model worked on; `/mcp` is Claude Code's own and stays machinery.
const REAL_TURNS: &[(&str, &str, Counts)] = &[
    (
        "2.0.74",
        "entire_2.0.74_small_queue_op.jsonl",
        counts(1, 1, 0, 0),
    ),
    (
        "2.0.76",
        "entire_2.0.76_compaction.jsonl",
        counts(2, 9, 0, 0),
    ),
    (
        "2.1.4",
        "entire_2.1.4_small_task_summary.jsonl",
        counts(1, 1, 0, 0),
    ),
    (
        "2.1.12",
        "entire_2.1.12_slashcmd_localcmd.jsonl",
        counts(5, 9, 0, 0),
    ),
    (
        "2.1.17",
        "entire_2.1.17_api_error.jsonl",
        counts(8, 11, 0, 0),
    ),
    (
        "2.1.19",
        "entire_2.1.19_task_subagent_progress.jsonl",
        counts(1, 2, 0, 0),
    ),
    // Its "Operation stopped by hook: …" notice is a turn of the agent's.
    (
        "2.1.29",
        "entire_2.1.29_interrupted.jsonl",
        counts(3, 6, 0, 0),
    ),
    (
        "2.1.33",
        "entire_2.1.33_askuserquestion.jsonl",
        counts(1, 9, 1, 1),
    ),
    (
        "2.1.220",
        "esdeveniments_2.1.220_cli_attachments.jsonl",
        counts(3, 19, 0, 0),
    ),
];

fn turns_table(src: &Source) -> &'static [(&'static str, &'static str, Counts)] {
    if src.real {
        REAL_TURNS
    } else {
        FIXTURE_TURNS
    }
}

fn count(turns: &[TurnRow]) -> Counts {
    let mut c = Counts::default();
    for t in turns {
        match (t.actor, t.tool_use_id.is_some(), t.question.is_some()) {
            (Actor::User, false, _) => c.prompt += 1,
            (Actor::User, true, _) => c.answer += 1,
            (Actor::Agent, _, true) => c.question += 1,
            (Actor::Agent, _, false) => c.agent_text += 1,
        }
    }
    c
}

/// Replays a transcript as one session file, in chunks of `chunk` bytes.
fn replay_file(path: &Path, chunk: usize) -> Vec<TurnRow> {
    let name = file_name(path);
    let data = std::fs::read(path).unwrap();
    let mut r = Replayer::new("/home/u/.claude");
    let session = "projects/-home-u-app/00000000-0000-0000-0000-000000000001.jsonl".to_string();
    let t0 = Timestamp::parse_rfc3339("2026-11-01T00:00:00Z").unwrap();
    for (i, part) in data.chunks(chunk).enumerate() {
        r.step(
            t0.add_millis(i as i64),
            Step::Append {
                path: session.clone(),
                data: part.to_vec(),
            },
        );
    }
    // The store refuses a second turn for an entry and records it: that must never happen.
    assert_eq!(r.store().violations(), &[] as &[String], "{name}: S1");
    r.store().turns().cloned().collect()
}

fn expect(path: &Path, want: Counts) {
    let name = file_name(path);
    for chunk in [usize::MAX, 4096, 97] {
        let turns = replay_file(path, chunk);
        assert_eq!(count(&turns), want, "{name} in chunks of {chunk}");
        let mut uuids: Vec<_> = turns
            .iter()
            .map(|t| t.entry_uuid.clone().expect("entry turn"))
            .collect();
        uuids.sort();
        uuids.dedup();
        assert_eq!(uuids.len(), turns.len(), "{name}: one turn per entry");
    }
}

/// Checks the turns of the transcripts of one Claude Code version, in every source; returns
/// the files checked, fixtures first.
fn version_counts(version: &str) -> Vec<PathBuf> {
    let mut checked = Vec::new();
    for src in sources() {
        let table = turns_table(&src);
        let (_, name, want) = table
            .iter()
            .find(|(v, _, _)| *v == version)
            .unwrap_or_else(|| panic!("{}: no {version} transcript in the table", src.label));
        let path = src.root.join("transcripts").join(name);
        expect(&path, *want);
        eprintln!("{}: {name} has the expected turns", src.label);
        checked.push(path);
    }
    checked
}

#[test]
fn every_transcript_has_its_turns_pinned() {
    for src in sources() {
        let table = turns_table(&src);
        for path in src.files("transcripts", "jsonl") {
            let name = file_name(&path);
            assert!(
                table.iter().any(|(_, n, _)| *n == name),
                "{}: {name} has no expected turn counts",
                src.label
            );
        }
    }
}

#[test]
fn small_queue_op_counts() {
    version_counts("2.0.74");
}

#[test]
fn small_task_summary_counts() {
    version_counts("2.1.4");
}

#[test]
fn compaction_counts() {
    version_counts("2.0.76");
}

#[test]
fn slash_command_counts() {
    let checked = version_counts("2.1.12");
    // The custom command is the turn the user typed, as its prompt hook will name it.
    let turns = replay_file(&checked[0], usize::MAX);
    assert!(
        turns
            .iter()
            .any(|t| t.actor == Actor::User && t.text == "/open-pr"),
        "the custom command /open-pr is a prompt"
    );
    assert!(
        !turns.iter().any(|t| t.text.contains("/mcp")),
        "Claude Code's own /mcp is machinery"
    );
}

#[test]
fn api_error_counts() {
    version_counts("2.1.17");
}

#[test]
fn subagent_progress_counts() {
    let checked = version_counts("2.1.19");
    // The sub-agent's own text rides inside `agent_progress` lines: never a turn.
    let turns = replay_file(&checked[0], usize::MAX);
    assert!(
        !turns.iter().any(|t| t.text.starts_with("Two problems")),
        "a sub-agent's text became a turn"
    );
}

#[test]
fn interrupted_counts() {
    version_counts("2.1.29");
}

#[test]
fn ask_user_question_counts() {
    for path in version_counts("2.1.33") {
        let real = file_name(&path).starts_with("entire_");
        let (question, answer) = if real {
            (
                "Where should the generated Mermaid diagram go?",
                "docs/generated/",
            )
        } else {
            ("Where should the request flow chart live?", "docs/flows/")
        };
        let turns = replay_file(&path, usize::MAX);
        let q = turns.iter().find(|t| t.question.is_some()).unwrap();
        assert_eq!(q.text, question);
        let options = q.question.as_ref().unwrap()["questions"][0]["options"]
            .as_array()
            .unwrap();
        assert_eq!(options.len(), 3);
        assert_eq!(options[0]["label"], answer, "the first option was chosen");
        let a = turns
            .iter()
            .find(|t| t.actor == Actor::User && t.tool_use_id.is_some())
            .unwrap();
        assert_eq!(a.text, answer);
        assert_eq!(
            a.tool_use_id, q.tool_use_id,
            "the answer names its question"
        );
    }
}

#[test]
fn newest_format_counts() {
    let checked = version_counts("2.1.220");
    // Prompts of the newest format carry their promptId.
    let turns = replay_file(&checked[0], usize::MAX);
    let prompts: Vec<_> = turns.iter().filter(|t| t.actor == Actor::User).collect();
    assert!(prompts.iter().all(|t| t.prompt_id.is_some()), "{prompts:?}");
}

#[test]
fn every_corpus_transcript_replays_identically_twice() {
    for src in sources() {
        for path in src.files("transcripts", "jsonl") {
            let a = replay_file(&path, 1000);
            let b = replay_file(&path, 1000);
            assert_eq!(a, b, "{}", path.display());
            assert!(a
                .iter()
                .all(|t| t.timestamp_source == headspace_core::model::TimestampSource::Jsonl));
        }
    }
}

#[test]
fn sidechain_and_meta_lines_are_never_turns() {
    for src in sources() {
        let mut meta = 0;
        for path in src.files("transcripts", "jsonl") {
            let data = std::fs::read(&path).unwrap();
            for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let v: serde_json::Value = serde_json::from_slice(line).unwrap();
                if v["isSidechain"] == true || v["isMeta"] == true {
                    assert_eq!(classify(line).unwrap(), Entry::Ignored);
                    meta += 1;
                }
            }
        }
        assert!(meta > 0, "{}: has meta lines to check", src.label);
    }
    // No transcript here has a sidechain line: a prompt marked as one must be ignored.
    let sidechain = br#"{"type":"user","isSidechain":true,"uuid":"00000000-0000-4000-8000-0000000000aa","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"run the sub-agent's task"}}"#;
    assert_eq!(classify(sidechain).unwrap(), Entry::Ignored);
    let main =
        String::from_utf8_lossy(sidechain).replace("\"isSidechain\":true", "\"isSidechain\":false");
    assert!(
        matches!(classify(main.as_bytes()).unwrap(), Entry::UserPrompt { .. }),
        "the same line off the sidechain is a prompt"
    );
}

/// What a capture must read as.
enum Screen {
    /// Waiting for a prompt, with this text in the input box.
    Idle(&'static str),
    /// Working.
    Busy,
    /// Starting up.
    Starting,
    /// A permission dialog with these options.
    Permission(&'static [&'static str]),
    /// A question the user must answer: never idle or busy, so nothing is typed into it.
    WaitsOnUser,
}

const FIXTURE_PANES: &[(&str, Screen)] = &[
    ("ask_user_question.txt", Screen::WaitsOnUser),
    ("finished_spinner_in_scrollback.txt", Screen::Idle("")),
    ("idle_old_box.txt", Screen::Idle("")),
    ("idle_prompt.txt", Screen::Idle("")),
    ("idle_prompt_nbsp.txt", Screen::Idle("")),
    (
        "idle_typed_auto_accept.txt",
        Screen::Idle("write a test for zero retries"),
    ),
    (
        "permission_dialog.txt",
        Screen::Permission(&[
            "Yes",
            "Yes, and don't ask again for rm commands in /home/dev/app",
            "No, and tell Claude what to do differently (esc)",
        ]),
    ),
    ("starting.txt", Screen::Starting),
    ("working_spinner.txt", Screen::Busy),
    ("working_spinner_newer.txt", Screen::Busy),
];

// The old box's `Try "…"` is a placeholder: an empty input.
const REAL_PANES: &[(&str, Screen)] = &[
    (
        "agentapi__format__claude__auto-accept-edits__msg.txt",
        Screen::Idle(""),
    ),
    (
        "agentapi__format__claude__remove-task-tool-call__msg.txt",
        Screen::Idle(""),
    ),
    (
        "agentapi__format__claude__second_message__msg.txt",
        Screen::Idle(""),
    ),
    (
        "agentapi__initialization__claude__not_ready__msg.txt",
        Screen::Starting,
    ),
    (
        "agentapi__initialization__claude__ready__msg.txt",
        Screen::Idle(""),
    ),
];

#[test]
fn every_pane_capture_is_read() {
    for src in sources() {
        let want = if src.real { REAL_PANES } else { FIXTURE_PANES };
        let files = src.files(src.panes(), "txt");
        assert_eq!(
            files.len(),
            want.len(),
            "{}: a capture without an expectation",
            src.label
        );
        for (name, screen) in want {
            let text = std::fs::read_to_string(src.root.join(src.panes()).join(name)).unwrap();
            let r = read_pane(&text);
            match screen {
                Screen::Idle(input) => {
                    assert_eq!(r.state, PaneState::Idle, "{name}");
                    assert_eq!(r.input.as_deref(), Some(*input), "{name}");
                }
                Screen::Busy => assert_eq!(r.state, PaneState::Busy, "{name}"),
                Screen::Starting => assert_eq!(r.state, PaneState::Starting, "{name}"),
                Screen::Permission(options) => {
                    let PaneState::Permission(q) = &r.state else {
                        panic!("{name}: {r:?}")
                    };
                    assert_eq!(q["question"], "Do you want to proceed?", "{name}");
                    assert_eq!(q["options"], serde_json::json!(options), "{name}");
                }
                Screen::WaitsOnUser => assert!(
                    !matches!(r.state, PaneState::Idle | PaneState::Busy),
                    "{name}: {r:?}"
                ),
            }
        }
    }
}

#[test]
fn claude_names_project_folders_with_every_other_character_as_a_dash() {
    use headspace_core::engine::claude_project_dir;
    assert_eq!(claude_project_dir("/home/u/my_app.v2"), "-home-u-my-app-v2");
    assert_eq!(claude_project_dir("/home/u/project1"), "-home-u-project1");
}
