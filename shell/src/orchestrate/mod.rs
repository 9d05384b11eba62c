//! Orchestration: drives an agent through a specflow phase — design, analyze, implement (in
//! batches), verify, merge — by the seed's loop around the core's pure decisions.
//!
//! | module | concept |
//! |---|---|
//! | [`project_files`] | the state files: locked, atomic, backed up before any recovery |
//! | [`runner`] | the loop: reads, feeds the core's orchestration machine, carries out its effects |
//! | [`deps`] | [`Deps`](deps::Deps): everything the runner needs from the world |
//! | [`wake`] | wake-ups for the loop |
//! | [`steps`] | how a step's workflow runs: typed into an agent's pane, or a headless process |
//! | [`helper`] | the helper model as a command |
//! | [`live`] | the real dependencies |
//! | [`control`] | the user's commands: start, pause, resume, cancel, merge, confirm-gate, status, decide |
//! | [`command`] | those commands but `start` as one call, shared by the CLI and the HTTP routes |
//! | [`launch`] | `start` from the server: a detached runner process |
//! | [`revive`] | runs whose runner is gone: found, shown, restarted on resume or at the server's start-up |
//!
//! Every decision is the core's ([`headspace_core::orchestration`]); this module reads,
//! writes, spawns and waits.

pub mod command;
pub mod control;
pub mod deps;
pub mod helper;
pub mod launch;
pub mod live;
pub mod project_files;
pub mod revive;
pub mod runner;
pub mod steps;
pub mod wake;
