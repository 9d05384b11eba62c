//! `headspace hooks install|uninstall|print [--agent codex]`: Claude Code's settings file, or
//! Codex CLI's hooks file and its trust entries.

use super::output::outln;
use clap::Subcommand;
use headspace_core::kind::AgentKind;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `headspace hooks` does.
#[derive(Subcommand)]
pub(crate) enum HooksAction {
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
pub(crate) struct HooksTarget {
    /// The agent CLI: `claude` (Claude Code), `codex` (Codex CLI: its hooks file
    /// `$CODEX_HOME/hooks.json`, and the trust entries Codex runs hooks by in the
    /// `config.toml` beside it), or `gemini` (Gemini CLI: the `hooks` of its
    /// `~/.gemini/settings.json`; it runs them only in folders the user trusts).
    #[arg(long, default_value = "claude", value_parser = ["claude", "codex", "gemini"])]
    pub(crate) agent: String,
    /// The settings file (default: ~/.claude/settings.json; for Codex, the hooks file,
    /// default $CODEX_HOME/hooks.json or ~/.codex/hooks.json; for Gemini,
    /// ~/.gemini/settings.json).
    #[arg(long)]
    pub(crate) settings: Option<PathBuf>,
    /// The server the hooks post to.
    #[arg(long, default_value = headspace::config::DEFAULT_URL)]
    pub(crate) url: String,
    /// The server's token file, recorded in the hooks (the path, not the token). Default:
    /// `$HEADSPACE_HOME/token`, where the server keeps the token it made.
    #[arg(long, env = "HEADSPACE_TOKEN_FILE")]
    pub(crate) token_file: Option<PathBuf>,
    /// How Claude Code hands hooks over: `http` (it posts them itself, 2.1.63 and later; no
    /// process per hook), `command` (it runs `headspace hook-forward`), or `auto`: http when
    /// the installed Claude Code supports it.
    #[arg(long, default_value = "auto", value_parser = ["auto", "http", "command"])]
    pub(crate) transport: String,
    /// The Claude Code version `auto` decides by, instead of asking `claude --version`.
    #[arg(long)]
    pub(crate) claude_version: Option<String>,
    /// The Claude Code command `auto` asks for its version.
    #[arg(long, env = "HEADSPACE_CLAUDE_COMMAND", default_value = "claude")]
    pub(crate) claude_command: String,
    /// The hook key HTTP hooks carry (it posts hooks and opens nothing else). Default:
    /// `$HEADSPACE_HOME/hook-key`, made by the server's first start (or here).
    #[arg(long)]
    pub(crate) hook_key_file: Option<PathBuf>,
}

/// The transport `target` asks for, and why: a Claude Code version found, or the flag.
fn transport_of(t: &HooksTarget) -> (headspace::hooks::install::Transport, String) {
    use headspace::hooks::install::Transport;
    if agent_of(t) != AgentKind::Claude {
        return (
            Transport::Command,
            format!("{} runs command hooks", agent_of(t).title()),
        );
    }
    match t.transport.as_str() {
        "http" => (Transport::Http, "--transport http".into()),
        "command" => (Transport::Command, "--transport command".into()),
        _ => {
            let version = t
                .claude_version
                .clone()
                .or_else(|| claude_version(&t.claude_command));
            match version {
                Some(v) => (
                    Transport::for_version(&v),
                    format!("Claude Code {}", v.trim()),
                ),
                None => (
                    Transport::Command,
                    format!("no `{} --version` answered", t.claude_command),
                ),
            }
        }
    }
}

/// The agent CLI `t` names (the flag's values are checked by clap).
fn agent_of(t: &HooksTarget) -> AgentKind {
    AgentKind::from_name(&t.agent).unwrap_or_default()
}

/// What `command --version` prints, if it answers within five seconds.
fn claude_version(command: &str) -> Option<String> {
    let mut child = std::process::Command::new(command)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    for _ in 0..100 {
        if let Some(status) = child.try_wait().ok()? {
            if !status.success() {
                return None;
            }
            let mut out = String::new();
            std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
            return Some(out.trim().to_string()).filter(|o| !o.is_empty());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    None
}

pub(crate) fn hooks(action: HooksAction) -> ExitCode {
    use headspace::hooks::install as hi;
    let settings_of = |t: &HooksTarget| match (&t.settings, agent_of(t)) {
        (Some(s), _) => Ok(s.clone()),
        (None, AgentKind::Claude) => {
            headspace::config::default_claude_dir().map(|d| d.join("settings.json"))
        }
        (None, AgentKind::Codex) => headspace::config::default_codex_dir()
            .map(|d| d.join("hooks.json"))
            .ok_or_else(|| "no home folder: give the hooks file with --settings".to_string()),
        (None, AgentKind::Gemini) => headspace::config::default_gemini_dir()
            .map(|d| d.join("settings.json"))
            .ok_or_else(|| "no home folder: give the settings file with --settings".to_string()),
    };
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("headspace"));
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    // The URL goes into a shell command: checked before anything is shown or written.
    let url_of = |t: &HooksTarget| {
        let url = hi::HookUrl::parse(&t.url).map_err(|e| e.to_string())?;
        let token_file = match &t.token_file {
            Some(f) => std::path::absolute(f).map_err(|e| e.to_string())?,
            None => headspace::config::token_path(&headspace::config::default_home()?),
        };
        let (transport, why) = transport_of(t);
        let hook_key = match transport {
            hi::Transport::Http => {
                let file = match &t.hook_key_file {
                    Some(f) => f.clone(),
                    None => {
                        let home = headspace::config::default_home()?;
                        headspace::private_files::private_dir(&home)?;
                        headspace::config::hook_key_path(&home)
                    }
                };
                Some(headspace::private_files::secret_or_new(&file)?)
            }
            hi::Transport::Command => None,
        };
        eprintln!("headspace hooks: {} hooks ({why})", transport.as_str());
        Ok::<_, String>(hi::Forwarding {
            transport,
            hook_key,
            url,
            token_file: Some(token_file),
            agent: agent_of(t),
        })
    };
    let result = match &action {
        HooksAction::Print { target } => url_of(target).map(|url| {
            outln!(
                "{}",
                serde_json::to_string_pretty(
                    &serde_json::json!({"hooks": hi::our_hooks(&exe, &url)})
                )
                .unwrap_or_default()
            );
        }),
        HooksAction::Install { target } => url_of(target).and_then(|url| {
            let path = settings_of(target)?;
            let done = match url.agent {
                AgentKind::Claude | AgentKind::Gemini => hi::install(&path, &exe, &url),
                AgentKind::Codex => headspace::hooks::codex_trust::install(&path, &exe, &url),
            }
            .map_err(|e| e.to_string())?;
            let through = if done.written != path {
                format!(" (a link to {})", done.written.display())
            } else {
                String::new()
            };
            match done.backup {
                Some(b) => outln!(
                    "installed Headspace's hooks in {}{through} (backup: {})",
                    path.display(),
                    b.display()
                ),
                None => outln!("installed Headspace's hooks in {}{through}", path.display()),
            }
            if url.agent == AgentKind::Codex {
                outln!(
                    "trusted them in {} (Codex runs only hooks trusted there)",
                    path.with_file_name("config.toml").display()
                );
            }
            if url.agent == AgentKind::Gemini {
                outln!(
                    "Gemini CLI runs them only in folders you trust (its trust dialog, or {})",
                    path.with_file_name("trustedFolders.json").display()
                );
            }
            outln!(
                "{} events forwarded to {}, with the token in {}; `headspace hooks uninstall{}` removes them",
                hi::events(url.agent).len(),
                url.url,
                url.token_file.as_deref().unwrap_or(std::path::Path::new("-")).display(),
                match url.agent {
                    AgentKind::Claude => String::new(),
                    other => format!(" --agent {}", other.name()),
                },
            );
            Ok(())
        }),
        HooksAction::Uninstall { target } => settings_of(target).and_then(|path| {
            let removed = match agent_of(target) {
                AgentKind::Claude | AgentKind::Gemini => hi::uninstall(&path),
                AgentKind::Codex => headspace::hooks::codex_trust::uninstall(&path),
            };
            removed
                .map(|changed| {
                    if changed {
                        outln!("removed Headspace's hooks from {}", path.display());
                    } else {
                        outln!("no Headspace hooks in {}", path.display());
                    }
                })
                .map_err(|e| e.to_string())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("headspace hooks: {e}");
            ExitCode::FAILURE
        }
    }
}
