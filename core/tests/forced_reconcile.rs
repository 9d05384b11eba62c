//! The forced reconcile re-reads every transcript from byte 0 and judges each line by the
//! stored rows, not by what the engine remembers: a turn whose row was lost comes back, in
//! its task, and nothing is doubled.

use headspace_core::io::Reply;
use headspace_core::model::{AgentRow, Snapshot, TurnRow};
use headspace_core::{Command, Config, Core, Input, Timestamp, Write};
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};

/// A core that has read `data` as the watcher would, and the rows it wrote.
fn read_once(data: &[u8], path: &str) -> (Core, Vec<AgentRow>, Vec<TurnRow>) {
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    core.handle(
        Timestamp(1_000),
        Input::Transcript {
            path: path.to_string(),
            offset: 0,
            data: data.to_vec(),
            read: None,
        },
    );
    let (mut agents, mut turns) = (Vec::new(), Vec::new());
    while let Some(c) = core.poll_command() {
        match c {
            Command::Store(Write::Agent(a)) => agents.push(a),
            Command::Store(Write::Turn(t)) => turns.push(t),
            _ => {}
        }
    }
    (core, agents, turns)
}

/// Runs a forced reconcile, the store answering with `stored` turns; the reply and the
/// turns written.
fn force(
    core: &mut Core,
    data: &[u8],
    agents: Vec<AgentRow>,
    stored: Vec<TurnRow>,
) -> (Vec<Reply>, Vec<TurnRow>) {
    core.handle(
        Timestamp(2_000),
        Input::Reconcile {
            agent: "1".into(),
            request: 7,
        },
    );
    // Everything was read before: the re-read will check every byte (a partial answer
    // counts them as remaining until they are read).
    assert_eq!(core.reconcile_rescan_bytes(7), data.len() as u64);
    let (mut replies, mut written) = (Vec::new(), Vec::new());
    let mut loads = 0;
    while let Some(c) = core.poll_command() {
        match c {
            Command::ReadTranscript { path, from, read } => {
                let from = from.min(data.len() as u64);
                core.handle(
                    Timestamp(2_000),
                    Input::Transcript {
                        path,
                        offset: from,
                        data: data[from as usize..].to_vec(),
                        read: Some(read),
                    },
                );
            }
            Command::LoadAgents { ids } => {
                assert_eq!(ids, vec![1]);
                assert_eq!(core.reconcile_created(7), Some(0));
                loads += 1;
                core.handle(
                    Timestamp(2_000),
                    Input::AgentsLoaded(Snapshot {
                        agents: agents.clone(),
                        turns: stored.clone(),
                        ..Snapshot::default()
                    }),
                );
            }
            Command::Store(Write::Turn(t)) => written.push(t),
            Command::Reply { request, reply } => {
                assert_eq!(request, 7);
                replies.push(reply);
            }
            _ => {}
        }
    }
    assert_eq!(loads, 1, "the stored rows are asked for once");
    (replies, written)
}

fn transcript() -> (String, Vec<u8>, Vec<String>) {
    let mut s = SessionWriter::new(1, Timestamp(0));
    let lines = [
        s.prompt("first task", None),
        s.agent_text("working on it"),
        s.agent_text("first done"),
        s.prompt("second task", None),
        s.agent_text("second done"),
    ];
    let data: String = lines.iter().map(|l| format!("{}\n", l.json)).collect();
    let uuids = lines.iter().map(|l| l.uuid.clone()).collect();
    (s.path(), data.into_bytes(), uuids)
}

#[test]
fn a_turn_whose_row_was_lost_comes_back_in_its_task() {
    let (path, data, uuids) = transcript();
    let (mut core, agents, turns) = read_once(&data, &path);
    assert_eq!(turns.len(), 5);
    let lost = turns[1].clone();
    assert_eq!(lost.entry_uuid.as_deref(), Some(uuids[1].as_str()));
    let stored: Vec<TurnRow> = turns.iter().filter(|t| t.id != lost.id).cloned().collect();
    let (replies, written) = force(&mut core, &data, agents, stored);
    assert_eq!(
        replies,
        vec![Reply::Reconciled {
            agent_id: 1,
            created: 1
        }]
    );
    assert_eq!(
        written.len(),
        1,
        "only the lost line gets a turn: {written:?}"
    );
    let back = &written[0];
    assert_eq!(back.entry_uuid, lost.entry_uuid);
    assert_eq!(back.task_id, lost.task_id, "in the task it was in");
    assert_eq!(back.text, lost.text);
    assert_ne!(back.id, lost.id, "a new turn id");
}

#[test]
fn a_lost_prompt_goes_to_the_task_it_opened() {
    let (path, data, _) = transcript();
    let (mut core, agents, turns) = read_once(&data, &path);
    let lost = turns[3].clone();
    assert_ne!(
        lost.task_id, turns[2].task_id,
        "the second prompt opened a task"
    );
    let stored: Vec<TurnRow> = turns.iter().filter(|t| t.id != lost.id).cloned().collect();
    let (_, written) = force(&mut core, &data, agents, stored);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].entry_uuid, lost.entry_uuid);
    assert_eq!(written[0].task_id, lost.task_id);
}

#[test]
fn nothing_lost_nothing_created_though_the_whole_file_is_read_again() {
    let (path, data, _) = transcript();
    let (mut core, agents, turns) = read_once(&data, &path);
    let (replies, written) = force(&mut core, &data, agents, turns);
    assert!(written.is_empty(), "{written:?}");
    assert_eq!(
        replies,
        vec![Reply::Reconciled {
            agent_id: 1,
            created: 0
        }]
    );
}

#[test]
fn every_row_lost_every_line_comes_back_once() {
    let (path, data, uuids) = transcript();
    let (mut core, agents, _) = read_once(&data, &path);
    let (replies, written) = force(&mut core, &data, agents, Vec::new());
    assert_eq!(
        replies,
        vec![Reply::Reconciled {
            agent_id: 1,
            created: 5
        }]
    );
    let back: Vec<String> = written
        .iter()
        .filter_map(|t| t.entry_uuid.clone())
        .collect();
    assert_eq!(back, uuids, "each line once, in transcript order");
}
