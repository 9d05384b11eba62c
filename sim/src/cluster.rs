//! The multi-machine run (`cluster` scenario, docs/multi-machine.md): two edges (the real
//! server, `--role edge`, each its own machine id, claude dir, agents and panes) commit into
//! one simulated database, whose shared events table behaves as PostgreSQL's does
//! (`world/events.rs`); two hubs run the real fan-out (`headspace::server::fanout`) and the
//! real HTTP SSE route (`start_hub`) over it; SSE clients (`sse_client.rs`) switch hubs at
//! random with `Last-Event-ID`. The harness partitions and crashes edges, crashes hubs, and
//! loses or delays notifications. Each edge's agents keep S1–S5, L1–L2; every client sees
//! every committed event exactly once, in position order (E1).

use crate::check::{check_streams, Violation};
use crate::host::{server, settings, ServerSpec, SimListener, GONE_WITHIN_MS, TICK_MS};
pub use crate::outcome::ClusterStats;
use crate::outcome::Outcome;
use crate::plan::Plan;
use crate::rng::Rng;
use crate::session::play_agents;
use crate::sse_client::{run_client, Phase, Streams, HUB_PORT};
use crate::world::directory::{Directory, Heartbeats};
use crate::world::events::{EdgeLink, HubLog, NotifyFaults, SimEvents};
use crate::world::pane_queue::{Reach, SimPaneQueue};
use crate::world::{AdapterFaults, ClusterLinks, SimWorld, EPOCH_MS};
use headspace::server::fanout;
use headspace::server::pane_keys::PaneKeys;
use headspace::server::role::Role;
use headspace::server::world::World;
use headspace::server::{accept_loop, start_hub};
use headspace_core::cluster::machines::HEARTBEAT_EVERY_MS;
use headspace_core::harness::planted::Bug;
use headspace_core::Timestamp;
use headspace_testkit::synth::CLAUDE_DIR;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The two edges.
pub const EDGES: [ServerSpec; 2] = [
    ServerSpec {
        host: "edge-a",
        machine: "edge-a",
        role: Role::Edge,
        id: 1,
    },
    ServerSpec {
        host: "edge-b",
        machine: "edge-b",
        role: Role::Edge,
        id: 2,
    },
];

/// The hubs' host names.
pub const HUBS: [&str; 2] = ["hub-1", "hub-2"];

/// SSE clients.
const CLIENTS: usize = 3;
const CLIENT_HOSTS: [&str; CLIENTS] = ["sse-1", "sse-2", "sse-3"];
const AGENT_HOSTS: [&str; 2] = ["claude-a", "claude-b"];
/// After the settle phase the edges stop; the hubs get this long to serve the last events.
const DRAIN_MS: u64 = 4_000;

/// What a hub shares with the rest of the run.
#[derive(Clone)]
struct HubLinks {
    directory: Directory,
    queue: SimPaneQueue,
    keys: Arc<PaneKeys>,
}

/// A hub host: the real fan-out over the shared table, and the real hub app (API and SSE),
/// whose store is the shared database's view of every edge's agents ([`Directory`]) and
/// which forwards a command for an agent's pane through the shared pane-command table.
async fn hub(
    name: &'static str,
    events: SimEvents,
    bug: Option<Bug>,
    links: HubLinks,
) -> turmoil::Result {
    let log = HubLog {
        hub: name,
        events: events.clone(),
    };
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", HUB_PORT)).await?;
    let mut core = headspace_core::Config::new(CLAUDE_DIR);
    core.codex_dir = Some(headspace_testkit::synth_codex::CODEX_DIR.to_string());
    core.gemini_dir = Some(headspace_testkit::synth_gemini::GEMINI_DIR.to_string());
    core.planted = bug;
    let fed = loop {
        match fanout::preloaded_hub(&log, &core).await {
            Ok(h) => break h,
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    fanout::start(log, events.listen(name), fed.clone(), core.clone());
    // A hub holds no files or panes (an empty world's); it reads the agents of the shared
    // database and forwards commands for their panes.
    let empty = SimWorld::new(Rng::new(0), AdapterFaults::default()).adapters();
    let world = World {
        store: Arc::new(links.directory),
        pane_queue: Some(Arc::new(links.queue.link(Reach::Hub(events.clone(), name)))),
        ..empty
    };
    let mut settings = settings(core, name, "", Role::Hub);
    settings.pane_keys = links.keys;
    let app = start_hub(&world, settings, fed);
    accept_loop(SimListener(listener), app, std::future::pending()).await;
    Ok(())
}

/// A host the harness crashes and restarts: when it is down until, and its schedule.
struct Crashable {
    host: &'static str,
    /// (at, down for) in sim ms, in order.
    schedule: Vec<(u64, u64)>,
    next: usize,
    down_until: Option<u64>,
    crashes: u32,
}

impl Crashable {
    fn new(host: &'static str, rng: &mut Rng, n: u32, horizon: u64) -> Crashable {
        let mut schedule: Vec<(u64, u64)> = (0..n)
            .map(|_| (rng.range(1_000, horizon), rng.range(500, 5_000)))
            .collect();
        schedule.sort();
        Crashable {
            host,
            schedule,
            next: 0,
            down_until: None,
            crashes: 0,
        }
    }

    /// Bounces the host when its time is up; true when it is up.
    fn revive(&mut self, sim: &mut turmoil::Sim<'_>, now: u64) -> bool {
        match self.down_until {
            Some(t) if now >= t => {
                sim.bounce(self.host);
                self.down_until = None;
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Crashes the host when its schedule (or `requested`) says so; true when it did.
    fn maybe_crash(&mut self, sim: &mut turmoil::Sim<'_>, now: u64, requested: bool) -> bool {
        if self.down_until.is_some() {
            return false;
        }
        let scheduled = self
            .schedule
            .get(self.next)
            .is_some_and(|(at, _)| now >= *at);
        if !(requested || scheduled) {
            return false;
        }
        let down = if scheduled {
            self.next += 1;
            self.schedule[self.next - 1].1
        } else {
            1_000
        };
        sim.crash(self.host);
        self.crashes += 1;
        self.down_until = Some(now + down);
        true
    }
}

/// Runs the multi-machine `plan` with `seed`, with `bug` planted in every server.
pub fn run(plan: &Plan, seed: u64, bug: Option<Bug>) -> Outcome {
    let wall = headspace::clock::instant();
    let mut rng = Rng::new(seed);
    let f = &plan.faults;
    let horizon: u64 = plan
        .agents
        .iter()
        .map(|a| a.start_ms + a.steps.len() as u64 * 8_000)
        .max()
        .unwrap_or(10_000)
        .max(10_000);
    let events = SimEvents::new(
        rng.fork(),
        NotifyFaults {
            lost: rng.range(0, 60) as f64 / 100.0,
            late: rng.range(0, 40) as f64 / 100.0,
            late_ms: rng.range(100, 3_000),
        },
    );
    let half = plan.agents.len().div_ceil(2);
    let shares = [&plan.agents[..half], &plan.agents[half..]];
    let mut worlds = Vec::new();
    let mut edges = Vec::new();
    for (i, spec) in EDGES.iter().enumerate() {
        // Each edge its own outages: the database unreachable for it alone (a partition).
        let n = if i == 0 {
            f.store_outages
        } else {
            rng.range(0, 2) as u32
        };
        let outages = (0..n)
            .map(|_| {
                let at = rng.range(0, horizon) as i64;
                (at, at + rng.range(2_000, 10_000) as i64)
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
        {
            let mut s = world.lock();
            s.host = spec.host;
            s.seat = 100 * i as u64;
            s.edge = Some(EdgeLink {
                machine: spec.machine,
                events: events.clone(),
                commit_delay_ms: rng.range(50, 1_000),
            });
        }
        edges.push(Crashable::new(
            spec.host,
            &mut rng,
            f.crashes.min(2),
            horizon,
        ));
        worlds.push(world);
    }
    let mut hubs: Vec<Crashable> = HUBS
        .iter()
        .map(|h| {
            let n = rng.range(0, 3) as u32;
            Crashable::new(h, &mut rng, n, horizon)
        })
        .collect();
    // Each hub may lose the database for a while (its reads fail, its notifications too).
    for h in HUBS {
        let windows = (0..rng.range(0, 2))
            .map(|_| {
                let at = rng.range(0, horizon);
                (at, at + rng.range(1_000, 8_000))
            })
            .collect();
        events.cut_off(h, windows);
    }
    // The pane commands and the machines' heartbeats of the shared database, with their own
    // draws (the run's other draws keep their values), and one key every server trusts.
    let mut qrng = Rng::new(seed ^ 0x5eed_c0de_0000_0001);
    let lose_wakes = qrng.range(0, 60) as f64 / 100.0;
    let queue = SimPaneQueue::new(qrng, lose_wakes);
    let keys = Arc::new(PaneKeys::ephemeral());
    let heartbeats = Heartbeats::default();
    for w in &worlds {
        w.lock().cluster = Some(ClusterLinks {
            queue: queue.clone(),
            keys: keys.clone(),
            hubs: HUBS.to_vec(),
        });
    }
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(24 * 3600))
        .tick_duration(Duration::from_millis(TICK_MS))
        .epoch(std::time::UNIX_EPOCH + Duration::from_millis(EPOCH_MS as u64))
        .rng_seed(seed)
        .tcp_capacity(65_536)
        .build();
    for (spec, world) in EDGES.iter().zip(&worlds) {
        let (w, spec) = (world.clone(), *spec);
        sim.host(spec.host, move || server(w.clone(), bug, spec));
    }
    for name in HUBS {
        let ev = events.clone();
        let links = HubLinks {
            directory: Directory {
                hub: name,
                events: events.clone(),
                edges: EDGES
                    .iter()
                    .map(|e| e.machine)
                    .zip(worlds.clone())
                    .collect(),
                heartbeats: heartbeats.clone(),
            },
            queue: queue.clone(),
            keys: keys.clone(),
        };
        sim.host(name, move || hub(name, ev.clone(), bug, links.clone()));
    }
    let agents_done = Arc::new(AtomicUsize::new(0));
    for (i, share) in shares.iter().enumerate() {
        let (w, agents, faults, arng) = (
            worlds[i].clone(),
            share.to_vec(),
            plan.faults.clone(),
            rng.fork(),
        );
        let done = agents_done.clone();
        sim.client(AGENT_HOSTS[i], async move {
            play_agents(agents, w, faults, arng).await;
            done.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
    }
    let streams = Streams::new(CLIENTS);
    let phase = Phase::default();
    for (n, host) in CLIENT_HOSTS.iter().enumerate() {
        let (st, ph, crng) = (streams.clone(), phase.clone(), rng.fork());
        sim.client(*host, async move {
            run_client(n, HUBS.to_vec(), st, ph, crng).await;
            Ok(())
        });
    }
    let mut settle_until: Option<u64> = None;
    let mut drain_until: Option<u64> = None;
    loop {
        if let Err(e) = sim.step() {
            worlds[0].lock().checker.violations.push(Violation {
                invariant: "HOST",
                at: Timestamp(EPOCH_MS + sim.elapsed().as_millis() as i64),
                detail: format!("a simulated host failed: {e}"),
            });
            break;
        }
        let now = sim.elapsed().as_millis() as u64;
        events.deliver_due(now);
        let stamp = Timestamp(EPOCH_MS + now as i64);
        let hostile = settle_until.is_none();
        // Each edge that runs and reaches the database reports, as its heartbeat loop does.
        if now % (HEARTBEAT_EVERY_MS as u64) < TICK_MS {
            for ((edge, world), spec) in edges.iter().zip(&worlds).zip(&EDGES) {
                if edge.down_until.is_none() && !world.lock().down(stamp) {
                    heartbeats.beat(spec.machine, spec.id, stamp.millis());
                }
            }
        }
        if drain_until.is_none() {
            for (edge, world) in edges.iter_mut().zip(&worlds) {
                if edge.revive(&mut sim, now) && now % 250 < TICK_MS {
                    world.lock().check_gone(stamp, GONE_WITHIN_MS);
                }
                let requested = std::mem::take(&mut world.lock().crash_requested);
                if hostile && edge.maybe_crash(&mut sim, now, requested) {
                    world.lock().server_crashed();
                }
            }
        }
        for h in hubs.iter_mut() {
            h.revive(&mut sim, now);
            if hostile {
                h.maybe_crash(&mut sim, now, false);
            }
        }
        if hostile && agents_done.load(Ordering::SeqCst) == AGENT_HOSTS.len() {
            for w in &worlds {
                w.lock().hostile = false;
            }
            events.lock().hostile = false;
            queue.lock().hostile = false;
            phase.calm();
            settle_until = Some(now + plan.settle_ms);
        }
        let all_up = edges.iter().chain(&hubs).all(|h| h.down_until.is_none());
        if drain_until.is_none() && settle_until.is_some_and(|u| now >= u) && all_up {
            // The edges stop (what they had in flight rolls back); the hubs serve the rest.
            for e in &edges {
                sim.crash(e.host);
            }
            drain_until = Some(now + DRAIN_MS);
        }
        if drain_until.is_some_and(|u| now >= u) {
            break;
        }
    }
    let sim_ms = sim.elapsed().as_millis() as u64;
    drop(sim);
    phase.end();
    let database = Database {
        events: &events,
        queue: &queue,
    };
    finish(&worlds, &edges, &hubs, database, &streams, sim_ms, wall)
}

/// The shared database's tables, at the end.
struct Database<'a> {
    events: &'a SimEvents,
    queue: &'a SimPaneQueue,
}

/// The end-of-run checks of every edge (C1 among them) and E1, and the outcome.
fn finish(
    worlds: &[SimWorld],
    edges: &[Crashable],
    hubs: &[Crashable],
    database: Database<'_>,
    streams: &Streams,
    sim_ms: u64,
    wall: tokio::time::Instant,
) -> Outcome {
    let Database { events, queue } = database;
    let now = Timestamp(EPOCH_MS + sim_ms as i64);
    let mut violations = Vec::new();
    let (mut trace, mut stores, mut turns, mut commits) = (Vec::new(), Vec::new(), 0, 0);
    let (mut sends, mut answers, mut interrupts) = ((0, 0), (0, 0), (0, 0));
    let mut stopped = 0;
    for (spec, world) in EDGES.iter().zip(worlds) {
        let mut s = world.lock();
        for r in &s.checker.sends {
            let count = match r.what {
                "answer" => &mut answers,
                "interrupt" => &mut interrupts,
                _ => &mut sends,
            };
            count.0 += 1;
            count.1 += usize::from(r.answer.as_ref().is_some_and(|(st, _)| *st == 200));
        }
        let typed = std::mem::take(&mut s.typed_log);
        s.checker.check_commands(now, &typed);
        s.finish(now);
        violations.extend(s.checker.violations.iter().map(|v| Violation {
            detail: format!("{}: {}", spec.machine, v.detail),
            ..v.clone()
        }));
        trace.extend_from_slice(&s.trace);
        turns += s.store.turns().count();
        stopped += s
            .store
            .agents()
            .filter(|a| a.end_reason.as_deref() == Some("stopped"))
            .count();
        commits += s.commits;
        stores.push((spec.machine, s.store.replay_output()));
    }
    let expected = events.sequenced();
    let received = streams.lock().clone();
    let unsequenced = events.unsequenced();
    let mut problems = check_streams(&expected, &received);
    if unsequenced > 0 {
        problems.push(format!(
            "{unsequenced} committed events never got a position"
        ));
    }
    for detail in problems {
        violations.push(Violation {
            invariant: "E1",
            at: now,
            detail,
        });
    }
    let t = events.lock();
    let stats = ClusterStats {
        sequenced: expected.len(),
        out_of_order: t.out_of_order,
        rolled_back: t.burnt,
        notifications_lost: t.lost,
        notifications_late: t.delayed,
        edge_crashes: edges.iter().map(|e| e.crashes).sum(),
        hub_crashes: hubs.iter().map(|h| h.crashes).sum(),
        hub_failed_reads: t.failed_reads,
        clients: received
            .iter()
            .map(|r| (r.events.len(), r.connections))
            .collect(),
        sends,
        answers,
        interrupts,
        commands: {
            let q = queue.lock();
            (q.submitted, q.taken, q.wakes_lost)
        },
    };
    drop(t);
    trace.extend_from_slice(format!("{stats}\n").as_bytes());
    let store: serde_json::Map<String, serde_json::Value> = stores
        .into_iter()
        .map(|(m, v)| (m.to_string(), serde_json::to_value(v).unwrap_or_default()))
        .collect();
    Outcome {
        violations,
        trace,
        sim_ms,
        wall: headspace::clock::since(wall),
        turns,
        crashes: edges.iter().chain(hubs).map(|h| h.crashes).sum(),
        commits,
        store: serde_json::to_string_pretty(&store).unwrap_or_default(),
        stopped,
        runner_crashes: 0,
        run_end: None,
        cluster: Some(stats),
    }
}
