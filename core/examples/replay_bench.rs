//! `make bench` (core part): reads a generated ~100 MB transcript through the core and,
//! in the same run, parses the same lines with plain `serde_json`, printing both side by side.
//!
//! The transcript is generated in 1 MiB chunks on the fly (same seed for both passes), so the
//! process's memory shows what the core itself keeps. Usage:
//! `cargo run --release -p headspace-core --example replay_bench [MEGABYTES]`.
// A benchmark times and measures itself; the core never does (core/clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use headspace_core::synth::{SessionWriter, CLAUDE_DIR};
use headspace_core::{Command, Config, Core, Input, Timestamp};
use serde_json::json;
use std::time::Instant;

/// Yields the transcript in chunks of about 1 MiB until `total` bytes.
struct Generator {
    s: SessionWriter,
    total: usize,
    produced: usize,
    n: u64,
    lines: u64,
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
            let mut lines = vec![self.s.prompt(
                &format!("Task {n}: refactor module {} and run the tests", n % 97),
                None,
            )];
            for step in 0..3 {
                lines.push(self.s.thinking(&"Considering the options. ".repeat(8)));
                lines.push(self.s.agent_text(&format!(
                    "Step {step} of task {n}: reading the sources, {}.",
                    "and checking the call sites ".repeat(6)
                )));
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
            lines.push(
                self.s
                    .agent_text(&format!("Done. Task {n} is complete and all tests pass.")),
            );
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

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let total = mb << 20;

    // Baseline: split lines and parse each with serde_json into a Value.
    let mut g = Generator::new(total);
    let start = Instant::now();
    let (mut bytes, mut parsed) = (0usize, 0u64);
    while let Some(chunk) = g.next_chunk() {
        let t = Instant::now();
        for line in chunk.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).expect("valid");
            std::hint::black_box(&v);
            parsed += 1;
        }
        bytes += chunk.len();
        let _ = t;
    }
    let base_total = start.elapsed();
    // Generation time is measured alone and subtracted from both passes.
    let mut g = Generator::new(total);
    let gen_start = Instant::now();
    while let Some(c) = g.next_chunk() {
        std::hint::black_box(&c);
    }
    let gen = gen_start.elapsed();
    let base = base_total.saturating_sub(gen);

    // The core: the same bytes as transcript appends; commands drained and dropped, as the
    // shell hands them to the database.
    let mut core = Core::new(Config::new(CLAUDE_DIR));
    let mut g = Generator::new(total);
    let path = g.s.path();
    let (mut offset, mut turns, mut rss_quarter) = (0u64, 0u64, 0u64);
    let rss_start = rss_kib();
    let start = Instant::now();
    let mut now = Timestamp::parse_rfc3339("2026-11-01T00:00:00Z").unwrap();
    while let Some(chunk) = g.next_chunk() {
        let len = chunk.len() as u64;
        now = now.add_millis(1);
        core.handle(
            now,
            Input::Transcript {
                path: path.clone(),
                offset,
                data: chunk,
                read: None,
            },
        );
        offset += len;
        while let Some(c) = core.poll_command() {
            if let Command::Store(headspace_core::Write::Turn(_)) = c {
                turns += 1;
            }
        }
        if rss_quarter == 0 && offset as usize >= total / 4 {
            rss_quarter = rss_kib();
        }
    }
    let core_total = start.elapsed().saturating_sub(gen);
    let rss_end = rss_kib();

    let secs = |d: std::time::Duration| d.as_secs_f64().max(1e-9);
    let mbs = bytes as f64 / (1 << 20) as f64;
    println!("replay bench: {mbs:.0} MB transcript, {parsed} lines, {turns} turns (generation time {:.2}s subtracted)", gen.as_secs_f64());
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
    println!(
        "core speed vs baseline: {:.2}x (goal: at least 0.5x)",
        secs(base) / secs(core_total)
    );
    println!(
        "memory: RSS {} KiB at start, {} KiB at 25%, {} KiB at 100% ({} index slots held)",
        rss_start,
        rss_quarter,
        rss_end,
        core.index_len()
    );
}
