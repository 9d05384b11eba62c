//! Agents the user starts, reviews and stops from Headspace (CONTRACT.md, "Agents you start,
//! review and stop"): the rules, without I/O. Which folder may hold an agent, what a worktree
//! and its branch may be called and what they are called when the user gives no name, how an
//! agent is asked to stop, and what a repository's diff says ([`diff`]). The shell runs git and
//! tmux with exactly the arguments decided here, never through a shell.

pub mod diff;

use std::path::{Component, Path};

/// The prefix of every branch Headspace creates: `headspace/NAME`. Only a branch with it,
/// recorded as created by Headspace, is ever deleted by a discard.
pub const BRANCH_PREFIX: &str = "headspace/";

/// The folder, beside the repository's `.git`, that holds the worktrees Headspace creates
/// (when `--worktrees-dir` does not say otherwise).
pub const WORKTREES_DIR: &str = ".worktrees";

/// How long an agent asked to exit has before it is killed.
pub const STOP_GRACE_MS: i64 = 10_000;

/// The longest worktree name taken.
pub const NAME_MAX: usize = 64;

/// Whether a worktree (and branch) name is one Headspace will use: letters, digits, `.`, `_`
/// and `-`, at most [`NAME_MAX`], not starting with `-` or `.`, no `..`, not ending in
/// `.lock`. What is refused says why, for the 400. Nothing else reaches git, so no name can
/// be taken for an option, walk out of the worktrees folder or mean something to a shell.
pub fn check_name(name: &str) -> Result<(), String> {
    let why = if name.is_empty() {
        "is empty"
    } else if name.len() > NAME_MAX {
        "is longer than 64 characters"
    } else if name.starts_with('-') {
        "starts with '-' (it would be read as an option)"
    } else if name.starts_with('.') {
        "starts with '.'"
    } else if name.contains("..") {
        "contains '..'"
    } else if name.ends_with(".lock") {
        "ends with '.lock' (git keeps those for itself)"
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        "may hold only letters, digits, '-', '_' and '.' (no spaces, slashes or shell characters)"
    } else {
        return Ok(());
    };
    Err(format!("the worktree name {name:?} {why}"))
}

/// Whether a base (a branch, tag or commit a worktree starts from) may be handed to git: as a
/// worktree name, with `/` allowed between parts (`release/2.0`), never `//` or a trailing `/`.
pub fn check_base(base: &str) -> Result<(), String> {
    // An empty part is a leading, trailing or doubled '/'.
    if base.len() <= NAME_MAX && base.split('/').all(|part| check_name(part).is_ok()) {
        return Ok(());
    }
    Err(format!(
        "the base {base:?} is not a branch name Headspace takes: letters, digits, '-', '_', '.' and '/' between parts, not starting with '-' or '.'"
    ))
}

/// Whether a session id may be handed to the agent's command (`--resume ID`): it came from
/// hooks, which any local program can post, so only the characters Claude Code's ids use
/// (letters, digits, `-`, `_`), never a leading `-` (it would be read as an option).
pub fn check_session(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('-')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the session id {id:?} cannot be resumed: it is not one Claude Code makes"
        ))
    }
}

/// A name for a worktree when the user gives none: the first words of the first prompt
/// (`fix-the-login-bug`), else `agent`; with `-2`, `-3`, … when `taken` has it. Always
/// passes [`check_name`].
pub fn suggest_name(prompt: Option<&str>, taken: &[String]) -> String {
    let words: Vec<String> = prompt
        .unwrap_or_default()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let mut base = words.join("-");
    base.truncate(40);
    let base = base.trim_end_matches('-').to_string();
    let base = if base.is_empty() {
        "agent".into()
    } else {
        base
    };
    let free = |n: &String| !taken.contains(n) && !taken.contains(&branch_for(n));
    std::iter::once(base.clone())
        .chain((2..).map(|i| format!("{base}-{i}")))
        .find(free)
        .expect("an unbounded sequence has a free name")
}

/// The branch a worktree named `name` works on.
pub fn branch_for(name: &str) -> String {
    format!("{BRANCH_PREFIX}{name}")
}

/// Whether `dir` lies in (or is) one of `roots`, component by component (`/w/app2` is not
/// in `/w/app`). Both sides must already be canonical (symlinks resolved by the shell):
/// a path with `..` is never in a root.
pub fn within_roots(dir: &Path, roots: &[impl AsRef<Path>]) -> bool {
    let plain = |p: &Path| {
        p.is_absolute()
            && p.components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    };
    plain(dir)
        && roots
            .iter()
            .any(|r| plain(r.as_ref()) && dir.starts_with(r.as_ref()))
}

/// What ends an agent of this kind from its prompt, typed as a prompt is.
pub fn exit_text(kind: crate::kind::AgentKind) -> &'static str {
    match kind {
        crate::kind::AgentKind::Claude => "/exit",
        crate::kind::AgentKind::Codex | crate::kind::AgentKind::Gemini => "/quit",
    }
}

/// Where and when Headspace started an agent, and whether it already knows which agent that
/// was: what [`started_agent`] weighs.
#[derive(Clone, Copy, Debug)]
pub struct LaunchPlace<'a> {
    /// The pane its window opened with.
    pub pane: &'a str,
    /// The folder the agent was started in (the worktree, or the project).
    pub cwd: &'a str,
    /// When it was started.
    pub at: crate::Timestamp,
    /// Whether an agent is linked to it already.
    pub linked: bool,
}

/// Whether `agent` is the one a launch at `place` started, when its first hook came too late
/// for the launch to learn its id: an unlinked launch, the agent in the same pane and the
/// same folder, and seen since the launch (a pane id is reused only once its pane closed,
/// and a worktree's folder is the launch's own). Ended or not: a stopped agent is the one
/// whose work is merged or discarded.
pub fn started_agent(place: &LaunchPlace<'_>, agent: &crate::model::AgentRow) -> bool {
    !place.linked
        && agent.tmux_pane.as_deref() == Some(place.pane)
        && agent.cwd.as_deref().map(|c| c.trim_end_matches('/'))
            == Some(place.cwd.trim_end_matches('/'))
        && agent.last_seen_at >= place.at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_agent_is_its_launch_s_only_in_its_pane_and_folder_and_after_it() {
        let at = crate::Timestamp(1_000_000);
        let place = LaunchPlace {
            pane: "%4",
            cwd: "/r/shop/.worktrees/a",
            at,
            linked: false,
        };
        let mut agent = crate::model::AgentRow::new(7, crate::Timestamp(1_030_000));
        agent.tmux_pane = Some("%4".into());
        agent.cwd = Some("/r/shop/.worktrees/a/".into());
        assert!(started_agent(&place, &agent));
        agent.ended = true;
        assert!(
            started_agent(&place, &agent),
            "a stopped agent is still its launch's"
        );
        let linked = LaunchPlace {
            linked: true,
            ..place
        };
        assert!(!started_agent(&linked, &agent), "a launch links one agent");
        let other_pane = LaunchPlace {
            pane: "%5",
            ..place
        };
        assert!(!started_agent(&other_pane, &agent));
        let other_folder = LaunchPlace {
            cwd: "/r/shop",
            ..place
        };
        assert!(!started_agent(&other_folder, &agent));
        agent.last_seen_at = crate::Timestamp(999_000);
        assert!(
            !started_agent(&place, &agent),
            "an agent last seen before the launch ran there before it"
        );
        agent.last_seen_at = at;
        agent.cwd = None;
        assert!(
            !started_agent(&place, &agent),
            "an agent of no known folder"
        );
    }
    use std::path::PathBuf;

    #[test]
    fn names_that_could_be_options_paths_or_shell_are_refused() {
        for bad in [
            "",
            "-rf",
            "--upload-pack=x",
            ".hidden",
            "a..b",
            "../up",
            "a/b",
            "a b",
            "x;rm",
            "$(id)",
            "`id`",
            "a\nb",
            "main.lock",
            "é",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} taken");
        }
        for good in ["fix-login", "v1.2", "a_b", "x"] {
            assert_eq!(check_name(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn bases_may_have_slashes_and_sessions_only_ids_characters() {
        for good in ["main", "release/2.0", "headspace/fix-login", "v1.2"] {
            assert_eq!(check_base(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "-x",
            "a//b",
            "a/",
            "/a",
            "a/../b",
            "a/.hidden",
            "a b",
            "x;y",
        ] {
            assert!(check_base(bad).is_err(), "{bad:?} taken");
        }
        assert_eq!(
            check_session("0b1c2d3e-aaaa-4bbb-8ccc-123456789abc"),
            Ok(())
        );
        for bad in ["", "--dangerously-skip-permissions", "a b", "../x", "x;y"] {
            assert!(check_session(bad).is_err(), "{bad:?} taken");
        }
    }

    #[test]
    fn a_suggested_name_comes_from_the_prompt_and_is_free() {
        assert_eq!(
            suggest_name(Some("Fix the login bug, please!"), &[]),
            "fix-the-login-bug"
        );
        assert_eq!(suggest_name(None, &[]), "agent");
        assert_eq!(suggest_name(Some("¿¡!"), &[]), "agent");
        let taken = vec!["agent".to_string(), branch_for("agent-2")];
        assert_eq!(suggest_name(None, &taken), "agent-3");
        for p in ["; rm -rf / #", "--force", "../../etc", &"long ".repeat(50)] {
            let n = suggest_name(Some(p), &[]);
            assert_eq!(check_name(&n), Ok(()), "{p:?} gave {n:?}");
        }
    }

    #[test]
    fn a_folder_is_in_a_root_by_whole_components_only() {
        let roots = [PathBuf::from("/w/app")];
        assert!(within_roots(Path::new("/w/app"), &roots));
        assert!(within_roots(Path::new("/w/app/sub"), &roots));
        assert!(!within_roots(Path::new("/w/app2"), &roots));
        assert!(!within_roots(Path::new("/w/app/../etc"), &roots));
        assert!(!within_roots(Path::new("w/app"), &roots));
        assert!(!within_roots(Path::new("/w/app"), &[] as &[PathBuf]));
    }
}
