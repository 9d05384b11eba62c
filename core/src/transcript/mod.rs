//! Transcript lines: bytes at offsets framed into lines, each line read once into what it
//! means (a turn, a step, usage, an activity signal, or nothing), over-long and malformed
//! lines still made into turns, and the audit that proves every line has its one turn.
//!
//! What is specific to Claude Code's line format lives here and is reached through
//! [`crate::kind`]; the framing and the mending are the same for every agent kind.

pub mod audit;
pub mod codex;
pub(crate) mod commands;
pub mod entry;
pub mod framing;
pub mod gemini;
pub mod line_read;
mod line_shape;
pub(crate) mod mend;
pub(crate) mod step_line;
pub(crate) mod step_truncated;
pub(crate) mod truncated;
