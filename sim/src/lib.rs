//! # headspace-sim — deterministic simulation of Headspace (planned)
//!
//! This crate will run the real core and shell inside turmoil against simulated Claude Code
//! sessions and injected faults, checking the invariants of DESIGN.md at every step. Today the
//! core's property tests (`core/tests/properties.rs`) cover the core alone; the simulated
//! sessions it will use already live in `headspace_core::synth`.

pub use headspace_core::synth;
