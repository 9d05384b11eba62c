//! Reading timings: percentiles of sorted durations, in milliseconds.

use std::time::Duration;

/// The `p` percentile (0.0–1.0) of `sorted` (ascending), the nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
