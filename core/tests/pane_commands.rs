//! Commands to panes on another machine: where one runs, the offline refusal's words, the
//! deadline an executor keeps, and what a waiting server does at each look — without tmux,
//! PostgreSQL or a clock.

use headspace_core::cluster::machines::{presence, OFFLINE_AFTER_MS};
use headspace_core::cluster::pane_commands::{
    await_step, route, AwaitStep, CommandState, PaneCommandKind, PaneRoute, CLAIM_WITHIN_MS,
    RUN_WITHIN_MS,
};
use headspace_core::{Config, Timestamp};

/// Machine `name` as the machines list reports it to server "a".
fn reported(name: &str, online: bool) -> headspace_core::cluster::machines::MachinePresence {
    let at = Timestamp::parse_rfc3339("2026-11-24T10:00:00Z").unwrap();
    presence(name, "a", Some((online, at)))
}

#[test]
fn a_pane_on_this_machine_or_on_no_machine_is_typed_into_here() {
    assert_eq!(
        route("a", "a", Some(&reported("a", false))),
        PaneRoute::Here
    );
    // A row no machine took yet (from before machines existed) is this server's.
    assert_eq!(route("", "a", None), PaneRoute::Here);
}

#[test]
fn a_pane_on_an_online_machine_is_forwarded_to_it() {
    assert_eq!(
        route("b", "a", Some(&reported("b", true))),
        PaneRoute::Forward {
            machine: "b".into()
        }
    );
}

#[test]
fn a_machine_is_offline_from_fifteen_seconds_after_its_heartbeat() {
    assert_eq!(OFFLINE_AFTER_MS, 15_000);
    match route("b", "a", Some(&reported("b", false))) {
        PaneRoute::Offline { machine, error } => {
            assert_eq!(machine, "b");
            assert_eq!(error, "machine b is offline since 2026-11-24T10:00:00.000Z");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_machine_that_never_reported_is_offline() {
    match route("ghost", "a", Some(&presence("ghost", "a", None))) {
        PaneRoute::Offline { error, .. } => assert_eq!(
            error,
            "machine ghost is offline (it never reported to this database)"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hub_never_types_into_a_pane_itself() {
    // A hub is no machine (its name is empty): a row that names none is no one's to type
    // into, never the hub's own tmux.
    match route("", "", Some(&presence("", "", None))) {
        PaneRoute::Offline { error, .. } => {
            assert_eq!(
                error,
                "no machine holds this agent's pane (its row names none)"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        route(
            "b",
            "",
            Some(&presence("b", "", Some((true, Timestamp(0)))))
        ),
        PaneRoute::Forward {
            machine: "b".into()
        }
    );
}

#[test]
fn a_waiting_server_answers_withdraws_a_row_not_taken_and_gives_up_on_one_without_result() {
    // The times are how far past the row's deadline the database's clock is.
    let config = Config::new("/c");
    let await_step = |state, past| await_step(&config, state, past);
    let before = -CLAIM_WITHIN_MS;
    for done in [CommandState::Done, CommandState::Refused] {
        assert_eq!(await_step(done, before), AwaitStep::Answer);
        assert_eq!(await_step(done, 10 * RUN_WITHIN_MS), AwaitStep::Answer);
    }
    assert_eq!(
        await_step(CommandState::Pending, before),
        AwaitStep::LookAgain
    );
    assert_eq!(await_step(CommandState::Pending, -1), AwaitStep::LookAgain);
    assert_eq!(await_step(CommandState::Pending, 0), AwaitStep::Withdraw);
    // A row taken just before its deadline still gets its run's time.
    assert_eq!(await_step(CommandState::Running, 1), AwaitStep::LookAgain);
    assert_eq!(
        await_step(CommandState::Running, RUN_WITHIN_MS - 1),
        AwaitStep::LookAgain
    );
    assert_eq!(
        await_step(CommandState::Running, RUN_WITHIN_MS),
        AwaitStep::GiveUp
    );
}

#[test]
fn kinds_and_states_keep_their_stored_names() {
    let names: Vec<&str> = PaneCommandKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "send",
            "clear",
            "interrupt",
            "answer",
            "answer_questions",
            "reconcile",
            "orchestrate"
        ]
    );
    for k in PaneCommandKind::ALL {
        assert_eq!(PaneCommandKind::parse(k.as_str()), Some(k));
    }
    assert_eq!(PaneCommandKind::parse("wait"), None);
    for s in ["pending", "running", "done", "refused"] {
        assert_eq!(CommandState::parse(s).map(CommandState::as_str), Some(s));
    }
    assert_eq!(CommandState::parse("lost"), None);
}
