//! Cores of several machines write into one database without coordinating: each makes ids
//! only in its machine's id space (`Config::id_base`), before and after a restart, even when
//! the store it restores from holds the other machines' rows too.

use headspace_core::engine::{id_base_of, Config, ID_SPACE, MAX_MACHINE_ID};
use headspace_core::harness::replay::Replayer;
use headspace_core::harness::trace::Step;
use headspace_core::io::Write;
use headspace_core::store::MemStore;
use headspace_core::Timestamp;
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use std::collections::BTreeSet;

fn at(ms: i64) -> Timestamp {
    Timestamp(1_793_523_600_000 + ms)
}

/// A core of machine `machine` that reads `sessions` sessions of `turns` prompts each, and
/// the writes it made.
fn machine_writes(machine: u16, sessions: u64, prompts: u64, restart_after: u64) -> Vec<Write> {
    let mut config = Config::new(CLAUDE_DIR);
    config.id_base = id_base_of(machine);
    let mut r = Replayer::with_config(config);
    r.record_writes();
    for n in 1..=sessions {
        let mut s = SessionWriter::new(u64::from(machine) * 1_000 + n, at(0));
        for p in 0..prompts {
            if n == restart_after && p == prompts / 2 {
                r.step(at(p as i64 * 1_000), Step::Restart);
            }
            let mut data = String::new();
            for line in [s.prompt(&format!("prompt {p}"), None), s.agent_text("done")] {
                data.push_str(&line.json);
                data.push('\n');
            }
            r.step(
                at(p as i64 * 1_000 + n as i64),
                Step::Append {
                    path: s.path(),
                    data: data.into_bytes(),
                },
            );
        }
    }
    r.take_writes()
}

fn ids(store: &MemStore) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let snap = store.snapshot();
    (
        snap.agents.iter().map(|a| a.id).collect(),
        snap.tasks.iter().map(|t| t.id).collect(),
        snap.turns.iter().map(|t| t.id).collect(),
    )
}

#[test]
fn two_machines_write_into_one_store_without_a_collision() {
    let a = machine_writes(1, 3, 6, 2);
    let b = machine_writes(2, 4, 5, 3);
    let mut alone_a = MemStore::new();
    let mut alone_b = MemStore::new();
    let mut shared = MemStore::new();
    for w in &a {
        alone_a.apply(w);
    }
    for w in &b {
        alone_b.apply(w);
    }
    // Interleaved as two edges committing at once would.
    let mut ia = a.iter();
    let mut ib = b.iter();
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => break,
            (x, y) => {
                for w in [x, y].into_iter().flatten() {
                    shared.apply(w);
                }
            }
        }
    }
    let (agents, tasks, turns) = ids(&shared);
    let (aa, at_, au) = ids(&alone_a);
    let (ba, bt, bu) = ids(&alone_b);
    // Nothing of one machine overwrote the other's: the shared store is the union.
    assert_eq!(agents.len(), aa.len() + ba.len());
    assert_eq!(tasks.len(), at_.len() + bt.len());
    assert_eq!(turns.len(), au.len() + bu.len());
    assert_eq!(turns.len(), 3 * 6 * 2 + 4 * 5 * 2);
    for (machine, list) in [(1u64, [&aa, &at_, &au]), (2, [&ba, &bt, &bu])] {
        for id in list.into_iter().flatten() {
            assert!(
                *id > machine * ID_SPACE && *id < (machine + 1) * ID_SPACE,
                "machine {machine} made id {id}"
            );
        }
    }
    let unique: BTreeSet<u64> = turns.iter().copied().collect();
    assert_eq!(unique.len(), turns.len());
}

#[test]
fn a_core_restored_from_a_shared_store_goes_on_in_its_own_space() {
    // Machine 2 restarts from a store that also holds machine 5's rows, with higher ids.
    let other = machine_writes(5, 2, 2, 0);
    let mut config = Config::new(CLAUDE_DIR);
    config.id_base = id_base_of(2);
    let mut r = Replayer::with_config(config);
    let mut s = SessionWriter::new(77, at(0));
    r.step(
        at(0),
        Step::Append {
            path: s.path(),
            data: format!("{}\n", s.prompt("first", None).json).into_bytes(),
        },
    );
    r.record_writes();
    // The other machine's rows reach the store beside ours.
    for w in &other {
        r.store_mut().apply(w);
    }
    r.step(at(1_000), Step::Restart);
    r.step(
        at(2_000),
        Step::Append {
            path: s.path(),
            data: format!("{}\n", s.prompt("second", None).json).into_bytes(),
        },
    );
    let made: Vec<u64> = r
        .take_writes()
        .iter()
        .filter_map(|w| match w {
            Write::Turn(t) => Some(t.id),
            _ => None,
        })
        .collect();
    assert!(!made.is_empty());
    for id in made {
        assert!(id > id_base_of(2) && id < id_base_of(3), "turn id {id}");
    }
    assert_eq!(id_base_of(MAX_MACHINE_ID + 9), id_base_of(MAX_MACHINE_ID));
    assert!(id_base_of(MAX_MACHINE_ID) + ID_SPACE <= 1 << 53);
}
