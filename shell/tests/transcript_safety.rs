//! Hostile files under `projects/` and odd transcript lines, against the real server and
//! PostgreSQL: a FIFO, a 2 GiB file without a newline, symlinks out of the claude dir, and
//! lines with NUL, lone surrogates or 20 MiB of text. Each test is the attack itself; the
//! server must stay small, read nothing outside the claude dir, say why it refused each
//! file, and still give every real turn.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use std::path::Path;
use std::time::Duration;

fn turns(server: &Server, agent: &str) -> Vec<serde_json::Value> {
    server
        .try_json(&format!("/api/agents/{agent}/turns?limit=1000"))
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

fn symlink(target: &Path, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

#[test]
fn fifo_sparse_file_and_symlinks_out_neither_block_nor_bloat_nor_leak() {
    let Some(db) = fresh_db("tsafe_files") else {
        return;
    };
    let claude = temp_dir("tsafe-files");
    let outside = temp_dir("tsafe-outside");
    let t0 = Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap();

    // What lies outside the claude dir: a file holding a valid transcript line, and a
    // folder holding a valid transcript.
    let mut secret = SessionWriter::new(41, t0);
    let leaked = secret.prompt("SECRET-FILE from outside the claude dir", None);
    std::fs::write(outside.join("leak.jsonl"), format!("{}\n", leaked.json)).unwrap();
    let mut secret_dir = SessionWriter::new(42, t0);
    let leaked_dir = secret_dir.prompt("SECRET-FOLDER from outside the claude dir", None);
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(
        outside
            .join("dir")
            .join(format!("{}.jsonl", secret_dir.session_id)),
        format!("{}\n", leaked_dir.json),
    )
    .unwrap();

    let server = Server::start(&db, &claude, &[]);
    let pid = server.child.id();

    // The attack, next to a real session's transcript.
    let mut s = SessionWriter::new(40, t0);
    let file = claude.join(s.path());
    let first = s.prompt("the first real prompt", None);
    append(&file, &format!("{}\n", first.json));
    let x = claude.join("projects/x");
    std::fs::create_dir_all(&x).unwrap();
    let fifo = x.join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::create_dir_all(x.join("dir.jsonl")).unwrap();
    std::fs::File::create(x.join("big.jsonl"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    symlink(
        &outside.join("leak.jsonl"),
        &claude.join("projects/y/leak.jsonl"),
    );
    symlink(&outside.join("dir"), &claude.join("projects/evil"));
    // A symlink that stays inside the claude dir is fine.
    let mut kept = SessionWriter::new(44, t0);
    let inside = kept.prompt("INSIDE-LINK prompt kept outside projects/", None);
    std::fs::create_dir_all(claude.join("archive")).unwrap();
    std::fs::write(
        claude.join("archive/keep.jsonl"),
        format!("{}\n", inside.json),
    )
    .unwrap();
    symlink(
        Path::new("../../archive/keep.jsonl"),
        &claude.join("projects/z/inside.jsonl"),
    );

    // The real session goes on after those exist: its turns still arrive.
    std::thread::sleep(Duration::from_millis(500));
    let a = s.agent_text("Looked at it; the build is fixed.");
    let p = s.prompt("the second real prompt", None);
    append(&file, &format!("{}\n{}\n", a.json, p.json));
    let got = wait_for(Duration::from_secs(60), || {
        let t = turns(&server, &s.session_id);
        (t.len() == 3).then_some(t)
    })
    .unwrap_or_else(|| panic!("the real turns did not arrive; log:\n{}", server.log()));
    let texts: Vec<&str> = got.iter().map(|t| t["text"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        [
            "the first real prompt",
            "Looked at it; the build is fixed.",
            "the second real prompt"
        ]
    );

    // The 2 GiB file was read to its end (the sweep has seen it long since) in bounded
    // memory, and a later line still arrives.
    let sweeps_later = wait_for(Duration::from_secs(120), || {
        let agents = server.json("/api/agents");
        agents
            .as_array()?
            .iter()
            .any(|a| a["session_id"] == "big")
            .then_some(())
    });
    assert!(sweeps_later.is_some(), "log:\n{}", server.log());
    std::thread::sleep(Duration::from_secs(3));
    let last = s.agent_text("And a turn after the big file.");
    append(&file, &format!("{}\n", last.json));
    assert!(
        wait_for(Duration::from_secs(60), || (turns(&server, &s.session_id)
            .len()
            == 4)
            .then_some(()))
        .is_some(),
        "log:\n{}",
        server.log()
    );
    // It was read (2 GiB went through read(2)), so the memory below means something.
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    let rchar: u64 = io
        .lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!(rchar >= 2 << 30, "read only {rchar} bytes");
    let (rss, peak) = (proc_kb(pid, "VmRSS"), proc_kb(pid, "VmHWM"));
    eprintln!("server memory after the 2 GiB file: VmRSS {rss} kB, VmHWM {peak} kB");
    assert!(rss < 200 * 1024, "VmRSS {rss} kB");
    assert!(peak < 200 * 1024, "VmHWM {peak} kB");

    // Nothing from outside became a turn, and the log says why for each refused file,
    // once, however many sweeps passed.
    let secrets = psql(&db, "SELECT count(*) FROM turns WHERE text LIKE '%SECRET%'");
    assert_eq!(secrets, "0");
    assert!(turns(&server, &secret.session_id).is_empty());
    assert!(turns(&server, &secret_dir.session_id).is_empty());
    let log = server.log();
    for (path, why) in [
        (
            "projects/x/fifo.jsonl",
            "refused: not a regular file (a FIFO)",
        ),
        (
            "projects/x/dir.jsonl",
            "refused: not a regular file (a directory)",
        ),
        (
            "projects/y/leak.jsonl",
            "refused: symlink leaves the claude dir",
        ),
        ("projects/evil", "refused: symlink leaves the claude dir"),
    ] {
        let said = format!("[WATCHER] {path} {why}");
        assert_eq!(log.matches(&said).count(), 1, "{said} in log:\n{log}");
    }
    assert!(!log.contains("inside.jsonl refused"), "{log}");
    let kept_turns = turns(&server, "inside");
    assert_eq!(kept_turns.len(), 1, "{kept_turns:?}");
    assert_eq!(kept_turns[0]["entry_uuid"], inside.uuid.as_str());
    eprintln!(
        "{}",
        log.lines()
            .filter(|l| l.contains("[WATCHER]"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    server.stop();
    let _ = std::fs::remove_dir_all(&claude);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn nul_lone_surrogate_and_a_20_mib_line_still_become_turns() {
    let Some(db) = fresh_db("tsafe_lines") else {
        return;
    };
    let claude = temp_dir("tsafe-lines");
    let server = Server::start(&db, &claude, &[]);
    let mut s = SessionWriter::new(
        43,
        Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap(),
    );
    let file = claude.join(s.path());

    let nul = s.prompt("a prompt with NULHERE inside", None);
    let nul_line = nul.json.replace("NULHERE", "\\u0000");
    let sur = s.agent_text("an answer with LONE inside and a PAIR");
    let sur_line = sur
        .json
        .replace("LONE", "\\ud800")
        .replace("PAIR", "\\ud83d\\ude00");
    let long_text = format!("BIG START {}", "x".repeat(20 << 20));
    let long = s.agent_text(&long_text);
    let after = s.prompt("after the long line", None);
    append(
        &file,
        &format!("{nul_line}\n{sur_line}\n{}\n{}\n", long.json, after.json),
    );
    let got = wait_for(Duration::from_secs(60), || {
        let t = turns(&server, &s.session_id);
        (t.len() == 4).then_some(t)
    })
    .unwrap_or_else(|| {
        panic!(
            "turns: {:?}\nlog:\n{}",
            turns(&server, &s.session_id)
                .iter()
                .map(|t| t["text"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(60)
                    .collect::<String>())
                .collect::<Vec<_>>(),
            server.log()
        )
    });
    assert_eq!(got[0]["text"], "a prompt with \u{FFFD} inside");
    assert_eq!(got[0]["entry_uuid"], nul.uuid.as_str());
    assert_eq!(got[1]["text"], "an answer with \u{FFFD} inside and a 😀");
    assert_eq!(got[1]["entry_uuid"], sur.uuid.as_str());
    let big = got[2]["text"].as_str().unwrap();
    assert_eq!(got[2]["entry_uuid"], long.uuid.as_str());
    assert!(big.starts_with("BIG START xxx"), "{}", &big[..40]);
    let mark = format!("… [truncated: {} bytes]", long.json.len());
    assert!(big.ends_with(&mark), "{}", &big[big.len() - 80..]);
    assert!(big.len() <= (16 << 20) + mark.len(), "{}", big.len());
    assert_eq!(got[3]["text"], "after the long line");

    let log = server.log();
    let warns = |uuid: &str| {
        log.lines()
            .filter(|l| l.contains("WARN") && l.contains(uuid))
            .count()
    };
    assert!(warns(&nul.uuid) >= 1, "{log}");
    assert!(log.contains("1 NUL character(s)"), "{log}");
    assert!(warns(&sur.uuid) >= 1, "{log}");
    assert!(log.contains("1 unpaired surrogate escape(s)"), "{log}");
    assert!(warns(&long.uuid) >= 1, "{log}");
    assert!(log.contains("longer than max_line_bytes"), "{log}");
    eprintln!(
        "{}",
        log.lines()
            .filter(|l| l.contains("WARN"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    server.stop();
    let _ = std::fs::remove_dir_all(&claude);
}

/// The server's own opens and reads of a transcript are file events too: they must not
/// make it read again, in a loop that keeps a core busy while nothing changes.
#[test]
fn reading_transcripts_does_not_wake_the_watcher_again() {
    let Some(db) = fresh_db("tsafe_idle") else {
        return;
    };
    let claude = temp_dir("tsafe-idle");
    let server = Server::start(&db, &claude, &[]);
    let pid = server.child.id();
    let mut s = SessionWriter::new(
        45,
        Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap(),
    );
    let file = claude.join(s.path());
    let p = s.prompt("a prompt, then silence", None);
    append(&file, &format!("{}\n", p.json));
    assert!(
        wait_for(Duration::from_secs(10), || (turns(&server, &s.session_id)
            .len()
            == 1)
            .then_some(()))
        .is_some()
    );
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(pid) - before;
    eprintln!("{used} clock ticks of CPU in 3 idle seconds");
    // Idle, the server sweeps and ticks: a few ticks in 3 s. A read loop burns ~300.
    assert!(used < 60, "{used} clock ticks of CPU in 3 idle seconds");
    server.stop();
    let _ = std::fs::remove_dir_all(&claude);
}
