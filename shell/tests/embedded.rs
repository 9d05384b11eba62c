//! The embedded database of `make run`: a fresh HEADSPACE_HOME and no database URL give a
//! healthy server with migrations applied; a second start reuses the cluster; two at once is
//! a clear error.

mod common;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A server process that is killed if the test fails half way.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(
    home: &std::path::Path,
    claude: &std::path::Path,
) -> (Guard, Arc<Mutex<String>>, Option<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_headspace"))
        .args(["serve", "--addr", "127.0.0.1:0", "--home"])
        .arg(home)
        .arg("--claude-dir")
        .arg(claude)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = log.clone();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap_or("").to_string());
            }
            sink.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(60)).ok();
    (Guard(child), log, addr)
}

fn stop(mut guard: Guard) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(guard.0.id().to_string())
        .status();
    let _ = guard.0.wait();
}

#[test]
fn fresh_home_gives_a_healthy_server_and_the_cluster_is_reused_and_locked() {
    if common::cluster_url().is_none() {
        return; // outside `make test`, PostgreSQL may be missing
    }
    let home = common::temp_dir("embedded-home");
    let claude = common::temp_dir("embedded-claude");
    let (first, log, addr) = start(&home, &claude);
    let addr = addr.unwrap_or_else(|| panic!("first start failed:\n{}", log.lock().unwrap()));
    assert!(log
        .lock()
        .unwrap()
        .contains("creating the embedded database"));
    let (status, body) = common::request(&addr, "GET", "/healthz", b"").unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        common::request(&addr, "GET", "/api/agents", b"").unwrap(),
        (200, "[]".to_string()),
        "migrations applied"
    );
    let url = format!(
        "host={} user=headspace dbname=postgres",
        std::fs::canonicalize(home.join("pg")).unwrap().display()
    );
    assert_eq!(
        common::psql(&url, "SELECT count(*) FROM schema_migrations"),
        headspace::migrate::MIGRATIONS.len().to_string()
    );

    // Starting a second server on the same home while the first runs: a clear error.
    let (second, log2, addr2) = start(&home, &claude);
    assert!(addr2.is_none());
    let mut second = second;
    let status = second.0.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(
        log2.lock().unwrap().contains("another headspace server"),
        "{}",
        log2.lock().unwrap()
    );

    stop(first);
    // The next start reuses the cluster: no initdb.
    let (again, log3, addr3) = start(&home, &claude);
    let addr3 = addr3.unwrap_or_else(|| panic!("restart failed:\n{}", log3.lock().unwrap()));
    assert!(!log3
        .lock()
        .unwrap()
        .contains("creating the embedded database"));
    assert_eq!(
        common::request(&addr3, "GET", "/healthz", b"").unwrap().0,
        200
    );
    stop(again);
    // The cluster was stopped on exit.
    assert!(common::psql_output(&url, "SELECT 1").status.code() != Some(0));
    let real = std::fs::canonicalize(home.join("pg")).unwrap();
    let _ = std::fs::remove_dir_all(&home);
    if real.starts_with("/var/lib/headspace") {
        let _ = std::fs::remove_dir_all(&real);
    }
}
