//! Running the core outside a server: the trace format `serve --record` writes and `replay`
//! reads, replaying inputs through the core and the in-memory store, and the known bugs the
//! simulation plants to show it catches each.

pub mod planted;
pub mod replay;
pub mod trace;
