//! A simulated Claude Code agent in a pane: it writes its transcript the way Claude Code does
//! (one content block per line, tool calls and results, AskUserQuestion and answers,
//! `stop_hook_summary`, `turn_duration`, interrupts), with lag and partial writes, and fires
//! hooks the way the installed hook script does: stamped, detached, fire-and-forget, over
//! turmoil's network. It tells the checker what really happened.

use crate::check::{LineTruth, Phase, SendRecord};
use crate::faults::Faults;
use crate::net::{pane_segment, post, post_answered, post_to, sleep_ms};
use crate::plan::{AgentPlan, Exchange, Fate, Step};
use crate::rng::Rng;
use crate::world::{sim_now, PaneProgram, Screen, SimWorld};
use headspace_core::hook::matching::normalise_display;
use headspace_core::kind::AgentKind;
use headspace_core::view::activity::Activity;
use headspace_core::Timestamp;
use headspace_testkit::synth::{Line, SessionWriter};
use headspace_testkit::synth_codex::{CodexSessionWriter, CODEX_DIR};
use headspace_testkit::synth_gemini::{GeminiChatWriter, GEMINI_DIR};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;

struct Chunk {
    path: String,
    bytes: Vec<u8>,
    uuid: Option<String>,
    created: Timestamp,
}

/// Writes one pane's transcript lines in order, each after its lag, some in two parts.
async fn file_writer(
    world: SimWorld,
    mut rx: mpsc::UnboundedReceiver<Chunk>,
    faults: Faults,
    mut rng: Rng,
) {
    while let Some(c) = rx.recv().await {
        let hostile = world.lock().hostile;
        let mut due = c.created;
        if hostile {
            due = due.add_millis(rng.range(0, faults.transcript_lag_ms + 1) as i64);
            if rng.chance(faults.transcript_stall) {
                due = due.add_millis(rng.range(30_000, 45_000) as i64);
            }
        }
        let wait = due.millis() - sim_now().millis();
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        if hostile && c.bytes.len() > 2 && rng.chance(faults.partial_write) {
            let cut = rng.range(1, c.bytes.len() as u64 - 1) as usize;
            world.append(&c.path, &c.bytes[..cut]);
            tokio::time::sleep(Duration::from_millis(rng.range(1, 400))).await;
            world.append(&c.path, &c.bytes[cut..]);
        } else {
            world.append(&c.path, &c.bytes);
        }
        if let Some(u) = c.uuid {
            if let Some(l) = world.lock().checker.lines.get_mut(&u) {
                l.written = true;
            }
        }
    }
}

/// One agent's life.
struct Agent {
    pane: String,
    world: SimWorld,
    faults: Faults,
    rng: Rng,
    w: SessionWriter,
    /// A Codex CLI agent's rollout writer (then `w` is unused): its lines, hooks and ids.
    codex: Option<CodexSessionWriter>,
    /// A Gemini CLI agent's chat-file writer (then `w` is unused).
    gemini: Option<GeminiChatWriter>,
    sessions: u64,
    new_shape: bool,
    /// Its hooks come over the HTTP transport ([`crate::plan::AgentPlan::http_hooks`]).
    http_hooks: bool,
    turn_duration: bool,
    files: mpsc::UnboundedSender<Chunk>,
    /// Hooks in flight: the agent's host lives until they are delivered or lost.
    in_flight: Vec<tokio::task::JoinHandle<()>>,
}

impl Agent {
    /// The writer's clock follows simulated time.
    fn tick(&mut self) {
        let now = sim_now();
        if now > self.w.clock {
            self.w.clock = now;
        }
        if let Some(c) = &mut self.codex {
            if now > c.clock {
                c.clock = now;
            }
        }
        if let Some(g) = &mut self.gemini {
            if now > g.clock {
                g.clock = now;
            }
        }
    }

    /// Its session's id.
    fn session_id(&self) -> String {
        match (&self.codex, &self.gemini) {
            (Some(c), _) => c.session_id.clone(),
            (None, Some(g)) => g.key(),
            (None, None) => self.w.session_id.clone(),
        }
    }

    /// Its transcript, as the server names it.
    fn path(&self) -> String {
        match (&self.codex, &self.gemini) {
            (Some(c), _) => format!("{}{}", headspace_core::kind::CODEX_PREFIX, c.path()),
            (None, Some(g)) => format!("{}{}", headspace_core::kind::GEMINI_PREFIX, g.path()),
            (None, None) => self.w.path(),
        }
    }

    /// Queues a line; `truth` = (text, prompt uuid, is the prompt) for turn lines.
    fn write(&mut self, line: &Line, truth: Option<(Option<String>, String, bool)>) {
        let created = sim_now();
        if let Some((text, prompt_uuid, is_prompt)) = truth {
            let ts = serde_json::from_str::<Value>(&line.json)
                .ok()
                .and_then(|v| v["timestamp"].as_str().and_then(Timestamp::parse_rfc3339))
                .unwrap_or(created);
            self.world.lock().checker.lines.insert(
                line.uuid.clone(),
                LineTruth {
                    pane: self.pane.clone(),
                    text: text.unwrap_or_default(),
                    timestamp: ts,
                    prompt_uuid,
                    is_prompt,
                    written: false,
                },
            );
        }
        let _ = self.files.send(Chunk {
            path: self.path(),
            bytes: format!("{}\n", line.json).into_bytes(),
            uuid: line.is_turn.then(|| line.uuid.clone()),
            created,
        });
    }

    fn phase(&self, activity: Activity, prompt_uuid: Option<String>, prompt_id: Option<String>) {
        self.world.lock().checker.phases.insert(
            self.pane.clone(),
            Phase {
                activity,
                prompt_uuid,
                prompt_id,
                since: sim_now(),
            },
        );
    }

    /// Fires a hook: as the command hook does (stamped now, posted in the background, with
    /// the run's faults), or over Claude Code's HTTP transport ([`Agent::http_hook`]).
    async fn hook(&mut self, event: &str, extra: Value, fate: Fate) {
        if self.http_hooks && event != "SessionStart" && matches!(fate, Fate::Drawn) {
            return self.http_hook(event, extra).await;
        }
        self.command_hook(event, extra, fate);
    }

    /// A hook as Claude Code's HTTP transport sends it: no emission stamp, posted now and
    /// waited for (at most its 2 s timeout) before the agent goes on; lost when the server
    /// does not answer 2xx (down, or the run's hook loss), never retried.
    async fn http_hook(&mut self, event: &str, extra: Value) {
        let body = self.w.hook(event, Some(&self.pane), None, extra);
        let hostile = self.world.lock().hostile;
        if hostile && self.rng.chance(self.faults.hook_drop) {
            return;
        }
        let host = self.world.lock().host;
        let path = format!("/hook/{event}");
        let posted =
            tokio::time::timeout(Duration::from_secs(2), post_to(host, &path, &body)).await;
        if matches!(posted, Ok(Some(s)) if s < 300) {
            self.world
                .lock()
                .checker
                .named_panes
                .insert(self.pane.clone());
        }
    }

    /// Fires a hook as the command hook does: stamped now, posted in the background.
    fn command_hook(&mut self, event: &str, extra: Value, fate: Fate) {
        let stamp = sim_now();
        // Codex's hook names no pane (its daemon's would be wrong): `hook-forward --agent
        // codex` stamps it and posts it to Codex's route.
        let (body, path, names_pane) = match (&self.codex, &self.gemini) {
            (Some(c), _) => {
                let mut v: Value =
                    serde_json::from_slice(&c.hook(CODEX_DIR, event, extra)).expect("json");
                v["emitted_at"] = json!(stamp.to_string());
                let body = serde_json::to_vec(&v).expect("json");
                (body, format!("/hook/codex/{event}"), false)
            }
            // Gemini's hooks run in its pane, under its own event names: `hook-forward
            // --agent gemini` stamps the time and the pane.
            (None, Some(g)) => {
                let event = gemini_event(event);
                let mut v: Value =
                    serde_json::from_slice(&g.hook(GEMINI_DIR, event, extra)).expect("json");
                v["emitted_at"] = json!(stamp.to_string());
                v["tmux_pane"] = json!(self.pane);
                let body = serde_json::to_vec(&v).expect("json");
                (body, format!("/hook/gemini/{event}"), true)
            }
            (None, None) => (
                self.w.hook(event, Some(&self.pane), Some(stamp), extra),
                format!("/hook/{event}"),
                true,
            ),
        };
        let hostile = self.world.lock().hostile;
        let delays: Vec<u64> = match fate {
            Fate::Lost => vec![],
            Fate::OnTime => vec![0],
            Fate::Late(ms) => vec![ms],
            Fate::Repeated(n) => vec![0; n as usize],
            Fate::Drawn if !hostile => vec![0],
            Fate::Drawn => {
                let f = &self.faults;
                if self.rng.chance(f.hook_drop) {
                    vec![]
                } else {
                    let one = |rng: &mut Rng| {
                        let mut d = rng.range(0, f.hook_delay_ms + 1);
                        if rng.chance(f.hook_late) {
                            d += rng.range(5_000, 25_000);
                        }
                        d
                    };
                    let first = one(&mut self.rng);
                    if self.rng.chance(f.hook_dup) {
                        vec![first, one(&mut self.rng)]
                    } else {
                        vec![first]
                    }
                }
            }
        };
        let host = self.world.lock().host;
        self.in_flight.retain(|h| !h.is_finished());
        for d in delays {
            let (path, body) = (path.clone(), body.clone());
            let (world, pane) = (self.world.clone(), self.pane.clone());
            self.in_flight.push(tokio::spawn(async move {
                sleep_ms(d).await;
                if post_to(host, &path, &body).await.is_some_and(|s| s < 300) && names_pane {
                    world.lock().checker.named_panes.insert(pane);
                }
            }));
        }
    }

    /// In the `cluster` scenario the user answers the question from a hub's page, which
    /// forwards the answer to this agent's edge through the shared pane-command table: after
    /// part of the `wait`, option 1 is asked of a random hub and recorded for C1 as the key
    /// it types ("1"). Returns the simulated milliseconds spent; nothing elsewhere.
    async fn answer_through_a_hub(&mut self, wait: u64) -> u64 {
        let Some(hubs) = self.world.lock().cluster.as_ref().map(|c| c.hubs.clone()) else {
            return 0;
        };
        let start = sim_now();
        sleep_ms(self.rng.range(wait / 4, wait / 2 + 1)).await;
        self.through_a_hub(&hubs, "answer", br#"{"option": 1}"#, "1")
            .await;
        (sim_now().millis() - start.millis()).max(0) as u64
    }

    /// In the `cluster` scenario the user stops a turn from a hub's page: `interrupt`,
    /// forwarded to this agent's edge, presses Escape there (recorded for C1). The agent
    /// then stops its turn, as its plan says.
    async fn interrupt_through_a_hub(&mut self) {
        let Some(hubs) = self.world.lock().cluster.as_ref().map(|c| c.hubs.clone()) else {
            return;
        };
        self.through_a_hub(&hubs, "interrupt", b"{}", crate::world::ESCAPE)
            .await;
    }

    /// Posts `what` for this agent (by session) to a random hub and records it for C1, with
    /// what it types in the pane when it runs.
    async fn through_a_hub(
        &mut self,
        hubs: &[&'static str],
        what: &'static str,
        body: &[u8],
        typed: &str,
    ) {
        let hub = *self.rng.pick(hubs);
        let path = format!("/api/agents/{}/{what}", self.session_id());
        let answer = post_answered(hub, &path, body).await;
        self.world.lock().checker.sends.push(SendRecord {
            pane: self.pane.clone(),
            what,
            text: typed.to_string(),
            hub,
            answer,
            at: sim_now(),
        });
    }

    /// Waits up to 3 s for text typed into the pane through the server.
    async fn typed(&self, want: &str) -> bool {
        for _ in 0..60 {
            if let Some(t) = self.world.take_typed(&self.pane) {
                if t == want {
                    return true;
                }
            }
            sleep_ms(50).await;
        }
        false
    }

    async fn exchange(&mut self, x: &Exchange, n: usize) {
        let skill = x.prompt.starts_with("/flow.");
        if skill {
            self.world.lock().orchestra.worked.push(x.prompt.clone());
        }
        if x.via_send {
            let body = json!({"text": x.prompt}).to_string();
            let path = format!("/api/agents/{}/send", pane_segment(&self.pane));
            let hubs = self.world.lock().cluster.as_ref().map(|c| c.hubs.clone());
            let status = match hubs {
                // Across machines: the user's page is a hub's, which forwards the send to
                // this agent's edge through the shared pane-command table. The agent is named
                // by its session: a pane id (`%1`) names a pane on every machine.
                Some(hubs) => {
                    let hub = *self.rng.pick(&hubs);
                    let path = format!("/api/agents/{}/send", self.session_id());
                    let answer = post_answered(hub, &path, body.as_bytes()).await;
                    let status = answer.as_ref().map(|(s, _)| *s);
                    self.world.lock().checker.sends.push(SendRecord {
                        pane: self.pane.clone(),
                        what: "send",
                        text: x.prompt.clone(),
                        hub,
                        answer,
                        at: sim_now(),
                    });
                    status
                }
                None => post(&path, body.as_bytes()).await,
            };
            if status == Some(200) {
                self.typed(&x.prompt).await;
            }
        }
        self.tick();
        let prompt_id = self.new_shape.then(|| {
            format!(
                "p-{}-{}-{n}",
                self.pane.trim_start_matches('%'),
                self.sessions
            )
        });
        let mut extra = json!({"prompt": x.prompt});
        if let (Some(p), None) = (&prompt_id, &self.codex) {
            extra["prompt_id"] = json!(p);
        }
        // Codex: its rollout (and SessionStart) begin with the first prompt; each turn
        // opens with the context it injects, and its hooks name the turn.
        let mut opening = Vec::new();
        if self.codex.is_some() {
            let first = self.codex.as_ref().is_some_and(|c| c.turn_id.is_empty());
            if first {
                self.command_hook("SessionStart", json!({"source": "startup"}), Fate::Drawn);
                opening.push(self.codex.as_mut().expect("codex").meta());
            }
            opening.extend(self.codex.as_mut().expect("codex").start_turn());
        }
        let prompt_id = match &self.codex {
            Some(c) => Some(c.turn_id.clone()),
            None => prompt_id,
        };
        self.world.show(&self.pane, Screen::Busy);
        self.hook("UserPromptSubmit", extra, x.prompt_hook).await;
        for l in &opening {
            self.write(l, None);
        }
        let mut lines = match (&mut self.codex, &mut self.gemini) {
            (Some(c), _) => vec![c.prompt(&x.prompt)],
            (None, Some(g)) => g.prompt(&x.prompt),
            (None, None) => vec![self.w.typed(&x.prompt, prompt_id.as_deref())],
        };
        let line = lines.remove(0);
        let puuid = line.uuid.clone();
        self.phase(Activity::Running, Some(puuid.clone()), prompt_id.clone());
        self.write(
            &line,
            Some((Some(normalise_display(&x.prompt)), puuid.clone(), true)),
        );
        for l in &lines {
            self.write(l, None);
        }
        let mut steps: Vec<u8> = x.progress.iter().map(|_| 0).collect();
        let mut questions = x.questions.iter();
        if !x.questions.is_empty() {
            let at = (self.rng.range(0, steps.len() as u64 + 1)) as usize;
            for _ in &x.questions {
                steps.insert(at, 1);
            }
        }
        if x.permission {
            let at = (self.rng.range(0, steps.len() as u64 + 1)) as usize;
            steps.insert(at, 2);
        }
        let mut progress = x.progress.iter();
        for s in steps {
            sleep_ms(x.step_ms).await;
            self.tick();
            match s {
                0 if self.gemini.is_some() => {
                    // Gemini: the reply is written once streamed, then again with its tool
                    // call once the tool ran, with the tool's result.
                    let text = progress.next().cloned().unwrap_or_default();
                    let (lines, id) = self.gemini.as_mut().expect("gemini").reply(&text);
                    self.write(
                        &lines[0],
                        Some((Some(normalise_display(&text)), puuid.clone(), false)),
                    );
                    for l in &lines[1..] {
                        self.write(l, None);
                    }
                    let pre =
                        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
                    self.hook("PreToolUse", pre.clone(), Fate::Drawn).await;
                    let ran = self
                        .gemini
                        .as_mut()
                        .expect("gemini")
                        .shell(&id, &text, "ls", "ok");
                    for l in &ran {
                        self.write(l, None);
                    }
                    self.hook("PostToolUse", pre, Fate::Drawn).await;
                }
                2 if self.gemini.is_some() => {
                    // Gemini: the user refuses the tool. Its reply was written before the
                    // dialog; the refusal ends the turn with no hook, and Gemini writes its
                    // earlier messages again before the new list (none of them news).
                    let text = "I need to run the tests.".to_string();
                    let (lines, id) = self.gemini.as_mut().expect("gemini").reply(&text);
                    self.write(
                        &lines[0],
                        Some((Some(normalise_display(&text)), puuid.clone(), false)),
                    );
                    for l in &lines[1..] {
                        self.write(l, None);
                    }
                    self.hook(
                        "PermissionRequest",
                        json!({"notification_type": "ToolPermission", "message": "Tool Confirm Shell Command requires execution",
                               "details": {"type": "exec", "command": "cargo test"}}),
                        Fate::Drawn,
                    )
                    .await;
                    self.world.show(&self.pane, Screen::Permission);
                    sleep_ms(self.rng.range(500, 4_000)).await;
                    self.tick();
                    let copies =
                        self.gemini
                            .as_mut()
                            .expect("gemini")
                            .refused(&id, &text, "cargo test");
                    for l in &copies {
                        self.write(l, None);
                    }
                    self.world.show(&self.pane, Screen::Idle);
                    self.phase(Activity::Idle, None, None);
                    return;
                }
                0 => {
                    let text = progress.next().cloned().unwrap_or_default();
                    let l = match &mut self.codex {
                        Some(c) => c.agent_text(&text),
                        None => self.w.agent_text(&text),
                    };
                    self.write(
                        &l,
                        Some((Some(normalise_display(&text)), puuid.clone(), false)),
                    );
                    let (lines, call) = match &mut self.codex {
                        Some(c) => {
                            let (lines, call) = c.shell("ls", "ok", 0);
                            (lines, Some(call))
                        }
                        None => (
                            self.w.tool("Bash", json!({"command": "ls"}), "ok").to_vec(),
                            None,
                        ),
                    };
                    let mut pre = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
                    if let Some(id) = &call {
                        pre["tool_use_id"] = json!(id);
                    }
                    self.hook("PreToolUse", pre.clone(), Fate::Drawn).await;
                    for l in &lines {
                        self.write(l, None);
                    }
                    let post = match &call {
                        Some(id) => {
                            json!({"tool_name": "Bash", "tool_use_id": id, "tool_input": {"command": "ls"}})
                        }
                        None => json!({"tool_name": "Bash"}),
                    };
                    self.hook("PostToolUse", post, Fate::Drawn).await;
                }
                1 => {
                    let (q, id, input) = self.w.question("Which option?", &["a", "b"]);
                    self.hook(
                        "PreToolUse",
                        json!({"tool_name": "AskUserQuestion", "tool_use_id": id, "tool_input": input}),
                        Fate::Drawn,
                    ).await;
                    self.write(
                        &q,
                        Some((Some("Which option?".into()), puuid.clone(), false)),
                    );
                    self.world.show(&self.pane, Screen::Question);
                    self.phase(Activity::Waiting, Some(puuid.clone()), prompt_id.clone());
                    let wait = questions.next().copied().unwrap_or(1_000);
                    let spent = self.answer_through_a_hub(wait).await;
                    sleep_ms(wait.saturating_sub(spent)).await;
                    self.tick();
                    let a = self.w.answer(&id, "Which option?", "a");
                    self.write(&a, Some((Some("a".into()), puuid.clone(), false)));
                    self.hook(
                        "PostToolUse",
                        json!({"tool_name": "AskUserQuestion", "tool_use_id": id}),
                        Fate::Drawn,
                    )
                    .await;
                    self.world.show(&self.pane, Screen::Busy);
                    self.phase(Activity::Running, Some(puuid.clone()), prompt_id.clone());
                }
                _ => {
                    self.hook(
                        "PermissionRequest",
                        json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}}),
                        Fate::Drawn,
                    )
                    .await;
                    self.world.show(&self.pane, Screen::Permission);
                    sleep_ms(self.rng.range(500, 4_000)).await;
                    self.tick();
                    let [call, result] =
                        self.w.tool("Bash", json!({"command": "cargo test"}), "ok");
                    self.write(&call, None);
                    self.write(&result, None);
                    self.hook("PostToolUse", json!({"tool_name": "Bash"}), Fate::Drawn)
                        .await;
                    self.world.show(&self.pane, Screen::Busy);
                }
            }
        }
        sleep_ms(x.step_ms).await;
        self.tick();
        if x.interrupt {
            self.interrupt_through_a_hub().await;
            match (&mut self.codex, &mut self.gemini) {
                (Some(c), _) => {
                    // Escape: the aborted-turn notice and `turn_aborted`, then the
                    // Interrupt hook (Codex's Stop for an aborted turn).
                    for l in c.interrupted() {
                        self.write(&l, None);
                    }
                    self.hook("Interrupt", json!({}), Fate::Drawn).await;
                }
                (None, Some(g)) => {
                    // Escape: `Request cancelled.` and the list without the prompt, then
                    // AfterAgent (Gemini's end of every turn).
                    for l in g.interrupted() {
                        self.write(&l, None);
                    }
                    self.hook("Stop", json!({}), Fate::Drawn).await;
                }
                (None, None) => {
                    let l = self.w.interrupt();
                    self.write(&l, None);
                }
            }
        } else if self.gemini.is_some() {
            let (lines, _) = self.gemini.as_mut().expect("gemini").reply(&x.last);
            self.write(
                &lines[0],
                Some((Some(normalise_display(&x.last)), puuid.clone(), false)),
            );
            for l in &lines[1..] {
                self.write(l, None);
            }
            self.hook(
                "Stop",
                json!({"prompt": x.prompt, "prompt_response": format!("{} {}", x.last, x.last)}),
                x.stop_hook,
            )
            .await;
            // Now and then the user takes the exchange back with /rewind: its turns stay.
            if self.rng.chance(0.15) {
                let lines = self.gemini.as_mut().expect("gemini").rewind(&puuid);
                for l in &lines {
                    self.write(l, None);
                }
            }
        } else if self.codex.is_some() {
            let (l, usage, done) = {
                let c = self.codex.as_mut().expect("codex");
                (
                    c.agent_text(&x.last),
                    c.usage(1_200, 1_000, 40),
                    c.complete(&x.last),
                )
            };
            self.write(
                &l,
                Some((Some(normalise_display(&x.last)), puuid.clone(), false)),
            );
            self.write(&usage, None);
            self.write(&done, None);
            self.hook(
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": x.last}),
                x.stop_hook,
            )
            .await;
        } else {
            if skill {
                // The skill marks its step done before its last words, as specflow's do.
                let project = self.world.lock().orchestra.project.clone();
                if let Some(p) = project {
                    crate::orchestra::apply_skill(&p, &x.prompt);
                }
            }
            let l = self.w.agent_text(&x.last);
            self.write(
                &l,
                Some((Some(normalise_display(&x.last)), puuid.clone(), false)),
            );
            let mut extra = json!({"stop_hook_active": false});
            if self.new_shape {
                extra["last_assistant_message"] = json!(x.last);
            }
            if self.http_hooks {
                // The turn is over when Claude Code runs its Stop hooks; over HTTP it waits
                // for them before drawing its prompt, but works on nothing meanwhile.
                self.phase(Activity::Idle, None, None);
            }
            self.hook("Stop", extra, x.stop_hook).await;
            if self.new_shape {
                let s = self.w.stop_hook_summary();
                self.write(&s, None);
            }
            if self.turn_duration {
                let d = self.w.turn_duration();
                self.write(&d, None);
            }
        }
        self.world.show(&self.pane, Screen::Idle);
        self.phase(Activity::Idle, None, None);
    }

    /// How the agent's life ends, drawn from its own generator: most stay at the prompt;
    /// some exit with SessionEnd (the pane closes), are killed (no hook; the shell stays),
    /// have their pane closed (no hook), or leave their pane to another program (no hook).
    async fn end(&mut self) {
        let ending = self.rng.range(0, 10);
        let pane = self.pane.clone();
        let program = match ending {
            0 => {
                let reason = if self.codex.is_some() {
                    "other"
                } else if self.gemini.is_some() {
                    "exit"
                } else {
                    "prompt_input_exit"
                };
                // Gemini CLI sends its SessionEnd three times on exit.
                let times = if self.gemini.is_some() { 3 } else { 1 };
                for _ in 0..times {
                    self.hook("SessionEnd", json!({ "reason": reason }), Fate::Drawn)
                        .await;
                }
                None
            }
            1 => Some(PaneProgram::Shell),
            2 => None,
            3 => Some(PaneProgram::Other),
            4 => {
                // Whatever the answer, the route may have closed the pane: then it is gone.
                self.stop_through_headspace().await;
                if self.world.pane_open(&pane) {
                    return;
                }
                None
            }
            _ => return,
        };
        self.world.run_in(&pane, program);
        let mut s = self.world.lock();
        if s.checker.seen_alive.contains(&pane) {
            s.checker.gone.insert(pane, sim_now());
        }
        drop(s);
        self.phase(Activity::Ended, None, None);
    }

    /// The user stops the agent from Headspace (`POST /api/agents/{session}/stop`, to the
    /// server of its machine): `/exit` is typed, which the simulated agent ignores, and its
    /// pane is closed after the grace time (at once with `force`).
    async fn stop_through_headspace(&mut self) {
        let force = self.rng.chance(0.5);
        let host = self.world.lock().host;
        let path = format!("/api/agents/{}/stop", self.session_id());
        let body = json!({"force": force}).to_string();
        self.world.lock().checker.stopped.insert(self.session_id());
        post_to(host, &path, body.as_bytes()).await;
    }

    /// A new session in the same pane (after `/clear` or compaction).
    fn new_session(&mut self, source: &str) {
        self.sessions += 1;
        self.tick();
        self.w = self.w.next_session(self.sessions);
        // Claude Code never sends SessionStart over HTTP: always the command hook.
        self.command_hook("SessionStart", json!({"source": source}), Fate::Drawn);
    }

    async fn clear(&mut self, stop_hook: Fate) {
        let path = format!("/api/agents/{}/clear", pane_segment(&self.pane));
        if post(&path, b"").await == Some(200) {
            self.typed("/clear").await;
        }
        self.tick();
        self.hook("UserPromptSubmit", json!({"prompt": "/clear"}), Fate::Drawn)
            .await;
        let l = self.w.local_command("clear");
        self.write(&l, None);
        self.hook("Stop", json!({"stop_hook_active": false}), stop_hook)
            .await;
        self.hook("SessionEnd", json!({"reason": "clear"}), Fate::Drawn)
            .await;
        self.new_session("clear");
        self.world.show(&self.pane, Screen::Idle);
    }
}

/// Plays each agent of `agents` on its own task (the `index`-th with the `index`-th fork of
/// `rng`) and waits for them all.
pub async fn play_agents(agents: Vec<AgentPlan>, world: SimWorld, faults: Faults, mut rng: Rng) {
    let mut handles = Vec::new();
    for (i, a) in agents.into_iter().enumerate() {
        handles.push(tokio::spawn(run_agent(
            i,
            a,
            world.clone(),
            faults.clone(),
            rng.fork(),
        )));
    }
    for h in handles {
        let _ = h.await;
    }
}

/// Gemini CLI's name for a hook event the agents fire by Claude Code's names (see
/// `headspace_core::hook::gemini`).
fn gemini_event(event: &str) -> &str {
    match event {
        "UserPromptSubmit" => "BeforeAgent",
        "Stop" => "AfterAgent",
        "PreToolUse" => "BeforeTool",
        "PostToolUse" => "AfterTool",
        "PermissionRequest" => "Notification",
        other => other,
    }
}

/// Runs one agent's plan in pane `%{index + 1}`.
pub async fn run_agent(
    index: usize,
    plan: AgentPlan,
    world: SimWorld,
    faults: Faults,
    mut rng: Rng,
) {
    sleep_ms(plan.start_ms).await;
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(file_writer(world.clone(), rx, faults.clone(), rng.fork()));
    // Apart: a guard taken inside the struct below would live to its end.
    let number = world.lock().seat + index as u64 + 1;
    let mut agent = Agent {
        pane: format!("%{}", index + 1),
        world: world.clone(),
        faults,
        rng,
        w: SessionWriter::new(number, sim_now()),
        codex: (plan.kind == AgentKind::Codex).then(|| CodexSessionWriter::new(number, sim_now())),
        gemini: (plan.kind == AgentKind::Gemini).then(|| GeminiChatWriter::new(number, sim_now())),
        sessions: 1,
        new_shape: plan.new_shape,
        turn_duration: plan.turn_duration,
        http_hooks: plan.http_hooks,
        files: tx,
        in_flight: Vec::new(),
    };
    world.show(&agent.pane, Screen::Idle);
    world.run_in(
        &agent.pane,
        Some(PaneProgram::Agent {
            kind: plan.kind,
            pid: 1_000 + index as u32,
            cwd: match (&agent.codex, &agent.gemini) {
                (Some(c), _) => c.cwd.clone(),
                (None, Some(g)) => g.cwd.clone(),
                (None, None) => agent.w.cwd.clone(),
            },
            started_at: sim_now(),
        }),
    );
    agent.phase(Activity::Idle, None, None);
    // An agent an orchestration is started on is one the dashboard shows: its start is heard.
    let start = if plan.steps.contains(&Step::Serve) {
        Fate::OnTime
    } else {
        Fate::Drawn
    };
    // Codex sends its SessionStart with the first prompt.
    if agent.codex.is_none() {
        agent.command_hook("SessionStart", json!({"source": "startup"}), start);
    }
    // Gemini writes its chat file when it starts: the metadata and the session context.
    if let Some(g) = &mut agent.gemini {
        let lines = g.start();
        for l in &lines {
            agent.write(l, None);
        }
    }
    for (n, step) in plan.steps.iter().enumerate() {
        match step {
            Step::Prompt(x) => agent.exchange(x, n).await,
            Step::Clear { stop_hook } => agent.clear(*stop_hook).await,
            Step::Compact => {
                agent
                    .hook("PreCompact", json!({"trigger": "auto"}), Fate::Drawn)
                    .await;
                agent.new_session("compact");
            }
            Step::Pause(ms) => sleep_ms(*ms).await,
            Step::Serve => {
                let mut served = 0;
                while !agent.world.lock().orchestra.over {
                    match agent.world.take_typed(&agent.pane) {
                        Some(typed) => {
                            let x = Exchange {
                                progress: vec![
                                    "Looking at it.".into(),
                                    "Let me check the logs.".into(),
                                ],
                                ..Exchange::simple(&typed, "Done.")
                            };
                            // Each exchange its own prompt id.
                            served += 1;
                            agent.exchange(&x, n * 1_000 + served).await;
                        }
                        None => sleep_ms(100).await,
                    }
                }
            }
        }
        sleep_ms(200).await;
    }
    // Drawn after the plan, so the plan's world is the same as without endings.
    let serves = plan.steps.contains(&Step::Serve);
    if !serves {
        agent.end().await;
    }
    // The transcript's last lines and the last hooks still reach the world.
    let Agent {
        files, in_flight, ..
    } = agent;
    drop(files);
    let _ = writer.await;
    for h in in_flight {
        let _ = h.await;
    }
}
