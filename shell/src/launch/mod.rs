//! Agents the user starts, reviews and stops from Headspace (CONTRACT.md, "Agents you start,
//! review and stop"). The rules (names, roots, what a diff says, how an agent is stopped) are
//! the core's [`headspace_core::launch`]; this module runs git ([`git`]) and tmux with them,
//! keeps what it started in a [`LaunchBook`], and carries out each request ([`start`],
//! [`review`], [`stop`]).

pub mod git;
pub mod review;
pub mod start;
pub mod stop;

use crate::server::store::{BoxFuture, StoreError};
use headspace_core::Timestamp;
use serde::Serialize;

/// One agent Headspace started: where it runs and what it made for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Launch {
    /// Its id in the book.
    pub id: u64,
    /// The pane it runs in.
    pub tmux_pane: String,
    /// The kind of agent (`claude`).
    pub kind: String,
    /// The folder the user asked for (canonical).
    pub project: String,
    /// Where it runs: the worktree, or the project.
    pub cwd: String,
    /// The worktree's folder, when Headspace made one.
    pub worktree: Option<String>,
    /// The branch it works on.
    pub branch: Option<String>,
    /// The branch it started from.
    pub base_branch: Option<String>,
    /// The commit it started from: what its diff is against.
    pub base_commit: Option<String>,
    /// Whether Headspace created `branch` (only then may a discard delete it).
    pub created_branch: bool,
    /// The first prompt typed into it.
    pub prompt: Option<String>,
    /// When it was started.
    pub started_at: Timestamp,
    /// The agent its pane turned out to hold, once its first hook came.
    pub agent_id: Option<u64>,
    /// When it was stopped through Headspace.
    pub stopped_at: Option<Timestamp>,
    /// When its worktree and branch were removed.
    pub discarded_at: Option<Timestamp>,
}

/// What a server starts agents with: its settings and where it keeps what it started.
#[derive(Clone)]
pub struct Launcher {
    /// The roots, the command, the worktrees folder, the tmux server.
    pub settings: std::sync::Arc<start::LaunchSettings>,
    /// The agents it started.
    pub book: std::sync::Arc<dyn LaunchBook>,
}

/// The launch of `agent`, if Headspace started it: the one linked to it, or else the unlinked
/// launch into its pane whose agent it is by [`headspace_core::launch::started_agent`] (its
/// first hook came after the start had answered), linked now.
pub async fn launch_of(
    book: &dyn LaunchBook,
    agent: &headspace_core::model::AgentRow,
) -> Result<Option<Launch>, StoreError> {
    if let Some(l) = book.of_agent(agent.id).await? {
        return Ok(Some(l));
    }
    let Some(pane) = agent.tmux_pane.as_deref() else {
        return Ok(None);
    };
    for mut l in book.unlinked_in(pane).await? {
        let place = headspace_core::launch::LaunchPlace {
            pane: &l.tmux_pane,
            cwd: &l.cwd,
            at: l.started_at,
            linked: l.agent_id.is_some(),
        };
        if headspace_core::launch::started_agent(&place, agent) {
            book.link(l.id, agent.id).await?;
            l.agent_id = Some(agent.id);
            return Ok(Some(l));
        }
    }
    Ok(None)
}

/// Where the agents Headspace started are kept (PostgreSQL's `launches` table).
pub trait LaunchBook: Send + Sync {
    /// Records a new launch (its `id` is ignored); returns its id.
    fn add(&self, launch: &Launch) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// Records which agent a launch's pane holds.
    fn link(&self, launch: u64, agent_id: u64) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The launch of an agent, if Headspace started it.
    fn of_agent(&self, agent_id: u64) -> BoxFuture<'_, Result<Option<Launch>, StoreError>>;
    /// The launches into `pane` that know no agent yet (newest first): their first hook came
    /// after the start had answered.
    fn unlinked_in<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<Vec<Launch>, StoreError>>;
    /// Every launch that made a worktree, for the names taken (newest first).
    fn worktrees(&self) -> BoxFuture<'_, Result<Vec<Launch>, StoreError>>;
    /// Marks a launch stopped at `at`.
    fn stopped(&self, launch: u64, at: Timestamp) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Marks a launch's worktree and branch removed at `at`.
    fn discarded(&self, launch: u64, at: Timestamp) -> BoxFuture<'_, Result<(), StoreError>>;
}
