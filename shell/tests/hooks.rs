//! `headspace hooks install | uninstall` on a real settings file, and the installed command.

mod common;
use common::run_ok;
use std::fs::Permissions;
use std::io::{Read, Write};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_headspace")
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("headspace-hooks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn install_twice_keeps_other_hooks_and_uninstall_restores_the_file_exactly() {
    // A real user's settings from the corpus when it is here; else one of the same shape
    // written for this test (other hooks, matchers, permissions, env, key order).
    let real = std::env::var_os("HEADSPACE_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus")
        })
        .join("hooks/real_settings_entireio-cli.json");
    let original = std::fs::read(&real).unwrap_or_else(|_| {
        eprintln!("no corpus at {}: using the test's own settings file", real.display());
        br#"{
  "permissions": {
    "allow": ["Bash(cargo test:*)", "Read(./**)"],
    "deny": ["Read(./.env)"]
  },
  "env": { "RUST_LOG": "info" },
  "hooks": {
    "Stop": [
      { "matcher": "", "hooks": [ { "type": "command", "command": "entire hooks claude-code stop" } ] }
    ],
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./scripts/guard.sh", "timeout": 5 } ] }
    ]
  },
  "model": "sonnet"
}
"#
        .to_vec()
    });
    let dir = temp("install");
    let settings = dir.join("settings.json");
    std::fs::write(&settings, &original).unwrap();
    for _ in 0..2 {
        run_ok(
            Command::new(bin())
                .args(["hooks", "install", "--url", "http://127.0.0.1:5055"])
                .arg("--settings")
                .arg(&settings),
        );
    }
    let before: serde_json::Value = serde_json::from_slice(&original).unwrap();
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(
        after["permissions"], before["permissions"],
        "other settings untouched"
    );
    for event in headspace::hooks::install::EVENTS {
        let groups = after["hooks"][event]
            .as_array()
            .unwrap_or_else(|| panic!("{event} missing"));
        let ours = groups
            .iter()
            .filter(|g| {
                g["hooks"][0]["command"]
                    .as_str()
                    .unwrap_or("")
                    .contains(" hook-forward ")
            })
            .count();
        assert_eq!(ours, 1, "{event}: installed once");
        if let Some(old) = before["hooks"][event].as_array() {
            assert_eq!(
                &groups[..old.len()],
                &old[..],
                "{event}: the user's hooks kept, in order"
            );
        }
    }
    // Key order of the user's file is kept.
    let keys: Vec<&String> = after.as_object().unwrap().keys().collect();
    assert_eq!(keys, before.as_object().unwrap().keys().collect::<Vec<_>>());
    let backup = dir.join("settings.json.headspace-backup");
    assert_eq!(std::fs::read(&backup).unwrap(), original);

    let out = Command::new(bin())
        .args(["hooks", "uninstall", "--settings"])
        .arg(&settings)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(&settings).unwrap(),
        original,
        "restored byte for byte"
    );

    // A settings file that is not JSON is refused and left alone.
    std::fs::write(&settings, b"{ oops").unwrap();
    let out = Command::new(bin())
        .args(["hooks", "install", "--settings"])
        .arg(&settings)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("left untouched"));
    assert_eq!(std::fs::read(&settings).unwrap(), b"{ oops");
    // A missing file is created.
    let fresh = dir.join("new/settings.json");
    assert!(Command::new(bin())
        .args(["hooks", "install", "--settings"])
        .arg(&fresh)
        .status()
        .unwrap()
        .success());
    assert!(std::fs::read_to_string(&fresh)
        .unwrap()
        .contains("hook-forward Stop"));
}

fn run_forward(url: &str, payload: &[u8]) -> (std::process::Output, Duration) {
    let t0 = Instant::now();
    let mut child = Command::new(bin())
        .args(["hook-forward", "Stop", "--url", url])
        .env("TMUX_PANE", "%42")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let out = child.wait_with_output().unwrap();
    (out, t0.elapsed())
}

#[test]
fn the_installed_command_prints_nothing_and_returns_at_once_even_with_no_server() {
    let payload = br#"{"session_id":"s","hook_event_name":"Stop","last_assistant_message":"done"}"#;
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let (out, took) = run_forward("http://127.0.0.1:1", payload);
        assert!(out.status.success());
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "prints nothing"
        );
        best = best.min(took);
    }
    eprintln!("hook-forward with no server: {best:?}");
    assert!(best < Duration::from_millis(100), "took {best:?}");
}

#[test]
fn the_installed_command_posts_the_payload_with_pane_and_stamp() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let payload = br#"{"session_id":"s","hook_event_name":"Stop","last_assistant_message":"done"}"#;
    let (out, _) = run_forward(&url, payload);
    assert!(out.status.success() && out.stdout.is_empty());
    // The detached half posts after the command has exited.
    listener.set_nonblocking(false).unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = conn.read(&mut chunk) {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap();
            if body.len() >= len {
                break;
            }
        }
    }
    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
    let text = String::from_utf8_lossy(&buf).into_owned();
    assert!(text.starts_with("POST /hook/Stop HTTP/1.1"), "{text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["tmux_pane"], "%42");
    assert_eq!(body["last_assistant_message"], "done");
    assert!(
        headspace_core::Timestamp::parse_rfc3339(body["emitted_at"].as_str().unwrap()).is_some()
    );
}

fn hooks_cmd(args: &[&str], settings: &Path) -> std::process::Output {
    Command::new(bin())
        .arg("hooks")
        .args(args)
        .arg("--settings")
        .arg(settings)
        .output()
        .unwrap()
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o7777
}

fn owner(path: &Path) -> (u32, u32) {
    let m = std::fs::metadata(path).unwrap();
    (m.uid(), m.gid())
}

const USER_SETTINGS: &str = r#"{
  "env": {"ANTHROPIC_API_KEY": "sk-secret"},
  "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]}
}
"#;

#[test]
fn a_private_settings_file_stays_private() {
    let dir = temp("mode");
    let settings = dir.join("settings.json");
    let backup = dir.join("settings.json.headspace-backup");
    std::fs::write(&settings, USER_SETTINGS).unwrap();
    std::fs::set_permissions(&settings, Permissions::from_mode(0o600)).unwrap();
    ok(&hooks_cmd(&["install"], &settings));
    assert_eq!(mode(&settings), 0o600, "settings widened by install");
    assert_eq!(mode(&backup), 0o600, "backup wider than the settings");
    ok(&hooks_cmd(&["uninstall"], &settings));
    assert_eq!(mode(&settings), 0o600, "settings widened by uninstall");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_SETTINGS);

    // A file Headspace creates is private too: settings can hold API keys.
    let fresh = dir.join("new/settings.json");
    ok(&hooks_cmd(&["install"], &fresh));
    assert_eq!(mode(&fresh), 0o600);
}

#[test]
fn a_settings_file_owned_by_another_user_keeps_its_owner_and_mode() {
    let dir = temp("owner");
    let settings = dir.join("settings.json");
    let backup = dir.join("settings.json.headspace-backup");
    std::fs::write(&settings, USER_SETTINGS).unwrap();
    // Another owner (a file made by `sudo`, or root installing for a user) is kept, with its
    // own mode, on the settings and the backup.
    if owner(&settings).0 != 0 {
        eprintln!("not root: cannot give the file to another user; skipped");
        return;
    }
    std::os::unix::fs::chown(&settings, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&settings, Permissions::from_mode(0o640)).unwrap();
    ok(&hooks_cmd(&["install"], &settings));
    assert_eq!(
        owner(&settings),
        (NOBODY, NOBODY),
        "owner changed by install"
    );
    assert_eq!(mode(&settings), 0o640);
    assert_eq!(owner(&backup), (NOBODY, NOBODY), "backup's owner");
    assert_eq!(mode(&backup), 0o640);
    ok(&hooks_cmd(&["uninstall"], &settings));
    assert_eq!(
        owner(&settings),
        (NOBODY, NOBODY),
        "owner changed by uninstall"
    );
    assert_eq!(mode(&settings), 0o640);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_SETTINGS);
}

/// uid and gid of `nobody` / `nogroup`.
const NOBODY: u32 = 65534;

#[test]
fn a_symlinked_settings_file_is_written_through_and_the_link_kept() {
    let dir = temp("link");
    let real = dir.join("dotfiles/claude/settings.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, USER_SETTINGS).unwrap();
    std::fs::set_permissions(&real, Permissions::from_mode(0o600)).unwrap();
    // ~/.claude/settings.json -> ../dotfiles/middle.json -> claude/settings.json: a chain of
    // relative links, each resolved from its own folder.
    std::fs::create_dir_all(dir.join("claude")).unwrap();
    let link = dir.join("claude/settings.json");
    symlink("../dotfiles/middle.json", &link).unwrap();
    symlink("claude/settings.json", dir.join("dotfiles/middle.json")).unwrap();

    let out = hooks_cmd(&["install"], &link);
    ok(&out);
    let is_link = |p: &Path| {
        std::fs::symlink_metadata(p)
            .unwrap()
            .file_type()
            .is_symlink()
    };
    assert!(is_link(&link), "the link was replaced by a file");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../dotfiles/middle.json")
    );
    assert!(is_link(&dir.join("dotfiles/middle.json")));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!(
        "in {} (a link to {})",
        link.display(),
        real.display()
    )));
    let installed = std::fs::read_to_string(&real).unwrap();
    assert!(installed.contains("hook-forward Stop"), "{installed}");
    assert!(installed.contains("say done"));
    assert_eq!(mode(&real), 0o600);
    // The backup sits next to the link the user named, not in the dotfiles repository.
    let backup = dir.join("claude/settings.json.headspace-backup");
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), USER_SETTINGS);
    assert!(!dir
        .join("dotfiles/claude/settings.json.headspace-backup")
        .exists());
    // Nothing left behind in either folder.
    for d in ["claude", "dotfiles", "dotfiles/claude"] {
        for e in std::fs::read_dir(dir.join(d)).unwrap() {
            let name = e.unwrap().file_name();
            assert!(
                !name.to_string_lossy().contains(".tmp."),
                "{name:?} left in {d}"
            );
        }
    }

    ok(&hooks_cmd(&["uninstall"], &link));
    assert!(is_link(&link), "the link was replaced by uninstall");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), USER_SETTINGS);
    assert_eq!(mode(&real), 0o600);

    // A dangling link: a clear error, nothing written anywhere.
    let dangling = dir.join("claude/dangling.json");
    symlink("../dotfiles/missing.json", &dangling).unwrap();
    for action in ["install", "uninstall"] {
        let out = hooks_cmd(&[action], &dangling);
        assert_eq!(out.status.code(), Some(1), "{action}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is a symlink to ../dotfiles/missing.json which does not exist"),
            "{err}"
        );
        assert!(is_link(&dangling));
        assert!(!dir.join("dotfiles/missing.json").exists());
        assert!(!dir.join("claude/dangling.json.headspace-backup").exists());
    }
}

#[test]
fn a_url_that_would_run_a_command_is_refused_and_nothing_written() {
    let dir = temp("url");
    let settings = dir.join("settings.json");
    std::fs::write(&settings, USER_SETTINGS).unwrap();
    let marker = dir.join("pwned");
    let evil = format!("http://127.0.0.1:5055;touch {}", marker.display());
    for action in ["install", "print"] {
        let out = hooks_cmd(&[action, "--url", &evil], &settings);
        assert_eq!(out.status.code(), Some(1), "{action} accepted {evil}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refusing --url"), "{err}");
        assert!(err.contains("accepted: http://HOST:PORT"), "{err}");
        assert!(out.stdout.is_empty(), "{action} printed a command");
    }
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_SETTINGS);
    assert!(!dir.join("settings.json.headspace-backup").exists());
    assert!(!marker.exists());
}

#[test]
fn the_installed_command_runs_through_sh_and_reaches_the_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let dir = temp("sh");
    let settings = dir.join("settings.json");
    ok(&hooks_cmd(&["install", "--url", &url], &settings));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    let cmd = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        cmd.contains(&format!(" hook-forward Stop --url '{url}' --token-file /")),
        "{cmd}"
    );
    // `hooks print` shows the same quoted command.
    let printed = hooks_cmd(&["print", "--url", &url], &settings);
    ok(&printed);
    let printed: serde_json::Value = serde_json::from_slice(&printed.stdout).unwrap();
    assert_eq!(printed["hooks"]["Stop"][0]["hooks"][0]["command"], cmd);
    // As Claude Code runs it.
    let mut child = Command::new("sh")
        .args(["-c", &cmd])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"session_id":"s","hook_event_name":"Stop"}"#)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut head = [0u8; 64];
    let n = conn.read(&mut head).unwrap();
    assert!(
        head[..n].starts_with(b"POST /hook/Stop HTTP/1.1"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
}

#[test]
fn hooks_from_the_older_unquoted_version_are_upgraded_and_removed() {
    let dir = temp("upgrade");
    let settings = dir.join("settings.json");
    let backup = dir.join("settings.json.headspace-backup");
    // What the older version left: its unquoted commands after the user's hook, and a 0644
    // backup of the file as it was.
    let mut old: serde_json::Value = serde_json::from_str(USER_SETTINGS).unwrap();
    for event in headspace::hooks::install::EVENTS {
        let cmd =
            format!("/usr/local/bin/headspace hook-forward {event} --url http://127.0.0.1:5055");
        let list = old["hooks"][event].as_array().cloned().unwrap_or_default();
        let mut list = list;
        list.push(
            serde_json::json!({"matcher": "", "hooks": [{"type": "command", "command": cmd}]}),
        );
        old["hooks"][event] = serde_json::Value::Array(list);
    }
    std::fs::write(&settings, serde_json::to_vec_pretty(&old).unwrap()).unwrap();
    std::fs::set_permissions(&settings, Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&backup, USER_SETTINGS).unwrap();
    std::fs::set_permissions(&backup, Permissions::from_mode(0o644)).unwrap();

    ok(&hooks_cmd(&["install"], &settings));
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    for event in headspace::hooks::install::EVENTS {
        let commands: Vec<&str> = after["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|g| g["hooks"][0]["command"].as_str())
            .filter(|c| c.contains(" hook-forward "))
            .collect();
        assert_eq!(commands.len(), 1, "{event}: {commands:?}");
        assert!(
            commands[0].contains(&format!(
                " hook-forward {event} --url 'http://127.0.0.1:5055' --token-file /"
            )),
            "{event}: not upgraded: {}",
            commands[0]
        );
    }
    assert_eq!(after["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
    assert_eq!(
        std::fs::read_to_string(&backup).unwrap(),
        USER_SETTINGS,
        "the backup of the original is kept"
    );
    assert_eq!(mode(&backup), 0o600, "the older 0644 backup narrowed");

    // Uninstall removes the (now quoted) hooks, and an older unquoted one left anywhere.
    let mut mixed = after.clone();
    mixed["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(old["hooks"]["Stop"][1].clone());
    std::fs::write(&settings, serde_json::to_vec_pretty(&mixed).unwrap()).unwrap();
    ok(&hooks_cmd(&["uninstall"], &settings));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_SETTINGS);
    assert_eq!(mode(&settings), 0o600);
}

/// `auto` picks Claude Code's own HTTP hooks from 2.1.63 on (the version from `claude
/// --version`, or given), and the command hook before; SessionStart stays a command.
#[test]
fn the_transport_follows_the_claude_code_version() {
    let dir = temp("transport");
    let settings = dir.join("settings.json");
    let key = dir.join("hook-key");
    std::fs::write(&key, "abc123\n").unwrap();
    std::fs::set_permissions(&key, Permissions::from_mode(0o600)).unwrap();
    let install = |version: &str| {
        let out = run_ok(
            Command::new(bin())
                .args(["hooks", "install", "--claude-version", version])
                .arg("--hook-key-file")
                .arg(&key)
                .arg("--settings")
                .arg(&settings),
        );
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
        (v, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (old, said) = install("2.1.62 (Claude Code)");
    assert_eq!(old["hooks"]["Stop"][0]["hooks"][0]["type"], "command");
    assert!(said.contains("command hooks (Claude Code 2.1.62"), "{said}");
    let (new, said) = install("2.1.332 (Claude Code)");
    let stop = &new["hooks"]["Stop"][0]["hooks"][0];
    assert_eq!(stop["type"], "http", "{said}\n{new}");
    assert_eq!(stop["headers"]["Authorization"], "Bearer abc123");
    assert_eq!(
        new["hooks"]["SessionStart"][0]["hooks"][0]["type"],
        "command"
    );
    assert!(said.contains("http hooks (Claude Code 2.1.332"), "{said}");
    assert_eq!(
        new["hooks"]["Stop"].as_array().unwrap().len(),
        1,
        "replaced, not added"
    );
    // Back to the command hook, and uninstall removes every kind.
    let (back, _) = install("2.1.0");
    assert_eq!(back["hooks"]["Stop"][0]["hooks"][0]["type"], "command");
    let out = Command::new(bin())
        .args(["hooks", "uninstall"])
        .arg("--settings")
        .arg(&settings)
        .output()
        .unwrap();
    assert!(out.status.success());
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert!(after.get("hooks").is_none(), "{after}");
}
