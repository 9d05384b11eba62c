//! # headspace-sim — deterministic simulation of Headspace (planned)
//!
//! This crate will run the real core and the real shell inside turmoil against simulated
//! Claude Code sessions and injected faults, checking the invariants of DESIGN.md (S1–S5 at
//! every step, L1–L3 at the end). What exists to build on:
//!
//! - `headspace_core::synth`: simulated sessions (prompts, streamed text, tools,
//!   AskUserQuestion, answers, turn_duration, interrupts) and hook bodies with stamps;
//! - `headspace_core::replay::Replayer`: the core with a store that survives restarts and
//!   simulated files; `MemStore::violations()` records S1 breaches;
//! - `core/tests/properties.rs`: the fault schedule (drop, duplicate, delay, reorder, split
//!   appends, restarts) as proptest strategies.
//!
//! The shell's next step for this crate: put its adapters behind small traits (the store
//! `PgStore::apply/snapshot`, the transcript `Reader`, the pane `capture`, the clock `now`)
//! so turmoil can swap them.

pub use headspace_core::synth;
