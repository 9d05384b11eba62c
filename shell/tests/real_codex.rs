//! The real Codex CLI (npm `@openai/codex`, the version `make test` installs in `.cache/`) in
//! a real tmux pane, against a stand-in OpenAI Responses API of our own
//! (`testkit/model-api/standin_responses_api.py`), with Headspace's hooks installed by
//! `headspace hooks install --agent codex` (and trusted by it: Codex runs no other). Every
//! hook of the first exchange and then 40% of the hooks are refused on the way (a proxy in
//! front of the server answers them 503), and the server is SIGKILLed mid-conversation. The
//! agent exists from its process before any hook or line. A scripted conversation with a
//! shell tool call, two identical short prompts and an interrupted slow reply: every user
//! message and assistant text of the rollout is exactly one turn, none doubled, the agent's
//! kind is `codex`, and `wait` never returns before the reply is written.
//!
//! Codex runs here without its shared app-server daemon (`daemon_auto_start = false`): the
//! daemon copies its 424 MB binary into every fresh `CODEX_HOME`. The hooks' pane, which the
//! daemon gets wrong, is dropped by the server either way (the pane comes from the process).

mod common;
use common::real_client::*;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The Codex CLI, or `None` (skipped) when it is not installed; on CI it must be.
fn codex_bin() -> Option<PathBuf> {
    installed(
        "HEADSPACE_CODEX_BIN",
        ".cache/codex-0.171.0/node_modules/.bin/codex",
        "Codex CLI",
        "codex-cli",
    )
}

/// A Codex session in a tmux pane of its own server, configured as a user's would be
/// (a model provider, the folder trusted, commands run without asking).
struct Client {
    tmux: Tmux,
    pane: String,
    home: PathBuf,
}

impl Client {
    /// Writes `$CODEX_HOME/config.toml` under `root` for the stand-in at `api`; the
    /// `CODEX_HOME`.
    fn configure(root: &Path, api: &str) -> PathBuf {
        let home = root.join("codex");
        let project = root.join("project");
        let user = root.join("home");
        for d in [&home, &project, &user] {
            std::fs::create_dir_all(d).unwrap();
        }
        let home = std::fs::canonicalize(&home).unwrap();
        let project = std::fs::canonicalize(&project).unwrap();
        std::fs::write(
            home.join("config.toml"),
            format!(
                "model = \"stand-in\"\nmodel_provider = \"standin\"\napproval_policy = \"never\"\n\
                 sandbox_mode = \"danger-full-access\"\ncheck_for_update_on_startup = false\n\
                 web_search = \"disabled\"\n\n\
                 [model_providers.standin]\nname = \"Stand-in\"\nbase_url = \"http://{api}/v1\"\n\
                 wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n\
                 [analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n\
                 [features]\nplugins = false\nremote_plugin = false\napps = false\n\
                 in_app_updates = false\ndaemon_auto_start = false\n\n\
                 [projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                project.display()
            ),
        )
        .unwrap();
        // No network: the one request Codex makes on its own (a tip to show) fails at once
        // through a proxy that is not there; the stand-in is reached directly.
        std::fs::write(
            root.join("env.sh"),
            format!(
                "export HOME={user} CODEX_HOME={home}\n\
                 export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost\n\
                 export TERM=xterm-256color HEADSPACE_TOKEN_FILE={token}\n",
                user = user.display(),
                home = home.display(),
                token = test_token_file().display(),
            ),
        )
        .unwrap();
        home
    }

    /// Starts Codex in a new tmux server named `tmux`, configured by [`Client::configure`].
    fn launch(bin: &Path, root: &Path, tmux: &str, home: &Path) -> Client {
        let (tmux, pane) = start_in_tmux(&bin.display().to_string(), root, tmux);
        Client {
            tmux,
            pane,
            home: home.to_path_buf(),
        }
    }

    fn screen(&self) -> String {
        self.tmux.run(&["capture-pane", "-p", "-t", &self.pane])
    }

    /// Waits until the composer shows and no spinner runs.
    fn until_idle(&self, what: &str) {
        let idle = wait_for(Duration::from_secs(60), || {
            let s = self.screen();
            (s.contains("? for shortcuts") && !s.contains("esc to interrupt")).then_some(())
        });
        assert!(idle.is_some(), "{what}: never idle:\n{}", self.screen());
    }

    /// Types `text`, then Enter a moment later (Codex takes keys that come at once as a
    /// paste, where Enter is a new line).
    fn type_prompt(&self, text: &str) {
        self.tmux.run(&["send-keys", "-t", &self.pane, "-l", text]);
        std::thread::sleep(Duration::from_millis(500));
        self.tmux.run(&["send-keys", "-t", &self.pane, "Enter"]);
    }

    /// The rollout's lines, parsed (the one session's).
    fn rollout(&self) -> Vec<Value> {
        fn files(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    files(&p, out);
                } else if p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
                {
                    out.push(p);
                }
            }
        }
        let mut found = Vec::new();
        files(&self.home.join("sessions"), &mut found);
        found
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect()
    }

    /// The rollout's messages of `role` with text, as Codex wrote them (typed prompts only).
    fn messages(&self, role: &str) -> Vec<String> {
        self.rollout()
            .iter()
            .filter(|l| l["type"] == "response_item" && l["payload"]["type"] == "message")
            .filter(|l| l["payload"]["role"] == role)
            .filter(|l| {
                role != "user"
                    || l["payload"]["internal_chat_message_metadata_passthrough"]
                        ["content_item_kinds"]
                        == json!(["user.text"])
            })
            .filter_map(|l| {
                let text: Vec<&str> = l["payload"]["content"]
                    .as_array()?
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                Some(text.join("\n\n").trim().to_string()).filter(|t| !t.is_empty())
            })
            .collect()
    }

    /// Whether an assistant message of the rollout holds `text`.
    fn replied(&self, text: &str) -> bool {
        self.messages("assistant").iter().any(|m| m.contains(text))
    }
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

#[test]
fn the_real_codex_client_loses_and_doubles_nothing() {
    let Some(bin) = codex_bin() else { return };
    let Some(db) = fresh_db("real_codex") else {
        return;
    };
    let root = temp_dir("real-codex");
    let script = json!({
        "replies": [
            {"expect": "hello", "text": "Hello from the stand-in model."},
            {"text": "I will run it.", "shell": "echo standin-ran"},
            {"expect": "standin-ran", "text": "The command printed standin-ran."},
            {"text": "Yes, first.", "delay": 1},
            {"text": "Yes, second.", "delay": 1},
            {"text": "After the restart.", "delay": 1},
            {"text": "A very slow reply that is never finished, streamed a few letters a second.", "chunk": 2, "delay_ms": 700},
            {"text": "Back after the interrupt."},
            {"expect": "started from headspace", "text": "Started by Headspace."},
        ],
        "side_text": "Stand-in session",
        "fallback": {"text": "(script exhausted)"}
    });
    let (_api, api) = responses_api(&root, &script);
    let home = Client::configure(&root, &api);
    let claude = root.join("claude");
    std::fs::create_dir_all(&claude).unwrap();
    let tmux_name = format!("hs-codex-{}", std::process::id());
    let home_arg = home.display().to_string();
    // `headspace new --agent codex` starts Codex through this (its environment first).
    let wrapper = root.join("codex-here");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n. {}\nexec {} \"$@\"\n",
            root.join("env.sh").display(),
            bin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (wrapper_arg, root_arg) = (wrapper.display().to_string(), root.display().to_string());
    let extra = [
        "--codex-dir",
        home_arg.as_str(),
        "--tmux-socket",
        tmux_name.as_str(),
        "--pane-poll-seconds",
        "0.5",
        "--codex-command",
        wrapper_arg.as_str(),
        "--projects-root",
        root_arg.as_str(),
    ];
    let mut server = Server::start(&db, &claude, &extra);
    let addr = server.addr.clone();
    let proxy = Proxy::start(addr.clone());
    // Every hook of the first exchange is lost (SessionStart, the prompt's, Stop...).
    proxy.refuse_all.store(true, Relaxed);
    run_ok(
        headspace()
            .args(["hooks", "install", "--agent", "codex"])
            .args(["--url", &format!("http://{}", proxy.addr)])
            .arg("--settings")
            .arg(home.join("hooks.json")),
    );
    let client = Client::launch(&bin, &root, &tmux_name, &home);
    client.until_idle("the first screen");
    assert!(
        !client.screen().contains("Hooks need review"),
        "Codex does not trust the installed hooks:\n{}",
        client.screen()
    );
    let pane_ref = client.pane.replace('%', "%25");

    // The agent exists from its process alone: no hook arrived, no line is written.
    let agent = wait_for(Duration::from_secs(30), || {
        server.try_json(&format!("/api/agents/{pane_ref}"))
    });
    let Some(agent) = agent else {
        panic!(
            "no agent for {} before its first hook or line\n{}",
            client.pane,
            server.log()
        );
    };
    assert_eq!(agent["kind"], "codex", "{agent}");

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
    client.until_idle("before the prompt typed while the server is down");
    client.type_prompt("are you there");
    let replied = wait_for(Duration::from_secs(60), || {
        client.replied("After the restart.").then_some(())
    });
    assert!(replied.is_some(), "{}", client.screen());
    client.until_idle("after the restart's reply");
    server = Server::start_on(&db, &claude, &addr, &extra);

    // A slow reply, interrupted (Escape): no turn for what was never written.
    send(&server, &client.pane, "write slowly");
    let streaming = wait_for(Duration::from_secs(30), || {
        client.screen().contains("A very slow").then_some(())
    });
    assert!(streaming.is_some(), "{}", client.screen());
    client
        .tmux
        .run(&["send-keys", "-t", &client.pane, "Escape"]);
    let stopped = wait_for(Duration::from_secs(30), || {
        client.screen().contains("interrupted").then_some(())
    });
    assert!(stopped.is_some(), "{}", client.screen());
    client.until_idle("after the interrupt");
    send(&server, &client.pane, "and now");
    wait_replied(&server, &client, "Back after the interrupt.");

    // Every user message and assistant text of the rollout is one turn of this agent, none
    // doubled, none left over.
    let card = server.json(&format!("/api/agents/{pane_ref}"));
    assert_eq!(card["kind"], "codex", "{card}");
    let id = card["id"].as_u64().unwrap();
    audit_settles(&server, id, &log_before);
    let turns = server.json(&format!("/api/agents/{id}/turns?limit=200"));
    let turns = turns.as_array().unwrap();
    let texts = |actor: &str| texts_of(turns, actor);
    assert_eq!(
        texts("user"),
        client.messages("user"),
        "prompts, one turn each"
    );
    assert_eq!(
        texts("agent"),
        client.messages("assistant"),
        "replies, one turn each"
    );
    assert_eq!(
        texts("user").iter().filter(|p| *p == "yes").count(),
        2,
        "{:?}",
        texts("user")
    );
    let unclaimed: Vec<&Value> = turns.iter().filter(|t| t["entry_uuid"].is_null()).collect();
    assert!(unclaimed.is_empty(), "turns no line claimed: {unclaimed:?}");
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

    // Started from Headspace: `headspace new DIR --agent codex` with a first prompt.
    let project = std::fs::canonicalize(root.join("project")).unwrap();
    let out = headspace()
        .args(["new"])
        .arg(&project)
        .args(["--agent", "codex", "--prompt", "started from headspace"])
        .args(["--addr", &server.addr])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    let pane = said
        .split_whitespace()
        .find(|w| w.starts_with('%'))
        .unwrap_or_else(|| panic!("no pane in {said:?}"))
        .trim_end_matches(',')
        .to_string();
    let started = wait_for(Duration::from_secs(60), || {
        let card = server.try_json(&format!("/api/agents/{}", pane.replace('%', "%25")))?;
        (card["kind"] == "codex" && card["activity"] == "idle" && card["turn_count"].as_u64()? >= 2)
            .then_some(card)
    });
    assert!(
        started.is_some(),
        "the agent started in {pane}: {:?}\n{}",
        server.try_json(&format!("/api/agents/{}", pane.replace('%', "%25"))),
        server.log()
    );

    eprintln!(
        "turns {:?} / {:?}; hooks refused {}, forwarded {}",
        texts("user"),
        texts("agent"),
        proxy.refused.load(Relaxed),
        proxy.forwarded.load(Relaxed)
    );
    client.type_prompt("/quit");
}
