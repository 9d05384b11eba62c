//! Runs whose runner is gone: a run still under way (running, paused, waiting) with no live
//! runner process. Nothing drives it until its runner is restarted: by "Resume" (the CLI or
//! the dashboard), or when the server starts, if the run was started with
//! `--restart-on-server-start`. A restarted runner continues from the files: the spawn
//! intent and the linked workflows keep it from doing a finished step again.

use super::control::runner_gone;
use super::launch::{spawn_runner, Launch, RunnerLink};
use super::live::Settings;
use super::project_files::{FileError, ProjectFiles};
use headspace_core::orchestration::OrchestrationExecution;
use std::path::Path;

/// The active run of `project` whose runner is gone, if there is one.
pub fn orphaned_run(project: &Path) -> Result<Option<OrchestrationExecution>, FileError> {
    let files = ProjectFiles::open(project)?;
    Ok(files
        .find_execution(false)?
        .filter(|e| runner_gone(&files, e)))
}

/// How to restart the runner of `exec` in `project`: its stored way of running steps (an
/// agent, or headless with the command from the environment). `None` when it has neither.
pub fn relaunch(project: &Path, exec: &OrchestrationExecution) -> Option<Launch> {
    let settings = Settings::of(exec);
    let headless = settings.agent.is_none() && settings.headless.is_some();
    if settings.agent.is_none() && !headless {
        return None;
    }
    Some(Launch {
        project: project.to_path_buf(),
        agent: settings.agent.unwrap_or_default(),
        headless,
        restart_on_server_start: settings.restart_on_server_start,
        // The rest is in the run's file already; `start` continues the run as it is.
        ..Launch::default()
    })
}

/// Restarts the runner of `exec` in `project`, talking to the server at `addr`; its pid.
pub fn restart(
    project: &Path,
    exec: &OrchestrationExecution,
    link: RunnerLink<'_>,
) -> Result<u32, String> {
    let launch = relaunch(project, exec).ok_or_else(|| {
        format!(
            "orchestration {} has no agent or headless mode to restart with; use `headspace orchestrate start`",
            exec.id
        )
    })?;
    let pid = spawn_runner(&launch, link)?;
    tracing::info!(orchestration = %exec.id, project = %project.display(), pid, "runner restarted");
    Ok(pid)
}

/// At the server's start-up: every run of `projects` whose runner is gone is logged, and
/// restarted when it was started with `--restart-on-server-start`. Returns the restarted
/// runs' ids with their runners' pids.
pub fn revive_at_start_up<'a>(
    projects: impl IntoIterator<Item = &'a Path>,
    link: RunnerLink<'_>,
) -> Vec<(String, u32)> {
    let mut restarted = Vec::new();
    for project in projects {
        let Ok(Some(exec)) = orphaned_run(project) else {
            continue;
        };
        if !Settings::of(&exec).restart_on_server_start {
            tracing::warn!(orchestration = %exec.id, project = %project.display(),
                "orchestration runner is gone; Resume restarts it");
            continue;
        }
        match restart(project, &exec, link) {
            Ok(pid) => restarted.push((exec.id.clone(), pid)),
            Err(e) => tracing::warn!(orchestration = %exec.id, "cannot restart the runner: {e}"),
        }
    }
    restarted
}
