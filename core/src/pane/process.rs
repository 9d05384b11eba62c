//! A pane's processes, and which agent CLI each is: what discovery, the reaper and the
//! kinds ([`crate::kind::AgentKind::is_agent_process`]) read from the process table.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// One process running in a pane (the pane's own process or one of its descendants).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneProcess {
    /// The process id.
    pub pid: u32,
    /// The kernel's name for it (`/proc/PID/comm`).
    pub command: String,
    /// Its arguments (`/proc/PID/cmdline`), `args[0]` first.
    pub args: Vec<String>,
    /// Its working directory, when readable.
    pub cwd: Option<String>,
    /// When it started.
    pub started_at: Timestamp,
}

/// True when a process is Claude Code: named `claude` (the native build, or the npm script
/// run through its shebang), or node running the `@anthropic-ai/claude-code` package.
pub fn is_claude_process(p: &PaneProcess) -> bool {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    p.command == "claude"
        || p.args.first().is_some_and(|a0| base(a0) == "claude")
        || p.args.iter().take(3).any(|a| a.contains("claude-code/"))
}

/// True when a process is Codex CLI: its native binary (`codex`, which the npm package's node
/// script starts and waits on; the script itself is `node`, so a pane shows one Codex
/// process). Not the app-server daemon the first Codex starts (`codex app-server …`, also
/// named `codex`), which serves every session and outlives its pane.
pub fn is_codex_process(p: &PaneProcess) -> bool {
    p.command == "codex" && !p.args.iter().any(|a| a == "app-server")
}

/// True when a process is Gemini CLI: node running the `@google/gemini-cli` package (its
/// `.bin/gemini` link, `bundle/gemini.js`, or a `gemini` command). The CLI starts itself
/// again as a child with node flags (`node --max-old-space-size=N …/gemini`) and waits on
/// it: only the parent counts, so a pane shows one Gemini process (a pane with two is
/// never chosen), and with `GEMINI_CLI_NO_RELAUNCH` the one process is the parent.
pub fn is_gemini_process(p: &PaneProcess) -> bool {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let gemini_script =
        |a: &str| base(a) == "gemini" || a.contains("gemini-cli/") || base(a) == "gemini.js";
    match p.args.as_slice() {
        [a0, ..] if base(a0) == "gemini" => true,
        [a0, a1, ..] if base(a0).starts_with("node") => gemini_script(a1),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(command: &str, args: &[&str]) -> PaneProcess {
        PaneProcess {
            pid: 7,
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: None,
            started_at: Timestamp(0),
        }
    }

    #[test]
    fn codex_is_its_native_binary_not_its_node_script_nor_its_daemon() {
        let node = process("node", &["node", "/n/node_modules/.bin/codex"]);
        let native = process("codex", &["/n/vendor/x86_64-unknown-linux-musl/bin/codex"]);
        let daemon = process(
            "codex",
            &["/h/packages/bin/codex", "app-server", "--listen", "unix://"],
        );
        assert!(!is_codex_process(&node) && !is_claude_process(&node));
        assert!(is_codex_process(&native) && !is_claude_process(&native));
        assert!(!is_codex_process(&daemon));
    }

    #[test]
    fn gemini_is_its_launcher_not_the_child_it_relaunches() {
        let launcher = process("node", &["node", "/n/node_modules/.bin/gemini"]);
        let child = process(
            "node",
            &[
                "/usr/bin/node",
                "--max-old-space-size=12052",
                "/n/node_modules/.bin/gemini",
            ],
        );
        let bundle = process(
            "node",
            &["node", "/g/@google/gemini-cli/bundle/gemini.js", "-y"],
        );
        assert!(is_gemini_process(&launcher) && is_gemini_process(&bundle));
        assert!(
            !is_gemini_process(&child),
            "the relaunched child is the same agent"
        );
        assert!(!is_claude_process(&launcher) && !is_codex_process(&launcher));
        let other = process("node", &["node", "/srv/app.js"]);
        assert!(!is_gemini_process(&other));
    }
}
