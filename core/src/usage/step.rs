//! Steps: the tool calls of a turn. A step is keyed by (agent, tool-use id), like a turn by
//! its entry uuid, and is made from whichever source tells first: the PreToolUse hook (the
//! fast path) or the transcript's `tool_use` block; it completes with the PostToolUse /
//! PostToolUseFailure / PermissionDenied hook or the transcript's `tool_result` block.
//!
//! Every store keeps one row per key and folds each write into it with [`merge`], which is
//! idempotent and order-free in what it keeps: the transcript's facts win over a hook's, and
//! a stronger kind of evidence for the outcome wins over a weaker one ([`Evidence`]). So a
//! step ends up once, with the same outcome, whatever order its writes arrive in, after a
//! restart re-reads lines, or when every hook was lost.

use crate::model::{AgentId, TaskId, TurnRow};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The characters of a step's summary kept: one line of a card.
pub const SUMMARY_CHARS: usize = 200;

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// Not ended yet (or its end was never written).
    Pending,
    /// It ran and succeeded.
    Ok,
    /// It ran and failed (`is_error`).
    Error,
    /// The user or a permission rule refused it.
    Denied,
    /// The user interrupted it.
    Interrupted,
}

impl StepOutcome {
    /// The name the API and the store use.
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::Pending => "pending",
            StepOutcome::Ok => "ok",
            StepOutcome::Error => "error",
            StepOutcome::Denied => "denied",
            StepOutcome::Interrupted => "interrupted",
        }
    }

    /// The outcome a stored name stands for.
    pub fn parse(name: &str) -> Option<StepOutcome> {
        Some(match name {
            "pending" => StepOutcome::Pending,
            "ok" => StepOutcome::Ok,
            "error" => StepOutcome::Error,
            "denied" => StepOutcome::Denied,
            "interrupted" => StepOutcome::Interrupted,
            _ => return None,
        })
    }
}

/// What a step's outcome rests on, weakest first: a stronger one replaces a weaker one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// Nothing: the step is pending.
    None = 0,
    /// An over-long result line whose `is_error` was cut out (`crate::transcript::step_truncated`):
    /// ended, its outcome guessed.
    Guess = 1,
    /// A hook (PostToolUse, PostToolUseFailure, PermissionDenied): may be lost or late.
    Hook = 2,
    /// The transcript's interrupt line while the step had no result yet.
    Interrupt = 3,
    /// The transcript's own `tool_result`: the authority.
    Result = 4,
}

impl Evidence {
    /// The rank stored (0..=4).
    pub fn rank(self) -> i16 {
        self as i16
    }

    /// The evidence a stored rank stands for.
    pub fn from_rank(rank: i16) -> Evidence {
        match rank {
            1 => Evidence::Guess,
            2 => Evidence::Hook,
            3 => Evidence::Interrupt,
            r if r >= 4 => Evidence::Result,
            _ => Evidence::None,
        }
    }
}

/// One tool call of an agent, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRow {
    /// Its agent.
    pub agent_id: AgentId,
    /// The `tool_use` block's id (`toolu_…`): with the agent, the step's key.
    pub tool_use_id: String,
    /// The task it ran in, when known.
    pub task_id: Option<TaskId>,
    /// The tool's name (`Bash`, `Edit`, `mcp__…`); empty while only its end is known.
    pub tool: String,
    /// One line of its input: the command, the file path, the pattern ([`summary_of`]).
    pub summary: String,
    /// The file it writes or edits, for the tools that do ([`file_of`]).
    pub file: Option<String>,
    /// How it ended.
    pub outcome: StepOutcome,
    /// What the outcome rests on.
    pub evidence: Evidence,
    /// The transcript's `tool_use` line was read: its name, input, time and task are the
    /// authority over a hook's.
    pub confirmed: bool,
    /// When it started.
    pub started_at: Option<Timestamp>,
    /// When it ended.
    pub finished_at: Option<Timestamp>,
}

impl StepRow {
    /// A step with only its key known: pending, unconfirmed, nothing else set.
    pub fn new(agent_id: AgentId, tool_use_id: impl Into<String>) -> StepRow {
        StepRow {
            agent_id,
            tool_use_id: tool_use_id.into(),
            task_id: None,
            tool: String::new(),
            summary: String::new(),
            file: None,
            outcome: StepOutcome::Pending,
            evidence: Evidence::None,
            confirmed: false,
            started_at: None,
            finished_at: None,
        }
    }

    /// This step with tool `name` and its `input` (summary and file).
    pub fn with_tool(mut self, name: &str, input: Option<&Value>) -> StepRow {
        self.tool = name.to_string();
        self.summary = summary_of(name, input);
        self.file = file_of(name, input);
        self
    }

    /// How long it took, when both ends are known.
    pub fn duration_ms(&self) -> Option<i64> {
        Some(self.finished_at?.millis() - self.started_at?.millis()).filter(|d| *d >= 0)
    }

    /// What the card's "now" line says: `Bash: cargo test`.
    pub fn label(&self) -> String {
        if self.summary.is_empty() {
            self.tool.clone()
        } else {
            format!("{}: {}", self.tool, self.summary)
        }
    }

    /// The step as the API shows it (`tool`, `summary`, `outcome` as the contract names them).
    pub fn to_json(&self) -> Value {
        json!({
            "tool_use_id": self.tool_use_id,
            "tool": self.tool,
            "summary": self.summary,
            "outcome": self.outcome.as_str(),
            "file": self.file,
            "task_id": self.task_id,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_ms": self.duration_ms(),
        })
    }
}

/// The row a store keeps when `new` is written over `old` (same key): the transcript's start
/// facts win over a hook's (a hook's fill what is still unknown); a stronger [`Evidence`]'s
/// outcome wins, an equal one keeps the first. Applying a write twice changes nothing more.
pub fn merge(old: &StepRow, new: &StepRow) -> StepRow {
    let take_start = new.confirmed && !old.confirmed;
    let pick = |o: &String, n: &String| {
        if (take_start && !n.is_empty()) || o.is_empty() {
            n.clone()
        } else {
            o.clone()
        }
    };
    let stronger = new.evidence > old.evidence;
    StepRow {
        agent_id: old.agent_id,
        tool_use_id: old.tool_use_id.clone(),
        task_id: pick_opt(take_start, &old.task_id, &new.task_id),
        tool: pick(&old.tool, &new.tool),
        summary: pick(&old.summary, &new.summary),
        file: pick_opt(take_start, &old.file, &new.file),
        outcome: if stronger { new.outcome } else { old.outcome },
        evidence: old.evidence.max(new.evidence),
        confirmed: old.confirmed || new.confirmed,
        started_at: pick_opt(take_start, &old.started_at, &new.started_at),
        finished_at: if stronger {
            new.finished_at.or(old.finished_at)
        } else {
            old.finished_at.or(new.finished_at)
        },
    }
}

/// `new` when the transcript's start facts replace a hook's and it knows this one, or when
/// `old` does not know it; else `old`.
fn pick_opt<T: Clone>(take_start: bool, old: &Option<T>, new: &Option<T>) -> Option<T> {
    if (take_start && new.is_some()) || old.is_none() {
        new.clone()
    } else {
        old.clone()
    }
}

/// `step` ended by the transcript's interrupt line at `at` when it is still pending and
/// started by then; else unchanged.
pub fn interrupted(step: &StepRow, at: Timestamp) -> StepRow {
    let mut s = step.clone();
    if s.outcome == StepOutcome::Pending && s.started_at.is_none_or(|t| t <= at) {
        s.outcome = StepOutcome::Interrupted;
        s.evidence = s.evidence.max(Evidence::Interrupt);
        s.finished_at = Some(at);
    }
    s
}

/// The outcome a `tool_result` tells: its text says when the user interrupted or refused
/// the call (Claude Code writes these markers as the result), else `is_error` decides.
pub fn outcome_of_result(is_error: bool, text: &str) -> StepOutcome {
    let t = text.trim_start();
    if t.starts_with("[Request interrupted by user") {
        StepOutcome::Interrupted
    } else if t.starts_with("The user doesn't want to proceed with this tool use")
        || (t.starts_with("Permission to use") && t.contains("denied"))
    {
        StepOutcome::Denied
    } else if is_error {
        StepOutcome::Error
    } else {
        StepOutcome::Ok
    }
}

/// One line of a tool's input (`crate::pane::tool::input_summary`): its first non-blank line,
/// at most [`SUMMARY_CHARS`] characters.
pub fn summary_of(name: &str, input: Option<&Value>) -> String {
    let full = crate::pane::tool::input_summary(name, input).unwrap_or_default();
    let line = full.lines().map(str::trim).find(|l| !l.is_empty());
    let line = line.unwrap_or("");
    match line.char_indices().nth(SUMMARY_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// The file a tool call writes or edits (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`).
pub fn file_of(name: &str, input: Option<&Value>) -> Option<String> {
    if !matches!(name, "Write" | "Edit" | "MultiEdit" | "NotebookEdit") {
        return None;
    }
    let field = |k: &str| input?.get(k)?.as_str();
    field("file_path")
        .or_else(|| field("notebook_path"))
        .map(str::to_string)
}

/// The files a task's steps wrote or edited successfully, each once, in the order first
/// changed.
pub fn files_changed<'a>(steps: impl IntoIterator<Item = &'a StepRow>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut steps: Vec<&StepRow> = steps
        .into_iter()
        .filter(|s| s.outcome == StepOutcome::Ok)
        .collect();
    steps.sort_by(|a, b| (a.started_at, &a.tool_use_id).cmp(&(b.started_at, &b.tool_use_id)));
    for f in steps.into_iter().filter_map(|s| s.file.as_ref()) {
        if !out.contains(f) {
            out.push(f.clone());
        }
    }
    out
}

/// The agent's current activity: its latest-started pending step (ties by id), among steps
/// started at or after `since` (the current task's start), when it works.
pub fn current_step<'a>(
    steps: impl IntoIterator<Item = &'a StepRow>,
    since: Option<Timestamp>,
) -> Option<&'a StepRow> {
    steps
        .into_iter()
        .filter(|s| s.outcome == StepOutcome::Pending && !s.tool.is_empty())
        .filter(|s| match (since, s.started_at) {
            (Some(since), Some(at)) => at >= since,
            _ => true,
        })
        .max_by(|a, b| (a.started_at, &a.tool_use_id).cmp(&(b.started_at, &b.tool_use_id)))
}

/// Each turn's steps: a step goes under the latest turn (in (timestamp, id) order) at or
/// before its start, or under the first turn when it started before all of them. Returns,
/// for each of `turns` (in the order given), its steps by start. Steps of other agents and
/// steps with no start time are left out.
pub fn fold_under_turns<'a>(turns: &[TurnRow], steps: &'a [StepRow]) -> Vec<Vec<&'a StepRow>> {
    let mut out: Vec<Vec<&StepRow>> = vec![Vec::new(); turns.len()];
    let Some(agent) = turns.first().map(|t| t.agent_id) else {
        return out;
    };
    let mut sorted: Vec<&StepRow> = steps
        .iter()
        .filter(|s| s.agent_id == agent && s.started_at.is_some())
        .collect();
    sorted.sort_by(|a, b| (a.started_at, &a.tool_use_id).cmp(&(b.started_at, &b.tool_use_id)));
    let times: Vec<Timestamp> = sorted.iter().filter_map(|s| s.started_at).collect();
    for (s, turn) in sorted.into_iter().zip(turn_indices_at(turns, &times)) {
        if let Some(t) = turn {
            out[t].push(s);
        }
    }
    out
}

/// For each of `times`, the index in `turns` of the turn what happened then goes under: the
/// latest turn (in (timestamp, id) order) at or before it, or the first turn when it came
/// before all of them; `None` without turns.
pub fn turn_indices_at(turns: &[TurnRow], times: &[Timestamp]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..turns.len()).collect();
    order.sort_by_key(|&i| (turns[i].timestamp, turns[i].id));
    let Some(&first) = order.first() else {
        return vec![None; times.len()];
    };
    times
        .iter()
        .map(|&at| {
            let k = order.partition_point(|&i| turns[i].timestamp <= at);
            Some(if k == 0 { first } else { order[k - 1] })
        })
        .collect()
}
