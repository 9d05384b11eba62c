//! Starting a runner from the server (the dashboard's play button): `headspace orchestrate
//! start` as a process of its own, detached, so a server restart does not stop the run, and
//! its output in the project's `.specflow/workflows/runner.log`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the dashboard can choose when it starts a run.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct Launch {
    /// The project folder.
    pub project: PathBuf,
    /// The agent whose pane runs the steps (empty for a headless run).
    #[serde(default)]
    pub agent: String,
    /// Run each step headless instead (a restarted headless run; its command comes from
    /// the environment, `HEADSPACE_HEADLESS_CMD`, never from the project's files).
    #[serde(default)]
    pub headless: bool,
    /// Merge without asking once verify is done.
    #[serde(default)]
    pub auto_merge: bool,
    /// The budget in dollars.
    #[serde(default)]
    pub budget: Option<f64>,
    /// Pause after each implement batch.
    #[serde(default)]
    pub pause_between_batches: bool,
    /// Heal attempts per batch and per step.
    #[serde(default)]
    pub max_heal_attempts: Option<u32>,
    /// Restart the runner when the server starts and finds it gone.
    #[serde(default)]
    pub restart_on_server_start: bool,
}

/// Where a launched runner writes what it prints.
pub fn log_path(project: &Path) -> PathBuf {
    project.join(".specflow/workflows/runner.log")
}

/// How a runner this process starts reaches its server and prices its steps as the cards do.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunnerLink<'a> {
    /// The server's address.
    pub addr: &'a str,
    /// Its token, handed over in the runner's environment (never argv).
    pub token: Option<&'a str>,
    /// The server's `--prices` file, if it was started with one.
    pub prices: Option<&'a Path>,
}

/// Starts `headspace orchestrate start` for `launch`, talking to the server `link` names.
/// Returns the runner's pid. The runner refuses by itself when another one drives the run.
pub fn spawn_runner(launch: &Launch, link: RunnerLink<'_>) -> Result<u32, String> {
    let (addr, token) = (link.addr, link.token);
    if !launch.project.is_dir() {
        return Err(format!(
            "project {}: no such directory",
            launch.project.display()
        ));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find headspace itself: {e}"))?;
    let log = log_path(&launch.project);
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let mut cmd = Command::new(exe);
    cmd.arg("orchestrate")
        .arg("start")
        .arg("--project")
        .arg(&launch.project)
        .args(["--addr", addr]);
    if launch.headless {
        cmd.arg("--headless");
    } else {
        cmd.args(["--agent", &launch.agent]);
    }
    if launch.auto_merge {
        cmd.arg("--auto-merge");
    }
    if let Some(b) = launch.budget {
        cmd.args(["--budget", &b.to_string()]);
    }
    if launch.pause_between_batches {
        cmd.arg("--pause-between-batches");
    }
    if let Some(n) = launch.max_heal_attempts {
        cmd.args(["--max-heal-attempts", &n.to_string()]);
    }
    if launch.restart_on_server_start {
        cmd.arg("--restart-on-server-start");
    }
    if let Some(t) = token {
        cmd.env("HEADSPACE_TOKEN", t);
    }
    // The server's price table, so the runner's budget gate prices tokens as the cards do.
    if let Some(p) = link.prices {
        cmd.env("HEADSPACE_PRICES", p);
    }
    // A group of its own: a Ctrl-C meant for the server does not stop the run.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd
        .current_dir(&launch.project)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start the runner: {e}"))?;
    // Nobody waits for it here: it lives on its own and its runner file records it.
    let pid = child.id();
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait(); // reaps it, so it never lingers as a zombie of the server
    });
    Ok(pid)
}
