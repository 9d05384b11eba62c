//! The invariants of DESIGN.md, checked against what the simulated sessions really did.
//!
//! Safety, after every commit:
//! - S1 no duplicate: the store never refuses a turn for repeating an entry, and a claimed
//!   turn is the entry that claimed it (its text);
//! - S2 no loss once seen: every turn ever committed is still there at the end;
//! - S3 isolation: a turn's entry comes from a session of its own agent's pane;
//! - S4 order: a claimed turn carries the transcript's timestamp, `timestamp_source = jsonl`;
//! - S5 valid states: a task never goes back to `idle` once it left it;
//! - A1 no false idle: an agent whose current prompt the server has seen is never shown idle
//!   while the session is still working on it (sm#232);
//! - A2 no stuck running (calm scenarios): a session idle for a while is shown idle (sm#240);
//! - R1 no early end: an agent whose process lives and works is never shown ended;
//! - R2 the reaper: an agent whose pane closed or whose process is gone is not shown running
//!   once the watchdog has had time to see it.
//!
//! Liveness, at the end of the calm phase:
//! - L1 completeness: every transcript turn line has exactly one turn, no hook-made turn is
//!   left unclaimed, and no turn is made of a line that is none (context a CLI injects);
//! - L2 convergence: every agent's activity equals its session's (idle, waiting, ended), and
//!   every agent turn sits in the task of the prompt it answers;
//! - P1 discovery: an agent tied to a pane (by a hook or by discovery) holds only lines of
//!   that pane's sessions.
//!
//! Across machines (the `cluster` scenario), at the end, after a quiet period:
//! - E1 events: every SSE client saw every committed, sequenced event exactly once, in
//!   position order, with its name and data, across hub switches and hub restarts, and no
//!   `gap` (every event is retained); no committed event is left without a position.
//!
//! - C1 commands: a prompt (or a question's answer, its option's key; or an interrupt, its
//!   Escape) a user sent through a hub to another machine's pane was typed
//!   there exactly once when the hub answered 200, never when it answered that the command
//!   will not run (503 offline, 504 not taken, any other refusal), and at most once when the
//!   answer says nothing sure (no answer; 504 taken without a result, or written and its
//!   result unreadable).
//!
//! Agents the user stops through Headspace (`POST /api/agents/{id}/stop`, one ending of a
//! session): once its pane closed it is not shown running after the watchdog's bound (R2, as
//! any other end) and ends shown ended (L2), and
//! - X1 stops: an agent ends as `stopped` only when the user asked Headspace to stop it.
//!
//! L3 (determinism) is checked by running a seed twice (see `run`).

use headspace_core::hook::matching::normalise_display;
use headspace_core::model::TimestampSource;
use headspace_core::store::MemStore;
use headspace_core::task::state::TaskState;
use headspace_core::view::activity::{agent_activity, current_task, Activity};
use headspace_core::{Timestamp, Write};
use std::collections::{BTreeMap, BTreeSet};

/// One transcript turn line, as the session wrote it.
#[derive(Clone, Debug)]
pub struct LineTruth {
    /// The pane of its session.
    pub pane: String,
    /// Its text, normalised for display.
    pub text: String,
    /// Its timestamp.
    pub timestamp: Timestamp,
    /// The uuid of the prompt it answers (itself for a prompt).
    pub prompt_uuid: String,
    /// True for the user's prompt of an exchange.
    pub is_prompt: bool,
    /// True once the whole line is in the file.
    pub written: bool,
}

/// What a session is doing, as the checker needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// The activity the session truly has.
    pub activity: Activity,
    /// The prompt being worked on.
    pub prompt_uuid: Option<String>,
    /// Its `prompt_id`, when the session's shape has one.
    pub prompt_id: Option<String>,
    /// Since when.
    pub since: Timestamp,
}

/// A broken invariant.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Which (S1…S5, A1, L1, L2).
    pub invariant: &'static str,
    /// When, in simulated time.
    pub at: Timestamp,
    /// What.
    pub detail: String,
}

/// A prompt or a question's answer a user sent through a hub (the `cluster` scenario), and
/// what the hub answered.
#[derive(Clone, Debug)]
pub struct SendRecord {
    /// The agent's pane.
    pub pane: String,
    /// What was asked: `send`, `answer` or `interrupt`.
    pub what: &'static str,
    /// The text typed: the prompt, the answer's option key, or the interrupt's Escape.
    pub text: String,
    /// The hub asked.
    pub hub: &'static str,
    /// Its answer (status, body); `None` when none came.
    pub answer: Option<(u16, String)>,
    /// When it was asked.
    pub at: Timestamp,
}

/// What a send's answer promises about its text being typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Promise {
    /// Typed once.
    Typed,
    /// Never typed.
    NotTyped,
    /// Nothing sure: typed at most once.
    AtMostOnce,
}

fn promise(answer: &Option<(u16, String)>) -> Promise {
    match answer {
        Some((200, _)) => Promise::Typed,
        // Taken without a result in time, or written and then its result unreadable: it may
        // have run.
        Some((504, body)) if body.contains("took the command") || body.contains("may have run") => {
            Promise::AtMostOnce
        }
        Some(_) => Promise::NotTyped,
        None => Promise::AtMostOnce,
    }
}

/// Ground truth and the checks against it.
#[derive(Debug, Default)]
pub struct Checker {
    /// Turn lines by uuid.
    pub lines: BTreeMap<String, LineTruth>,
    /// Each pane's session right now.
    pub phases: BTreeMap<String, Phase>,
    /// What broke, in order.
    pub violations: Vec<Violation>,
    /// Panes some delivered hook named: only these can the server tie to a session.
    pub named_panes: BTreeSet<String>,
    /// Panes whose agent's life ended (exited, killed, pane closed or taken over), and when;
    /// only those a listing showed alive while the server knew them (see `seen_alive`).
    pub gone: BTreeMap<String, Timestamp>,
    /// Panes a successful pane listing showed with their Claude Code process while the store
    /// tied them to an agent.
    pub seen_alive: BTreeSet<String>,
    /// Sessions the user asked Headspace to stop: only these may end as `stopped` (X1).
    pub stopped: BTreeSet<String>,
    /// Prompts sent through a hub, with the hub's answers (C1).
    pub sends: Vec<SendRecord>,
    store_violations: usize,
    /// Committed turns by entry uuid and by prompt id.
    entries: BTreeMap<String, u64>,
    prompt_ids: BTreeMap<String, u64>,
    committed: BTreeSet<u64>,
    left_idle: BTreeSet<u64>,
    reported: BTreeSet<String>,
}

impl Checker {
    fn fail(&mut self, invariant: &'static str, at: Timestamp, detail: String) {
        if self.violations.len() < 50 {
            self.violations.push(Violation {
                invariant,
                at,
                detail,
            });
        }
    }

    /// Checks a commit just applied to `store`.
    pub fn after_commit(&mut self, now: Timestamp, store: &MemStore, writes: &[Write]) {
        let refused = store.violations();
        if refused.len() > self.store_violations {
            for v in &refused[self.store_violations..] {
                self.fail("S1", now, v.clone());
            }
            self.store_violations = refused.len();
        }
        let mut touched = Vec::new();
        for w in writes {
            match w {
                Write::Turn(t) => {
                    self.committed.insert(t.id);
                    if let Some(p) = &t.prompt_id {
                        self.prompt_ids.insert(p.clone(), t.id);
                    }
                    touched.push(t.id);
                }
                Write::Claim { turn_id, .. } => touched.push(*turn_id),
                Write::Task(t) => {
                    if t.state != TaskState::Idle {
                        self.left_idle.insert(t.id);
                    } else if self.left_idle.contains(&t.id) {
                        self.fail("S5", now, format!("task {} went back to idle", t.id));
                    }
                }
                _ => {}
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for t in touched.into_iter().filter_map(|id| store.turn(id)) {
            let Some(uuid) = &t.entry_uuid else { continue };
            self.entries.insert(uuid.clone(), t.id);
            let Some(truth) = self.lines.get(uuid).cloned() else {
                continue; // not a turn line the sessions know of (cannot happen: S3 below)
            };
            if normalise_display(&t.text) != truth.text {
                self.fail(
                    "S1",
                    now,
                    format!(
                        "turn {} claimed by entry {uuid} has another turn's text: {:?} vs {:?}",
                        t.id, t.text, truth.text
                    ),
                );
            }
            if t.timestamp != truth.timestamp || t.timestamp_source != TimestampSource::Jsonl {
                self.fail(
                    "S4",
                    now,
                    format!(
                        "turn {} of entry {uuid} is at {} ({:?}), the transcript says {}",
                        t.id, t.timestamp, t.timestamp_source, truth.timestamp
                    ),
                );
            }
            let pane = store
                .agents()
                .find(|a| a.id == t.agent_id)
                .and_then(|a| a.tmux_pane.clone());
            if pane.as_ref().is_some_and(|p| *p != truth.pane) {
                self.fail(
                    "S3",
                    now,
                    format!(
                        "turn {} of pane {}'s entry {uuid} went to agent {} of pane {:?}",
                        t.id, truth.pane, t.agent_id, pane
                    ),
                );
            }
        }
        self.check_false_idle(now, store);
        self.check_not_ended_while_working(now, store);
        self.check_one_card_per_pane(now, store);
    }

    /// D1: one card per pane: no two live agents hold one pane at once (an agent its
    /// process made before its session was known is joined by that session, never left
    /// beside it). Told once per pane.
    fn check_one_card_per_pane(&mut self, now: Timestamp, store: &MemStore) {
        let mut live_in: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for a in store.agents().filter(|a| !a.ended) {
            if let Some(p) = a.tmux_pane.as_deref() {
                live_in.entry(p).or_default().push(a.id);
            }
        }
        let twice: Vec<(String, Vec<u64>)> = live_in
            .into_iter()
            .filter(|(_, ids)| ids.len() > 1)
            .map(|(p, ids)| (p.to_string(), ids))
            .collect();
        for (pane, ids) in twice {
            if self.reported.insert(format!("D1 {pane}")) {
                self.fail(
                    "D1",
                    now,
                    format!("pane {pane} is held by live agents {ids:?}: one agent shown twice"),
                );
            }
        }
    }

    /// R1: an agent whose process lives and works is never shown ended.
    fn check_not_ended_while_working(&mut self, now: Timestamp, store: &MemStore) {
        let working: Vec<String> = self
            .phases
            .iter()
            .filter(|(p, ph)| ph.activity == Activity::Running && !self.gone.contains_key(*p))
            .map(|(p, _)| p.clone())
            .collect();
        for pane in working {
            if activity_of_pane(store, &pane) == Some(Activity::Ended) {
                let key = format!("ended {pane} {}", self.phases[&pane].since);
                if self.reported.insert(key) {
                    let detail = format!(
                        "pane {pane} shown ended while its session works; {}",
                        tasks_of_pane(store, &pane)
                    );
                    self.fail("R1", now, detail);
                }
            }
        }
    }

    /// The server crashed: a hook it answered but had not yet committed is gone with it. A
    /// pane stays named only if the store ties it to an agent (hooks are answered at once, and
    /// a pane is known from hooks alone; the next hook of its session names it again).
    pub fn server_crashed(&mut self, store: &MemStore) {
        let known: BTreeSet<String> = store.agents().filter_map(|a| a.tmux_pane.clone()).collect();
        self.named_panes.retain(|p| known.contains(p));
        // What the reaper saw of a pane is not kept across a restart: a pane that went while
        // its agent was not yet ended is only ended by the silence limit now (R2 skips it).
        let ended: BTreeSet<String> = self
            .gone
            .keys()
            .filter(|p| activity_of_pane(store, p) == Some(Activity::Ended))
            .cloned()
            .collect();
        self.gone.retain(|p, _| ended.contains(p));
        // The restarted server knows a pane's process only from what was committed: it must
        // see it alive again before its end is the reaper's to notice.
        self.seen_alive.clear();
    }

    /// A1: no agent is idle while its session works on a prompt the server has seen.
    fn check_false_idle(&mut self, now: Timestamp, store: &MemStore) {
        let phases: Vec<(String, Phase)> = self
            .phases
            .iter()
            .filter(|(_, p)| p.activity == Activity::Running)
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        for (pane, phase) in phases {
            let Some(prompt) = phase.prompt_uuid.clone() else {
                continue;
            };
            // Seen means the server holds the prompt's turn in the pane's agent. A new session
            // read from its transcript before any hook named its pane cannot be tied to the
            // pane yet; the pane's busy screen must bring the agent back (A2's business).
            let turn = self.entries.get(&prompt).or_else(|| {
                phase
                    .prompt_id
                    .as_ref()
                    .and_then(|p| self.prompt_ids.get(p))
            });
            let seen = turn.and_then(|&id| store.turn(id)).is_some_and(|t| {
                store
                    .agents()
                    .any(|a| a.id == t.agent_id && a.tmux_pane.as_deref() == Some(pane.as_str()))
            });
            if !seen || self.reported.contains(&prompt) {
                continue;
            }
            if activity_of_pane(store, &pane) == Some(Activity::Idle) {
                self.reported.insert(prompt.clone());
                self.fail(
                    "A1",
                    now,
                    format!(
                        "pane {pane} shown idle while its session works on prompt {prompt}; {}",
                        tasks_of_pane(store, &pane)
                    ),
                );
            }
        }
    }

    /// A2: a session idle for more than `bound_ms` must not be shown running.
    pub fn check_stuck(&mut self, now: Timestamp, store: &MemStore, bound_ms: i64) {
        let late: Vec<String> = self
            .phases
            .iter()
            .filter(|(_, p)| {
                p.activity == Activity::Idle && now.millis() - p.since.millis() > bound_ms
            })
            .map(|(k, _)| k.clone())
            .collect();
        for pane in late {
            if activity_of_pane(store, &pane) == Some(Activity::Running) {
                let since = self.phases[&pane].since;
                let key = format!("stuck {pane} {since}");
                if self.reported.insert(key) {
                    self.fail(
                        "A2",
                        now,
                        format!("pane {pane} idle since {since} is still shown running"),
                    );
                }
            }
        }
    }

    /// R2: an agent whose pane closed, or whose process is gone, is not shown running once
    /// `bound_ms` have passed since it went and the store took writes again (`store_back`:
    /// the end of the last outage; nothing can be committed while the store is down).
    pub fn check_gone(
        &mut self,
        now: Timestamp,
        store: &MemStore,
        bound_ms: i64,
        store_back: Option<Timestamp>,
    ) {
        let late: Vec<(String, Timestamp)> = self
            .gone
            .iter()
            .filter(|(_, at)| {
                now.millis() - (**at).max(store_back.unwrap_or(**at)).millis() > bound_ms
            })
            .map(|(p, at)| (p.clone(), *at))
            .collect();
        for (pane, at) in late {
            if activity_of_pane(store, &pane) == Some(Activity::Running) {
                let key = format!("gone {pane} {at}");
                if self.reported.insert(key) {
                    self.fail(
                        "R2",
                        now,
                        format!("pane {pane} gone since {at} is still shown running"),
                    );
                }
            }
        }
    }

    /// C1 at the end: each text sent through a hub, typed as its answers promise. `typed` is
    /// every text typed into a pane, in order (pane, text).
    pub fn check_commands(&mut self, now: Timestamp, typed: &[(String, String)]) {
        let mut by_text: BTreeMap<(&str, &str), (usize, usize, Vec<String>)> = BTreeMap::new();
        for s in &self.sends {
            let e = by_text.entry((&s.pane, &s.text)).or_default();
            match promise(&s.answer) {
                Promise::Typed => {
                    e.0 += 1;
                    e.1 += 1;
                }
                Promise::AtMostOnce => e.1 += 1,
                Promise::NotTyped => {}
            }
            e.2.push(format!(
                "{} {} at {} answered {}",
                s.what,
                s.hub,
                s.at,
                s.answer
                    .as_ref()
                    .map_or("nothing".to_string(), |(st, b)| format!("{st} {b}"))
            ));
        }
        let mut problems = Vec::new();
        for ((pane, text), (least, most, answers)) in &by_text {
            let n = typed.iter().filter(|(p, t)| p == pane && t == text).count();
            if n < *least || n > *most {
                problems.push(format!(
                    "{text:?} sent to pane {pane} was typed {n} times; its sends: {}",
                    answers.join("; ")
                ));
            }
        }
        for p in problems {
            self.fail("C1", now, p);
        }
    }

    /// The end-of-run checks (L1, L2, S2, P1).
    pub fn finish(&mut self, now: Timestamp, store: &MemStore) {
        let by_entry: BTreeMap<&str, _> = store
            .turns()
            .filter_map(|t| t.entry_uuid.as_deref().map(|u| (u, t)))
            .collect();
        let ids: BTreeSet<u64> = store.turns().map(|t| t.id).collect();
        let lost: Vec<u64> = self.committed.difference(&ids).copied().collect();
        if !lost.is_empty() {
            self.fail("S2", now, format!("committed turns gone: {lost:?}"));
        }
        // X1: an agent ends as `stopped` only when the user asked Headspace to stop it.
        for a in store.agents() {
            if a.end_reason.as_deref() == Some("stopped") && !self.stopped.contains(&a.session_id) {
                self.fail(
                    "X1",
                    now,
                    format!(
                        "agent {} (session {}) ended as stopped, which nobody asked",
                        a.id, a.session_id
                    ),
                );
            }
        }
        let mut problems = Vec::new();
        for (uuid, line) in &self.lines {
            if !line.written {
                continue;
            }
            match by_entry.get(uuid.as_str()) {
                None => problems.push((
                    "L1",
                    format!("transcript line {uuid} ({:?}) has no turn", line.text),
                )),
                Some(turn) if !line.is_prompt => {
                    let prompt_task = by_entry.get(line.prompt_uuid.as_str()).map(|p| p.task_id);
                    if prompt_task.is_some_and(|pt| pt != turn.task_id) {
                        problems.push((
                            "L2",
                            format!(
                                "turn {} ({:?}) is in task {}, its prompt's turn in task {}",
                                turn.id,
                                line.text,
                                turn.task_id,
                                prompt_task.unwrap_or_default()
                            ),
                        ));
                    }
                }
                Some(_) => {}
            }
        }
        // P1: an agent tied to a pane (by a hook or by discovery) holds only that pane's
        // sessions' lines.
        let panes: BTreeMap<u64, &str> = store
            .agents()
            .filter_map(|a| Some((a.id, a.tmux_pane.as_deref()?)))
            .collect();
        for t in store.turns() {
            let (Some(uuid), Some(pane)) = (t.entry_uuid.as_deref(), panes.get(&t.agent_id)) else {
                continue;
            };
            if let Some(line) = self.lines.get(uuid).filter(|l| l.pane != *pane) {
                problems.push((
                    "P1",
                    format!(
                        "agent {} is tied to pane {pane} but holds line {uuid} of pane {}",
                        t.agent_id, line.pane
                    ),
                ));
            }
        }
        // No turn without a line that is one: a line the agent wrote as a prompt or a reply
        // (context a CLI injects, a signal or a tool call is never a turn).
        for t in store.turns() {
            let Some(uuid) = t.entry_uuid.as_deref() else {
                continue;
            };
            if !self.lines.contains_key(uuid) {
                problems.push((
                    "L1",
                    format!(
                        "turn {} ({:?}) was made of line {uuid}, which is no turn",
                        t.id,
                        t.text.chars().take(80).collect::<String>()
                    ),
                ));
            }
        }
        for t in store.turns().filter(|t| t.entry_uuid.is_none()) {
            problems.push((
                "L1",
                format!(
                    "hook-made turn {} ({:?}) was never claimed by a transcript entry",
                    t.id, t.text
                ),
            ));
        }
        // A pane no delivered hook ever named is unknown to the server: its session's turns
        // are kept (L1), but which pane shows them it cannot know.
        // A pane that went while the server was down, or before a crash let the reaper end its
        // agent, is out of the reaper's sight (see `server_crashed`).
        for (pane, phase) in self.phases.iter().filter(|(p, ph)| {
            self.named_panes.contains(*p)
                && (ph.activity != Activity::Ended || self.gone.contains_key(*p))
        }) {
            let shown = activity_of_pane(store, pane);
            if shown != Some(phase.activity) {
                problems.push((
                    "L2",
                    format!(
                        "pane {pane}: the session is {}, the server shows {}",
                        phase.activity.as_str(),
                        shown.map_or("no agent", |a| a.as_str())
                    ),
                ));
            }
        }
        for (inv, detail) in problems {
            self.fail(inv, now, detail);
        }
    }
}

/// E1: what each SSE client received (`crate::sse_client::Received`) against the sequenced
/// events, (position, name, data) in position order; one problem per client at most.
pub fn check_streams(
    expected: &[(u64, String, String)],
    clients: &[crate::sse_client::Received],
) -> Vec<String> {
    let mut out = Vec::new();
    for (n, c) in clients.iter().enumerate() {
        if let Some(g) = c.gaps.first() {
            out.push(format!("client {n} got a gap: {g}"));
            continue;
        }
        if let Some(w) = c.events.windows(2).find(|w| w[1].0 <= w[0].0) {
            out.push(format!(
                "client {n} got id {} after id {}: repeated or out of order",
                w[1].0, w[0].0
            ));
            continue;
        }
        let same = c
            .events
            .iter()
            .zip(expected)
            .take_while(|(a, b)| a == b)
            .count();
        if same < expected.len() || c.events.len() != expected.len() {
            out.push(format!(
                "client {n} ({} connections) got {} events, {} committed; the first difference, at the {}th: got {}, committed {}",
                c.connections,
                c.events.len(),
                expected.len(),
                same + 1,
                short(c.events.get(same)),
                short(expected.get(same)),
            ));
        }
    }
    out
}

/// An event for a failure's detail: its id, name and the start of its data.
fn short(e: Option<&(u64, String, String)>) -> String {
    match e {
        None => "nothing".into(),
        Some((id, name, data)) => {
            let data: String = data.chars().take(60).collect();
            format!("id {id} {name} {data}…")
        }
    }
}

/// The pane's agent's latest tasks, for a failure's detail.
fn tasks_of_pane(store: &MemStore, pane: &str) -> String {
    let Some(agent) = store
        .agents()
        .filter(|a| a.tmux_pane.as_deref() == Some(pane))
        .max_by_key(|a| (a.last_seen_at, a.id))
    else {
        return "no agent".into();
    };
    let mut tasks: Vec<_> = store.tasks().filter(|t| t.agent_id == agent.id).collect();
    tasks.sort_by_key(|t| (t.started_at, t.id));
    let shown: Vec<String> = tasks
        .iter()
        .rev()
        .take(3)
        .map(|t| {
            format!(
                "task {} {:?}/{:?} started {} hook end {:?}",
                t.id, t.state, t.transcript_state, t.started_at, t.hook_turn_end_at
            )
        })
        .collect();
    format!("agent {}: {}", agent.id, shown.join(", "))
}

/// The activity the store shows for the agent of a pane.
pub fn activity_of_pane(store: &MemStore, pane: &str) -> Option<Activity> {
    let agent = store
        .agents()
        .filter(|a| a.tmux_pane.as_deref() == Some(pane))
        .max_by_key(|a| (a.last_seen_at, a.id))?;
    let task = current_task(store.tasks().filter(|t| t.agent_id == agent.id));
    Some(agent_activity(agent, task))
}
