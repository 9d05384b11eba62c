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

/// How long text in the input box of an idle screen holds `wait` back. Right after Enter
/// the CLI may not have taken the prompt in yet (the real Claude Code client showed the
/// prompt still in its box for a moment, with no hook or line yet: a `wait` called then
/// answered idle before the reply). Text left in the box unsent stops counting after this.
pub const TYPED_GRACE: Duration = Duration::from_secs(3);

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
    /// When the readings began showing text typed in the input box (reset when it is gone).
    typed_since: Option<Duration>,
    /// The conversation the last screen read showed (hashed): a screen that changed between
    /// two readings is not settled, whatever it shows.
    last_screen: Option<u128>,
}

/// True when a reading of `activity` counts towards idle: anything but running.
pub fn counts_as_idle(activity: Activity) -> bool {
    activity != Activity::Running
}

/// Whether the pane's screen shows a prompt on its way in: text typed in its input box (a
/// placeholder is none), or, with no box drawn, the prompt just echoed as its last line.
fn typed_in(kind: AgentKind, screen: Option<&str>) -> bool {
    screen.is_some_and(|s| {
        kind.read_screen(s)
            .input
            .is_some_and(|t| !t.trim().is_empty())
            || crate::pane::ends_with_prompt_echo(s)
    })
}

/// An agent's activity as `wait` reads it: the stored activity, overruled by its pane when
/// the stored rows call it idle but the screen shows it working (a prompt typed or pasted
/// in the pane a moment ago, whose hook and transcript line have not arrived yet).
pub fn with_screen(kind: AgentKind, activity: Activity, screen: Option<&str>) -> Activity {
    let working = screen.is_some_and(|s| kind.read_screen(s).state == PaneState::Busy);
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
            typed_since: None,
            last_screen: None,
        }
    }

    /// Takes a reading of the stored activity and, when it was read, the agent's pane: the
    /// activity as read ([`with_screen`]) and what to do. On top of
    /// [`WaitDebounce::reading`]: text in the input box holds an idle reading back for
    /// [`TYPED_GRACE`], and a screen whose conversation changed since the last reading
    /// restarts the count (right after Enter the real client shows an idle screen for a
    /// moment, then the prompt: the two readings must agree).
    pub fn read(
        &mut self,
        kind: AgentKind,
        stored: Activity,
        screen: Option<&str>,
        elapsed: Duration,
    ) -> (Activity, WaitVerdict) {
        let activity = with_screen(kind, stored, screen);
        let shown = screen
            .map(|s| crate::hook::matching::hash128(crate::pane::conversation_text(s).as_bytes()));
        let changed = shown.is_some() && self.last_screen.is_some() && shown != self.last_screen;
        if shown.is_some() {
            self.last_screen = shown;
        }
        if changed {
            self.idle_readings = 0;
        }
        let verdict = self.reading_typed(activity, typed_in(kind, screen), elapsed);
        (activity, verdict)
    }

    /// [`WaitDebounce::reading`] of a screen that shows text typed in its input box
    /// (`typed`, see [`typed_in`]): an idle reading with text in the box counts as running
    /// for [`TYPED_GRACE`] from when the text first showed, a prompt just submitted.
    fn reading_typed(&mut self, activity: Activity, typed: bool, elapsed: Duration) -> WaitVerdict {
        let since = if typed {
            *self.typed_since.get_or_insert(elapsed)
        } else {
            self.typed_since = None;
            elapsed
        };
        let held = typed && activity == Activity::Idle && elapsed < since + TYPED_GRACE;
        self.reading(if held { Activity::Running } else { activity }, elapsed)
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
    use super::{with_screen, AgentKind, WaitDebounce, WaitVerdict, TYPED_GRACE};
    use std::time::Duration;

    #[test]
    fn the_effort_note_at_the_right_edge_hides_no_spinner() {
        const RULE: &str = "──────────────────────────────────────────────────";
        let note = format!("{}● high", " ".repeat(100));
        let working = format!("❯ hello\n✻ Philosophizing…\n\n{note}\n{RULE}\n❯\u{a0}\n{RULE}\n");
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Idle, Some(&working)),
            Activity::Running
        );
        let done = format!("❯ hello\n\n⏺ Hi.\n\n{note}\n{RULE}\n❯\u{a0}\n{RULE}\n");
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Idle, Some(&done)),
            Activity::Idle
        );
    }

    #[test]
    fn a_screen_that_changed_between_two_readings_is_not_settled() {
        const RULE: &str = "────────────────────────────────────────";
        let ms = Duration::from_millis;
        let empty = format!("{RULE}\n❯\u{a0}\n{RULE}\n");
        // The prompt echoed with a hook's failure under it, and no spinner yet.
        let echoed =
            format!("❯ hello\n  ⎿  UserPromptSubmit hook failed\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        let mut w = WaitDebounce::new(Duration::from_secs(60));
        assert_ne!(
            w.read(AgentKind::Claude, Activity::Idle, Some(&empty), ms(0))
                .1,
            WaitVerdict::Idle
        );
        assert_ne!(
            w.read(AgentKind::Claude, Activity::Idle, Some(&echoed), ms(250))
                .1,
            WaitVerdict::Idle
        );
        // The same idle screen twice: settled.
        let mut w = WaitDebounce::new(Duration::from_secs(60));
        assert_ne!(
            w.read(AgentKind::Claude, Activity::Idle, Some(&empty), ms(0))
                .1,
            WaitVerdict::Idle
        );
        assert_eq!(
            w.read(AgentKind::Claude, Activity::Idle, Some(&empty), ms(250))
                .1,
            WaitVerdict::Idle
        );
    }

    #[test]
    fn text_in_the_box_holds_wait_back_for_a_while_only() {
        let ms = Duration::from_millis;
        let mut w = WaitDebounce::new(Duration::from_secs(60));
        // Right after Enter: the prompt is still in the box, nothing else says it runs.
        for t in [0, 250, 500, 750] {
            assert_ne!(
                w.reading_typed(Activity::Idle, true, ms(t)),
                WaitVerdict::Idle
            );
        }
        // Taken in: the box is empty and the agent runs, then finishes.
        assert_ne!(
            w.reading_typed(Activity::Running, false, ms(1000)),
            WaitVerdict::Idle
        );
        assert_ne!(
            w.reading_typed(Activity::Idle, false, ms(1250)),
            WaitVerdict::Idle
        );
        assert_eq!(
            w.reading_typed(Activity::Idle, false, ms(1500)),
            WaitVerdict::Idle
        );
        // Text left in the box unsent: idle once the grace has passed.
        let mut w = WaitDebounce::new(Duration::from_secs(60));
        let mut t = 0;
        let verdict = loop {
            let v = w.reading_typed(Activity::Idle, true, ms(t));
            if v == WaitVerdict::Idle || t > 10_000 {
                break (v, t);
            }
            t += 250;
        };
        assert_eq!(verdict.0, WaitVerdict::Idle);
        assert!(ms(verdict.1) >= TYPED_GRACE && ms(verdict.1) <= TYPED_GRACE + ms(500));
    }
    use crate::view::activity::Activity;

    const RULE: &str = "────────────────────────────────────────";

    #[test]
    fn a_screen_that_shows_work_overrules_a_stored_idle_only() {
        let submitted = format!("> fix it\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        let spinner = format!("✻ Thinking… (esc to interrupt)\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        let idle = format!("⏺ Done.\n\n{RULE}\n❯\u{a0}\n{RULE}\n");
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Idle, Some(&submitted)),
            Activity::Running
        );
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Idle, Some(&spinner)),
            Activity::Running
        );
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Idle, Some(&idle)),
            Activity::Idle
        );
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Idle, None),
            Activity::Idle
        );
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Ended, Some(&spinner)),
            Activity::Ended
        );
        assert_eq!(
            with_screen(AgentKind::Claude, Activity::Waiting, Some(&spinner)),
            Activity::Waiting
        );
    }
}
