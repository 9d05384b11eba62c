//! The `headspace` server and tools: the tokio shell around `headspace-core`.
//!
//! Every module turns the world into core inputs or carries out core commands; decisions
//! live in the core.
//!
//! - [`server`] — `headspace serve`: HTTP, SSE, the core's driver, the store, the transcript
//!   watcher, the pane watchdog, the embedded database.
//! - [`hooks`] — installing Headspace's hooks into Claude Code's settings, and the hook
//!   command that forwards a payload to the server.
//! - [`orchestrate`] — the orchestration runner around the core's orchestration machine.
//! - [`client`], [`tmux`], [`fsutil`], [`config`] — what the server and the CLI share.

pub mod client;
pub mod clock;
pub mod config;
pub mod fsutil;
pub mod hooks;
pub mod launch;
pub mod orchestrate;
pub mod private_files;
pub mod procs;
pub mod server;
pub mod tmux;
