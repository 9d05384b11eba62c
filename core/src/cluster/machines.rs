//! Machines of a shared database (issue 21, docs/multi-machine.md): when a machine counts as
//! online, and what an agent's card shows while its machine does not report.
//!
//! A machine says it lives every few seconds (its heartbeat); one not heard from for
//! [`OFFLINE_AFTER_MS`] is offline. Nothing is known of its agents then: a card must not go
//! on saying "running" or "idle" from the last thing it heard, so it says `unknown`. An
//! ended agent stays ended (its end is a fact, not a guess).

use crate::time::Timestamp;
use crate::view::activity::Activity;
use crate::view::shown::Shown;
use serde_json::{json, Value};

/// How often a machine says it lives.
pub const HEARTBEAT_EVERY_MS: i64 = 5_000;

/// How long a machine may go without a heartbeat before it is offline (three heartbeats
/// missed).
pub const OFFLINE_AFTER_MS: i64 = 3 * HEARTBEAT_EVERY_MS;

/// The activity a card shows for an agent whose machine is offline.
pub const UNKNOWN_ACTIVITY: &str = "unknown";

/// True while a machine whose last heartbeat was at `heartbeat_at_ms` counts as online at
/// `now_ms` (both epoch milliseconds, read from one clock): its heartbeat is younger than
/// [`OFFLINE_AFTER_MS`]. A heartbeat ahead of `now_ms` (clocks apart) counts as fresh.
pub fn is_online(heartbeat_at_ms: i64, now_ms: i64) -> bool {
    now_ms.saturating_sub(heartbeat_at_ms) < OFFLINE_AFTER_MS
}

/// What is known of an agent's machine when its card is made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachinePresence {
    /// The machine's name.
    pub name: String,
    /// Whether it reports (see [`is_online`]).
    pub online: bool,
    /// Its last heartbeat, when one is known.
    pub last_seen: Option<Timestamp>,
}

/// The machine an agent's row names, as the server named `own` reads it: an empty name (one
/// process with no machines, or a row from before machines) is the server's own.
pub fn holder<'a>(row_machine: &'a str, own: &'a str) -> &'a str {
    if row_machine.is_empty() {
        own
    } else {
        row_machine
    }
}

/// What is known of machine `name` (a [`holder`]) by the server named `own`, given what the
/// machines list says of it (`reported`: online by [`is_online`], and its last heartbeat;
/// `None`: it never reported). A server's own machine is online: the process answering is
/// the one holding its agents. A hub is no machine (its name is empty): nothing it is asked
/// of is its own.
pub fn presence(name: &str, own: &str, reported: Option<(bool, Timestamp)>) -> MachinePresence {
    MachinePresence {
        name: name.to_string(),
        online: (!own.is_empty() && name == own) || reported.is_some_and(|(online, _)| online),
        last_seen: reported.map(|(_, at)| at),
    }
}

/// The activity a card shows for an agent doing `activity` on a machine `online` or not:
/// `activity` itself while the machine reports or once the agent ended, else
/// [`UNKNOWN_ACTIVITY`].
pub fn shown_activity(activity: Activity, online: bool) -> &'static str {
    if online || activity == Activity::Ended {
        activity.as_str()
    } else {
        UNKNOWN_ACTIVITY
    }
}

/// Adds the machine to an agent's `card` (`machine`, `machine_online`,
/// `machine_last_seen`) and, while the machine is offline, shows its activity as
/// [`shown_activity`] says, with no current step (`now` null): nothing stale.
pub fn add_machine(card: &mut Value, activity: Activity, machine: &MachinePresence) {
    let Some(o) = card.as_object_mut() else {
        return;
    };
    o.insert("machine".into(), json!(machine.name));
    o.insert("machine_online".into(), json!(machine.online));
    o.insert("machine_last_seen".into(), json!(machine.last_seen));
    if !machine.online {
        o.insert("activity".into(), json!(shown_activity(activity, false)));
        o.insert("shown".into(), json!(Shown::offline(activity).as_str()));
        if o.contains_key("now") {
            o.insert("now".into(), Value::Null);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        add_machine, holder, is_online, presence, shown_activity, MachinePresence, OFFLINE_AFTER_MS,
    };
    use crate::time::Timestamp;
    use crate::view::activity::Activity;
    use serde_json::json;

    #[test]
    fn a_machine_is_offline_once_its_heartbeat_is_fifteen_seconds_old() {
        let beat = 1_000_000;
        assert!(is_online(beat, beat));
        assert!(is_online(beat, beat + 14_999));
        assert!(!is_online(beat, beat + OFFLINE_AFTER_MS));
        assert!(!is_online(beat, beat + 60_000));
        // Clocks a little apart: a heartbeat "from the future" is fresh, not offline.
        assert!(is_online(beat + 2_000, beat));
        assert!(!is_online(i64::MIN, i64::MAX), "no overflow");
    }

    #[test]
    fn an_offline_machine_shows_unknown_never_a_stale_activity_and_ended_stays_ended() {
        for a in [Activity::Running, Activity::Idle, Activity::Waiting] {
            assert_eq!(shown_activity(a, false), "unknown", "{a:?}");
            assert_eq!(shown_activity(a, true), a.as_str());
        }
        assert_eq!(shown_activity(Activity::Ended, false), "ended");
    }

    #[test]
    fn the_card_carries_its_machine_and_loses_its_stale_step_while_offline() {
        let card = json!({"id": 1, "activity": "running", "now": {"tool": "Bash"}});
        let online = MachinePresence {
            name: "laptop".into(),
            online: true,
            last_seen: Some(Timestamp(5_000)),
        };
        let mut c = card.clone();
        add_machine(&mut c, Activity::Running, &online);
        assert_eq!(c["machine"], "laptop");
        assert_eq!(c["machine_online"], true);
        assert_eq!(c["activity"], "running");
        assert_eq!(c["now"]["tool"], "Bash");
        assert!(c["machine_last_seen"].is_string(), "{c}");

        let offline = MachinePresence {
            online: false,
            ..online
        };
        let mut c = card;
        add_machine(&mut c, Activity::Running, &offline);
        assert_eq!(c["machine_online"], false);
        assert_eq!(c["activity"], "unknown");
        assert_eq!(c["shown"], "unknown");
        assert!(c["now"].is_null());
        assert_eq!(c["machine_last_seen"], json!(Timestamp(5_000)));
    }

    #[test]
    fn an_empty_name_is_the_servers_own_machine_which_is_online_and_a_hub_owns_none() {
        let seen = Timestamp(7_000);
        assert_eq!(holder("", "laptop"), "laptop");
        assert_eq!(holder("desk", "laptop"), "desk");
        let own = presence(holder("", "laptop"), "laptop", None);
        assert_eq!((own.name.as_str(), own.online), ("laptop", true));
        assert!(
            presence("laptop", "laptop", Some((false, seen))).online,
            "ours answers"
        );
        let desk = presence("desk", "laptop", Some((false, seen)));
        assert!(!desk.online);
        assert_eq!(desk.last_seen, Some(seen));
        assert!(presence("desk", "laptop", Some((true, seen))).online);
        let ghost = presence("ghost", "laptop", None);
        assert!(!ghost.online && ghost.last_seen.is_none(), "never reported");
        // A hub (no name) holds no agent, not even one whose row names none.
        assert!(!presence(holder("", ""), "", None).online);
    }
}
