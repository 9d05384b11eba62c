//! Codex CLI agents from the project's own rollout fixtures (`testkit::synth_codex`), on a
//! real server and PostgreSQL: a session becomes one agent of kind `codex`, every typed prompt
//! and every reply is exactly one turn whether its hooks arrive, arrive early or are lost,
//! through a SIGKILL of the server; injected context and the aborted-turn notice are no
//! turns; a transcript path outside the codex dir is refused; and `hooks install --agent
//! codex` appends its hooks after the user's, trusts exactly them in `config.toml`, and
//! uninstall puts both files back byte for byte. The real Codex CLI is driven in
//! `real_codex.rs`.

mod common;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::Line;
use headspace_testkit::synth_codex::CodexSessionWriter;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

fn write(codex: &Path, w: &CodexSessionWriter, lines: &[Line]) {
    let text: String = lines.iter().map(|l| format!("{}\n", l.json)).collect();
    append(&codex.join(w.path()), &text);
}

fn post(server: &Server, codex: &Path, w: &CodexSessionWriter, event: &str, extra: Value) {
    let mut body: Value =
        serde_json::from_slice(&w.hook(&codex.display().to_string(), event, extra)).unwrap();
    // As `hook-forward --agent codex` sends it: stamped, and with the daemon's pane, which
    // the server must not believe.
    body["emitted_at"] = json!(Timestamp(now_ms()).to_string());
    body["tmux_pane"] = json!("%0");
    let (status, answer) = server.post(
        &format!("/hook/codex/{event}"),
        &serde_json::to_vec(&body).unwrap(),
    );
    assert_eq!(status, 200, "{event}: {answer}");
}

#[test]
fn a_codex_session_is_one_agent_with_each_turn_once_whatever_its_hooks_do() {
    let Some(db) = fresh_db("codex_turns") else {
        return;
    };
    let root = temp_dir("codex-turns");
    let (claude, codex) = (root.join("claude"), root.join("codex"));
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::create_dir_all(&codex).unwrap();
    let codex_arg = codex.display().to_string();
    let args = ["--codex-dir", codex_arg.as_str()];
    let server = Server::start(&db, &claude, &args);
    let mut w = CodexSessionWriter::new(1, Timestamp(now_ms()));
    let sid = w.session_id.clone();

    // Turn 1: every hook arrives, the prompt's before its line.
    post(
        &server,
        &codex,
        &w,
        "SessionStart",
        json!({"source": "startup"}),
    );
    let mut lines = vec![w.meta()];
    lines.extend(w.start_turn());
    write(&codex, &w, &lines);
    post(
        &server,
        &codex,
        &w,
        "UserPromptSubmit",
        json!({"prompt": "fix the build"}),
    );
    let prompt = w.prompt("fix the build");
    let (shell, call) = w.shell("cargo build", "ok", 0);
    post(
        &server,
        &codex,
        &w,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "cargo build"}, "tool_use_id": call}),
    );
    let mut lines = vec![prompt];
    lines.extend(shell);
    lines.push(w.agent_text("Fixed."));
    lines.push(w.usage(1200, 1000, 40));
    lines.push(w.complete("Fixed."));
    write(&codex, &w, &lines);
    post(
        &server,
        &codex,
        &w,
        "Stop",
        json!({"last_assistant_message": "Fixed."}),
    );
    let card = wait_for(Duration::from_secs(20), || {
        let c = server.try_json(&format!("/api/agents/{sid}"))?;
        (c["kind"] == "codex").then_some(c)
    })
    .unwrap_or_else(|| panic!("no codex agent:\n{}", server.log()));
    assert_eq!(card["project"], "codex1", "{card}");
    assert_eq!(
        card["tmux_pane"],
        Value::Null,
        "a Codex hook's pane is the daemon's: {card}"
    );
    assert_eq!(turns_in_order(&server, &sid, 2).len(), 2);
    // Its usage, priced as the model its turn named (gpt-5-codex: as gpt-5): 200 new input
    // tokens, 1000 read from the cache, 40 out.
    let usage = wait_for(Duration::from_secs(20), || {
        let u = server.try_json(&format!("/api/agents/{sid}/usage"))?;
        (u.to_string().contains("gpt-5-codex")).then_some(u)
    })
    .unwrap_or_else(|| panic!("no usage of gpt-5-codex:\n{}", server.log()));
    let want = (200.0 * 1.25 + 1000.0 * 0.125 + 40.0 * 10.0) / 1e6;
    let cost = usage["cost_usd"].as_f64().unwrap_or(-1.0);
    assert!((cost - want).abs() < 1e-9, "{cost} for {want}: {usage}");

    // Turn 2: every hook lost. Turn 3, the same words: only its prompt hook arrives.
    let mut lines = w.start_turn();
    lines.push(w.prompt("ok?"));
    lines.push(w.agent_text("Yes."));
    lines.push(w.complete("Yes."));
    write(&codex, &w, &lines);
    let mut lines = w.start_turn();
    post(
        &server,
        &codex,
        &w,
        "UserPromptSubmit",
        json!({"prompt": "ok?"}),
    );
    lines.push(w.prompt("ok?"));
    lines.push(w.agent_text("Yes."));
    lines.push(w.complete("Yes."));
    write(&codex, &w, &lines);
    assert_eq!(turns_in_order(&server, &sid, 6).len(), 6);

    // The server is killed; turn 4 is interrupted while it is down, its hooks lost.
    server.kill();
    let mut lines = w.start_turn();
    lines.push(w.prompt("slow please"));
    lines.extend(w.interrupted());
    write(&codex, &w, &lines);
    let server = Server::start(&db, &claude, &args);
    // Turn 5: its Stop hook comes before its lines are written.
    let mut lines = w.start_turn();
    lines.push(w.prompt("after"));
    write(&codex, &w, &lines);
    post(
        &server,
        &codex,
        &w,
        "Stop",
        json!({"last_assistant_message": "After the interrupt."}),
    );
    let lines = [
        w.agent_text("After the interrupt."),
        w.complete("After the interrupt."),
    ];
    write(&codex, &w, &lines);

    let want: Vec<(String, String)> = [
        ("user", "fix the build"),
        ("agent", "Fixed."),
        ("user", "ok?"),
        ("agent", "Yes."),
        ("user", "ok?"),
        ("agent", "Yes."),
        ("user", "slow please"),
        ("user", "after"),
        ("agent", "After the interrupt."),
    ]
    .iter()
    .map(|(a, t)| (a.to_string(), t.to_string()))
    .collect();
    let got = turns_in_order(&server, &sid, want.len());
    std::thread::sleep(Duration::from_millis(500));
    let again = turns_in_order(&server, &sid, want.len());
    assert_eq!(got, want, "{}", server.log());
    assert_eq!(again, want, "no turn came twice late");
    let agents = server.json("/api/agents");
    let codex_agents: Vec<&Value> = agents
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "codex")
        .collect();
    assert_eq!(codex_agents.len(), 1, "{agents}");
    let (status, body) = server.get(&format!("/api/agents/{sid}/wait?timeout=20"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"idle\""), "{body}");
    // Claude Code's /clear is not typed into Codex.
    let (status, body) = server.post(&format!("/api/agents/{sid}/clear"), b"");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("Codex CLI has no clear"), "{body}");
}

#[test]
fn a_codex_hook_naming_a_transcript_outside_the_codex_dir_reads_nothing() {
    let Some(db) = fresh_db("codex_outside") else {
        return;
    };
    let root = temp_dir("codex-outside");
    let (claude, codex, elsewhere) = (root.join("claude"), root.join("codex"), root.join("x"));
    for d in [&claude, &codex, &elsewhere] {
        std::fs::create_dir_all(d).unwrap();
    }
    let codex_arg = codex.display().to_string();
    let server = Server::start(&db, &claude, &["--codex-dir", codex_arg.as_str()]);
    let mut w = CodexSessionWriter::new(2, Timestamp(now_ms()));
    let mut lines = vec![w.meta()];
    lines.extend(w.start_turn());
    lines.push(w.prompt("secret prompt in another folder"));
    write(&elsewhere, &w, &lines);
    // The hook names the file outside the codex dir (and a Claude route would not take it
    // either): refused, nothing read.
    post(
        &server,
        &elsewhere,
        &w,
        "SessionStart",
        json!({"source": "startup"}),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let t = server.try_json(&format!("/api/agents/{}/turns", w.session_id));
    let n = t.as_ref().and_then(Value::as_array).map_or(0, Vec::len);
    assert_eq!(n, 0, "{t:?}");
    assert!(
        server
            .log()
            .contains("transcript_path outside the codex dir refused"),
        "{}",
        server.log()
    );
    // An unknown agent kind in the route is no hook.
    let (status, _) = server.post("/hook/gpt/Stop", b"{\"session_id\":\"s\"}");
    assert_eq!(status, 404);
}

#[test]
fn hooks_install_for_codex_appends_trusts_and_uninstalls_exactly() {
    let home = private_temp_dir("codex-install");
    let hooks = home.join("hooks.json");
    let config = home.join("config.toml");
    let user_hooks = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify-send done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    let user_config = "model = \"gpt-5-codex\"\n\n[hooks.state.\"/x/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:theirs\"\n";
    std::fs::write(&hooks, user_hooks).unwrap();
    std::fs::write(&config, user_config).unwrap();
    std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let install = |action: &str| {
        let out = headspace()
            .args(["hooks", action, "--agent", "codex", "--settings"])
            .arg(&hooks)
            .args(["--url", "http://127.0.0.1:5055"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = install("install");
    assert!(said.contains("trusted them in"), "{said}");
    install("install"); // idempotent
    let v: Value = serde_json::from_slice(&std::fs::read(&hooks).unwrap()).unwrap();
    let stop = v["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "{v}");
    assert_eq!(
        stop[0]["hooks"][0]["command"], "notify-send done",
        "the user's first"
    );
    let ours = stop[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(
        ours.contains("hook-forward Stop") && ours.contains("--agent codex"),
        "{ours}"
    );
    assert!(v["hooks"]["Interrupt"].is_array() && v["hooks"]["UserPromptSubmit"].is_array());
    let text = std::fs::read_to_string(&config).unwrap();
    let key = format!("[hooks.state.\"{}:stop:1:0\"]", hooks.display());
    assert_eq!(text.matches(&key).count(), 1, "{text}");
    assert!(text.contains(&format!(
        "[hooks.state.\"{}:interrupt:0:0\"]",
        hooks.display()
    )));
    assert!(
        text.starts_with(user_config),
        "the user's config is kept: {text}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&config).unwrap().permissions().mode() & 0o777,
        0o600
    );

    install("uninstall");
    assert_eq!(std::fs::read_to_string(&hooks).unwrap(), user_hooks);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), user_config);
}
