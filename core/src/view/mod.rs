//! One view of an agent: what a store returns for it ([`AgentView`]), the card the API and
//! the dashboard show ([`AgentView::card`]), and which agent a reference names
//! ([`resolve_reference`]).
//!
//! Every store answers with the same [`AgentView`]: PostgreSQL computes its few facts in SQL
//! (so a card never loads an agent's whole history), the in-memory store with
//! [`AgentView::from_rows`]; what the card shows from those facts is decided here, once.

pub mod activity;
pub(crate) mod event_data;
pub mod notice;
pub mod push;
pub(crate) mod shown;

use crate::model::{AgentId, AgentRow, TaskRow, TurnRow};
use crate::task::intent::{Actor, Intent};
use crate::task::question::{open_question, preview, OpenQuestion, PREVIEW_CHARS};
use crate::task::state::TaskState;
use crate::time::Timestamp;
use crate::view::activity::{agent_activity, agent_state, current_task, Activity};
use crate::view::shown::{is_sub_agent, notable_finish, Shown};
use serde_json::{json, Value};

/// An agent as a store returns it: its row, its current task, and the facts its card needs.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentView {
    /// The agent.
    pub agent: AgentRow,
    /// Its current task (see [`current_task`]).
    pub task: Option<TaskRow>,
    /// All its turns.
    pub turn_count: i64,
    /// The current task's command (its first user turn), clipped by [`clip`].
    pub command: Option<String>,
    /// Its latest turn.
    pub last_turn: Option<LastTurn>,
    /// The open question (text clipped by [`clip`], and structure) while its task awaits
    /// input.
    pub question: Option<(String, Option<Value>)>,
    /// The machine it runs on, as its row names it (issue 21); empty where one process is
    /// one machine (the in-memory store, rows from before machines), which the server shows
    /// as its own name.
    pub machine: String,
    /// The name the user gave it ([`check_name`]), kept by the server; `None`: none given.
    pub name: Option<String>,
    /// The worktree Headspace made for it, when it started the agent in one.
    pub worktree: Option<String>,
    /// The branch Headspace started it on (else the branch its transcript names).
    pub launch_branch: Option<String>,
}

/// The longest name an agent may be given, in characters.
pub const NAME_CHARS: usize = 80;

/// A name for an agent as the user typed it: trimmed; empty clears it (`None`). Refused: more
/// than [`NAME_CHARS`] characters, or control characters (a name is shown in terminals).
pub fn check_name(name: &str) -> Result<Option<String>, String> {
    let name = name.trim();
    if name.chars().count() > NAME_CHARS {
        return Err(format!("a name has at most {NAME_CHARS} characters"));
    }
    if name.chars().any(char::is_control) {
        return Err("a name may not hold control characters (tabs, newlines, escapes)".into());
    }
    Ok((!name.is_empty()).then(|| name.to_string()))
}

/// An agent's latest turn, as its card shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct LastTurn {
    /// Who spoke.
    pub actor: Actor,
    /// What it means.
    pub intent: Intent,
    /// Its text, clipped by [`clip`].
    pub text: String,
    /// Its time.
    pub timestamp: Timestamp,
}

/// The characters of a text a store needs to return for a card: one more than a card shows,
/// so the card can tell that the text goes on.
pub const CLIPPED_CHARS: usize = PREVIEW_CHARS + 1;

/// The first [`CLIPPED_CHARS`] characters of `text` (SQL's `left(text, CLIPPED_CHARS)`).
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(CLIPPED_CHARS) {
        Some((at, _)) => text[..at].to_string(),
        None => text.to_string(),
    }
}

impl AgentView {
    /// The view of `agent` from rows of the store: `tasks` and `turns` may hold other
    /// agents' rows (the current task's turns are found by its id alone). The rules PostgreSQL's card query keeps too: the current task is
    /// the latest started (ties by id); the command is that task's first user turn and the
    /// last turn the agent's latest, both in (timestamp, id) order; the question is that
    /// task's latest question turn, only while the task awaits input.
    pub fn from_rows<'a>(
        agent: &AgentRow,
        tasks: impl IntoIterator<Item = &'a TaskRow>,
        turns: impl IntoIterator<Item = &'a TurnRow>,
    ) -> AgentView {
        let task = current_task(tasks.into_iter().filter(|t| t.agent_id == agent.id)).cloned();
        let mut turns: Vec<&TurnRow> = turns.into_iter().collect();
        turns.sort_by_key(|t| (t.timestamp, t.id));
        // The task's turns are found by task id alone, as the SQL does.
        let of_task = |t: &&&TurnRow| task.as_ref().is_some_and(|task| t.task_id == task.id);
        let command = turns
            .iter()
            .filter(of_task)
            .find(|t| t.actor == Actor::User)
            .map(|t| clip(&t.text));
        let question = task
            .as_ref()
            .filter(|task| task.state == TaskState::AwaitingInput)
            .and_then(|_| {
                turns
                    .iter()
                    .filter(of_task)
                    .rfind(|t| t.intent == Intent::Question)
            })
            .map(|t| (clip(&t.text), t.question.clone()));
        turns.retain(|t| t.agent_id == agent.id);
        let last_turn = turns.last().map(|t| LastTurn {
            actor: t.actor,
            intent: t.intent,
            text: clip(&t.text),
            timestamp: t.timestamp,
        });
        AgentView {
            agent: agent.clone(),
            task,
            turn_count: turns.len() as i64,
            command,
            last_turn,
            question,
            machine: String::new(),
            name: None,
            worktree: None,
            launch_branch: None,
        }
    }

    /// The state shown: the current task's, or idle without one.
    pub fn state(&self) -> TaskState {
        agent_state(self.task.as_ref())
    }

    /// The activity shown.
    pub fn activity(&self) -> Activity {
        agent_activity(&self.agent, self.task.as_ref())
    }

    /// The state the card shows (`Shown::of`), its machine reporting.
    pub fn shown(&self) -> Shown {
        Shown::of(self.activity(), self.state())
    }

    /// Whether the list of agents shows it: all but an agent its pane's process made that
    /// ended before any session joined it (it said nothing; its row is kept, and asked for
    /// by id or pane it still answers).
    pub fn listed(&self) -> bool {
        !(self.agent.ended && self.agent.unjoined() && self.turn_count == 0)
    }

    /// Whether this is a sub-agent's session (`is_sub_agent`).
    pub fn sub_agent(&self) -> bool {
        is_sub_agent(self.agent.transcript_path.as_deref())
    }

    /// Whether its task's finish is news (`notable_finish`).
    pub fn notable_finish(&self) -> bool {
        notable_finish(
            self.agent.transcript_path.as_deref(),
            self.command.as_deref(),
        )
    }

    /// The question the agent waits on: the pane's permission dialog first, else the task's
    /// open question (see [`open_question`]).
    pub fn open_question(&self) -> Option<OpenQuestion> {
        open_question(
            self.agent.permission.as_ref(),
            self.question
                .as_ref()
                .map(|(text, q)| (text.as_str(), q.as_ref())),
        )
    }

    /// The agent's card, the JSON `GET /api/agents` shows for it.
    pub fn card(&self) -> Value {
        let (a, task) = (&self.agent, self.task.as_ref());
        json!({
            "id": a.id,
            "name": self.name,
            "kind": a.kind.name(),
            "branch": self.launch_branch.as_ref().or(a.git_branch.as_ref()),
            "worktree": self.worktree,
            "session_id": a.session_id,
            "sessions": a.sessions,
            "project": a.project,
            "cwd": a.cwd,
            "git_branch": a.git_branch,
            "transcript_path": a.transcript_path,
            "tmux_pane": a.tmux_pane,
            "state": self.state().as_str(),
            "activity": self.activity().as_str(),
            "shown": self.shown().as_str(),
            "sub_agent": self.sub_agent(),
            "notable_finish": self.notable_finish(),
            "end_reason": a.end_reason,
            "claude_pid": a.claude_pid,
            "task_id": task.map(|t| t.id),
            "state_since": task.map(|t| t.state_since),
            "command": self.command.as_deref().map(|c| preview(c).0),
            "last_turn": self.last_turn.as_ref().map(|l| {
                let (text, truncated) = preview(&l.text);
                json!({"actor": l.actor, "intent": l.intent, "text": text, "truncated": truncated, "timestamp": l.timestamp})
            }),
            "question": self.open_question().map(|q| q.to_json()),
            "last_seen_at": a.last_seen_at,
            "turn_count": self.turn_count,
        })
    }
}

/// True when `reference` names `agent`: its id, its Claude session id (current or past), or
/// its tmux pane.
/// An empty reference names none (an agent its process made has an empty session id: a
/// script's unset variable must not pick it).
pub fn names(agent: &AgentRow, reference: &str) -> bool {
    if reference.is_empty() {
        return false;
    }
    reference.parse::<AgentId>().ok() == Some(agent.id)
        || agent.session_id == reference
        || agent.sessions.iter().any(|s| s == reference)
        || agent.tmux_pane.as_deref() == Some(reference)
}

/// When `reference` names only a pane (no agent by id or session) and live agents on more
/// than one machine hold that pane, the error that says so: a pane id (`%1`) names a pane on
/// every machine, so taking one of them would type into a pane the user may not mean.
/// `named` are the agents `reference` names ([`names`]; more do no harm), each with its
/// machine (empty for `this_machine`'s).
pub fn ambiguous_pane<'a>(
    named: impl IntoIterator<Item = (&'a AgentRow, &'a str)>,
    reference: &str,
    this_machine: &str,
) -> Option<String> {
    let mut machines = std::collections::BTreeSet::new();
    for (a, machine) in named {
        if reference.parse::<AgentId>().ok() == Some(a.id)
            || (!reference.is_empty() && a.session_id == reference)
            || a.sessions.iter().any(|s| s == reference)
        {
            return None;
        }
        if !a.ended && a.tmux_pane.as_deref() == Some(reference) {
            machines.insert(crate::cluster::machines::holder(machine, this_machine).to_string());
        }
    }
    (machines.len() > 1).then(|| {
        let list: Vec<String> = machines.into_iter().collect();
        format!(
            "pane {reference} is a pane on each of the machines {}: name the agent by its id or session",
            list.join(", ")
        )
    })
}

/// The agent `reference` names among `agents` (see [`names`]). Several may: an id wins over
/// a session or a pane (a pane is reused by the next agent, a number could be both), then the
/// agent heard from last, then the highest id.
pub fn resolve_reference<'a>(
    agents: impl IntoIterator<Item = &'a AgentRow>,
    reference: &str,
) -> Option<AgentId> {
    let by_id = reference.parse::<AgentId>().ok();
    agents
        .into_iter()
        .filter(|a| names(a, reference))
        .max_by_key(|a| (Some(a.id) == by_id, a.last_seen_at, a.id))
        .map(|a| a.id)
}
