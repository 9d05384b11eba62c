//! What each process of a bench costs while it runs: CPU time of the servers, of
//! PostgreSQL (the postmaster and its backends) and of the bench itself, read from `/proc`
//! before and after a phase, and turned into cores used.

use super::server::Server;
use headspace_testkit::procstat::{cpu_ticks, machine_ticks, proc_kb, tree_ticks};
use std::path::Path;
use std::time::Instant;

/// Clock ticks per second.
pub fn hz() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// CPU time so far of each group of processes, in clock ticks.
#[derive(Clone)]
pub struct Ticks {
    /// When they were read.
    pub at: Instant,
    edges: u64,
    hubs: u64,
    postgres: u64,
    bench: u64,
    machine: (u64, u64),
}

/// Reads the CPU time of `edges` (or `--role all` servers), `hubs`, PostgreSQL's tree under
/// `postmaster`, this process and the machine.
pub fn ticks(edges: &[&Server], hubs: &[&Server], postmaster: Option<u32>) -> Ticks {
    Ticks {
        at: Instant::now(),
        // With their children: the `tmux` commands the pane watchdog runs count as theirs.
        edges: edges.iter().map(|s| tree_ticks(s.pid())).sum(),
        hubs: hubs.iter().map(|s| tree_ticks(s.pid())).sum(),
        postgres: postmaster.map_or(0, tree_ticks),
        bench: cpu_ticks(std::process::id()),
        machine: machine_ticks(),
    }
}

/// Cores used by each group between two readings.
pub struct Cores {
    /// The edges (or the `--role all` server).
    pub edges: f64,
    /// The hubs.
    pub hubs: f64,
    /// PostgreSQL.
    pub postgres: f64,
    /// The bench itself (the load generator).
    pub bench: f64,
    /// The whole machine (other sessions' work included).
    pub machine: f64,
    /// Seconds of PostgreSQL CPU.
    pub postgres_secs: f64,
    /// Seconds of edge (or `--role all` server) CPU.
    pub edges_secs: f64,
}

/// Cores used by each group between readings `a` and `b`.
pub fn cores(a: &Ticks, b: &Ticks) -> Cores {
    let wall = b.at.duration_since(a.at).as_secs_f64().max(1e-3);
    let per = |x: u64, y: u64| (y - x) as f64 / hz() / wall;
    let (busy, total) = (
        b.machine.0 - a.machine.0,
        (b.machine.1 - a.machine.1).max(1),
    );
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    Cores {
        edges: per(a.edges, b.edges),
        hubs: per(a.hubs, b.hubs),
        postgres: per(a.postgres, b.postgres),
        bench: per(a.bench, b.bench),
        machine: busy as f64 / total as f64 * ncpu,
        postgres_secs: (b.postgres - a.postgres) as f64 / hz(),
        edges_secs: (b.edges - a.edges) as f64 / hz(),
    }
}

impl Cores {
    /// The cores of every group, for a progress line.
    pub fn line(&self) -> String {
        format!(
            "CPU in cores: edges {:.2}, hubs {:.2}, PostgreSQL {:.2}, load generator {:.2}; machine {:.2} of {} (other processes {:.2})",
            self.edges,
            self.hubs,
            self.postgres,
            self.bench,
            self.machine,
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            (self.machine - self.edges - self.hubs - self.postgres - self.bench).max(0.0)
        )
    }
}

/// The postmaster's pid, from the data directory `scripts/with-test-postgres.sh` made.
pub fn postmaster() -> Option<u32> {
    let dir = std::env::var("PG_TEST_DIR").ok()?;
    let pid = std::fs::read_to_string(Path::new(&dir).join("data/postmaster.pid")).ok()?;
    pid.lines().next()?.trim().parse().ok()
}

/// A `/proc/PID/status` memory line (`VmRSS`, `VmHWM`) in MB.
pub fn mb(pid: u32, field: &str) -> f64 {
    proc_kb(pid, field) as f64 / 1024.0
}
