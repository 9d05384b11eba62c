//! Persisting turns and publishing events.

use super::*;

impl Core {
    pub(super) fn new_turn_id(&mut self) -> TurnId {
        let id = self.next_turn;
        self.next_turn += 1;
        id
    }

    pub(super) fn persist_turn(&mut self, row: TurnRow) {
        let data = turn_json(&row);
        let agent_id = row.agent_id;
        let now = self.now;
        let agent = self.agent_mut(agent_id);
        agent.last_turn_at = now;
        agent.note_turn(&row);
        self.out.push_back(Command::Store(Write::Turn(row)));
        self.publish(agent_id, "turn_created", data);
    }

    pub(super) fn publish(
        &mut self,
        agent_id: AgentId,
        name: &'static str,
        data: serde_json::Value,
    ) {
        self.out.push_back(Command::Publish(Event {
            name,
            agent_id,
            data,
        }));
    }
}
