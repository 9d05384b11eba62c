//! The load phases of the many-agents benches, on any set-up (edges and hubs, or one
//! server): a steady load at a given rate with its latencies at the SSE streams, and flat
//! out from some of the agents; each with the turns committed and the CPU it cost.

use super::agents::{answer_of, flat_out, on_schedule, rounds, Agents, Sent};
use super::costs::{cores, Cores, Ticks};
use super::pg::Sql;
use super::sse::{latencies, percentile, Seen};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Progress, with the time since the bench began.
pub fn say(begin: Instant, what: &str) {
    println!("[{:6.1} s] {what}", begin.elapsed().as_secs_f64());
}

/// Waits until `turns` rows are stored (or 60 s pass); when they were, if they were.
fn committed(db: &Sql, turns: i64) -> Option<Instant> {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if db.count("SELECT count(*) FROM turns") >= turns {
            return Some(Instant::now());
        }
        // Not faster: a count over the turns costs PostgreSQL ~10 ms, which it would bill
        // to the load being measured.
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

/// Hook → SSE (the prompts) and transcript line → SSE (the answers) latencies at one
/// stream, in ms, sorted; and how many of both never came.
fn both_latencies(sent: &HashMap<String, Sent>, seen: &Seen) -> (Vec<f64>, Vec<f64>, usize) {
    let prompts: HashMap<String, Instant> =
        sent.iter().map(|(t, s)| (t.clone(), s.prompt)).collect();
    let answers: HashMap<String, Instant> =
        sent.iter().map(|(t, s)| (answer_of(t), s.answer)).collect();
    let (p, pm) = latencies(&prompts, seen, Duration::from_secs(60));
    let (a, am) = latencies(&answers, seen, Duration::from_secs(30));
    (p, a, pm + am)
}

/// When the prompts slower than 50 ms to reach `seen` were sent: seconds into the load and
/// how many in each, the busiest first (a stall shows as a second with many, a periodic one
/// as seconds a period apart).
fn slow_seconds(sent: &HashMap<String, Sent>, seen: &Seen) -> String {
    let Some(start) = sent.values().map(|s| s.prompt).min() else {
        return String::new();
    };
    let got = seen.lock().unwrap();
    let mut by_second: std::collections::BTreeMap<u64, usize> = Default::default();
    for (text, s) in sent {
        if got
            .get(text)
            .is_some_and(|t| t.saturating_duration_since(s.prompt) > Duration::from_millis(50))
        {
            *by_second
                .entry(s.prompt.duration_since(start).as_secs())
                .or_default() += 1;
        }
    }
    let mut busiest: Vec<(u64, usize)> = by_second.into_iter().collect();
    busiest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    busiest
        .iter()
        .take(8)
        .map(|(sec, n)| format!("{sec} s: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a steady load on one set-up gave.
pub struct Steady {
    /// Turns committed per second.
    pub turns_per_s: f64,
    /// Turn lines written per second.
    pub written_per_s: f64,
    /// Prompt hook sent → its turn on the first stream, median ms.
    pub hook_p50: f64,
    /// The same, p99.
    pub hook_p99: f64,
    /// Answer line appended → its turn on the first stream, p99 ms.
    pub line_p99: f64,
    /// Turns that never reached the first stream.
    pub missing: usize,
    /// What each group of processes used.
    pub cores: Cores,
    /// Edge (or `--role all` server) CPU per committed turn, µs.
    pub cpu_us_per_turn: f64,
    /// PostgreSQL CPU per committed turn, µs.
    pub pg_us_per_turn: f64,
}

/// Each agent's first exchange over 5 s, then `rounds` periods of the steady load (each agent
/// one exchange per `period`);
/// latencies read at `streams` (the first is the one reported as p50/p99).
pub fn steady(
    begin: Instant,
    db: &Sql,
    agents: &Agents,
    streams: &[Seen],
    measure: &dyn Fn() -> Ticks,
    tag: &str,
    (period, periods): (Duration, u32),
) -> (Steady, Vec<(f64, f64)>) {
    let all: Vec<usize> = (0..agents.len()).collect();
    let warm = on_schedule(
        agents,
        rounds(&all, Duration::from_secs(5), 1, &format!("{tag} warm-up")),
        16,
    );
    let (_, _, missing) = both_latencies(&warm, &streams[0]);
    say(
        begin,
        &format!("{tag}: every agent's first exchange in ({missing} not seen on the stream)"),
    );
    let turns0 = db.count("SELECT count(*) FROM turns");
    let t0 = measure();
    let sent = on_schedule(agents, rounds(&all, period, periods, tag), 16);
    let written = 2 * sent.len() as i64;
    let done = committed(db, turns0 + written);
    let t1 = measure();
    let wall = done.unwrap_or(t1.at).duration_since(t0.at).as_secs_f64();
    let turns = db.count("SELECT count(*) FROM turns") - turns0;
    let mut per_stream = Vec::new();
    let mut first = None;
    for s in streams {
        let (p, a, m) = both_latencies(&sent, s);
        per_stream.push((percentile(&p, 0.5), percentile(&p, 0.99)));
        first.get_or_insert((p, a, m));
    }
    let (p, a, missing) = first.unwrap();

    let c = cores(&t0, &t1);
    let result = Steady {
        turns_per_s: turns as f64 / wall,
        written_per_s: written as f64 / wall,
        hook_p50: percentile(&p, 0.5),
        hook_p99: percentile(&p, 0.99),
        line_p99: percentile(&a, 0.99),
        missing,
        cpu_us_per_turn: (c.edges_secs) * 1e6 / turns.max(1) as f64,
        pg_us_per_turn: c.postgres_secs * 1e6 / turns.max(1) as f64,
        cores: c,
    };
    say(
        begin,
        &format!(
            "{tag}: {} exchanges in {wall:.1} s: {turns} turns committed of {written} lines written ({:.0}/s); hook → SSE p50 {:.2} ms p90 {:.2} ms p99 {:.2} ms ({} of {} over 50 ms), line → SSE p99 {:.2} ms, {missing} missing; {}",
            sent.len(),
            result.turns_per_s,
            result.hook_p50,
            percentile(&p, 0.9),
            result.hook_p99,
            p.iter().filter(|&&x| x > 50.0).count(),
            p.len(),
            result.line_p99,
            result.cores.line()
        ),
    );
    say(
        begin,
        &format!(
            "{tag}: hooks over 50 ms by the second they were sent in (busiest first): {}",
            slow_seconds(&sent, &streams[0])
        ),
    );
    (result, per_stream)
}

/// One flat-out step: turns/s committed and served, and PostgreSQL's cores and µs per turn.
pub struct Flat {
    /// Turns committed per second, from the first send until all were committed.
    pub turns_per_s: f64,
    /// Turns per second served on the first stream, from the first send until it carried
    /// every prompt.
    pub served_per_s: f64,
    /// Seconds from the last commit until the first stream carried every prompt.
    pub lag_s: f64,
    /// What each group of processes used.
    pub cores: Cores,
    /// PostgreSQL CPU per committed turn, µs.
    pub pg_us_per_turn: f64,
}

/// As many exchanges as 8 threads make in `time` from the agents `which`, then until all
/// their turns are committed and every prompt is on `stream`.
#[allow(clippy::too_many_arguments)]
pub fn flat(
    begin: Instant,
    db: &Sql,
    agents: &Agents,
    which: &[usize],
    stream: &Seen,
    measure: &dyn Fn() -> Ticks,
    tag: &str,
    time: Duration,
) -> Flat {
    let turns0 = db.count("SELECT count(*) FROM turns");
    let t0 = measure();
    let sent = flat_out(agents, which, time, 8, tag);
    let done = committed(db, turns0 + 2 * sent.len() as i64);
    let t1 = measure();
    let turns = db.count("SELECT count(*) FROM turns") - turns0;
    let done = done.unwrap_or(t1.at);
    let wall = done.duration_since(t0.at).as_secs_f64();
    let end = Instant::now() + Duration::from_secs(120);
    let served = loop {
        let got = stream.lock().unwrap();
        let last = sent
            .iter()
            .map(|t| got.get(t).copied())
            .collect::<Option<Vec<Instant>>>();
        drop(got);
        match last {
            Some(at) => break at.into_iter().max().unwrap_or(done),
            None if Instant::now() > end => break Instant::now(),
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let c = cores(&t0, &t1);
    let f = Flat {
        turns_per_s: turns as f64 / wall,
        served_per_s: turns as f64 / served.duration_since(t0.at).as_secs_f64(),
        lag_s: served.saturating_duration_since(done).as_secs_f64(),
        pg_us_per_turn: c.postgres_secs * 1e6 / turns.max(1) as f64,
        cores: c,
    };
    say(
        begin,
        &format!(
            "{tag}: {} exchanges sent in {:.0} s, {turns} turns committed in {wall:.1} s = {:.0} turns/s; on the stream {:.1} s after the last commit ({:.0} turns/s); PostgreSQL {:.0} µs CPU per turn; {}",
            sent.len(),
            time.as_secs_f64(),
            f.turns_per_s,
            f.lag_s,
            f.served_per_s,
            f.pg_us_per_turn,
            f.cores.line()
        ),
    );
    f
}
