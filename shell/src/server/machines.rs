//! This server as one machine of a shared database (issue 21): its name, the id that gives
//! its core an id space, its heartbeat, and the rows `GET /api/machines` shows.

use headspace_core::cluster::machines::{holder, presence, MachinePresence, HEARTBEAT_EVERY_MS};
use headspace_core::Timestamp;
use serde_json::{json, Value};
use std::time::Duration;

/// How often a machine says it lives (the core's [`HEARTBEAT_EVERY_MS`]).
pub const HEARTBEAT_EVERY: Duration = Duration::from_millis(HEARTBEAT_EVERY_MS as u64);

/// One machine as the dashboard lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineRow {
    /// Its name (`--machine`, by default the host name).
    pub name: String,
    /// Its id (its core's id space).
    pub id: u16,
    /// Its last heartbeat, epoch milliseconds.
    pub last_seen_ms: i64,
    /// Whether that heartbeat is recent.
    pub online: bool,
    /// The Headspace version it runs.
    pub version: String,
    /// Its live agents.
    pub agents: u64,
}

impl MachineRow {
    /// The row as `GET /api/machines` shows it: `last_seen_at` as the contract names it (and
    /// `last_seen`, its name before, for older clients).
    pub fn to_json(&self) -> Value {
        let seen = headspace_core::Timestamp(self.last_seen_ms);
        json!({
            "name": self.name,
            "id": self.id,
            "online": self.online,
            "last_seen_at": seen,
            "last_seen": seen,
            "version": self.version,
            "agents": self.agents,
        })
    }
}

/// What an agent's card shows of the machine `machine` its row names, among `machines` (the
/// list `GET /api/machines` shows), seen by the server named `own`: the core's rule
/// ([`presence`]) on that machine's row.
pub fn presence_of(machines: &[MachineRow], own: &str, machine: &str) -> MachinePresence {
    let name = holder(machine, own);
    let row = machines.iter().find(|m| m.name == name);
    presence(
        name,
        own,
        row.map(|m| (m.online, Timestamp(m.last_seen_ms))),
    )
}

/// The host name, for a `--machine` not given.
pub fn default_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| valid_name(s).is_ok())
        .unwrap_or_else(|| "localhost".to_string())
}

/// A machine name: 1 to 63 letters, digits, `.`, `_` or `-` (it travels in a connection's
/// startup options and in URLs, unquoted).
pub fn valid_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--machine {name:?}: use 1 to 63 letters, digits, '.', '_' or '-'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::{presence_of, valid_name, MachineRow};

    #[test]
    fn a_card_names_its_own_machine_and_is_offline_only_when_that_machine_is() {
        let row = |name: &str, online: bool| MachineRow {
            name: name.into(),
            id: 1,
            last_seen_ms: 7_000,
            online,
            version: String::new(),
            agents: 1,
        };
        let rows = [row("hub", false), row("desk", false), row("laptop", true)];
        let p = presence_of(&rows, "hub", "");
        assert_eq!((p.name.as_str(), p.online), ("hub", true), "empty is ours");
        assert!(presence_of(&rows, "hub", "hub").online, "ours answers");
        assert!(!presence_of(&rows, "hub", "desk").online);
        assert!(presence_of(&rows, "hub", "laptop").online);
        let never = presence_of(&rows, "hub", "ghost");
        assert!(!never.online && never.last_seen.is_none());
    }

    #[test]
    fn machine_names_that_travel_unquoted_are_the_only_ones_taken() {
        for good in ["laptop", "build-01", "dev.box_2", "a"] {
            assert!(valid_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "two words",
            "x;y",
            "a'b",
            "ü",
            &"x".repeat(64),
            "-c a=b ",
        ] {
            assert!(valid_name(bad).is_err(), "{bad:?}");
        }
    }
}
