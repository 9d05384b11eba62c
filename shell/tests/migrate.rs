//! Migrations against a real PostgreSQL (the throwaway cluster `make test` starts).

mod common;
use common::{cluster_url, psql_output as psql};
use std::process::Command;

#[test]
fn migrations_apply_once_and_enforce_one_turn_per_entry() {
    let Some(url) = cluster_url() else { return };
    let db = format!("migrate_{}", std::process::id());
    assert!(psql(&url, &format!("CREATE DATABASE {db}"))
        .status
        .success());
    let url = url.replace("dbname=postgres", &format!("dbname={db}"));
    let bin = env!("CARGO_BIN_EXE_headspace");

    let first = Command::new(bin)
        .args(["migrate", "--database-url", &url])
        .output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(String::from_utf8_lossy(&first.stderr).contains(&format!(
        "{} migration(s) applied",
        headspace::server::migrate::MIGRATIONS.len()
    )));
    let second = Command::new(bin)
        .args(["migrate", "--database-url", &url])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&second.stderr).contains("0 migration(s) applied"));

    let setup = "INSERT INTO agents (id, session_id, last_seen_at) VALUES (1, 's', now());
                 INSERT INTO tasks (id, agent_id, state, transcript_state, started_at) VALUES (1, 1, 'idle', 'idle', now());
                 INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source)
                 VALUES (1, 1, 1, 'user', 'command', 'hi', now(), 'jsonl', 'u-1', 'transcript');";
    let out = psql(&url, setup);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dup = psql(&url, "INSERT INTO turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source)
                          VALUES (2, 1, 1, 'user', 'command', 'hi', now(), 'jsonl', 'u-1', 'transcript')");
    assert!(
        !dup.status.success(),
        "a second turn for the same entry must be refused"
    );
}

#[test]
fn migration_list_matches_the_folder() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".sql"))
        .collect();
    files.sort();
    let src = include_str!("../src/server/migrate.rs");
    for f in &files {
        assert!(
            src.contains(&format!("\"{f}\"")),
            "{f} is not listed in MIGRATIONS"
        );
    }
}
