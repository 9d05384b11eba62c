//! Fails a test on any ERROR log it did not expect.
//!
//! An ERROR log means the server met something it could not handle; a test that passes while
//! one is written hides a bug. In-process code is watched by [`fail_on_error_logs`], which
//! installs a tracing subscriber for the test's thread (a current-thread runtime's tasks run
//! there too); a server run as a child process is watched through its stderr with
//! [`unexpected_error_lines`]. A test that provokes an error on purpose declares it with
//! `expect_error("substring")`.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::subscriber::DefaultGuard;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The ERROR events seen and the substrings declared as expected.
#[derive(Default)]
struct Seen {
    errors: Vec<String>,
    expected: Vec<String>,
}

/// Watches the ERROR logs of the current thread until dropped; the drop fails the test (when
/// it is not already failing) if an ERROR log matched no expected substring.
#[must_use = "the check runs when the guard is dropped at the end of the test"]
pub struct ErrorLogGuard {
    seen: Arc<Mutex<Seen>>,
    _subscriber: DefaultGuard,
}

/// Starts watching this thread's ERROR logs (they are also printed, as the test's output).
pub fn fail_on_error_logs() -> ErrorLogGuard {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_test_writer()
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
        )
        .with(CountErrors { seen: seen.clone() })
        .set_default();
    ErrorLogGuard {
        seen,
        _subscriber: subscriber,
    }
}

impl ErrorLogGuard {
    /// Declares that an ERROR log containing `substring` is expected (it may appear any
    /// number of times, including none).
    pub fn expect_error(&self, substring: &str) {
        self.seen
            .lock()
            .expect("error log state")
            .expected
            .push(substring.to_string());
    }

    /// The ERROR logs seen so far that no expected substring covers.
    pub fn unexpected(&self) -> Vec<String> {
        let seen = self.seen.lock().expect("error log state");
        unexpected(&seen.errors, &seen.expected)
    }
}

impl Drop for ErrorLogGuard {
    fn drop(&mut self) {
        let unexpected = self.unexpected();
        if !unexpected.is_empty() && !std::thread::panicking() {
            panic!(
                "the test logged {} ERROR line(s) it did not expect (declare them with expect_error):\n{}",
                unexpected.len(),
                unexpected.join("\n")
            );
        }
    }
}

/// The ERROR lines of a child process's log (tracing's fmt output, with or without colours)
/// that contain none of the `expected` substrings.
pub fn unexpected_error_lines(log: &str, expected: &[String]) -> Vec<String> {
    let errors: Vec<String> = log
        .lines()
        .map(strip_ansi)
        .filter(|line| line.contains(" ERROR "))
        .collect();
    unexpected(&errors, expected)
}

fn unexpected(errors: &[String], expected: &[String]) -> Vec<String> {
    errors
        .iter()
        .filter(|e| !expected.iter().any(|x| e.contains(x.as_str())))
        .cloned()
        .collect()
}

/// A line without its terminal colour sequences (`ESC [ … letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The layer that records every ERROR event: its target and fields as one line.
struct CountErrors {
    seen: Arc<Mutex<Seen>>,
}

impl<S: Subscriber> Layer<S> for CountErrors {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if *event.metadata().level() != Level::ERROR {
            return;
        }
        let mut line = format!("{}:", event.metadata().target());
        event.record(&mut Fields(&mut line));
        self.seen.lock().expect("error log state").errors.push(line);
    }
}

/// Writes an event's fields as ` message key=value …`.
struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{fail_on_error_logs, unexpected_error_lines};

    #[test]
    fn an_unexpected_error_fails_the_test() {
        let result = std::panic::catch_unwind(|| {
            let _guard = fail_on_error_logs();
            tracing::warn!("a warning is fine");
            tracing::error!("the disk is on fire");
        });
        let message = *result
            .expect_err("the guard fails the test")
            .downcast::<String>()
            .unwrap();
        assert!(message.contains("the disk is on fire"), "{message}");
    }

    #[test]
    fn an_expected_error_passes() {
        let guard = fail_on_error_logs();
        guard.expect_error("write dropped");
        tracing::error!("[STORE] write dropped, the database refuses it");
        assert!(guard.unexpected().is_empty());
        tracing::error!("something else");
        assert_eq!(guard.unexpected().len(), 1);
        guard.expect_error("something else");
    }

    #[test]
    fn error_lines_of_a_child_log() {
        let log = "2026-11-23T22:00:00.000Z  INFO headspace: listening\n\
                   2026-11-23T22:00:01.000Z \u{1b}[31mERROR\u{1b}[0m \u{1b}[2mheadspace::pgstore\u{1b}[0m: [STORE] write dropped\n\
                   2026-11-23T22:00:02.000Z ERROR headspace::driver: [CORE] the core panicked\n\
                   a line that mentions ERRORS is not one\n";
        assert_eq!(
            unexpected_error_lines(log, &["write dropped".to_string()]),
            ["2026-11-23T22:00:02.000Z ERROR headspace::driver: [CORE] the core panicked"]
        );
        assert_eq!(unexpected_error_lines(log, &[]).len(), 2);
    }
}
