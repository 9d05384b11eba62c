//! `wait`'s rule: an agent counts as idle (finished its turn, waiting for input, or ended)
//! only after two consecutive idle readings a quarter second apart, so a transient (the
//! moment between a Stop and the next prompt's hook) never counts.
//!
//! Pure: the shell reads the agent's activity, tells [`WaitDebounce`] how long it has waited,
//! and sleeps when told to read again.

use crate::kind::AgentKind;
use crate::pane::PaneState;
use crate::view::activity::Activity;
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

/// An agent's activity as `wait` reads it: the stored activity, overruled by its pane when
/// the stored rows call it idle but the screen shows it working (a prompt typed or pasted
/// in the pane a moment ago, whose hook and transcript line have not arrived yet).
pub fn with_screen(activity: Activity, screen: Option<&str>) -> Activity {
    let working = screen.is_some_and(|s| AgentKind::Claude.read_screen(s).state == PaneState::Busy);
    if activity == Activity::Idle && working {
        Activity::Running
    } else {
        activity
    }
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

#[cfg(test)]
mod tests {
    use super::with_screen;
    use crate::view::activity::Activity;

    const RULE: &str = "────────────────────────────────────────";

    #[test]
    fn a_screen_that_shows_work_overrules_a_stored_idle_only() {
        let submitted = format!("> fix it\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        let spinner = format!("✻ Thinking… (esc to interrupt)\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        let idle = format!("⏺ Done.\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        assert_eq!(
            with_screen(Activity::Idle, Some(&submitted)),
            Activity::Running
        );
        assert_eq!(
            with_screen(Activity::Idle, Some(&spinner)),
            Activity::Running
        );
        assert_eq!(with_screen(Activity::Idle, Some(&idle)), Activity::Idle);
        assert_eq!(with_screen(Activity::Idle, None), Activity::Idle);
        assert_eq!(
            with_screen(Activity::Ended, Some(&spinner)),
            Activity::Ended
        );
        assert_eq!(
            with_screen(Activity::Waiting, Some(&spinner)),
            Activity::Waiting
        );
    }
}
