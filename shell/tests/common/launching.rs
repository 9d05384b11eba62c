//! What the tests of agents Headspace starts share: git as the tests run it, a repository
//! under a projects root, and a server that starts the stand-in agent there (its script
//! writes the prompt it is given into `hello.txt`).

use super::{fresh_db, install_hooks, run_ok, temp_dir, Server, Tmux};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// git as the tests run it: never the repository's hooks or fsmonitor (launch.rs plants
/// them, to see that Headspace's git never runs them either).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = run_ok(
        Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args([
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.fsmonitor=false",
            ])
            .args(args)
            .current_dir(dir),
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository `shop` (one commit on `main`) under a projects root, and a server on a fresh
/// database whose `--claude-command` is the stand-in agent with an editing script, on a
/// private tmux server, with the hooks installed.
pub struct Launching {
    /// The server.
    pub server: Server,
    /// The claude dir: transcripts, `settings.json`, the script.
    pub claude: PathBuf,
    /// The projects root (canonical).
    pub root: PathBuf,
    /// The repository.
    pub repo: PathBuf,
    /// The private tmux server (killed on drop).
    pub tmux: Tmux,
    /// The stand-in agent's binary.
    pub agent: String,
    /// The server's database.
    pub db: String,
    /// Its script: one turn that writes the prompt into `hello.txt`.
    pub script: PathBuf,
}

impl Launching {
    /// `None` (skipped) outside `make test`. `before_server` runs on the repository before
    /// the server starts (a test plants what it attacks with there).
    pub fn start(name: &str, before_server: impl FnOnce(&Path, &Path)) -> Option<Launching> {
        let db = fresh_db(name)?;
        let claude = temp_dir(name);
        let root = std::fs::canonicalize(temp_dir(&format!("{name}-root"))).unwrap();
        let repo = root.join("shop");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "# shop\n").unwrap();
        git(&repo, &["add", "README.md"]);
        git(&repo, &["commit", "-q", "-m", "start"]);
        before_server(&root, &repo);
        let script = claude.join("edit.json");
        std::fs::write(
            &script,
            json!({"turns": [{"prompt": "-", "replies": ["Writing it."], "edit": "hello.txt"}]})
                .to_string(),
        )
        .unwrap();
        let agent = headspace_testkit::stand_in::stand_in_agent();
        let command = format!(
            "{agent} --claude-dir {} --script {} --think-ms 60 --stay",
            claude.display(),
            script.display()
        );
        let tmux = Tmux(format!("hs-{name}-{}", std::process::id()));
        let server = Server::start(
            &db,
            &claude,
            &[
                "--tmux-socket",
                &tmux.0,
                "--pane-poll-seconds",
                "0.3",
                "--projects-root",
                &root.display().to_string(),
                "--claude-command",
                &command,
                // An agent command that exits at once: a start that fails after its
                // worktree was made.
                "--gemini-command",
                "false",
            ],
        );
        install_hooks(&server, &claude.join("settings.json"));
        Some(Launching {
            server,
            claude,
            root,
            repo,
            tmux,
            agent,
            db,
            script,
        })
    }
}
