//! What the server benches share: the durable baselines, the closing table, database
//! plumbing, the server as a process and its SSE stream, and timing arithmetic.
#![allow(dead_code)]

pub mod agents;
pub mod baseline;
pub mod costs;
pub mod pg;
pub mod phases;
pub mod server;
pub mod sse;
pub mod sse_crowd;
pub mod table;
pub mod timing;
pub mod transcript;
