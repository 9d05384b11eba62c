//! Pane discovery: which tmux pane runs the Claude Code process of a session that no hook
//! has placed yet, decided from tmux's pane list and the process table the shell reports.
//!
//! Pure: the shell lists panes and reads `/proc`; this module only decides. The rule never
//! guesses: a session is tied to a process only when exactly one free Claude Code process fits
//! it (same folder, started no later than the session's first line), and each tie removes
//! that process from the others' candidates, so two agents in one folder started at different
//! times are told apart while two processes started before one session stay unassigned.

use crate::kind::AgentKind;
use crate::model::AgentId;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How much later than a session's first line a process may seem to have started and still
/// fit it: the process start time the kernel gives is rounded (boot time in whole seconds).
pub const START_TOLERANCE_MS: i64 = 2_000;

pub use super::process::PaneProcess;

/// One tmux pane and what runs in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneListing {
    /// The pane id (`%N`).
    pub pane: String,
    /// tmux's `pane_current_path`: the folder of the pane's foreground process.
    pub current_path: Option<String>,
    /// The pane's process and its descendants.
    pub processes: Vec<PaneProcess>,
}

/// The agent processes of a pane (of any kind: [`AgentKind::of_process`]).
pub fn agent_processes(listing: &PaneListing) -> impl Iterator<Item = &PaneProcess> {
    listing
        .processes
        .iter()
        .filter(|p| AgentKind::of_process(p).is_some())
}

/// What the core knows of a session that has no pane: its folder and its first line's time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unplaced {
    /// The agent.
    pub agent: AgentId,
    /// Its working directory (from a hook or its transcript).
    pub cwd: String,
    /// The transcript time of its earliest line.
    pub first_line_at: Timestamp,
}

/// A process that could run `u`: in its folder, started no later than its first line.
fn fits(u: &Unplaced, listing: &PaneListing, p: &PaneProcess) -> bool {
    let folder = p.cwd.as_deref().or(listing.current_path.as_deref());
    folder.is_some_and(|f| same_folder(f, &u.cwd))
        && p.started_at <= u.first_line_at.add_millis(START_TOLERANCE_MS)
}

fn same_folder(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// What [`place`] decided: the ties made, in order, and the sessions left with two or more
/// candidate panes (ambiguous, for the log).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// (agent, pane) ties.
    pub ties: Vec<(AgentId, String)>,
    /// Agents no pane was chosen for although several fit, with those panes.
    pub ambiguous: Vec<(AgentId, Vec<String>)>,
}

/// Ties sessions to panes: repeatedly, a session with exactly one free fitting process gets
/// that process's pane, and the process is no longer free. `taken` are the panes live agents
/// already hold (a hook's pane always wins). A pane with two Claude Code processes is never
/// chosen.
pub fn place(unplaced: &[Unplaced], panes: &[PaneListing], taken: &BTreeSet<String>) -> Placement {
    let mut free: BTreeMap<&str, (&PaneListing, &PaneProcess)> = BTreeMap::new();
    for listing in panes.iter().filter(|l| !taken.contains(&l.pane)) {
        let mut claude = agent_processes(listing);
        if let (Some(p), None) = (claude.next(), claude.next()) {
            free.insert(&listing.pane, (listing, p));
        }
    }
    let mut left: Vec<&Unplaced> = unplaced.iter().collect();
    let mut ties = Vec::new();
    loop {
        let found = left.iter().enumerate().find_map(|(i, u)| {
            let mut c = free.iter().filter(|(_, (l, p))| fits(u, l, p));
            match (c.next(), c.next()) {
                (Some((pane, _)), None) => Some((i, u.agent, pane.to_string())),
                _ => None,
            }
        });
        let Some((i, agent, pane)) = found else {
            break;
        };
        free.remove(pane.as_str());
        left.remove(i);
        ties.push((agent, pane));
    }
    let ambiguous = left
        .iter()
        .filter_map(|u| {
            let c: Vec<String> = free
                .iter()
                .filter(|(_, (l, p))| fits(u, l, p))
                .map(|(pane, _)| pane.to_string())
                .collect();
            (c.len() > 1).then_some((u.agent, c))
        })
        .collect();
    Placement { ties, ambiguous }
}

/// Why the reaper ended an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// Its pane is no longer listed by tmux.
    PaneClosed,
    /// The Claude Code process seen in its pane is gone (exited, killed, or the pane now
    /// runs another program).
    ProcessExited,
    /// Neither hooks, transcript nor a live pane said anything for longer than the limit.
    Silent,
    /// The user stopped it through Headspace.
    Stopped,
}

impl EndReason {
    /// The reason as the API and the log name it.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::PaneClosed => "pane_closed",
            EndReason::ProcessExited => "process_exited",
            EndReason::Silent => "silent",
            EndReason::Stopped => "stopped",
        }
    }
}

/// What the reaper remembers of an agent's pane between listings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaneWitness {
    /// The pane was seen in a listing: its absence later means it closed.
    pub listed: bool,
    /// The Claude Code process last seen in it.
    pub claude_pid: Option<u32>,
}

/// Reads a listing for an agent in `pane`: the reason to end it, if any, and what to remember
/// for the next listing. A pane never listed (a hook named it, tmux on another socket) is
/// never reaped by this rule, and a pane with no Claude Code process seen yet is not either.
pub fn witness(
    pane: &str,
    before: &PaneWitness,
    panes: &[PaneListing],
) -> (Option<EndReason>, PaneWitness) {
    let Some(listing) = panes.iter().find(|l| l.pane == pane) else {
        let reason = before.listed.then_some(EndReason::PaneClosed);
        return (reason, before.clone());
    };
    let pids: Vec<u32> = agent_processes(listing).map(|p| p.pid).collect();
    let reason = before
        .claude_pid
        .filter(|pid| !pids.contains(pid))
        .map(|_| EndReason::ProcessExited);
    let claude_pid = match pids.as_slice() {
        [one] => Some(*one),
        _ => None,
    };
    (
        reason,
        PaneWitness {
            listed: true,
            claude_pid,
        },
    )
}

/// Whether an agent in `pane` that no listing has shown with a process of its own ran in
/// the Claude Code process that left the pane at `left_at`: the pane shows none now, and
/// every word of the agent (`news`, the newest stamp its hooks and lines carried) came before
/// that listing. A session a late hook revealed after its process had exited (a `/clear` or
/// compaction just before the exit) ends here instead of showing idle for ever.
pub fn left_with_its_process(
    pane: &str,
    news: Timestamp,
    left_at: Option<Timestamp>,
    panes: &[PaneListing],
) -> bool {
    let Some(left_at) = left_at else {
        return false;
    };
    panes
        .iter()
        .find(|l| l.pane == pane)
        .is_some_and(|l| agent_processes(l).next().is_none() && news < left_at)
}

/// The agents' panes (`stored`) worth capturing this sweep, in their order: those the pane
/// listing shows. Without a listing (no tmux server answered) none: each capture would fail
/// too, and each costs the shell a process.
pub fn panes_to_capture(stored: Vec<String>, listing: Option<&[PaneListing]>) -> Vec<String> {
    let Some(listing) = listing else {
        return Vec::new();
    };
    let listed: BTreeSet<&str> = listing.iter().map(|l| l.pane.as_str()).collect();
    stored
        .into_iter()
        .filter(|p| listed.contains(p.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{
        panes_to_capture, place, witness, EndReason, PaneListing, PaneProcess, PaneWitness,
        Placement, Unplaced,
    };
    use crate::time::Timestamp;
    use std::collections::BTreeSet;

    fn claude(pid: u32, cwd: &str, started: i64) -> PaneProcess {
        PaneProcess {
            pid,
            command: "claude".into(),
            args: vec!["claude".into()],
            cwd: Some(cwd.into()),
            started_at: Timestamp(started),
        }
    }

    fn pane(id: &str, processes: Vec<PaneProcess>) -> PaneListing {
        PaneListing {
            pane: id.into(),
            current_path: None,
            processes,
        }
    }

    fn session(agent: u64, cwd: &str, at: i64) -> Unplaced {
        Unplaced {
            agent,
            cwd: cwd.into(),
            first_line_at: Timestamp(at),
        }
    }

    #[test]
    fn only_listed_panes_are_captured_and_none_without_a_listing() {
        let stored = vec!["%1".to_string(), "%2".to_string(), "%3".to_string()];
        let listing = vec![pane("%3", vec![]), pane("%1", vec![]), pane("%9", vec![])];
        assert_eq!(
            panes_to_capture(stored.clone(), Some(&listing)),
            vec!["%1".to_string(), "%3".to_string()]
        );
        assert!(panes_to_capture(stored, None).is_empty());
    }

    #[test]
    fn two_agents_in_one_folder_started_apart_are_told_apart() {
        let panes = [
            pane("%1", vec![claude(10, "/p", 1_000)]),
            pane("%2", vec![claude(20, "/p", 50_000)]),
        ];
        let sessions = [session(2, "/p", 60_000), session(1, "/p", 5_000)];
        let Placement { ties, ambiguous } = place(&sessions, &panes, &BTreeSet::new());
        assert_eq!(ties, vec![(1, "%1".to_string()), (2, "%2".to_string())]);
        assert!(ambiguous.is_empty());
    }

    #[test]
    fn two_processes_started_before_one_session_stay_unassigned() {
        let panes = [
            pane("%1", vec![claude(10, "/p", 1_000)]),
            pane("%2", vec![claude(20, "/p", 2_000)]),
        ];
        let Placement { ties, ambiguous } =
            place(&[session(1, "/p", 60_000)], &panes, &BTreeSet::new());
        assert!(ties.is_empty());
        assert_eq!(ambiguous, vec![(1, vec!["%1".into(), "%2".into()])]);
    }

    #[test]
    fn a_taken_pane_another_folder_or_a_later_process_never_fits() {
        let panes = [
            pane("%1", vec![claude(10, "/p", 1_000)]),
            pane("%2", vec![claude(20, "/q", 1_000)]),
            pane("%3", vec![claude(30, "/p", 90_000)]),
        ];
        let taken: BTreeSet<String> = ["%1".to_string()].into();
        let ties = place(&[session(1, "/p", 60_000)], &panes, &taken).ties;
        assert!(ties.is_empty());
        let ties = place(&[session(1, "/p/", 60_000)], &panes, &BTreeSet::new()).ties;
        assert_eq!(ties, vec![(1, "%1".to_string())]);
    }

    #[test]
    fn a_shell_or_a_node_program_is_not_claude_but_the_npm_build_is() {
        let mut shell = claude(1, "/p", 0);
        shell.command = "bash".into();
        shell.args = vec!["-bash".into()];
        assert!(!super::super::process::is_claude_process(&shell));
        let mut npm = shell.clone();
        npm.command = "node".into();
        npm.args = vec![
            "node".into(),
            "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js".into(),
        ];
        assert!(super::super::process::is_claude_process(&npm));
        let mut other = npm.clone();
        other.args = vec!["node".into(), "server.js".into(), "claude".into()];
        assert!(!super::super::process::is_claude_process(&other));
    }

    #[test]
    fn the_reaper_ends_on_a_closed_pane_or_a_gone_process_only_after_seeing_them() {
        let fresh = PaneWitness::default();
        assert_eq!(witness("%1", &fresh, &[]).0, None, "never listed: kept");
        let (r, seen) = witness("%1", &fresh, &[pane("%1", vec![claude(10, "/p", 0)])]);
        assert_eq!(r, None);
        assert_eq!(seen.claude_pid, Some(10));
        assert_eq!(witness("%1", &seen, &[]).0, Some(EndReason::PaneClosed));
        let mut vim = claude(11, "/p", 0);
        vim.command = "vim".into();
        vim.args = vec!["vim".into()];
        assert_eq!(
            witness("%1", &seen, &[pane("%1", vec![vim])]).0,
            Some(EndReason::ProcessExited),
            "the pane reused by another program"
        );
        let shell_only = PaneWitness {
            listed: true,
            claude_pid: None,
        };
        assert_eq!(witness("%1", &shell_only, &[pane("%1", vec![])]).0, None);
    }
}
