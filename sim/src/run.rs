//! One simulated run: the real server (core, driver, writer, HTTP, sweep, watchdog) on a
//! turmoil host over the simulated world, the agents on a client host, crashes and restarts
//! from the harness, invariants after every commit and at the end.

use crate::check::Violation;
use crate::host::{server, GONE_WITHIN_MS, TICK_MS};
pub use crate::host::{ServerSpec, SINGLE};
use crate::net::{pane_segment, post};
pub use crate::outcome::Outcome;
use crate::plan::Plan;
use crate::rng::Rng;
use crate::session::play_agents;
use crate::world::{AdapterFaults, SimWorld, EPOCH_MS};
use headspace_core::harness::planted::Bug;
use std::time::Duration;

/// Runs `plan` with `seed` (turmoil's network and every fault draw), with `bug` planted.
pub fn run(plan: &Plan, seed: u64, bug: Option<Bug>) -> Outcome {
    crate::task_ids::align_task_ids();
    if plan.cluster {
        return crate::cluster::run(plan, seed, bug);
    }
    let wall = headspace::clock::instant();
    let mut rng = Rng::new(seed);
    let f = &plan.faults;
    // The safety phase's length, roughly: the longest agent.
    let horizon: u64 = plan
        .agents
        .iter()
        .map(|a| a.start_ms + a.steps.len() as u64 * 8_000)
        .max()
        .unwrap_or(10_000)
        .max(10_000)
        // An orchestration's six steps take about a minute and a half: faults all along.
        .max(if plan.orchestration { 90_000 } else { 0 });
    let outages = (0..f.store_outages)
        .map(|_| {
            let at = rng.range(0, horizon) as i64;
            (at, at + rng.range(2_000, 10_000) as i64)
        })
        .collect();
    let mut crashes: Vec<(u64, u64)> = (0..f.crashes)
        .map(|_| (rng.range(1_000, horizon), rng.range(500, 5_000)))
        .collect();
    crashes.sort();
    let reconciles: Vec<(u64, usize)> = (0..f.reconciles)
        .map(|_| {
            (
                rng.range(1_000, horizon),
                rng.range(0, plan.agents.len() as u64) as usize,
            )
        })
        .collect();
    let world = SimWorld::new(
        rng.fork(),
        AdapterFaults {
            store_fail: f.store_fail,
            outages,
            crash_after_turn: f.crash_after_turn,
            pane_fail: f.pane_fail,
            pane_stale_ms: f.pane_stale_ms as i64,
            slow_loads_ms: f.slow_loads_ms,
        },
    );
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(24 * 3600))
        .tick_duration(Duration::from_millis(TICK_MS))
        .epoch(std::time::UNIX_EPOCH + Duration::from_millis(EPOCH_MS as u64))
        .rng_seed(seed)
        // A hook storm opens hundreds of connections at once.
        .tcp_capacity(65_536)
        .build();
    let w = world.clone();
    sim.host("server", move || server(w.clone(), bug, SINGLE));
    if plan.orchestration {
        world.lock().orchestra.project = Some(crate::orchestra::new_project(seed));
        let w = world.clone();
        sim.client("runner", async move {
            // Its own generator from the seed: the other draws stay as they were.
            let rng = Rng::new(seed ^ 0x0c4e_57a4);
            crate::orchestra::run_orchestration(w, "%1".into(), 1_500, rng).await;
            Ok(())
        });
    }
    let (w, agents, faults, arng) = (
        world.clone(),
        plan.agents.clone(),
        plan.faults.clone(),
        rng.fork(),
    );
    sim.client("claude", async move {
        play_agents(agents, w, faults, arng).await;
        Ok(())
    });
    sim.client("ops", async move {
        // Pairs of reconciles of the same agent at once, from the endpoint.
        for (at, agent) in reconciles {
            let now = turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64;
            tokio::time::sleep(Duration::from_millis(at.saturating_sub(now))).await;
            let path = format!(
                "/api/agents/{}/reconcile",
                pane_segment(&format!("%{}", agent + 1))
            );
            let p2 = path.clone();
            let other = tokio::spawn(async move { post(&p2, b"").await });
            post(&path, b"").await;
            let _ = other.await;
        }
        Ok(())
    });
    let mut crashed_until: Option<u64> = None;
    let mut crash_count = 0;
    let mut settle_until: Option<u64> = None;
    let mut next_crash = 0;
    loop {
        let done = match sim.step() {
            Ok(d) => d,
            Err(e) => {
                world.lock().checker.violations.push(Violation {
                    invariant: "HOST",
                    at: headspace_core::Timestamp(EPOCH_MS + sim.elapsed().as_millis() as i64),
                    detail: format!("a simulated host failed: {e}"),
                });
                break;
            }
        };
        let now = sim.elapsed().as_millis() as u64;
        let hostile = settle_until.is_none();
        if crashed_until.is_none() && now % 250 < TICK_MS {
            world.lock().check_gone(
                headspace_core::Timestamp(EPOCH_MS + now as i64),
                GONE_WITHIN_MS,
            );
        }
        if let Some(bound) = plan.idle_within_ms {
            if crashed_until.is_none() && now % 250 < TICK_MS {
                world.lock().check_stuck(
                    headspace_core::Timestamp(EPOCH_MS + now as i64),
                    bound as i64,
                );
            }
        }
        if let Some(until) = crashed_until {
            if now >= until {
                sim.bounce("server");
                crashed_until = None;
            }
        } else if hostile {
            let requested = std::mem::take(&mut world.lock().crash_requested);
            let scheduled = crashes.get(next_crash).is_some_and(|(at, _)| now >= *at);
            if requested || scheduled {
                let down = if scheduled {
                    next_crash += 1;
                    crashes[next_crash - 1].1
                } else {
                    1_000
                };
                sim.crash("server");
                world.lock().server_crashed();
                crash_count += 1;
                crashed_until = Some(now + down);
            }
        }
        if done && settle_until.is_none() {
            world.lock().hostile = false;
            settle_until = Some(now + plan.settle_ms);
        }
        if settle_until.is_some_and(|u| now >= u) && crashed_until.is_none() {
            break;
        }
    }
    let sim_ms = sim.elapsed().as_millis() as u64;
    drop(sim);
    let mut s = world.lock();
    let now = headspace_core::Timestamp(EPOCH_MS + sim_ms as i64);
    s.finish(now);
    let runner_crashes = s.orchestra.runner_crashes;
    let run_end = plan.orchestration.then(|| {
        let o = &s.orchestra;
        let by_budget = o.budget.is_some()
            && o.error
                .as_deref()
                .is_some_and(|e| e.to_lowercase().contains("budget"));
        (o.status.clone().unwrap_or_else(|| "none".into()), by_budget)
    });
    if plan.orchestration {
        for (invariant, detail) in crate::orchestra::check(&s.orchestra) {
            s.checker.violations.push(Violation {
                invariant,
                at: now,
                detail,
            });
        }
        if let Some(p) = s.orchestra.project.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
    Outcome {
        violations: s.checker.violations.clone(),
        trace: std::mem::take(&mut s.trace),
        sim_ms,
        wall: headspace::clock::since(wall),
        turns: s.store.turns().count(),
        crashes: crash_count,
        commits: s.commits,
        store: serde_json::to_string_pretty(&s.store.replay_output()).unwrap_or_default(),
        stopped: s
            .store
            .agents()
            .filter(|a| a.end_reason.as_deref() == Some("stopped"))
            .count(),
        runner_crashes,
        run_end,
        cluster: None,
    }
}

/// The first seed in `seeds` where the planted `bug` breaks an invariant that holds without
/// it, with what broke: the proof that the simulation catches the bug. Seed `n` runs the
/// scenario `n mod` the number of scenarios, so every scenario takes part.
pub fn catching_seed(
    bug: Bug,
    seeds: std::ops::RangeInclusive<u64>,
) -> Option<(u64, &'static str, Violation)> {
    use crate::scenario::SCENARIOS;
    for seed in seeds {
        let s = &SCENARIOS[(seed % SCENARIOS.len() as u64) as usize];
        let plan = (s.plan)(&mut Rng::new(seed));
        let with = run(&plan, seed, Some(bug));
        if with.passed() {
            continue;
        }
        if run(&plan, seed, None).passed() {
            return Some((seed, s.name, with.violations[0].clone()));
        }
    }
    None
}
