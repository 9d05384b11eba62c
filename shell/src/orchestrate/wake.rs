//! Wake-ups for the runner's loop: a file changed, the user pressed something.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Wake-ups for the loop. Every waiter sees every wake-up, including one that came while it
/// was busy rather than waiting (the seed's event-sleep fix: its single callback per run was
/// overwritten by the second waiter, and a wake-up between two sleeps was lost).
#[derive(Clone, Debug)]
pub struct Wake {
    tx: Arc<watch::Sender<u64>>,
}

impl Default for Wake {
    fn default() -> Self {
        Wake::new()
    }
}

impl Wake {
    /// A new set of wake-ups.
    pub fn new() -> Self {
        Wake {
            tx: Arc::new(watch::channel(0).0),
        }
    }

    /// Wakes every waiter (a file changed, the user pressed something).
    pub fn wake(&self) {
        self.tx.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// A waiter that sees the wake-ups from now on.
    pub fn waiter(&self) -> Waiter {
        Waiter {
            rx: self.tx.subscribe(),
            _tx: self.tx.clone(),
        }
    }
}

/// One waiter of a [`Wake`].
#[derive(Debug)]
pub struct Waiter {
    rx: watch::Receiver<u64>,
    // Keeps the channel open, so `changed()` never fails and turns the wait into a spin.
    _tx: Arc<watch::Sender<u64>>,
}

impl Waiter {
    /// Sleeps `ms`, or less if woken (or if a wake-up came since the last sleep). Returns
    /// whether it was woken.
    pub async fn sleep_or_wake(&mut self, ms: u64) -> bool {
        tokio::select! {
            r = self.rx.changed() => {
                self.rx.borrow_and_update();
                r.is_ok()
            }
            _ = tokio::time::sleep(Duration::from_millis(ms)) => false,
        }
    }
}
