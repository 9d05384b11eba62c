//! What the server keeps in memory while the database is away, and what it lets go of.
//!
//! While the database does not answer (or answers slower than work comes), every input still
//! comes: hooks, transcript growth, pane captures. The writer holds what the core decided
//! (its writes and events) until the database takes them, and the core holds the inputs that
//! wait for an evicted agent's rows. Both would grow without bound over a long outage. Past
//! [`HoldLimits`] the server holds no more, and lets go of what it can have again:
//!
//! - hooks, whose turns may exist nowhere else (a prompt whose line a transcript lost), are
//!   appended to a spool file and fed in order once what is held is down to half the limits;
//! - transcript growth is not read: the files are read then, from where they were fed (and a
//!   restart reads them from the offsets the database stored), so every line becomes its
//!   turn once;
//! - pane captures and listings are dropped: the next ones say the same, newer.
//!
//! The shell measures and moves bytes; the rules are here.

use crate::io::{Command, Input, Write};

/// How much the server may hold while the database does not take writes, before it sheds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldLimits {
    /// Bytes of held inputs and uncommitted commands (an estimate: their texts and payloads).
    pub max_bytes: u64,
    /// Held inputs and uncommitted commands, in number.
    pub max_count: u64,
}

impl Default for HoldLimits {
    /// 128 MiB or 200,000 items, whichever comes first.
    fn default() -> HoldLimits {
        HoldLimits {
            max_bytes: 128 << 20,
            max_count: 200_000,
        }
    }
}

impl HoldLimits {
    /// Whether holding `count` items of `bytes` in all is past the limits.
    pub fn exceeded(&self, count: u64, bytes: u64) -> bool {
        count > self.max_count || bytes > self.max_bytes
    }
}

/// What happens to an input that comes while the server holds all it may.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhileShedding {
    /// Appended to the spool, fed once the server has caught up.
    Spool,
    /// Let go: a later input says the same or more (a pane is captured again, a listing
    /// comes every few seconds; transcript growth is read later from where it was fed).
    Drop,
    /// Fed as usual: it is small and rare, or it is what lets the server catch up (rows
    /// loaded back, a tick, the user's own requests).
    Feed,
}

/// What becomes of `input` while the server holds all it may.
pub fn while_shedding(input: &Input) -> WhileShedding {
    match input {
        Input::Hook { .. } => WhileShedding::Spool,
        Input::Pane { .. }
        | Input::Panes(_)
        | Input::Transcript { .. }
        | Input::TranscriptReset { .. } => WhileShedding::Drop,
        Input::Tick
        | Input::Sent { .. }
        | Input::Stopped { .. }
        | Input::Reconcile { .. }
        | Input::Restore(_)
        | Input::AgentsLoaded(_) => WhileShedding::Feed,
    }
}

/// About how many bytes `cmd` holds in memory: its texts and payloads, and a fixed part.
pub fn command_bytes(cmd: &Command) -> u64 {
    const FIXED: u64 = 128;
    let own = match cmd {
        Command::Store(Write::Turn(t)) => t.text.len() + t.question.as_ref().map_or(0, json_len),
        Command::Store(Write::Agent(a)) => a.permission.as_ref().map_or(0, json_len),
        Command::Store(_) => 0,
        Command::Publish(e) => e.data.as_str().len(),
        Command::ReadTranscript { path, .. } => path.len(),
        Command::LoadAgents { ids } => ids.len() * 8,
        Command::GapDetected { .. } | Command::Reply { .. } => 0,
    };
    FIXED + own as u64
}

/// About how many bytes `input` holds in memory.
pub fn input_bytes(input: &Input) -> u64 {
    const FIXED: u64 = 64;
    let own = match input {
        Input::Hook { body, .. } => body.len(),
        Input::Transcript { data, path, .. } => data.len() + path.len(),
        Input::Pane { text, .. } => text.len(),
        Input::Panes(p) => p.len() * 64,
        Input::Sent { text, .. } => text.as_deref().map_or(0, str::len),
        _ => 0,
    };
    FIXED + own as u64
}

fn json_len(v: &serde_json::Value) -> usize {
    // The value's text is a fair measure of what its tree holds.
    v.to_string().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_spooled_and_everything_else_is_had_again() {
        let hook = Input::Hook {
            agent: crate::kind::AgentKind::Claude,
            event: Some("Stop".into()),
            body: b"{}".to_vec(),
        };
        assert_eq!(while_shedding(&hook), WhileShedding::Spool);
        assert_eq!(while_shedding(&Input::Tick), WhileShedding::Feed);
        let grew = Input::Transcript {
            path: "projects/p/s.jsonl".into(),
            offset: 0,
            data: vec![b'x'; 1000],
            read: None,
        };
        assert_eq!(while_shedding(&grew), WhileShedding::Drop);
        assert!(input_bytes(&grew) >= 1000);
        let limits = HoldLimits {
            max_bytes: 1000,
            max_count: 10,
        };
        assert!(!limits.exceeded(10, 1000));
        assert!(limits.exceeded(11, 0) && limits.exceeded(0, 1001));
    }
}
