//! Persisting turns and publishing events.

use super::{Core, TurnView};
use crate::io::{Command, Event, Write};
use crate::model::{AgentId, TurnId, TurnRow};
use crate::EventData;
use tracing::warn;

impl Core {
    pub(super) fn new_turn_id(&mut self) -> TurnId {
        let id = self.ids.turn;
        self.ids.turn += 1;
        id
    }

    pub(super) fn persist_turn(&mut self, mut row: TurnRow) {
        // Entries and hooks are mended where they are read (so that their matching keys
        // agree); this keeps any other source from handing the store a NUL it refuses.
        let nuls = replace_nul_in_turn(&mut row);
        if nuls > 0 {
            warn!(
                "[RECONCILER] turn {} held {nuls} NUL character(s); replaced with U+FFFD",
                row.id
            );
        }
        let data = EventData::of(&TurnView::of(&row));
        let agent_id = row.agent_id;
        let now = self.now;
        let agent = self.agent_mut(agent_id);
        agent.last_turn_at = now;
        agent.note_turn(&row);
        self.out.push_back(Command::Store(Write::Turn(row)));
        self.publish_data(agent_id, "turn_created", data);
    }

    pub(super) fn publish(
        &mut self,
        agent_id: AgentId,
        name: &'static str,
        data: serde_json::Value,
    ) {
        self.publish_data(agent_id, name, EventData::of(&data));
    }

    /// Publishes a payload already written as JSON.
    pub(super) fn publish_data(&mut self, agent_id: AgentId, name: &'static str, data: EventData) {
        self.out.push_back(Command::Publish(Event {
            name,
            agent_id,
            data,
        }));
    }
}

/// Replaces NUL characters in every string of a turn row with U+FFFD; returns how many.
fn replace_nul_in_turn(row: &mut TurnRow) -> usize {
    use crate::transcript::mend::{replace_nul, replace_nul_in_json, replace_nul_opt};
    replace_nul(&mut row.text)
        + row.question.as_mut().map_or(0, replace_nul_in_json)
        + replace_nul_opt(&mut row.entry_uuid)
        + replace_nul_opt(&mut row.hook_key)
        + replace_nul_opt(&mut row.session_id)
        + replace_nul_opt(&mut row.prompt_id)
        + replace_nul_opt(&mut row.tool_use_id)
}
