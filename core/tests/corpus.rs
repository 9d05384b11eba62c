//! Every real payload and transcript in `../shared/corpus/` is read correctly.
// A test reads its fixtures from disk; the core itself never does (core/clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use headspace_core::entry::{classify, Entry};
use headspace_core::hook::Hook;
use headspace_core::model::TurnRow;
use headspace_core::replay::Replayer;
use headspace_core::trace::Step;
use headspace_core::{Actor, Timestamp};
use std::path::PathBuf;

/// The real corpus: `HEADSPACE_CORPUS`, else `../shared/corpus` beside the repository.
fn corpus_root() -> PathBuf {
    std::env::var_os("HEADSPACE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"))
}

/// Whether the real corpus is here. A clone of the repository alone has none (it holds real
/// people's prompts and is never copied in): these tests then say so and pass without it.
fn have_corpus() -> bool {
    let here = corpus_root().join("transcripts").is_dir();
    if !here {
        eprintln!(
            "corpus tests skipped: no corpus at {} (set HEADSPACE_CORPUS)",
            corpus_root().display()
        );
    } else {
        eprintln!("corpus tests ran on {}", corpus_root().display());
    }
    here
}

fn corpus(sub: &str) -> PathBuf {
    corpus_root().join(sub)
}

fn files(sub: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus(sub))
        .unwrap_or_else(|e| panic!("corpus {sub} missing: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no {ext} files in corpus/{sub}");
    v
}

#[test]
fn every_hook_payload_parses() {
    if !have_corpus() {
        return;
    }
    for path in files("hooks", "json") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("real_settings") {
            continue; // settings files, not payloads
        }
        let body = std::fs::read(&path).unwrap();
        let hook = Hook::parse(None, &body).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The event named by the file (docs_<Event>.json) is the one parsed.
        let event = name.trim_end_matches(".json").rsplit('_').next().unwrap();
        if !name.contains("Stop_SubagentStop") {
            assert_eq!(hook.event.name(), event, "{name}");
        }
        // And the route's event wins over hook_event_name.
        let routed = Hook::parse(Some("session-end"), &body).unwrap();
        assert_eq!(routed.event.name(), "SessionEnd");
    }
}

#[test]
fn every_transcript_line_is_read_without_errors() {
    if !have_corpus() {
        return;
    }
    for path in files("transcripts", "jsonl") {
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

#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    prompt: usize,
    agent_text: usize,
    question: usize,
    answer: usize,
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

/// Replays a corpus transcript as one session file, in chunks of `chunk` bytes.
fn replay_file(name: &str, chunk: usize) -> Vec<TurnRow> {
    let data = std::fs::read(corpus("transcripts").join(name)).unwrap();
    let mut r = Replayer::new("/home/u/.claude");
    let path = "projects/-home-u-app/00000000-0000-0000-0000-000000000001.jsonl".to_string();
    let t0 = Timestamp::parse_rfc3339("2026-11-01T00:00:00Z").unwrap();
    for (i, part) in data.chunks(chunk).enumerate() {
        r.step(
            t0.add_millis(i as i64),
            Step::Append {
                path: path.clone(),
                data: part.to_vec(),
            },
        );
    }
    // The store refuses a second turn for an entry and records it: that must never happen.
    assert_eq!(r.store().violations(), &[] as &[String], "{name}: S1");
    r.store().turns().cloned().collect()
}

fn expect(name: &str, prompt: usize, agent_text: usize, question: usize, answer: usize) {
    let want = Counts {
        prompt,
        agent_text,
        question,
        answer,
    };
    for chunk in [usize::MAX, 4096, 97] {
        let turns = replay_file(name, chunk);
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

// Counted by hand for the two small files: 2.0.74 has one typed prompt (its IDE block left
// out) and one final text after thinking + Write; 2.1.4 has one prompt and one text before
// its Task call. The other figures were checked once against a throwaway script (not kept).
#[test]
fn small_queue_op_counts() {
    if !have_corpus() {
        return;
    }
    expect("entire_2.0.74_small_queue_op.jsonl", 1, 1, 0, 0);
}

#[test]
fn small_task_summary_counts() {
    if !have_corpus() {
        return;
    }
    expect("entire_2.1.4_small_task_summary.jsonl", 1, 1, 0, 0);
}

#[test]
fn compaction_counts() {
    if !have_corpus() {
        return;
    }
    expect("entire_2.0.76_compaction.jsonl", 2, 9, 0, 0);
}

#[test]
fn slash_command_counts() {
    if !have_corpus() {
        return;
    }
    // Four typed prompts and the custom command `/pr` (line 141), which the model worked on;
    // `/mcp` is Claude Code's own and stays machinery.
    expect("entire_2.1.12_slashcmd_localcmd.jsonl", 5, 9, 0, 0);
}

#[test]
fn api_error_counts() {
    if !have_corpus() {
        return;
    }
    expect("entire_2.1.17_api_error.jsonl", 8, 11, 0, 0);
}

#[test]
fn subagent_progress_counts() {
    if !have_corpus() {
        return;
    }
    expect("entire_2.1.19_task_subagent_progress.jsonl", 1, 2, 0, 0);
}

#[test]
fn interrupted_counts() {
    if !have_corpus() {
        return;
    }
    expect("entire_2.1.29_interrupted.jsonl", 4, 5, 0, 0);
}

#[test]
fn ask_user_question_counts() {
    if !have_corpus() {
        return;
    }
    expect("entire_2.1.33_askuserquestion.jsonl", 1, 9, 1, 1);
    let turns = replay_file("entire_2.1.33_askuserquestion.jsonl", usize::MAX);
    let q = turns.iter().find(|t| t.question.is_some()).unwrap();
    assert_eq!(q.text, "Where should the generated Mermaid diagram go?");
    let options = q.question.as_ref().unwrap()["questions"][0]["options"]
        .as_array()
        .unwrap();
    assert_eq!(options.len(), 3);
    let a = turns
        .iter()
        .find(|t| t.actor == Actor::User && t.tool_use_id.is_some())
        .unwrap();
    assert_eq!(a.text, "docs/generated/");
}

#[test]
fn newest_format_counts() {
    if !have_corpus() {
        return;
    }
    expect("esdeveniments_2.1.220_cli_attachments.jsonl", 3, 19, 0, 0);
}

#[test]
fn every_corpus_transcript_replays_identically_twice() {
    if !have_corpus() {
        return;
    }
    for path in files("transcripts", "jsonl") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let a = replay_file(&name, 1000);
        let b = replay_file(&name, 1000);
        assert_eq!(a, b, "{name}");
        assert!(a
            .iter()
            .all(|t| t.timestamp_source == headspace_core::model::TimestampSource::Jsonl));
    }
}

#[test]
fn sidechain_and_meta_lines_are_never_turns() {
    if !have_corpus() {
        return;
    }
    let mut meta = 0;
    for path in files("transcripts", "jsonl") {
        let data = std::fs::read(&path).unwrap();
        for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).unwrap();
            if v["isSidechain"] == true || v["isMeta"] == true {
                assert_eq!(classify(line).unwrap(), Entry::Ignored);
                meta += 1;
            }
        }
    }
    assert!(meta > 0, "the corpus has meta lines to check");
    // No corpus transcript has a sidechain line: a prompt marked as one must be ignored.
    let sidechain = br#"{"type":"user","isSidechain":true,"uuid":"00000000-0000-4000-8000-0000000000aa","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"run the sub-agent's task"}}"#;
    assert_eq!(classify(sidechain).unwrap(), Entry::Ignored);
    let main =
        String::from_utf8_lossy(sidechain).replace("\"isSidechain\":true", "\"isSidechain\":false");
    assert!(
        matches!(classify(main.as_bytes()).unwrap(), Entry::UserPrompt { .. }),
        "the same line off the sidechain is a prompt"
    );
}

#[test]
fn every_pane_capture_is_read() {
    if !have_corpus() {
        return;
    }
    use headspace_core::pane::{read_pane, PaneState};
    let want = [
        (
            "agentapi__format__claude__auto-accept-edits__msg.txt",
            PaneState::Idle,
        ),
        (
            "agentapi__format__claude__remove-task-tool-call__msg.txt",
            PaneState::Idle,
        ),
        (
            "agentapi__format__claude__second_message__msg.txt",
            PaneState::Idle,
        ),
        (
            "agentapi__initialization__claude__not_ready__msg.txt",
            PaneState::Starting,
        ),
        (
            "agentapi__initialization__claude__ready__msg.txt",
            PaneState::Idle,
        ),
    ];
    let files = files("tui", "txt");
    assert_eq!(files.len(), want.len(), "a capture without an expectation");
    for (name, state) in want {
        let text = std::fs::read_to_string(corpus("tui").join(name)).unwrap();
        let r = read_pane(&text);
        assert_eq!(r.state, state, "{name}");
        if state == PaneState::Idle {
            assert_eq!(
                r.input.as_deref(),
                Some(""),
                "{name}: the old box's `Try \"…\"` is a placeholder"
            );
        }
    }
}

#[test]
fn claude_names_project_folders_with_every_other_character_as_a_dash() {
    use headspace_core::engine::claude_project_dir;
    assert_eq!(claude_project_dir("/home/u/my_app.v2"), "-home-u-my-app-v2");
    assert_eq!(claude_project_dir("/home/u/project1"), "-home-u-project1");
}
