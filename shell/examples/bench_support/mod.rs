//! What the server benches share: the durable baselines, the closing table, database
//! plumbing and timing arithmetic.
#![allow(dead_code)]

pub mod baseline;
pub mod pg;
pub mod table;
pub mod timing;
pub mod transcript;
