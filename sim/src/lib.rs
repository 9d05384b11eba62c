//! # headspace-sim — the real Headspace server under deterministic simulation
//!
//! The real core and the real shell (`headspace::server::start`, its driver, writer, HTTP
//! routes, transcript sweep and pane watchdog) run on a turmoil host. Their adapters — store,
//! transcript files, panes, clock — are the simulated ones of [`world`], behind the shell's own
//! traits. Simulated Claude Code agents ([`session`]) write transcripts and post hooks over
//! turmoil's network. The harness ([`run`]) crashes and restarts the server, the store fails
//! commits and goes down, panes go stale; [`check`] holds the invariants of DESIGN.md.
//!
//! A run is a function of its plan and seed: the same seed gives the same trace, byte for byte,
//! in any process (tokio's own randomness seeded by turmoil: [`seeded_runtimes`]). In one
//! process, a second run of a scenario whose hosts crash with many tasks (`cluster`) can
//! differ: tokio orders a crashed runtime's task shutdown by process-wide task ids.

/// Whether this build seeds tokio's randomness from the run (tokio built with
/// `--cfg tokio_unstable`, which `.cargo/config.toml` sets). Without it a run's `select!`
/// branches and `watch` wake-ups follow the process's hash keys, and a seed can differ run
/// to run; `headspace-sim` warns and the determinism tests fail.
pub fn seeded_runtimes() -> bool {
    cfg!(tokio_unstable)
}

pub mod check;
pub mod cluster;
pub mod faults;
pub mod host;
pub mod net;
pub mod orchestra;
pub mod outcome;
pub mod plan;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod session;
pub mod sse_client;
pub mod task_ids;
pub mod world;

pub use headspace_core::harness::planted::Bug;
