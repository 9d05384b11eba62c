//! Steps and usage: tool calls from the Pre/PostToolUse hooks (the fast path) and from the
//! transcript's `tool_use` / `tool_result` blocks (the authority), and each assistant
//! message's tokens. The core keeps none of it in memory: every write is folded into its row
//! by the store ([`crate::usage::step::merge`], [`crate::usage::sum::merge`]), so a restart, a re-read
//! or a lost hook cannot make a step twice or give it the wrong outcome.

use super::Core;
use crate::hook::{Hook, HookEvent};
use crate::io::{Command, Write};
use crate::model::AgentId;
use crate::time::Timestamp;
use crate::transcript::mend::{replace_nul, replace_nul_opt};
use crate::transcript::step_line::LineFacts;
use crate::usage::step::{Evidence, StepOutcome, StepRow};
use crate::usage::sum::UsageRow;
use crate::EventData;
use serde_json::Value;

impl Core {
    /// What a whole transcript line tells about steps and usage (`facts`, as
    /// [`crate::transcript::step_line::read_line`] reads them), after its entry was read (so a prompt on
    /// it has set its file's task). `interrupt` is the time of the line when it is the
    /// transcript's interrupt marker.
    pub(super) fn steps_of_line(
        &mut self,
        path: &str,
        agent_id: AgentId,
        facts: LineFacts,
        interrupt: Option<Timestamp>,
    ) {
        if let Some(at) = interrupt {
            self.write(Write::StepsInterrupted { agent_id, at });
        }
        self.steps_of_facts(path, agent_id, facts);
    }

    /// What an over-long line's head and tail still tell about steps and usage.
    pub(super) fn steps_of_truncated(
        &mut self,
        path: &str,
        agent_id: AgentId,
        head: &[u8],
        tail: &[u8],
    ) {
        let facts = crate::transcript::step_truncated::read_truncated(head, tail);
        self.steps_of_facts(path, agent_id, facts);
    }

    fn steps_of_facts(&mut self, path: &str, agent_id: AgentId, facts: LineFacts) {
        if facts.is_empty() {
            return;
        }
        let task = self.files.get(path).and_then(|f| f.task);
        let at = facts.timestamp;
        for u in facts.uses {
            let mut step = StepRow::new(agent_id, u.id).with_tool(&u.name, u.input.as_ref());
            step.task_id = task;
            step.started_at = at;
            step.confirmed = true;
            self.write_step(step);
        }
        for r in facts.results {
            let mut step = StepRow::new(agent_id, r.tool_use_id);
            step.outcome = r.outcome;
            step.evidence = if r.certain {
                Evidence::Result
            } else {
                Evidence::Guess
            };
            step.finished_at = at;
            self.write_step(step);
        }
        if let Some(u) = facts.usage {
            let model = match u.model.is_empty() {
                true => self.files.get(path).and_then(|f| f.model.clone()),
                false => None,
            };
            let mut row = UsageRow {
                agent_id,
                message_id: u.message_id,
                task_id: task,
                model: model.unwrap_or(u.model),
                tokens: u.tokens,
                at: at.unwrap_or(self.now),
            };
            replace_nul(&mut row.message_id);
            replace_nul(&mut row.model);
            self.write(Write::Usage(row));
        }
    }

    /// A tool hook's step: PreToolUse starts it, PostToolUse ends it well,
    /// PostToolUseFailure with an error or an interrupt, PermissionDenied refused. Hooks
    /// without a tool-use id make none (the transcript will).
    pub(super) fn hook_step(
        &mut self,
        agent_id: AgentId,
        hook: &Hook,
        body: &[u8],
        stamp: Timestamp,
    ) {
        let Some(id) = hook.tool_use_id.clone() else {
            return;
        };
        let ended = match &hook.event {
            HookEvent::PreToolUse => None,
            HookEvent::PostToolUse => Some(StepOutcome::Ok),
            HookEvent::Other(name) if name == "PostToolUseFailure" => {
                let interrupt = serde_json::from_slice::<Value>(body)
                    .ok()
                    .and_then(|v| v.get("is_interrupt").and_then(Value::as_bool))
                    .unwrap_or(false);
                Some(if interrupt {
                    StepOutcome::Interrupted
                } else {
                    StepOutcome::Error
                })
            }
            HookEvent::Other(name) if name == "PermissionDenied" => Some(StepOutcome::Denied),
            _ => return,
        };
        let mut step = StepRow::new(agent_id, id);
        if let Some(name) = hook.tool_name.as_deref() {
            step = step.with_tool(name, hook.tool_input.as_ref());
        }
        step.task_id = self.agents.get(&agent_id).and_then(|a| a.latest);
        match ended {
            None => step.started_at = Some(stamp),
            Some(outcome) => {
                step.outcome = outcome;
                step.evidence = Evidence::Hook;
                step.finished_at = Some(stamp);
            }
        }
        let data = EventData::of(&StepUpdated {
            agent_id,
            tool_use_id: &step.tool_use_id,
            tool: &step.tool,
            summary: &step.summary,
            outcome: step.outcome.as_str(),
        });
        self.write_step(step);
        self.publish_data(agent_id, "step_updated", data);
    }

    fn write_step(&mut self, mut step: StepRow) {
        // PostgreSQL's TEXT refuses NUL (see `mend`).
        replace_nul(&mut step.tool_use_id);
        replace_nul(&mut step.tool);
        replace_nul(&mut step.summary);
        replace_nul_opt(&mut step.file);
        self.write(Write::Step(step));
    }

    fn write(&mut self, w: Write) {
        self.out.push_back(Command::Store(w));
    }
}

/// `step_updated`'s payload, written straight from the step.
#[derive(serde::Serialize)]
struct StepUpdated<'a> {
    agent_id: AgentId,
    tool_use_id: &'a str,
    tool: &'a str,
    summary: &'a str,
    outcome: &'static str,
}
