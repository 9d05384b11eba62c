//! `headspace`: the server, the replay tool and the commands around them.

use headspace::{migrate, serve};

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod cli;
use cli::orchestrate::{orchestrate, OrchestrateAction};

/// Headspace: every Claude Code agent in tmux, live, with no turn lost or shown twice.
#[derive(Parser)]
#[command(name = "headspace", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// What `headspace hooks` does.
#[derive(Subcommand)]
enum HooksAction {
    /// Merge Headspace's hooks into settings.json (idempotent, after a backup).
    Install {
        #[command(flatten)]
        target: HooksTarget,
    },
    /// Remove exactly Headspace's hooks.
    Uninstall {
        #[command(flatten)]
        target: HooksTarget,
    },
    /// Show the hooks that would be installed.
    Print {
        #[command(flatten)]
        target: HooksTarget,
    },
}

/// Which settings file, and which server the hooks post to.
#[derive(clap::Args)]
struct HooksTarget {
    /// The settings file (default: ~/.claude/settings.json).
    #[arg(long)]
    settings: Option<PathBuf>,
    /// The server the hooks post to.
    #[arg(long, default_value = "http://127.0.0.1:5055")]
    url: String,
}

/// Where the running server is.
#[derive(clap::Args)]
struct ServerArg {
    /// The server's address.
    #[arg(
        long = "addr",
        env = "HEADSPACE_ADDR",
        default_value = headspace::serve::DEFAULT_ADDR
    )]
    addr: String,
    #[command(flatten)]
    auth: TokenArgs,
}

/// The server's token, when it requires one: from a file, or from the environment.
#[derive(clap::Args)]
pub(crate) struct TokenArgs {
    /// A file holding the server's token (keep it 0600).
    #[arg(long, env = "HEADSPACE_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// The token itself (`HEADSPACE_TOKEN`); as a flag every account sees it in `ps`.
    #[arg(long, env = "HEADSPACE_TOKEN", hide_env_values = true, hide = true)]
    token: Option<String>,
}

impl TokenArgs {
    /// The token, if any; an unreadable token file ends the command with its reason.
    pub(crate) fn get(&self) -> Option<String> {
        match headspace::serve::read_token(self.token_file.as_deref(), self.token.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("headspace: {e}");
                std::process::exit(2);
            }
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a recorded trace through the core and an in-memory store; print the final state.
    Replay {
        /// The trace file (JSON Lines, see CONTRACT.md).
        trace: PathBuf,
    },
    /// Apply the SQL migrations to a database (idempotent).
    Migrate {
        /// PostgreSQL connection string.
        #[arg(long, env = "DATABASE_URL")]
        database_url: String,
    },
    /// Start the server (hooks, API, SSE, dashboard).
    Serve(serve::ServeArgs),
    /// Install, remove or show Headspace's Claude Code hooks.
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
    /// The installed hook command: forwards stdin's payload to the server, detached.
    #[command(hide = true)]
    HookForward {
        /// The hook event.
        event: Option<String>,
        /// The server.
        #[arg(long, default_value = "http://127.0.0.1:5055")]
        url: String,
        /// Internal: do the POST (the detached half).
        #[arg(long)]
        post: Option<String>,
    },
    /// One line per agent: id, project, state, pane.
    Agents {
        #[command(flatten)]
        server: ServerArg,
    },
    /// Reconcile an agent's transcript now (as the dashboard's Reconcile does).
    Reconcile {
        /// Agent id, Claude session id or pane id.
        agent: String,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Wait until an agent is idle (finished its turn or waiting for input): exit 0, or 1 on
    /// timeout.
    Wait {
        /// Agent id, Claude session id or pane id.
        agent: String,
        /// Seconds to wait at most.
        #[arg(long, default_value_t = 600.0)]
        timeout: f64,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Type text into an agent's pane and press Enter, verified.
    Send {
        /// Agent id, Claude session id or pane id.
        agent: String,
        /// The text.
        text: String,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Send /clear to an agent, so that the Stop it causes cannot end the next task.
    Clear {
        /// Agent id, Claude session id or pane id.
        agent: String,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Drive a specflow phase: design → analyze → implement → verify → merge.
    Orchestrate {
        #[command(subcommand)]
        action: OrchestrateAction,
    },
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    match cli.command {
        Cmd::Replay { trace } => replay(&trace),
        Cmd::Migrate { database_url } => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match rt.block_on(migrate::run(&database_url)) {
                Ok(applied) => {
                    eprintln!("headspace migrate: {} migration(s) applied", applied.len());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("headspace migrate: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Serve(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match rt.block_on(serve::run(args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("headspace serve: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Agents { server } => agents(&server),
        Cmd::Reconcile { agent, server } => reconcile(&agent, &server),
        Cmd::HookForward {
            post: Some(target), ..
        } => {
            headspace::forward::post(&target);
            ExitCode::SUCCESS
        }
        Cmd::HookForward { event, url, .. } => {
            headspace::forward::forward(event.as_deref().unwrap_or("claude"), &url);
            ExitCode::SUCCESS
        }
        Cmd::Hooks { action } => hooks(action),
        Cmd::Wait {
            agent,
            timeout,
            server,
        } => wait(&agent, timeout, &server),
        Cmd::Send {
            agent,
            text,
            server,
        } => send(&agent, Some(&text), &server),
        Cmd::Clear { agent, server } => send(&agent, None, &server),
        Cmd::Orchestrate { action } => orchestrate(action),
    }
}

fn hooks(action: HooksAction) -> ExitCode {
    use headspace::hooks_install as hi;
    let settings_of = |t: &HooksTarget| {
        t.settings
            .clone()
            .unwrap_or_else(|| headspace::serve::default_claude_dir().join("settings.json"))
    };
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("headspace"));
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    // The URL goes into a shell command: checked before anything is shown or written.
    let url_of = |t: &HooksTarget| hi::HookUrl::parse(&t.url).map_err(|e| e.to_string());
    let result = match &action {
        HooksAction::Print { target } => url_of(target).map(|url| {
            println!(
                "{}",
                serde_json::to_string_pretty(
                    &serde_json::json!({"hooks": hi::our_hooks(&exe, &url)})
                )
                .unwrap_or_default()
            );
        }),
        HooksAction::Install { target } => url_of(target).and_then(|url| {
            let path = settings_of(target);
            let done = hi::install(&path, &exe, &url).map_err(|e| e.to_string())?;
            let through = if done.written != path {
                format!(" (a link to {})", done.written.display())
            } else {
                String::new()
            };
            match done.backup {
                Some(b) => println!(
                    "installed Headspace's hooks in {}{through} (backup: {})",
                    path.display(),
                    b.display()
                ),
                None => println!("installed Headspace's hooks in {}{through}", path.display()),
            }
            println!(
                "{} events forwarded to {url}; `headspace hooks uninstall` removes them",
                hi::EVENTS.len(),
            );
            Ok(())
        }),
        HooksAction::Uninstall { target } => {
            let path = settings_of(target);
            hi::uninstall(&path)
                .map(|changed| {
                    if changed {
                        println!("removed Headspace's hooks from {}", path.display());
                    } else {
                        println!("no Headspace hooks in {}", path.display());
                    }
                })
                .map_err(|e| e.to_string())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("headspace hooks: {e}");
            ExitCode::FAILURE
        }
    }
}

fn call(server: &ServerArg, method: &str, path: &str) -> Result<(u16, serde_json::Value), String> {
    let (status, body) = headspace::client::request(
        &server.addr,
        method,
        path,
        b"",
        server.auth.get().as_deref(),
        std::time::Duration::from_secs(30),
    )?;
    let v =
        serde_json::from_str(&body).map_err(|_| format!("unexpected answer ({status}): {body}"))?;
    Ok((status, v))
}

fn agents(server: &ServerArg) -> ExitCode {
    match call(server, "GET", "/api/agents") {
        Ok((200, serde_json::Value::Array(rows))) => {
            println!(
                "{:<5} {:<24} {:<15} {:<8} {:<6} SESSION",
                "ID", "PROJECT", "STATE", "ACTIVITY", "PANE"
            );
            for a in rows {
                let s = |k: &str| a[k].as_str().unwrap_or("-").to_string();
                println!(
                    "{:<5} {:<24} {:<15} {:<8} {:<6} {}",
                    a["id"].as_u64().unwrap_or(0),
                    s("project"),
                    s("state"),
                    s("activity"),
                    s("tmux_pane"),
                    s("session_id")
                );
            }
            ExitCode::SUCCESS
        }
        Ok((status, v)) => {
            eprintln!(
                "headspace agents: server answered {status}: {}",
                v["error"].as_str().unwrap_or(&v.to_string())
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("headspace agents: {e}");
            ExitCode::FAILURE
        }
    }
}

fn wait(agent: &str, timeout: f64, server: &ServerArg) -> ExitCode {
    let path = format!(
        "/api/agents/{}/wait?timeout={timeout}",
        headspace::client::encode_segment(agent)
    );
    let answer = headspace::client::request(
        &server.addr,
        "GET",
        &path,
        b"",
        server.auth.get().as_deref(),
        std::time::Duration::try_from_secs_f64(timeout.clamp(0.0, 86_400.0) + 30.0)
            .unwrap_or(std::time::Duration::from_secs(30)),
    );
    match answer.map(|(s, b)| {
        (
            s,
            serde_json::from_str::<serde_json::Value>(&b).unwrap_or_default(),
        )
    }) {
        Ok((200, v)) if v["status"] == "idle" => {
            println!(
                "{agent} is {} (waited {:.1}s)",
                v["activity"].as_str().unwrap_or("idle"),
                v["waited_ms"].as_f64().unwrap_or(0.0) / 1000.0
            );
            ExitCode::SUCCESS
        }
        Ok((200, v)) => {
            println!(
                "{agent} is still {} after {timeout}s",
                v["activity"].as_str().unwrap_or("running")
            );
            ExitCode::from(1)
        }
        Ok((status, v)) => {
            eprintln!(
                "headspace wait: {}",
                v["error"]
                    .as_str()
                    .map_or_else(|| format!("server answered {status}"), str::to_string)
            );
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("headspace wait: {e}");
            ExitCode::from(2)
        }
    }
}

fn send(agent: &str, text: Option<&str>, server: &ServerArg) -> ExitCode {
    let (path, body) = match text {
        Some(t) => (
            format!(
                "/api/agents/{}/send",
                headspace::client::encode_segment(agent)
            ),
            serde_json::json!({"text": t}).to_string(),
        ),
        None => (
            format!(
                "/api/agents/{}/clear",
                headspace::client::encode_segment(agent)
            ),
            String::new(),
        ),
    };
    let what = if text.is_some() { "send" } else { "clear" };
    match headspace::client::request(
        &server.addr,
        "POST",
        &path,
        body.as_bytes(),
        server.auth.get().as_deref(),
        std::time::Duration::from_secs(30),
    ) {
        Ok((200, b)) => {
            let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_default();
            if v["verified"] == true {
                println!("sent to {}", v["pane"].as_str().unwrap_or(agent));
            } else {
                println!(
                    "typed into {}, but the pane did not change after Enter",
                    v["pane"].as_str().unwrap_or(agent)
                );
            }
            ExitCode::SUCCESS
        }
        Ok((status, b)) => {
            let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_default();
            eprintln!(
                "headspace {what}: {}",
                v["error"]
                    .as_str()
                    .map_or_else(|| format!("server answered {status}"), str::to_string)
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("headspace {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn reconcile(agent: &str, server: &ServerArg) -> ExitCode {
    let path = format!(
        "/api/agents/{}/reconcile",
        headspace::client::encode_segment(agent)
    );
    match call(server, "POST", &path) {
        Ok((200, v)) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Ok((status, v)) => {
            eprintln!(
                "headspace reconcile: {}",
                v["error"]
                    .as_str()
                    .map_or_else(|| format!("server answered {status}"), str::to_string)
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("headspace reconcile: {e}");
            ExitCode::FAILURE
        }
    }
}

fn replay(path: &PathBuf) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("headspace replay: cannot read {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    match headspace_core::replay::replay_trace(&text) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("headspace replay: {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr; `RUST_LOG` chooses what (default: warnings and errors).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
