//! The hostile world's knobs. Each run draws them from its seed (or a scenario fixes them)
//! and prints them as a table first, so a failure report says what the world was like.

use crate::rng::Rng;
use std::fmt;

/// How hostile the world is during the safety phase. The liveness phase turns all of it off.
#[derive(Clone, Debug, PartialEq)]
pub struct Faults {
    /// Probability a hook is lost (the fire-and-forget script gave up).
    pub hook_drop: f64,
    /// Probability a hook is posted twice.
    pub hook_dup: f64,
    /// Every hook is delayed by up to this many ms (so hooks reorder).
    pub hook_delay_ms: u64,
    /// Probability a hook is very late (5 to 25 s): a Stop after the next prompt (sm#232).
    pub hook_late: f64,
    /// Every transcript line is written up to this many ms after its timestamp.
    pub transcript_lag_ms: u64,
    /// Probability the transcript writer stalls 30 to 45 s before a line.
    pub transcript_stall: f64,
    /// Probability a line is written in two parts, with a pause between.
    pub partial_write: f64,
    /// Probability a store commit fails.
    pub store_fail: f64,
    /// Store outages (2 to 10 s each) during the safety phase.
    pub store_outages: u32,
    /// Server crashes (and restarts 0.5 to 5 s later) at random moments.
    pub crashes: u32,
    /// Probability the server crashes right after a commit that holds a turn (between a turn
    /// and the state change a later batch carries).
    pub crash_after_turn: f64,
    /// Probability a pane capture fails.
    pub pane_fail: f64,
    /// The pane shows the screen of this many ms ago (a stale screen).
    pub pane_stale_ms: u64,
    /// Pairs of concurrent reconciles from the endpoint (the watchdog adds its own).
    pub reconciles: u32,
    /// A slow store: an evicted agent's rows come back up to this many ms late, while the
    /// core holds every input behind them (decided, once they come, as of their arrival).
    pub slow_loads_ms: u64,
}

impl Faults {
    /// A calm world.
    pub fn none() -> Faults {
        Faults {
            hook_drop: 0.0,
            hook_dup: 0.0,
            hook_delay_ms: 0,
            hook_late: 0.0,
            transcript_lag_ms: 0,
            transcript_stall: 0.0,
            partial_write: 0.0,
            store_fail: 0.0,
            store_outages: 0,
            crashes: 0,
            crash_after_turn: 0.0,
            pane_fail: 0.0,
            pane_stale_ms: 0,
            reconciles: 0,
            slow_loads_ms: 0,
        }
    }

    /// A world drawn from `rng`: each knob is off about a third of the time, so seeds
    /// explore single faults as well as storms.
    pub fn draw(rng: &mut Rng) -> Faults {
        let on = |rng: &mut Rng| rng.chance(0.65);
        let p = |rng: &mut Rng, max: f64| (rng.range(0, 1000) as f64 / 1000.0) * max;
        Faults {
            hook_drop: if on(rng) { p(rng, 0.3) } else { 0.0 },
            hook_dup: if on(rng) { p(rng, 0.3) } else { 0.0 },
            hook_delay_ms: if on(rng) { rng.range(0, 3_000) } else { 0 },
            hook_late: if on(rng) { p(rng, 0.15) } else { 0.0 },
            transcript_lag_ms: if on(rng) { rng.range(0, 4_000) } else { 0 },
            transcript_stall: if on(rng) { p(rng, 0.05) } else { 0.0 },
            partial_write: if on(rng) { p(rng, 0.5) } else { 0.0 },
            store_fail: if on(rng) { p(rng, 0.2) } else { 0.0 },
            store_outages: if on(rng) { rng.range(0, 3) as u32 } else { 0 },
            crashes: if on(rng) { rng.range(0, 4) as u32 } else { 0 },
            crash_after_turn: if on(rng) { p(rng, 0.05) } else { 0.0 },
            pane_fail: if on(rng) { p(rng, 0.3) } else { 0.0 },
            pane_stale_ms: if on(rng) { rng.range(0, 1_500) } else { 0 },
            reconciles: if on(rng) { rng.range(0, 4) as u32 } else { 0 },
            // Drawn last: the knobs before it keep their values for every earlier seed.
            slow_loads_ms: if on(rng) { rng.range(0, 4_000) } else { 0 },
        }
    }
}

impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows: [(&str, String); 15] = [
            ("hooks dropped", format!("{:.0}%", self.hook_drop * 100.0)),
            ("hooks duplicated", format!("{:.0}%", self.hook_dup * 100.0)),
            (
                "hook delay (reorders)",
                format!("0–{} ms", self.hook_delay_ms),
            ),
            (
                "hooks 5–25 s late",
                format!("{:.0}%", self.hook_late * 100.0),
            ),
            ("transcript lag", format!("0–{} ms", self.transcript_lag_ms)),
            (
                "transcript stalls 30–45 s",
                format!("{:.1}%", self.transcript_stall * 100.0),
            ),
            (
                "lines written in two parts",
                format!("{:.0}%", self.partial_write * 100.0),
            ),
            (
                "store commits failing",
                format!("{:.0}%", self.store_fail * 100.0),
            ),
            ("store outages", self.store_outages.to_string()),
            ("server crashes", self.crashes.to_string()),
            (
                "crash right after a turn commit",
                format!("{:.0}%", self.crash_after_turn * 100.0),
            ),
            (
                "pane captures failing",
                format!("{:.0}%", self.pane_fail * 100.0),
            ),
            ("stale pane screen", format!("{} ms", self.pane_stale_ms)),
            ("concurrent reconcile pairs", self.reconciles.to_string()),
            (
                "agent rows loaded late",
                format!("0–{} ms", self.slow_loads_ms),
            ),
        ];
        writeln!(f, "  {:<34} setting", "fault")?;
        for (k, v) in rows {
            writeln!(f, "  {k:<34} {v}")?;
        }
        Ok(())
    }
}
