//! The attacks of the security audit, each against the real server: a web page rebinding
//! its name to 127.0.0.1, a cross-site page, another local account, a flood of half-open
//! connections at the file limit, a token on the command line. Each of these succeeded
//! against the server before its fix.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// A server with one agent in a private tmux pane that runs `cat` (so typed text would show).
struct Victim {
    server: Server,
    tmux: Tmux,
    pane: String,
    claude: std::path::PathBuf,
}

impl Victim {
    fn start(name: &str, extra: &[&str]) -> Option<Victim> {
        let db = fresh_db(name)?;
        let claude = temp_dir(name);
        let tmux = Tmux(format!("hs-{name}-{}", std::process::id()));
        tmux.run(&["new-session", "-d", "-x", "120", "-y", "30", "cat"]);
        let pane = tmux.run(&["display-message", "-p", "#{pane_id}"]);
        let mut args = vec!["--tmux-socket", tmux.0.as_str()];
        args.extend_from_slice(extra);
        let server = Server::start(&db, &claude, &args);
        Some(Victim {
            server,
            tmux,
            pane,
            claude,
        })
    }

    /// An agent in the pane, with a secret in its prompt, made through an honest hook.
    fn agent(&self, token: Option<&str>) {
        let s = SessionWriter::new(1, Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap());
        let body = hook(
            &s,
            &self.claude,
            &self.pane,
            "UserPromptSubmit",
            json!({"prompt": "my key is sk-SECRET-42"}),
        );
        let token = token.unwrap_or(TEST_TOKEN);
        let auth = Some(format!("Authorization: Bearer {token}"));
        let mut headers = vec![
            format!("Host: {}", self.server.addr),
            "Content-Type: application/json".to_string(),
        ];
        headers.extend(auth);
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let (status, answer) = raw(
            &self.server.addr,
            "POST",
            "/hook/UserPromptSubmit",
            &headers,
            std::str::from_utf8(&body).unwrap(),
        );
        assert_eq!(status, 200, "{answer}");
        wait_for(Duration::from_secs(10), || {
            let (s, b) = headspace::client::request(
                &self.server.addr,
                "GET",
                "/api/agents",
                b"",
                Some(token),
                Duration::from_secs(5),
            )
            .ok()?;
            (s == 200 && b.contains("sk-SECRET-42")).then_some(())
        })
        .expect("the agent appears");
    }

    fn screen(&self) -> String {
        self.tmux.run(&["capture-pane", "-p", "-t", &self.pane])
    }
}

#[test]
fn a_page_rebinding_its_name_to_loopback_can_neither_type_nor_read() {
    let Some(v) = Victim::start("sec_rebind", &[]) else {
        return;
    };
    v.agent(None);
    let seg = v.pane.replace('%', "%25");
    let port = v.server.addr.rsplit(':').next().unwrap().to_string();
    let evil = format!("Host: evil.example:{port}");
    // Even with the credential attached, as a browser attaches its login cookie.
    let auth = bearer();
    // What a rebinding page's fetch() sends: its own name, and no Origin on a same-origin call.
    let (status, answer) = raw(
        &v.server.addr,
        "POST",
        &format!("/api/agents/{seg}/send"),
        &[&evil, "Content-Type: application/json", &auth],
        r#"{"text": "touch /tmp/pwned-by-rebinding"}"#,
    );
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("evil.example"), "says why: {answer}");
    let (status, answer) = raw(&v.server.addr, "GET", "/api/agents", &[&evil, &auth], "");
    assert_eq!(status, 403);
    assert!(
        !answer.contains("sk-SECRET-42"),
        "no prompt leaks: {answer}"
    );
    let (status, _) = raw(&v.server.addr, "GET", "/api/events", &[&evil, &auth], "");
    assert_eq!(status, 403);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !v.screen().contains("pwned"),
        "nothing was typed: {}",
        v.screen()
    );
    // The real names still work, with and without a port, and IPv6 loopback by name.
    for host in [
        format!("Host: 127.0.0.1:{port}"),
        format!("Host: localhost:{port}"),
        "Host: localhost".to_string(),
    ] {
        assert_eq!(
            raw(&v.server.addr, "GET", "/api/agents", &[&host, &auth], "").0,
            200
        );
    }
    // Without a Host header at all: refused.
    assert_eq!(
        raw(&v.server.addr, "GET", "/api/agents", &[&auth], "").0,
        400
    );
    // --allow-host adds a name.
    drop(v);
    let Some(v) = Victim::start("sec_allow", &["--allow-host", "devbox.lan"]) else {
        return;
    };
    assert_eq!(
        raw(
            &v.server.addr,
            "GET",
            "/api/agents",
            &["Host: devbox.lan", &bearer()],
            ""
        )
        .0,
        200
    );
}

#[test]
fn a_cross_site_page_cannot_act_or_read() {
    let Some(v) = Victim::start("sec_xsite", &[]) else {
        return;
    };
    v.agent(None);
    let host = format!("Host: {}", v.server.addr);
    let seg = v.pane.replace('%', "%25");
    // Every attack below carries the credential, as a browser attaches the login cookie.
    let auth = bearer();
    // A form post as text/plain (no preflight needed) creating a hook turn: refused.
    let fake_hook = r#"{"session_id": "forged", "prompt": "forged prompt", "tmux_pane": "%99"}"#;
    let (status, answer) = raw(
        &v.server.addr,
        "POST",
        "/hook/UserPromptSubmit",
        &[&host, "Content-Type: text/plain", &auth],
        fake_hook,
    );
    assert_eq!(status, 415, "{answer}");
    // JSON with a foreign Origin (a page that got a preflight from elsewhere): refused.
    let (status, answer) = raw(
        &v.server.addr,
        "POST",
        &format!("/api/agents/{seg}/send"),
        &[
            &host,
            "Content-Type: application/json",
            "Origin: http://evil.example",
            &auth,
        ],
        r#"{"text": "echo pwned-by-origin"}"#,
    );
    assert_eq!(status, 403, "{answer}");
    // Every action the dashboard takes in a pane (its prompt box, Interrupt, Clear and the
    // answer buttons): refused from another origin, and as a form's text/plain.
    for (action, body) in [
        ("send", r#"{"text": "echo pwned-by-prompt"}"#),
        ("clear", "{}"),
        ("interrupt", "{}"),
        ("answer", r#"{"option": 1}"#),
    ] {
        let path = format!("/api/agents/{seg}/{action}");
        for headers in [
            [
                host.as_str(),
                "Content-Type: application/json",
                "Origin: http://evil.example",
                auth.as_str(),
            ],
            [
                host.as_str(),
                "Content-Type: application/json",
                "Sec-Fetch-Site: cross-site",
                auth.as_str(),
            ],
            [
                host.as_str(),
                "Content-Type: text/plain",
                "X-Any: 1",
                auth.as_str(),
            ],
        ] {
            let (status, answer) = raw(&v.server.addr, "POST", &path, &headers, body);
            assert!(
                status == 403 || status == 415,
                "POST {path} with {headers:?}: {answer}"
            );
        }
    }
    let (status, _) = raw(
        &v.server.addr,
        "GET",
        "/api/agents",
        &[&host, "Origin: http://evil.example", &auth],
        "",
    );
    assert_eq!(status, 403);
    // Another port of localhost is the same site but not the same origin.
    let (status, _) = raw(
        &v.server.addr,
        "GET",
        "/api/agents",
        &[&host, "Sec-Fetch-Site: same-site", &auth],
        "",
    );
    assert_eq!(status, 403);
    // An <img> or <a> that GETs an action: never an action.
    for path in [
        "/api/orchestrate/pause?project=%2Ftmp",
        "/api/orchestrate/cancel?project=%2Ftmp",
        "/api/orchestrate/merge?project=%2Ftmp",
        "/api/orchestrate/resume?project=%2Ftmp",
        "/api/orchestrate/confirm-gate?project=%2Ftmp",
        &format!("/api/agents/{seg}/send"),
        &format!("/api/agents/{seg}/clear"),
        &format!("/api/agents/{seg}/interrupt"),
        "/hook/Stop",
    ] {
        let (status, answer) = raw(&v.server.addr, "GET", path, &[&host, &auth], "");
        assert_eq!(status, 405, "GET {path}: {answer}");
        assert!(
            answer.to_ascii_lowercase().contains("allow: post"),
            "{answer}"
        );
    }
    // A hook that names no session is refused with a reason.
    let (status, answer) = raw(
        &v.server.addr,
        "POST",
        "/hook/Stop",
        &[&host, "Content-Type: application/json", &auth],
        "{}",
    );
    assert_eq!(status, 400);
    assert!(answer.contains("session"), "{answer}");
    std::thread::sleep(Duration::from_millis(500));
    let agents = v.server.json("/api/agents");
    assert_eq!(
        agents.as_array().unwrap().len(),
        1,
        "no forged agent: {agents}"
    );
    assert!(!v.screen().contains("pwned"));
    // Every answer forbids framing (the clickjacking half is in the browser test).
    let (_, answer) = raw(&v.server.addr, "GET", "/", &[&host], "");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("x-frame-options: deny"), "{answer}");
    assert!(lower.contains("frame-ancestors 'none'"), "{answer}");
    let (_, answer) = raw(&v.server.addr, "GET", "/api/agents", &[&host, &auth], "");
    assert!(answer
        .to_ascii_lowercase()
        .contains("x-frame-options: deny"));
    // The honest JSON send still types.
    let (status, answer) = raw(
        &v.server.addr,
        "POST",
        &format!("/api/agents/{seg}/send"),
        &[&host, "Content-Type: application/json", &auth],
        r#"{"text": "hello from the owner"}"#,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(wait_for(Duration::from_secs(5), || v
        .screen()
        .contains("hello from the owner")
        .then_some(()))
    .is_some());
}

/// A copy of this test's headspace binary that the `nobody` account can run, removed with
/// its folder when dropped (each copy is a binary's size: left behind, runs fill the disk).
struct NobodyBinary {
    dir: std::path::PathBuf,
    exe: std::path::PathBuf,
}

impl NobodyBinary {
    fn copy() -> NobodyBinary {
        let dir = std::env::temp_dir().join(format!("hs-nobody-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("headspace");
        std::fs::copy(env!("CARGO_BIN_EXE_headspace"), &exe).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        NobodyBinary { dir, exe }
    }
}

impl Drop for NobodyBinary {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn as_nobody_possible() -> bool {
    Command::new("runuser")
        .args(["-u", "nobody", "--", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this test can act as `nobody` (it must on CI, where tests run as root); when not,
/// it says the test is skipped.
fn nobody_or_skip() -> bool {
    let can = as_nobody_possible();
    if !can {
        assert!(
            std::env::var_os("CI").is_none(),
            "runuser -u nobody must work on CI"
        );
        eprintln!("skipped: cannot run as nobody here");
    }
    can
}

/// Runs a Python program as `nobody` (another local account with no files of the user's).
fn python_as_nobody(program: &str, args: &[&str]) -> std::process::Output {
    Command::new("runuser")
        .args(["-u", "nobody", "--", "python3", "-c", program])
        .args(args)
        .output()
        .expect("python3 runs as nobody")
}

#[test]
fn another_local_account_cannot_use_the_loopback_server() {
    let Some(v) = Victim::start("sec_account", &[]) else {
        return;
    };
    v.agent(None);
    if !as_nobody_possible() {
        assert!(
            std::env::var_os("CI").is_none(),
            "runuser -u nobody must work on CI (tests run as root)"
        );
        eprintln!("skipped: cannot run as nobody here");
        return;
    }
    let binary = NobodyBinary::copy();
    let exe = &binary.exe;
    let seg = v.pane.as_str();
    let run_as_nobody = |args: &[&str]| {
        Command::new("runuser")
            .args(["-u", "nobody", "--"])
            .arg(exe)
            .args(args)
            .args(["--addr", &v.server.addr])
            .env_remove("HEADSPACE_TOKEN")
            .env_remove("HEADSPACE_TOKEN_FILE")
            .output()
            .unwrap()
    };
    let out = run_as_nobody(&["send", seg, "touch /tmp/pwned-by-nobody"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs its token"), "{err}");
    let out = run_as_nobody(&["agents"]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-SECRET-42"));
    // curl as nobody, straight at the API, and by encoded or doubled paths.
    for path in [
        "/api/agents",
        "/%61pi/agents",
        "//api/agents",
        "/%61pi/events",
        "/%6detrics",
    ] {
        let out = Command::new("runuser")
            .args([
                "-u",
                "nobody",
                "--",
                "curl",
                "-s",
                "--path-as-is",
                "-m",
                "5",
            ])
            .arg(format!("http://{}{path}", v.server.addr))
            .output()
            .unwrap();
        let body = String::from_utf8_lossy(&out.stdout);
        assert!(!body.contains("sk-SECRET-42"), "{path}: {body}");
        assert!(body.contains("needs its token"), "{path}: {body}");
    }
    // Health is public; the owner still gets in.
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--", "curl", "-s"])
        .arg(format!("http://{}/healthz", v.server.addr))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"ok\""));
    assert!(!v.screen().contains("pwned"));
    assert_eq!(v.server.get("/api/agents").0, 200);
}

/// The attack that beat the socket-owner check: `nobody` sends its request and closes before
/// the server accepts, so the kernel reports the orphaned socket's owner as uid 0 (root), and
/// a few connections reset first stall the accept loop long enough. It typed `id > FILE` into
/// root's pane in 1 to 4 tries; here it gets 60, and a credential check has nothing to race.
#[test]
fn a_request_whose_socket_closed_before_accept_is_nobodys_not_roots() {
    let Some(v) = Victim::start("sec_orphan", &[]) else {
        return;
    };
    v.agent(None);
    if !nobody_or_skip() {
        return;
    }
    let (host, port) = v.server.addr.rsplit_once(':').unwrap();
    let path = format!("/api/agents/{}/send", v.pane.replace('%', "%25"));
    let program = r#"
import socket, struct, sys, time
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
body = b'{"text": "echo pwned-by-an-orphan-socket"}'
req = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
       f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
linger = struct.pack('ii', 1, 0)
for attempt in range(60):
    for _ in range(40):  # reset connections: each once cost the accept loop a /proc read
        r = socket.socket(); r.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
        r.connect((host, port)); r.close()
    s = socket.socket(); s.connect((host, port)); s.sendall(req); s.close()
    time.sleep(0.02)
"#;
    let out = python_as_nobody(program, &[host, port, &path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !v.screen().contains("pwned-by-an-orphan-socket"),
        "an orphaned socket's request was typed: {}",
        v.screen()
    );
}

/// Another account floods the server with connections it resets at once; the user's own
/// `/healthz` stays fast (each reset once cost the single accept loop a synchronous read of
/// the kernel's whole TCP table: 2 ms became 5.2 s). The bound is a second, not the 2 ms a
/// quiet machine shows: a loaded 2-core CI machine running this file's other tests beside a
/// flood at full speed once took over 250 ms, while the bug it guards against costs seconds.
#[test]
fn a_flood_of_reset_connections_never_slows_the_users_requests() {
    let Some(v) = Victim::start("sec_resets", &[]) else {
        return;
    };
    if !nobody_or_skip() {
        return;
    }
    let (host, port) = v.server.addr.rsplit_once(':').unwrap();
    let program = r#"
import socket, struct, sys, time
host, port = sys.argv[1], int(sys.argv[2])
linger = struct.pack('ii', 1, 0)
end = time.time() + 4
while time.time() < end:
    r = socket.socket(); r.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
    try:
        r.connect((host, port))
    except OSError:
        pass
    r.close()
"#;
    let flood = {
        let (host, port) = (host.to_string(), port.to_string());
        std::thread::spawn(move || python_as_nobody(program, &[&host, &port]))
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut worst = Duration::ZERO;
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        let t = Instant::now();
        assert_eq!(v.server.get("/healthz").0, 200);
        worst = worst.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = flood.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        worst < Duration::from_secs(1),
        "the user's /healthz took {worst:?} during the flood"
    );
}

/// Wrong credentials cost the guesser on every route, not only the login: at most ten are
/// answered a second in all, however many connections guess at once, while the right token
/// is answered at once throughout (7,900 guesses a second got through a Bearer header).
#[test]
fn guessing_the_token_gets_ten_answers_a_second_and_never_slows_the_right_one() {
    let Some(v) = Victim::start("sec_guess", &[]) else {
        return;
    };
    let addr = v.server.addr.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let started = Instant::now();
    let guessers: Vec<_> = (0..24)
        .map(|i| {
            let (addr, stop, answered) = (addr.clone(), stop.clone(), answered.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let guess = format!("guess{i}x{n}");
                    n += 1;
                    let path =
                        ["/api/agents", "/metrics", "/api/events", "/hook/Stop"][n as usize % 4];
                    if let Ok((401, _)) = headspace::client::request(
                        &addr,
                        "GET",
                        path,
                        b"",
                        Some(&guess),
                        Duration::from_secs(60),
                    ) {
                        answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    for _ in 0..15 {
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        assert_eq!(v.server.get("/api/agents").0, 200);
        slowest = slowest.max(t.elapsed());
    }
    let counted = answered.load(std::sync::atomic::Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let allowed = (elapsed.as_secs_f64() * 10.0).ceil() as u64 + 2;
    assert!(
        counted <= allowed,
        "{counted} wrong tokens answered in {elapsed:?} (at most {allowed})"
    );
    assert!(counted >= 10, "the guesses were answered at all: {counted}");
    assert!(
        slowest < Duration::from_millis(500),
        "the right token waited {slowest:?} among the guesses"
    );
    drop(v); // the waiting guesses end with the server
    for g in guessers {
        let _ = g.join();
    }
}

/// Without `HOME`, defaults never fall into `/tmp`: another account's planted links there
/// (where the server's home and Claude's folder would have been) are never followed, and a
/// planted transcript is never shown as an agent.
#[test]
fn without_home_nothing_is_taken_from_or_written_to_tmp() {
    let Some(db) = fresh_db("sec_nohome") else {
        return;
    };
    let planted = std::path::Path::new("/tmp/.local/share/headspace");
    let claude = std::path::Path::new("/tmp/.claude/projects/-planted");
    if planted.exists() || std::path::Path::new("/tmp/.claude").exists() {
        eprintln!("skipped: /tmp/.local or /tmp/.claude exists already");
        return;
    }
    let victim = temp_dir("sec-nohome-victim").join("precious");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::create_dir_all(planted).unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("token")).unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("serve.pid")).unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("pane-key")).unwrap();
    std::fs::create_dir_all(claude).unwrap();
    let mut s = SessionWriter::new(
        77,
        Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap(),
    );
    let transcript = claude.join(format!("{}.jsonl", s.session_id));
    std::fs::write(&transcript, s.prompt("a planted prompt", None).json + "\n").unwrap();
    struct Cleanup;
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all("/tmp/.local");
            let _ = std::fs::remove_dir_all("/tmp/.claude");
        }
    }
    let _cleanup = Cleanup;
    let mut child = common::headspace()
        .args(["serve", "--addr", "127.0.0.1:0", "--database-url", &db])
        .env_remove("HOME")
        .env_remove("HEADSPACE_HOME")
        .env_remove("HEADSPACE_CLAUDE_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut addr = String::new();
    let mut log = String::new();
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut err, &mut line).unwrap_or(0) > 0 {
        log.push_str(&line);
        if let Some(rest) = line.split("listening on http://").nth(1) {
            addr = rest.split('/').next().unwrap().to_string();
            break;
        }
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    assert!(!addr.is_empty(), "the server started: {log}");
    assert!(!log.contains("/tmp/.claude"), "{log}");
    std::thread::sleep(Duration::from_secs(3));
    let (status, agents) = request(&addr, "GET", "/api/agents", b"").unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200, "{agents}");
    assert!(
        !agents.contains(&s.session_id),
        "a planted transcript shown: {agents}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    for link in ["token", "serve.pid", "pane-key"] {
        let meta = std::fs::symlink_metadata(planted.join(link)).unwrap();
        assert!(meta.file_type().is_symlink(), "{link} was replaced");
    }
}

#[test]
fn hundreds_of_half_open_connections_at_the_file_limit_never_lock_out_healthz() {
    let Some(db) = fresh_db("sec_flood") else {
        return;
    };
    let claude = temp_dir("sec-flood");
    // The server under a low limit on open files, as a small container would run it.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Command::new("prlimit")
        .args(["--nofile=256:256", "--"])
        .arg(env!("CARGO_BIN_EXE_headspace"))
        .args(["serve", "--addr", "127.0.0.1:0", "--database-url", &db])
        .arg("--claude-dir")
        .arg(&claude)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut addr = String::new();
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0 {
        if let Some(rest) = line.split("listening on http://").nth(1) {
            addr = rest.split('/').next().unwrap().to_string();
            break;
        }
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let child = KillOnDrop(child);
    assert!(!addr.is_empty(), "the server started");
    // 400 connections that never send a byte, and 100 that send half a request.
    let mut held = Vec::new();
    for i in 0..500 {
        match TcpStream::connect(&addr) {
            Ok(mut s) => {
                if i % 5 == 0 {
                    let _ = s.write_all(b"GET /api/agents HTTP/1.1\r\nHost: 127.0.0.1\r\n");
                }
                held.push(s);
            }
            Err(e) => panic!("connect {i}: {e}"),
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let took = t.elapsed();
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "healthz answered {answer:?} after {took:?}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Not spinning: once the backlog is accepted (each accept costs a look at the socket
    // table), two quiet seconds at the limit cost a fraction of one core. The old accept
    // loop spun at 100% here for as long as the connections stayed.
    std::thread::sleep(Duration::from_secs(3));
    let before = cpu_ticks(child.0.id());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(child.0.id()) - before;
    assert!(used < 100, "the server burnt {used} ticks in ~2 s");
    // Connections that send nothing are closed once the header timeout passes.
    drop(held);
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let t = Instant::now();
    let mut buf = [0u8; 16];
    let n = idle.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    drop(child);
}

#[test]
fn the_token_comes_from_a_file_never_from_argv_and_logs_in_the_dashboard() {
    let Some(db) = fresh_db("sec_token") else {
        return;
    };
    let claude = temp_dir("sec-token");
    let token_file = claude.join("token");
    std::fs::write(&token_file, "tok-3f9a-very-secret\n").unwrap();
    let server = Server::start(
        &db,
        &claude,
        &["--token-file", token_file.to_str().unwrap()],
    );
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.child.id())).unwrap();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains("tok-3f9a"),
        "the token is not in ps"
    );
    let host = format!("Host: {}", server.addr);
    assert_eq!(raw(&server.addr, "GET", "/api/agents", &[&host], "").0, 401);
    assert_eq!(raw(&server.addr, "GET", "/metrics", &[&host], "").0, 401);
    for sneaky in [
        "/%61pi/agents",
        "//api/agents",
        "/api/agents/",
        "/%6detrics",
    ] {
        assert_eq!(
            raw(&server.addr, "GET", sneaky, &[&host], "").0,
            401,
            "{sneaky}"
        );
    }
    assert_eq!(raw(&server.addr, "GET", "/healthz", &[&host], "").0, 200);
    // The dashboard's files load, so that it can ask for the token.
    assert_eq!(raw(&server.addr, "GET", "/", &[&host], "").0, 200);
    let (status, _) = raw(
        &server.addr,
        "GET",
        "/api/agents",
        &[&host, "Authorization: Bearer tok-3f9a-very-secret"],
        "",
    );
    assert_eq!(status, 200);
    // A wrong token does not log in; the right one sets an HttpOnly, SameSite=Strict cookie.
    let json_ct = "Content-Type: application/json";
    let (status, _) = raw(
        &server.addr,
        "POST",
        "/api/login",
        &[&host, json_ct],
        r#"{"token": "guess"}"#,
    );
    assert_eq!(status, 401);
    let (status, answer) = raw(
        &server.addr,
        "POST",
        "/api/login",
        &[&host, json_ct],
        r#"{"token": "tok-3f9a-very-secret"}"#,
    );
    assert_eq!(status, 200, "{answer}");
    let cookie = answer
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .expect("a cookie")
        .to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    assert!(!cookie.contains("tok-3f9a"), "the cookie is not the token");
    let pair = cookie.split(';').next().unwrap();
    let (status, _) = raw(
        &server.addr,
        "GET",
        "/api/agents",
        &[&host, &format!("Cookie: {pair}")],
        "",
    );
    assert_eq!(status, 200);
    // The CLI reads the same file.
    let out = common::headspace()
        .args(["agents", "--addr", &server.addr, "--token-file"])
        .arg(&token_file)
        .env_remove("HEADSPACE_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.stop();
    // An empty or missing token file is a clear error at start.
    let empty = claude.join("empty-token");
    std::fs::write(&empty, "\n").unwrap();
    let out = common::headspace()
        .args(["serve", "--addr", "127.0.0.1:0", "--database-url", &db])
        .arg("--token-file")
        .arg(&empty)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is empty"));
}

#[test]
fn agent_list_previews_stay_small_whatever_the_turns_hold() {
    let Some(db) = fresh_db("sec_preview") else {
        return;
    };
    let claude = temp_dir("sec-preview");
    let server = Server::start(&db, &claude, &["--max-body", "2000000"]);
    let big = "x".repeat(1 << 20);
    for i in 0..20u64 {
        let s = SessionWriter::new(
            100 + i,
            Timestamp::parse_rfc3339("2026-11-22T05:00:00Z").unwrap(),
        );
        let body = hook(
            &s,
            &claude,
            &format!("%{}", 50 + i),
            "UserPromptSubmit",
            json!({ "prompt": big }),
        );
        assert_eq!(server.post("/hook/UserPromptSubmit", &body).0, 200);
    }
    let list = wait_for(Duration::from_secs(20), || {
        let (s, b) = server.get("/api/agents");
        let v: Value = serde_json::from_str(&b).ok()?;
        (s == 200 && v.as_array()?.len() == 20 && v[19]["turn_count"] == 1).then_some(b)
    })
    .expect("all agents");
    assert!(
        list.len() < 500_000,
        "20 MiB of prompts made a {} byte list",
        list.len()
    );
    let v: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v[0]["last_turn"]["truncated"], true);
    // Listing them again and again holds no copy of the texts (it made 1.1 GB before).
    for _ in 0..5 {
        assert_eq!(server.get("/api/agents").0, 200);
    }
    let peak_kb = proc_kb(server.child.id(), "VmHWM");
    assert!(peak_kb < 200 * 1024, "peak RSS {peak_kb} kB");
    // The whole text is still there, from the turn route.
    let id = v[0]["id"].as_u64().unwrap();
    let turns = server.json(&format!("/api/agents/{id}/turns"));
    assert_eq!(turns[0]["text"].as_str().unwrap().len(), 1 << 20);
    server.stop();
}

#[test]
fn the_page_and_the_stream_agree_on_where_the_stream_starts() {
    let Some(db) = fresh_db("sec_eventid") else {
        return;
    };
    let claude = temp_dir("sec-eventid");
    let server = Server::start(&db, &claude, &[]);
    let (_, answer) = raw(
        &server.addr,
        "GET",
        "/api/agents",
        &[&format!("Host: {}", server.addr), &bearer()],
        "",
    );
    let id: u64 = answer
        .lines()
        .find_map(|l| l.strip_prefix("x-last-event-id: "))
        .expect("the list says which event it reflects")
        .trim()
        .parse()
        .unwrap();
    assert!(id > 0);
    server.stop();
}
