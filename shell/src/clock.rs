//! The clock adapter: the one place the shell and the simulation read the time.
//!
//! `make lint` bans every other reader of the clock in the shell, the simulation and the
//! core (clippy's `disallowed_methods`, configured in `lint/clock/clippy.toml`): a rule that
//! depends on the time gets it as an input — the server's decisions from
//! [`crate::server::world::Clock`], which the simulation replaces — and the few timers that
//! pace the shell's own loops read tokio's monotonic clock here, which the simulation pauses
//! and steps with its run.

use headspace_core::Timestamp;
use std::time::Duration;

/// The wall clock: the operating system's time in epoch milliseconds.
#[allow(clippy::disallowed_methods)]
pub fn wall() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp(d.as_millis() as i64)
}

/// Now on the monotonic clock: tokio's, which a simulated host pauses and steps with its run
/// (outside a runtime, and in a real one, the operating system's).
#[allow(clippy::disallowed_methods)]
pub fn instant() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// How long since `start` on the monotonic clock ([`instant`]); zero if `start` is later.
pub fn since(start: tokio::time::Instant) -> Duration {
    instant().saturating_duration_since(start)
}
