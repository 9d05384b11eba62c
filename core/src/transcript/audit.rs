//! Proof on demand: which conversational transcript lines have no stored turn, more than one,
//! or one under another agent (the L1 invariant, checked on real data).
//!
//! [`ConversationScan`] turns transcript bytes, chunk by chunk in bounded memory, into the
//! lines that become turns, with the engine's own classification ([`crate::transcript::entry`]);
//! [`audit`] compares them with the stored turns. Both are pure: the shell reads the files
//! and the rows, the decision is made here.

use crate::hook::matching::hash128;
use crate::kind::AgentKind;
use crate::model::AgentId;
use crate::transcript::entry::{self, Entry};
use crate::transcript::framing::{Line, LineFramer};
use crate::transcript::line_read::Restatement;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Reads a transcript from its start and keeps the lines that become turns: user prompts,
/// agent texts and questions, and tool results that answer a question.
#[derive(Debug)]
pub struct ConversationScan {
    framer: LineFramer,
    question_ids: HashSet<u128>,
    kind: AgentKind,
    restatement: Restatement,
}

impl ConversationScan {
    /// A scan of a Claude Code transcript from byte 0, keeping lines up to `max_line_bytes`
    /// whole (as the engine does).
    pub fn new(max_line_bytes: usize) -> ConversationScan {
        ConversationScan::of_kind(AgentKind::Claude, max_line_bytes)
    }

    /// A scan of a transcript of `kind` (its lines read by the kind's reader, as the engine
    /// reads them).
    pub fn of_kind(kind: AgentKind, max_line_bytes: usize) -> ConversationScan {
        ConversationScan {
            framer: LineFramer::new(0, max_line_bytes),
            question_ids: HashSet::new(),
            kind,
            restatement: Restatement::default(),
        }
    }

    /// The offset the next chunk is expected at.
    pub fn expected_offset(&self) -> u64 {
        self.framer.expected_offset()
    }

    /// Feeds the bytes found at `offset` (overlaps are skipped, a chunk past the expected
    /// offset is ignored); calls `on_entry(entry, line_end)` for each conversational line.
    pub fn push(&mut self, offset: u64, data: &[u8], mut on_entry: impl FnMut(Entry, u64)) {
        let questions = &mut self.question_ids;
        let kind = self.kind;
        let restatement = &mut self.restatement;
        let _ = self.framer.push(offset, data, |line, end| {
            if let Some(e) = conversational(kind, questions, restatement, line) {
                on_entry(e, end);
            }
        });
    }
}

/// The entry of a line when it becomes a turn (the same rules as `engine/entries.rs`; a
/// line that restates an earlier message is none, as in `engine/transcripts.rs`).
fn conversational(
    kind: AgentKind,
    questions: &mut HashSet<u128>,
    restatement: &mut Restatement,
    line: Line<'_>,
) -> Option<Entry> {
    // A line just over the limit whose head and tail are all of it is read whole, as the
    // engine reads it.
    let joined;
    let whole = match line {
        Line::Whole(bytes) => Some(bytes),
        Line::Truncated { head, tail, len } if (head.len() + tail.len()) as u64 == len => {
            joined = [head, tail].concat();
            Some(joined.as_slice())
        }
        Line::Truncated { .. } => None,
    };
    let e = match (whole, line) {
        (Some(bytes), _) if kind != AgentKind::Claude => {
            let reading = kind.read_line(bytes);
            if restatement.restates(reading.restating) {
                return None;
            }
            reading.entry.ok()?.0
        }
        (Some(bytes), _) => entry::classify_mended(bytes).ok()?.0,
        (None, Line::Truncated { head, tail, len }) => {
            if kind == AgentKind::Gemini {
                restatement.restates(crate::transcript::gemini::restating_of_head(head));
            }
            crate::transcript::truncated::recover(head, tail, len).entry
        }
        (None, Line::Whole(_)) => return None,
    };
    match &e {
        Entry::UserPrompt { .. } | Entry::AgentText { .. } | Entry::Notice { .. } => Some(e),
        Entry::AgentQuestion { tool_use_id, .. } => {
            if let Some(id) = tool_use_id {
                questions.insert(hash128(id.as_bytes()));
            }
            Some(e)
        }
        Entry::ToolResult {
            tool_use_id,
            answers,
            ..
        } => {
            let answers_question = answers.is_some()
                || tool_use_id
                    .as_deref()
                    .is_some_and(|id| questions.contains(&hash128(id.as_bytes())));
            answers_question.then_some(e)
        }
        Entry::Signal { .. } | Entry::Ignored => None,
    }
}

/// A stored turn as the audit needs it: whose it is and which entry it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTurn {
    /// The turn's id.
    pub turn_id: u64,
    /// The agent it is stored under.
    pub agent_id: AgentId,
    /// Its entry uuid.
    pub entry_uuid: String,
}

/// What the audit of one agent found, by uuid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// The agent audited.
    pub agent_id: AgentId,
    /// Conversational lines in its transcripts.
    pub checked: u64,
    /// Lines with no stored turn anywhere.
    pub missing: Vec<String>,
    /// Lines stored as more than one turn: the uuid and the turn ids.
    pub doubled: Vec<(String, Vec<u64>)>,
    /// Lines whose only turns are under other agents: the uuid and those agents.
    pub misassigned: Vec<(String, Vec<AgentId>)>,
}

impl AuditReport {
    /// True when every line is exactly one turn of this agent.
    pub fn clean(&self) -> bool {
        self.missing.is_empty() && self.doubled.is_empty() && self.misassigned.is_empty()
    }
}

/// Compares an agent's conversational line uuids (in transcript order; a uuid written twice
/// counts once) with stored turns holding those uuids, under any agent. A line is missing
/// with no turn, doubled with more than one (wherever they are), mis-assigned when its one
/// turn is under another agent. Stored turns of no line are not judged here.
pub fn audit(agent_id: AgentId, lines: &[String], stored: &[StoredTurn]) -> AuditReport {
    let mut by_uuid: BTreeMap<&str, Vec<&StoredTurn>> = BTreeMap::new();
    for t in stored {
        by_uuid.entry(t.entry_uuid.as_str()).or_default().push(t);
    }
    let mut report = AuditReport {
        agent_id,
        ..AuditReport::default()
    };
    let mut done = BTreeSet::new();
    for uuid in lines {
        if !done.insert(uuid.as_str()) {
            continue;
        }
        report.checked += 1;
        let turns = by_uuid.get(uuid.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        match turns {
            [] => report.missing.push(uuid.clone()),
            [one] if one.agent_id == agent_id => {}
            [one] => report.misassigned.push((uuid.clone(), vec![one.agent_id])),
            many => {
                let mut ids: Vec<u64> = many.iter().map(|t| t.turn_id).collect();
                ids.sort_unstable();
                report.doubled.push((uuid.clone(), ids));
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::{audit, ConversationScan, StoredTurn};

    fn stored(turn_id: u64, agent_id: u64, uuid: &str) -> StoredTurn {
        StoredTurn {
            turn_id,
            agent_id,
            entry_uuid: uuid.to_string(),
        }
    }

    fn uuids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_line_one_turn_of_its_agent_is_clean() {
        let r = audit(
            1,
            &uuids(&["a", "b"]),
            &[stored(1, 1, "a"), stored(2, 1, "b")],
        );
        assert!(r.clean());
        assert_eq!(r.checked, 2);
    }

    #[test]
    fn missing_doubled_and_misassigned_are_named_by_uuid() {
        let r = audit(
            1,
            &uuids(&["a", "b", "c", "d", "b"]),
            &[
                stored(1, 1, "a"),
                stored(2, 1, "b"),
                stored(9, 2, "b"),
                stored(3, 2, "c"),
            ],
        );
        assert!(!r.clean());
        assert_eq!(r.checked, 4, "a uuid written twice is one line");
        assert_eq!(r.missing, vec!["d".to_string()]);
        assert_eq!(r.doubled, vec![("b".to_string(), vec![2, 9])]);
        assert_eq!(r.misassigned, vec![("c".to_string(), vec![2])]);
    }

    #[test]
    fn the_scan_keeps_only_lines_that_become_turns_across_chunks() {
        let text = concat!(
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"fix it"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"t1","message":{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"Bash","input":{}}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"r1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"ok"}]}}"#,
            "\n",
            r#"{"type":"system","subtype":"turn_duration","uuid":"s1"}"#,
            "\n",
        )
        .as_bytes();
        let mut scan = ConversationScan::new(1 << 20);
        let mut seen = Vec::new();
        for (i, chunk) in text.chunks(7).enumerate() {
            scan.push((i * 7) as u64, chunk, |e, _| {
                seen.push(e.uuid().unwrap().to_string())
            });
        }
        assert_eq!(seen, uuids(&["u1", "a1"]));
        assert_eq!(scan.expected_offset(), text.len() as u64);
    }
}
