//! Typing into an agent's pane, the rules: when to clear the input box first, how long to
//! pause between keys, what counts as delivered, and how many times Enter is pressed again.
//!
//! Pure: the shell presses the keys, sleeps and captures; [`SendCheck`] judges each capture.
//! - Text: Escape first when the input box already holds text (an autocomplete suggestion or
//!   a half-typed line), so it cannot be sent by mistake; type; Enter. Delivered when the
//!   screen changed from what it showed right after typing.
//! - An option of a dialog: refused when the dialog is not on screen (a stale question must
//!   not type a digit into the prompt); its number key; Enter too when the screen still
//!   shows the option (an older or line-reading UI). Delivered when the option's line is
//!   gone.
//!
//! Either way Enter is pressed again at most once; after that the send is reported as not
//! verified, never retried blindly.

use crate::pane::{read_pane, shows_option};
use std::time::Duration;

/// The pause after Escape cleared the input box.
pub const CLEAR_PAUSE: Duration = Duration::from_millis(100);
/// The pause between typing text and pressing Enter (the UI takes a moment to show it).
pub const TYPE_PAUSE: Duration = Duration::from_millis(150);
/// The pause after a key that should deliver (Enter, a number key) before the capture that
/// checks it.
pub const SETTLE_PAUSE: Duration = Duration::from_millis(400);
/// How many times Enter is pressed again when a capture shows nothing delivered.
pub const ENTER_RETRIES: u32 = 1;

/// What a send did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// Escape was pressed first to clear text already in the input box.
    pub cleared_input: bool,
    /// Enter had to be pressed a second time.
    pub retried_enter: bool,
    /// The pane showed the send delivered.
    pub verified: bool,
}

/// What a capture after a key says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Delivered: stop.
    Delivered,
    /// Not delivered yet: press Enter, wait [`SETTLE_PAUSE`], capture again.
    PressEnterAgain,
    /// Not delivered and no retries left: stop, not verified.
    GiveUp,
}

/// What shows that a send is not delivered yet.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pending {
    /// The screen as it was right after typing: unchanged means Enter was not taken.
    Unchanged(String),
    /// The dialog still shows option `n` with this label.
    OptionShown(usize, String),
}

/// Judges the captures of one send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendCheck {
    pending: Pending,
    cleared_input: bool,
    retries: u32,
    delivered: bool,
}

/// True when the input box on `screen` holds text that Escape must clear before typing.
pub fn needs_clearing(screen: &str) -> bool {
    read_pane(screen).input.is_some_and(|t| !t.is_empty())
}

impl SendCheck {
    /// Checks a text send: `typed` is the capture right after typing, before Enter;
    /// `cleared_input` tells whether Escape was pressed first.
    pub fn text(typed: String, cleared_input: bool) -> SendCheck {
        SendCheck {
            pending: Pending::Unchanged(typed),
            cleared_input,
            retries: 0,
            delivered: false,
        }
    }

    /// Checks picking option `n` (labelled `label`) of the dialog on `screen`, the capture
    /// before any key; refused, saying why, when the dialog does not show that option.
    pub fn option(n: usize, label: &str, screen: &str) -> Result<SendCheck, String> {
        if !shows_option(screen, n, label) {
            return Err(format!(
                "the dialog is not on screen: no option \"{n}. {label}\" in the pane"
            ));
        }
        Ok(SendCheck {
            pending: Pending::OptionShown(n, label.to_string()),
            cleared_input: false,
            retries: 0,
            delivered: false,
        })
    }

    /// Judges a capture made [`SETTLE_PAUSE`] after the last key.
    pub fn observe(&mut self, screen: &str) -> Delivery {
        let pending = match &self.pending {
            Pending::Unchanged(typed) => screen == typed,
            Pending::OptionShown(n, label) => shows_option(screen, *n, label),
        };
        if !pending {
            self.delivered = true;
            Delivery::Delivered
        } else if self.retries < ENTER_RETRIES {
            self.retries += 1;
            Delivery::PressEnterAgain
        } else {
            Delivery::GiveUp
        }
    }

    /// What the send did, as far as it went.
    pub fn sent(&self) -> Sent {
        Sent {
            cleared_input: self.cleared_input,
            retried_enter: self.retries > 0,
            verified: self.delivered,
        }
    }
}
