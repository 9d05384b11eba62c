//! The embedded database of `make run`: a fresh HEADSPACE_HOME and no database URL give a
//! healthy server with migrations applied; a second start reuses the cluster; two at once is
//! a clear error. No other local account can use the cluster (the attack is tried as
//! `nobody`), whether Headspace runs as root or not, and a cluster made by an older version
//! (`initdb --auth=trust`, socket in `pg/`) is secured on its next start, its data kept.

mod common;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A server process that is killed if the test fails half way. Dropped, it fails the test on
/// an ERROR line of the server's log that the test did not declare in `expected_errors`
/// (none of these tests provokes one: a refused start is reported, not logged as an ERROR).
struct Guard(Child, ServerLog);

/// What the server wrote to stderr, and substrings of the ERROR lines expected in it.
struct ServerLog {
    text: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
    expected_errors: Vec<String>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        if let Some(reader) = self.1.reader.take() {
            let _ = reader.join();
        }
        if std::thread::panicking() {
            return;
        }
        let unexpected = headspace_testkit::error_logs::unexpected_error_lines(
            &self.1.text.lock().unwrap(),
            &self.1.expected_errors,
        );
        assert!(
            unexpected.is_empty(),
            "the server logged ERROR lines the test did not expect:\n{}",
            unexpected.join("\n")
        );
    }
}

fn start(home: &Path, claude: &Path) -> (Guard, Arc<Mutex<String>>, Option<String>) {
    start_as(None, home, claude)
}

/// `headspace serve` on `home`, as `user` (uid, gid) when given: `setpriv` execs the server
/// itself, so the guard's kill reaches it (runuser would stay in between).
fn start_as(
    user: Option<(u32, u32)>,
    home: &Path,
    claude: &Path,
) -> (Guard, Arc<Mutex<String>>, Option<String>) {
    let exe = env!("CARGO_BIN_EXE_headspace");
    let mut cmd = match user {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let mut child = cmd
        .args(["serve", "--addr", "127.0.0.1:0", "--home"])
        .arg(home)
        .arg("--claude-dir")
        .arg(claude)
        .env_remove("DATABASE_URL")
        .env_remove("HEADSPACE_TOKEN_FILE")
        // The token itself: an account other than root cannot read root's token file.
        .env("HEADSPACE_TOKEN", common::TEST_TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = log.clone();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap_or("").to_string());
            }
            sink.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(60)).ok();
    let server_log = ServerLog {
        text: log.clone(),
        reader: Some(reader),
        expected_errors: Vec::new(),
    };
    (Guard(child, server_log), log, addr)
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
    let home = TestHome::new("embedded-home");
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
    let url = embedded_url(&home);
    assert_eq!(
        common::psql(&url, "SELECT count(*) FROM schema_migrations"),
        headspace::server::migrate::MIGRATIONS.len().to_string()
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
}

/// The newest PostgreSQL binaries, as `with-test-postgres.sh` picks them.
fn pg_bin() -> PathBuf {
    if let Some(b) = std::env::var_os("PG_BIN").filter(|b| !b.is_empty()) {
        return PathBuf::from(b);
    }
    // The same folder the server uses.
    headspace::server::embedded_pg::find_bin().expect("PostgreSQL binaries")
}

use headspace::server::embedded_pg::DB_ACCOUNT;

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0)
}

/// The (uid, gid) of a local account, if it exists.
fn account(name: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, name]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// The real pg folder (as root, under /var/lib/headspace).
fn real_pg(home: &Path) -> PathBuf {
    std::fs::canonicalize(home.join("pg")).unwrap()
}

/// The connection string Headspace uses: the private socket folder and the secret.
fn embedded_url(home: &Path) -> String {
    let secret = std::fs::read_to_string(home.join("pg-secret")).unwrap();
    format!(
        "host={}/sock port=5432 user=headspace dbname=postgres password={}",
        real_pg(home).display(),
        secret.trim()
    )
}

/// A test's HEADSPACE_HOME. Dropped, also when the test fails, it stops the cluster left
/// in it (a killed server leaves it running) and removes its folders.
struct TestHome(PathBuf);

impl TestHome {
    fn new(name: &str) -> TestHome {
        TestHome(common::temp_dir(name))
    }
}

impl std::ops::Deref for TestHome {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestHome {
    fn drop(&mut self) {
        let data = self.0.join("pg/data");
        if let Ok(owner) = std::fs::metadata(&data) {
            if data.join("postmaster.pid").exists() {
                // As its owner: pg_ctl refuses root.
                let pg_ctl = pg_bin().join("pg_ctl");
                let mut c = if is_root() {
                    let mut c = Command::new("setpriv");
                    c.arg(format!("--reuid={}", owner.uid()))
                        .arg(format!("--regid={}", owner.gid()))
                        .arg("--clear-groups")
                        .arg(pg_ctl);
                    c
                } else {
                    Command::new(pg_ctl)
                };
                let _ = c
                    .arg("-D")
                    .arg(&data)
                    .args(["-m", "immediate", "-w", "stop"])
                    .output();
            }
        }
        remove_home(&self.0);
    }
}

/// Removes a test home and, as root, the data folder it links to.
fn remove_home(home: &Path) {
    let real = std::fs::canonicalize(home.join("pg")).ok();
    let _ = std::fs::remove_dir_all(home);
    if let Some(real) = real.filter(|r| r.starts_with("/var/lib/headspace")) {
        let _ = std::fs::remove_dir_all(real);
    }
}

/// psql as local account `user` on the socket in `host` (a folder), as the role `headspace`,
/// never prompting; `password` through PGPASSWORD when given.
fn psql_as(user: &str, host: &Path, password: Option<&str>) -> Output {
    let mut c = Command::new("runuser");
    c.args(["-u", user, "--"])
        .arg(pg_bin().join("psql"))
        .args(["-X", "-w", "-h"])
        .arg(host)
        .args([
            "-p",
            "5432",
            "-U",
            "headspace",
            "-d",
            "postgres",
            "-c",
            "select 1",
        ])
        .env("PGPASSFILE", "/dev/null")
        .env_remove("PGPASSWORD");
    if let Some(p) = password {
        c.env("PGPASSWORD", p);
    }
    c.output().unwrap()
}

/// The attack: `attacker`, another local account, tries the cluster every way it could:
/// the socket's folder, with a wrong password, the socket's place in older versions, and
/// reading the secret. Also checks what makes that hold: pg_hba.conf trusts no one, the
/// socket's folder is 0700 and owned by `cluster_owner`, the secret is 0600 and owned by
/// `headspace_owner`, and a connection without the password is refused even to root, who
/// can enter the folder.
fn assert_closed_to_others(home: &Path, attacker: &str, cluster_owner: u32, headspace_owner: u32) {
    let real = real_pg(home);
    let sock = real.join("sock");
    let denied = |what: &str, out: Output| {
        assert!(
            !out.status.success(),
            "{attacker} got in ({what}): {}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    denied("socket folder", psql_as(attacker, &sock, None));
    denied(
        "socket folder, wrong password",
        psql_as(attacker, &sock, Some("wrong")),
    );
    denied("old socket place", psql_as(attacker, &real, None));
    denied(
        "old socket place, wrong password",
        psql_as(attacker, &real, Some("wrong")),
    );
    let secret = home.join("pg-secret");
    denied(
        "read the secret",
        Command::new("runuser")
            .args(["-u", attacker, "--", "cat"])
            .arg(&secret)
            .output()
            .unwrap(),
    );

    let hba = std::fs::read_to_string(real.join("data/pg_hba.conf")).unwrap();
    assert_eq!(trusting(&hba), Vec::<String>::new(), "pg_hba.conf trusts");
    let meta = std::fs::metadata(&sock).unwrap();
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o700,
        "socket folder mode"
    );
    assert_eq!(meta.uid(), cluster_owner, "socket folder owner");
    let meta = std::fs::metadata(&secret).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "secret mode");
    assert_eq!(meta.uid(), headspace_owner, "secret owner");

    // Root can enter the folder: without the password it is still refused.
    if is_root() {
        let out = psql_as("root", &sock, None);
        assert!(!out.status.success(), "in without a password");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("password"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let right = std::fs::read_to_string(&secret).unwrap();
        let out = psql_as("root", &sock, Some(right.trim()));
        assert!(
            out.status.success(),
            "the right password: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The lines of a pg_hba.conf that trust, comments left out.
fn trusting(hba: &str) -> Vec<String> {
    hba.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter(|l| {
            l.split_whitespace()
                .any(|w| w.eq_ignore_ascii_case("trust"))
        })
        .map(str::to_string)
        .collect()
}

/// A hook's turn reaches the server's API: the server works on its database.
fn a_turn_arrives(addr: &str, claude: &Path) {
    let s = SessionWriter::new(1, Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap());
    let body = common::hook(
        &s,
        claude,
        "%4",
        "UserPromptSubmit",
        serde_json::json!({"prompt": "is the database closed?"}),
    );
    let (status, answer) = common::request(addr, "POST", "/hook/UserPromptSubmit", &body).unwrap();
    assert_eq!(status, 200, "{answer}");
    common::wait_for(Duration::from_secs(10), || {
        let (_, body) = common::request(addr, "GET", "/api/agents", b"")?;
        let agents: serde_json::Value = serde_json::from_str(&body).ok()?;
        (agents[0]["turn_count"] == 1).then_some(())
    })
    .expect("the turn arrives");
}

#[test]
fn another_local_account_cannot_use_the_embedded_database() {
    if common::cluster_url().is_none() || !is_root() {
        return; // the attack needs root to act as another account
    }
    let home = TestHome::new("embedded-closed");
    let claude = common::temp_dir("embedded-closed-claude");
    let (server, log, addr) = start(&home, &claude);
    let addr = addr.unwrap_or_else(|| panic!("start failed:\n{}", log.lock().unwrap()));
    assert_eq!(
        common::request(&addr, "GET", "/healthz", b"").unwrap().0,
        200
    );
    a_turn_arrives(&addr, &claude);
    let owner = account(DB_ACCOUNT).expect("the database's own account").0;
    assert_closed_to_others(&home, "nobody", owner, 0);
    assert_closed_to_others(&home, "postgres", owner, 0);
    let out = common::psql(&embedded_url(&home), "SELECT count(*) FROM turns");
    assert_eq!(out, "1", "the turn is in the embedded database");
    stop(server);
}

/// The attack on the shared `postgres` account: as root, the cluster once ran as `postgres`,
/// which owned `pg_hba.conf`; anyone who could run code as `postgres` (through the system's
/// own PostgreSQL) added a `trust` line, reloaded, and was in, one `pane_commands` row away
/// from typing into root's panes. Now the cluster runs as an account no other service
/// shares, and who may connect is decided by a file root owns.
#[test]
fn the_postgres_account_cannot_let_itself_into_roots_embedded_database() {
    if common::cluster_url().is_none() || !is_root() {
        return; // only root's cluster runs under a system account
    }
    let home = TestHome::new("embedded-postgres");
    let claude = common::temp_dir("embedded-postgres-claude");
    let (server, log, addr) = start(&home, &claude);
    let addr = addr.unwrap_or_else(|| panic!("start failed:\n{}", log.lock().unwrap()));
    a_turn_arrives(&addr, &claude);
    let real = real_pg(&home);
    let data = real.join("data");
    let owner = account(DB_ACCOUNT).expect("the database's own account");
    // Its processes run as that account.
    let pid = std::fs::read_to_string(data.join("postmaster.pid")).unwrap();
    let pid = pid.lines().next().unwrap().trim();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert_eq!(
        uid_line.split_whitespace().nth(1).unwrap(),
        owner.0.to_string(),
        "the postmaster's account"
    );
    // The attack, as postgres: a trust line in every pg_hba.conf it can find, a reload.
    let root_hba = real.with_file_name(format!(
        "{}.pg_hba.conf",
        real.file_name().unwrap().to_string_lossy()
    ));
    let script = format!(
        "echo 'local all all trust' >> {data}/pg_hba.conf; \
         echo 'local all all trust' >> {hba}; \
         {bin}/pg_ctl -D {data} reload",
        data = data.display(),
        hba = root_hba.display(),
        bin = pg_bin().display()
    );
    let out = Command::new("runuser")
        .args(["-u", "postgres", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the attack's steps all worked");
    std::thread::sleep(Duration::from_secs(1));
    let sock = real.join("sock");
    let out = psql_as("postgres", &sock, None);
    assert!(!out.status.success(), "postgres got in");
    // Root's file decides, and it is root's, unchanged.
    let meta = std::fs::metadata(&root_hba).unwrap();
    assert_eq!((meta.uid(), meta.permissions().mode() & 0o777), (0, 0o644));
    let hba = std::fs::read_to_string(&root_hba).unwrap();
    assert_eq!(trusting(&hba), Vec::<String>::new());
    // Even a trust line in the cluster's own pg_hba.conf (as if its own account were taken)
    // lets no one in: the server reads root's.
    std::fs::write(data.join("pg_hba.conf"), "local all all trust\n").unwrap();
    let out = Command::new("runuser")
        .args(["-u", DB_ACCOUNT, "--"])
        .arg(pg_bin().join("pg_ctl"))
        .arg("-D")
        .arg(&data)
        .arg("reload")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(!psql_as("nobody", &sock, None).status.success());
    assert!(
        !psql_as("root", &sock, None).status.success(),
        "in without a password"
    );
    stop(server);
}

#[test]
fn run_by_an_unprivileged_account_the_database_is_its_alone() {
    if common::cluster_url().is_none() || !is_root() {
        return; // run as root, the test plays both accounts
    }
    let (Some(nobody), Some(_)) = (account("nobody"), account("daemon")) else {
        panic!("the accounts nobody and daemon are needed");
    };
    let home = TestHome::new("embedded-nobody");
    let claude = common::temp_dir("embedded-nobody-claude");
    for d in [&*home, claude.as_path()] {
        std::os::unix::fs::chown(d, Some(nobody.0), Some(nobody.1)).unwrap();
        std::os::unix::fs::chown(d.join("projects"), Some(nobody.0), Some(nobody.1)).unwrap();
    }
    let (server, log, addr) = start_as(Some(nobody), &home, &claude);
    let addr = addr.unwrap_or_else(|| panic!("start as nobody failed:\n{}", log.lock().unwrap()));
    // Not root: no link to /var/lib/headspace, the cluster runs as nobody itself.
    assert!(!home.join("pg").is_symlink());
    assert_eq!(
        common::request(&addr, "GET", "/healthz", b"").unwrap().0,
        200
    );
    a_turn_arrives(&addr, &claude);
    assert_closed_to_others(&home, "daemon", nobody.0, nobody.0);
    stop(server);
}

/// A cluster made the way versions before the password made it: `initdb --auth=trust`,
/// socket in the pg folder itself (as root: data under /var/lib/headspace, run as postgres).
/// It holds a table `written_before`; it is left running when `running`.
fn old_cluster(home: &Path, running: bool) {
    let root = is_root();
    let dir = home.join("pg");
    if root {
        let real = PathBuf::from("/var/lib/headspace").join(
            home.display()
                .to_string()
                .trim_start_matches('/')
                .replace('/', "_"),
        );
        let _ = std::fs::remove_dir_all(&real);
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(&real, &dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(&dir).unwrap();
    let as_owner = |tool: &str| {
        let mut c = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(pg_bin().join(tool));
            c
        } else {
            Command::new(pg_bin().join(tool))
        };
        c.arg("-D").arg(dir.join("data"));
        c
    };
    let ok = |what: &str, out: Output| {
        assert!(
            out.status.success(),
            "{what}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    if root {
        ok(
            "chown",
            Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.join("."))
                .output()
                .unwrap(),
        );
        let _ = Command::new("chmod")
            .args(["711", "/var/lib/headspace"])
            .output();
    }
    ok(
        "old initdb",
        as_owner("initdb")
            .args(["-U", "headspace", "--auth=trust", "-E", "UTF8"])
            .output()
            .unwrap(),
    );
    ok(
        "old start",
        as_owner("pg_ctl")
            .arg("-l")
            .arg(dir.join("data/server.log"))
            .args(["-w", "-o"])
            .arg(format!(
                "-c listen_addresses='' -k {} -c max_connections=100",
                dir.display()
            ))
            .arg("start")
            .output()
            .unwrap(),
    );
    let old_url = format!("host={} user=headspace dbname=postgres", dir.display());
    common::psql(
        &old_url,
        "CREATE TABLE written_before (note text); INSERT INTO written_before VALUES ('kept')",
    );
    if root {
        // The hole this fixes: another account gets in.
        let out = psql_as("nobody", &dir, None);
        assert!(out.status.success(), "the old layout is open to nobody");
    }
    if !running {
        ok(
            "old stop",
            as_owner("pg_ctl")
                .args(["-m", "fast", "-w", "stop"])
                .output()
                .unwrap(),
        );
    }
}

/// An older version's cluster (left `running` or not) is secured on the next start: healthy,
/// closed to other accounts, its data kept.
fn older_cluster_is_secured(name: &str, running: bool) {
    if common::cluster_url().is_none() {
        return;
    }
    let home = TestHome::new(name);
    let claude = common::temp_dir(&format!("{name}-claude"));
    old_cluster(&home, running);
    let (server, log, addr) = start(&home, &claude);
    let addr = addr.unwrap_or_else(|| panic!("start failed:\n{}", log.lock().unwrap()));
    let log = log.lock().unwrap().clone();
    assert!(
        log.contains("securing the embedded database created by an older version"),
        "{log}"
    );
    assert_eq!(
        log.contains("restarting the embedded database that is already running"),
        running,
        "{log}"
    );
    let secret = std::fs::read_to_string(home.join("pg-secret")).unwrap();
    assert!(
        !log.contains(secret.trim()),
        "the password is never printed"
    );
    assert_eq!(
        common::request(&addr, "GET", "/healthz", b"").unwrap().0,
        200
    );
    a_turn_arrives(&addr, &claude);
    let url = embedded_url(&home);
    assert_eq!(
        common::psql(&url, "SELECT note FROM written_before"),
        "kept",
        "data written before the migration"
    );
    if is_root() {
        let owner = account(DB_ACCOUNT).expect("the database's own account").0;
        assert_closed_to_others(&home, "nobody", owner, 0);
        assert_closed_to_others(&home, "postgres", owner, 0);
    }
    stop(server);
}

#[test]
fn a_stopped_cluster_of_an_older_version_is_secured_and_keeps_its_data() {
    older_cluster_is_secured("embedded-old-stopped", false);
}

#[test]
fn a_running_cluster_of_an_older_version_is_restarted_secured_and_keeps_its_data() {
    older_cluster_is_secured("embedded-old-running", true);
}

#[test]
fn a_missing_secret_is_a_clear_error_not_a_way_in() {
    if common::cluster_url().is_none() {
        return;
    }
    let home = TestHome::new("embedded-no-secret");
    let claude = common::temp_dir("embedded-no-secret-claude");
    let (server, log, addr) = start(&home, &claude);
    addr.unwrap_or_else(|| panic!("start failed:\n{}", log.lock().unwrap()));
    stop(server);
    let secret = home.join("pg-secret");
    std::fs::remove_file(&secret).unwrap();
    let (mut server, log, addr) = start(&home, &claude);
    assert!(addr.is_none(), "started without its secret");
    assert_eq!(server.0.wait().unwrap().code(), Some(1));
    let log = log.lock().unwrap().clone();
    assert!(log.contains(&secret.display().to_string()), "{log}");
    assert!(log.contains("does not exist"), "{log}");
    assert!(log.contains("ALTER ROLE headspace PASSWORD"), "{log}");
    let hba = std::fs::read_to_string(real_pg(&home).join("data/pg_hba.conf")).unwrap();
    assert_eq!(
        trusting(&hba),
        Vec::<String>::new(),
        "no fall back to trust"
    );
    // A wrong secret: refused by the database, the same clear error.
    std::fs::write(&secret, "0123abcd\n").unwrap();
    let (mut server, log, addr) = start(&home, &claude);
    assert!(addr.is_none(), "started with a wrong secret");
    assert_eq!(server.0.wait().unwrap().code(), Some(1));
    let log = log.lock().unwrap().clone();
    assert!(log.contains("refuses the password"), "{log}");
    assert!(
        !log.contains("0123abcd"),
        "the password is never printed: {log}"
    );
}
