//! The real Gemini CLI (npm `@google/gemini-cli`, the version `make test` installs in
//! `.cache/`) in a real tmux pane, against a stand-in Gemini API of our own
//! (`testkit/model-api/standin_gemini_api.py`), with Headspace's hooks installed by
//! `headspace hooks install --agent gemini` into its `settings.json` (Gemini runs them only in
//! a trusted folder: the project is trusted in `trustedFolders.json`). Every hook of the first
//! exchange and then 40% of the hooks are refused on the way (a proxy in front of the server
//! answers them 503), and the server is SIGKILLed mid-conversation. A scripted conversation
//! with a shell tool call, two identical short prompts, a denied approval (which rewrites
//! the chat file with copies of every earlier message under new ids, and ends the turn
//! without a hook) and a slow reply interrupted by Escape while it streams (Gemini writes no
//! reply line for it, only `Request cancelled.`: its prompt is a turn, the reply none): every
//! prompt and reply is exactly one turn, in order, none doubled, the agent's kind is
//! `gemini`, it is idle after the interrupt and at the end, and `wait` never returns before
//! the reply is written, nor, on a slow reply, before it is a turn.
//!
//! The agent exists from its process before any hook. The tool call runs `echo`, which
//! Gemini runs without asking; the denied one (`touch`) asks. Gemini CLI 0.61 quirks the
//! driving minds (docs/research/gemini-cli-0.61.md): `CI=true` in its environment makes it
//! headless (it exits at once), so it is unset in the pane; a `?` typed in one burst is lost
//! (no prompt here has one); Enter comes a moment after the text.

mod common;
use common::real_client::*;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The Gemini CLI, or `None` (skipped) when it is not installed; on CI it must be. Asked for
/// its version in a throwaway home (it writes in `~/.gemini` even then).
fn gemini_bin(root: &Path) -> Option<PathBuf> {
    let home = root.join("version-home");
    std::fs::create_dir_all(&home).unwrap();
    installed_with_home(
        "HEADSPACE_GEMINI_BIN",
        ".cache/gemini-0.61.0/node_modules/.bin/gemini",
        "Gemini CLI",
        "gemini-cli",
        Some(home.as_path()),
    )
}

/// A Gemini CLI session in a tmux pane of its own server, configured as a user's would be
/// (an API key, the model pinned, the folder trusted, no update checks or usage statistics).
struct Client {
    tmux: Tmux,
    pane: String,
    /// Its `~/.gemini`.
    home: PathBuf,
}

impl Client {
    /// Writes `$HOME/.gemini/settings.json` and `trustedFolders.json` under `root` for the
    /// stand-in at `api`; the `.gemini` folder (what `serve --gemini-dir` reads).
    fn configure(root: &Path, api: &str) -> PathBuf {
        let user = root.join("home");
        let project = root.join("project");
        let home = user.join(".gemini");
        for d in [&home, &project] {
            std::fs::create_dir_all(d).unwrap();
        }
        let home = std::fs::canonicalize(&home).unwrap();
        let project = std::fs::canonicalize(&project).unwrap();
        // `model.name` pinned: no router call before each prompt. No policy file: `echo` runs
        // without asking (a "known safe" command), `touch` asks.
        std::fs::write(
            home.join("settings.json"),
            serde_json::to_string_pretty(&json!({
                "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": true}},
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 1},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                "ide": {"enabled": false, "hasSeenNudge": true},
                "ui": {"theme": "Default"},
                "hooksConfig": {"enabled": true},
                "model": {"name": "gemini-2.5-pro"},
            }))
            .unwrap(),
        )
        .unwrap();
        std::fs::write(
            home.join("trustedFolders.json"),
            json!({project.display().to_string(): "TRUST_FOLDER"}).to_string(),
        )
        .unwrap();
        // No network: the stand-in is reached directly, anything else fails at once through a
        // proxy that is not there. `CI=true` (or `GITHUB_ACTIONS=true`) would make it headless.
        std::fs::write(
            root.join("env.sh"),
            format!(
                "unset CI GITHUB_ACTIONS GOOGLE_API_KEY GOOGLE_CLOUD_PROJECT GOOGLE_GENAI_USE_VERTEXAI \
                 GOOGLE_GENAI_USE_GCA GEMINI_CLI_HOME GEMINI_CLI_TRUST_WORKSPACE GEMINI_MODEL\n\
                 export HOME={user} GEMINI_API_KEY=standin-test-key GOOGLE_GEMINI_BASE_URL=http://{api}\n\
                 export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost\n\
                 export TERM=xterm-256color HEADSPACE_TOKEN_FILE={token}\n",
                user = std::fs::canonicalize(&user).unwrap().display(),
                token = test_token_file().display(),
            ),
        )
        .unwrap();
        home
    }

    /// Starts Gemini CLI in a new tmux server named `tmux`, configured by
    /// [`Client::configure`].
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

    /// The window title the CLI sets: `◇  Ready (project)` when idle, `✦  Working… (…)`,
    /// `✋  Action Required (…)`.
    fn title(&self) -> String {
        self.tmux
            .run(&["display-message", "-p", "-t", &self.pane, "#{pane_title}"])
    }

    /// Waits until the empty composer shows, the title says ready and no spinner runs.
    fn until_idle(&self, what: &str) {
        let idle = wait_for(Duration::from_secs(60), || {
            let s = self.screen();
            (self.title().contains("Ready")
                && s.contains("Type your message")
                && !s.contains("esc to cancel"))
            .then_some(())
        });
        assert!(
            idle.is_some(),
            "{what}: never idle (title {:?}):\n{}",
            self.title(),
            self.screen()
        );
    }

    /// Types `text`, then Enter a moment later (keys that come at once are taken before the
    /// input box has them). `text` has no `?` (one typed in a burst is lost).
    fn type_prompt(&self, text: &str) {
        self.tmux.run(&["send-keys", "-t", &self.pane, "-l", text]);
        std::thread::sleep(Duration::from_millis(500));
        self.tmux.run(&["send-keys", "-t", &self.pane, "Enter"]);
    }

    /// The chat files' lines, parsed (`~/.gemini/tmp/<project>/chats/session-*.jsonl`; one
    /// session here).
    fn chat(&self) -> Vec<Value> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.home.join("tmp"))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|project| {
                std::fs::read_dir(project.path().join("chats"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|f| f.path())
            })
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("session-"))
                    && p.extension().is_some_and(|e| e == "jsonl")
            })
            .collect();
        files.sort();
        files
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

    /// The session's id (the chat file's first line).
    fn session_id(&self) -> Option<String> {
        self.chat()
            .iter()
            .find_map(|l| l["sessionId"].as_str().map(str::to_string))
    }

    /// The ids of the chat file's `gemini` messages whose text holds `text` (a message is
    /// written again under its id when its tool calls are added; the copies a denial writes
    /// have new ids).
    fn reply_ids(&self, text: &str) -> std::collections::BTreeSet<String> {
        self.chat()
            .iter()
            .filter(|l| l["type"] == "gemini")
            .filter(|l| {
                let whole = match &l["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join(""),
                    _ => String::new(),
                };
                whole.contains(text)
            })
            .filter_map(|l| l["id"].as_str().map(str::to_string))
            .collect()
    }

    /// How many turns the chat file says were cancelled (`info "Request cancelled."`: an
    /// Escape while busy, a denied approval).
    fn cancellations(&self) -> usize {
        self.chat()
            .iter()
            .filter(|l| {
                l["type"] == "info"
                    && l["content"].as_str().map(str::trim) == Some("Request cancelled.")
            })
            .count()
    }

    /// Whether a `gemini` message of the chat file holds `text`.
    fn replied(&self, text: &str) -> bool {
        !self.reply_ids(text).is_empty()
    }

    /// Waits until the chat file holds the reply `text`.
    fn until_replied(&self, text: &str) {
        let replied = wait_for(Duration::from_secs(60), || self.replied(text).then_some(()));
        assert!(replied.is_some(), "no reply {text:?}:\n{}", self.screen());
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

/// [`wait_replied`], and once `wait` returns the reply is already one of the agent's turns:
/// it did not answer while the agent was still working (asked at once, not polled).
fn wait_turned(server: &Server, client: &Client, reply: &str) {
    wait_replied(server, client, reply);
    let pane_ref = client.pane.replace('%', "%25");
    let turns = server.json(&format!("/api/agents/{pane_ref}/turns?limit=200"));
    let turned = turns.as_array().is_some_and(|list| {
        list.iter()
            .any(|t| t["actor"] == "agent" && t["text"].as_str() == Some(reply))
    });
    assert!(
        turned,
        "wait returned before the reply {reply:?} was a turn: {turns}\n{}",
        server.log()
    );
}

#[test]
fn the_real_gemini_client_loses_and_doubles_nothing() {
    let root = temp_dir("real-gemini");
    let Some(bin) = gemini_bin(&root) else { return };
    let Some(db) = fresh_db("real_gemini") else {
        return;
    };
    // The prompts typed (at the keyboard or by `headspace send`) and the replies, in order.
    let prompts = [
        "hello",
        "run the command",
        "yes",
        "yes",
        "are you there",
        "touch it",
        "write slowly",
        "and now",
    ];
    let replies = [
        "Hello from the stand-in model.",
        "I will run it.",
        "The command printed standin-ran.",
        "Yes, first.",
        "Yes, second.",
        "After the restart.",
        "I will touch a file.",
        "Back after the interrupt.",
    ];
    // The interrupted reply: 14 pieces of 6 characters, 0.4 s apart (5 s in all); Escape
    // comes once its first 18 characters show. Never written, so never a turn.
    // About 20 s of streaming if nothing cut it: room for a loaded machine to see it run
    // before Escape; Escape ends it, so the test does not wait for it.
    let slow = "This reply streams slowly, a few letters at a time, until Escape cuts it short; \
                it goes on for long enough that a busy machine still sees it streaming, and it \
                is never meant to reach its end, which nobody should ever read in a transcript.";
    let slow_shown = &slow[..18];
    let script = json!({
        "replies": [
            {"expect": "hello", "text": replies[0]},
            {"expect": "run the command", "text": replies[1],
             "shell": {"command": "echo standin-ran", "description": "Print a word"}},
            {"expect": "standin-ran", "text": replies[2]},
            {"expect": "yes", "text": replies[3], "delay": 1},
            {"expect": "yes", "text": replies[4], "delay": 1},
            {"expect": "are you there", "text": replies[5], "delay": 1},
            {"expect": "touch it", "text": replies[6],
             "shell": {"command": "touch denied-marker.txt", "description": "Create a marker file"}},
            {"expect": "write slowly", "text": slow, "chunk": 6, "delay_ms": 400},
            // A slower reply (1 s, then 7 pieces 0.25 s apart) for `wait`.
            {"expect": "and now", "text": replies[7], "delay": 1, "chunk": 4, "delay_ms": 250},
        ],
        "side_text": "Stand-in session",
        "fallback": {"text": "(script exhausted)"}
    });
    let (_api, api) = gemini_api(&root, &script);
    let home = Client::configure(&root, &api);
    let (claude, codex) = (root.join("claude"), root.join("codex"));
    for d in [&claude, &codex] {
        std::fs::create_dir_all(d).unwrap();
    }
    let tmux_name = format!("hs-gemini-{}", std::process::id());
    let (home_arg, codex_arg) = (home.display().to_string(), codex.display().to_string());
    let extra = [
        "--gemini-dir",
        home_arg.as_str(),
        "--codex-dir",
        codex_arg.as_str(),
        "--tmux-socket",
        tmux_name.as_str(),
        "--pane-poll-seconds",
        "0.5",
    ];
    let mut server = Server::start(&db, &claude, &extra);
    let addr = server.addr.clone();
    let proxy = Proxy::start(addr.clone());
    // Every hook of the first exchange is lost (SessionStart, the prompt's, AfterAgent).
    proxy.refuse_all.store(true, Relaxed);
    let settings = home.join("settings.json");
    run_ok(
        headspace()
            .args(["hooks", "install", "--agent", "gemini"])
            .args(["--url", &format!("http://{}", proxy.addr)])
            .arg("--settings")
            .arg(&settings),
    );
    // Merged into the user's settings; none of the hooks Gemini awaits per streamed chunk
    // or per model call.
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        merged["security"]["auth"]["selectedType"], "gemini-api-key",
        "{merged}"
    );
    for event in [
        "SessionStart",
        "SessionEnd",
        "BeforeAgent",
        "AfterAgent",
        "BeforeTool",
        "AfterTool",
        "Notification",
    ] {
        assert!(
            merged["hooks"][event].is_array(),
            "no {event} hook: {merged}"
        );
    }
    for event in ["AfterModel", "BeforeModel", "BeforeToolSelection"] {
        assert!(merged["hooks"][event].is_null(), "a {event} hook: {merged}");
    }
    let client = Client::launch(&bin, &root, &tmux_name, &home);
    client.until_idle("the first screen");
    let pane_ref = client.pane.replace('%', "%25");
    // Gemini ran the hooks (it runs none in a folder it does not trust): SessionStart came,
    // and was lost.
    let ran = wait_for(Duration::from_secs(10), || {
        (proxy.refused.load(Relaxed) > 0).then_some(())
    });
    assert!(
        ran.is_some(),
        "no SessionStart hook: is the folder trusted?\n{}",
        client.screen()
    );

    // The agent exists from its process alone: no hook arrived (its chat file is written
    // at start, before any prompt).
    let agent = wait_for(Duration::from_secs(30), || {
        server.try_json(&format!("/api/agents/{pane_ref}"))
    });
    let Some(agent) = agent else {
        panic!(
            "no agent for {} before its first hook\n{}",
            client.pane,
            server.log()
        );
    };
    assert_eq!(agent["kind"], "gemini", "{agent}");

    // The first exchange sent to the pane, `wait` on it at once, with none of its hooks.
    send(&server, &client.pane, prompts[0]);
    wait_replied(&server, &client, replies[0]);
    client.until_idle("after the first reply");
    proxy.refuse_all.store(false, Relaxed);

    // A tool call (`echo`: run without asking), sent through the server.
    send(&server, &client.pane, prompts[1]);
    wait_replied(&server, &client, replies[2]);
    client.until_idle("after the tool call");

    // Two identical short prompts, sent through the server: two turns.
    send(&server, &client.pane, prompts[2]);
    wait_replied(&server, &client, replies[3]);
    client.until_idle("after the first yes");
    send(&server, &client.pane, prompts[3]);
    wait_replied(&server, &client, replies[4]);
    client.until_idle("after the second yes");

    // The server SIGKILLed; a prompt typed while it is down; then it is back on its port.
    let log_before = server.log();
    server.kill();
    client.type_prompt(prompts[4]);
    client.until_replied(replies[5]);
    client.until_idle("after the restart's reply");
    server = Server::start_on(&db, &claude, &addr, &extra);

    // A denied approval (Escape on the dialog): the turn ends with no hook, and Gemini
    // writes every earlier message again under new ids, then replaces its history.
    send(&server, &client.pane, prompts[5]);
    let asking = wait_for(Duration::from_secs(60), || {
        client.screen().contains("Allow execution of").then_some(())
    });
    assert!(asking.is_some(), "no approval dialog:\n{}", client.screen());
    std::thread::sleep(Duration::from_millis(500));
    client
        .tmux
        .run(&["send-keys", "-t", &client.pane, "Escape"]);
    let denied = wait_for(Duration::from_secs(30), || {
        client.screen().contains("Request cancelled").then_some(())
    });
    assert!(denied.is_some(), "not denied:\n{}", client.screen());
    client.until_idle("after the denial");
    let project = std::fs::canonicalize(root.join("project")).unwrap();
    assert!(
        !project.join("denied-marker.txt").exists(),
        "the denied command ran"
    );
    let rewritten = wait_for(Duration::from_secs(10), || {
        (client.reply_ids(replies[0]).len() >= 2).then_some(())
    });
    assert!(
        rewritten.is_some(),
        "the denial wrote no copies of the earlier messages: {:?}",
        client.chat()
    );
    until_activity(&server, &pane_ref, "idle", 30, &server.log()); // after the denial

    // A slow reply interrupted (typed in the pane, then Escape while it streams): Gemini
    // writes `info "Request cancelled."` and a `$set messages` without the prompt, and no
    // reply line. The prompt was written at Enter: it is a turn; the reply is none.
    let cancelled_before = client.cancellations();
    client.type_prompt(prompts[6]);
    let streaming = wait_for(Duration::from_secs(60), || {
        let s = client.screen();
        (s.contains(slow_shown) && s.contains("(esc to cancel")).then_some(())
    });
    assert!(
        streaming.is_some(),
        "the slow reply never streamed:\n{}",
        client.screen()
    );
    until_activity(&server, &pane_ref, "running", 10, &client.screen()); // while it streams
    client
        .tmux
        .run(&["send-keys", "-t", &client.pane, "Escape"]);
    let cancelled = wait_for(Duration::from_secs(30), || {
        (client.cancellations() > cancelled_before).then_some(())
    });
    assert!(
        cancelled.is_some(),
        "Escape did not cancel the slow reply:\n{}",
        client.screen()
    );
    client.until_idle("after the interrupt");
    assert!(
        !client.replied(slow_shown),
        "the interrupted reply was written: {:?}",
        client.chat()
    );
    until_activity(&server, &pane_ref, "idle", 30, &server.log()); // after the interrupt

    // The next prompt works as before, on a slower reply: once `wait` returns, the reply is
    // written and already a turn.
    send(&server, &client.pane, prompts[7]);
    wait_turned(&server, &client, replies[7]);

    // Every prompt and reply is one turn of this agent, in order, none doubled (the
    // denial's copies are none), none left over; the interrupted prompt is one, its reply
    // none.
    let card = server.json(&format!("/api/agents/{pane_ref}"));
    assert_eq!(card["kind"], "gemini", "{card}");
    let session = client
        .session_id()
        .expect("the chat file names its session");
    assert_eq!(
        card["session_id"].as_str(),
        Some(&session[..8]),
        "the session is named by its first 8 characters: {card}"
    );
    let id = card["id"].as_u64().unwrap();
    audit_settles(&server, id, &log_before);
    let turns = server.json(&format!("/api/agents/{id}/turns?limit=200"));
    let turns = turns.as_array().unwrap();
    let texts = |actor: &str| texts_of(turns, actor);
    assert_eq!(texts("user"), prompts, "prompts, one turn each");
    assert_eq!(texts("agent"), replies, "replies, one turn each");
    let unclaimed: Vec<&Value> = turns.iter().filter(|t| t["entry_uuid"].is_null()).collect();
    assert!(unclaimed.is_empty(), "turns no line claimed: {unclaimed:?}");
    until_activity(&server, &pane_ref, "idle", 30, "at the end");
    assert!(
        proxy.refused.load(Relaxed) > 0 && proxy.forwarded.load(Relaxed) > 0,
        "the proxy refused {} and forwarded {} hooks",
        proxy.refused.load(Relaxed),
        proxy.forwarded.load(Relaxed)
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
