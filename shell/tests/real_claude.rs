//! The real Claude Code client (npm `@anthropic-ai/claude-code`, the version `make test`
//! installs in `.cache/`) in a real tmux pane, against a stand-in model API of our own
//! (`testkit/model-api`), with Headspace's hooks installed by `headspace hooks install`:
//! over the command transport and over Claude Code's own HTTP transport, with every hook of
//! the first exchange and then 40% of the hooks refused on the way (a proxy in front of the
//! server answers them 503) and the server SIGKILLed mid-conversation. The agent exists from
//! its process before any hook or line: `wait` on its pane right after the first prompt. A scripted conversation with a shell tool call, two identical
//! short prompts and an interrupted slow reply: every conversational transcript line is
//! exactly one turn, none doubled, and `wait` never returns before the reply is written.

mod common;
use common::real_client::*;
use common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The API key the client is given (the stand-in checks nothing; Claude Code asks once
/// whether to use a key from the environment, approved in `.claude.json` by its last 20
/// characters).
const API_KEY: &str = "sk-ant-api03-standin-test-key-0123456789abcdefABCDEF";

/// The Claude Code binary, or `None` (skipped) when it is not installed; on CI it must be.
fn claude_bin() -> Option<PathBuf> {
    installed(
        "HEADSPACE_CLAUDE_BIN",
        ".cache/claude-code-2.1.332/node_modules/.bin/claude",
        "Claude Code",
        "claude-code",
    )
}

/// A Claude Code session in a tmux pane of its own server, configured as a user's would be:
/// onboarding done, the folder trusted, the API key approved, Bash allowed.
struct Client {
    tmux: Tmux,
    pane: String,
    config: PathBuf,
    session: String,
}

impl Client {
    /// Writes the client's configuration under `root` (before the hooks are installed into
    /// its settings): its config dir.
    fn configure(root: &Path, api: &str) -> PathBuf {
        let config = root.join("cfg");
        let project = root.join("project");
        let home = root.join("home");
        for d in [&config, &project, &home] {
            std::fs::create_dir_all(d).unwrap();
        }
        let project = std::fs::canonicalize(&project).unwrap();
        std::fs::write(
            config.join(".claude.json"),
            json!({
                "hasCompletedOnboarding": true,
                "lastOnboardingVersion": "2.1.332",
                "theme": "dark",
                "customApiKeyResponses": {"approved": [&API_KEY[API_KEY.len() - 20..]], "rejected": []},
                "projects": {project.display().to_string(): {"hasTrustDialogAccepted": true}},
            })
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            config.join("settings.json"),
            json!({"permissions": {"defaultMode": "default", "disableAutoMode": "disable", "allow": ["Bash"]}})
                .to_string(),
        )
        .unwrap();
        std::fs::create_dir_all(config.join("projects")).unwrap();
        let env = root.join("env.sh");
        std::fs::write(
            &env,
            format!(
                "export HOME={home} CLAUDE_CONFIG_DIR={config}\n\
                 export ANTHROPIC_BASE_URL=http://{api} ANTHROPIC_API_KEY={API_KEY}\n\
                 export DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1\n\
                 export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1\n\
                 export TERM=xterm-256color HEADSPACE_TOKEN_FILE={token}\n",
                home = home.display(),
                config = config.display(),
                token = test_token_file().display(),
            ),
        )
        .unwrap();
        config
    }

    /// Starts Claude Code in a new tmux server named `tmux`, configured by [`Client::configure`].
    fn launch(bin: &Path, root: &Path, tmux: &str, transport: &str) -> Client {
        Client::launch_counted(bin, root, tmux, transport, None)
    }

    /// [`Client::launch`], under `testkit/model-api/reaper.py` when `cpu` is given: the CPU
    /// the client and everything it starts used is written there when it exits.
    fn launch_counted(
        bin: &Path,
        root: &Path,
        tmux: &str,
        transport: &str,
        cpu: Option<&Path>,
    ) -> Client {
        let config = root.join("cfg");
        let session = format!(
            "5e550000-{:04x}-4000-8000-{:012x}",
            std::process::id() % 0xffff,
            if transport == "http" { 2 } else { 1 }
        );
        let command = format!(
            "{}{} --session-id {session} --model stand-in-model",
            cpu.map(|out| format!(
                "python3 {}/../testkit/model-api/reaper.py {} ",
                env!("CARGO_MANIFEST_DIR"),
                out.display()
            ))
            .unwrap_or_default(),
            bin.display()
        );
        let (tmux, pane) = start_in_tmux(&command, root, tmux);
        let _ = tmux.run(&["set", "-g", "focus-events", "on"]);
        Client {
            tmux,
            pane,
            config,
            session,
        }
    }

    fn screen(&self) -> String {
        self.tmux.run(&["capture-pane", "-p", "-t", &self.pane])
    }

    /// Waits until the prompt box shows and nothing runs.
    fn until_idle(&self, what: &str) {
        let idle = wait_for(Duration::from_secs(60), || {
            let s = self.screen();
            (s.contains('❯') && !s.contains("esc to interrupt")).then_some(())
        });
        assert!(idle.is_some(), "{what}: never idle:\n{}", self.screen());
    }

    /// Types `text` and Enter straight into the pane (as a user at the keyboard would).
    fn type_prompt(&self, text: &str) {
        self.tmux.run(&["send-keys", "-t", &self.pane, "-l", text]);
        self.tmux.run(&["send-keys", "-t", &self.pane, "Enter"]);
    }

    /// The transcript's lines, parsed.
    fn transcript(&self) -> Vec<Value> {
        let projects = self.config.join("projects");
        let Ok(dirs) = std::fs::read_dir(&projects) else {
            return Vec::new();
        };
        for d in dirs.flatten() {
            let f = d.path().join(format!("{}.jsonl", self.session));
            if let Ok(text) = std::fs::read_to_string(&f) {
                return text
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect();
            }
        }
        Vec::new()
    }

    /// Whether an assistant line of the transcript holds `text`.
    fn replied(&self, text: &str) -> bool {
        self.transcript().iter().any(|l| {
            l["type"] == "assistant"
                && l["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|b| b["text"].as_str().is_some_and(|t| t.contains(text)))
        })
    }
}

/// `headspace hooks install` into the client's settings, posting to `addr` over `transport`.
fn install_hooks_into(config: &Path, transport: &str, addr: &str) {
    run_ok(
        headspace()
            .args(["hooks", "install", "--transport", transport])
            .args(["--url", &format!("http://{addr}")])
            .arg("--settings")
            .arg(config.join("settings.json")),
    );
}

/// `headspace wait PANE` against `server`: it must not return before `reply` is written.
fn wait_replied(server: &Server, client: &Client, reply: &str) {
    wait_then_replied(
        server,
        &client.pane,
        reply,
        |r| client.replied(r),
        || client.screen(),
    );
}

fn conversation(transport: &str) {
    let Some(bin) = claude_bin() else { return };
    let Some(db) = fresh_db(&format!("real_claude_{transport}")) else {
        return;
    };
    let root = temp_dir(&format!("real-claude-{transport}"));
    let script = json!({
        "replies": [
            {"expect": "hello", "text": "Hello from the stand-in model."},
            {"text": "I will run it.", "tool_use": {"name": "Bash", "input": {"command": "echo standin-ran", "description": "Print a word"}}},
            {"expect": "standin-ran", "text": "The command printed standin-ran."},
            {"text": "Yes, first.", "delay": 1},
            {"text": "Yes, second.", "delay": 1},
            {"text": "After the restart.", "delay": 1},
            {"text": "A very slow reply that is never finished.", "delay": 30},
            {"text": "Back after the interrupt."},
        ],
        "side_text": "Stand-in session",
        "fallback": {"text": "(script exhausted)"}
    });
    let (_api, api) = model_api(&root, &script);
    let client_dir = root.join("client");
    let config = Client::configure(&client_dir, &api);
    let tmux_name = format!("hs-claude-{transport}-{}", std::process::id());
    let extra = [
        "--tmux-socket",
        tmux_name.as_str(),
        "--pane-poll-seconds",
        "0.5",
    ];
    let mut server = Server::start(&db, &config, &extra);
    let addr = server.addr.clone();
    let proxy = Proxy::start(addr.clone());
    // Every hook of the first exchange is lost (SessionStart, the prompt's, Stop...).
    proxy.refuse_all.store(true, Relaxed);
    install_hooks_into(&config, transport, &proxy.addr);
    let client = Client::launch(&bin, &client_dir, &tmux_name, transport);
    client.until_idle("the first screen");
    let pane_ref = client.pane.replace('%', "%25");

    // The agent exists from its process alone: no hook arrived, no line is written.
    let agent = wait_for(Duration::from_secs(30), || {
        server.try_json(&format!("/api/agents/{pane_ref}"))
    });
    assert!(
        agent.is_some(),
        "no agent for {} before its first hook or line\n{}",
        client.pane,
        server.log()
    );
    // The first exchange sent to the pane, `wait` on it at once: both know the agent, and
    // `wait` never answers before the reply is written. (A prompt typed at the keyboard
    // shows on the screen only a moment after Enter, 150 ms to over 300 ms here: nothing
    // can tell it from an idle screen before that; the restart below types one.)
    send(&server, &client.pane, "hello");
    wait_replied(&server, &client, "Hello from the stand-in model.");
    client.until_idle("after the first reply");
    proxy.refuse_all.store(false, Relaxed);

    // A tool call, sent through the server.
    send(&server, &client.pane, "run the command");
    wait_replied(&server, &client, "The command printed standin-ran.");

    // Two identical short prompts: two turns.
    send(&server, &client.pane, "yes");
    wait_replied(&server, &client, "Yes, first.");
    send(&server, &client.pane, "yes");
    wait_replied(&server, &client, "Yes, second.");

    // The server SIGKILLed; a prompt typed while it is down; then it is back on its port.
    let log_before = server.log();
    server.kill();
    client.type_prompt("are you there");
    let replied = wait_for(Duration::from_secs(60), || {
        client.replied("After the restart.").then_some(())
    });
    assert!(replied.is_some(), "{}", client.screen());
    client.until_idle("after the restart's reply");
    server = Server::start_on(&db, &config, &addr, &extra);

    // A slow reply, interrupted (Escape): no turn for what was never written.
    send(&server, &client.pane, "write slowly");
    let busy = wait_for(Duration::from_secs(30), || {
        client.screen().contains("esc to interrupt").then_some(())
    });
    assert!(busy.is_some(), "{}", client.screen());
    client
        .tmux
        .run(&["send-keys", "-t", &client.pane, "Escape"]);
    client.until_idle("after the interrupt");
    send(&server, &client.pane, "and now");
    wait_replied(&server, &client, "Back after the interrupt.");

    // Every conversational line is one turn of this agent, none doubled, none left over.
    let id = server.json(&format!("/api/agents/{pane_ref}"))["id"]
        .as_u64()
        .unwrap();
    audit_settles(&server, id, &log_before);
    let turns = server.json(&format!("/api/agents/{id}/turns"));
    let turns = turns.as_array().unwrap();
    let unclaimed: Vec<&Value> = turns.iter().filter(|t| t["entry_uuid"].is_null()).collect();
    assert!(unclaimed.is_empty(), "turns no line claimed: {unclaimed:?}");
    let prompts: Vec<&str> = turns
        .iter()
        .filter(|t| t["actor"] == "user")
        .filter_map(|t| t["text"].as_str())
        .collect();
    assert_eq!(
        prompts.iter().filter(|p| **p == "yes").count(),
        2,
        "{prompts:?}"
    );
    assert!(
        !turns.iter().any(|t| t["text"]
            .as_str()
            .is_some_and(|x| x.contains("never finished"))),
        "a turn for a reply that was never written"
    );
    assert!(
        proxy.refused.load(Relaxed) > 0 && proxy.forwarded.load(Relaxed) > 0,
        "the proxy refused {} and forwarded {} hooks",
        proxy.refused.load(Relaxed),
        proxy.forwarded.load(Relaxed)
    );
    client.type_prompt("/exit");
}

#[test]
fn the_real_client_over_command_hooks_loses_and_doubles_nothing() {
    conversation("command");
}

#[test]
fn the_real_client_over_http_hooks_loses_and_doubles_nothing() {
    conversation("http");
}

/// When each `turn_created` text reached an SSE reader of `addr`.
fn turn_arrivals(addr: &str) -> Arrivals {
    use std::io::BufRead;
    let seen: Arrivals = Arc::default();
    let sink = seen.clone();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        format!(
            "GET /api/events HTTP/1.1\r\nHost: {addr}\r\n{}\r\n\r\n",
            bearer()
        )
        .as_bytes(),
    )
    .unwrap();
    std::thread::spawn(move || {
        let mut created = false;
        for line in std::io::BufReader::new(s).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("event: ") {
                created = line == "event: turn_created";
            } else if let Some(data) = line.strip_prefix("data: ") {
                if let (true, Ok(v)) = (created, serde_json::from_str::<Value>(data)) {
                    if let Some(t) = v["text"].as_str() {
                        sink.lock()
                            .unwrap()
                            .entry(t.to_string())
                            .or_insert_with(|| (Instant::now(), SystemTime::now()));
                    }
                }
            }
        }
    });
    seen
}

/// When each `turn_created` text was first read from the SSE stream (both clocks: typed
/// prompts are timed on the monotonic one, fired hooks on the wall clock their stamps use).
type Arrivals = Arc<std::sync::Mutex<std::collections::HashMap<String, (Instant, SystemTime)>>>;

/// When each prompt's hook was fired, by prompt text.
type Fired = Arc<std::sync::Mutex<std::collections::HashMap<String, SystemTime>>>;

/// A relay between the client's hooks and the server at `server` that notes when each
/// prompt hook was fired: for an HTTP hook, the moment its request's first bytes reached the
/// relay (Claude Code sends one request at a time per connection, so a request's start is
/// the first read after the previous request ended); for a command hook, the forwarder's own
/// stamp (`emitted_at`, taken as it starts, before it hands the post to its detached copy).
/// The bytes pass through unchanged, kept-alive connections and all. Returns its address.
fn hook_clock(server: &str) -> (String, Fired) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let fired: Fired = Arc::default();
    let (server, sink) = (server.to_string(), fired.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut from_client) = conn else { continue };
            let Ok(mut to_server) = TcpStream::connect(&server) else {
                continue;
            };
            let _ = (from_client.set_nodelay(true), to_server.set_nodelay(true));
            let (mut back_from, mut back_to) = (
                to_server.try_clone().unwrap(),
                from_client.try_clone().unwrap(),
            );
            std::thread::spawn(move || std::io::copy(&mut back_from, &mut back_to));
            let sink = sink.clone();
            std::thread::spawn(move || {
                use std::io::Read;
                let (mut pending, mut started) = (Vec::new(), SystemTime::now());
                let mut chunk = [0u8; 16 * 1024];
                loop {
                    let n = match from_client.read(&mut chunk) {
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if pending.is_empty() {
                        started = SystemTime::now();
                    }
                    pending.extend_from_slice(&chunk[..n]);
                    if to_server.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                    while let Some((head_end, used)) = whole_request(&pending) {
                        let body = pending[head_end..used].to_vec();
                        let hook: Value = serde_json::from_slice(&body).unwrap_or_default();
                        if let (Some("UserPromptSubmit"), Some(prompt)) =
                            (hook["hook_event_name"].as_str(), hook["prompt"].as_str())
                        {
                            let at = hook["emitted_at"]
                                .as_str()
                                .and_then(headspace_core::Timestamp::parse_rfc3339)
                                .map(|t| SystemTime::UNIX_EPOCH + Duration::from_millis(t.0 as u64))
                                .unwrap_or(started);
                            sink.lock().unwrap().insert(prompt.to_string(), at);
                        }
                        pending.drain(..used);
                        started = SystemTime::now();
                    }
                }
            });
        }
    });
    (addr, fired)
}

/// The CPU seconds the client and everything it started have used so far, from the reaper it
/// runs under (`SIGUSR1` makes it write `CPU_FILE.snap`; see `testkit/model-api/reaper.py`).
fn cpu_snapshot(client: &Client, cpu_file: &Path) -> f64 {
    let snap = PathBuf::from(format!("{}.snap", cpu_file.display()));
    let _ = std::fs::remove_file(&snap);
    let reaper = client
        .tmux
        .run(&["display-message", "-p", "-t", &client.pane, "#{pane_pid}"]);
    let pid: i32 = reaper.trim().parse().expect("the pane's process id");
    // SAFETY: kill has no memory preconditions; the pane's process is the reaper.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    wait_for(Duration::from_secs(10), || {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&snap).ok()?).ok()?;
        Some(v["user_s"].as_f64()? + v["system_s"].as_f64()?)
    })
    .expect("the reaper writes what the client used so far")
}

/// What one transport costs the agent's machine and how soon its turns show.
struct Figures {
    cpu_s: f64,
    events: u64,
    /// Prompt typed → its turn on the SSE stream.
    latencies_ms: Vec<f64>,
    /// Prompt hook fired → its turn on the SSE stream.
    fired_ms: Vec<f64>,
}

/// Runs `prompts` prompts, each with one shell tool call, through the real client with
/// `transport` hooks (`none`: no hooks): four hook events each (prompt, tool before and after,
/// Stop).
fn bench_transport(bin: &Path, transport: &str, prompts: usize) -> Figures {
    let db = fresh_db(&format!("real_bench_{transport}")).unwrap();
    let root = temp_dir(&format!("real-bench-{transport}"));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let mut replies = Vec::new();
    for i in 0..prompts {
        replies.push(json!({"tool_use": {"name": "Bash", "input": {"command": "true", "description": "Nothing"}}}));
        replies.push(json!({"text": format!("done {i}")}));
    }
    let (_api, api) = model_api(&root, &json!({"replies": replies, "side_text": "Bench"}));
    let client_dir = root.join("client");
    let config = Client::configure(&client_dir, &api);
    let tmux_name = format!("hs-bench-{transport}-{}", std::process::id());
    let server = Server::start(&db, &config, &["--tmux-socket", tmux_name.as_str()]);
    let (clock, fired) = hook_clock(&server.addr);
    match transport {
        "none" => {}
        // Claude Code's own work for a hook, with nothing of Headspace's: the same command
        // hooks, each running `true`.
        "noop" => {
            install_hooks_into(&config, "command", &clock);
            let path = config.join("settings.json");
            let mut v: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for groups in v["hooks"].as_object_mut().unwrap().values_mut() {
                for group in groups.as_array_mut().unwrap() {
                    for hook in group["hooks"].as_array_mut().unwrap() {
                        hook["command"] = json!("true");
                    }
                }
            }
            std::fs::write(&path, v.to_string()).unwrap();
        }
        _ => install_hooks_into(&config, transport, &clock),
    }
    let seen = turn_arrivals(&server.addr);
    let cpu_file = root.join("cpu.json");
    let client = Client::launch_counted(bin, &client_dir, &tmux_name, transport, Some(&cpu_file));
    client.until_idle("the first screen");
    // The CPU of the prompts only: the client's start and exit vary by a second or more from
    // run to run, more than all its hooks cost.
    let cpu_before = cpu_snapshot(&client, &cpu_file);
    let (mut latencies_ms, mut fired_ms) = (Vec::new(), Vec::new());
    for i in 0..prompts {
        let text = format!("bench prompt {i}");
        let typed = Instant::now();
        client.type_prompt(&text);
        let done = wait_for(Duration::from_secs(60), || {
            client.replied(&format!("done {i}")).then_some(())
        });
        assert!(
            done.is_some(),
            "{transport}: prompt {i} never answered:\n{}",
            client.screen()
        );
        client.until_idle("after a bench prompt");
        if let Some((at, wall)) = seen.lock().unwrap().get(&text) {
            latencies_ms.push(at.duration_since(typed).as_secs_f64() * 1000.0);
            if let Some(hook) = fired.lock().unwrap().get(&text) {
                let ms = |t: &SystemTime| {
                    t.duration_since(SystemTime::UNIX_EPOCH)
                        .unwrap()
                        .as_secs_f64()
                        * 1000.0
                };
                fired_ms.push(ms(wall) - ms(hook));
            }
        }
    }
    let cpu = cpu_snapshot(&client, &cpu_file) - cpu_before;
    client.type_prompt("/exit");
    // Gone before the next run starts: the reaper writes its file once the client exited.
    wait_for(Duration::from_secs(30), || cpu_file.exists().then_some(()))
        .expect("the client exits");
    latencies_ms.sort_by(f64::total_cmp);
    fired_ms.sort_by(f64::total_cmp);
    Figures {
        fired_ms,
        cpu_s: cpu,
        events: if transport == "none" {
            0
        } else {
            4 * prompts as u64
        },
        latencies_ms,
    }
}

/// `make bench`: side by side in one run, the real client with no hooks, command hooks and
/// HTTP hooks: the CPU each hook event costs the agent's machine outside Headspace's server
/// (the client's own and every process it starts, counted by a subreaper), how long a prompt
/// hook takes from fired to a turn on the SSE stream (p50, p99; see [`hook_clock`]), and how
/// long a typed prompt takes to get there (the client's own time before its hook included).
#[test]
#[ignore = "a benchmark: make bench"]
fn real_client_hook_transports() {
    let Some(bin) = claude_bin() else { return };
    if cluster_url().is_none() {
        return;
    }
    let prompts = 20;
    // Three rounds, alternated: the client's own CPU varies from run to run (by a few tenths
    // of a second in 9 s), and the least of each transport's three is the one least
    // disturbed; the latencies of all three count.
    const ROUNDS: usize = 3;
    let fewer = |a: Figures, b: Figures| {
        let mut latencies_ms = [a.latencies_ms, b.latencies_ms].concat();
        latencies_ms.sort_by(f64::total_cmp);
        let mut fired_ms = [a.fired_ms, b.fired_ms].concat();
        fired_ms.sort_by(f64::total_cmp);
        Figures {
            cpu_s: a.cpu_s.min(b.cpu_s),
            events: a.events,
            latencies_ms,
            fired_ms,
        }
    };
    let mut best: [Option<Figures>; 4] = [None, None, None, None];
    for _ in 0..ROUNDS {
        for (i, t) in ["none", "noop", "command", "http"].iter().enumerate() {
            let f = bench_transport(&bin, t, prompts);
            best[i] = Some(match best[i].take() {
                Some(b) => fewer(b, f),
                None => f,
            });
        }
    }
    let [none, noop, command, http] = best.map(Option::unwrap);
    let per_event = |f: &Figures| (f.cpu_s - none.cpu_s).max(0.0) * 1000.0 / f.events as f64;
    let pct_of = |v: &Vec<f64>, p: f64| {
        if v.is_empty() {
            f64::NAN
        } else {
            v[((v.len() - 1) as f64 * p).round() as usize]
        }
    };
    let pct = |f: &Figures, p: f64| pct_of(&f.latencies_ms, p);
    let fired = |f: &Figures, p: f64| pct_of(&f.fired_ms, p);
    println!("real client, {prompts} prompts of one tool call each (4 hook events a prompt), best of {ROUNDS} runs");
    for (name, f) in [
        ("none", &none),
        ("noop", &noop),
        ("command", &command),
        ("http", &http),
    ] {
        println!(
            "  {name:<8} client CPU {:.2} s; prompt typed → turn on SSE p50 {:.0} ms, p99 {:.0} ms ({} seen); prompt hook fired → turn on SSE p50 {:.1} ms, p99 {:.1} ms ({} seen)",
            f.cpu_s,
            pct(f, 0.5),
            pct(f, 0.99),
            f.latencies_ms.len(),
            fired(f, 0.5),
            fired(f, 0.99),
            f.fired_ms.len()
        );
    }
    let (noop_ms, cmd_ms, http_ms) = (per_event(&noop), per_event(&command), per_event(&http));
    let beyond = |ms: f64| (ms - noop_ms).max(0.0);
    println!(
        "  CPU per hook event: command {cmd_ms:.2} ms, http {http_ms:.2} ms ({:.2}×); Claude Code's own work for a hook (a `true` command hook) {noop_ms:.2} ms; beyond it: command {:.2} ms, http {:.2} ms",
        http_ms / cmd_ms,
        beyond(cmd_ms),
        beyond(http_ms)
    );
    table_row(
        "real client: CPU per hook event, HTTP vs command",
        &format!(
            "{http_ms:.2} vs {cmd_ms:.2} ms = {:.2}× (Claude Code's own work for any hook, a `true` command hook: {noop_ms:.2} ms)",
            http_ms / cmd_ms
        ),
        "≤ 0.2×",
        Some(http_ms <= 0.2 * cmd_ms),
    );
    table_row(
        "real client: CPU per hook event beyond a `true` hook's, HTTP vs command",
        &format!(
            "{:.2} vs {:.2} ms (the command hook's two process starts; the HTTP hook's post)",
            beyond(http_ms),
            beyond(cmd_ms)
        ),
        "—",
        None,
    );
    let p99 = fired(&http, 0.99);
    let seen_all = http.fired_ms.len() == ROUNDS * prompts;
    table_row(
        "real client: prompt hook fired → turn on SSE p99, HTTP hooks",
        &format!(
            "{p99:.1} ms (p50 {:.1} ms; {} of {} seen; command hooks p99 {:.1} ms from the forwarder's stamp)",
            fired(&http, 0.5),
            http.fired_ms.len(),
            ROUNDS * prompts,
            fired(&command, 0.99)
        ),
        "≤ 20 ms",
        Some(p99 <= 20.0 && seen_all),
    );
    table_row(
        "real client: prompt typed → turn on SSE p99, HTTP hooks",
        &format!(
            "{:.0} ms (p50 {:.0} ms; command hooks p99 {:.0} ms; no hooks p99 {:.0} ms): the client's own time from Enter to its hook included",
            pct(&http, 0.99),
            pct(&http, 0.5),
            pct(&command, 0.99),
            pct(&none, 0.99)
        ),
        "—",
        None,
    );
}
