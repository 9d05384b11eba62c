//! `headspace hooks install | uninstall | print`: Headspace's hooks merged into a Claude Code
//! `settings.json` without disturbing anything else, idempotently, after a backup.

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Every event the server acts on.
pub const EVENTS: &[&str] = &[
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStop",
    "PreCompact",
];

/// Why the settings could not be changed; the file is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Reading or writing failed.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The file is not a JSON object (or its `hooks` is not one).
    #[error("{0} is not a settings file Headspace understands: {1}; it was left untouched")]
    Invalid(String, String),
}

/// The forwarding command for one event.
pub fn command(exe: &Path, event: &str, url: &str) -> String {
    format!(
        "{} hook-forward {event} --url {url}",
        shell_quote(&exe.display().to_string())
    )
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// True for a hook command Headspace installed.
fn is_ours(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains(" hook-forward ") && c.contains("headspace"))
}

/// The `hooks` object Headspace installs.
pub fn our_hooks(exe: &Path, url: &str) -> Value {
    let mut hooks = Map::new();
    for e in EVENTS {
        hooks.insert(e.to_string(), json!([{"matcher": "", "hooks": [{"type": "command", "command": command(exe, e, url)}]}]));
    }
    Value::Object(hooks)
}

/// Removes Headspace's hooks from a settings value; groups and events left empty go too.
pub fn strip(settings: &mut Value) {
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
        return;
    };
    for groups in hooks.values_mut() {
        let Some(list) = groups.as_array_mut() else {
            continue;
        };
        let before = list.len();
        for group in list.iter_mut() {
            if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                inner.retain(|h| !is_ours(h));
            }
        }
        list.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|h| !h.is_empty())
        });
        if list.is_empty() && before > 0 {
            *groups = Value::Null;
        }
    }
    hooks.retain(|_, v| !v.is_null());
    if hooks.is_empty() {
        settings.as_object_mut().expect("object").remove("hooks");
    }
}

/// Adds Headspace's hooks (after removing any older version of them).
pub fn merge(settings: &mut Value, exe: &Path, url: &str) -> Result<(), String> {
    strip(settings);
    let obj = settings
        .as_object_mut()
        .ok_or("the file is not a JSON object")?;
    let hooks = obj.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks
        .as_object_mut()
        .ok_or("its \"hooks\" is not an object")?;
    let ours = our_hooks(exe, url);
    for (event, groups) in ours.as_object().expect("object") {
        let list = hooks.entry(event.clone()).or_insert_with(|| json!([]));
        let list = list
            .as_array_mut()
            .ok_or_else(|| format!("its hooks.{event} is not a list"))?;
        list.extend(groups.as_array().expect("list").iter().cloned());
    }
    Ok(())
}

fn backup_path(settings: &Path) -> PathBuf {
    crate::fsutil::with_suffix(settings, ".headspace-backup")
}

fn read(path: &Path) -> Result<(Option<Vec<u8>>, Value), InstallError> {
    let shown = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => {
            let v: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
                json!({})
            } else {
                serde_json::from_slice(&bytes)
                    .map_err(|e| InstallError::Invalid(shown.clone(), e.to_string()))?
            };
            if !v.is_object() {
                return Err(InstallError::Invalid(shown, "not a JSON object".into()));
            }
            Ok((Some(bytes), v))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, json!({}))),
        Err(e) => Err(InstallError::Io(shown, e)),
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), InstallError> {
    crate::fsutil::write_atomic(path, bytes)
        .map_err(|e| InstallError::Io(path.display().to_string(), e))
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("json");
    out.push(b'\n');
    out
}

/// Installs; returns the backup's path when one was written. Idempotent.
pub fn install(settings: &Path, exe: &Path, url: &str) -> Result<Option<PathBuf>, InstallError> {
    let (bytes, mut v) = read(settings)?;
    let mut clean = v.clone();
    strip(&mut clean);
    let backup = backup_path(settings);
    let mut wrote_backup = None;
    // The backup keeps the file as it was before Headspace touched it.
    if let Some(b) = &bytes {
        if clean == v || !backup.exists() {
            write_atomic(&backup, b)?;
            wrote_backup = Some(backup);
        }
    }
    merge(&mut v, exe, url)
        .map_err(|e| InstallError::Invalid(settings.display().to_string(), e))?;
    write_atomic(settings, &pretty(&v))?;
    Ok(wrote_backup)
}

/// Removes exactly Headspace's hooks. When the rest equals the backup, the backup's bytes are
/// put back, so the file is restored byte for byte.
pub fn uninstall(settings: &Path) -> Result<bool, InstallError> {
    let (bytes, mut v) = read(settings)?;
    if bytes.is_none() {
        return Ok(false);
    }
    let before = v.clone();
    strip(&mut v);
    let backup = backup_path(settings);
    if let Ok(b) = std::fs::read(&backup) {
        if let Ok(mut original) = serde_json::from_slice::<Value>(&b) {
            strip(&mut original);
            if original == v {
                write_atomic(settings, &b)?;
                return Ok(true);
            }
        }
    }
    if v != before {
        write_atomic(settings, &pretty(&v))?;
    }
    Ok(v != before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_other_hooks_and_is_idempotent() {
        let mut s = json!({"model": "x", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}});
        merge(
            &mut s,
            Path::new("/usr/bin/headspace"),
            "http://127.0.0.1:5055",
        )
        .unwrap();
        let once = s.clone();
        merge(
            &mut s,
            Path::new("/usr/bin/headspace"),
            "http://127.0.0.1:5055",
        )
        .unwrap();
        assert_eq!(s, once);
        let stop = s["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "say done");
        assert!(stop[1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook-forward Stop --url http://127.0.0.1:5055"));
        strip(&mut s);
        assert_eq!(
            s,
            json!({"model": "x", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}})
        );
    }

    #[test]
    fn paths_with_spaces_are_quoted() {
        assert_eq!(
            command(Path::new("/opt/my tools/headspace"), "Stop", "u"),
            "'/opt/my tools/headspace' hook-forward Stop --url u"
        );
    }
}
