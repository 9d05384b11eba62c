//! `headspace-agent`: a stand-in for Claude Code, for demos and tests.
//!
//! It runs in a real tmux pane and draws Claude Code's screens (idle prompt, spinner, replies,
//! AskUserQuestion, permission dialog). It writes a real-format transcript under the claude
//! dir and runs the hooks exactly as the `settings.json` that `headspace hooks install` wrote
//! configures them (each command through `sh -c`, the payload on stdin). It plays a scripted
//! conversation and can be told to lose or delay hooks. With `--skills` it also plays
//! specflow's `/flow.*` skills on the project it runs in (see [`skills`]), for orchestration.

mod ask;
mod skills;

use clap::Parser;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A stand-in for Claude Code that plays a scripted conversation.
#[derive(Parser)]
#[command(name = "headspace-agent")]
struct Args {
    /// The claude dir: transcripts go under projects/, hooks come from settings.json.
    #[arg(long)]
    claude_dir: PathBuf,
    /// The settings file whose hooks are run (default: CLAUDE_DIR/settings.json).
    #[arg(long)]
    settings: Option<PathBuf>,
    /// The script (JSON: {"turns": [{"prompt", "replies", "question"?, "permission"?}]});
    /// optional with --skills.
    #[arg(long, required_unless_present = "skills")]
    script: Option<PathBuf>,
    /// Session id (default: generated from the process id).
    #[arg(long)]
    session: Option<String>,
    /// Claude Code's `--resume ID`: the session said to be continued. The stand-in starts a
    /// session of its own and says `resume` in its SessionStart.
    #[arg(long)]
    resume: Option<String>,
    /// Claude Code's `--fork-session` (with --resume): taken, as Claude Code takes it.
    #[arg(long)]
    fork_session: bool,
    /// Play the script's prompts without waiting for typed input.
    #[arg(long)]
    auto: bool,
    /// Lose every Nth hook (2 loses half of them).
    #[arg(long)]
    drop_every: Option<u64>,
    /// Lose every hook of these events (comma separated, e.g. Stop,UserPromptSubmit).
    #[arg(long, value_delimiter = ',')]
    drop_events: Vec<String>,
    /// Deliver hooks this many milliseconds late (in the background, like a slow curl; the
    /// emission stamp is still the event's time).
    #[arg(long, default_value_t = 0)]
    delay_hooks_ms: u64,
    /// Delay only these events (comma separated); all of them when empty.
    #[arg(long, value_delimiter = ',')]
    delay_events: Vec<String>,
    /// Milliseconds the agent "works" between lines.
    #[arg(long, default_value_t = 300)]
    think_ms: u64,
    /// Milliseconds between showing a submitted prompt and running its hook and writing its
    /// line (Claude Code can take a while; meanwhile only the screen shows the turn began).
    #[arg(long, default_value_t = 0)]
    slow_submit_ms: u64,
    /// In --auto mode, still wait for a typed answer at questions (for demos).
    #[arg(long)]
    wait_on_questions: bool,
    /// Stay at the idle prompt when the script is done (for demos).
    #[arg(long)]
    stay: bool,
    /// Play specflow's skills: a typed `/flow.<step>` marks its step in
    /// `.specflow/orchestration-state.json` here (implement ticks its tasks in tasks.md), and
    /// the agent keeps taking prompts after the script.
    #[arg(long)]
    skills: bool,
    /// With --skills: these skills mark their step failed instead (comma separated;
    /// `implement:1` fails the first run only).
    #[arg(long, value_delimiter = ',')]
    fail_skills: Vec<String>,
    /// With --skills: these skills ask an AskUserQuestion and wait for the answer first.
    #[arg(long, value_delimiter = ',')]
    ask_in_skill: Vec<String>,
}

#[derive(Default, Deserialize)]
struct Script {
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    prompt: String,
    #[serde(default)]
    replies: Vec<String>,
    #[serde(default)]
    question: Option<Question>,
    /// An AskUserQuestion of any shape (its tool input, `{"questions": [...]}`), answered
    /// through Claude Code's dialog drawn in the pane.
    #[serde(default)]
    ask: Option<Value>,
    /// Show a permission dialog before the final reply.
    #[serde(default)]
    permission: bool,
    /// Write the prompt it was given (and a newline) into this file of its folder, as a
    /// Write tool call, before the final reply: what a test's diff and merge look at.
    #[serde(default)]
    edit: Option<String>,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    options: Vec<String>,
    answer: String,
}

struct Agent {
    args: Args,
    writer: SessionWriter,
    hooks: Value,
    transcript: PathBuf,
    history: Vec<String>,
    hook_count: u64,
    /// The skills played with --skills.
    skills: Option<skills::Skills>,
}

fn now() -> Timestamp {
    headspace::server::world::Clock::now(&headspace::server::world::SystemClock)
}

const RULE: &str = "────────────────────────────────────────────────────────────────────────";

impl Agent {
    fn draw(&self, below: &[String]) {
        let mut out = String::from("\x1b[2J\x1b[H");
        out.push_str(" ✻ Welcome to Claude Code (headspace stand-in)\n\n");
        for line in self
            .history
            .iter()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        for l in below {
            out.push_str(l);
            out.push('\n');
        }
        print!("{out}");
        let _ = std::io::stdout().flush();
    }

    fn draw_idle(&self) {
        self.draw(&[
            RULE.into(),
            "❯\u{a0}".into(),
            RULE.into(),
            "  ? for shortcuts".into(),
        ]);
    }

    fn draw_busy(&self, what: &str) {
        self.draw(&[
            format!("✳ {what}… (3s · esc to interrupt)"),
            String::new(),
            RULE.into(),
            "❯\u{a0}".into(),
            RULE.into(),
        ]);
    }

    fn append(&mut self, json: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.transcript)
            .expect("transcript");
        let _ = f.write_all(format!("{json}\n").as_bytes());
    }

    fn stamp(&mut self) {
        self.writer.clock = now();
    }

    /// Runs the hooks configured for `event`, as Claude Code does, unless told to lose it.
    fn hook(&mut self, event: &str, extra: Value) {
        self.hook_count += 1;
        let lost = self
            .args
            .drop_every
            .is_some_and(|n| n > 0 && self.hook_count.is_multiple_of(n))
            || self.args.drop_events.iter().any(|e| e == event);
        if lost {
            return;
        }
        let mut payload = json!({
            "session_id": self.writer.session_id,
            "transcript_path": self.transcript.display().to_string(),
            "cwd": self.writer.cwd,
            "hook_event_name": event,
            "permission_mode": "default",
            "emitted_at": now().to_string(),
        });
        if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                p.insert(k.clone(), v.clone());
            }
        }
        let body = payload.to_string();
        let entries: Vec<Value> = self.hooks[event]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
            .collect();
        // HTTP hooks, as Claude Code 2.1.63+ sends them: posted in order, waited for (up to
        // their timeout), never for SessionStart.
        if event != "SessionStart" {
            for h in entries.iter().filter(|h| h["type"] == "http") {
                post_http_hook(h, &body);
            }
        }
        let commands: Vec<String> = entries
            .iter()
            .filter_map(|h| h["command"].as_str().map(str::to_string))
            .collect();
        let delayed =
            self.args.delay_events.is_empty() || self.args.delay_events.iter().any(|e| e == event);
        for cmd in commands {
            let delay = if delayed { self.args.delay_hooks_ms } else { 0 };
            let body = body.clone();
            let run = move || {
                if delay > 0 {
                    std::thread::sleep(Duration::from_millis(delay));
                }
                if let Ok(mut child) = Command::new("sh")
                    .arg("-c")
                    .arg(&cmd)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                {
                    if let Some(mut stdin) = child.stdin.take() {
                        let _ = stdin.write_all(body.as_bytes());
                    }
                    let _ = child.wait();
                }
            };
            if delay > 0 {
                std::thread::spawn(run);
            } else {
                run();
            }
        }
    }

    fn read_line(&self) -> Option<String> {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_string()),
        }
    }

    /// `/clear`, as Claude Code does it: the old session's Stop and SessionEnd, then a new
    /// session id, a new transcript, and SessionStart with source `clear`.
    fn clear(&mut self) {
        self.stamp();
        self.hook("UserPromptSubmit", json!({"prompt": "/clear"}));
        let line = json!({"type": "user", "uuid": format!("c1ea0000-0000-4000-8000-{:012x}", self.hook_count), "timestamp": now().to_string(),
            "sessionId": self.writer.session_id, "message": {"role": "user", "content": "<command-name>/clear</command-name>\n<command-message>clear</command-message>"}});
        self.append(&line.to_string());
        self.hook("Stop", json!({"stop_hook_active": false}));
        self.hook("SessionEnd", json!({"reason": "clear"}));
        self.writer.session_id = format!(
            "c1ea{:04x}-0000-4000-8000-{:012x}",
            std::process::id() & 0xffff,
            self.hook_count
        );
        self.transcript = self.args.claude_dir.join(self.writer.path());
        self.history.clear();
        self.hook("SessionStart", json!({"source": "clear"}));
        self.draw_idle();
    }

    fn think(&self) {
        std::thread::sleep(Duration::from_millis(self.args.think_ms));
    }

    /// Plays one turn. `finish` runs just before the last reply, and its text, if any,
    /// replaces that reply: a skill's verdict is on disk before the turn ends.
    fn play(
        &mut self,
        turn: &Turn,
        typed: Option<String>,
        finish: impl FnOnce(&mut Self) -> Option<String>,
    ) {
        let prompt = typed.unwrap_or_else(|| turn.prompt.clone());
        self.history.push(format!("> {prompt}"));
        // As Claude Code does: the prompt and a spinner show at once, before any hook runs.
        self.draw_busy("Thinking");
        std::thread::sleep(Duration::from_millis(self.args.slow_submit_ms));
        self.stamp();
        self.hook("UserPromptSubmit", json!({"prompt": prompt}));
        let line = self.writer.typed(&prompt, None);
        self.append(&line.json);
        let mut last = turn
            .replies
            .last()
            .cloned()
            .unwrap_or_else(|| "Done.".into());
        let middle = turn.replies.len().saturating_sub(1);
        for reply in turn.replies.iter().take(middle) {
            self.draw_busy("Working");
            self.think();
            self.stamp();
            let l = self.writer.agent_text(reply);
            self.append(&l.json);
            self.history.push(format!("⏺ {reply}"));
            self.hook(
                "PreToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
            );
            let [call, result] =
                self.writer
                    .tool("Bash", json!({"command": "ls"}), "Cargo.toml\nsrc");
            self.append(&call.json);
            self.append(&result.json);
            self.hook("PostToolUse", json!({"tool_name": "Bash"}));
            self.history.push("  ⎿  Cargo.toml src".into());
        }
        if let Some(input) = &turn.ask {
            self.ask_wizard(input);
        }
        if let Some(q) = &turn.question {
            self.draw_busy("Thinking");
            self.think();
            self.stamp();
            let (line, id, input) = self.writer.question(
                &q.question,
                &q.options.iter().map(String::as_str).collect::<Vec<_>>(),
            );
            self.hook(
                "PreToolUse",
                json!({"tool_name": "AskUserQuestion", "tool_use_id": id, "tool_input": input}),
            );
            self.append(&line.json);
            let mut screen = vec![format!("☐ {}", q.question), String::new()];
            for (i, o) in q.options.iter().enumerate() {
                screen.push(format!("{} {}. {o}", if i == 0 { "❯" } else { " " }, i + 1));
            }
            self.draw(&screen);
            let answer = if self.args.auto && !self.args.wait_on_questions {
                self.think();
                q.answer.clone()
            } else {
                // A number picks that option, as Claude Code's dialog does; other text is
                // the answer itself.
                let typed = self.read_line().unwrap_or_else(|| q.answer.clone());
                match typed.trim().parse::<usize>() {
                    Ok(n) if (1..=q.options.len()).contains(&n) => q.options[n - 1].clone(),
                    _ => typed,
                }
            };
            self.stamp();
            let a = self.writer.answer(&id, &q.question, &answer);
            self.append(&a.json);
            self.hook(
                "PostToolUse",
                json!({"tool_name": "AskUserQuestion", "tool_use_id": id}),
            );
            self.history.push(format!("⏺ {} → {answer}", q.question));
        }
        if let Some(file) = &turn.edit {
            self.write_file(file, &format!("{prompt}\n"));
        }
        if turn.permission {
            self.hook(
                "PermissionRequest",
                json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf target"}}),
            );
            self.draw(&[
                "╭────────────────────────────────────────────╮".into(),
                "│ Bash command                               │".into(),
                "│   rm -rf target                            │".into(),
                "│ Do you want to proceed?                    │".into(),
                "│ ❯ 1. Yes                                   │".into(),
                "│   2. No, and tell Claude what to do differently (esc) │".into(),
                "╰────────────────────────────────────────────╯".into(),
            ]);
            if self.args.auto {
                self.think();
            } else {
                let _ = self.read_line();
            }
        }
        self.draw_busy("Finishing");
        self.think();
        if let Some(text) = finish(self) {
            last = text;
        }
        self.stamp();
        let l = self.writer.agent_text(&last);
        self.append(&l.json);
        self.history.push(format!("⏺ {last}"));
        self.hook(
            "Stop",
            json!({"last_assistant_message": last, "stop_hook_active": false}),
        );
        let d = self.writer.turn_duration();
        self.append(&d.json);
        self.draw_idle();
    }

    /// Writes `text` into `file` (relative to its folder) as Claude Code's Write tool does:
    /// its hooks, its transcript lines, the file.
    fn write_file(&mut self, file: &str, text: &str) {
        self.draw_busy("Writing");
        self.think();
        self.stamp();
        let path = std::env::current_dir()
            .map(|d| d.join(file))
            .unwrap_or_else(|_| PathBuf::from(file));
        let input = json!({"file_path": path.display().to_string(), "content": text});
        self.hook(
            "PreToolUse",
            json!({"tool_name": "Write", "tool_input": input.clone()}),
        );
        let outcome = match std::fs::write(&path, text) {
            Ok(()) => format!("File created successfully at: {}", path.display()),
            Err(e) => format!("Error writing {}: {e}", path.display()),
        };
        let [call, result] = self.writer.tool("Write", input, &outcome);
        self.append(&call.json);
        self.append(&result.json);
        self.hook("PostToolUse", json!({"tool_name": "Write"}));
        self.history.push(format!("⏺ Write({file})"));
    }

    /// Plays a `/flow.*` skill as a turn: it marks its step in progress, works (a reply and a
    /// tool call, a question when told to ask), then writes its verdict to the project before
    /// its last reply and Stop.
    fn play_skill(&mut self, line: String, inv: skills::Invocation) {
        let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let Some(skills) = self.skills.as_ref() else {
            return;
        };
        let begun = skills.begin(&dir, &inv);
        let question = skills.asks(&inv.step).then(|| Question {
            question: format!("How should flow.{} go on?", inv.step),
            options: vec!["As planned".into(), "Stop here".into()],
            answer: "As planned".into(),
        });
        let turn = Turn {
            prompt: line.clone(),
            replies: vec![format!("Running flow.{}.", inv.step), String::new()],
            question,
            ask: None,
            permission: false,
            edit: None,
        };
        self.play(&turn, Some(line), move |agent| {
            let outcome = begun.and_then(|()| match agent.skills.as_mut() {
                Some(s) => s.finish(&dir, &inv),
                None => Err("skills are off".into()),
            });
            Some(match outcome {
                Ok(o) => o.reply(),
                Err(e) => format!("Could not update the project: {e}"),
            })
        });
    }
}

fn main() {
    let args = Args::parse();
    let script: Script = match &args.script {
        None => Script::default(),
        Some(path) => match std::fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "headspace-agent: cannot read the script {}: {e}",
                    path.display()
                );
                std::process::exit(2);
            }
        },
    };
    let skills = match args
        .skills
        .then(|| skills::Skills::new(&args.fail_skills, &args.ask_in_skill))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("headspace-agent: {e}");
            std::process::exit(2);
        }
    };
    let settings = args
        .settings
        .clone()
        .unwrap_or_else(|| args.claude_dir.join("settings.json"));
    let hooks = std::fs::read(&settings)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map(|v| v["hooks"].clone())
        .unwrap_or(Value::Null);
    let mut writer = SessionWriter::new(u64::from(std::process::id()), now());
    if let Some(s) = &args.session {
        writer.session_id = s.clone();
    }
    writer.cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "/".into());
    writer.dir = headspace_core::engine::claude_project_dir(&writer.cwd);
    let transcript = args.claude_dir.join(writer.path());
    if let Some(dir) = transcript.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut agent = Agent {
        args,
        writer,
        hooks,
        transcript,
        history: Vec::new(),
        hook_count: 0,
        skills,
    };
    let source = if agent.args.resume.is_some() {
        "resume"
    } else {
        "startup"
    };
    agent.hook("SessionStart", json!({"source": source}));
    agent.draw_idle();
    let mut next = 0;
    // With skills the agent takes prompts until its input closes, as Claude Code does;
    // otherwise it ends with its script.
    while next < script.turns.len() || agent.skills.is_some() {
        let typed = if agent.args.auto && next < script.turns.len() {
            std::thread::sleep(Duration::from_millis(agent.args.think_ms));
            None
        } else {
            match agent.read_line() {
                Some(t) if t == "/clear" => {
                    agent.clear(); // not a scripted turn
                    continue;
                }
                Some(t) if t == "/exit" => break,
                Some(t) if !t.is_empty() => Some(t),
                Some(_) => None,
                None => break,
            }
        };
        if agent.skills.is_some() {
            if let Some(inv) = typed.as_deref().and_then(skills::parse) {
                agent.play_skill(typed.unwrap_or_default(), inv); // not a scripted turn
                continue;
            }
        }
        match script.turns.get(next) {
            Some(turn) => {
                agent.play(turn, typed, |_| None);
                next += 1;
            }
            // Skills mode, script done: any other prompt gets a plain reply.
            None => match typed {
                Some(prompt) => {
                    let turn = Turn {
                        prompt,
                        replies: Vec::new(),
                        question: None,
                        ask: None,
                        permission: false,
                        edit: None,
                    };
                    agent.play(&turn, None, |_| None);
                }
                None => agent.draw_idle(),
            },
        }
    }
    if agent.args.stay {
        // Claude Code's own `/exit` ends it, as closing its input does.
        while agent.read_line().is_some_and(|t| t != "/exit") {
            agent.draw_idle();
        }
    }
    agent.hook("SessionEnd", json!({"reason": "prompt_input_exit"}));
    // Let delayed hooks finish before the process goes.
    std::thread::sleep(Duration::from_millis(agent.args.delay_hooks_ms + 100));
}

/// Posts `body` as Claude Code posts an HTTP hook: to its `url`, with its `headers`
/// (`$NAME` and `${NAME}` filled from the environment for names in `allowedEnvVars`, others
/// emptied), as JSON, waiting at most its `timeout` seconds; a failure is ignored.
fn post_http_hook(hook: &Value, body: &str) {
    use std::io::Read;
    let Some(url) = hook["url"].as_str() else {
        return;
    };
    let Some(rest) = url.strip_prefix("http://") else {
        return;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let allowed: Vec<&str> = hook["allowedEnvVars"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let fill = |v: &str| -> String {
        let mut out = v.to_string();
        for name in allowed.iter().copied() {
            let value = std::env::var(name).unwrap_or_default();
            out = out
                .replace(&format!("${{{name}}}"), &value)
                .replace(&format!("${name}"), &value);
        }
        out
    };
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        if path.is_empty() { "/" } else { path },
        body.len()
    );
    for (k, v) in hook["headers"].as_object().into_iter().flatten() {
        if let Some(v) = v.as_str() {
            head.push_str(&format!("{k}: {}\r\n", fill(v).replace(['\r', '\n'], "")));
        }
    }
    head.push_str("\r\n");
    let timeout = Duration::from_secs(hook["timeout"].as_u64().unwrap_or(600));
    let Ok(addr) = std::net::ToSocketAddrs::to_socket_addrs(authority).map(|mut a| a.next()) else {
        return;
    };
    let Some(addr) = addr else { return };
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, timeout) else {
        return;
    };
    let _ = s.set_read_timeout(Some(timeout));
    if s.write_all(head.as_bytes())
        .and_then(|_| s.write_all(body.as_bytes()))
        .is_ok()
    {
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
    }
}
