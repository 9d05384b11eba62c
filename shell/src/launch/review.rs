//! Reviewing what an agent did: its diff, merging its branch into the branch it started from,
//! and discarding its worktree and branch.

use super::git::{
    commit_of, current_branch, git, git_any_status, main_checkout, patch_since, remove_worktree,
};
use super::start::LaunchError;
use super::Launch;
use headspace_core::launch::diff::{parse_patch, FileChange};
use headspace_core::launch::BRANCH_PREFIX;
use std::path::Path;

/// What changed, as `GET /api/agents/{id}/diff` answers it.
#[derive(Debug, serde::Serialize)]
pub struct Diff {
    /// What it is against: the branch (or commit) a worktree started from, or `HEAD`.
    pub base: String,
    /// The branch the agent works on, when on one.
    pub branch: Option<String>,
    /// The changed files.
    pub files: Vec<FileChange>,
}

/// The diff of an agent Headspace started (`launch`), or of any agent working in `cwd`: a
/// worktree's branch and uncommitted changes against the commit it started from; otherwise
/// the folder's uncommitted changes against `HEAD`.
pub async fn diff(launch: Option<&Launch>, cwd: Option<&str>) -> Result<Diff, LaunchError> {
    if let Some(l) = launch.filter(|l| l.discarded_at.is_none()) {
        if let (Some(tree), Some(base)) = (&l.worktree, &l.base_commit) {
            let patch = patch_since(Path::new(tree), base)
                .await
                .map_err(LaunchError::Failed)?;
            return Ok(Diff {
                base: l.base_branch.clone().unwrap_or_else(|| base.clone()),
                branch: l.branch.clone(),
                files: parse_patch(&patch),
            });
        }
    }
    let Some(cwd) = cwd.or(launch.map(|l| l.cwd.as_str())) else {
        return Err(LaunchError::Bad("the agent's folder is not known".into()));
    };
    let dir = Path::new(cwd);
    if main_checkout(dir).await.is_err() {
        return Err(LaunchError::Bad(format!(
            "the agent's folder {cwd} is not in a git repository"
        )));
    }
    let patch = patch_since(dir, "HEAD")
        .await
        .map_err(LaunchError::Failed)?;
    Ok(Diff {
        base: "HEAD".into(),
        branch: current_branch(dir).await.ok().flatten(),
        files: parse_patch(&patch),
    })
}

/// How a merge takes the agent's branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// A merge commit.
    Merge,
    /// One commit with all of it.
    Squash,
}

impl Strategy {
    /// The strategy named in a request.
    pub fn parse(name: Option<&str>) -> Result<Strategy, LaunchError> {
        match name.unwrap_or("merge") {
            "merge" => Ok(Strategy::Merge),
            "squash" => Ok(Strategy::Squash),
            other => Err(LaunchError::Bad(format!(
                "strategy must be \"merge\" or \"squash\", not {other:?}"
            ))),
        }
    }
}

/// The worktree, branch and base of a launch that made them and still has them.
fn made(launch: &Launch) -> Result<(&str, &str), LaunchError> {
    match (&launch.worktree, &launch.branch) {
        (Some(tree), Some(branch))
            if launch.created_branch
                && launch.discarded_at.is_none()
                && branch.starts_with(BRANCH_PREFIX) =>
        {
            Ok((tree, branch))
        }
        _ => Err(LaunchError::Conflict(
            "this agent has no worktree and branch of Headspace's making".into(),
            Vec::new(),
        )),
    }
}

/// Merges the agent's branch, with what its worktree holds uncommitted committed first, into
/// the branch it started from, in the repository's main checkout. A conflict is found
/// before anything is touched (`git merge-tree`) and answers 409 with the files.
pub async fn merge(launch: &Launch, strategy: Strategy) -> Result<String, LaunchError> {
    let (tree, branch) = made(launch)?;
    let Some(base) = launch.base_branch.as_deref() else {
        return Err(LaunchError::Conflict(
            "the agent started from a detached HEAD: there is no branch to merge into".into(),
            Vec::new(),
        ));
    };
    let tree = Path::new(tree);
    // The repository the user asked for (checked against the roots at start), never the one
    // the worktree's own `.git` file names: the agent can rewrite that.
    let main = main_checkout(Path::new(&launch.project))
        .await
        .map_err(LaunchError::Failed)?;
    let on = current_branch(&main).await.map_err(LaunchError::Failed)?;
    if on.as_deref() != Some(base) {
        return Err(LaunchError::Conflict(
            format!(
                "the main checkout {} is on {}, not {base}: check out {base} there to merge into it",
                main.display(),
                on.as_deref().unwrap_or("a detached HEAD")
            ),
            Vec::new(),
        ));
    }
    commit_pending(tree, branch).await?;
    let trial = git_any_status(
        &main,
        &[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            base,
            branch,
        ],
    )
    .await
    .map_err(LaunchError::Failed)?;
    let conflicts: Vec<String> = trial.lines().skip(1).map(str::to_string).collect();
    if !conflicts.is_empty() {
        return Err(LaunchError::Conflict(
            format!(
                "{branch} conflicts with {base} in {} file(s); the main checkout was not changed",
                conflicts.len()
            ),
            conflicts,
        ));
    }
    let message = format!("Merge {branch} (an agent's work, via Headspace)");
    let merged = match strategy {
        Strategy::Merge => {
            git(
                &main,
                &["merge", "--no-ff", "--no-edit", "-m", &message, branch],
            )
            .await
        }
        Strategy::Squash => match git(&main, &["merge", "--squash", branch]).await {
            Ok(_) => commit(&main, &message).await,
            Err(e) => Err(e),
        },
    };
    merged.map_err(|e| {
        LaunchError::Conflict(
            format!("git could not merge {branch} into {base} in the main checkout: {e}"),
            Vec::new(),
        )
    })?;
    commit_of(&main, "HEAD").await.map_err(LaunchError::Failed)
}

/// Commits whatever the worktree holds uncommitted onto its branch.
async fn commit_pending(tree: &Path, branch: &str) -> Result<(), LaunchError> {
    let status = git(tree, &["status", "--porcelain"])
        .await
        .map_err(LaunchError::Failed)?;
    if status.trim().is_empty() {
        return Ok(());
    }
    git(tree, &["add", "-A"])
        .await
        .map_err(LaunchError::Failed)?;
    commit(
        tree,
        &format!("Work on {branch} not yet committed (via Headspace)"),
    )
    .await
    .map(|_| ())
    .map_err(LaunchError::Failed)
}

/// `git commit`, as the user when git knows who they are, else as Headspace.
async fn commit(dir: &Path, message: &str) -> Result<String, String> {
    let known = git(dir, &["config", "user.email"]).await.is_ok();
    if known {
        git(dir, &["commit", "--no-verify", "-m", message]).await
    } else {
        git(
            dir,
            &[
                "-c",
                "user.name=Headspace",
                "-c",
                "user.email=headspace@localhost",
                "commit",
                "--no-verify",
                "-m",
                message,
            ],
        )
        .await
    }
}

/// Removes the worktree and the branch Headspace made for an agent (never one it did not
/// make); the agent must no longer run (`running`).
pub async fn discard(launch: &Launch, running: bool) -> Result<(), LaunchError> {
    let (tree, branch) = made(launch)?;
    if running {
        return Err(LaunchError::Conflict(
            "the agent still runs: stop it first".into(),
            Vec::new(),
        ));
    }
    let main = main_checkout(Path::new(&launch.project))
        .await
        .map_err(LaunchError::Failed)?;
    remove_worktree(&main, tree, branch)
        .await
        .map_err(LaunchError::Failed)
}
