//! Commands to panes on another machine (docs/multi-machine.md, "Commands to panes"): where a
//! pane command runs (here, forwarded through the database, or refused because the machine
//! that holds the pane is offline), the words of the refusal, which rows an executor may
//! run, and what a server waiting on a forwarded command does at each look. The shell does
//! the reading, writing and waiting; every rule is here, without a clock: times come in as
//! arguments (the database's clock, so machines never compare their own clocks).

use crate::cluster::machines::{holder, MachinePresence};
use crate::engine::Config;
use crate::harness::planted::Bug;
use crate::Timestamp;

/// How long a forwarded command may wait to be taken by its machine: past this deadline it is
/// never run (`send`, `clear`, `interrupt` and `answer` alike).
pub const CLAIM_WITHIN_MS: i64 = 30_000;

/// How long, once taken, a forwarded command may run before the asking server stops waiting
/// for its result: longer than the longest local run (a question wizard's 20 s).
pub const RUN_WITHIN_MS: i64 = 30_000;

/// What can be asked of a pane on another machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaneCommandKind {
    /// Type text and press Enter (`POST …/send`).
    Send,
    /// Type `/clear` (`POST …/clear`).
    Clear,
    /// Press Escape (`POST …/interrupt`).
    Interrupt,
    /// Pick one option of the question the agent waits on (`{"option": N}`).
    Answer,
    /// Answer every question of a wizard (`{"answers": [...]}`).
    AnswerQuestions,
    /// Re-read the agent's transcripts (`POST …/reconcile`): the machine's core does it.
    Reconcile,
    /// An orchestration command on a project of the machine (`{"command", "project",
    /// "launch"?}`): the project's files and its runner live there.
    Orchestrate,
}

impl PaneCommandKind {
    /// Every kind, for tests and checks.
    pub const ALL: [PaneCommandKind; 7] = [
        PaneCommandKind::Send,
        PaneCommandKind::Clear,
        PaneCommandKind::Interrupt,
        PaneCommandKind::Answer,
        PaneCommandKind::AnswerQuestions,
        PaneCommandKind::Reconcile,
        PaneCommandKind::Orchestrate,
    ];

    /// The name stored in `pane_commands.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            PaneCommandKind::Send => "send",
            PaneCommandKind::Clear => "clear",
            PaneCommandKind::Interrupt => "interrupt",
            PaneCommandKind::Answer => "answer",
            PaneCommandKind::AnswerQuestions => "answer_questions",
            PaneCommandKind::Reconcile => "reconcile",
            PaneCommandKind::Orchestrate => "orchestrate",
        }
    }

    /// The kind a stored name names.
    pub fn parse(name: &str) -> Option<PaneCommandKind> {
        PaneCommandKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

/// Where a command row stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandState {
    /// Written, not yet taken.
    Pending,
    /// Taken by its machine's executor (it runs once: nothing takes a running row).
    Running,
    /// Run; its result is written.
    Done,
    /// Never to run: its machine was offline, or it was not taken before its deadline.
    Refused,
}

impl CommandState {
    /// The name stored in `pane_commands.state`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandState::Pending => "pending",
            CommandState::Running => "running",
            CommandState::Done => "done",
            CommandState::Refused => "refused",
        }
    }

    /// The state a stored name names.
    pub fn parse(name: &str) -> Option<CommandState> {
        [
            CommandState::Pending,
            CommandState::Running,
            CommandState::Done,
            CommandState::Refused,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// The error a server answers (503) for a command to a pane on an offline machine, last
/// heard from at `last_seen` (`None`: it never reported). An empty name is a row no machine
/// holds (a hub is asked of an agent no edge took).
pub fn offline_error(machine: &str, last_seen: Option<Timestamp>) -> String {
    match last_seen {
        _ if machine.is_empty() => {
            "no machine holds this agent's pane (its row names none)".to_string()
        }
        Some(at) => format!("machine {machine} is offline since {at}"),
        None => format!("machine {machine} is offline (it never reported to this database)"),
    }
}

/// Where a command to an agent's pane runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaneRoute {
    /// On this server: the pane is on this machine (or the store keeps no machines).
    Here,
    /// On another machine, through the database.
    Forward {
        /// The machine that holds the pane.
        machine: String,
    },
    /// Nowhere: the machine that holds the pane is offline. Answered at once with a 503.
    Offline {
        /// The machine that holds the pane.
        machine: String,
        /// The error the 503 carries ([`offline_error`]).
        error: String,
    },
}

/// Where a command to an agent runs: `agent_machine` is the agent row's machine (empty when
/// the store keeps none or no machine took the row yet: then this server's, if it is a
/// machine, see [`holder`]), `presence` what the machines list says of the holder when it is
/// another one ([`crate::cluster::machines::presence`]). A server that is no machine (a hub: its own
/// name is empty) never types into a pane itself.
pub fn route(
    agent_machine: &str,
    this_machine: &str,
    presence: Option<&MachinePresence>,
) -> PaneRoute {
    let machine = holder(agent_machine, this_machine);
    if !machine.is_empty() && machine == this_machine {
        return PaneRoute::Here;
    }
    match presence {
        Some(p) if p.online && !machine.is_empty() => PaneRoute::Forward {
            machine: machine.to_string(),
        },
        _ => PaneRoute::Offline {
            error: offline_error(machine, presence.and_then(|p| p.last_seen)),
            machine: machine.to_string(),
        },
    }
}

/// What a server waiting on a forwarded command does at a look at its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AwaitStep {
    /// The result is there: answer with it.
    Answer,
    /// Not yet: look again a little later.
    LookAgain,
    /// Still not taken at its deadline: refuse the row (if it is still pending, it then can
    /// never run) and answer that the machine did not take it.
    Withdraw,
    /// Taken but no result within [`RUN_WITHIN_MS`]: stop waiting (it may still finish).
    GiveUp,
}

/// What to do with a forwarded command in `state`, `past_deadline_ms` after its deadline
/// (negative before it), on the database's clock: the same clock the claim's deadline is
/// checked on, so a row withdrawn here is one no executor could still take.
pub fn await_step(config: &Config, state: CommandState, past_deadline_ms: i64) -> AwaitStep {
    if state == CommandState::Running && config.is_planted(Bug::RunningAsNotTaken) {
        return AwaitStep::Answer;
    }
    match state {
        CommandState::Done | CommandState::Refused => AwaitStep::Answer,
        CommandState::Pending if past_deadline_ms >= 0 => AwaitStep::Withdraw,
        CommandState::Running if past_deadline_ms >= RUN_WITHIN_MS => AwaitStep::GiveUp,
        CommandState::Pending | CommandState::Running => AwaitStep::LookAgain,
    }
}

/// The error (504) for a command its machine did not take before its deadline.
pub fn not_taken_error(machine: &str) -> String {
    format!(
        "machine {machine} did not take the command within {} s; it will not run",
        CLAIM_WITHIN_MS / 1000
    )
}

/// The error (504) for a command taken but with no result in time.
pub fn no_result_error(machine: &str) -> String {
    format!(
        "machine {machine} took the command but sent no result within {} s",
        (CLAIM_WITHIN_MS + RUN_WITHIN_MS) / 1000
    )
}

/// The error (504) for a command written for `machine` whose result could not be read
/// (`why`: the database went away while the asking server waited): it may have run, so the
/// answer must not say it failed — a user who retries could type it twice.
pub fn unsure_error(machine: &str, why: &str) -> String {
    format!("the command was written for machine {machine}, but its result could not be read ({why}): it may have run")
}

/// What the server that took the user's request signs when it forwards a command (its exact
/// JSON text is signed, after [`SIGNED_PREFIX`]), so that a row a database client wrote
/// itself is never run: the database is shared by every machine, and a row alone is no proof
/// that a user asked for anything (docs/multi-machine.md, "Signed commands").
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Envelope {
    /// The machine that must run it.
    pub machine: String,
    /// The agent whose pane it is for.
    pub agent_id: u64,
    /// What to do ([`PaneCommandKind::as_str`]).
    pub kind: String,
    /// The request's arguments: what the executor runs, never the row's own copy.
    pub body: serde_json::Value,
    /// When it was signed, on the signer's clock (milliseconds since the epoch).
    pub issued_at_ms: i64,
    /// Random, once per command: a copied row is a replay, refused.
    pub nonce: String,
}

/// What goes before an envelope's text in the signed message: a signature made for anything
/// else never verifies as a pane command.
pub const SIGNED_PREFIX: &[u8] = b"headspace pane command v1\n";

/// How far two machines' clocks may disagree.
pub const CLOCK_SKEW_MS: i64 = 60_000;

/// How long an executor remembers a nonce: past this an envelope is too old to run anyway.
pub const NONCE_MEMORY_MS: i64 = CLAIM_WITHIN_MS + 2 * CLOCK_SKEW_MS;

/// Whether an executor on `this_machine` may run a row whose signature verified and whose
/// envelope is `envelope`, at `now_ms` on its clock; `nonce_seen` says whether it ran (or
/// refused) an envelope with that nonce already. `Err` says why not.
pub fn admit(
    envelope: &Envelope,
    row_agent: u64,
    row_kind: PaneCommandKind,
    this_machine: &str,
    now_ms: i64,
    nonce_seen: bool,
) -> Result<(), String> {
    if envelope.machine != this_machine {
        return Err(format!(
            "signed for machine {:?}, not this one ({this_machine:?})",
            envelope.machine
        ));
    }
    if envelope.agent_id != row_agent || envelope.kind != row_kind.as_str() {
        return Err("the row's agent or kind is not the signed one".into());
    }
    let age = now_ms - envelope.issued_at_ms;
    if !(-CLOCK_SKEW_MS..=CLAIM_WITHIN_MS + CLOCK_SKEW_MS).contains(&age) {
        return Err(format!(
            "signed {} s from now: too old or from the future",
            -age / 1000
        ));
    }
    if envelope.nonce.len() < 16 {
        return Err("its nonce is too short".into());
    }
    if nonce_seen {
        return Err("a copy of a command already taken (its nonce was seen)".into());
    }
    Ok(())
}

#[cfg(test)]
mod envelope_tests {
    use super::*;

    fn envelope() -> Envelope {
        Envelope {
            machine: "B".into(),
            agent_id: 7,
            kind: "send".into(),
            body: serde_json::json!({"text": "ls"}),
            issued_at_ms: 1_000_000,
            nonce: "0123456789abcdef0123".into(),
        }
    }

    #[test]
    fn only_a_fresh_unseen_envelope_for_this_machine_row_agent_and_kind_runs() {
        let e = envelope();
        let send = PaneCommandKind::Send;
        assert_eq!(admit(&e, 7, send, "B", 1_000_500, false), Ok(()));
        assert!(
            admit(&e, 7, send, "C", 1_000_500, false).is_err(),
            "another machine's"
        );
        assert!(
            admit(&e, 8, send, "B", 1_000_500, false).is_err(),
            "another agent's row"
        );
        assert!(admit(&e, 7, PaneCommandKind::Interrupt, "B", 1_000_500, false).is_err());
        assert!(
            admit(&e, 7, send, "B", 1_000_500, true).is_err(),
            "a replay"
        );
        let late = 1_000_000 + CLAIM_WITHIN_MS + CLOCK_SKEW_MS + 1;
        assert!(admit(&e, 7, send, "B", late, false).is_err(), "too old");
        assert!(admit(&e, 7, send, "B", 1_000_000 - CLOCK_SKEW_MS - 1, false).is_err());
        let mut short = e.clone();
        short.nonce = "1".into();
        assert!(admit(&short, 7, send, "B", 1_000_500, false).is_err());
    }
}
