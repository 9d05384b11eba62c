//! `wait`'s rule: an agent counts as idle (finished its turn, waiting for input, or ended)
//! only after two consecutive idle readings a quarter second apart, so a transient (the
//! moment between a Stop and the next prompt's hook) never counts.
//!
//! Pure: the shell reads the agent's activity, tells [`WaitDebounce`] how long it has waited,
//! and sleeps when told to read again.

use crate::activity::Activity;
use std::time::Duration;

/// How long the shell sleeps between two readings.
pub const READ_INTERVAL: Duration = Duration::from_millis(250);

/// Consecutive idle readings that confirm an idle agent.
pub const IDLE_READINGS: u32 = 2;

/// What to do after a reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitVerdict {
    /// The agent is idle, confirmed: answer `idle`.
    Idle,
    /// Not idle yet and the time is up: answer `timeout`.
    TimedOut,
    /// Not confirmed yet: sleep this long, then read again.
    ReadAgainAfter(Duration),
}

/// Counts a `wait`'s readings of one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitDebounce {
    timeout: Duration,
    idle_readings: u32,
}

/// True when a reading of `activity` counts towards idle: anything but running.
pub fn counts_as_idle(activity: Activity) -> bool {
    activity != Activity::Running
}

impl WaitDebounce {
    /// A wait that gives up once `timeout` has passed.
    pub fn new(timeout: Duration) -> WaitDebounce {
        WaitDebounce {
            timeout,
            idle_readings: 0,
        }
    }

    /// Takes a reading of the agent's activity, made `elapsed` after the wait started. A
    /// running reading starts the count again; an idle one confirmed wins over a timeout.
    pub fn reading(&mut self, activity: Activity, elapsed: Duration) -> WaitVerdict {
        self.idle_readings = if counts_as_idle(activity) {
            self.idle_readings + 1
        } else {
            0
        };
        if self.idle_readings >= IDLE_READINGS {
            WaitVerdict::Idle
        } else if elapsed >= self.timeout {
            WaitVerdict::TimedOut
        } else {
            WaitVerdict::ReadAgainAfter(READ_INTERVAL)
        }
    }
}
