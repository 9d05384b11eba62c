//! # headspace-core — the sans-IO turn-capture engine
//!
//! Headspace shows every Claude Code agent's whole conversation and promises that no turn is
//! ever lost or shown twice. This crate is where that promise is kept. It is a deterministic
//! state machine: it does no I/O, reads no clock, draws no randomness, and iterates no hash
//! map where order could leak into its output. Same inputs, same commands, always.
//!
//! ## Inputs ([`Input`])
//!
//! | input | what happened |
//! |---|---|
//! | `Hook { event, body }` | a Claude Code hook arrived (the route's event wins over `hook_event_name`) |
//! | `Transcript { path, offset, data, read }` | bytes of `projects/<dir>/<session>.jsonl` at an offset |
//! | `TranscriptReset { path }` | that file shrank or was replaced |
//! | `Pane { pane, text }` | a tmux pane capture |
//! | `Tick` | time passed |
//! | `Reconcile { agent, request }` | read an agent's transcripts to the end, re-read them from byte 0 against its stored rows (asked with `LoadAgents`), recreate lost turns and report |
//! | `Sent { agent, text }` | text is about to be typed into the agent's pane: it counts as running until the prompt it causes arrives, or `Config::send_timeout_ms` |
//! | `Restore(snapshot)` | rebuild from the store after a restart |
//! | `AgentsLoaded(snapshot)` | the rows asked for by `LoadAgents` |
//!
//! ## Commands ([`Command`])
//!
//! | command | what the shell does | what comes back |
//! |---|---|---|
//! | `Store(Write::Agent / Task / Turn)` | upsert the row (idempotent by id; one turn per entry uuid) | — |
//! | `Store(Write::Claim)` | an entry claimed a hook turn: set its uuid, transcript timestamp, task | — |
//! | `Store(Write::HookMatched)` | a late hook matched an entry's turn: remember its fingerprint | — |
//! | `Store(Write::Rewound)` | the CLI took its conversation back: mark those turns rewound | — |
//! | `Store(Write::MergeAgent { from, into })` | a transcript-made agent turned out to be a hook-made one: move its tasks and turns, remove it | — |
//! | `Store(Write::Offset)` | save how far a file is read (emitted after the writes of its lines) | — |
//! | `Store(Write::Step / StepsInterrupted / Usage)` | fold a tool call into its step, end pending steps at an interrupt, fold a message's usage ([`usage::step`], [`usage::sum`]) | — |
//! | `Publish(Event)` | send an SSE event (`turn_created`, `turn_updated`, `state_changed`, …) | — |
//! | `ReadTranscript { path, from, read }` | read the file from `from` to its end | `Input::Transcript { read: Some(read), .. }` |
//! | `GapDetected { agent_id }` | count it (the watchdog saw output no turn followed; a read was asked) | — |
//! | `LoadAgents { ids }` | after the writes before it are committed, load these agents' rows (evicted ones, or one a forced reconcile checks) | `Input::AgentsLoaded` (the core holds inputs about evicted ones until then) |
//! | `Reply { request, reply }` | answer the request | — |
//!
//! ## How to drive it
//!
//! ```
//! use headspace_core::{kind::AgentKind, Command, Config, Core, Input, Timestamp};
//! let mut core = Core::new(Config::new("/home/u/.claude"));
//! let now = Timestamp::parse_rfc3339("2026-02-18T10:00:00Z").unwrap();
//! core.handle(now, Input::Hook {
//!     agent: AgentKind::Claude,
//!     event: Some("UserPromptSubmit".into()),
//!     body: br#"{"session_id":"s1","prompt":"fix the build","tmux_pane":"%3"}"#.to_vec(),
//! });
//! while let Some(cmd) = core.poll_command() {
//!     // carry out each command in order: store writes, events, reads, replies
//!     let _ = cmd;
//! }
//! // While it works it stays in memory: no timer yet.
//! assert_eq!(core.poll_timeout(), None);
//! let done = now.add_millis(5_000);
//! core.handle(done, Input::Hook {
//!     agent: AgentKind::Claude,
//!     event: Some("Stop".into()),
//!     body: br#"{"session_id":"s1","tmux_pane":"%3"}"#.to_vec(),
//! });
//! while core.poll_command().is_some() {}
//! // Its turn ended: it wants a tick when the agent may leave memory (30 quiet minutes).
//! assert_eq!(core.poll_timeout(), Some(done.add_millis(30 * 60_000)));
//! ```
//!
//! 1. Call [`Core::handle`] with the current time and one input.
//! 2. Drain [`Core::poll_command`] until it returns `None`, carrying out each command in
//!    order. Writes of one agent must be applied in the order given; each is idempotent, so a
//!    retry after an unknown outcome is safe. Publish an event only after the writes before
//!    it are committed.
//! 3. Feed the result of a `ReadTranscript` back as an input, then drain again.
//! 4. Call `handle(now, Input::Tick)` once [`Core::poll_timeout`]'s time has come.
//!    [`Core::next_timer`] says which agent and why ([`TimerReason`]): new pane output
//!    becomes a gap (`Config::gap_threshold_ms` after it appeared), a send stops counting
//!    as running (`Config::send_timeout_ms`), or an agent may leave memory
//!    (`Config::evict_after_ms`).
//!
//! A hook body is checked with [`kind::AgentKind::parse_hook`] (`kind_readers`) by the shell (to answer a malformed
//! one with 400 at once) and parsed again by the core from the same bytes: the bytes, not
//! the parsed form, are the input, so a trace records exactly what arrived and a replay
//! parses it with the same function.
//!
//! Time only moves forward: an input stamped earlier than one already seen is taken as
//! happening at the latest time seen.
//!
//! ## The rules it keeps
//!
//! - **A turn is never rolled back by a state change.** Turn writes come first; a transition
//!   the table rejects is a WARN (`… — turn {id} preserved`) and leaves the state unchanged.
//! - **Dedup on structure.** A transcript line's `uuid` is a turn's durable key. A hook-made
//!   turn is provisional until an entry claims it, by `prompt_id` / `tool_use_id` when both
//!   carry one, else the first unclaimed one of the same kind with the same full normalised
//!   text ([`hook::matching`]). A hook arriving after its entry adds nothing. A duplicate hook
//!   (same body) counts once. Unclaimed provisional turns are kept.
//! - **The transcript is the authority for state.** Each task folds its turns in transcript
//!   order; unconfirmed hook news (provisional turns, a Stop) is shown on top until the
//!   transcript confirms or overtakes it. A hook emitted before a task started, or from
//!   another session, never changes that task (sm#232).
//! - **Offsets move only past complete lines**; re-reads are skipped by uuid.
//! - **Bounded memory per file, and odd lines still become turns.** A line longer than
//!   [`Config::max_line_bytes`] keeps only its head and its last 64 KiB ([`transcript::framing`]); its
//!   turn is made from them (`transcript::truncated`), its text marked as truncated. NUL characters
//!   and unpaired surrogate escapes, which the store or the JSON parser would refuse, become
//!   U+FFFD in entries and hooks alike (`transcript::mend`); each is logged at WARN with the line's
//!   uuid.
//! - **Restart-safe.** Everything decisions depend on is in the store; [`Input::Restore`]
//!   rebuilds it exactly, so where a crash happens does not change the result.
//! - **Steps and usage are folded by the store, not kept here.** Each tool hook and each
//!   `tool_use` / `tool_result` / `usage` a line holds becomes a write keyed by tool-use id or
//!   message id, which every store folds into its row by one rule ([`usage::step::merge`],
//!   [`usage::sum::merge`]): idempotent, the transcript above hooks, so a re-read, a retry, a
//!   restart or a lost hook leaves each step once with its outcome and each message counted
//!   once.
//!
//! ## Where things are
//!
//! | folder | concern |
//! |---|---|
//! | [`engine`] | the state machine itself: [`Core`], its inputs handled one by one |
//! | [`io`], [`model`] | what crosses the boundary (inputs, commands, writes, events) and the rows kept |
//! | [`kind`] | agent kinds: their names, their transcripts' paths and sessions |
//! | [`kind_readers`] | the seam for agent kinds: all that is specific to one CLI's hooks, lines, screen and process |
//! | [`hook`] | hook payloads, and matching hook-made turns with transcript entries |
//! | [`transcript`] | framing, reading and mending transcript lines; the audit of lines against turns |
//! | [`task`] | task states and transitions, intents, questions, when an agent counts as idle |
//! | [`pane`] | reading a screen, answering a dialog, typing rules, finding an agent's pane |
//! | [`usage`] | tool calls (steps), tokens and their cost, and how a store folds them |
//! | [`view`] | what the API and the page show: the card, its activity, notices, event payloads |
//! | [`store`] | the in-memory store, and what is kept while the database is away |
//! | [`cluster`] | many machines on one database: liveness, projects, pane commands, shared events |
//! | [`access`] | who may call the server, checked before any route runs |
//! | [`orchestration`] | the specflow runner's state machine |
//! | [`harness`] | the trace format, replay, and the bugs the simulation plants |
//!
//! ## The second machine: orchestration
//!
//! [`orchestration::Orchestrator`] has the same shape for the specflow runner: the shell
//! feeds [`orchestration::Input`]s (files read, a workflow looked up — its agent's activity
//! mapped by the core —, a spawn's outcome, the helper's answer, a user command) and carries
//! out the `#[must_use]` [`orchestration::Effect`]s in order (lock, read, write, spawn a step
//! with its prompt, kill, ask the helper, log the decision, schedule the wake-up). An effect
//! that asks for an answer ends its drain; the answer is fed back and the drain goes on. The
//! full table and drain rule are in [`orchestration`]'s documentation.

#![warn(missing_docs)]

pub mod access;
pub mod cluster;
pub mod engine;
pub mod harness;
pub mod hook;
pub mod io;
pub mod kind;
pub mod kind_readers;
pub mod launch;
pub mod model;
pub mod orchestration;
pub mod pane;
pub mod store;
pub mod task;
pub(crate) mod time;
pub mod transcript;
pub mod usage;
pub mod view;

pub use engine::{Config, Core, Timer, TimerReason};
pub use io::{Command, Event, Input, Reply, Write};
pub use task::intent::{Actor, Intent};
pub use task::state::TaskState;
pub use time::Timestamp;
pub use view::activity::Activity;
pub use view::event_data::EventData;
