//! git, run for the agents Headspace starts: each call an argument list (never a shell), in a
//! given folder, with the repository's own hooks, fsmonitor, external diff, textconv and
//! signing programs switched off, and its diff prefixes fixed (the patch parser reads `a/`
//! and `b/`). A repository an agent works in is not trusted: its `.git/config` and
//! `.gitattributes` are the agent's to write, and any of those would run a program of its
//! choosing with the user's rights the next time Headspace ran git there. Not covered yet:
//! clean/smudge filter and merge drivers a repository's own config names for its attributes.

use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// How long one git command may take.
const GIT_TIME: Duration = Duration::from_secs(30);

/// Runs `git ARGS` in `dir`; its standard output, or its error (stderr, trimmed) on failure.
pub async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = run(dir, args).await?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// Runs `git ARGS` in `dir` whose exit status 1 is an answer, not a failure (`diff
/// --no-index`: the files differ; `merge-tree`: there are conflicts): its standard output,
/// or git's error for any other failing status.
pub async fn git_any_status(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = run(dir, args).await?;
    match out.status.code() {
        Some(0 | 1) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        _ => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

async fn run(dir: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    let mut cmd = Command::new("git");
    cmd.args([
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.quotePath=false",
        "-c",
        "diff.external=",
        "-c",
        "commit.gpgSign=false",
        "-c",
        "diff.noprefix=false",
        "-c",
        "diff.mnemonicPrefix=false",
        "-c",
        "diff.relative=false",
        "-c",
        "color.ui=false",
    ])
    .args(args)
    .current_dir(dir)
    .env("GIT_TERMINAL_PROMPT", "0")
    .env("GIT_OPTIONAL_LOCKS", "0")
    .env_remove("GIT_DIR")
    .env_remove("GIT_WORK_TREE")
    .stdin(std::process::Stdio::null())
    .kill_on_drop(true);
    match tokio::time::timeout(GIT_TIME, cmd.output()).await {
        Ok(Ok(o)) => Ok(o),
        Ok(Err(e)) => Err(format!("git could not run: {e}")),
        Err(_) => Err(format!("git {} took over 30 s", args.join(" "))),
    }
}

/// The main checkout of the repository `dir` is in (for a linked worktree's folder, the
/// checkout it was made from): git's first worktree, wherever the repository keeps its
/// `.git` (`--separate-git-dir` too).
pub async fn main_checkout(dir: &Path) -> Result<PathBuf, String> {
    let list = git(dir, &["worktree", "list", "--porcelain"])
        .await
        .map_err(|e| format!("{} is not in a git repository: {e}", dir.display()))?;
    list.lines()
        .next()
        .and_then(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} is a bare repository: no checkout", dir.display()))
}

/// The repository's own exclude file (`info/exclude` in its git folder), as a path.
pub async fn exclude_file(main: &Path) -> Result<PathBuf, String> {
    Ok(PathBuf::from(
        git(
            main,
            &[
                "rev-parse",
                "--path-format=absolute",
                "--git-path",
                "info/exclude",
            ],
        )
        .await?
        .trim(),
    ))
}

/// The branch checked out in `dir`, or `None` on a detached HEAD.
pub async fn current_branch(dir: &Path) -> Result<Option<String>, String> {
    let b = git(dir, &["branch", "--show-current"]).await?;
    let b = b.trim();
    Ok((!b.is_empty()).then(|| b.to_string()))
}

/// The commit `rev` names in `dir`.
pub async fn commit_of(dir: &Path, rev: &str) -> Result<String, String> {
    Ok(
        git(dir, &["rev-parse", "--verify", "--end-of-options", rev])
            .await?
            .trim()
            .to_string(),
    )
}

/// Whether branch `name` exists in `dir`'s repository.
pub async fn branch_exists(dir: &Path, name: &str) -> bool {
    git(
        dir,
        &[
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{name}"),
        ],
    )
    .await
    .is_ok()
}

/// Every change in `dir` against `base`: committed since it, staged, unstaged, and files git
/// does not track yet (shown as added), as one unified patch.
pub async fn patch_since(dir: &Path, base: &str) -> Result<String, String> {
    let mut patch = git(
        dir,
        &[
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--find-renames",
            base,
            "--",
        ],
    )
    .await?;
    let untracked = git(dir, &["ls-files", "--others", "--exclude-standard", "-z"]).await?;
    for path in untracked.split('\0').filter(|p| !p.is_empty()) {
        patch.push_str(
            &git_any_status(
                dir,
                &[
                    "diff",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--no-index",
                    "--",
                    "/dev/null",
                    path,
                ],
            )
            .await?,
        );
    }
    Ok(patch)
}

/// Removes the worktree `tree` (when it is still there) and the branch `branch` of the
/// repository whose main checkout is `main`: what Headspace made for an agent.
pub async fn remove_worktree(main: &Path, tree: &str, branch: &str) -> Result<(), String> {
    if Path::new(tree).exists() {
        git(main, &["worktree", "remove", "--force", tree])
            .await
            .map_err(|e| format!("git worktree remove failed: {e}"))?;
    }
    git(main, &["worktree", "prune"]).await?;
    git(main, &["branch", "-D", branch])
        .await
        .map_err(|e| format!("git branch -D {branch} failed: {e}"))?;
    Ok(())
}
