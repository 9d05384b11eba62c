//! The spawn-intent guard (the seed's `spawnWorkflowWithIntent`): before spawning, the shell
//! records an intent; a second spawn while a recent intent stands, or while a workflow is
//! active, is skipped. This is the decision part; recording and clearing the intent is I/O.

use super::spawn_request::SpawnRequest;
use serde::{Deserialize, Serialize};

/// An intent younger than this is taken as a spawn still in progress: 30 seconds.
pub const SPAWN_INTENT_TTL_MS: i64 = 30_000;

/// How long after a dead runner's spawn intent its workflow is looked for before the step
/// is spawned again (a lookup that finds nothing may be a server restarting): a minute.
pub const ORPHAN_GRACE_MS: i64 = 60_000;
/// The wait between those lookups.
pub const ORPHAN_BACKOFF_MS: u64 = 5_000;

/// A recorded intent to spawn `skill`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpawnIntent {
    /// The skill being spawned.
    pub skill: String,
    /// When the intent was recorded, in ms since the epoch.
    pub timestamp: i64,
    /// The id the workflow is started under, chosen before it starts: a runner that died
    /// between starting it and recording it leaves this behind, and the next one adopts the
    /// workflow instead of starting the step a second time.
    #[serde(
        rename = "workflowId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub workflow_id: Option<String>,
    /// What is being started (to link the workflow to its step or batch on adoption).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<SpawnRequest>,
}

/// The id a workflow spawned by run `run_id` at `now_ms` starts under: chosen by the
/// machine, so the intent can name it before the workflow exists.
pub fn workflow_id_for(run_id: &str, now_ms: i64, nth: usize) -> String {
    let short: String = run_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    format!("wf-{short}-{now_ms}-{nth}")
}

/// The workflow an intent left behind by a runner that died while spawning: the intent is
/// stale (no spawn can still be under way) and names its workflow and request.
pub fn orphaned_spawn(intent: &SpawnIntent, now_ms: i64) -> Option<(&str, &SpawnRequest)> {
    if !spawn_intent_is_stale(intent.timestamp, now_ms) {
        return None;
    }
    Some((intent.workflow_id.as_deref()?, intent.request.as_ref()?))
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
