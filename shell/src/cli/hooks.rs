//! `headspace hooks install|uninstall|print`: Claude Code's settings file.

use clap::Subcommand;
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
    /// The settings file (default: ~/.claude/settings.json).
    #[arg(long)]
    pub(crate) settings: Option<PathBuf>,
    /// The server the hooks post to.
    #[arg(long, default_value = headspace::config::DEFAULT_URL)]
    pub(crate) url: String,
}

pub(crate) fn hooks(action: HooksAction) -> ExitCode {
    use headspace::hooks::install as hi;
    let settings_of = |t: &HooksTarget| {
        t.settings
            .clone()
            .unwrap_or_else(|| headspace::config::default_claude_dir().join("settings.json"))
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
