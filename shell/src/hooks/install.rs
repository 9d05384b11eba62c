//! `headspace hooks install | uninstall | print`: Headspace's hooks merged into a Claude Code
//! `settings.json` without disturbing anything else, idempotently, after a backup.

use crate::fsutil::{self, Keep};
use headspace_core::kind::AgentKind;
use serde_json::{json, Map, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Every Claude Code event the server acts on.
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

/// Every Codex CLI event the server acts on (`Interrupt` is its `Stop` after Escape).
pub const CODEX_EVENTS: &[&str] = &[
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "Stop",
    "Interrupt",
];

/// Every Gemini CLI event the server acts on: not `PreCompress`, `BeforeModel`,
/// `AfterModel` or `BeforeToolSelection`, which come before every model call or with every
/// streamed piece, and which Gemini waits on.
pub const GEMINI_EVENTS: &[&str] = &[
    "SessionStart",
    "SessionEnd",
    "BeforeAgent",
    "AfterAgent",
    "BeforeTool",
    "AfterTool",
    "Notification",
];

/// The events installed for an agent CLI.
pub fn events(agent: AgentKind) -> &'static [&'static str] {
    match agent {
        AgentKind::Claude => EVENTS,
        AgentKind::Codex => CODEX_EVENTS,
        AgentKind::Gemini => GEMINI_EVENTS,
    }
}

/// Why the settings could not be changed; the file is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Reading or writing failed.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The file is not a JSON object (or its `hooks` is not one).
    #[error("{0} is not a settings file Headspace understands: {1}; it was left untouched")]
    Invalid(String, String),
    /// The settings path is a symlink that cannot be followed (its message names it).
    #[error("{0}")]
    Link(std::io::Error),
}

/// What `--url` may be, said in every refusal.
const URL_ACCEPTED: &str = "accepted: http://HOST:PORT with an optional path, e.g. \
    http://127.0.0.1:5055 or http://[::1]:5055/headspace (HOST is a name, an IPv4 address or \
    a bracketed IPv6 address; the path may hold only letters, digits and / . _ ~ -)";

/// A `--url` that was checked to be a plain `http://HOST:PORT[/path]` of safe characters,
/// so that it can never carry shell syntax into the hook command (which Claude Code runs
/// through a shell on every hook) nor send the hooks somewhere the forwarder cannot reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookUrl(String);

/// Why a `--url` was refused.
#[derive(Debug, thiserror::Error)]
#[error("refusing --url {url:?}: {why}; {URL_ACCEPTED}. Nothing was written")]
pub struct BadUrl {
    /// The URL as given.
    pub url: String,
    /// What is wrong with it.
    pub why: String,
}

impl HookUrl {
    /// Checks `url`: `http://HOST:PORT` with an optional path of letters, digits and
    /// `/._~-`, where HOST is a name, an IPv4 address or a bracketed IPv6 address.
    pub fn parse(url: &str) -> Result<HookUrl, BadUrl> {
        check_url(url).map_err(|why| BadUrl {
            url: url.to_string(),
            why,
        })?;
        Ok(HookUrl(url.to_string()))
    }

    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for HookUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with `url`, if anything.
fn check_url(url: &str) -> Result<(), String> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(match url.split_once("://") {
            Some((scheme, _)) => format!(
                "the scheme {scheme:?} is not supported (the hook forwarder speaks plain HTTP)"
            ),
            None => "it does not start with http://".into(),
        });
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or("the IPv6 address has no closing ]")?;
        addr.parse::<std::net::Ipv6Addr>()
            .map_err(|_| format!("{addr:?} is not an IPv6 address"))?;
        let port = after
            .strip_prefix(':')
            .ok_or("the port is missing after the IPv6 address (the forwarder needs one)")?;
        (None, port)
    } else {
        let (host, port) = authority
            .rsplit_once(':')
            .ok_or("the port is missing (the forwarder needs one)")?;
        (Some(host), port)
    };
    if let Some(host) = host {
        let name_char = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-';
        if host.is_empty() || host.starts_with(['.', '-']) || !host.chars().all(name_char) {
            return Err(format!(
                "the host {host:?} is not a host name or an IPv4 address"
            ));
        }
    }
    if port.is_empty()
        || port.len() > 5
        || !port.bytes().all(|b| b.is_ascii_digit())
        || !matches!(port.parse::<u16>(), Ok(1..))
    {
        return Err(format!("the port {port:?} is not a number from 1 to 65535"));
    }
    if let Some(bad) = path
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || "/._~-".contains(c)))
    {
        return Err(format!("the path holds {bad:?}"));
    }
    Ok(())
}

/// Where the installed hooks send their payloads, how, and with which credential: the
/// command hook names the server's token file (a path, never the token: `settings.json` is
/// read by more programs than Headspace); an HTTP hook carries the hook key, which posts
/// hooks and opens nothing else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forwarding {
    /// The server.
    pub url: HookUrl,
    /// The server's token file (`None`: the forwarder looks where the CLI does).
    pub token_file: Option<PathBuf>,
    /// How Claude Code hands the hooks over.
    pub transport: Transport,
    /// The hook key, for [`Transport::Http`].
    pub hook_key: Option<String>,
    /// The agent CLI whose hooks these are (Codex CLI's are command hooks only).
    pub agent: AgentKind,
}

/// How Claude Code hands a hook to Headspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Claude Code runs `headspace hook-forward`, which posts it (any version).
    Command,
    /// Claude Code posts it itself (`"type": "http"`, Claude Code 2.1.63 and later): no
    /// process is started per hook. SessionStart, which Claude Code never sends over HTTP,
    /// stays a command hook.
    Http,
}

/// The first Claude Code version whose hooks can be `"type": "http"`.
pub const HTTP_HOOKS_SINCE: (u32, u32, u32) = (2, 1, 63);

impl Transport {
    /// The transport for a Claude Code that prints `version` (`claude --version`, e.g.
    /// `2.1.332 (Claude Code)`): HTTP from [`HTTP_HOOKS_SINCE`] on, the command otherwise or
    /// when the version does not read.
    pub fn for_version(version: &str) -> Transport {
        let number = version.split_whitespace().next().unwrap_or("");
        let parts: Vec<u32> = number.split('.').map_while(|p| p.parse().ok()).collect();
        match parts.as_slice() {
            [a, b, c, ..] if (*a, *b, *c) >= HTTP_HOOKS_SINCE => Transport::Http,
            _ => Transport::Command,
        }
    }

    /// Its name, as `hooks print` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Command => "command",
            Transport::Http => "http",
        }
    }
}

/// The header an HTTP hook names its pane with (the server reads it as `tmux_pane`).
pub const PANE_HEADER: &str = "X-Headspace-Pane";

/// How long Claude Code waits for Headspace to take an HTTP hook, in seconds: the server
/// answers at once, and an agent must never wait long on a server that hangs.
pub const HTTP_TIMEOUT_SECONDS: u64 = 2;

impl Forwarding {
    /// Command hooks to `url`, the token found where the CLI finds it.
    pub fn to(url: HookUrl) -> Forwarding {
        Forwarding {
            url,
            token_file: None,
            transport: Transport::Command,
            hook_key: None,
            agent: AgentKind::Claude,
        }
    }
}

/// The forwarding command for one event: every argument shell-quoted, since Claude Code
/// runs it through `sh -c`.
pub fn command(exe: &Path, event: &str, to: &Forwarding) -> String {
    let mut c = format!(
        "{} hook-forward {} --url {}",
        shell_quote(&exe.display().to_string()),
        shell_quote(event),
        shell_quote(to.url.as_str())
    );
    if to.agent != AgentKind::Claude {
        c.push_str(" --agent ");
        c.push_str(to.agent.name());
    }
    if let Some(file) = &to.token_file {
        c.push_str(" --token-file ");
        c.push_str(&shell_quote(&file.display().to_string()));
    }
    c
}

/// `s` as one word for `sh`: as is when it holds only characters the shell gives no meaning
/// to, else in single quotes (inside which nothing is special; a `'` is ended, escaped and
/// reopened).
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// True for a hook Headspace installed: a command in this version's quoted form
/// (`'…/headspace' hook-forward Stop --url 'http://…'`) or an older version's unquoted one
/// (`…/headspace hook-forward Stop --url http://…`), or an HTTP hook carrying Headspace's
/// pane header, so upgrades (either way) and uninstall find them all.
pub(crate) fn is_ours(hook: &Value) -> bool {
    let command = hook
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains(" hook-forward ") && c.contains("headspace"));
    let http = hook.get("type").and_then(Value::as_str) == Some("http")
        && hook
            .get("headers")
            .and_then(Value::as_object)
            .is_some_and(|h| h.contains_key(PANE_HEADER));
    command || http
}

/// The hook entry for one event.
fn hook_entry(exe: &Path, event: &str, to: &Forwarding) -> Value {
    if to.agent == AgentKind::Codex {
        // The timeout is part of what Codex trusts (`codex_trust`): always written.
        return json!({
            "type": "command",
            "command": command(exe, event, to),
            "timeout": codex_timeout(event),
        });
    }
    if to.agent == AgentKind::Gemini {
        // Gemini's timeout is in milliseconds; the name is what its hook panel and its
        // "Hook(s) [...] failed" line show.
        return json!({
            "type": "command",
            "name": format!("headspace-{event}"),
            "command": command(exe, event, to),
            "timeout": GEMINI_TIMEOUT_MS,
        });
    }
    match (to.transport, &to.hook_key) {
        (Transport::Http, Some(key)) if event != "SessionStart" => json!({
            "type": "http",
            "url": format!("{}/hook/{event}", to.url.as_str().trim_end_matches('/')),
            "headers": {
                "Authorization": format!("Bearer {key}"),
                PANE_HEADER: "${TMUX_PANE}",
            },
            "allowedEnvVars": ["TMUX_PANE"],
            "timeout": HTTP_TIMEOUT_SECONDS,
        }),
        _ => json!({"type": "command", "command": command(exe, event, to)}),
    }
}

/// How long Gemini CLI waits on Headspace's hooks, in milliseconds: the forwarder returns at
/// once, and Gemini waits on every hook before it goes on.
pub const GEMINI_TIMEOUT_MS: u64 = 5_000;

/// The timeout Headspace's Codex hooks are installed with, in seconds: Codex clamps
/// `SessionEnd` and `Interrupt` hooks to 1–3 s; the forwarder returns at once anyway. Part of
/// what Codex trusts (`codex_trust`), so always written.
pub fn codex_timeout(event: &str) -> u64 {
    match event {
        "SessionEnd" | "Interrupt" => 2,
        _ => 10,
    }
}

/// The `hooks` object Headspace installs (Codex's groups have no matcher: its events that
/// take one match everything without it).
pub fn our_hooks(exe: &Path, url: &Forwarding) -> Value {
    let mut hooks = Map::new();
    for e in events(url.agent) {
        let group = match url.agent {
            AgentKind::Claude | AgentKind::Gemini => {
                json!({"matcher": "", "hooks": [hook_entry(exe, e, url)]})
            }
            AgentKind::Codex => json!({"hooks": [hook_entry(exe, e, url)]}),
        };
        hooks.insert(e.to_string(), json!([group]));
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
pub fn merge(settings: &mut Value, exe: &Path, url: &Forwarding) -> Result<(), String> {
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

pub(crate) fn read(path: &Path) -> Result<(Option<Vec<u8>>, Value), InstallError> {
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

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |e| InstallError::Io(path.display().to_string(), e)
}

/// The file behind `settings` (through a symlink); a dangling link is refused.
fn resolve(settings: &Path) -> Result<PathBuf, InstallError> {
    fsutil::write_target(settings).map_err(InstallError::Link)
}

/// Writes the settings file in place: through a symlink, keeping its mode and owner.
fn write_settings(settings: &Path, bytes: &[u8]) -> Result<(), InstallError> {
    fsutil::write_atomic_keeping(settings, bytes)
        .map(drop)
        .map_err(io_error(settings))
}

/// The mode and owner of the settings file `target` (which exists).
fn keep_of(target: &Path) -> Result<Keep, InstallError> {
    std::fs::metadata(target)
        .map(|m| Keep::of(&m))
        .map_err(io_error(target))
}

/// A backup left by an older version (which wrote it 0644) is narrowed to no more than the
/// settings file's own permission bits: it holds the same secrets.
fn narrow_backup(backup: &Path, keep: Keep) -> Result<(), InstallError> {
    let Ok(meta) = std::fs::symlink_metadata(backup) else {
        return Ok(());
    };
    let mode = meta.permissions().mode() & 0o7777;
    if meta.file_type().is_file() && mode & !keep.mode != 0 {
        std::fs::set_permissions(backup, std::fs::Permissions::from_mode(mode & keep.mode))
            .map_err(io_error(backup))?;
    }
    Ok(())
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("json");
    out.push(b'\n');
    out
}

/// What [`install`] did.
#[derive(Debug)]
pub struct Installed {
    /// The file written: the settings path or, when it is a symlink, the link's target.
    pub written: PathBuf,
    /// The backup, when one was written.
    pub backup: Option<PathBuf>,
}

/// Installs; idempotent. A symlinked settings file is written through (the link stays); the
/// file keeps its mode and owner, and the backup (next to `settings`, as given) gets them too.
/// For Codex CLI's hooks file, `codex_trust::install` also trusts them.
pub fn install(settings: &Path, exe: &Path, url: &Forwarding) -> Result<Installed, InstallError> {
    let target = resolve(settings)?;
    let (bytes, mut v) = read(&target)?;
    let mut clean = v.clone();
    strip(&mut clean);
    let backup = backup_path(settings);
    let mut wrote_backup = None;
    if let Some(b) = &bytes {
        let keep = keep_of(&target)?;
        // The backup keeps the file as it was before Headspace touched it: never a file
        // holding Headspace's own hooks (uninstall would put them back).
        if clean == v {
            fsutil::write_atomic_as(&backup, b, keep).map_err(io_error(&backup))?;
            wrote_backup = Some(backup);
        } else {
            narrow_backup(&backup, keep)?;
        }
    }
    merge(&mut v, exe, url)
        .map_err(|e| InstallError::Invalid(settings.display().to_string(), e))?;
    write_settings(&target, &pretty(&v))?;
    Ok(Installed {
        written: target,
        backup: wrote_backup,
    })
}

/// Removes exactly Headspace's hooks. When the rest equals the backup, the backup's bytes are
/// put back, so the file is restored byte for byte. Like [`install`], it writes through a
/// symlink and keeps the file's mode and owner. For Codex CLI's hooks file,
/// `codex_trust::uninstall` also removes their trust entries.
pub fn uninstall(settings: &Path) -> Result<bool, InstallError> {
    let target = resolve(settings)?;
    let (bytes, mut v) = read(&target)?;
    if bytes.is_none() {
        return Ok(false);
    }
    let before = v.clone();
    strip(&mut v);
    let backup = backup_path(settings);
    if let Ok(b) = std::fs::read(&backup) {
        if let Ok(original) = serde_json::from_slice::<Value>(&b) {
            let mut stripped = original.clone();
            strip(&mut stripped);
            // Byte for byte only from a backup of Headspace's hooks' absence.
            if stripped == v && stripped == original {
                write_settings(&target, &b)?;
                return Ok(true);
            }
        }
    }
    if v != before {
        write_settings(&target, &pretty(&v))?;
    }
    Ok(v != before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(u: &str) -> Forwarding {
        Forwarding::to(HookUrl::parse(u).unwrap())
    }

    #[test]
    fn merge_keeps_other_hooks_and_is_idempotent() {
        let mut s = json!({"model": "x", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}});
        let u = url("http://127.0.0.1:5055");
        merge(&mut s, Path::new("/usr/bin/headspace"), &u).unwrap();
        let once = s.clone();
        merge(&mut s, Path::new("/usr/bin/headspace"), &u).unwrap();
        assert_eq!(s, once);
        let stop = s["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "say done");
        assert_eq!(
            stop[1]["hooks"][0]["command"],
            "/usr/bin/headspace hook-forward Stop --url 'http://127.0.0.1:5055'"
        );
        strip(&mut s);
        assert_eq!(
            s,
            json!({"model": "x", "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}})
        );
    }

    #[test]
    fn every_argument_is_quoted() {
        assert_eq!(
            command(
                Path::new("/opt/my tools/headspace"),
                "Stop",
                &url("http://[::1]:5055/x")
            ),
            "'/opt/my tools/headspace' hook-forward Stop --url 'http://[::1]:5055/x'"
        );
        assert_eq!(
            command(Path::new("/h/headspace"), "a b;c", &url("http://h:1")),
            "/h/headspace hook-forward 'a b;c' --url 'http://h:1'"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn only_plain_http_urls_of_safe_characters_are_accepted() {
        for ok in [
            "http://127.0.0.1:5055",
            "http://localhost:5055/",
            "http://my-host.lan:8080/headspace/v1",
            "http://[::1]:5055",
            "http://[::ffff:127.0.0.1]:1/a_b.c~d-e",
        ] {
            assert_eq!(HookUrl::parse(ok).unwrap().as_str(), ok);
        }
        for (bad, why) in [
            ("http://127.0.0.1:5055;touch /tmp/pwned", "port"),
            ("http://127.0.0.1:5055/;touch /tmp/pwned", "path holds ';'"),
            ("http://127.0.0.1:5055/a b", "path holds ' '"),
            ("http://127.0.0.1:5055/`id`", "path holds '`'"),
            ("http://127.0.0.1:5055/$(id)", "path holds '$'"),
            ("http://127.0.0.1:5055/'x", "path holds '\\''"),
            ("http://127.0.0.1:5055/\"x", "path holds '\"'"),
            ("http://127.0.0.1:5055/x\ntouch y", "path holds '\\n'"),
            ("http://h$(id):5055", "host"),
            ("http://-x:5055", "host"),
            ("http://:5055", "host"),
            ("http://127.0.0.1", "port is missing"),
            ("http://127.0.0.1:", "port"),
            ("http://127.0.0.1:0", "port"),
            ("http://127.0.0.1:65536", "port"),
            ("http://127.0.0.1:+80", "port"),
            ("http://[::1]", "port is missing"),
            ("http://[::1;id]:5055", "IPv6"),
            ("http://[::1:5055", "closing ]"),
            ("https://127.0.0.1:5055", "scheme \"https\""),
            ("file:///etc/passwd", "scheme \"file\""),
            ("127.0.0.1:5055", "does not start with http://"),
            ("HTTP://127.0.0.1:5055", "scheme"),
            ("", "does not start"),
        ] {
            let e = HookUrl::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
            assert!(e.contains("accepted: http://HOST:PORT"), "{e}");
        }
    }

    /// Runs `cmd` with `sh -c` in `dir`; its stdout.
    fn sh(cmd: &str, dir: &Path) -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn the_generated_command_passes_each_argument_intact_through_sh() {
        let dir = std::env::temp_dir().join(format!("headspace-quote-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A folder name with everything the shell would act on.
        let bin = dir.join("my tools 'it''s' \"q\" $(touch ran1) `touch ran2`;touch ran3 [x]");
        std::fs::create_dir_all(&bin).unwrap();
        // Stand-in for headspace: prints each argument it receives on its own line.
        let exe = bin.join("headspace");
        std::fs::write(&exe, "#!/bin/sh\nprintf '%s\\n' \"$@\"\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Unquoted, `[::1]` is a glob that would match this file and change the argument.
        std::fs::create_dir_all(dir.join("http:/1:5055/~x")).unwrap();
        std::fs::write(dir.join("http:/1:5055/~x/a_b.c"), "").unwrap();
        let mut u = url("http://[::1]:5055/~x/a_b.c");
        for event in ["Stop", "a b", "x;touch ran4", "$(touch ran5)", "'"] {
            let cmd = command(&exe, event, &u);
            assert_eq!(
                sh(&cmd, &dir),
                format!("hook-forward\n{event}\n--url\n{}\n", u.url.as_str()),
                "{cmd}"
            );
        }
        let token = bin.join("tok en;$(touch ran6)");
        u.token_file = Some(token.clone());
        let cmd = command(&exe, "Stop", &u);
        assert_eq!(
            sh(&cmd, &dir),
            format!(
                "hook-forward\nStop\n--url\n{}\n--token-file\n{}\n",
                u.url.as_str(),
                token.display()
            ),
            "{cmd}"
        );
        for marker in ["ran1", "ran2", "ran3", "ran4", "ran5", "ran6"] {
            assert!(!dir.join(marker).exists(), "{marker} ran");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn http_hooks_from_2_1_63_on_carry_the_hook_key_and_the_pane_header() {
        assert_eq!(
            Transport::for_version("2.1.332 (Claude Code)"),
            Transport::Http
        );
        assert_eq!(Transport::for_version("2.1.63"), Transport::Http);
        assert_eq!(
            Transport::for_version("2.1.62 (Claude Code)"),
            Transport::Command
        );
        assert_eq!(Transport::for_version("1.9.200"), Transport::Command);
        assert_eq!(Transport::for_version("nonsense"), Transport::Command);
        let mut to = url("http://127.0.0.1:5055/");
        to.transport = Transport::Http;
        to.hook_key = Some("k3y".into());
        let hooks = our_hooks(Path::new("/usr/bin/headspace"), &to);
        let stop = &hooks["Stop"][0]["hooks"][0];
        assert_eq!(stop["type"], "http");
        assert_eq!(stop["url"], "http://127.0.0.1:5055/hook/Stop");
        assert_eq!(stop["headers"]["Authorization"], "Bearer k3y");
        assert_eq!(stop["headers"][PANE_HEADER], "${TMUX_PANE}");
        assert_eq!(stop["allowedEnvVars"], json!(["TMUX_PANE"]));
        assert!(is_ours(stop));
        // Claude Code never sends SessionStart over HTTP: it stays a command.
        assert_eq!(hooks["SessionStart"][0]["hooks"][0]["type"], "command");
        // Switching back and forth leaves one hook per event, and uninstall removes them all.
        let mut s =
            json!({"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://other/x"}]}]}});
        merge(&mut s, Path::new("/usr/bin/headspace"), &to).unwrap();
        merge(
            &mut s,
            Path::new("/usr/bin/headspace"),
            &url("http://127.0.0.1:5055"),
        )
        .unwrap();
        merge(&mut s, Path::new("/usr/bin/headspace"), &to).unwrap();
        assert_eq!(s["hooks"]["Stop"].as_array().unwrap().len(), 2);
        strip(&mut s);
        assert_eq!(
            s,
            json!({"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://other/x"}]}]}})
        );
    }

    #[test]
    fn older_unquoted_commands_are_recognised() {
        let old = "/usr/local/bin/headspace hook-forward Stop --url http://127.0.0.1:5055";
        assert!(is_ours(&json!({"type": "command", "command": old})));
        let new = command(
            Path::new("/usr/local/bin/headspace"),
            "Stop",
            &url("http://127.0.0.1:5055"),
        );
        assert!(is_ours(&json!({"type": "command", "command": new})));
        assert!(!is_ours(&json!({"type": "command", "command": "say done"})));
    }
}
