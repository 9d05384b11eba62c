//! `headspace replay TRACE`: a recorded trace through the core and an in-memory store.

use super::output::outln;
use std::path::PathBuf;
use std::process::ExitCode;

pub(crate) fn replay(path: &PathBuf) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("headspace replay: cannot read {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    match headspace_core::harness::replay::replay_trace(&text) {
        Ok(out) => {
            outln!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("headspace replay: {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
