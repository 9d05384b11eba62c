//! Helpers for tests that run the real server binary against the throwaway PostgreSQL.
#![allow(dead_code)]

pub mod browser;
pub mod launching;
pub mod pages;
pub mod real_client;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// True when Node.js runs here; false (the test skips) when it does not, except on CI
/// (`CI` set), where `make test` installs it and its absence fails the test.
pub fn node_or_skip() -> bool {
    let node = Command::new("node").arg("--version").output();
    if node.is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "node must be installed on CI (make test installs it)"
    );
    eprintln!("skipped: node is not installed");
    false
}

/// The cluster's URL, or `None` (test skipped) outside `make test`.
pub fn cluster_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(u) => Some(u),
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("DATABASE_URL must be set on CI (make test sets it)")
        }
        Err(_) => {
            eprintln!("skipped: DATABASE_URL is not set; run `make test`");
            None
        }
    }
}

/// Runs SQL with psql; the raw output, whether it succeeded or not.
pub fn psql_output(url: &str, sql: &str) -> std::process::Output {
    let pg_bin = std::env::var("PG_BIN").unwrap_or_default();
    let psql = if pg_bin.is_empty() {
        "psql".to_string()
    } else {
        format!("{pg_bin}/psql")
    };
    Command::new(psql)
        .args([
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
            url,
            "-c",
            sql,
        ])
        .output()
        .expect("psql runs")
}

/// Runs SQL with psql and returns its output; panics when it fails.
pub fn psql(url: &str, sql: &str) -> String {
    let out = psql_output(url, sql);
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A new, empty database for one test.
pub fn fresh_db(name: &str) -> Option<String> {
    let url = cluster_url()?;
    let db = format!("{name}_{}", std::process::id());
    psql(&url, &format!("DROP DATABASE IF EXISTS {db}"));
    psql(&url, &format!("CREATE DATABASE {db}"));
    Some(url.replace("dbname=postgres", &format!("dbname={db}")))
}

/// Runs `cmd` to its end and fails the test, with its stderr, unless it succeeded.
pub fn run_ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A new database for one test with every migration applied (`headspace migrate`).
pub fn migrated_db(name: &str) -> Option<String> {
    let db = fresh_db(name)?;
    run_ok(Command::new(env!("CARGO_BIN_EXE_headspace")).args(["migrate", "--database-url", &db]));
    Some(db)
}

/// The runtime a test drives the store with directly: two workers, as this machine's cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// SQL for an agent row of `machine` with a task in `state`, as that machine's server would
/// write it (session `sess-ID`).
pub fn agent_sql(id: u64, machine: &str, project: &str, state: &str) -> String {
    format!(
        "INSERT INTO agents (id, session_id, project, last_seen_at, machine) VALUES ({id}, 'sess-{id}', '{project}', now(), '{machine}');
         INSERT INTO tasks (id, agent_id, session_id, state, transcript_state, started_at)
           VALUES ({id}, {id}, 'sess-{id}', '{state}', '{state}', now());"
    )
}

/// The token every test server requires (unless a test gives its own): tests and their
/// tools send it as users' do, read from a 0600 file.
pub const TEST_TOKEN: &str = "headspacetesttoken";

/// The file holding [`TEST_TOKEN`], written once per test process.
pub fn test_token_file() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir().join(format!("headspace-token-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .unwrap();
        f.write_all(format!("{TEST_TOKEN}\n").as_bytes()).unwrap();
        path
    })
    .clone()
}

/// The `headspace` binary, as a user's shell runs it: it finds the test servers' token in
/// `HEADSPACE_TOKEN_FILE` (a server started with it requires that token).
pub fn headspace() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_headspace"));
    c.env("HEADSPACE_TOKEN_FILE", test_token_file());
    c.env_remove("HEADSPACE_TOKEN");
    c
}

/// The `Authorization` header line of the test servers' token.
pub fn bearer() -> String {
    format!("Authorization: Bearer {TEST_TOKEN}")
}

pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("headspace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("projects")).unwrap();
    d
}

/// [`temp_dir`] closed to other accounts (0700): what a server's `--home` must be.
pub fn private_temp_dir(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = temp_dir(name);
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

/// Milliseconds since the Unix epoch, now (for sessions whose lines are stamped as now).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A self-signed P-256 certificate `NAME.pem` and its key `NAME.key` in `dir`, made by
/// `openssl` (which `make test` installs), with `extra` arguments (a subject name, an
/// extension); their paths.
pub fn self_signed(dir: &Path, name: &str, extra: &[&str]) -> (PathBuf, PathBuf) {
    let (cert, key) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    run_ok(
        Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "2", "-subj", &format!("/CN={name}")])
            .args(extra)
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert),
    );
    (cert, key)
}

/// Posts session `s`'s prompt and then its AskUserQuestion of one question with `options`
/// (in `pane`): an agent that waits on a question, from hooks alone. The tool use's id, for
/// the PostToolUse that ends it.
pub fn ask_by_hooks(
    server: &Server,
    claude_dir: &Path,
    s: &headspace_testkit::synth::SessionWriter,
    pane: &str,
    prompt: &str,
    (question, options): (&str, &[&str]),
) -> String {
    let id = format!("toolu_ask_{}", pane.trim_start_matches('%'));
    let labels: Vec<serde_json::Value> = options
        .iter()
        .map(|o| serde_json::json!({"label": o}))
        .collect();
    server.post_hook(
        s,
        claude_dir,
        pane,
        "UserPromptSubmit",
        serde_json::json!({"prompt": prompt}),
    );
    server.post_hook(
        s,
        claude_dir,
        pane,
        "PreToolUse",
        serde_json::json!({"tool_name": "AskUserQuestion", "tool_use_id": id,
               "tool_input": {"questions": [{"question": question, "options": labels}]}}),
    );
    id
}

pub struct Server {
    pub child: Child,
    pub addr: String,
    /// The token it requires.
    pub token: String,
    pub log: Arc<Mutex<String>>,
    /// The thread that copies the server's stderr into `log` (joined at the end, so the
    /// error check below reads the whole log).
    reader: Option<std::thread::JoinHandle<()>>,
    /// Substrings of the ERROR lines this test provokes on purpose.
    expected_errors: Mutex<Vec<String>>,
}

impl Server {
    /// Starts `headspace serve` on a free port and waits until it listens.
    pub fn start(db: &str, claude_dir: &Path, extra: &[&str]) -> Server {
        Server::start_on(db, claude_dir, "127.0.0.1:0", extra)
    }

    /// Starts `headspace serve` on `addr` and waits until it listens.
    pub fn start_on(db: &str, claude_dir: &Path, addr: &str, extra: &[&str]) -> Server {
        Server::start_logging(db, claude_dir, addr, extra, Some("info"))
    }

    /// Starts `headspace serve` with `RUST_LOG` unset: the log a user gets by default.
    pub fn start_with_default_logging(db: &str, claude_dir: &Path, extra: &[&str]) -> Server {
        Server::start_logging(db, claude_dir, "127.0.0.1:0", extra, None)
    }

    /// Starts `headspace serve` on `addr` with `RUST_LOG` set to `rust_log` (unset: `None`).
    fn start_logging(
        db: &str,
        claude_dir: &Path,
        addr: &str,
        extra: &[&str],
        rust_log: Option<&str>,
    ) -> Server {
        let mut command = headspace();
        if own_token(extra).is_some() {
            command.env_remove("HEADSPACE_TOKEN_FILE");
        }
        match rust_log {
            Some(filter) => command.env("RUST_LOG", filter),
            None => command.env_remove("RUST_LOG"),
        };
        let mut child = command
            .args([
                "serve",
                "--addr",
                addr,
                "--database-url",
                db,
                "--sweep-seconds",
                "0.2",
            ])
            .arg("--claude-dir")
            .arg(claude_dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(rest.split('/').next().unwrap_or("").to_string());
                }
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("server did not start:\n{}", log.lock().unwrap()));
        let token = own_token(extra).unwrap_or_else(|| TEST_TOKEN.to_string());
        Server {
            child,
            addr,
            token,
            log,
            reader: Some(reader),
            expected_errors: Mutex::new(Vec::new()),
        }
    }

    /// Declares that the server may log an ERROR line containing `substring`: any other
    /// ERROR line fails the test when the server is dropped.
    pub fn expect_error(&self, substring: &str) {
        self.expected_errors
            .lock()
            .unwrap()
            .push(substring.to_string());
    }

    /// SIGKILL: no cleanup at all.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().unwrap()
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        self.call("GET", path, b"")
    }

    pub fn post(&self, path: &str, body: &[u8]) -> (u16, String) {
        self.call("POST", path, body)
    }

    /// Posts session `s`'s hook `event` (in `pane`, its transcript under `claude_dir`; see
    /// [`hook`]) and asserts it was taken.
    pub fn post_hook(
        &self,
        s: &headspace_testkit::synth::SessionWriter,
        claude_dir: &Path,
        pane: &str,
        event: &str,
        extra: serde_json::Value,
    ) {
        let (status, body) = self.post(
            &format!("/hook/{event}"),
            &hook(s, claude_dir, pane, event, extra),
        );
        assert_eq!(status, 200, "{body}");
    }

    /// One request; a failure names the transport error and shows the server's last log
    /// lines (a panic in a handler shows there, not in the answer).
    fn call(&self, method: &str, path: &str, body: &[u8]) -> (u16, String) {
        headspace::client::request(
            &self.addr,
            method,
            path,
            body,
            Some(&self.token),
            REQUEST_TIME,
        )
        .unwrap_or_else(|e| {
            let log = self.log.lock().unwrap();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            panic!("{method} {path}: {e}\nthe server's last log lines:\n{tail}")
        })
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// The JSON of a 200 answer, or `None` (for polling until something exists).
    pub fn try_json(&self, path: &str) -> Option<serde_json::Value> {
        let (status, body) = request(&self.addr, "GET", path, b"")?;
        (status == 200)
            .then(|| serde_json::from_str(&body).ok())
            .flatten()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    /// Stops the server and fails the test on an ERROR line it did not expect.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        if std::thread::panicking() {
            return;
        }
        let unexpected = headspace_testkit::error_logs::unexpected_error_lines(
            &self.log(),
            &self.expected_errors.lock().unwrap(),
        );
        assert!(
            unexpected.is_empty(),
            "the server logged ERROR lines the test did not expect (declare them with expect_error):\n{}",
            unexpected.join("\n")
        );
    }
}

/// The token a test gives a server itself (`--token-file FILE` or `--token T`), if any.
fn own_token(extra: &[&str]) -> Option<String> {
    let after = |flag: &str| {
        extra
            .iter()
            .position(|a| *a == flag)
            .and_then(|i| extra.get(i + 1))
    };
    after("--token-file")
        .map(|f| std::fs::read_to_string(f).unwrap().trim().to_string())
        .or_else(|| after("--token").map(|t| t.to_string()))
}

/// A request to the server, with the test token; `None` if the server is not there.
pub fn request(addr: &str, method: &str, path: &str, body: &[u8]) -> Option<(u16, String)> {
    headspace::client::request(addr, method, path, body, Some(TEST_TOKEN), REQUEST_TIME).ok()
}

/// A request with no credential at all (what another account or a web page sends).
pub fn anonymous(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    headspace::client::request(addr, method, path, body, None, REQUEST_TIME).unwrap()
}

/// How long a test waits for an answer. Generous: six servers, their agents and runners
/// share two cores in the end-to-end tests, and a route that drives tmux (answer) once took
/// longer than 10 s there.
const REQUEST_TIME: Duration = Duration::from_secs(30);

/// Polls `f` until it returns `Some` or the time runs out.
pub fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Appends text to a transcript file.
pub fn append(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// A hook body for a synthetic session whose transcript lives under `claude_dir`.
pub fn hook(
    s: &headspace_testkit::synth::SessionWriter,
    claude_dir: &Path,
    pane: &str,
    event: &str,
    extra: serde_json::Value,
) -> Vec<u8> {
    let mut v = hook_value(s, claude_dir, Some(pane), event, extra);
    v["emitted_at"] = serde_json::json!(headspace_core::Timestamp(now_ms()).to_string());
    serde_json::to_vec(&v).unwrap()
}

/// The same hook's body as Claude Code's HTTP transport posts it: no pane (it comes as the
/// `X-Headspace-Pane` header) and no emission stamp.
pub fn http_hook(
    s: &headspace_testkit::synth::SessionWriter,
    claude_dir: &Path,
    event: &str,
    extra: serde_json::Value,
) -> Vec<u8> {
    serde_json::to_vec(&hook_value(s, claude_dir, None, event, extra)).unwrap()
}

fn hook_value(
    s: &headspace_testkit::synth::SessionWriter,
    claude_dir: &Path,
    pane: Option<&str>,
    event: &str,
    extra: serde_json::Value,
) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_slice(&s.hook(event, pane, None, extra)).unwrap();
    v["transcript_path"] = serde_json::json!(claude_dir.join(s.path()).display().to_string());
    v
}

/// Collects the raw SSE stream of a server in the background.
pub fn sse(addr: &str, last_event_id: Option<u64>) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    let mut s = TcpStream::connect(addr).unwrap();
    let extra = last_event_id
        .map(|id| format!("Last-Event-ID: {id}\r\n"))
        .unwrap_or_default();
    s.write_all(
        format!(
            "GET /api/events HTTP/1.1\r\nHost: {addr}\r\n{}\r\n{extra}\r\n",
            bearer()
        )
        .as_bytes(),
    )
    .unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    out
}

/// An agent's turns (by any reference the API takes) as (actor, text), in conversation
/// order, once there are at least `n` (waits up to 20 s; fails with the server's log).
pub fn turns_in_order(server: &Server, agent: &str, n: usize) -> Vec<(String, String)> {
    let path = format!("/api/agents/{agent}/turns?limit=200");
    let got = wait_for(Duration::from_secs(20), || {
        let t = server.try_json(&path)?;
        let t = t.as_array()?.clone();
        (t.len() >= n).then_some(t)
    });
    let Some(mut t) = got else {
        let now = server.try_json(&path);
        panic!("fewer than {n} turns: {now:?}\n{}", server.log());
    };
    t.sort_by_key(|x| {
        (
            x["timestamp"].as_str().unwrap_or("").to_string(),
            x["id"].as_u64(),
        )
    });
    t.iter()
        .map(|x| {
            (
                x["actor"].as_str().unwrap_or("").to_string(),
                x["text"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// A private tmux server (`tmux -L NAME`), killed when dropped.
pub struct Tmux(pub String);

impl Tmux {
    /// Runs a tmux command on this server; panics when it fails.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.0)
            .args(args)
            .output()
            .expect("tmux runs (make test installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Starts `command` in a new 120×40 session `session` (in `folder`, when given); its
    /// pane id.
    pub fn new_pane(&self, session: &str, folder: Option<&str>, command: &str) -> String {
        let mut args = vec![
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-s",
            session,
            "-x",
            "120",
            "-y",
            "40",
        ];
        if let Some(folder) = folder {
            args.extend(["-c", folder]);
        }
        args.push(command);
        self.run(&args)
    }

    /// A pane (new session `s`) whose typed and entered text lands in `file`, once per
    /// Enter: what a command sent to it typed, read back with [`typed_once`].
    pub fn recording_pane(&self, file: &Path) -> String {
        self.new_pane("s", None, &format!("cat > {}", file.display()))
    }
}

/// Waits until `text` shows in the file a [`Tmux::recording_pane`] writes, then a while
/// longer, and asserts it was typed there exactly once.
pub fn typed_once(file: &Path, text: &str) {
    let first = wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(file)
            .ok()
            .filter(|t| t.contains(text))
    })
    .unwrap_or_else(|| panic!("{text:?} never reached the pane"));
    std::thread::sleep(Duration::from_millis(1500));
    let later = std::fs::read_to_string(file).unwrap();
    assert_eq!(
        later.matches(text).count(),
        1,
        "{text:?} typed once: {first:?} then {later:?}"
    );
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.0)
            .arg("kill-server")
            .output();
    }
}

/// `headspace hooks install` into `settings`, posting to `server` (its token file recorded
/// in the hooks, from `HEADSPACE_TOKEN_FILE`): command hooks.
pub fn install_hooks(server: &Server, settings: &Path) {
    install_hooks_with(server, settings, "command")
}

/// [`install_hooks`] with the `transport` given (`command` or `http`: Claude Code's own
/// HTTP hooks, with the hook key of the default home, which the test servers share).
pub fn install_hooks_with(server: &Server, settings: &Path, transport: &str) {
    let out = headspace()
        .args([
            "hooks",
            "install",
            "--transport",
            transport,
            "--url",
            &format!("http://{}", server.addr),
        ])
        .arg("--settings")
        .arg(settings)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hooks install: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server on a fresh database whose pane code uses a private tmux server, with Headspace's
/// hooks installed in the claude dir's `settings.json` (what the stand-in agent runs).
pub struct PaneWorld {
    /// The server.
    pub server: Server,
    /// The claude dir: transcripts and `settings.json`.
    pub claude: PathBuf,
    /// The private tmux server (killed on drop).
    pub tmux: Tmux,
}

impl PaneWorld {
    /// `None` (skipped) outside `make test`, as every server test.
    pub fn start(name: &str) -> Option<PaneWorld> {
        let db = fresh_db(name)?;
        let claude = temp_dir(name);
        let tmux = Tmux(format!("hs-{name}-{}", std::process::id()));
        let server = Server::start(
            &db,
            &claude,
            &["--tmux-socket", &tmux.0, "--pane-poll-seconds", "0.3"],
        );
        install_hooks(&server, &claude.join("settings.json"));
        Some(PaneWorld {
            server,
            claude,
            tmux,
        })
    }
}

/// A process's CPU time and memory (shared with the benchmarks). Each test binary compiles
/// this module whole, and most do not use these: hence the allow.
#[allow(unused_imports)]
pub use headspace_testkit::procstat::{cpu_ticks, proc_kb};

/// Runs `pg_ctl` on the test cluster of `scripts/with-test-postgres.sh` (as its owner when
/// root): `stop` and `start` make a database outage.
pub fn pg_ctl(args: &[&str]) {
    let dir = std::env::var("PG_TEST_DIR").expect("PG_TEST_DIR from with-test-postgres.sh");
    let bin = std::env::var("PG_BIN").expect("PG_BIN");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"])
            .arg(format!("{bin}/pg_ctl"));
        c
    } else {
        Command::new(format!("{bin}/pg_ctl"))
    };
    let opts = format!("-c listen_addresses='' -k {dir} -c fsync=off -c max_connections=200");
    let out = cmd
        .arg("-D")
        .arg(format!("{dir}/data"))
        .args(["-l", &format!("{dir}/server.log"), "-w", "-o", &opts])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pg_ctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sends a raw request with the given extra header lines; the status and the whole answer.
pub fn raw(addr: &str, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

/// The closing table of `make bench`, the benches' own writer (one copy for benches and tests).
#[path = "../../examples/bench_support/table.rs"]
mod table;
/// A row of `make bench`'s closing table (`BENCH_TABLE`), or printed when run alone.
#[allow(unused_imports)] // only the benches among the tests use it
pub use table::row as table_row;
