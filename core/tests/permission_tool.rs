//! The permission dialog an agent waits on carries the tool and input its hook named: the
//! pane shows only part of a long command, the hook has it whole. No tmux, no clock.

use headspace_core::{Command, Config, Core, Input, Timestamp, Write};
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::{json, Value};

const DIALOG: &str = "│ Bash command            │\n│   rm -rf tar…           │\n│ Do you want to proceed? │\n│ ❯ 1. Yes                │\n│   2. No                 │\n";

/// The permission the agent's last stored row holds, after draining the core's commands.
fn stored_permission(core: &mut Core) -> Option<Option<Value>> {
    let mut last = None;
    while let Some(c) = core.poll_command() {
        if let Command::Store(Write::Agent(row)) = c {
            last = Some(row.permission);
        }
    }
    last
}

fn core_with_agent() -> (Core, SessionWriter) {
    let mut config = Config::new(CLAUDE_DIR);
    config.evict_after_ms = 0;
    let mut core = Core::new(config);
    let s = SessionWriter::new(1, Timestamp(0));
    core.handle(
        Timestamp(1_000),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook(
                "UserPromptSubmit",
                Some("%4"),
                None,
                json!({"prompt": "tidy"}),
            ),
        },
    );
    while core.poll_command().is_some() {}
    (core, s)
}

fn permission_hook(s: &SessionWriter, command: &str) -> Input {
    Input::Hook {
        agent: headspace_core::kind::AgentKind::Claude,
        event: None,
        body: s.hook(
            "PermissionRequest",
            Some("%4"),
            None,
            json!({"tool_name": "Bash", "tool_input": {"command": command}}),
        ),
    }
}

#[test]
fn the_hooks_tool_joins_the_dialog_read_from_the_pane() {
    let (mut core, s) = core_with_agent();
    core.handle(
        Timestamp(2_000),
        permission_hook(&s, "rm -rf target/debug/deps"),
    );
    while core.poll_command().is_some() {}
    core.handle(
        Timestamp(2_500),
        Input::Pane {
            pane: "%4".into(),
            text: DIALOG.into(),
        },
    );
    let permission = stored_permission(&mut core).flatten().expect("a dialog");
    assert_eq!(permission["question"], "Do you want to proceed?");
    assert_eq!(permission["tool"]["name"], "Bash");
    assert_eq!(
        permission["tool"]["summary"], "rm -rf target/debug/deps",
        "the whole command, not the pane's cut one"
    );
}

#[test]
fn a_hook_after_the_dialog_was_read_adds_its_tool_to_it() {
    let (mut core, s) = core_with_agent();
    core.handle(
        Timestamp(2_000),
        Input::Pane {
            pane: "%4".into(),
            text: DIALOG.into(),
        },
    );
    let first = stored_permission(&mut core).flatten().expect("a dialog");
    assert_eq!(first.get("tool"), None, "no hook yet: no tool");
    core.handle(Timestamp(2_100), permission_hook(&s, "rm -rf target"));
    let permission = stored_permission(&mut core)
        .flatten()
        .expect("the dialog again");
    assert_eq!(permission["tool"]["summary"], "rm -rf target");
    // The same screen read again keeps it.
    core.handle(
        Timestamp(2_600),
        Input::Pane {
            pane: "%4".into(),
            text: DIALOG.into(),
        },
    );
    assert_eq!(stored_permission(&mut core), None, "nothing changed");
}

#[test]
fn a_dialog_whose_hook_was_lost_does_not_show_the_tool_asked_before() {
    let (mut core, s) = core_with_agent();
    core.handle(
        Timestamp(2_000),
        permission_hook(&s, "rm -rf target/debug/deps"),
    );
    while core.poll_command().is_some() {}
    core.handle(
        Timestamp(2_500),
        Input::Pane {
            pane: "%4".into(),
            text: DIALOG.into(),
        },
    );
    while core.poll_command().is_some() {}
    // That tool ran; the next one's PermissionRequest hook is lost.
    core.handle(
        Timestamp(3_000),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook(
                "PostToolUse",
                Some("%4"),
                None,
                json!({"tool_name": "Bash"}),
            ),
        },
    );
    let next = "│ Bash command            │\n│   cargo publish         │\n│ Do you want to proceed? │\n│ ❯ 1. Yes                │\n│   2. No                 │\n";
    core.handle(
        Timestamp(3_500),
        Input::Pane {
            pane: "%4".into(),
            text: next.into(),
        },
    );
    let permission = stored_permission(&mut core).flatten().expect("a dialog");
    assert_eq!(
        permission.get("tool"),
        None,
        "not the rm of the dialog before: {permission}"
    );
}

#[test]
fn a_dialog_that_shows_another_command_than_the_hooks_gets_no_tool() {
    let (mut core, s) = core_with_agent();
    // The hook of an earlier tool arrived, its PostToolUse was lost too.
    core.handle(Timestamp(2_000), permission_hook(&s, "git push --force"));
    while core.poll_command().is_some() {}
    core.handle(
        Timestamp(2_500),
        Input::Pane {
            pane: "%4".into(),
            text: DIALOG.into(),
        },
    );
    let permission = stored_permission(&mut core).flatten().expect("a dialog");
    assert_eq!(permission.get("tool"), None, "{permission}");
}

#[test]
fn the_dialog_carries_when_it_began_showing_until_it_closes() {
    let (mut core, s) = core_with_agent();
    let pane = |core: &mut Core, at: i64, text: &str| {
        core.handle(
            Timestamp(at),
            Input::Pane {
                pane: "%4".into(),
                text: text.into(),
            },
        )
    };
    pane(&mut core, 2_000, DIALOG);
    let first = stored_permission(&mut core).flatten().expect("a dialog");
    assert_eq!(first["since"], json!(Timestamp(2_000)));
    // Its tool learnt later, the screen read again: the same wait, the same start.
    core.handle(Timestamp(2_100), permission_hook(&s, "rm -rf target"));
    pane(&mut core, 5_000, DIALOG);
    let later = stored_permission(&mut core).flatten().expect("the dialog");
    assert_eq!(later["since"], json!(Timestamp(2_000)));
    // Answered (the dialog gone), then a new one: a new wait.
    pane(&mut core, 8_000, "⏺ Done.\n\n> \n");
    assert_eq!(
        stored_permission(&mut core),
        Some(None),
        "the dialog closed"
    );
    pane(&mut core, 9_000, DIALOG);
    let next = stored_permission(&mut core)
        .flatten()
        .expect("a new dialog");
    assert_eq!(next["since"], json!(Timestamp(9_000)));
}

#[test]
fn a_late_post_tool_use_of_an_earlier_tool_leaves_the_tool_asked_now() {
    let (mut core, s) = core_with_agent();
    // The permission's hook, emitted at 3.0 s, arrives first; the PostToolUse of the tool
    // that ran before it (emitted at 2.9 s, posted by another detached process) after it.
    core.handle(
        Timestamp(3_050),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook(
                "PermissionRequest",
                Some("%4"),
                Some(Timestamp(3_000)),
                json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf target"}}),
            ),
        },
    );
    core.handle(
        Timestamp(3_100),
        Input::Hook {
            agent: headspace_core::kind::AgentKind::Claude,
            event: None,
            body: s.hook(
                "PostToolUse",
                Some("%4"),
                Some(Timestamp(2_900)),
                json!({"tool_name": "Bash", "tool_use_id": "toolu_ls"}),
            ),
        },
    );
    while core.poll_command().is_some() {}
    let dialog = "│ Bash command            │\n│   rm -rf target         │\n│ Do you want to proceed? │\n│ ❯ 1. Yes                │\n│   2. No                 │\n";
    core.handle(
        Timestamp(3_500),
        Input::Pane {
            pane: "%4".into(),
            text: dialog.into(),
        },
    );
    let permission = stored_permission(&mut core).flatten().expect("a dialog");
    assert_eq!(
        permission["tool"]["summary"], "rm -rf target",
        "the late PostToolUse was about an earlier tool: {permission}"
    );
}
