//! Wrong credentials cost the guesser: at most [`GUESSES_PER_SECOND`] wrong tokens are
//! answered each second, on every route together, whoever sends them and however many
//! connections they use. A wrong guess waits for its turn before its 401 goes out, holding
//! its connection busy meanwhile, so the connection cap bounds how many wait at once. The
//! right credential never waits: the gate is only for requests already found wrong.

use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Wrong credentials answered per second, in all.
pub const GUESSES_PER_SECOND: u32 = 10;

/// The queue wrong guesses wait in.
#[derive(Debug)]
pub struct GuessGate {
    /// When the next wrong guess may be answered.
    next: Mutex<Option<Instant>>,
    spacing: Duration,
}

impl Default for GuessGate {
    fn default() -> Self {
        GuessGate {
            next: Mutex::new(None),
            spacing: Duration::from_secs(1) / GUESSES_PER_SECOND,
        }
    }
}

impl GuessGate {
    /// Waits for this wrong guess's turn: the first after a quiet spell waits one spacing,
    /// each one behind it a spacing more.
    pub async fn pay(&self) {
        let turn = {
            let mut next = self.next.lock().expect("guess gate");
            let now = crate::clock::instant();
            let turn = next.map_or(now, |n| n.max(now)) + self.spacing;
            *next = Some(turn);
            turn
        };
        tokio::time::sleep_until(turn).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn wrong_guesses_are_answered_ten_a_second_however_many_come_at_once() {
        let gate = std::sync::Arc::new(GuessGate::default());
        let start = Instant::now();
        let waits: Vec<_> = (0..30)
            .map(|_| {
                let gate = gate.clone();
                tokio::spawn(async move {
                    gate.pay().await;
                    Instant::now()
                })
            })
            .collect();
        let mut done = Vec::new();
        for w in waits {
            done.push(w.await.unwrap() - start);
        }
        done.sort();
        assert!(done[0] >= Duration::from_millis(100), "{:?}", done[0]);
        assert!(
            done[29] >= Duration::from_secs(3),
            "30 guesses take 3 s: {:?}",
            done[29]
        );
        // After a quiet spell a guess waits one spacing again, not the backlog.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let before = Instant::now();
        gate.pay().await;
        assert_eq!(Instant::now() - before, Duration::from_millis(100));
    }
}
