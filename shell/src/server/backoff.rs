//! The pause between two tries of something that failed or is not there yet: it doubles
//! from a first pause up to a longest one (a store call while the database is down, a
//! forwarded command's result, an accept out of file descriptors).

use std::time::Duration;

/// Pauses that double, up to a bound.
#[derive(Clone, Debug)]
pub struct Backoff {
    first: Duration,
    next: Duration,
    longest: Duration,
}

impl Backoff {
    /// Pauses from `first`, doubling up to `longest`.
    pub fn new(first: Duration, longest: Duration) -> Backoff {
        Backoff {
            first,
            next: first,
            longest,
        }
    }

    /// The pause the next [`Backoff::pause`] sleeps.
    pub fn next(&self) -> Duration {
        self.next
    }

    /// Sleeps the next pause (tokio's clock, so the simulation's time drives it), then
    /// doubles it.
    pub async fn pause(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(self.longest);
    }

    /// Starts again from the first pause (the thing worked).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::Duration;

    #[tokio::test]
    async fn pauses_double_up_to_the_longest_and_start_again_after_a_reset() {
        let ms = Duration::from_micros;
        let mut b = Backoff::new(ms(50), ms(300));
        let mut seen = Vec::new();
        for _ in 0..5 {
            seen.push(b.next());
            b.pause().await;
        }
        assert_eq!(seen, [ms(50), ms(100), ms(200), ms(300), ms(300)]);
        b.reset();
        assert_eq!(b.next(), ms(50));
    }
}
