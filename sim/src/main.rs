//! `headspace-sim`: list the scenarios, run one with a seed, or run a swarm of seeds.

use clap::{Parser, Subcommand};
use headspace_sim::rng::Rng;
use headspace_sim::run::{run, Outcome};
use headspace_sim::scenario::{find, Scenario, SCENARIOS};
use headspace_sim::Bug;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "headspace-sim",
    about = "Runs the real Headspace server under deterministic simulation"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Lists the scenarios and the bugs that can be planted.
    List,
    /// Runs one scenario with one seed and prints what broke.
    Run {
        /// The scenario (see `list`).
        scenario: String,
        /// The seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Plants a known bug in the server (see `list`).
        #[arg(long)]
        inject_bug: Option<String>,
        /// Writes the core's inputs as a `headspace replay` trace.
        #[arg(long)]
        trace: Option<std::path::PathBuf>,
        /// Prints the store (agents, tasks, turns) at the end.
        #[arg(long)]
        dump: bool,
    },
    /// Shows each planted bug is caught: the first seed (of `--seeds`) where it breaks an
    /// invariant that holds without it.
    Catch {
        /// Seeds to try per bug.
        #[arg(long, default_value_t = 200)]
        seeds: u64,
    },
    /// Runs many seeds; prints each failure with the command that reproduces it.
    Swarm {
        /// How many seeds.
        #[arg(long, default_value_t = 100)]
        seeds: u64,
        /// The first seed.
        #[arg(long, default_value_t = 1)]
        first: u64,
        /// The scenario.
        #[arg(long, default_value = "random")]
        scenario: String,
        /// Plants a known bug in the server (see `list`).
        #[arg(long)]
        inject_bug: Option<String>,
        /// Stops at the first failing seed.
        #[arg(long)]
        until_found: bool,
    },
}

fn scenario(name: &str) -> Result<&'static Scenario, String> {
    find(name).ok_or_else(|| {
        format!(
            "no scenario {name:?}; there are: {}",
            SCENARIOS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn bug(name: Option<&str>) -> Result<Option<Bug>, String> {
    name.map(|n| {
        Bug::parse(n).ok_or_else(|| {
            format!(
                "no planted bug {n:?}; there are: {}",
                Bug::ALL.map(|b| b.name()).join(", ")
            )
        })
    })
    .transpose()
}

fn reproduce(s: &Scenario, seed: u64, b: Option<Bug>) -> String {
    let bug = b
        .map(|b| format!(" --inject-bug {}", b.name()))
        .unwrap_or_default();
    format!("headspace-sim run {} --seed {seed}{bug}", s.name)
}

fn report(o: &Outcome) {
    for v in &o.violations {
        println!("  {} at {}: {}", v.invariant, v.at, v.detail);
    }
}

/// Log lines stamped with the simulated time since the run began.
struct SimTime;

impl tracing_subscriber::fmt::time::FormatTime for SimTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        match turmoil::sim_elapsed() {
            Some(t) => write!(w, "{:>9.3}s", t.as_secs_f64()),
            None => write!(w, "        -"),
        }
    }
}

fn main() -> ExitCode {
    // The server's log, for following one seed: `RUST_LOG=info headspace-sim run …`.
    if let Ok(filter) = std::env::var("RUST_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .with_timer(SimTime)
            .with_ansi(false)
            .init();
    }
    if !headspace_sim::seeded_runtimes() {
        eprintln!(
            "headspace-sim: warning: built without --cfg tokio_unstable (.cargo/config.toml sets it; a RUSTFLAGS in the environment replaces it): a seed may not replay byte for byte"
        );
    }
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("headspace-sim: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<ExitCode, String> {
    match Cli::parse().command {
        Cmd::List => {
            println!("scenarios:");
            for s in SCENARIOS {
                println!("  {:<34} {}", s.name, s.about);
            }
            println!("planted bugs (--inject-bug):");
            for b in Bug::ALL {
                println!("  {}", b.name());
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run {
            scenario: name,
            seed,
            inject_bug,
            trace,
            dump,
        } => {
            let s = scenario(&name)?;
            let b = bug(inject_bug.as_deref())?;
            let plan = (s.plan)(&mut Rng::new(seed));
            println!(
                "scenario {} · seed {seed} · {} agents{}",
                s.name,
                plan.agents.len(),
                b.map(|b| format!(" · planted bug {}", b.name()))
                    .unwrap_or_default()
            );
            print!("{}", plan.faults);
            let o = run(&plan, seed, b);
            if let Some(p) = trace {
                std::fs::write(&p, &o.trace)
                    .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
                println!("trace written to {}", p.display());
            }
            println!(
                "{:.0} simulated seconds in {:.2} s ({:.0}× real time) · {} turns · {} commits · {} crashes",
                o.sim_ms as f64 / 1000.0,
                o.wall.as_secs_f64(),
                o.sim_ms as f64 / 1000.0 / o.wall.as_secs_f64().max(1e-9),
                o.turns,
                o.commits,
                o.crashes
            );
            if let Some(c) = &o.cluster {
                println!("{c}");
            }
            if dump {
                println!("{}", o.store);
            }
            if o.passed() {
                let extra = if plan.orchestration {
                    ", O1–O2"
                } else if plan.cluster {
                    " (on each edge), C1, E1"
                } else {
                    ""
                };
                println!("passed: S1–S5, A1–A2, L1–L2, D1{extra} hold");
                Ok(ExitCode::SUCCESS)
            } else {
                println!("FAILED ({} violations):", o.violations.len());
                report(&o);
                Ok(ExitCode::FAILURE)
            }
        }
        Cmd::Catch { seeds } => {
            let mut missed = 0;
            for b in Bug::ALL {
                let started = headspace::clock::instant();
                match headspace_sim::run::catching_seed(b, 1..=seeds) {
                    Some((seed, scenario, v)) => {
                        println!(
                        "{:<28} caught at seed {seed} ({scenario}, {:.1} s): {} {} — reproduce: {}",
                        b.name(),
                        headspace::clock::since(started).as_secs_f64(),
                        v.invariant,
                        v.detail,
                        reproduce(find(scenario).expect("a scenario of the list"), seed, Some(b))
                    )
                    }
                    None => {
                        missed += 1;
                        println!("{:<28} NOT caught in {seeds} seeds", b.name());
                    }
                }
            }
            println!("{} caught, {missed} missed", Bug::ALL.len() - missed);
            Ok(if missed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Cmd::Swarm {
            seeds,
            first,
            scenario: name,
            inject_bug,
            until_found,
        } => {
            let s = scenario(&name)?;
            let b = bug(inject_bug.as_deref())?;
            let started = headspace::clock::instant();
            let (mut passed, mut sim_ms) = (0u64, 0u64);
            let mut failures = Vec::new();
            // Orchestration seeds: how many met each fault, so a figure says what was tried.
            let (mut crashed_seeds, mut crashes, mut by_budget) = (0u64, 0u64, 0u64);
            let mut ends: std::collections::BTreeMap<String, u64> = Default::default();
            for (i, seed) in (first..first + seeds).enumerate() {
                let plan = (s.plan)(&mut Rng::new(seed));
                let o = run(&plan, seed, b);
                sim_ms += o.sim_ms;
                crashes += u64::from(o.runner_crashes);
                crashed_seeds += u64::from(o.runner_crashes > 0);
                if let Some((status, budget)) = &o.run_end {
                    *ends.entry(status.clone()).or_default() += 1;
                    by_budget += u64::from(*budget);
                }
                if o.passed() {
                    passed += 1;
                } else {
                    let first = &o.violations[0];
                    failures.push(format!(
                        "seed {seed}: {} {} — reproduce: {}",
                        first.invariant,
                        first.detail,
                        reproduce(s, seed, b)
                    ));
                }
                let done = i as u64 + 1;
                let failed = failures.len();
                let width = 30;
                let filled = (done * width / seeds.max(1)) as usize;
                eprint!(
                    "\r[{}{}] {done}/{seeds} seeds · {failed} failed · {:.0}× real time ",
                    "#".repeat(filled),
                    ".".repeat(width as usize - filled),
                    sim_ms as f64
                        / 1000.0
                        / headspace::clock::since(started).as_secs_f64().max(1e-9)
                );
                let _ = std::io::stderr().flush();
                if until_found && !failures.is_empty() {
                    break;
                }
            }
            eprintln!();
            for f in &failures {
                println!("{f}");
            }
            let wall = headspace::clock::since(started).max(Duration::from_millis(1));
            println!(
                "{:.0} simulated seconds in {:.1} s: {:.0}× real time",
                sim_ms as f64 / 1000.0,
                wall.as_secs_f64(),
                sim_ms as f64 / 1000.0 / wall.as_secs_f64()
            );
            if !ends.is_empty() {
                let ends: Vec<String> = ends.iter().map(|(s, n)| format!("{n} {s}")).collect();
                println!(
                    "orchestration: runs ended {}; {by_budget} stopped by their budget; the runner crashed {crashes} times in {crashed_seeds} seeds",
                    ends.join(", ")
                );
            }
            println!("{passed} passed, {} failed", failures.len());
            Ok(if failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}
