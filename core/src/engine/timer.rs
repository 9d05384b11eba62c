//! The core's timers: when it wants the next [`crate::Input::Tick`], and why.

use super::Core;
use crate::model::AgentId;
use crate::time::Timestamp;

/// Why the core wants a tick: a closed list, so the shell can log and count what woke it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimerReason {
    /// New pane output becomes a gap ([`super::Config::gap_threshold_ms`] after it appeared)
    /// unless a turn explains it first.
    PaneGap,
    /// Text typed by `send` stops counting as running when no prompt followed it
    /// ([`super::Config::send_timeout_ms`]).
    SendTimeout,
    /// A silent or ended agent may leave memory ([`super::Config::evict_after_ms`]).
    Evict,
}

impl TimerReason {
    /// The name used in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            TimerReason::PaneGap => "pane_gap",
            TimerReason::SendTimeout => "send_timeout",
            TimerReason::Evict => "evict",
        }
    }
}

/// The earliest moment the core wants a tick, for which agent, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    /// When.
    pub at: Timestamp,
    /// The agent it concerns.
    pub agent: AgentId,
    /// Why.
    pub reason: TimerReason,
}

impl Core {
    /// The core's next timer, if any: the earliest of every agent's pane gap, send timeout
    /// and eviction (ties: the reason listed first, then the lowest agent id). A tick
    /// before it changes nothing; a tick at or after it runs every timer that is due.
    pub fn next_timer(&self) -> Option<Timer> {
        let mut best: Option<Timer> = None;
        for (&agent, a) in &self.agents {
            let due = [
                a.pane_change_at.map(|t| {
                    (
                        t.add_millis(self.config.gap_threshold_ms),
                        TimerReason::PaneGap,
                    )
                }),
                a.row.sent_at.map(|t| {
                    (
                        t.add_millis(self.config.send_timeout_ms),
                        TimerReason::SendTimeout,
                    )
                }),
                self.evictable_at(a).map(|t| (t, TimerReason::Evict)),
            ];
            for (at, reason) in due.into_iter().flatten() {
                let candidate = Timer { at, agent, reason };
                let earlier = best.is_none_or(|b| (at, reason, agent) < (b.at, b.reason, b.agent));
                if earlier {
                    best = Some(candidate);
                }
            }
        }
        best
    }

    /// When the core wants an [`crate::Input::Tick`] next, if ever: [`Core::next_timer`]'s
    /// time.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.next_timer().map(|t| t.at)
    }
}
