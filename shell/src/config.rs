//! Defaults every part of Headspace agrees on: where the server listens, where Claude Code
//! and Headspace keep their files, and how a token is read. One place, so the server, the
//! CLI, the hook installer and the orchestration runner never disagree.

pub use crate::private_files::user_home;
use std::path::{Path, PathBuf};
use tracing::warn;

/// Where the server listens unless told otherwise, and where every client looks for it.
pub const DEFAULT_ADDR: &str = "127.0.0.1:5055";

/// The URL installed hooks post to unless told otherwise.
pub const DEFAULT_URL: &str = "http://127.0.0.1:5055";

/// Claude Code's folder when none is given: `~/.claude` (see [`user_home`]: never a shared
/// place). The server, the hook installer and the orchestration runner must agree on it.
pub fn default_claude_dir() -> Result<PathBuf, String> {
    Ok(user_home()?.join(".claude"))
}

/// Codex CLI's folder when none is given: `$CODEX_HOME` (as Codex itself reads it), else
/// `~/.codex`; `None` when no home is known.
pub fn default_codex_dir() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(h) => Some(PathBuf::from(h)),
        None => user_home().ok().map(|h| h.join(".codex")),
    }
}

/// Gemini CLI's folder when none is given: `~/.gemini`; `None` when no home is known.
pub fn default_gemini_dir() -> Option<PathBuf> {
    user_home().ok().map(|h| h.join(".gemini"))
}

/// Headspace's own folder when none is given: `$HEADSPACE_HOME`, else
/// `~/.local/share/headspace`.
pub fn default_home() -> Result<PathBuf, String> {
    match std::env::var_os("HEADSPACE_HOME").filter(|h| !h.is_empty()) {
        Some(h) => Ok(PathBuf::from(h)),
        None => Ok(user_home()?.join(".local/share/headspace")),
    }
}

/// The token file in Headspace's folder `home`, which the server creates on its first start
/// when it is given no token.
pub fn token_path(home: &Path) -> PathBuf {
    home.join("token")
}

/// The hook key in Headspace's folder `home`: the credential Claude Code's HTTP hooks send
/// (it posts hooks and opens nothing else), made by the server on its first start.
pub fn hook_key_path(home: &Path) -> PathBuf {
    home.join("hook-key")
}

/// The token a client sends: from `--token-file` or `HEADSPACE_TOKEN` when given, else from
/// the server's own token file in the default home (`None` when there is none to read, for
/// instance when the server runs as another account).
pub fn client_token(file: Option<&Path>, given: Option<&str>) -> Result<Option<String>, String> {
    if let Some(t) = read_token(file, given)? {
        return Ok(Some(t));
    }
    let Ok(home) = default_home() else {
        return Ok(None);
    };
    let path = token_path(&home);
    if !path.exists() {
        return Ok(None);
    }
    crate::private_files::read_secret(&path).map(Some)
}

/// The token from `--token-file` (first line, trimmed) or the environment; a token given as
/// a command-line flag works but is warned about (every account sees it in `ps`).
pub fn read_token(file: Option<&Path>, given: Option<&str>) -> Result<Option<String>, String> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim().to_string();
        if token.is_empty() {
            return Err(format!("the token file {} is empty", path.display()));
        }
        if let Ok(m) = std::fs::metadata(path) {
            use std::os::unix::fs::PermissionsExt;
            if m.permissions().mode() & 0o077 != 0 {
                warn!(
                    "the token file {} can be read by other accounts: chmod 600 it",
                    path.display()
                );
            }
        }
        return Ok(Some(token));
    }
    if std::env::args().any(|a| a == "--token" || a.starts_with("--token=")) {
        warn!("--token puts the token where every account can read it (ps); use --token-file FILE or HEADSPACE_TOKEN");
    }
    Ok(given
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string))
}
