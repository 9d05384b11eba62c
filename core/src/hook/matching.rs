//! Structural matching of hook-made turns and transcript entries, in both orders.
//!
//! A hook-made turn is provisional until an entry claims it: by `prompt_id` (or the
//! AskUserQuestion `tool_use_id`) when both carry one, otherwise the first unclaimed
//! provisional turn of the same kind with the same full normalised text. A hook that arrives
//! after its entry matches the first turn of that kind and text that no hook has matched yet,
//! and adds nothing. No prefixes, no time windows: two identical replies are two turns.
//!
//! Greedy matching keeps an invariant that makes counting exact: for each (kind, text) at most
//! one of "unclaimed provisional turns" and "unhooked entries" is non-empty, so when every hook
//! has its entry, every provisional turn ends up claimed.

use crate::model::{TaskId, TurnId, TurnRow};
use crate::task::intent::{Actor, Intent};
use crate::time::Timestamp;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// The kinds of turn a hook can announce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A typed user prompt (UserPromptSubmit).
    Prompt,
    /// An agent text (Stop's `last_assistant_message`).
    AgentText,
    /// An AskUserQuestion (PreToolUse).
    Question,
}

impl Kind {
    /// The matching kind of a stored turn, if hooks can announce such a turn.
    pub fn of(turn: &TurnRow) -> Option<Kind> {
        match turn.actor {
            Actor::User if turn.tool_use_id.is_none() => Some(Kind::Prompt),
            Actor::User => None, // an AskUserQuestion answer: only the transcript has it
            Actor::Agent if turn.question.is_some() => Some(Kind::Question),
            Actor::Agent => Some(Kind::AgentText),
        }
    }
}

/// What identifies a turn for matching: its kind, a hash of its full normalised text and,
/// when known, a hash of its structural id (`prompt_id` or `tool_use_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// The kind.
    pub kind: Kind,
    /// 128-bit hash of the normalised text.
    pub text: u128,
    /// 128-bit hash of the structural id.
    pub id: Option<u128>,
}

impl Key {
    /// The key of a text with an optional structural id.
    pub fn new(kind: Kind, text: &str, id: Option<&str>) -> Key {
        Key {
            kind,
            text: text_hash(text),
            id: id.map(|i| hash128(i.as_bytes())),
        }
    }

    /// The key of a stored turn.
    pub fn of(turn: &TurnRow) -> Option<Key> {
        let kind = Kind::of(turn)?;
        let id = match kind {
            Kind::Prompt => turn.prompt_id.as_deref(),
            Kind::Question => turn.tool_use_id.as_deref(),
            Kind::AgentText => None,
        };
        Some(Key::new(kind, &turn.text, id))
    }

    fn same_text(&self, other: &Key) -> bool {
        // When both carry an id the ids decide; text decides only when one lacks it.
        self.kind == other.kind
            && (self.id.is_none() || other.id.is_none())
            && self.text == other.text
    }
}

/// A turn waiting in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The turn.
    pub turn_id: TurnId,
    /// Its task.
    pub task_id: TaskId,
    /// Its matching key.
    pub key: Key,
    /// Who spoke (for the state preview).
    pub actor: Actor,
    /// Its intent (for the state preview).
    pub intent: Intent,
    /// Its time (for ordering the state preview).
    pub stamp: Timestamp,
}

impl Slot {
    /// The slot of a stored turn under `key`.
    pub fn of(turn: &TurnRow, key: Key) -> Slot {
        Slot {
            turn_id: turn.id,
            task_id: turn.task_id,
            key,
            actor: turn.actor,
            intent: turn.intent,
            stamp: turn.timestamp,
        }
    }
}

/// One side of the index: slots in creation order, found by key in O(1).
#[derive(Clone, Debug, Default)]
struct Side {
    /// Slots by turn id (creation order).
    slots: BTreeMap<TurnId, Slot>,
    /// Turns by (kind, text hash), oldest first.
    by_text: HashMap<(Kind, u128), VecDeque<TurnId>>,
    /// Turns by (kind, structural id hash), oldest first.
    by_id: HashMap<(Kind, u128), VecDeque<TurnId>>,
    /// (task, turn) pairs, for a task's slots in order.
    by_task: BTreeSet<(TaskId, TurnId)>,
}

impl Side {
    fn add(&mut self, slot: Slot) {
        self.by_text
            .entry((slot.key.kind, slot.key.text))
            .or_default()
            .push_back(slot.turn_id);
        if let Some(id) = slot.key.id {
            self.by_id
                .entry((slot.key.kind, id))
                .or_default()
                .push_back(slot.turn_id);
        }
        self.by_task.insert((slot.task_id, slot.turn_id));
        self.slots.insert(slot.turn_id, slot);
    }

    /// The oldest slot with the same structural id; else the oldest with the same text whose
    /// ids do not contradict (when both carry one, the ids decide).
    fn take(&mut self, key: &Key) -> Option<Slot> {
        self.take_within(key, Bounds::default())
    }

    /// [`Side::take`] among the slots whose time is within `bounds`.
    fn take_within(&mut self, key: &Key, bounds: Bounds) -> Option<Slot> {
        let by_id = key
            .id
            .and_then(|id| self.by_id.get(&(key.kind, id))?.front().copied());
        let turn = by_id.or_else(|| {
            let queue = self.by_text.get(&(key.kind, key.text))?;
            queue.iter().copied().find(|t| {
                self.slots
                    .get(t)
                    .is_some_and(|s| s.key.same_text(key) && bounds.hold(s.stamp))
            })
        })?;
        let slot = self.slots.remove(&turn)?;
        remove_from(&mut self.by_text, (slot.key.kind, slot.key.text), turn);
        if let Some(id) = slot.key.id {
            remove_from(&mut self.by_id, (slot.key.kind, id), turn);
        }
        self.by_task.remove(&(slot.task_id, turn));
        Some(slot)
    }

    fn of_task(&self, task: TaskId) -> impl Iterator<Item = &Slot> {
        self.by_task
            .range((task, 0)..=(task, TurnId::MAX))
            .filter_map(|(_, t)| self.slots.get(t))
    }
}

fn remove_from(map: &mut HashMap<(Kind, u128), VecDeque<TurnId>>, key: (Kind, u128), turn: TurnId) {
    if let Some(q) = map.get_mut(&key) {
        if let Some(pos) = q.iter().position(|t| *t == turn) {
            q.remove(pos);
        }
        if q.is_empty() {
            map.remove(&key);
        }
    }
}

/// The times a slot matched by text alone may have (a kind whose prompt line always follows
/// its hook within moments: a line cannot be the prompt of a hook fired well after it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds {
    /// No slot from before this.
    pub not_before: Option<Timestamp>,
    /// No slot from after this.
    pub not_after: Option<Timestamp>,
}

impl Bounds {
    fn hold(self, t: Timestamp) -> bool {
        self.not_before.is_none_or(|b| t >= b) && self.not_after.is_none_or(|a| t <= a)
    }
}

/// One agent's unmatched turns on both sides. Lookups are by key (hash maps used for
/// lookup only, never iterated, so no order leaks out); a side's order is its turn ids'.
#[derive(Clone, Debug, Default)]
pub struct MatchIndex {
    /// Hook-made turns no entry has claimed.
    provisional: Side,
    /// Entry-made turns no hook has matched.
    unhooked: Side,
}

impl MatchIndex {
    /// Adds a hook-made turn that found no entry.
    pub fn add_provisional(&mut self, slot: Slot) {
        self.provisional.add(slot);
    }

    /// Adds an entry-made turn that claimed no hook-made turn.
    pub fn add_unhooked(&mut self, slot: Slot) {
        self.unhooked.add(slot);
    }

    /// An entry arrived: takes the provisional turn it claims, if any.
    pub fn claim(&mut self, key: &Key) -> Option<Slot> {
        self.provisional.take(key)
    }

    /// [`MatchIndex::claim`] of a provisional turn whose time is within `bounds` (matched by
    /// text; a structural id decides alone).
    pub fn claim_within(&mut self, key: &Key, bounds: Bounds) -> Option<Slot> {
        self.provisional.take_within(key, bounds)
    }

    /// A hook arrived: takes the unhooked entry-made turn it announces, if any.
    pub fn match_hook(&mut self, key: &Key) -> Option<Slot> {
        self.unhooked.take(key)
    }

    /// [`MatchIndex::match_hook`] of an entry-made turn whose time is within `bounds`.
    pub fn match_hook_within(&mut self, key: &Key, bounds: Bounds) -> Option<Slot> {
        self.unhooked.take_within(key, bounds)
    }

    /// Both agents' slots in one index, each side in turn-id order (the order "first" means).
    pub fn merged(self, other: MatchIndex) -> MatchIndex {
        let mut out = MatchIndex::default();
        let mut provisional: Vec<Slot> = self
            .provisional
            .slots
            .into_values()
            .chain(other.provisional.slots.into_values())
            .collect();
        let mut unhooked: Vec<Slot> = self
            .unhooked
            .slots
            .into_values()
            .chain(other.unhooked.slots.into_values())
            .collect();
        provisional.sort_by_key(|s| s.turn_id);
        unhooked.sort_by_key(|s| s.turn_id);
        provisional.into_iter().for_each(|s| out.provisional.add(s));
        unhooked.into_iter().for_each(|s| out.unhooked.add(s));
        out
    }

    /// A task's unclaimed hook-made turns, oldest first.
    pub fn provisional_of(&self, task: TaskId) -> impl Iterator<Item = &Slot> {
        self.provisional.of_task(task)
    }

    /// Number of slots held (for memory accounting in benchmarks).
    pub fn len(&self) -> usize {
        self.provisional.slots.len() + self.unhooked.slots.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Normalises text for matching: context blocks the transcript leaves out of prompts are left
/// out here too, and runs of white space count as one space.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in strip_context_blocks(text).split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The text shown for a hook's prompt: context blocks left out, trimmed.
pub fn normalise_display(text: &str) -> String {
    strip_context_blocks(text).trim().to_string()
}

/// Leaves out leading `<ide_…>…</ide_…>` and `<system-reminder>…</system-reminder>` blocks,
/// which a hook's prompt may carry but the transcript's prompt text does not.
fn strip_context_blocks(mut text: &str) -> &str {
    loop {
        let t = text.trim_start();
        let Some(rest) = t.strip_prefix('<') else {
            return t;
        };
        let name_end = rest.find(['>', ' ']).unwrap_or(rest.len());
        let name = &rest[..name_end];
        if !(name.starts_with("ide_") || name == "system-reminder") {
            return t;
        }
        let close = format!("</{name}>");
        match t.find(&close) {
            Some(i) => text = &t[i + close.len()..],
            None => return t,
        }
    }
}

/// The 128-bit hash of a text's normal form (words joined by one space).
pub fn text_hash(text: &str) -> u128 {
    let mut h = Sha256::new();
    let mut first = true;
    for word in strip_context_blocks(text).split_whitespace() {
        if !first {
            h.update(b" ");
        }
        first = false;
        h.update(word.as_bytes());
    }
    truncate(h)
}

/// SHA-256 truncated to its first 128 bits (big-endian).
///
/// Stable across builds and platforms, which restart determinism needs, and collision
/// resistant: a text an agent can be steered to print cannot be made to share a key with
/// another turn's text (the FNV-1a hash used before could be, and two turns would merge).
/// 128 bits keep a birthday collision out of reach and fit the 32 hex digits of `hook_key`.
///
/// What is stored: only `turns.hook_key`, as 32 lowercase hex digits of this hash of the hook
/// body (same format as the FNV-1a key it replaces, so no migration). Text keys, pane hashes,
/// question and entry ids are kept in memory only and recomputed from the stored rows on
/// restore, so every existing row still matches. A `hook_key` written before the change is
/// read back as before; it only recognised a byte-identical second delivery of the very hook
/// that made the row, so the one thing an upgrade can miss is such a duplicate straddling the
/// restart, which then adds a second provisional turn, as any hook the server has not seen would.
pub fn hash128(bytes: &[u8]) -> u128 {
    let mut h = Sha256::new();
    h.update(bytes);
    truncate(h)
}

fn truncate(h: Sha256) -> u128 {
    let digest = h.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(turn_id: TurnId, key: Key) -> Slot {
        Slot {
            turn_id,
            task_id: 1,
            key,
            actor: Actor::User,
            intent: Intent::Command,
            stamp: Timestamp(0),
        }
    }

    #[test]
    fn full_text_not_prefix() {
        // AC 1.1 / 1.3: same first 200 characters, different ends: different turns.
        let a = "x".repeat(200) + " alpha";
        let b = "x".repeat(200) + " beta";
        let mut idx = MatchIndex::default();
        idx.add_provisional(slot(1, Key::new(Kind::Prompt, &a, None)));
        assert_eq!(idx.claim(&Key::new(Kind::Prompt, &b, None)), None);
        assert_eq!(
            idx.claim(&Key::new(Kind::Prompt, &a, None))
                .map(|s| s.turn_id),
            Some(1)
        );
    }

    #[test]
    fn whitespace_and_ide_blocks_do_not_matter() {
        assert_eq!(
            text_hash("<ide_opened_file>f.rs</ide_opened_file>\n fix  the\tbug "),
            text_hash("fix the bug")
        );
        assert_eq!(normalise("  a \n b "), "a b");
    }

    #[test]
    fn ids_decide_when_both_have_one() {
        let mut idx = MatchIndex::default();
        idx.add_provisional(slot(1, Key::new(Kind::Prompt, "yes", Some("p1"))));
        idx.add_provisional(slot(2, Key::new(Kind::Prompt, "yes", Some("p2"))));
        assert_eq!(
            idx.claim(&Key::new(Kind::Prompt, "yes", Some("p2")))
                .map(|s| s.turn_id),
            Some(2)
        );
        assert_eq!(idx.claim(&Key::new(Kind::Prompt, "yes", Some("p3"))), None);
        assert_eq!(
            idx.claim(&Key::new(Kind::Prompt, "yes", None))
                .map(|s| s.turn_id),
            Some(1)
        );
    }

    #[test]
    fn identical_replies_are_claimed_one_each_in_order() {
        let mut idx = MatchIndex::default();
        idx.add_provisional(slot(1, Key::new(Kind::Prompt, "yes", None)));
        idx.add_provisional(slot(2, Key::new(Kind::Prompt, "yes", None)));
        assert_eq!(
            idx.claim(&Key::new(Kind::Prompt, "yes", None))
                .map(|s| s.turn_id),
            Some(1)
        );
        assert_eq!(
            idx.claim(&Key::new(Kind::Prompt, "yes", None))
                .map(|s| s.turn_id),
            Some(2)
        );
        assert_eq!(idx.claim(&Key::new(Kind::Prompt, "yes", None)), None);
    }

    #[test]
    fn kinds_do_not_mix() {
        let mut idx = MatchIndex::default();
        idx.add_unhooked(slot(1, Key::new(Kind::AgentText, "yes", None)));
        assert_eq!(idx.match_hook(&Key::new(Kind::Prompt, "yes", None)), None);
    }

    #[test]
    fn keys_are_truncated_sha256() {
        // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad
        // (FIPS 180-2, appendix B.1): the key is its first 128 bits, not an FNV-1a value.
        let abc = 0xba7816bf_8f01cfea_414140de_5dae2223_u128;
        assert_eq!(hash128(b"abc"), abc);
        // A text's key is the hash of its normal form: the words joined by one space.
        assert_eq!(text_hash("  abc \n"), abc);
        assert_eq!(
            text_hash("<system-reminder>x</system-reminder> a  b"),
            hash128(b"a b")
        );
        assert_eq!(
            Key::new(Kind::AgentText, "abc", Some("abc")),
            Key {
                kind: Kind::AgentText,
                text: abc,
                id: Some(abc)
            }
        );
    }

    #[test]
    fn a_bound_skips_slots_outside_it_and_keeps_them_for_later() {
        let key = Key::new(Kind::Prompt, "yes", None);
        let mut index = MatchIndex::default();
        let mut late = slot(7, key);
        late.stamp = Timestamp(14_797);
        index.add_provisional(late);
        // An earlier "yes" written at 13 931: the hook stamped at 14 797 is not its own.
        let bounds = Bounds {
            not_before: None,
            not_after: Some(Timestamp(13_931 + 250)),
        };
        assert_eq!(index.claim_within(&key, bounds), None);
        // The later "yes", written after its hook, takes it.
        let bounds = Bounds {
            not_before: None,
            not_after: Some(Timestamp(14_800 + 250)),
        };
        assert_eq!(index.claim_within(&key, bounds).map(|s| s.turn_id), Some(7));
    }
}
