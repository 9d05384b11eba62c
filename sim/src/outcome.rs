//! What a run found: broken invariants, the trace, and what the run went through, with the
//! multi-machine run's own figures.

use crate::check::Violation;
use std::time::Duration;

/// What a run found.
#[derive(Debug)]
pub struct Outcome {
    /// Broken invariants (empty: the run passed).
    pub violations: Vec<Violation>,
    /// The core's inputs as a `headspace replay` trace, all server incarnations.
    pub trace: Vec<u8>,
    /// Simulated time covered.
    pub sim_ms: u64,
    /// Wall time taken.
    pub wall: Duration,
    /// Turns stored at the end.
    pub turns: usize,
    /// Server crashes.
    pub crashes: u32,
    /// Store commits.
    pub commits: u64,
    /// The store at the end (agents, tasks, turns), as JSON.
    pub store: String,
    /// Agents that ended as `stopped` (the user stopped them through Headspace).
    pub stopped: usize,
    /// An orchestration's runner crashes, and how its run ended (`completed`, `failed`, …):
    /// the swarm counts how many seeds met each fault.
    pub runner_crashes: u32,
    /// The orchestration's last status and whether its budget stopped it.
    pub run_end: Option<(String, bool)>,
    /// In the multi-machine scenario: what the events table and the SSE clients went
    /// through (commits out of id order, rollbacks, notifications lost, connections).
    pub cluster: Option<ClusterStats>,
}

impl Outcome {
    /// True when nothing broke.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

/// What the shared events table and the SSE clients went through in one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterStats {
    /// Events sequenced (committed).
    pub sequenced: usize,
    /// Commits whose ids were below an id already visible.
    pub out_of_order: u64,
    /// Event ids taken by transactions that rolled back.
    pub rolled_back: u64,
    /// Notifications lost.
    pub notifications_lost: u64,
    /// Notifications delivered late.
    pub notifications_late: u64,
    /// Edge crashes (each restarted).
    pub edge_crashes: u32,
    /// Hub crashes (each restarted).
    pub hub_crashes: u32,
    /// Reads a hub tried while cut off from the database.
    pub hub_failed_reads: u64,
    /// Each SSE client's (events received, connections made).
    pub clients: Vec<(usize, u32)>,
    /// Prompts users sent through a hub to an edge's pane, and how many the hub answered 200.
    pub sends: (usize, usize),
    /// Questions users answered through a hub, and how many the hub answered 200.
    pub answers: (usize, usize),
    /// Turns users interrupted through a hub, and how many the hub answered 200.
    pub interrupts: (usize, usize),
    /// Pane commands written into the shared table, taken by an edge, and wake-ups lost.
    pub commands: (u64, u64, u64),
}

impl std::fmt::Display for ClusterStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clients: Vec<String> = self
            .clients
            .iter()
            .map(|(e, c)| format!("{e} events over {c} connections"))
            .collect();
        write!(
            f,
            "events: {} sequenced, {} commits out of id order, {} ids rolled back, notifications {} lost and {} late; {} edge and {} hub crashes, {} hub reads failed; clients: {}; sends through a hub: {} ({} answered 200), answers {} ({} answered 200), interrupts {} ({} answered 200), pane commands {} written, {} taken, {} wake-ups lost",
            self.sequenced,
            self.out_of_order,
            self.rolled_back,
            self.notifications_lost,
            self.notifications_late,
            self.edge_crashes,
            self.hub_crashes,
            self.hub_failed_reads,
            clients.join(", "),
            self.sends.0,
            self.sends.1,
            self.answers.0,
            self.answers.1,
            self.interrupts.0,
            self.interrupts.1,
            self.commands.0,
            self.commands.1,
            self.commands.2
        )
    }
}
