//! `make bench` (many machines, issue 21): 10 edges × 100 agents with live transcripts and
//! 2 hubs, all real `headspace serve` processes on one PostgreSQL, next to the same agents
//! on one `--role all` server.
//!
//! - steady load (each agent an exchange every 10 s: prompt hook, prompt and answer lines,
//!   Stop hook): turns committed per second against lines written, hook → SSE and transcript
//!   line → SSE at each hub (p50/p99), RSS and CPU of every process and of PostgreSQL;
//! - flat out from 1, 5 and 10 edges: the highest turns/s committed, and PostgreSQL's share
//!   of the CPU and its CPU per turn: where one PostgreSQL becomes the limit;
//! - a hub's fan-out to 1,000 SSE clients: each marked event's delivery to every client.
//!
//! Needs DATABASE_URL (and PG_TEST_DIR for PostgreSQL's CPU): `make bench` runs it through
//! `scripts/with-test-postgres.sh --durable`. Alone:
//! `scripts/with-test-postgres.sh --durable target/release/examples/cluster_bench`.

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::agents::{Agent, Agents};
use bench_support::costs::{hz, mb, postmaster, ticks};
use bench_support::pg::{fresh_database_blocking, Sql};
use bench_support::phases::{flat, say, steady, Flat, Steady};
use bench_support::server::Server;
use bench_support::sse::{percentile, Seen};
use bench_support::sse_crowd::{deliveries, Crowd};
use bench_support::{sse, table};
use headspace_testkit::procstat::cpu_ticks;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const EDGES: usize = 10;
const AGENTS_PER_EDGE: usize = 100;
/// Each agent makes one exchange (two turns) per period.
const PERIOD: Duration = Duration::from_secs(10);
/// Periods measured under the steady load.
const STEADY_ROUNDS: u32 = 3;
/// How long each flat-out step sends.
const FLAT_OUT: Duration = Duration::from_secs(8);
const FANOUT_CLIENTS: usize = 1_000;
/// Marked events published through an edge while the 1,000 clients listen, 10 a second.
const FANOUT_MARKERS: u64 = 100;

/// The bench's own folder, removed at the end (and by the next run of the same pid).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let d =
            std::env::temp_dir().join(format!("headspace-cluster-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    /// A claude directory (with `projects/`) and a home, under `name`.
    fn dirs(&self, name: &str) -> (PathBuf, PathBuf) {
        let claude = self.0.join(name).join("claude");
        let home = self.0.join(name).join("home");
        std::fs::create_dir_all(claude.join("projects")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        (claude, home)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn main() {
    let cluster = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL: run through scripts/with-test-postgres.sh --durable (make bench)");
    let begin = Instant::now();
    // For experiments: fewer hubs, or the steady load alone.
    let hubs_wanted: usize = std::env::var("CLUSTER_BENCH_HUBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let steady_only = std::env::var_os("CLUSTER_BENCH_STEADY_ONLY").is_some();
    let edges_wanted: usize = std::env::var("CLUSTER_BENCH_EDGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|_| steady_only)
        .unwrap_or(EDGES);
    let pm = postmaster();
    if pm.is_none() {
        eprintln!("cluster bench: PG_TEST_DIR not set: PostgreSQL's CPU is not measured");
    }
    let scratch = Scratch::new();
    let url = fresh_database_blocking(&cluster, "cluster_bench");
    let db = Sql::connect(&url);
    println!(
        "cluster bench: {edges_wanted} edges × {AGENTS_PER_EDGE} agents and {hubs_wanted} hubs, real processes, one PostgreSQL on a Unix socket (fsync={}, synchronous_commit={}, max_connections={}), {} cores, load average {}",
        db.scalar("SHOW fsync"),
        db.scalar("SHOW synchronous_commit"),
        db.scalar("SHOW max_connections"),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').take(3).collect::<Vec<_>>().join(" ")
    );

    // The cluster: hubs first (their SSE streams read from the start), then the edges.
    let hubs: Vec<Server> = (1..=hubs_wanted)
        .map(|n| {
            let (claude, home) = scratch.dirs(&format!("hub-{n}"));
            Server::start(
                &format!("hub-{n}"),
                &[
                    "--role".as_ref(),
                    "hub".as_ref(),
                    "--database-url".as_ref(),
                    url.as_ref(),
                    "--claude-dir".as_ref(),
                    claude.as_os_str(),
                    "--home".as_ref(),
                    home.as_os_str(),
                    "--max-connections".as_ref(),
                    "1500".as_ref(),
                ],
            )
        })
        .collect();
    let streams: Vec<Seen> = hubs.iter().map(|h| sse::stream(&h.addr)).collect();
    let mut edges = Vec::new();
    let mut claude_dirs = Vec::new();
    for n in 1..=edges_wanted {
        let name = format!("edge-{n}");
        let (claude, home) = scratch.dirs(&name);
        // A tmux server of its own that does not run: no pane of the user's is looked at.
        let socket = format!("hs-cluster-bench-{n}-{}", std::process::id());
        edges.push(Server::start(
            &name,
            &[
                "--role".as_ref(),
                "edge".as_ref(),
                "--machine".as_ref(),
                name.as_ref(),
                "--database-url".as_ref(),
                url.as_ref(),
                "--claude-dir".as_ref(),
                claude.as_os_str(),
                "--home".as_ref(),
                home.as_os_str(),
                "--tmux-socket".as_ref(),
                socket.as_ref(),
            ],
        ));
        claude_dirs.push(claude);
    }
    say(
        begin,
        &format!("{edges_wanted} edges and {hubs_wanted} hubs listening"),
    );
    let agents: Agents = Arc::new(
        (0..edges_wanted * AGENTS_PER_EDGE)
            .map(|i| {
                let (e, k) = (i / AGENTS_PER_EDGE, i % AGENTS_PER_EDGE);
                Mutex::new(Agent::new(
                    60_000 + i as u64,
                    claude_dirs[e].clone(),
                    &edges[e].addr,
                    k,
                ))
            })
            .collect(),
    );
    let edge_refs: Vec<&Server> = edges.iter().collect();
    let hub_refs: Vec<&Server> = hubs.iter().collect();
    let measure = || ticks(&edge_refs, &hub_refs, pm);

    // Steady load.
    let (cl, per_hub) = steady(
        begin,
        &db,
        &agents,
        &streams,
        &measure,
        "cluster",
        (PERIOD, STEADY_ROUNDS),
    );
    let edge_rss: Vec<(f64, f64)> = edges
        .iter()
        .map(|e| (mb(e.pid(), "VmRSS"), mb(e.pid(), "VmHWM")))
        .collect();
    let hub_rss: Vec<f64> = hubs.iter().map(|h| mb(h.pid(), "VmRSS")).collect();
    let max_edge = edge_rss.iter().map(|r| r.0).fold(0.0, f64::max);
    let max_edge_peak = edge_rss.iter().map(|r| r.1).fold(0.0, f64::max);
    let connections =
        db.count("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'");
    let agents_listed = db.count("SELECT count(*) FROM agents");
    say(
        begin,
        &format!(
            "RSS: edges {} MB (peak max {max_edge_peak:.0} MB); hubs {} MB; {connections} PostgreSQL connections open; {agents_listed} agents stored",
            edge_rss.iter().map(|r| format!("{:.0}", r.0)).collect::<Vec<_>>().join("/"),
            hub_rss.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join("/"),
        ),
    );

    if steady_only {
        return;
    }

    // Flat out from 1, 5 and 10 edges' agents.
    let mut flats = Vec::new();
    for k in [1, 5, EDGES] {
        let which: Vec<usize> = (0..k * AGENTS_PER_EDGE).collect();
        flats.push((
            k,
            flat(
                begin,
                &db,
                &agents,
                &which,
                &streams[0],
                &measure,
                &format!("flat out, {k} edges"),
                FLAT_OUT,
            ),
        ));
    }
    let connections_busy =
        db.count("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'");

    // Fan-out: 1,000 SSE clients on hub 1, marked prompts through edge 1.
    let hub = &hubs[0];
    let crowd = Crowd::open(&hub.addr, FANOUT_CLIENTS, "fanout ");
    let up = Instant::now();
    while crowd.connected.load(std::sync::atomic::Ordering::Relaxed) < FANOUT_CLIENTS
        && up.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let connected = crowd.connected.load(std::sync::atomic::Ordering::Relaxed);
    say(
        begin,
        &format!(
            "fan-out: {connected} SSE clients reading hub 1 (RSS {:.0} MB)",
            mb(hub.pid(), "VmRSS")
        ),
    );
    std::thread::sleep(Duration::from_secs(1));
    let hub_cpu0 = (cpu_ticks(hub.pid()), Instant::now());
    let bench_cpu0 = cpu_ticks(std::process::id());
    let mut marker_sent = Vec::new();
    let start = Instant::now();
    for m in 0..FANOUT_MARKERS {
        let due = start + Duration::from_millis(m * 100);
        if let Some(d) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        let sent = agents[(m as usize) % AGENTS_PER_EDGE]
            .lock()
            .unwrap()
            .exchange(&format!("fanout {m}"));
        marker_sent.push(sent.prompt);
    }
    std::thread::sleep(Duration::from_secs(3));
    let hub_cores =
        (cpu_ticks(hub.pid()) - hub_cpu0.0) as f64 / hz() / hub_cpu0.1.elapsed().as_secs_f64();
    let bench_cores = (cpu_ticks(std::process::id()) - bench_cpu0) as f64
        / hz()
        / hub_cpu0.1.elapsed().as_secs_f64();
    let hub_fanout_rss = (mb(hub.pid(), "VmRSS"), mb(hub.pid(), "VmHWM"));
    // The same markers at the bench's lone client of hub 1 (its own thread): the way from
    // the edge to the hub, without the thousand.
    let mut lone: Vec<f64> = {
        let got = streams[0].lock().unwrap();
        marker_sent
            .iter()
            .enumerate()
            .filter_map(|(m, t0)| {
                let at = got.get(&format!("fanout {m}"))?;
                Some(at.saturating_duration_since(*t0).as_secs_f64() * 1e3)
            })
            .collect()
    };
    lone.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let got = crowd.close();
    let d = deliveries(&got, &marker_sent);
    let (per_delivery, to_all, spread, delivered, dropped, events_per_client) = (
        d.per_delivery,
        d.to_all,
        d.spread,
        d.delivered,
        d.dropped,
        d.events_per_client,
    );
    let expected = FANOUT_MARKERS as usize * FANOUT_CLIENTS;
    let fan_p99 = percentile(&per_delivery, 0.99);
    say(
        begin,
        &format!(
            "fan-out: {delivered} of {expected} deliveries ({events_per_client} events per client, {dropped} streams dropped); per delivery p50 {:.2} ms p99 {fan_p99:.2} ms; to the last client p50 {:.2} ms p99 {:.2} ms; last client − first client p50 {:.2} ms p99 {:.2} ms; the bench's lone client p50 {:.2} ms p99 {:.2} ms; hub CPU {:.2} cores, RSS {:.0} MB (peak {:.0} MB); the crowd's thread {bench_cores:.2} cores",
            percentile(&per_delivery, 0.5),
            percentile(&to_all, 0.5),
            percentile(&to_all, 0.99),
            percentile(&spread, 0.5),
            percentile(&spread, 0.99),
            percentile(&lone, 0.5),
            percentile(&lone, 0.99),
            hub_cores,
            hub_fanout_rss.0,
            hub_fanout_rss.1
        ),
    );
    let turns_total = db.count("SELECT count(*) FROM turns");
    let distinct =
        db.count("SELECT count(DISTINCT entry_uuid) FROM turns WHERE entry_uuid IS NOT NULL");
    drop(agents);
    for s in edges.into_iter().chain(hubs) {
        s.stop();
    }
    say(begin, "cluster stopped");

    // The baseline: the same agents and load on one `--role all` server.
    let url_all = fresh_database_blocking(&cluster, "cluster_bench_all");
    let db_all = Sql::connect(&url_all);
    let (claude, home) = scratch.dirs("all");
    let socket = format!("hs-cluster-bench-all-{}", std::process::id());
    let all = Server::start(
        "all",
        &[
            "--database-url".as_ref(),
            url_all.as_ref(),
            "--claude-dir".as_ref(),
            claude.as_os_str(),
            "--home".as_ref(),
            home.as_os_str(),
            "--tmux-socket".as_ref(),
            socket.as_ref(),
        ],
    );
    let stream_all = vec![sse::stream(&all.addr)];
    let agents_all: Agents = Arc::new(
        (0..EDGES * AGENTS_PER_EDGE)
            .map(|i| Mutex::new(Agent::new(70_000 + i as u64, claude.clone(), &all.addr, i)))
            .collect(),
    );
    let measure_all = || ticks(&[&all], &[], pm);
    let (one, _) = steady(
        begin,
        &db_all,
        &agents_all,
        &stream_all,
        &measure_all,
        "one --role all server",
        (PERIOD, STEADY_ROUNDS),
    );
    let all_rss = (mb(all.pid(), "VmRSS"), mb(all.pid(), "VmHWM"));
    let all_which: Vec<usize> = (0..agents_all.len()).collect();
    let flat_all = flat(
        begin,
        &db_all,
        &agents_all,
        &all_which,
        &stream_all[0],
        &measure_all,
        "flat out, one --role all server",
        FLAT_OUT,
    );
    drop(agents_all);
    all.stop();

    report(
        &cl,
        &per_hub,
        &one,
        &flats,
        &flat_all,
        (max_edge, max_edge_peak),
        &hub_rss,
        all_rss,
        connections,
        connections_busy,
    );
    let fan_ok = delivered == expected && dropped == 0;
    table::row(
        "hub fan-out to 1,000 SSE clients: per delivery p99",
        &format!(
            "{fan_p99:.1} ms (a lone client of the hub {:.1} ms; last − first client {:.1} ms; {delivered} of {expected} delivered); hub {hub_cores:.2} cores, RSS {:.0} MB",
            percentile(&lone, 0.99),
            percentile(&spread, 0.99),
            hub_fanout_rss.0
        ),
        "≤ 50 ms",
        Some(fan_ok && fan_p99 <= 50.0),
    );
    println!(
        "every line one turn: {turns_total} turns, {distinct} distinct lines (cluster database)"
    );
    say(begin, "cluster bench done");
}

/// The side-by-side figures and the closing table's rows.
#[allow(clippy::too_many_arguments)]
fn report(
    cl: &Steady,
    per_hub: &[(f64, f64)],
    one: &Steady,
    flats: &[(usize, Flat)],
    flat_all: &Flat,
    edge_rss: (f64, f64),
    hub_rss: &[f64],
    all_rss: (f64, f64),
    connections: i64,
    connections_busy: i64,
) {
    println!();
    println!(
        "{:<46} {:>22} {:>22}",
        "", "10 edges + 2 hubs", "one --role all server"
    );
    let row = |what: &str, a: String, b: String| println!("{what:<46} {a:>22} {b:>22}");
    row(
        "turns/s committed (steady: 1,000 agents)",
        format!("{:.0} of {:.0} written", cl.turns_per_s, cl.written_per_s),
        format!("{:.0} of {:.0} written", one.turns_per_s, one.written_per_s),
    );
    row(
        "hook → SSE p50 / p99 (ms)",
        format!("{:.2} / {:.2}", cl.hook_p50, cl.hook_p99),
        format!("{:.2} / {:.2}", one.hook_p50, one.hook_p99),
    );
    row(
        "transcript line → SSE p99 (ms)",
        format!("{:.2}", cl.line_p99),
        format!("{:.2}", one.line_p99),
    );
    row(
        "events missing at the stream",
        format!("{}", cl.missing),
        format!("{}", one.missing),
    );
    row(
        "server CPU per turn (µs, all edges)",
        format!("{:.0}", cl.cpu_us_per_turn),
        format!("{:.0}", one.cpu_us_per_turn),
    );
    row(
        "PostgreSQL CPU per turn (µs)",
        format!("{:.0}", cl.pg_us_per_turn),
        format!("{:.0}", one.pg_us_per_turn),
    );
    row(
        "RSS (MB): per edge max (peak) / the server",
        format!("{:.0} ({:.0})", edge_rss.0, edge_rss.1),
        format!("{:.0} ({:.0})", all_rss.0, all_rss.1),
    );
    row(
        "RSS (MB): hubs",
        hub_rss
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(" / "),
        "—".into(),
    );
    for (k, f) in flats {
        row(
            &format!("flat out from {k} edges: turns/s committed"),
            format!("{:.0} (PG {:.2} cores)", f.turns_per_s, f.cores.postgres),
            "".into(),
        );
        row(
            "  … on hub 1's stream (s behind the commits)",
            format!("{:.0} ({:.1} s)", f.served_per_s, f.lag_s),
            "".into(),
        );
    }
    row(
        "flat out: turns/s committed / on the stream",
        flats.last().map_or(String::new(), |f| {
            format!("{:.0} / {:.0}", f.1.turns_per_s, f.1.served_per_s)
        }),
        format!(
            "{:.0} / {:.0} (PG {:.2} cores)",
            flat_all.turns_per_s, flat_all.served_per_s, flat_all.cores.postgres
        ),
    );
    println!("PostgreSQL client connections: {connections} after the steady load, {connections_busy} after flat out (max_connections applies)");

    let hubs_p99 = per_hub
        .iter()
        .map(|h| format!("{:.1}", h.1))
        .collect::<Vec<_>>()
        .join(" / ");
    table::row(
        "10 edges × 100 agents: turns committed, steady",
        &format!(
            "{:.0}/s of {:.0}/s written (one `--role all` server: {:.0}/s)",
            cl.turns_per_s, cl.written_per_s, one.turns_per_s
        ),
        "every line, keeping up",
        Some(cl.missing == 0 && cl.turns_per_s >= 0.95 * cl.written_per_s),
    );
    table::row(
        "10 edges × 100 agents: hook → SSE at a hub, p99",
        &format!(
            "{hubs_p99} ms at hubs 1 / 2 (p50 {:.1} ms; one `--role all` server {:.1} ms)",
            cl.hook_p50, one.hook_p99
        ),
        "≤ 50 ms",
        Some(per_hub.iter().all(|h| h.1 <= 50.0) && cl.missing == 0),
    );
    table::row(
        "10 edges × 100 agents: RSS per edge",
        &format!(
            "{:.0} MB max (peak {:.0} MB); hubs {}; one `--role all` server {:.0} MB",
            edge_rss.0,
            edge_rss.1,
            hub_rss
                .iter()
                .map(|r| format!("{r:.0} MB"))
                .collect::<Vec<_>>()
                .join(", "),
            all_rss.0
        ),
        "≤ 60 MB",
        Some(edge_rss.0 <= 60.0),
    );
    let best = flats.iter().map(|f| f.1.turns_per_s).fold(0.0, f64::max);
    let pg_us = flats.last().map_or(f64::NAN, |f| f.1.pg_us_per_turn);
    table::row(
        "flat out from 1 / 5 / 10 edges: turns/s committed",
        &format!(
            "{} (one `--role all` server {:.0}); PostgreSQL {pg_us:.0} µs CPU per turn; a hub served {} turns/s",
            flats
                .iter()
                .map(|f| format!("{:.0}", f.1.turns_per_s))
                .collect::<Vec<_>>()
                .join(" / "),
            flat_all.turns_per_s,
            flats
                .iter()
                .map(|f| format!("{:.0}", f.1.served_per_s))
                .collect::<Vec<_>>()
                .join(" / "),
        ),
        "—",
        None,
    );
    // An agent at the steady load makes 2 turns per PERIOD.
    let per_agent = 2.0 / PERIOD.as_secs_f64();
    let per_core = 1e6 / cl.pg_us_per_turn.max(1.0);
    table::row(
        "agents one PostgreSQL core carries (at 1 exchange / 10 s)",
        &format!(
            "≈ {:.0} ({per_core:.0} turns/s at the steady load's {:.0} µs per turn; flat out peaked at {best:.0} turns/s here)",
            per_core / per_agent,
            cl.pg_us_per_turn
        ),
        "—",
        None,
    );
}
