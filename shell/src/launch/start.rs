//! Starting an agent: in its folder or in a new git worktree on a new branch, in a new window
//! of the tmux session Headspace keeps for its agents, with the command of `--claude-command`.

use super::git::{
    branch_exists, commit_of, current_branch, exclude_file, git, main_checkout, remove_worktree,
};
use super::{Launch, LaunchBook};
use crate::server::store::Store;
use headspace_core::kind::AgentKind;
use headspace_core::launch::{
    branch_for, check_base, check_name, check_session, suggest_name, within_roots, BRANCH_PREFIX,
    WORKTREES_DIR,
};
use headspace_core::Timestamp;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The tmux session that holds the agents Headspace starts.
pub const SESSION: &str = "headspace";

/// How long a started agent has to make its first hook before the answer goes without its id.
const FIRST_HOOK_WAIT: Duration = Duration::from_secs(20);

/// What a server starts agents with.
#[derive(Clone, Debug)]
pub struct LaunchSettings {
    /// The folders agents may be started in (canonical); none: no agent may be.
    pub roots: Vec<PathBuf>,
    /// The command that starts Claude Code, split on spaces (`--claude-command`).
    pub claude_command: String,
    /// The command that starts Codex CLI, split on spaces (`--codex-command`).
    pub codex_command: String,
    /// The command that starts Gemini CLI, split on spaces (`--gemini-command`).
    pub gemini_command: String,
    /// Where worktrees go: relative to the repository's main checkout, or absolute.
    pub worktrees_dir: PathBuf,
    /// The tmux server (`-L`), as the rest of the server uses it.
    pub tmux_socket: Option<String>,
}

impl LaunchSettings {
    /// Defaults: worktrees in `.worktrees/` beside the repository's `.git`.
    pub fn new(roots: Vec<PathBuf>, claude_command: String, tmux_socket: Option<String>) -> Self {
        LaunchSettings {
            roots,
            claude_command,
            codex_command: "codex".into(),
            gemini_command: "gemini".into(),
            worktrees_dir: PathBuf::from(WORKTREES_DIR),
            tmux_socket,
        }
    }

    /// The command that attaches to the agents' tmux session, for the user to run.
    pub fn attach_command(&self) -> String {
        match &self.tmux_socket {
            Some(s) => format!("tmux -L {s} attach -t {SESSION}"),
            None => format!("tmux attach -t {SESSION}"),
        }
    }
}

/// What the user asked to start.
#[derive(Clone, Debug, Default)]
pub struct StartRequest {
    /// The folder.
    pub project: String,
    /// A worktree: `Some("")` picks its name; `None` runs in the folder itself.
    pub worktree: Option<String>,
    /// The branch (or commit) a worktree starts from; the folder's current branch when `None`.
    pub base: Option<String>,
    /// The agent kind's name.
    pub agent: String,
    /// The first prompt, typed once the agent runs.
    pub prompt: Option<String>,
    /// A session to continue in a new one (`--resume ID --fork-session`): a fork.
    pub fork_of: Option<String>,
}

/// Why a request was not carried out, by the status it answers.
#[derive(Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// 400: the request itself is wrong.
    Bad(String),
    /// 403: the folder is outside every projects root.
    Forbidden(String),
    /// 404: no such agent, or not one Headspace started.
    NotFound(String),
    /// 409: it conflicts with what exists (a branch, a worktree, a running agent, a merge).
    Conflict(String, Vec<String>),
    /// 502: git, tmux or the agent's command failed.
    Failed(String),
    /// 503: the store could not be reached.
    Unavailable(String),
}

impl From<crate::server::store::StoreError> for LaunchError {
    fn from(e: crate::server::store::StoreError) -> Self {
        LaunchError::Unavailable(e.to_string())
    }
}

/// A started agent.
#[derive(Debug)]
pub struct Started {
    /// Its launch, as recorded.
    pub launch: Launch,
    /// The agent its pane holds, once its first hook came (`None` if none came in time).
    pub agent_id: Option<u64>,
    /// What the user runs to see it.
    pub attach: String,
}

/// The folder asked for, canonical, when it is in a projects root.
pub fn allowed_folder(settings: &LaunchSettings, project: &str) -> Result<PathBuf, LaunchError> {
    if project.trim().is_empty() {
        return Err(LaunchError::Bad("project must name a folder".into()));
    }
    let dir = std::fs::canonicalize(project)
        .map_err(|e| LaunchError::Bad(format!("no folder {project}: {e}")))?;
    if !dir.is_dir() {
        return Err(LaunchError::Bad(format!(
            "{} is not a folder",
            dir.display()
        )));
    }
    if !within_roots(&dir, &settings.roots) {
        let roots: Vec<String> = settings
            .roots
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        return Err(LaunchError::Forbidden(format!(
            "{} is outside every projects root ({}): start the server with --projects-root to allow it",
            dir.display(),
            if roots.is_empty() {
                "none set".to_string()
            } else {
                roots.join(", ")
            }
        )));
    }
    Ok(dir)
}

/// Starts an agent as `req` asks and records it in `book`; waits for its first hook (to
/// answer with its id) and types its first prompt.
pub async fn start(
    settings: &LaunchSettings,
    book: &dyn LaunchBook,
    store: &dyn Store,
    now: Timestamp,
    req: &StartRequest,
) -> Result<Started, LaunchError> {
    let kind = AgentKind::from_name(&req.agent).map_err(LaunchError::Bad)?;
    let project = allowed_folder(settings, &req.project)?;
    if let Some(p) = &req.prompt {
        if p.trim().is_empty() {
            return Err(LaunchError::Bad(
                "prompt, when given, must hold some text".into(),
            ));
        }
    }
    let mut launch = Launch {
        id: 0,
        tmux_pane: String::new(),
        kind: kind.name().to_string(),
        project: project.display().to_string(),
        cwd: project.display().to_string(),
        worktree: None,
        branch: current_branch(&project).await.ok().flatten(),
        base_branch: None,
        base_commit: None,
        created_branch: false,
        prompt: req.prompt.clone(),
        started_at: now,
        agent_id: None,
        stopped_at: None,
        discarded_at: None,
    };
    // Everything that can refuse is asked before a worktree is made.
    let (command, flag) = match kind {
        AgentKind::Claude => (&settings.claude_command, "--claude-command"),
        AgentKind::Codex => (&settings.codex_command, "--codex-command"),
        AgentKind::Gemini => (&settings.gemini_command, "--gemini-command"),
    };
    let mut argv: Vec<&str> = command.split_whitespace().collect();
    if argv.is_empty() {
        return Err(LaunchError::Failed(format!("{flag} is empty")));
    }
    if let Some(session) = &req.fork_of {
        if kind != AgentKind::Claude {
            return Err(LaunchError::Bad(format!(
                "forking a session is Claude Code's; {} cannot fork one here",
                kind.title()
            )));
        }
        check_session(session).map_err(LaunchError::Bad)?;
        argv.extend(["--resume", session, "--fork-session"]);
    }
    if let Some(name) = &req.worktree {
        make_worktree(settings, book, &project, name, req, &mut launch).await?;
    }
    if let Err(e) = open_and_book(settings, book, &project, &argv, flag, &mut launch).await {
        // An agent that never ran leaves nothing behind: the worktree and branch made for it
        // go again (a name the user chose stays free for the next try).
        if let (true, Some(tree), Some(branch)) =
            (launch.created_branch, &launch.worktree, &launch.branch)
        {
            let undone = match main_checkout(&project).await {
                Ok(main) => remove_worktree(&main, tree, branch).await,
                Err(e) => Err(e),
            };
            if let Err(undo) = undone {
                tracing::warn!("[LAUNCH] a failed start left {tree} behind: {undo}");
            }
        }
        return Err(e);
    }
    let pane = launch.tmux_pane.clone();
    let agent_id = first_hook(store, &launch).await;
    if let Some(id) = agent_id {
        book.link(launch.id, id).await?;
        launch.agent_id = Some(id);
    }
    if let Some(prompt) = &req.prompt {
        crate::tmux::send(settings.tmux_socket.as_deref(), &pane, prompt)
            .await
            .map_err(|e| {
                LaunchError::Failed(format!(
                    "the agent runs in pane {pane}, but its first prompt could not be typed: {e}"
                ))
            })?;
    }
    Ok(Started {
        launch,
        agent_id,
        attach: settings.attach_command(),
    })
}

/// Opens the agent's window (named after its branch, or its folder) running `argv` in its
/// folder (a failure names `flag`, the option that gave the command), and records the
/// launch; a launch the book cannot take closes its window again.
async fn open_and_book(
    settings: &LaunchSettings,
    book: &dyn LaunchBook,
    project: &Path,
    argv: &[&str],
    flag: &str,
    launch: &mut Launch,
) -> Result<(), LaunchError> {
    let window = match &launch.branch {
        Some(b) => b.strip_prefix(BRANCH_PREFIX).unwrap_or(b).to_string(),
        None => project
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "agent".into()),
    };
    let socket = settings.tmux_socket.as_deref();
    let pane = crate::tmux::open_window(socket, SESSION, &window, Path::new(&launch.cwd), argv)
        .await
        .map_err(|e| LaunchError::Failed(format!("{e}: check {flag}")))?;
    launch.tmux_pane = pane.clone();
    match book.add(launch).await {
        Ok(id) => {
            launch.id = id;
            Ok(())
        }
        Err(e) => {
            let _ = crate::tmux::kill_pane(socket, &pane).await;
            Err(e.into())
        }
    }
}

/// Makes the worktree and branch `name` asks for (a suggested name for `""`), from the base
/// the request names or the folder's current branch, and notes them in `launch`.
async fn make_worktree(
    settings: &LaunchSettings,
    book: &dyn LaunchBook,
    project: &Path,
    name: &str,
    req: &StartRequest,
    launch: &mut Launch,
) -> Result<(), LaunchError> {
    let main = main_checkout(project)
        .await
        .map_err(|e| LaunchError::Bad(format!("a worktree needs a git repository: {e}")))?;
    // The repository's checkout is where the worktree and the exclude line go: it must be
    // in a root too (a folder's `.git` file may name a repository anywhere).
    let main = std::fs::canonicalize(&main)
        .map_err(|e| LaunchError::Failed(format!("{}: {e}", main.display())))?;
    if !within_roots(&main, &settings.roots) {
        return Err(LaunchError::Forbidden(format!(
            "{} belongs to the repository at {}, which is outside every projects root",
            project.display(),
            main.display()
        )));
    }
    let base = match &req.base {
        Some(b) => {
            check_base(b).map_err(LaunchError::Bad)?;
            b.clone()
        }
        None => current_branch(project)
            .await
            .map_err(LaunchError::Failed)?
            .unwrap_or_else(|| "HEAD".into()),
    };
    let base_commit = commit_of(project, &base)
        .await
        .map_err(|e| LaunchError::Bad(format!("no base {base}: {e}")))?;
    let folder = main.join(&settings.worktrees_dir);
    let name = if name.is_empty() {
        let mut taken: Vec<String> = book
            .worktrees()
            .await?
            .into_iter()
            .filter_map(|l| l.branch)
            .collect();
        loop {
            let n = suggest_name(req.prompt.as_deref(), &taken);
            if !branch_exists(&main, &branch_for(&n)).await && !folder.join(&n).exists() {
                break n;
            }
            taken.push(n);
        }
    } else {
        check_name(name).map_err(LaunchError::Bad)?;
        name.to_string()
    };
    let branch = branch_for(&name);
    let path = folder.join(&name);
    if branch_exists(&main, &branch).await {
        return Err(LaunchError::Conflict(
            format!("the branch {branch} exists: choose another worktree name"),
            Vec::new(),
        ));
    }
    if path.exists() {
        return Err(LaunchError::Conflict(
            format!("{} exists: choose another worktree name", path.display()),
            Vec::new(),
        ));
    }
    let exclude = exclude_file(&main).await.map_err(LaunchError::Failed)?;
    ignore_worktrees(&exclude, &settings.worktrees_dir)?;
    let path_text = path.display().to_string();
    git(
        &main,
        &["worktree", "add", "-b", &branch, &path_text, &base_commit],
    )
    .await
    .map_err(|e| LaunchError::Failed(format!("git worktree add failed: {e}")))?;
    launch.cwd = path_text.clone();
    launch.worktree = Some(path_text);
    launch.branch = Some(branch);
    launch.base_branch = (base != "HEAD").then_some(base);
    launch.base_commit = Some(base_commit);
    launch.created_branch = true;
    Ok(())
}

/// Makes git ignore the worktrees folder, in the repository's own exclude file (never a
/// tracked `.gitignore`), when it lies inside the main checkout.
fn ignore_worktrees(exclude: &Path, dir: &Path) -> Result<(), LaunchError> {
    if dir.is_absolute() {
        return Ok(());
    }
    let line = format!("/{}/", dir.display());
    let had = std::fs::read_to_string(exclude).unwrap_or_default();
    if had.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    if let Some(parent) = exclude.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| LaunchError::Failed(format!("cannot write {}: {e}", exclude.display())))?;
    }
    let text = format!(
        "{had}{}# Headspace's agents' worktrees\n{line}\n",
        if had.is_empty() || had.ends_with('\n') {
            ""
        } else {
            "\n"
        }
    );
    std::fs::write(exclude, text)
        .map_err(|e| LaunchError::Failed(format!("cannot write {}: {e}", exclude.display())))
}

/// The live agent `launch` started, once its first hook has made it (or `None` after
/// [`FIRST_HOOK_WAIT`]): in its pane and folder, seen since it started
/// ([`headspace_core::launch::started_agent`], the rule a late agent is linked by too).
async fn first_hook(store: &dyn Store, launch: &Launch) -> Option<u64> {
    let place = headspace_core::launch::LaunchPlace {
        pane: &launch.tmux_pane,
        cwd: &launch.cwd,
        at: launch.started_at,
        linked: false,
    };
    let start = crate::clock::instant();
    while crate::clock::since(start) < FIRST_HOOK_WAIT {
        if let Ok(named) = store.named(&launch.tmux_pane).await {
            if let Some((a, _)) = named
                .iter()
                .filter(|(a, _)| !a.ended && headspace_core::launch::started_agent(&place, a))
                .max_by_key(|(a, _)| a.id)
            {
                return Some(a.id);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}
