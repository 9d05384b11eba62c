//! The runner's dependencies in real life: the project's files, workflows run by
//! [`Steps`], the helper command, the system clock and git.
//!
//! How a run's workflows run is chosen at `start` and kept in the run's file
//! (`config.headspace`), so `status`, `decide`, `cancel` and a restarted runner see them the
//! same way. The server token is never written there.

use super::helper::HelperCommand;
use super::project_files::ProjectFiles;
use super::runner::{Deps, HelperCase, SpawnRequest};
use super::steps::{StepRunner, Steps, DEFAULT_HEADLESS};
use headspace_core::orchestration::{OrchestrationExecution, WorkflowView};
use headspace_core::usage::PriceTable;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// The execution config key holding [`Settings`].
pub const SETTINGS_KEY: &str = "headspace";

/// How a run's workflows and helper run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// The agent that runs the steps (agent mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The Headspace server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Run each step as this command instead (headless mode), e.g. `claude -p --output-format json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<Vec<String>>,
    /// The helper model's command; none means the fallbacks always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helper: Option<Vec<String>>,
    /// Claude's folder, for headless activity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_dir: Option<PathBuf>,
    /// A price file replacing entries of the shipped price table (agent-run steps' cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<PathBuf>,
    /// Do not send `/clear` before each step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_clear: bool,
    /// Restart the runner when the server starts and finds it gone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart_on_server_start: bool,
}

impl Settings {
    /// The settings stored in a run, without any command or address: a project's files may
    /// come from anyone (a cloned repository), so what runs, and where the token is sent, are
    /// never read from them. A stored headless mode keeps the default command; the helper, a
    /// custom command, the server's address and Claude's folder come from the command line
    /// or the environment at each start.
    pub fn of(execution: &OrchestrationExecution) -> Settings {
        let stored: Settings = execution
            .config
            .extra
            .get(SETTINGS_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        stored.without_commands()
    }

    /// These settings as a run stores them: no commands and no address (see
    /// [`Settings::of`]).
    pub fn without_commands(mut self) -> Settings {
        self.headless = self.headless.map(|_| Vec::new());
        self.helper = None;
        self.addr = None;
        self.claude_dir = None;
        self.prices = None;
        self
    }

    /// These settings with `other`'s set fields on top.
    pub fn overridden_by(mut self, other: &Settings) -> Settings {
        if other.agent.is_some() {
            self.agent.clone_from(&other.agent);
            self.headless = None;
        }
        if other.headless.is_some() {
            self.headless.clone_from(&other.headless);
            self.agent = None;
        }
        if other.addr.is_some() {
            self.addr.clone_from(&other.addr);
        }
        if other.helper.is_some() {
            self.helper.clone_from(&other.helper);
        }
        if other.claude_dir.is_some() {
            self.claude_dir.clone_from(&other.claude_dir);
        }
        if other.prices.is_some() {
            self.prices.clone_from(&other.prices);
        }
        self.no_clear |= other.no_clear;
        self.restart_on_server_start |= other.restart_on_server_start;
        self
    }

    /// Splits a command line on whitespace (`claude -p --output-format json`).
    pub fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }
}

/// The real dependencies.
pub struct LiveDeps {
    files: ProjectFiles,
    steps: Option<Steps>,
    helper: Option<HelperCommand>,
}

impl LiveDeps {
    /// Dependencies for `files` with `settings`. Without an agent or a headless command no
    /// workflow can start (lookups find nothing). `read_only` ones write nothing.
    pub fn new(
        files: ProjectFiles,
        settings: &Settings,
        token: Option<String>,
        read_only: bool,
    ) -> LiveDeps {
        let claude_dir = settings
            .claude_dir
            .clone()
            // No home to be had: a folder that exists nowhere, never a shared one.
            .unwrap_or_else(|| {
                crate::config::default_claude_dir()
                    .unwrap_or_else(|_| std::path::PathBuf::from("/nonexistent/.claude"))
            });
        let runner = match (&settings.agent, &settings.headless) {
            (Some(agent), _) => Some(StepRunner::Agent {
                agent: agent.clone(),
                addr: settings
                    .addr
                    .clone()
                    .unwrap_or_else(|| crate::config::DEFAULT_ADDR.into()),
                token,
                clear_first: !settings.no_clear,
            }),
            (None, Some(cmd)) => Some(StepRunner::Headless {
                command: if cmd.is_empty() {
                    Settings::words(DEFAULT_HEADLESS)
                } else {
                    cmd.clone()
                },
                claude_dir,
            }),
            (None, None) => None,
        };
        let prices = price_table(settings.prices.as_deref());
        let steps = runner.map(|r| {
            Steps::new(r, files.dir(), &files.workflows_dir(), read_only).with_prices(prices)
        });
        let helper = settings
            .helper
            .clone()
            .filter(|c| !c.is_empty())
            .map(|command| HelperCommand {
                command,
                cwd: files.dir().to_path_buf(),
                timeout: Duration::from_secs(180),
            });
        LiveDeps {
            files,
            steps,
            helper,
        }
    }
}

/// The shipped price table with the entries of the file at `path` on top; a file that
/// cannot be read or parsed is logged and left out.
pub fn price_table(path: Option<&std::path::Path>) -> PriceTable {
    let builtin = PriceTable::builtin();
    let Some(path) = path else { return builtin };
    match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| PriceTable::parse(&t).map_err(|e| e.to_string()))
    {
        Ok(table) => builtin.overridden_by(table),
        Err(e) => {
            tracing::warn!(file = %path.display(), "price file not used: {e}");
            builtin
        }
    }
}

/// Now, in ms since the epoch.
pub fn now_ms() -> i64 {
    crate::server::world::Clock::now(&crate::server::world::SystemClock).millis()
}

impl Deps for LiveDeps {
    fn files(&self) -> &ProjectFiles {
        &self.files
    }

    fn current_branch(&self) -> Option<String> {
        let o = std::process::Command::new("git")
            .args(["rev-parse", "--abbrev-ref", "HEAD"])
            .current_dir(self.files.dir())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let b = String::from_utf8_lossy(&o.stdout).trim().to_string();
        (o.status.success() && !b.is_empty()).then_some(b)
    }

    fn lookup_workflow(&self, id: &str) -> Option<WorkflowView> {
        self.steps.as_ref()?.lookup(id, now_ms())
    }

    fn never_started(&self, id: &str) -> bool {
        self.steps.as_ref().is_some_and(|s| s.never_started(id))
    }

    fn spawn(&self, req: &SpawnRequest) -> Result<String, String> {
        self.steps
            .as_ref()
            .ok_or("no agent or headless command configured for this orchestration")?
            .spawn(req, now_ms())
    }

    fn spawn_as(&self, req: &SpawnRequest, id: &str) -> Result<String, String> {
        self.steps
            .as_ref()
            .ok_or("no agent or headless command configured for this orchestration")?
            .spawn_with_id(req, id, now_ms())
    }

    fn kill(&self, id: &str) {
        if let Some(s) = &self.steps {
            s.kill(id);
        }
    }

    fn helper(&self, case: HelperCase, context: &Value) -> Option<Value> {
        self.helper.as_ref()?.ask(case, context)
    }

    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// The files whose change is news for the runner: the state, a run's file, a headless
/// workflow's exit code. Not temporary files or the lock (their names start with a dot), not
/// the workflow records and the runner's log and record, which the runner itself writes at
/// every look: waking on those would keep it iterating (found in review).
pub fn wakes_the_runner(name: &str) -> bool {
    name == "orchestration-state.json"
        || (name.starts_with("orchestration-") && name.ends_with(".json"))
        || (name.starts_with("workflow-") && name.ends_with(".exit"))
}

/// Wakes the runner when something under `.specflow/` changes: a sub-command marking its
/// step, the user pausing or merging, a headless workflow's exit code. The runner's own
/// writes wake it too, but an iteration that changes nothing writes nothing, so that settles.
/// Keep the watcher as long as the loop runs; `None` (logged) when the OS gives no
/// notifications, and polling alone drives the loop.
pub fn watch_project(
    files: &ProjectFiles,
    wake: super::runner::Wake,
) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let dir = files.dir().join(".specflow");
    let mut w = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(ev) = res else { return };
        let relevant = ev.paths.iter().any(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(wakes_the_runner)
        });
        if relevant {
            wake.wake();
        }
    })
    .map_err(|e| tracing::warn!("no file notifications, polling only: {e}"))
    .ok()?;
    w.watch(&dir, notify::RecursiveMode::Recursive)
        .map_err(|e| tracing::warn!("cannot watch {}: {e}; polling only", dir.display()))
        .ok()?;
    Some(w)
}
