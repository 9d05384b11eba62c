//! `make bench`: what the pane watchdog's sweep costs with one tmux client per pane against
//! one client for all panes (`tmux::capture` in a loop against `tmux::capture_many`), on a
//! private tmux server with 100 panes showing a screenful each: the sweep every edge (or a
//! single server) makes every 3 s for 100 agents. Side by side in one run: wall time and CPU
//! per sweep, the CPU counted in the process that captures (spawning, reading), in the tmux
//! clients (its children) and in the tmux server. Alone: `cargo run --release -p headspace --example capture_bench`.

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::costs::hz;
use headspace_testkit::procstat::cpu_ticks;
use std::process::Command;
use std::time::{Duration, Instant};

const PANES: usize = 100;
const SWEEPS: u32 = 20;
/// Lines captured per pane, as the watchdog's default.
const LINES: u32 = 50;

/// A tmux server of the bench's own, killed when dropped.
struct Server(String);

impl Server {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

/// CPU seconds used by this process's waited-for children (the tmux clients).
fn children_cpu() -> f64 {
    rusage(libc::RUSAGE_CHILDREN)
}

/// CPU seconds used by this process (spawning and reading the clients, as the server does).
fn own_cpu() -> f64 {
    rusage(libc::RUSAGE_SELF)
}

fn rusage(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// One way of sweeping: its wall time and CPU (clients, server) per sweep, in ms.
struct Sweep {
    wall_ms: f64,
    spawner_ms: f64,
    clients_ms: f64,
    server_ms: f64,
}

fn measure(server_pid: u32, mut sweep: impl FnMut()) -> Sweep {
    let (o0, c0, s0, t0) = (
        own_cpu(),
        children_cpu(),
        cpu_ticks(server_pid),
        Instant::now(),
    );
    for _ in 0..SWEEPS {
        sweep();
    }
    let n = f64::from(SWEEPS);
    Sweep {
        wall_ms: t0.elapsed().as_secs_f64() * 1e3 / n,
        spawner_ms: (own_cpu() - o0) * 1e3 / n,
        clients_ms: (children_cpu() - c0) * 1e3 / n,
        server_ms: (cpu_ticks(server_pid) - s0) as f64 / hz() * 1e3 / n,
    }
}

fn main() {
    let server = Server(format!("hs-capture-bench-{}", std::process::id()));
    // A screen like an agent's: a prompt, some answer text, the input box.
    let screen = "printf '> fix the flaky test\\n\\n⏺ Reading tests/flaky.rs …\\n'; \
                  for i in $(seq 1 40); do echo \"  line $i of the agent's answer\"; done; \
                  printf '╭──────────╮\\n│ >        │\\n╰──────────╯\\n'; sleep 86400";
    let mut panes = vec![server.run(&[
        "new-session",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-s",
        "bench",
        "-x",
        "120",
        "-y",
        "50",
        screen,
    ])];
    for _ in 1..PANES {
        panes.push(server.run(&[
            "new-window",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "bench",
            screen,
        ]));
    }
    let server_pid: u32 = server
        .run(&["display-message", "-p", "#{pid}"])
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let socket = Some(server.0.as_str());

    let alone: Vec<Option<String>> = panes
        .iter()
        .map(|p| rt.block_on(headspace::tmux::capture(socket, p, LINES)))
        .collect();
    let batch = rt.block_on(headspace::tmux::capture_many(socket, &panes, LINES));
    assert!(alone.iter().all(Option::is_some), "every pane captured");
    assert_eq!(alone, batch, "the batch reads what each capture reads");

    let each = measure(server_pid, || {
        for p in &panes {
            rt.block_on(headspace::tmux::capture(socket, p, LINES));
        }
    });
    let one = measure(server_pid, || {
        rt.block_on(headspace::tmux::capture_many(socket, &panes, LINES));
    });
    println!("\npane watchdog sweep of {PANES} panes ({SWEEPS} sweeps each, ms per sweep):\n");
    println!("| | a tmux client per pane | one tmux client | ratio |");
    println!("|---|---|---|---|");
    let row = |name: &str, a: f64, b: f64| {
        println!("| {name} | {a:.1} | {b:.1} | {:.1}× |", a / b.max(0.01));
    };
    row("wall time", each.wall_ms, one.wall_ms);
    row(
        "CPU, the capturing process",
        each.spawner_ms,
        one.spawner_ms,
    );
    row("CPU, tmux clients", each.clients_ms, one.clients_ms);
    row("CPU, tmux server", each.server_ms, one.server_ms);
    let (a, b) = (
        each.spawner_ms + each.clients_ms + each.server_ms,
        one.spawner_ms + one.clients_ms + one.server_ms,
    );
    row("CPU, all", a, b);
    println!(
        "\nat one sweep every 3 s: {:.3} of a core per 100 agents before, {:.3} after",
        a / 3000.0,
        b / 3000.0
    );
}
