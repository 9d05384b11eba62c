//! Codex CLI's trust of Headspace's hooks: Codex runs a hook only when its `config.toml`
//! (beside `hooks.json` in `$CODEX_HOME`) holds a trust entry for it,
//!
//! ```toml
//! [hooks.state."/home/u/.codex/hooks.json:stop:1:0"]
//! trusted_hash = "sha256:…"
//! ```
//!
//! keyed by the hooks file, the event's label, the group's and the handler's positions, and
//! hashing what the handler does (Codex 0.171, `codex-rs/hooks/src/engine/discovery.rs`):
//! SHA-256 of the compact JSON, keys sorted, of `{"event_name": label, "hooks": [{"async":
//! false, "command": C, "timeout": T, "type": "command"}]}` (a matcher, which Headspace's
//! groups do not have, would be in it too). So `hooks install --agent codex` appends its
//! groups after the user's (moving theirs would un-trust them), then writes one entry per
//! handler of its own; `uninstall` removes exactly those entries. Any other change to a
//! command un-trusts it, which is why the timeout is always written.

use super::install::{codex_timeout, io_error, is_ours, read, Forwarding, InstallError, Installed};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Installs Headspace's hooks into Codex's hooks file `hooks_file` ([`super::install::install`])
/// and trusts them in the `config.toml` beside it.
pub fn install(hooks_file: &Path, exe: &Path, url: &Forwarding) -> Result<Installed, InstallError> {
    let done = super::install::install(hooks_file, exe, url)?;
    trust(hooks_file)?;
    Ok(done)
}

/// Removes Headspace's trust entries (first, while the hooks file still shows where its hooks
/// are), then its hooks ([`super::install::uninstall`]).
pub fn uninstall(hooks_file: &Path) -> Result<bool, InstallError> {
    untrust(hooks_file)?;
    super::install::uninstall(hooks_file)
}

/// Codex's label for an event in a trust key (`UserPromptSubmit` → `user_prompt_submit`).
fn label(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The hash Codex trusts a command handler of `event` by (no matcher).
pub fn handler_hash(event: &str, command: &str, timeout: u64) -> String {
    // Keys in sorted order (the JSON map keeps insertion order).
    let identity = json!({
        "event_name": label(event),
        "hooks": [{"async": false, "command": command, "timeout": timeout, "type": "command"}],
    });
    let digest = Sha256::digest(identity.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The `config.toml` beside a Codex hooks file.
fn config_of(hooks_file: &Path) -> PathBuf {
    hooks_file.with_file_name("config.toml")
}

/// The trust entries (key, hash) of Headspace's handlers in the hooks file at `hooks_file`.
fn our_entries(hooks_file: &Path) -> Result<Vec<(String, String)>, InstallError> {
    let (_, v) = read(hooks_file)?;
    let source = std::path::absolute(hooks_file).map_err(io_error(hooks_file))?;
    let source = source.display().to_string();
    let mut out = Vec::new();
    let Some(events) = v.get("hooks").and_then(Value::as_object) else {
        return Ok(out);
    };
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                let command = handler.get("command").and_then(Value::as_str);
                let (Some(command), true) = (command, is_ours(handler)) else {
                    continue;
                };
                let timeout = handler
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .unwrap_or(codex_timeout(event));
                out.push((
                    format!("{source}:{}:{g}:{h}", label(event)),
                    handler_hash(event, command, timeout),
                ));
            }
        }
    }
    Ok(out)
}

/// The TOML header of a trust entry.
fn header(key: &str) -> String {
    // A JSON string is a TOML basic string (the same escapes).
    format!("[hooks.state.{}]", Value::String(key.to_string()))
}

/// `text` without the tables whose headers are in `headers` (each with the blank line
/// Headspace put before it).
fn without_tables(text: &str, headers: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            let was_skipping = skipping;
            skipping = headers.iter().any(|h| h == t);
            if skipping && out.last().is_some_and(|l| l.trim().is_empty()) {
                out.pop();
            }
            // The next table keeps a blank line before it.
            if was_skipping && !skipping && out.last().is_some_and(|l| !l.trim().is_empty()) {
                out.push("\n");
            }
        }
        if !skipping {
            out.push(line);
        }
    }
    out.concat()
}

/// Writes the trust entries of Headspace's hooks in `hooks_file` into the `config.toml`
/// beside it (replacing older ones of the same handlers), keeping its mode.
pub fn trust(hooks_file: &Path) -> Result<(), InstallError> {
    let entries = our_entries(hooks_file)?;
    let config = config_of(hooks_file);
    let text = match std::fs::read_to_string(&config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(InstallError::Io(config.display().to_string(), e)),
    };
    let headers: Vec<String> = entries.iter().map(|(k, _)| header(k)).collect();
    let mut text = without_tables(&text, &headers);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for (key, hash) in &entries {
        text.push_str(&format!(
            "\n{}\ntrusted_hash = {}\n",
            header(key),
            Value::String(hash.clone())
        ));
    }
    crate::fsutil::write_atomic_keeping(&config, text.as_bytes())
        .map(drop)
        .map_err(io_error(&config))
}

/// Removes the trust entries of Headspace's hooks in `hooks_file` from the `config.toml`
/// beside it (nothing else).
pub fn untrust(hooks_file: &Path) -> Result<(), InstallError> {
    let entries = our_entries(hooks_file)?;
    let config = config_of(hooks_file);
    let Ok(text) = std::fs::read_to_string(&config) else {
        return Ok(());
    };
    let headers: Vec<String> = entries.iter().map(|(k, _)| header(k)).collect();
    let kept = without_tables(&text, &headers);
    if kept != text {
        crate::fsutil::write_atomic_keeping(&config, kept.as_bytes())
            .map(drop)
            .map_err(io_error(&config))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_codexs_for_a_handler_it_ran() {
        // A handler Codex 0.171 trusted and ran (its own config.toml said so), default
        // timeout 600 and no matcher.
        assert_eq!(
            handler_hash(
                "SessionStart",
                "python3 /tmp/codex-lab/tools/hook_logger.py SessionStart /tmp/codex-lab/run1/logs/hooks.jsonl",
                600
            ),
            "sha256:757eb1875200255eaf77c2c862953efec0845f19d637ed64054f0e20326459a9"
        );
        assert_eq!(label("UserPromptSubmit"), "user_prompt_submit");
        assert_eq!(label("Stop"), "stop");
    }

    #[test]
    fn tables_are_removed_exactly() {
        let h = header("/h/hooks.json:stop:1:0");
        let original = "model = \"x\"\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n";
        let with = format!("{original}\n{h}\ntrusted_hash = \"sha256:1\"\n");
        assert_eq!(without_tables(&with, std::slice::from_ref(&h)), original);
        let between = format!("{original}\n{h}\ntrusted_hash = \"sha256:1\"\n\n[tui]\nx = 1\n");
        assert_eq!(
            without_tables(&between, &[h]),
            format!("{original}\n[tui]\nx = 1\n")
        );
    }
}
