//! How a step's workflow runs. By default as an agent: the skill (`/flow.design`, …) is typed
//! into an agent's tmux pane through the running Headspace server, and the agent's activity
//! is the workflow's status — running, waiting for input, and idle after the send meaning
//! done — so a lost hook never makes a step look stale. Alternatively a headless
//! `claude -p --output-format json` process, whose `total_cost_usd` counts against the budget.
//! An agent's step costs what its transcript's `usage` says, priced by the price table.
//!
//! Each workflow has a record, `.specflow/workflows/workflow-{id}.json`, so that a restarted
//! runner (or `orchestrate status`) still finds it; a finished workflow's record keeps its
//! final status, since the agent goes on to other work.

use crate::client::{encode_segment, request};
pub use headspace_core::orchestration::prompt_for;
use headspace_core::orchestration::{
    activity_named, follow_agent, headless_exit, headless_running, Progress, SpawnRequest,
    WorkflowStatus, WorkflowView,
};
use headspace_core::usage::PriceTable;
use headspace_core::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default headless command; the prompt is appended as its last argument.
pub const DEFAULT_HEADLESS: &str = "claude -p --output-format json";

/// Where and how workflows run.
#[derive(Clone, Debug)]
pub enum StepRunner {
    /// Typed into an agent's pane through the server.
    Agent {
        /// Agent id, session id or pane id.
        agent: String,
        /// The server (`127.0.0.1:5055`).
        addr: String,
        /// Bearer token, when the server needs one.
        token: Option<String>,
        /// Send `/clear` first, so each step starts with a fresh context.
        clear_first: bool,
    },
    /// A process per workflow, in the project folder.
    Headless {
        /// The command and its arguments; the prompt is added last.
        command: Vec<String>,
        /// Claude's folder (`~/.claude`): the session transcript's growth is the activity.
        claude_dir: PathBuf,
    },
}

/// `.specflow/workflows/workflow-{id}.json`: one workflow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRecord {
    /// Its id.
    pub id: String,
    /// The skill it runs.
    pub skill: String,
    /// What was typed or passed.
    pub prompt: String,
    /// The agent it was sent to (agent mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The process (headless mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The process's start time when it was spawned: a record's pid is signalled only while
    /// it still names that process (a record could come from anywhere, a pid be reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_started: Option<u64>,
    /// When it started, ms since the epoch.
    pub started_at_ms: i64,
    /// Its last known status; final once completed, failed or cancelled.
    pub status: WorkflowStatus,
    /// Its cost so far.
    #[serde(default)]
    pub cost_usd: f64,
    /// Its last activity, ms since the epoch.
    #[serde(default)]
    pub last_activity_ms: i64,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl WorkflowRecord {
    fn view(&self) -> WorkflowView {
        WorkflowView {
            id: self.id.clone(),
            status: self.status.clone(),
            last_activity_ms: self.last_activity_ms.max(self.started_at_ms),
            cost_usd: self.cost_usd,
        }
    }

    fn is_final(&self) -> bool {
        self.status.is_final()
    }

    fn progress(&self) -> Progress {
        Progress {
            status: self.status.clone(),
            last_activity_ms: self.last_activity_ms,
            cost_usd: self.cost_usd,
            error: self.error.clone(),
        }
    }

    fn set_progress(&mut self, p: Progress) {
        self.status = p.status;
        self.last_activity_ms = p.last_activity_ms;
        self.cost_usd = p.cost_usd;
        self.error = p.error;
    }
}

/// The workflows of one project.
#[derive(Clone, Debug)]
pub struct Steps {
    runner: StepRunner,
    project: PathBuf,
    records: PathBuf,
    read_only: bool,
    prices: PriceTable,
}

impl Steps {
    /// Workflows for the project at `project`, recorded under `records`. A read-only
    /// `Steps` (for `orchestrate decide` and `status`) looks workflows up but writes nothing.
    pub fn new(runner: StepRunner, project: &Path, records: &Path, read_only: bool) -> Self {
        Steps {
            runner,
            project: project.to_path_buf(),
            records: records.to_path_buf(),
            read_only,
            prices: PriceTable::builtin(),
        }
    }

    /// These workflows with an agent's steps priced by `prices` instead of the shipped table.
    pub fn with_prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.records.join(format!("workflow-{id}.json"))
    }

    fn read(&self, id: &str) -> Option<WorkflowRecord> {
        super::project_files::read_json(&self.record_path(id), "workflow record").ok()
    }

    fn write(&self, r: &WorkflowRecord) {
        if self.read_only {
            return;
        }
        if let Err(e) = self.write_checked(r) {
            tracing::warn!("{e}");
        }
    }

    fn write_checked(&self, r: &WorkflowRecord) -> Result<(), String> {
        if self.read_only {
            return Err(format!("workflow {} is not recorded: read-only", r.id));
        }
        super::project_files::write_json(&self.record_path(&r.id), r)
            .map_err(|e| format!("cannot record workflow {}: {e}", r.id))
    }

    /// Whether workflow `id` has no record at all, so it never started: its record is
    /// written before it is typed or started, and a step is not started unless it was.
    /// `false` when that cannot be told (the folder cannot be searched, an id this process
    /// would have replaced by one of its own).
    pub fn never_started(&self, id: &str) -> bool {
        plain_id(id)
            && std::fs::symlink_metadata(self.record_path(id))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    }

    /// Starts the workflow for `req`; its id: the first of this millisecond and process
    /// with no record yet (a runner spawns one step at a time; no counter is shared by the
    /// process).
    pub fn spawn(&self, req: &SpawnRequest, now_ms: i64) -> Result<String, String> {
        let pid = std::process::id();
        let id = (0u64..)
            .map(|n| format!("wf-{now_ms}-{pid}-{n}"))
            .find(|id| self.read(id).is_none())
            .unwrap_or_default();
        self.spawn_with_id(req, &id, now_ms)
    }

    /// Starts the workflow for `req` as `id` (an id that is not a plain file name gets one
    /// of this process's). Its record is written before the step is typed or started, so
    /// a runner that dies in between leaves a trace the next one can adopt.
    pub fn spawn_with_id(
        &self,
        req: &SpawnRequest,
        id: &str,
        now_ms: i64,
    ) -> Result<String, String> {
        if !plain_id(id) || self.read(id).is_some() {
            return self.spawn(req, now_ms);
        }
        let id = id.to_string();
        let prompt = prompt_for(req);
        let mut record = WorkflowRecord {
            id: id.clone(),
            skill: req.skill.clone(),
            prompt: prompt.clone(),
            agent: None,
            pid: None,
            pid_started: None,
            started_at_ms: now_ms,
            status: WorkflowStatus::Running,
            cost_usd: 0.0,
            last_activity_ms: now_ms,
            error: None,
        };
        if let StepRunner::Agent { agent, .. } = &self.runner {
            record.agent = Some(agent.clone());
        }
        // Recorded before it starts, or not started at all: see above, and `never_started`.
        self.write_checked(&record)?;
        match self.start(&id, &prompt) {
            Ok(pid) => {
                // Test seam: a runner that dies right after the start, before it records
                // the pid (the wrapper's pid file must then stand in for it).
                if std::env::var_os("HEADSPACE_TEST_DIE_AFTER_START").is_some() {
                    std::process::exit(137);
                }
                record.pid = pid;
                record.pid_started =
                    pid.and_then(|p| super::project_files::process_identity(p).map(|(s, _)| s));
            }
            Err(e) => {
                record.status = WorkflowStatus::Failed;
                record.error = Some(e.clone());
                self.write(&record);
                return Err(e);
            }
        }
        self.write(&record);
        Ok(id)
    }

    /// Types `prompt` into the agent's pane (after `/clear`), or starts it headless as
    /// workflow `id`; the headless process's pid.
    fn start(&self, id: &str, prompt: &str) -> Result<Option<u32>, String> {
        match &self.runner {
            StepRunner::Agent {
                agent,
                addr,
                token,
                clear_first,
            } => {
                let seg = encode_segment(agent);
                if *clear_first {
                    call(
                        addr,
                        token,
                        "POST",
                        &format!("/api/agents/{seg}/clear"),
                        None,
                    )?;
                    // /clear ends a turn of its own; the step is typed once it has.
                    let _ = call(
                        addr,
                        token,
                        "GET",
                        &format!("/api/agents/{seg}/wait?timeout=30"),
                        None,
                    );
                }
                call(
                    addr,
                    token,
                    "POST",
                    &format!("/api/agents/{seg}/send"),
                    Some(json!({"text": prompt})),
                )?;
                Ok(None)
            }
            StepRunner::Headless { command, .. } => {
                self.spawn_headless(id, command, prompt).map(Some)
            }
        }
    }

    /// Runs `command prompt` detached in the project, its output and exit code going to
    /// files next to the record, so a restarted runner can still read how it ended. The
    /// `sh` wrapper first writes its pid (and its `/proc` stat line, for its start time) to
    /// a pid file, and starts nothing if it cannot: a runner that dies before recording the
    /// pid leaves that file, and the next one follows the process instead of taking it for
    /// one that never started and starting the step again.
    fn spawn_headless(&self, id: &str, command: &[String], prompt: &str) -> Result<u32, String> {
        use std::os::unix::process::CommandExt;
        let (out, err, exit) = self.outputs(id);
        let pid_file = self.pid_file(id);
        std::fs::create_dir_all(&self.records).map_err(|e| e.to_string())?;
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(concat!(
                r#"o=$1; e=$2; x=$3; p=$4; shift 4; s=; "#,
                r#"[ -r /proc/$$/stat ] && read -r s </proc/$$/stat; "#,
                r#"printf '%s\n%s\n' "$$" "$s" >"$p.tmp" && mv "$p.tmp" "$p" || exit 1; "#,
                r#""$@" >"$o" 2>"$e"; echo $? >"$x.tmp" && mv "$x.tmp" "$x""#
            ))
            .arg("sh")
            .args([&out, &err, &exit, &pid_file])
            .args(command)
            .arg(prompt)
            .current_dir(&self.project)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own process group: killing it kills the command too, and a Ctrl-C of the
            // runner does not.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", command.join(" ")))?;
        let pid = child.id();
        // Reaped as soon as it ends, so it never lingers as a zombie that looks alive.
        std::thread::spawn(move || child.wait());
        Ok(pid)
    }

    fn outputs(&self, id: &str) -> (PathBuf, PathBuf, PathBuf) {
        let f = |ext: &str| self.records.join(format!("workflow-{id}.{ext}"));
        (f("out"), f("err"), f("exit"))
    }

    fn pid_file(&self, id: &str) -> PathBuf {
        self.records.join(format!("workflow-{id}.pid"))
    }

    /// The pid its wrapper wrote, for a record without one (its runner died before
    /// recording it), with the start time that wrapper read from `/proc`, or else the one
    /// its pid has now.
    fn learn_pid(&self, r: &mut WorkflowRecord) {
        if r.pid.is_some() {
            return;
        }
        let Ok(text) = std::fs::read_to_string(self.pid_file(&r.id)) else {
            return;
        };
        let mut lines = text.lines();
        let Some(pid) = lines.next().and_then(|l| l.trim().parse::<u32>().ok()) else {
            return;
        };
        r.pid = Some(pid);
        r.pid_started = lines
            .next()
            .and_then(crate::fsutil::parse_stat)
            .or_else(|| super::project_files::process_identity(pid))
            .map(|(started, _)| started);
    }

    /// The workflow `id` now; `None` when it has no record or its agent cannot be asked
    /// (the decision matrix then waits with a backoff).
    pub fn lookup(&self, id: &str, now_ms: i64) -> Option<WorkflowView> {
        let mut r = self.read(id)?;
        if r.is_final() {
            return Some(r.view());
        }
        let before = r.clone();
        match &self.runner {
            StepRunner::Agent {
                addr, token, agent, ..
            } => {
                let agent = r.agent.clone().unwrap_or_else(|| agent.clone());
                let seg = encode_segment(&agent);
                // Two idle readings a quarter second apart, as `headspace wait`: a transient
                // never ends a step.
                let w = call(
                    addr,
                    token,
                    "GET",
                    &format!("/api/agents/{seg}/wait?timeout=0.6"),
                    None,
                )
                .ok()?;
                let activity = activity_named(w["activity"].as_str()?)?;
                let info = call(addr, token, "GET", &format!("/api/agents/{seg}"), None).ok();
                // When it last did something, for a running step: the agent's last sighting.
                let last_seen = (activity == headspace_core::Activity::Running)
                    .then_some(info.as_ref())
                    .flatten()
                    .and_then(|a| Timestamp::from_json(&a["last_seen_at"]))
                    .map(Timestamp::millis);
                let mut p = r.progress();
                // The step's cost: what its agent spent since the step was sent, from the
                // server's own figures (never a reread of the transcript: O(file) per look).
                // Never lowered: a later session of the agent does not undo what was spent.
                let spent = call(
                    addr,
                    token,
                    "GET",
                    &format!("/api/agents/{seg}/usage?since={}", r.started_at_ms),
                    None,
                );
                if let Some(cost) = spent.ok().and_then(|u| u["cost_usd"].as_f64()) {
                    p.cost_usd = p.cost_usd.max(cost);
                }
                follow_agent(&mut p, activity, last_seen, &agent, now_ms);
                r.set_progress(p);
            }
            StepRunner::Headless { claude_dir, .. } => {
                let (out, err, exit) = self.outputs(id);
                let mut p = r.progress();
                self.learn_pid(&mut r);
                // Asked before the exit file is read: a process seen gone had written its
                // exit code already, if it was to.
                let alive = r
                    .pid
                    .map(|pid| super::project_files::process_runs(pid, r.pid_started));
                if let Ok(code) = std::fs::read_to_string(&exit) {
                    let output = std::fs::read_to_string(&out).unwrap_or_default();
                    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
                    headless_exit(&mut p, &code, &output, &stderr, now_ms);
                } else {
                    let newest = if alive == Some(true) {
                        newest_transcript_ms(claude_dir, &self.project)
                            .unwrap_or(0)
                            .max(mtime_ms(&err).unwrap_or(0))
                    } else {
                        0
                    };
                    headless_running(&mut p, alive, newest, r.started_at_ms, now_ms);
                }
                r.set_progress(p);
            }
        }
        if r != before {
            self.write(&r);
        }
        Some(r.view())
    }

    /// Stops workflow `id` (best effort): Escape in the agent's pane (through the server), or
    /// SIGTERM to the
    /// process group; its record says cancelled. A finished workflow is left alone.
    pub fn kill(&self, id: &str) {
        let Some(mut r) = self.read(id) else {
            return;
        };
        // A finished workflow has nothing left to stop, and its agent may have gone on to
        // other work that an Escape would interrupt (cancelling a run that needs attention
        // kills its last, finished workflow).
        if r.is_final() {
            return;
        }
        match &self.runner {
            StepRunner::Agent {
                addr, token, agent, ..
            } => {
                // Through the server, which knows which tmux server the pane is on.
                let agent = r.agent.clone().unwrap_or_else(|| agent.clone());
                let _ = call(
                    addr,
                    token,
                    "POST",
                    &format!("/api/agents/{}/interrupt", encode_segment(&agent)),
                    None,
                );
            }
            StepRunner::Headless { .. } => {
                self.learn_pid(&mut r);
                // Only the group this runner started: never pid 0 or 1 (everything of the
                // user's), never a process that merely got the same pid later.
                let ours = r.pid.filter(|&pid| pid > 1).filter(|&pid| {
                    super::project_files::process_identity(pid).is_some_and(|(started, group)| {
                        group == pid && r.pid_started == Some(started)
                    })
                });
                if let Some(pid) = ours {
                    let _ = std::process::Command::new("kill")
                        .args(["-TERM", "--", &format!("-{pid}")])
                        .stderr(std::process::Stdio::null())
                        .status();
                }
            }
        }
        r.status = WorkflowStatus::Cancelled;
        self.write(&r);
    }
}

/// One JSON call to the server; the body on 200, else the server's error.
fn call(
    addr: &str,
    token: &Option<String>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let (status, text) = request(
        addr,
        method,
        path,
        body.as_bytes(),
        token.as_deref(),
        Duration::from_secs(45),
    )?;
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if status == 200 {
        Ok(v)
    } else {
        Err(v["error"]
            .as_str()
            .map_or_else(|| format!("server answered {status}"), str::to_string))
    }
}

/// An id usable as a file name as it is (else [`Steps::spawn_with_id`] picks its own).
fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn mtime_ms(p: &Path) -> Option<i64> {
    let t = p.metadata().ok()?.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

/// The newest change to a transcript of `project` under `claude_dir/projects/`.
fn newest_transcript_ms(claude_dir: &Path, project: &Path) -> Option<i64> {
    let abs = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let name = headspace_core::engine::claude_project_dir(&abs.to_string_lossy());
    super::project_files::list(&claude_dir.join("projects").join(name), "", ".jsonl")
        .iter()
        .filter_map(|p| mtime_ms(p))
        .max()
}
