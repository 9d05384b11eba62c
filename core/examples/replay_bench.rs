//! `make bench` (core part): reads a generated ~100 MB transcript through the core and,
//! in the same run, parses the same lines with plain `serde_json`, printing both side by side,
//! then hashes the run's turn texts and pane screens with the old FNV-1a and with SHA-256.
//!
//! The transcript is generated in 1 MiB chunks on the fly (same seed for both passes), so the
//! process's memory shows what the core itself keeps. Usage:
//! `cargo run --release -p headspace-core --example replay_bench [MEGABYTES]`.
// A benchmark times and measures itself; the core never does (core/clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use headspace_core::hook::matching::hash128;
use headspace_core::{Command, Config, Core, Input, Timestamp};
use headspace_testkit::synth::{SessionWriter, CLAUDE_DIR};
use serde_json::json;
use std::time::Instant;

/// Yields the transcript in chunks of about 1 MiB until `total` bytes.
struct Generator {
    s: SessionWriter,
    total: usize,
    produced: usize,
    n: u64,
    lines: u64,
    /// The turn texts of the last chunk, when asked for (the hashing pass).
    texts: Option<Vec<String>>,
}

impl Generator {
    fn new(total: usize) -> Generator {
        let t0 = Timestamp::parse_rfc3339("2026-11-01T00:00:00Z").unwrap();
        Generator {
            s: SessionWriter::new(1, t0),
            total,
            produced: 0,
            n: 0,
            lines: 0,
            texts: None,
        }
    }

    fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if self.produced >= self.total {
            return None;
        }
        let mut buf = Vec::with_capacity(1 << 20);
        while buf.len() < (1 << 20) {
            self.n += 1;
            let n = self.n;
            let prompt = format!("Task {n}: refactor module {} and run the tests", n % 97);
            let mut lines = vec![self.s.prompt(&prompt, None)];
            self.keep_text(prompt);
            for step in 0..3 {
                lines.push(self.s.thinking(&"Considering the options. ".repeat(8)));
                let text = format!(
                    "Step {step} of task {n}: reading the sources, {}.",
                    "and checking the call sites ".repeat(6)
                );
                lines.push(self.s.agent_text(&text));
                self.keep_text(text);
                let output = format!(
                    "{}\n",
                    "src/lib.rs:42: fn handle(&mut self, input: Input) -> Result<(), Error> {"
                        .repeat(60)
                );
                lines.extend(self.s.tool(
                    "Bash",
                    json!({"command": format!("grep -rn handle src/ # {n}")}),
                    &output,
                ));
            }
            let done = format!("Done. Task {n} is complete and all tests pass.");
            lines.push(self.s.agent_text(&done));
            self.keep_text(done);
            lines.push(self.s.turn_duration());
            for l in lines {
                buf.extend_from_slice(l.json.as_bytes());
                buf.push(b'\n');
                self.lines += 1;
            }
        }
        self.produced += buf.len();
        Some(buf)
    }

    fn keep_text(&mut self, text: String) {
        if let Some(texts) = &mut self.texts {
            texts.push(text);
        }
    }
}

/// The FNV-1a 128-bit hash the core used before SHA-256: kept here only as the baseline.
fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME))
}

/// What hashing costs: the turn texts of the same transcript and one pane screen per
/// chunk, hashed with the old FNV-1a and with the SHA-256 the core uses now.
struct HashCost {
    texts: u64,
    bytes: u64,
    fnv: std::time::Duration,
    sha: std::time::Duration,
}

fn hash_cost(total: usize) -> HashCost {
    let mut g = Generator::new(total);
    g.texts = Some(Vec::new());
    // A full 200×50 pane screen, as the watchdog hashes on every capture.
    let screen =
        "src/lib.rs:42: fn handle(&mut self, input: Input) -> Result<(), Error> {\n".repeat(50);
    let mut cost = HashCost {
        texts: 0,
        bytes: 0,
        fnv: Default::default(),
        sha: Default::default(),
    };
    while g.next_chunk().is_some() {
        let mut texts = g.texts.replace(Vec::new()).unwrap_or_default();
        texts.push(screen.clone());
        cost.texts += texts.len() as u64;
        cost.bytes += texts.iter().map(|t| t.len() as u64).sum::<u64>();
        let t = Instant::now();
        for text in &texts {
            std::hint::black_box(fnv1a_128(std::hint::black_box(text.as_bytes())));
        }
        cost.fnv += t.elapsed();
        let t = Instant::now();
        for text in &texts {
            std::hint::black_box(hash128(std::hint::black_box(text.as_bytes())));
        }
        cost.sha += t.elapsed();
    }
    cost
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Passes of each kind. On a shared 2-core machine a pass can run at half speed while a
/// neighbour works, and a ratio of two single passes then swings by 2× either way. Each
/// 1 MiB chunk is timed on its own, in every pass, and the fastest time of each chunk is
/// kept: a slow spell of a few milliseconds then costs nothing unless it hits that chunk in
/// every pass. The generator is deterministic, so chunk i is the same bytes (and a fresh
/// core the same state) in every pass.
const PASSES: usize = 5;

/// Splits lines and parses each with serde_json into a `Value`: the time of each chunk,
/// bytes, lines.
fn baseline_pass(total: usize) -> (Vec<std::time::Duration>, usize, u64) {
    let mut g = Generator::new(total);
    let (mut times, mut bytes, mut parsed) = (Vec::new(), 0usize, 0u64);
    while let Some(chunk) = g.next_chunk() {
        let t = Instant::now();
        for line in chunk.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).expect("valid");
            std::hint::black_box(&v);
            parsed += 1;
        }
        times.push(t.elapsed());
        bytes += chunk.len();
    }
    (times, bytes, parsed)
}

/// What a core pass measured.
struct CorePass {
    /// The time of each chunk.
    times: Vec<std::time::Duration>,
    turns: u64,
    rss_start: u64,
    rss_quarter: u64,
    rss_end: u64,
    index_len: usize,
}

/// The same bytes through a fresh core as transcript appends; commands drained and
/// dropped, as the shell hands them to the database.
fn core_pass(total: usize) -> CorePass {
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let mut g = Generator::new(total);
    let path = g.s.path();
    let (mut offset, mut turns, mut rss_quarter) = (0u64, 0u64, 0u64);
    let mut times = Vec::new();
    let rss_start = rss_kib();
    let mut now = Timestamp::parse_rfc3339("2026-11-01T00:00:00Z").unwrap();
    while let Some(chunk) = g.next_chunk() {
        let len = chunk.len() as u64;
        now = now.add_millis(1);
        let t = Instant::now();
        core.handle(
            now,
            Input::Transcript {
                path: path.clone(),
                offset,
                data: chunk,
                read: None,
            },
        );
        while let Some(c) = core.poll_command() {
            if let Command::Store(headspace_core::Write::Turn(_)) = c {
                turns += 1;
            }
        }
        times.push(t.elapsed());
        offset += len;
        if rss_quarter == 0 && offset as usize >= total / 4 {
            rss_quarter = rss_kib();
        }
    }
    CorePass {
        times,
        turns,
        rss_start,
        rss_quarter,
        rss_end: rss_kib(),
        index_len: core.index_len(),
    }
}

/// The sum over chunks of each chunk's fastest time across `passes`.
fn fastest_per_chunk(passes: &[Vec<std::time::Duration>]) -> std::time::Duration {
    (0..passes[0].len())
        .map(|i| passes.iter().map(|p| p[i]).min().expect("passes"))
        .sum()
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let total = mb << 20;

    // The kinds of pass take turns, so a slow spell of the machine falls on each alike.
    let (mut bases, mut cores) = (Vec::new(), Vec::new());
    let (mut bytes, mut parsed) = (0, 0);
    for _ in 0..PASSES {
        let (t, b, p) = baseline_pass(total);
        (bytes, parsed) = (b, p);
        bases.push(t);
        cores.push(core_pass(total));
    }
    let base = fastest_per_chunk(&bases);
    let core_times: Vec<_> = cores.iter().map(|c| c.times.clone()).collect();
    let core_total = fastest_per_chunk(&core_times);
    // Memory as the first pass saw it: the process had held nothing else yet.
    let first = &cores[0];
    let (turns, rss_start, rss_quarter, rss_end) = (
        first.turns,
        first.rss_start,
        first.rss_quarter,
        first.rss_end,
    );
    let ms = |ds: &[Vec<std::time::Duration>]| {
        ds.iter()
            .map(|p| {
                format!(
                    "{:.0}",
                    p.iter().sum::<std::time::Duration>().as_secs_f64() * 1e3
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "passes (ms): baseline {}; core {}; compared: each chunk's fastest, summed ({:.0} and {:.0} ms)",
        ms(&bases),
        ms(&core_times),
        base.as_secs_f64() * 1e3,
        core_total.as_secs_f64() * 1e3
    );

    let secs = |d: std::time::Duration| d.as_secs_f64().max(1e-9);
    let mbs = bytes as f64 / (1 << 20) as f64;
    println!("replay bench: {mbs:.0} MB transcript, {parsed} lines, {turns} turns, {PASSES} passes of each");
    println!("{:<28} {:>14} {:>10}", "", "entries/s", "MB/s");
    println!(
        "{:<28} {:>14.0} {:>10.1}",
        "serde_json::Value (baseline)",
        parsed as f64 / secs(base),
        mbs / secs(base)
    );
    println!(
        "{:<28} {:>14.0} {:>10.1}",
        "headspace core",
        parsed as f64 / secs(core_total),
        mbs / secs(core_total)
    );
    let speed = secs(base) / secs(core_total);
    println!("core speed vs baseline: {speed:.2}x (goal: at least 1.0x)");
    table_row(
        "core transcript ingest",
        &format!(
            "{:.0} MB/s = {speed:.2}× serde_json::Value ({:.0} MB/s)",
            mbs / secs(core_total),
            mbs / secs(base)
        ),
        "≥ 1.0× Value parse",
        speed >= 1.0,
    );
    println!(
        "memory: RSS {} KiB at start, {} KiB at 25%, {} KiB at 100% ({} index slots held)",
        rss_start, rss_quarter, rss_end, first.index_len
    );

    let hashing = hash_cost(total);
    let hash_mb = hashing.bytes as f64 / (1 << 20) as f64;
    println!(
        "text hashing: {} texts and pane screens, {hash_mb:.1} MB (what the core hashes for this transcript)",
        hashing.texts
    );
    println!(
        "{:<28} {:>14} {:>10} {:>14}",
        "", "ns/text", "MB/s", "of core time"
    );
    for (name, d) in [
        ("FNV-1a 128 (old baseline)", hashing.fnv),
        ("SHA-256, 128 bits (now)", hashing.sha),
    ] {
        println!(
            "{:<28} {:>14.0} {:>10.1} {:>13.2}%",
            name,
            secs(d) * 1e9 / hashing.texts.max(1) as f64,
            hash_mb / secs(d),
            100.0 * secs(d) / secs(core_total)
        );
    }
}

/// A row of `make bench`'s closing table, appended to the file `BENCH_TABLE` names
/// (scripts/bench.sh), or printed when run alone.
fn table_row(measure: &str, measured: &str, goal: &str, met: bool) {
    use std::io::Write;
    let line = format!(
        "{measure}\t{measured}\t{goal}\t{}\n",
        if met { "yes" } else { "NO" }
    );
    match std::env::var_os("BENCH_TABLE") {
        Some(path) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .expect("BENCH_TABLE file"),
        None => print!("table: {}", line.replace('\t', " | ")),
    }
}
