//! `headspace`: the server, the replay tool and the commands around them.

use headspace::server::{self as serve, migrate};

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod cli;
use cli::agents::{agents, reconcile, send, wait};
use cli::hooks::{hooks, HooksAction};
use cli::orchestrate::{orchestrate, OrchestrateAction};
use cli::replay::replay;
use cli::ServerArg;

/// Headspace: every Claude Code agent in tmux, live, with no turn lost or shown twice.
#[derive(Parser)]
#[command(name = "headspace", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
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
    Serve(Box<serve::ServeArgs>), // boxed: its many flags would size every command

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
        /// The agent CLI that runs the hook (`claude`, `codex`, `gemini`).
        #[arg(long, default_value = "claude")]
        agent: String,
        /// The server.
        #[arg(long, default_value = headspace::config::DEFAULT_URL)]
        url: String,
        /// The server's token file.
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Internal: do the POST (the detached half).
        #[arg(long)]
        post: Option<String>,
    },
    /// One line per agent: id, project, state, pane.
    Agents {
        #[command(flatten)]
        server: ServerArg,
    },
    /// One line per machine writing into the database: online or offline (since when),
    /// last seen, live agents.
    Machines {
        /// Print `GET /api/machines`' JSON instead of text.
        #[arg(long)]
        json: bool,
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
    /// Compare every conversational transcript line with the stored turns: print missing,
    /// doubled and mis-assigned turns by uuid; exit 0 only when none (1: problems, 2: error).
    Audit {
        /// Agent id, Claude session id or pane id; every agent when left out.
        agent: Option<String>,
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
    /// Search every turn of every agent, ended ones too: full text and exact text (paths,
    /// error strings); one hit a line, best first.
    Search {
        /// Words, a "quoted phrase", or exact text such as src/lib.rs or `error: expected`.
        query: String,
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
        /// Only this agent (id, Claude session id or pane id).
        #[arg(long)]
        agent: Option<String>,
        /// At most this many hits (1 to 100; default 20).
        #[arg(long)]
        limit: Option<u32>,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Delete ended agents last heard of before a date, with their turns and tasks; lists
    /// them first. Live agents are never touched. Nothing is deleted without --before.
    Prune {
        /// A day (2026-11-20, UTC) or an RFC 3339 time.
        #[arg(long)]
        before: String,
        /// List what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Drive a specflow phase: design → analyze → implement → verify → merge.
    Orchestrate {
        #[command(subcommand)]
        action: OrchestrateAction,
    },
    /// Start an agent in DIR, in a new window of the server's tmux (its session
    /// `headspace`): in DIR itself, or with --worktree in a new git worktree on a new branch
    /// `headspace/NAME` (a name is picked from the prompt when none is given).
    New {
        /// The folder (inside a --projects-root of the server).
        dir: String,
        /// Work in a new worktree, named NAME (letters, digits, '-', '_', '.').
        #[arg(long, num_args = 0..=1, default_missing_value = "")]
        worktree: Option<String>,
        /// The branch the worktree starts from (default: DIR's current branch).
        #[arg(long, requires = "worktree")]
        base: Option<String>,
        /// The kind of agent.
        #[arg(long, default_value = "claude")]
        agent: String,
        /// The first prompt, typed once the agent runs.
        #[arg(long)]
        prompt: Option<String>,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Give an agent a name every page and device shows ("" clears it).
    Rename {
        /// Agent id, session id or pane.
        agent: String,
        /// The name (at most 80 characters).
        name: String,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Stop an agent: asked to exit, killed after 10 s (at once with --force).
    Stop {
        /// Agent id, session id or pane.
        agent: String,
        /// Kill it at once.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        server: ServerArg,
    },
    /// What an agent changed: a worktree's branch and uncommitted changes against where it
    /// started; any other agent's folder's uncommitted changes.
    Diff {
        /// Agent id, session id or pane.
        agent: String,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Merge an agent's branch (its uncommitted work committed first) into the branch it
    /// started from, in the main checkout; a conflict changes nothing.
    Merge {
        /// Agent id, session id or pane.
        agent: String,
        /// One commit instead of a merge commit.
        #[arg(long)]
        squash: bool,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Remove the worktree and branch Headspace made for a stopped agent.
    Discard {
        /// Agent id, session id or pane.
        agent: String,
        #[command(flatten)]
        server: ServerArg,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(default_log_filter(matches!(cli.command, Cmd::Serve(_))));
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
            match rt.block_on(serve::run(*args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("headspace serve: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Agents { server } => agents(&server),
        Cmd::Machines { json, server } => cli::machines::machines(json, &server),
        Cmd::Reconcile { agent, server } => reconcile(&agent, &server),
        Cmd::Audit { agent, server } => cli::audit::audit(agent.as_deref(), &server),
        Cmd::HookForward {
            post: Some(target),
            token_file,
            ..
        } => {
            headspace::hooks::forward::post(&target, token_file.as_deref());
            ExitCode::SUCCESS
        }
        Cmd::HookForward {
            event,
            agent,
            url,
            token_file,
            ..
        } => {
            // Never fails loudly (the agent must not be disturbed): an unknown kind is
            // posted as Claude Code's, which the server reads or refuses.
            let kind = headspace_core::kind::AgentKind::from_name(&agent).unwrap_or_default();
            headspace::hooks::forward::forward(
                kind,
                event.as_deref().unwrap_or("claude"),
                &url,
                token_file.as_deref(),
            );
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
        Cmd::Search {
            query,
            project,
            agent,
            limit,
            server,
        } => cli::search::search(&query, project.as_deref(), agent.as_deref(), limit, &server),
        Cmd::Prune {
            before,
            dry_run,
            server,
        } => cli::search::prune(&before, dry_run, &server),
        Cmd::New {
            dir,
            worktree,
            base,
            agent,
            prompt,
            server,
        } => cli::launch::new(
            &dir,
            worktree.as_deref(),
            base.as_deref(),
            &agent,
            prompt.as_deref(),
            &server,
        ),
        Cmd::Stop {
            agent,
            force,
            server,
        } => cli::launch::stop(&agent, force, &server),
        Cmd::Diff { agent, server } => cli::launch::diff(&agent, &server),
        Cmd::Rename {
            agent,
            name,
            server,
        } => cli::agents::rename(&agent, &name, &server),
        Cmd::Merge {
            agent,
            squash,
            server,
        } => cli::launch::merge(&agent, squash, &server),
        Cmd::Discard { agent, server } => cli::launch::discard(&agent, &server),
    }
}

/// The server's log filter when `RUST_LOG` is not set: Headspace's own INFO lines (the
/// seed's recovery lines, `[RECONCILER] …` and `[TMUX_WATCHDOG] Gap detected …`, one per
/// recovery, never one per hook or capture) and every dependency's warnings.
const SERVER_LOG_FILTER: &str = "warn,headspace=info,headspace_core=info";

/// The other commands' filter when `RUST_LOG` is not set: they report to the user
/// themselves, and `replay` would otherwise print a recovery line per recovered turn.
const CLIENT_LOG_FILTER: &str = "warn";

/// The filter used when `RUST_LOG` is not set, for the server or for another command.
fn default_log_filter(server: bool) -> &'static str {
    if server {
        SERVER_LOG_FILTER
    } else {
        CLIENT_LOG_FILTER
    }
}

/// Logs go to stderr; `RUST_LOG` chooses what, else `default` (see `default_log_filter`).
fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal: a log file gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

#[cfg(test)]
mod tests {
    use super::{default_log_filter, CLIENT_LOG_FILTER, SERVER_LOG_FILTER};
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    /// A log sink the test reads back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `filter` lets through of one line per (target, level) below.
    fn logged_with(filter: &str) -> String {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "headspace_core::engine::watchdog", "[TMUX_WATCHDOG] Gap detected");
            tracing::info!(target: "headspace_core::engine::entries", "[RECONCILER] Created turn");
            tracing::info!(target: "headspace::server", "server info");
            tracing::debug!(target: "headspace_core::engine::hooks", "[HOOK_RECEIVER] hook chain");
            tracing::info!(target: "hyper::proto", "dependency info");
            tracing::warn!(target: "tokio_postgres", "dependency warning");
        });
        let bytes = sink.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn the_server_logs_headspace_info_and_dependency_warnings_by_default() {
        assert_eq!(default_log_filter(true), SERVER_LOG_FILTER);
        let log = logged_with(SERVER_LOG_FILTER);
        assert!(log.contains("[TMUX_WATCHDOG] Gap detected"), "{log}");
        assert!(log.contains("[RECONCILER] Created turn"), "{log}");
        assert!(log.contains("server info"), "{log}");
        assert!(log.contains("dependency warning"), "{log}");
        assert!(!log.contains("dependency info"), "{log}");
        assert!(!log.contains("hook chain"), "DEBUG stays hidden: {log}");
    }

    #[test]
    fn other_commands_log_warnings_only_by_default() {
        assert_eq!(default_log_filter(false), CLIENT_LOG_FILTER);
        let log = logged_with(CLIENT_LOG_FILTER);
        assert!(log.contains("dependency warning"), "{log}");
        assert!(
            !log.contains("Gap detected") && !log.contains("server info"),
            "{log}"
        );
    }
}
