//! What a user away from the page is told: an agent starts waiting on them, or finishes a
//! task. The shell runs `--notify-command` with what [`Notices::observe`] returns; the
//! decision (which changes count, which are noise, how often) is made here, without a clock.
//! Whether an agent is a sub-agent's and whether a finish is news are the card's answers
//! (`crate::view::shown`). The server publishes each notice as a `notice` event on its event
//! stream too, and the dashboard's browser notifications show exactly those: the page decides
//! nothing about them.

use crate::model::AgentId;
use crate::task::state::TaskState;
use crate::time::Timestamp;
use crate::view::activity::Activity;
use crate::view::AgentView;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};

/// The same news about one agent is told at most once in this many milliseconds.
pub const AGENT_QUIET_MS: i64 = 30_000;
/// At most this many notices in any minute, all agents together.
pub const MAX_PER_MINUTE: usize = 6;
/// A wait whose question is not known yet (a permission's hook often comes a moment before
/// its dialog is read from the pane) is told once the question is known, or after this many
/// milliseconds without it, so that the notice can say what is asked.
pub const QUESTION_WAIT_MS: i64 = 2_000;

/// What an agent is doing, as far as notices care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Working,
    NeedsYou,
    Finished,
    Quiet,
}

/// The kind of a notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoticeKind {
    /// The agent waits on a question or a permission.
    NeedsYou,
    /// The agent finished its task.
    Finished,
}

impl NoticeKind {
    /// The name in the notice's JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::NeedsYou => "needs_you",
            NoticeKind::Finished => "finished",
        }
    }
}

/// What was told, and when: the memory the rules need.
#[derive(Debug, Default)]
pub struct Notices {
    phases: BTreeMap<AgentId, Phase>,
    told: BTreeMap<(AgentId, NoticeKind), Timestamp>,
    recent: VecDeque<Timestamp>,
    /// Waits held for their question: since when, and the card as last seen.
    held: BTreeMap<AgentId, (Timestamp, AgentView)>,
}

fn phase(view: &AgentView) -> Phase {
    match (view.activity(), view.state()) {
        (Activity::Waiting, _) => Phase::NeedsYou,
        (Activity::Running, _) => Phase::Working,
        (Activity::Idle, TaskState::Complete) => Phase::Finished,
        _ => Phase::Quiet,
    }
}

impl Notices {
    /// Nothing told yet.
    pub fn new() -> Notices {
        Notices::default()
    }

    /// Looks at an agent's card after an event about it, at `now`; returns the notice to
    /// send, if any: when it starts waiting (also the first time it is seen, waiting), or
    /// when a task it was seen working on finishes. Not told: sub-agents, ended agents, a
    /// slash command's end (`/clear`), the same news about an agent again within
    /// [`AGENT_QUIET_MS`], and anything past [`MAX_PER_MINUTE`].
    ///
    /// A wait whose question is not known yet is held (see [`QUESTION_WAIT_MS`]): it is told
    /// by the `observe` that first sees its question, or by [`Notices::due`].
    pub fn observe(&mut self, view: &AgentView, now: Timestamp) -> Option<Value> {
        let id = view.agent.id;
        let now_phase = phase(view);
        let before = self.phases.insert(id, now_phase);
        if self.held.contains_key(&id) {
            if now_phase != Phase::NeedsYou {
                self.held.remove(&id);
            } else if view.open_question().is_some() {
                self.held.remove(&id);
                return self.tell(view, NoticeKind::NeedsYou, now);
            } else {
                self.held.insert(id, (self.held[&id].0, view.clone()));
                return None;
            }
        }
        if before == Some(now_phase) || view.sub_agent() {
            return None;
        }
        let kind = match now_phase {
            Phase::NeedsYou if view.open_question().is_none() => {
                self.held.insert(id, (now, view.clone()));
                return None;
            }
            Phase::NeedsYou => NoticeKind::NeedsYou,
            Phase::Finished
                if matches!(before, Some(Phase::Working | Phase::NeedsYou))
                    && view.notable_finish() =>
            {
                NoticeKind::Finished
            }
            _ => return None,
        };
        self.tell(view, kind, now)
    }

    /// The waits held for their question whose time is up at `now`, told without it (in
    /// agent order), within the pacing.
    pub fn due(&mut self, now: Timestamp) -> Vec<Value> {
        let up: Vec<AgentId> = self
            .held
            .iter()
            .filter(|(_, (since, _))| now >= since.add_millis(QUESTION_WAIT_MS))
            .map(|(id, _)| *id)
            .collect();
        up.into_iter()
            .filter_map(|id| {
                let (_, view) = self.held.remove(&id)?;
                self.tell(&view, NoticeKind::NeedsYou, now)
            })
            .collect()
    }

    /// When [`Notices::due`] has something to tell, if anything is held.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.held
            .values()
            .map(|(since, _)| since.add_millis(QUESTION_WAIT_MS))
            .min()
    }

    /// Tells `kind` about the agent unless the same news was told of it within
    /// [`AGENT_QUIET_MS`] or [`MAX_PER_MINUTE`] were told in the last minute.
    fn tell(&mut self, view: &AgentView, kind: NoticeKind, now: Timestamp) -> Option<Value> {
        let id = view.agent.id;
        if self
            .told
            .get(&(id, kind))
            .is_some_and(|at| now < at.add_millis(AGENT_QUIET_MS))
        {
            return None;
        }
        while self
            .recent
            .front()
            .is_some_and(|at| *at <= now.add_millis(-60_000))
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= MAX_PER_MINUTE {
            return None;
        }
        self.recent.push_back(now);
        self.told.insert((id, kind), now);
        Some(notice_json(view, kind, now))
    }
}

/// The notice as the command reads it on stdin.
fn notice_json(view: &AgentView, kind: NoticeKind, now: Timestamp) -> Value {
    let a = &view.agent;
    // The name the user gave it tells agents of one project apart; else the project.
    let project = view
        .name
        .clone()
        .or_else(|| a.project.clone())
        .unwrap_or_else(|| "agent".into());
    let question = view.open_question();
    // What the question offers to pick (a push's notification offers them as actions).
    // Only a question one option answers (`{"option": N}`): not one of several parts.
    let several = question.as_ref().is_some_and(|q| {
        q.question
            .as_ref()
            .and_then(|v| v.get("questions"))
            .and_then(Value::as_array)
            .is_some_and(|qs| qs.len() > 1)
    });
    let options = match (kind, &question) {
        (NoticeKind::NeedsYou, Some(q)) if !several => q.options(),
        _ => Vec::new(),
    };
    let tool = question
        .as_ref()
        .and_then(|q| q.question.as_ref()?.get("tool")?.get("summary")?.as_str())
        .map(str::to_string);
    let (title, body) = match kind {
        NoticeKind::NeedsYou => (
            format!("{project} needs you"),
            match (tool, question) {
                (Some(t), Some(q)) => format!("{} {t}", q.text),
                (None, Some(q)) => q.text,
                _ => "It waits on a permission.".to_string(),
            },
        ),
        NoticeKind::Finished => (
            format!("{project} is done"),
            view.last_turn
                .as_ref()
                .map(|t| crate::task::question::preview(&t.text).0)
                .unwrap_or_default(),
        ),
    };
    json!({
        "event": kind.as_str(),
        "agent_id": a.id,
        "session_id": a.session_id,
        "project": a.project,
        "cwd": a.cwd,
        "tmux_pane": a.tmux_pane,
        "title": title,
        "body": body,
        "options": options,
        "at": now,
    })
}
