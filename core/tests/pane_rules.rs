//! The pane and idle rules the shell carries out and the core decides: `wait`'s debounce,
//! option matching on a dialog, and the verification of a send. No tmux and no clock: the
//! readings, screens and elapsed times are given.

use headspace_core::pane::send_check::{needs_clearing, Delivery, SendCheck, Sent, ENTER_RETRIES};
use headspace_core::task::wait::{WaitDebounce, WaitVerdict, IDLE_READINGS, READ_INTERVAL};
use headspace_core::Activity;
use std::time::Duration;

const RULE: &str = "────────────────────────────────────────";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn wait_confirms_idle_with_two_consecutive_idle_readings_a_quarter_second_apart() {
    assert_eq!(IDLE_READINGS, 2);
    assert_eq!(READ_INTERVAL, ms(250));
    let mut w = WaitDebounce::new(Duration::from_secs(600));
    assert_eq!(
        w.reading(Activity::Idle, ms(0)),
        WaitVerdict::ReadAgainAfter(ms(250)),
        "one idle reading is not enough: it may be the moment between a Stop and the next prompt"
    );
    assert_eq!(w.reading(Activity::Idle, ms(250)), WaitVerdict::Idle);
}

#[test]
fn a_running_reading_starts_the_count_again() {
    let mut w = WaitDebounce::new(Duration::from_secs(600));
    assert_eq!(
        w.reading(Activity::Idle, ms(0)),
        WaitVerdict::ReadAgainAfter(READ_INTERVAL)
    );
    assert_eq!(
        w.reading(Activity::Running, ms(250)),
        WaitVerdict::ReadAgainAfter(READ_INTERVAL)
    );
    assert_eq!(
        w.reading(Activity::Idle, ms(500)),
        WaitVerdict::ReadAgainAfter(READ_INTERVAL),
        "idle, running, idle is not two idle readings in a row"
    );
    assert_eq!(w.reading(Activity::Idle, ms(750)), WaitVerdict::Idle);
}

#[test]
fn waiting_and_ended_count_as_idle_and_running_never_does() {
    for activity in [Activity::Waiting, Activity::Ended, Activity::Idle] {
        let mut w = WaitDebounce::new(Duration::from_secs(1));
        w.reading(activity, ms(0));
        assert_eq!(
            w.reading(activity, ms(250)),
            WaitVerdict::Idle,
            "{activity:?}"
        );
    }
    let mut w = WaitDebounce::new(Duration::from_secs(600));
    for i in 0..100 {
        assert_eq!(
            w.reading(Activity::Running, ms(i * 250)),
            WaitVerdict::ReadAgainAfter(READ_INTERVAL)
        );
    }
}

#[test]
fn wait_times_out_once_the_time_is_up_but_a_confirmed_idle_wins() {
    let mut w = WaitDebounce::new(ms(1000));
    assert_eq!(
        w.reading(Activity::Running, ms(999)),
        WaitVerdict::ReadAgainAfter(READ_INTERVAL)
    );
    assert_eq!(
        w.reading(Activity::Running, ms(1000)),
        WaitVerdict::TimedOut
    );
    // A zero timeout still reads once; a first idle reading is not confirmed, so it times out.
    let mut w = WaitDebounce::new(Duration::ZERO);
    assert_eq!(w.reading(Activity::Idle, ms(0)), WaitVerdict::TimedOut);
    // Idle confirmed on the reading the time runs out: idle.
    let mut w = WaitDebounce::new(ms(300));
    w.reading(Activity::Idle, ms(0));
    assert_eq!(w.reading(Activity::Idle, ms(300)), WaitVerdict::Idle);
}

#[test]
fn text_already_in_the_input_box_is_cleared_first_an_empty_box_is_not() {
    assert!(needs_clearing(&format!("{RULE}\n❯ half typed\n{RULE}\n")));
    assert!(!needs_clearing(&format!("{RULE}\n❯\u{a0}\n{RULE}\n")));
    assert!(!needs_clearing("$ ls\n"), "no input box: nothing to clear");
}

#[test]
fn a_text_send_is_delivered_when_the_screen_changes_after_enter() {
    let typed = format!("{RULE}\n❯ fix the build\n{RULE}\n");
    let mut check = SendCheck::text(typed.clone(), true);
    assert_eq!(
        check.observe("✻ Thinking… (esc to interrupt)\n"),
        Delivery::Delivered
    );
    assert_eq!(
        check.sent(),
        Sent {
            cleared_input: true,
            retried_enter: false,
            verified: true
        }
    );
}

#[test]
fn an_unchanged_screen_gets_enter_once_more_then_the_send_is_not_verified() {
    assert_eq!(ENTER_RETRIES, 1);
    let typed = format!("{RULE}\n❯ fix the build\n{RULE}\n");
    let mut check = SendCheck::text(typed.clone(), false);
    assert_eq!(check.observe(&typed), Delivery::PressEnterAgain);
    assert_eq!(check.observe(&typed), Delivery::GiveUp);
    assert_eq!(
        check.sent(),
        Sent {
            cleared_input: false,
            retried_enter: true,
            verified: false
        }
    );
    // The second Enter took: delivered, and the retry is reported.
    let mut check = SendCheck::text(typed.clone(), false);
    assert_eq!(check.observe(&typed), Delivery::PressEnterAgain);
    assert_eq!(check.observe("⏺ On it.\n"), Delivery::Delivered);
    assert_eq!(
        check.sent(),
        Sent {
            cleared_input: false,
            retried_enter: true,
            verified: true
        }
    );
}

const DIALOG: &str = "╭──────────────────────────╮\n│ Bash command              │\n│   rm -rf target           │\n│ Do you want to proceed?   │\n│ ❯ 1. Yes                  │\n│   2. No, and tell Claude what to do differently (esc) │\n╰──────────────────────────╯\n";

#[test]
fn an_option_is_picked_only_while_its_dialog_shows_it() {
    assert!(SendCheck::option(1, "Yes", DIALOG).is_ok());
    assert!(SendCheck::option(2, "No, and tell Claude", DIALOG).is_ok());
    let idle = format!("{RULE}\n❯\u{a0}\n{RULE}\n");
    assert_eq!(
        SendCheck::option(1, "Yes", &idle),
        Err("the dialog is not on screen: no option \"1. Yes\" in the pane".to_string()),
        "a stale question must not type a digit into the prompt"
    );
    assert!(
        SendCheck::option(2, "Yes", DIALOG).is_err(),
        "option 2 is not Yes"
    );
    assert!(
        SendCheck::option(1, "Yes", "  11. Yes\n").is_err(),
        "1. Yes is not found in 11. Yes"
    );
}

#[test]
fn an_option_is_delivered_when_its_line_leaves_the_screen() {
    let mut check = SendCheck::option(1, "Yes", DIALOG).unwrap();
    assert_eq!(
        check.observe("⏺ Bash(rm -rf target)\n"),
        Delivery::Delivered
    );
    assert_eq!(
        check.sent(),
        Sent {
            cleared_input: false,
            retried_enter: false,
            verified: true
        }
    );
    // A UI that waits for Enter after the number: Enter once, then judged again.
    let mut check = SendCheck::option(1, "Yes", DIALOG).unwrap();
    assert_eq!(check.observe(DIALOG), Delivery::PressEnterAgain);
    assert_eq!(check.observe(DIALOG), Delivery::GiveUp);
    assert_eq!(
        check.sent(),
        Sent {
            cleared_input: false,
            retried_enter: true,
            verified: false
        }
    );
}
