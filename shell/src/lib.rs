//! The `headspace` server and tools: the tokio shell around `headspace-core`.
//!
//! Every module turns the world into core inputs or carries out core commands; decisions
//! live in the core.

pub mod client;
pub mod connections;
pub mod driver;
pub mod embedded_pg;
pub mod forward;
pub mod fsutil;
pub mod hooks_install;
pub mod http;
pub mod metrics;
pub mod migrate;
pub mod orchestrate;
pub mod peer;
pub mod pgstore;
pub mod record;
pub mod serve;
pub mod sse;
pub mod store;
pub mod tmux;
pub mod watchdog;
pub mod watcher;
pub mod world;
