//! `headspace hooks install | uninstall` on a real settings file, and the installed command.

use std::io::{Read, Write};
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
    let original = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/hooks/real_settings_entireio-cli.json"
    ))
    .unwrap();
    let dir = temp("install");
    let settings = dir.join("settings.json");
    std::fs::write(&settings, &original).unwrap();
    for _ in 0..2 {
        let out = Command::new(bin())
            .args([
                "hooks",
                "install",
                "--url",
                "http://127.0.0.1:5055",
                "--settings",
            ])
            .arg(&settings)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let before: serde_json::Value = serde_json::from_slice(&original).unwrap();
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(
        after["permissions"], before["permissions"],
        "other settings untouched"
    );
    for event in headspace::hooks_install::EVENTS {
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
