//! What the server benches share: the durable baselines and the closing table.
#![allow(dead_code)]

pub mod baseline;
pub mod table;
pub mod transcript;
