//! Pane discovery and the reaper, driven through the real core: sessions whose hooks were all
//! lost get their pane and folder from tmux's pane list and their transcript; agents whose
//! pane or process is gone are ended with the reason, and come back when they speak again.

use headspace_core::harness::replay::Replayer;
use headspace_core::harness::trace::Step;
use headspace_core::model::AgentRow;
use headspace_core::pane::discovery::{PaneListing, PaneProcess};
use headspace_core::view::activity::Activity;
use headspace_core::Timestamp;
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::json;

const T0: i64 = 1_793_523_600_000;

fn at(ms: i64) -> Timestamp {
    Timestamp(T0 + ms)
}

fn claude(pid: u32, cwd: &str, started: i64) -> PaneProcess {
    PaneProcess {
        pid,
        command: "claude".into(),
        args: vec!["claude".into()],
        cwd: Some(cwd.into()),
        started_at: at(started),
    }
}

fn shell(pid: u32) -> PaneProcess {
    PaneProcess {
        pid,
        command: "bash".into(),
        args: vec!["-bash".into()],
        cwd: Some("/home/u".into()),
        started_at: at(0),
    }
}

fn pane(id: &str, processes: Vec<PaneProcess>) -> PaneListing {
    PaneListing {
        pane: id.into(),
        current_path: None,
        processes,
    }
}

/// A session that wrote its first prompt at `ms` in `cwd`, with no hook at all.
fn session(r: &mut Replayer, n: u64, cwd: &str, ms: i64) -> SessionWriter {
    let mut s = SessionWriter::new(n, at(ms));
    s.cwd = cwd.into();
    s.dir = headspace_core::engine::claude_project_dir(cwd);
    let line = s.prompt(&format!("task {n}"), None);
    r.step(
        at(ms),
        Step::Append {
            path: s.path(),
            data: format!("{}\n", line.json).into_bytes(),
        },
    );
    s
}

fn agent_of<'a>(r: &'a Replayer, s: &SessionWriter) -> &'a AgentRow {
    r.store()
        .agents()
        .find(|a| a.session_id == s.session_id)
        .expect("an agent for the session")
}

#[test]
fn a_session_with_every_hook_lost_gets_its_pane_and_folder() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let s = session(&mut r, 1, "/work/alpha", 10_000);
    assert_eq!(agent_of(&r, &s).tmux_pane, None);
    assert_eq!(
        agent_of(&r, &s).cwd.as_deref(),
        Some("/work/alpha"),
        "the folder comes from the transcript line"
    );
    assert_eq!(agent_of(&r, &s).project.as_deref(), Some("alpha"));
    let panes = vec![
        pane("%0", vec![shell(1)]),
        pane("%3", vec![shell(2), claude(7, "/work/alpha", 9_000)]),
    ];
    r.step(at(11_000), Step::Panes { panes });
    assert_eq!(agent_of(&r, &s).tmux_pane.as_deref(), Some("%3"));
    assert_eq!(
        r.store().resolve("%3"),
        Some(agent_of(&r, &s).id),
        "`wait %3` and `send %3` find it"
    );
}

#[test]
fn two_agents_in_one_folder_started_at_different_times_are_told_apart() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let a = session(&mut r, 1, "/work/p", 10_000);
    let b = session(&mut r, 2, "/work/p", 60_000);
    let panes = vec![
        pane("%1", vec![claude(11, "/work/p", 5_000)]),
        pane("%2", vec![claude(22, "/work/p", 40_000)]),
    ];
    r.step(at(61_000), Step::Panes { panes });
    assert_eq!(agent_of(&r, &a).tmux_pane.as_deref(), Some("%1"));
    assert_eq!(agent_of(&r, &b).tmux_pane.as_deref(), Some("%2"));
}

#[test]
fn an_ambiguous_session_stays_unassigned_and_a_hook_pane_wins() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let s = session(&mut r, 1, "/work/p", 60_000);
    let panes = vec![
        pane("%1", vec![claude(11, "/work/p", 5_000)]),
        pane("%2", vec![claude(22, "/work/p", 40_000)]),
    ];
    r.step(at(61_000), Step::Panes { panes });
    assert_eq!(
        agent_of(&r, &s).tmux_pane,
        None,
        "two processes fit: no guess"
    );
    let body = s.hook("Notification", Some("%2"), Some(at(62_000)), json!({}));
    r.step(
        at(62_000),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("Notification".into()),
            body,
        },
    );
    assert_eq!(agent_of(&r, &s).tmux_pane.as_deref(), Some("%2"));
}

#[test]
fn the_reaper_ends_an_agent_whose_pane_closed_or_process_exited_and_a_new_line_revives_it() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let mut s = session(&mut r, 1, "/work/p", 10_000);
    let live = vec![pane("%1", vec![shell(1), claude(11, "/work/p", 5_000)])];
    r.step(
        at(11_000),
        Step::Panes {
            panes: live.clone(),
        },
    );
    assert!(!agent_of(&r, &s).ended);
    // The process is killed; the pane stays with its shell.
    r.step(
        at(12_000),
        Step::Panes {
            panes: vec![pane("%1", vec![shell(1)])],
        },
    );
    let a = agent_of(&r, &s);
    assert!(a.ended);
    assert_eq!(a.end_reason.as_deref(), Some("process_exited"));
    assert_eq!(
        r.store().agent_view(a.id).unwrap().activity(),
        Activity::Ended
    );
    // `claude --resume` writes to the session again: it is back.
    let tail = s.agent_text("the last words of its turn, read late");
    let late_stamp = s.clock;
    r.step(
        at(19_000),
        Step::Append {
            path: s.path(),
            data: format!("{}\n", tail.json).into_bytes(),
        },
    );
    assert!(late_stamp < at(12_000), "written before the kill");
    assert!(
        agent_of(&r, &s).ended,
        "the tail of its last turn does not revive it"
    );
    s.clock = at(20_000);
    let line = s.prompt("resumed", None);
    r.step(
        at(20_000),
        Step::Append {
            path: s.path(),
            data: format!("{}\n", line.json).into_bytes(),
        },
    );
    let a = agent_of(&r, &s);
    assert!(!a.ended, "a prompt newer than its end brings it back");
    assert_eq!(a.end_reason, None);
    // Its pane closes.
    r.step(at(21_000), Step::Panes { panes: live });
    r.step(at(22_000), Step::Panes { panes: vec![] });
    assert_eq!(agent_of(&r, &s).end_reason.as_deref(), Some("pane_closed"));
}

#[test]
fn a_pane_no_listing_ever_showed_is_not_reaped_but_a_silent_agent_is() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let s = session(&mut r, 1, "/work/p", 10_000);
    // Its turn ends: idle, it is evicted from memory after half an hour of silence.
    let body = s.hook("Stop", Some("%9"), Some(at(10_500)), json!({}));
    r.step(
        at(10_500),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("Stop".into()),
            body,
        },
    );
    r.step(at(11_000), Step::Panes { panes: vec![] });
    assert!(
        !agent_of(&r, &s).ended,
        "%9 was never listed: another tmux server"
    );
    r.step(at(11_000 + 11 * 3_600_000), Step::Tick);
    assert!(!agent_of(&r, &s).ended);
    assert_eq!(r.core().memory_counts(), (0, 1), "evicted while silent");
    r.step(at(11_000 + 13 * 3_600_000), Step::Tick);
    assert_eq!(agent_of(&r, &s).end_reason.as_deref(), Some("silent"));
}

#[test]
fn a_prompt_typed_in_the_pane_counts_as_running_until_the_pane_is_idle_again() {
    let rule = "────────────────────────────────────────";
    let idle = format!("⏺ Done.\n\n{rule}\n❯\u{a0}\n{rule}\n");
    let submitted = format!("⏺ Done.\n\n> next task\n\n{rule}\n❯\u{a0}\n{rule}\n");
    let mut r = Replayer::new(CLAUDE_DIR);
    let s = session(&mut r, 1, "/work/p", 10_000);
    let body = s.hook("Stop", Some("%1"), Some(at(10_100)), json!({}));
    r.step(
        at(10_100),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("Stop".into()),
            body,
        },
    );
    let id = agent_of(&r, &s).id;
    let activity = |r: &Replayer| r.store().agent_view(id).unwrap().activity();
    r.step(
        at(30_000),
        Step::Pane {
            pane: "%1".into(),
            text: idle.clone(),
        },
    );
    r.step(
        at(31_000),
        Step::Pane {
            pane: "%1".into(),
            text: idle.clone(),
        },
    );
    assert_eq!(activity(&r), Activity::Idle);
    r.step(
        at(32_000),
        Step::Pane {
            pane: "%1".into(),
            text: submitted,
        },
    );
    assert_eq!(
        activity(&r),
        Activity::Running,
        "the screen shows the prompt submitted"
    );
    r.step(
        at(40_000),
        Step::Pane {
            pane: "%1".into(),
            text: idle.clone(),
        },
    );
    assert_eq!(
        activity(&r),
        Activity::Running,
        "one idle reading is not enough"
    );
    r.step(
        at(41_000),
        Step::Pane {
            pane: "%1".into(),
            text: idle,
        },
    );
    assert_eq!(activity(&r), Activity::Idle);
}

/// `line` with `gitBranch` set, as Claude Code writes it in a repository.
fn on_branch(line: &str, branch: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["gitBranch"] = json!(branch);
    v.to_string()
}

#[test]
fn the_agent_takes_its_git_branch_from_the_first_line_and_each_prompt() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let mut s = SessionWriter::new(7, at(1_000));
    s.cwd = "/work/alpha".into();
    s.dir = headspace_core::engine::claude_project_dir("/work/alpha");
    let path = s.path();
    let append = |r: &mut Replayer, ms: i64, line: String| {
        r.step(
            at(ms),
            Step::Append {
                path: path.clone(),
                data: format!("{line}\n").into_bytes(),
            },
        )
    };
    let first = s.prompt("start", None).json;
    append(&mut r, 1_000, on_branch(&first, "feature/login"));
    assert_eq!(
        agent_of(&r, &s).git_branch.as_deref(),
        Some("feature/login")
    );
    // An agent's text on another branch (a command ran `git switch`) is not where the branch
    // is read; the next prompt is.
    let reply = s.agent_text("switched").json;
    append(&mut r, 2_000, on_branch(&reply, "main"));
    let prompt = s.prompt("go on", None).json;
    append(&mut r, 3_000, on_branch(&prompt, "fix/parser"));
    assert_eq!(agent_of(&r, &s).git_branch.as_deref(), Some("fix/parser"));
    // Outside a repository Claude Code writes an empty branch: the last one stays.
    let prompt = s.prompt("and now", None).json;
    append(&mut r, 4_000, on_branch(&prompt, ""));
    assert_eq!(agent_of(&r, &s).git_branch.as_deref(), Some("fix/parser"));
}

#[test]
fn a_session_a_late_hook_puts_in_a_pane_already_closed_is_ended() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let a = session(&mut r, 1, "/work/p", 10_000);
    let stop = a.hook("Stop", Some("%7"), Some(at(10_500)), json!({}));
    r.step(
        at(10_500),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("Stop".into()),
            body: stop,
        },
    );
    r.step(
        at(11_000),
        Step::Panes {
            panes: vec![pane("%7", vec![claude(70, "/work/p", 9_000)])],
        },
    );
    // The pane closes; the next listing does not show it and ends the agent in it.
    r.step(at(12_000), Step::Panes { panes: vec![] });
    assert_eq!(agent_of(&r, &a).end_reason.as_deref(), Some("pane_closed"));
    // A session that began in that pane before it closed is heard of only now, by a late
    // hook: nothing lists its pane again, and it is ended too.
    let b = SessionWriter::new(2, at(11_500));
    let start = b.hook(
        "SessionStart",
        Some("%7"),
        Some(at(11_500)),
        json!({"source": "startup"}),
    );
    r.step(
        at(20_000),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("SessionStart".into()),
            body: start,
        },
    );
    assert!(!agent_of(&r, &b).ended);
    r.step(at(21_000), Step::Panes { panes: vec![] });
    assert_eq!(
        agent_of(&r, &b).end_reason.as_deref(),
        Some("pane_closed"),
        "{:?}",
        agent_of(&r, &b)
    );
}

#[test]
fn a_session_a_late_hook_puts_in_a_pane_whose_claude_already_exited_is_ended() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let listing = |r: &mut Replayer, ms: i64, processes: Vec<PaneProcess>| {
        r.step(
            at(ms),
            Step::Panes {
                panes: vec![pane("%7", processes)],
            },
        )
    };
    let hook = |r: &mut Replayer, ms: i64, s: &SessionWriter, stamp: i64| {
        let body = s.hook("SessionStart", Some("%7"), Some(at(stamp)), json!({}));
        r.step(
            at(ms),
            Step::Hook {
                agent: headspace_core::kind::AgentKind::Claude,
                event: Some("SessionStart".into()),
                body,
            },
        )
    };
    let a = session(&mut r, 1, "/work/p", 10_000);
    hook(&mut r, 10_000, &a, 10_000);
    listing(&mut r, 11_000, vec![shell(7), claude(70, "/work/p", 9_000)]);
    // The process begins a new session (after a compaction) whose line is read at once;
    // its hook is late.
    let b = session(&mut r, 2, "/work/p", 12_000);
    // Claude Code exits; the pane stays, with its shell. The agent seen in it ends.
    listing(&mut r, 13_000, vec![shell(7)]);
    assert_eq!(
        agent_of(&r, &a).end_reason.as_deref(),
        Some("process_exited")
    );
    assert!(!agent_of(&r, &b).ended);
    // The late hook puts the new session in the pane. The pane shows no Claude Code
    // process, and all the session's news predates the exit: the next listing ends it.
    hook(&mut r, 14_000, &b, 12_000);
    assert!(!agent_of(&r, &b).ended, "{:?}", agent_of(&r, &b));
    listing(&mut r, 15_000, vec![shell(7)]);
    assert_eq!(
        agent_of(&r, &b).end_reason.as_deref(),
        Some("process_exited"),
        "{:?}",
        agent_of(&r, &b)
    );
    // A session whose news comes after the exit was seen is another process's, even if no
    // listing shows it yet (it started between two listings): it is left alone.
    let c = session(&mut r, 3, "/work/p", 15_500);
    hook(&mut r, 15_600, &c, 15_500);
    listing(&mut r, 17_000, vec![shell(7)]);
    assert_eq!(agent_of(&r, &c).tmux_pane.as_deref(), Some("%7"));
    assert!(!agent_of(&r, &c).ended, "{:?}", agent_of(&r, &c));
}

/// The user stops an agent through Headspace: it ends as `stopped`, also when its own
/// SessionEnd came first; a late line of its last turn does not bring it back, and the
/// trace format carries the stop (`{"stopped": {"agent": …}}`).
#[test]
fn a_stopped_agent_ends_as_stopped_and_stays_ended() {
    let mut r = Replayer::new(CLAUDE_DIR);
    let mut s = session(&mut r, 1, "/work/p", 10_000);
    let id = agent_of(&r, &s).id;
    r.step(
        at(11_000),
        Step::Stopped {
            agent: id.to_string(),
        },
    );
    let a = agent_of(&r, &s);
    assert!(a.ended);
    assert_eq!(a.end_reason.as_deref(), Some("stopped"));
    let tail = s.agent_text("the last words, read late");
    r.step(
        at(12_000),
        Step::Append {
            path: s.path(),
            data: format!("{}\n", tail.json).into_bytes(),
        },
    );
    assert_eq!(agent_of(&r, &s).end_reason.as_deref(), Some("stopped"));

    // Its own SessionEnd first (it took /exit), then the stop: still `stopped`.
    let mut r = Replayer::new(CLAUDE_DIR);
    let s = session(&mut r, 2, "/work/q", 10_000);
    let end = json!({"session_id": s.session_id, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"});
    r.step(
        at(11_000),
        Step::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: Some("SessionEnd".into()),
            body: end.to_string().into_bytes(),
        },
    );
    assert!(agent_of(&r, &s).ended);
    r.step(
        at(11_500),
        Step::Stopped {
            agent: s.session_id.clone(),
        },
    );
    assert_eq!(agent_of(&r, &s).end_reason.as_deref(), Some("stopped"));

    let t = headspace_core::harness::trace::Trace::parse(concat!(
        "{\"trace\": 1, \"epoch\": \"2026-02-18T10:00:00Z\", \"claude_dir\": \"/c\"}\n",
        "{\"at_ms\": 5, \"stopped\": {\"agent\": 7}}\n",
    ))
    .unwrap();
    assert_eq!(t.steps[0].1, Step::Stopped { agent: "7".into() });
}
