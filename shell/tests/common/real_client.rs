//! What the real-client tests share (`real_claude.rs`, `real_codex.rs`, `real_gemini.rs`): the
//! stand-in model APIs of `testkit/model-api`, and a proxy that loses hooks on their way to
//! the server.

use super::{headspace, wait_for, Server, Tmux};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A child process killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The stand-in Anthropic Messages API playing `script`; its address.
pub fn model_api(dir: &Path, script: &Value) -> (Killed, String) {
    stand_in_api("standin_model_api.py", dir, script)
}

/// The stand-in OpenAI Responses API (for Codex CLI) playing `script`; its address.
pub fn responses_api(dir: &Path, script: &Value) -> (Killed, String) {
    stand_in_api("standin_responses_api.py", dir, script)
}

/// The stand-in Gemini API (for Gemini CLI) playing `script`; its address.
pub fn gemini_api(dir: &Path, script: &Value) -> (Killed, String) {
    stand_in_api("standin_gemini_api.py", dir, script)
}

/// One of `testkit/model-api`'s stand-ins playing `script`; its address.
fn stand_in_api(program: &str, dir: &Path, script: &Value) -> (Killed, String) {
    let script_file = dir.join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let port_file = dir.join("api-port");
    let child = Command::new("python3")
        .arg(format!(
            "{}/../testkit/model-api/{program}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("--script")
        .arg(&script_file)
        .arg("--log")
        .arg(dir.join("api.jsonl"))
        .arg("--port-file")
        .arg(&port_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs the stand-in model API");
    let port = wait_for(Duration::from_secs(20), || {
        std::fs::read_to_string(&port_file)
            .ok()
            .filter(|p| !p.trim().is_empty())
    })
    .expect("the stand-in model API listens");
    (Killed(child), format!("127.0.0.1:{}", port.trim()))
}

/// A proxy in front of the server that answers every fifth hook's second and fourth of five
/// 503 (40% refused) and forwards the rest, one request per connection; with the server
/// down it answers 502. How many it refused and forwarded.
pub struct Proxy {
    /// Where it listens.
    pub addr: String,
    /// How many hooks it refused.
    pub refused: Arc<AtomicU64>,
    /// How many it forwarded.
    pub forwarded: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// While set, every hook is refused (the first exchange's, all lost).
    pub refuse_all: Arc<AtomicBool>,
}

impl Proxy {
    /// A proxy in front of `server`.
    pub fn start(server: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (refused, forwarded) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let refuse_all = Arc::new(AtomicBool::new(false));
        let (r, f, s, all) = (
            refused.clone(),
            forwarded.clone(),
            stop.clone(),
            refuse_all.clone(),
        );
        std::thread::spawn(move || {
            let seen = AtomicU64::new(0);
            for conn in listener.incoming() {
                if s.load(Relaxed) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                let n = seen.fetch_add(1, Relaxed);
                let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                let Some(request) = read_request(&mut conn) else {
                    continue;
                };
                if all.load(Relaxed) || n % 5 == 1 || n % 5 == 3 {
                    r.fetch_add(1, Relaxed);
                    let _ = conn.write_all(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    continue;
                }
                match forward(&server, &request) {
                    Some(answer) => {
                        f.fetch_add(1, Relaxed);
                        let _ = conn.write_all(&answer);
                    }
                    None => {
                        let _ = conn.write_all(
                            b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                }
            }
        });
        Proxy {
            addr,
            refused,
            forwarded,
            stop,
            refuse_all,
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        let _ = TcpStream::connect(&self.addr);
    }
}

/// One read, again after a caught signal (a socket with a read timeout is not restarted).
fn read_some(conn: &mut TcpStream, chunk: &mut [u8]) -> Option<usize> {
    loop {
        match conn.read(chunk) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            read => return read.ok(),
        }
    }
}

/// Where the head of the whole request at the start of `buf` ends and where its body does
/// (by its `Content-Length`), once all of it is there.
pub fn whole_request(buf: &[u8]) -> Option<(usize, usize)> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    (buf.len() >= head_end + len).then_some((head_end, head_end + len))
}

/// One whole request (head and body), with `Connection: close` put in its head.
fn read_request(conn: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let (head_end, end) = loop {
        if let Some(whole) = whole_request(&buf) {
            break whole;
        }
        let n = read_some(conn, &mut chunk)?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let kept: Vec<&str> = head
        .trim_end()
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .collect();
    let mut out = format!("{}\r\nConnection: close\r\n\r\n", kept.join("\r\n")).into_bytes();
    out.extend_from_slice(&buf[head_end..end]);
    Some(out)
}

/// The server's answer to `request`, or `None` when it is not there.
fn forward(server: &str, request: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(server).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(request).ok()?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).ok()?;
    (!answer.is_empty()).then_some(answer)
}

/// Waits up to 30 s for the audit of agent `id` to be clean (every line one turn of it);
/// fails with the audit, `log_before` (the log of a server that was killed) and the log.
pub fn audit_settles(server: &Server, id: u64, log_before: &str) {
    let settled = wait_for(Duration::from_secs(30), || {
        let audit = server.try_json(&format!("/api/agents/{id}/audit"))?;
        (audit["missing"].as_array()?.is_empty()
            && audit["doubled"].as_array()?.is_empty()
            && audit["misassigned"].as_array()?.is_empty())
        .then_some(audit)
    });
    assert!(
        settled.is_some(),
        "audit: {}\n{log_before}\n{}",
        server
            .try_json(&format!("/api/agents/{id}/audit"))
            .unwrap_or_default(),
        server.log()
    );
}

/// The texts of `actor`'s turns (`user`, `agent`) among `turns`, in conversation order.
pub fn texts_of(turns: &[Value], actor: &str) -> Vec<String> {
    let mut t: Vec<&Value> = turns.iter().filter(|t| t["actor"] == actor).collect();
    t.sort_by_key(|t| {
        (
            t["timestamp"].as_str().unwrap_or("").to_string(),
            t["id"].as_u64(),
        )
    });
    t.iter()
        .filter_map(|t| t["text"].as_str().map(str::to_string))
        .collect()
}

/// Starts a real client (`command`: its program and arguments, for `exec`) in a new 160×50
/// pane of the private tmux server `tmux`, in `root/project`, with the environment
/// `root/env.sh` sets: the server and the pane's id.
pub fn start_in_tmux(command: &str, root: &Path, tmux: &str) -> (Tmux, String) {
    let project = std::fs::canonicalize(root.join("project")).unwrap();
    let tmux = Tmux(tmux.to_string());
    let pane = tmux.run(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-x",
        "160",
        "-y",
        "50",
        "-c",
        project.to_str().unwrap(),
        &format!(
            "bash -c '. {}; exec {command}'",
            root.join("env.sh").display(),
        ),
    ]);
    (tmux, pane)
}

/// Waits up to `secs` for agent `agent`'s card to show `activity`; fails with the card and
/// `detail` (the server's log, the client's screen) when it does not.
pub fn until_activity(server: &Server, agent: &str, activity: &str, secs: u64, detail: &str) {
    let path = format!("/api/agents/{agent}");
    let shown = wait_for(Duration::from_secs(secs), || {
        (server.try_json(&path)?["activity"] == activity).then_some(())
    });
    assert!(
        shown.is_some(),
        "not {activity}: {:?}\n{detail}",
        server.try_json(&path)
    );
}

/// A real client installed by `make test` (`env` names it, else `default` under the
/// repository), or `None` (skipped, with a note) when it does not run; on CI it must.
pub fn installed(env: &str, default: &str, name: &str, make_target: &str) -> Option<PathBuf> {
    installed_with_home(env, default, name, make_target, None)
}

/// [`installed`], asking `--version` with `HOME` at `home` when given: for a client that
/// writes in its home even then (Gemini CLI leaves `~/.gemini/projects.json.*.tmp` files).
pub fn installed_with_home(
    env: &str,
    default: &str,
    name: &str,
    make_target: &str,
    home: Option<&Path>,
) -> Option<PathBuf> {
    let bin = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("{}/../{default}", env!("CARGO_MANIFEST_DIR"))));
    let mut version = Command::new(&bin);
    if let Some(home) = home {
        version.env("HOME", home);
    }
    let works = version
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} must be installed on CI (make test installs it): {}",
            bin.display()
        );
        eprintln!(
            "skipped: {name} is not installed at {} (make {make_target})",
            bin.display()
        );
        return None;
    }
    Some(bin)
}

/// `headspace send PANE TEXT` through `server`.
pub fn send(server: &Server, pane: &str, text: &str) {
    let out = headspace()
        .args(["send", pane, text, "--addr", &server.addr])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "send {text:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `headspace wait PANE` against `server`: it must not return before `reply` is written
/// (`replied` reads the client's transcript; `screen` shows the pane when it did).
pub fn wait_then_replied(
    server: &Server,
    pane: &str,
    reply: &str,
    replied: impl Fn(&str) -> bool,
    screen: impl Fn() -> String,
) {
    let started = Instant::now();
    let out = headspace()
        .args(["wait", pane, "--timeout", "90", "--addr", &server.addr])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "wait for {reply:?}: {}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    assert!(
        replied(reply),
        "wait returned after {:?}, before the reply {reply:?} was written:\n{}",
        started.elapsed(),
        screen()
    );
}
