//! The spawn-intent guard (the seed's `spawnWorkflowWithIntent`): before spawning, the shell
//! records an intent; a second spawn while a recent intent stands, or while a workflow is
//! active, is skipped. This is the decision part; recording and clearing the intent is I/O.

use serde::{Deserialize, Serialize};

/// An intent younger than this is taken as a spawn still in progress: 30 seconds.
pub const SPAWN_INTENT_TTL_MS: i64 = 30_000;

/// A recorded intent to spawn `skill`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnIntent {
    /// The skill being spawned.
    pub skill: String,
    /// When the intent was recorded, in ms since the epoch.
    pub timestamp: i64,
}

/// Whether an intent recorded at `intent_ms` no longer blocks a spawn at `now_ms` (the
/// seed skips while `now - timestamp < 30000`).
pub fn spawn_intent_is_stale(intent_ms: i64, now_ms: i64) -> bool {
    now_ms.saturating_sub(intent_ms) >= SPAWN_INTENT_TTL_MS
}

/// What to do about a spawn request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnCheck {
    /// Record the intent, spawn, clear the intent whatever happens.
    Spawn,
    /// Another spawn is in progress: skip.
    IntentInFlight,
    /// A workflow is already active: skip.
    WorkflowActive,
}

/// The seed's two checks, in its order: a fresh intent, then an active workflow.
pub fn spawn_check(intent: Option<&SpawnIntent>, workflow_active: bool, now_ms: i64) -> SpawnCheck {
    if intent.is_some_and(|i| !spawn_intent_is_stale(i.timestamp, now_ms)) {
        return SpawnCheck::IntentInFlight;
    }
    if workflow_active {
        return SpawnCheck::WorkflowActive;
    }
    SpawnCheck::Spawn
}
