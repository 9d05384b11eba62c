//! Slash commands and machinery text in transcripts and prompt hooks: Claude Code's own
//! commands (`/clear`, `/mcp`, …), custom commands and skills, and text that is not typed.

/// How Claude Code's notice begins when a UserPromptSubmit hook blocked the prompt.
pub(crate) const BLOCKED_BY_HOOK: &str = "Operation stopped by hook:";

/// Prefixes that mark a user line as machinery, not something the user typed.
const NOT_A_PROMPT: [&str; 8] = [
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<task-notification>",
    "<system-reminder>",
    "[Request interrupted by user",
    BLOCKED_BY_HOOK,
];

/// Claude Code's own commands, which run no turn of the model (`/clear`, `/model`, …). A
/// slash command not in this list is a custom command or skill (`/flow.design`): the model
/// works on it like on any prompt.
const LOCAL_COMMANDS: &[&str] = &[
    "add-dir",
    "agents",
    "bashes",
    "bug",
    "clear",
    "compact",
    "config",
    "context",
    "cost",
    "doctor",
    "exit",
    "export",
    "feedback",
    "help",
    "hooks",
    "ide",
    "install-github-app",
    "login",
    "logout",
    "mcp",
    "memory",
    "migrate-installer",
    "model",
    "output-style",
    "permissions",
    "plugin",
    "privacy-settings",
    "quit",
    "release-notes",
    "resume",
    "rewind",
    "sandbox",
    "status",
    "statusline",
    "terminal-setup",
    "theme",
    "todos",
    "upgrade",
    "usage",
    "vim",
];

/// The command name of a slash command (`/flow.design args` → `flow.design`).
pub fn slash_command(text: &str) -> Option<&str> {
    let first = text.split_whitespace().next().unwrap_or("");
    let name = first.strip_prefix('/')?;
    (!name.is_empty()
        && !name.contains('/')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c)))
    .then_some(name)
}

/// True for one of Claude Code's own commands (a name without its slash).
pub fn is_local_command(name: &str) -> bool {
    LOCAL_COMMANDS.contains(&name)
}

/// A custom command or skill as the transcript records it
/// (`<command-name>/flow.design</command-name>…<command-args>x</command-args>`), as the text
/// the user typed (`/flow.design x`), so that its prompt hook's turn is claimed. Claude
/// Code's own commands (`/clear`, `/mcp`, …) stay machinery: `None`.
pub(crate) fn custom_command(text: &str) -> Option<String> {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = text.find(&open)? + open.len();
        let end = start + text[start..].find(&close)?;
        Some(text[start..end].trim())
    };
    let command = tag("command-name")?;
    let name = command.strip_prefix('/')?;
    if name.is_empty() || is_local_command(name) {
        return None;
    }
    match tag("command-args").filter(|a| !a.is_empty()) {
        Some(args) => Some(format!("{command} {args}")),
        None => Some(command.to_string()),
    }
}

/// True for text that starts like machinery rather than something the user typed.
pub fn is_machinery_text(text: &str) -> bool {
    let t = text.trim_start();
    NOT_A_PROMPT.iter().any(|p| t.starts_with(p))
}
