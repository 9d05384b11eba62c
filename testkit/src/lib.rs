//! Helpers for Headspace's tests, benchmarks and simulation, kept out of the product crates'
//! public API (`publish = false`):
//!
//! - [`synth`]: synthetic Claude Code sessions (transcript lines and hook bodies);
//! - [`synth_codex`]: synthetic Codex CLI sessions (rollout lines and hook bodies);
//! - [`wizard`]: a model of Claude Code's AskUserQuestion dialog;
//! - [`error_logs`]: fail a test on any ERROR log it did not declare;
//! - [`procstat`]: a process's CPU time and memory, from `/proc`;
//! - [`stand_in::stand_in_agent`]: the path of `headspace-agent`, the stand-in for Claude
//!   Code (this crate's binary, with the `stand-in` feature; `make demo` runs it too).
//!
//! The planted bugs stay in the core (`headspace_core::harness::planted`): a planted bug is a branch
//! inside the engine's own code paths, so only the core can plant it; what names them is
//! small, and the `planted-bugs` feature already keeps them out of the server's build.

pub mod error_logs;
pub mod procstat;
pub mod stand_in;
pub mod synth;
pub mod synth_codex;
pub mod synth_gemini;
pub mod wizard;
