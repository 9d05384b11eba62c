//! `headspace serve`: the server around the core.

use crate::driver::{self, CoreHome, Health};
use crate::embedded_pg::EmbeddedPg;
use crate::http::{self, App};
use crate::metrics::Metrics;
use crate::pgstore::PgStore;
use crate::record::Recorder;
use crate::sse::Hub;
use crate::world::{DiskFiles, SystemClock, TmuxPanes, World};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// Where the server listens unless told otherwise, and where every client looks for it.
pub const DEFAULT_ADDR: &str = "127.0.0.1:5055";

/// Options of `headspace serve` (flags win over environment over defaults).
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, env = "HEADSPACE_ADDR", default_value = DEFAULT_ADDR)]
    pub addr: SocketAddr,
    /// PostgreSQL connection string; without it, the embedded database under --home is used.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
    /// The Claude directory (transcripts under projects/).
    #[arg(long, env = "HEADSPACE_CLAUDE_DIR")]
    pub claude_dir: Option<PathBuf>,
    /// Headspace's own folder (embedded database, state).
    #[arg(long, env = "HEADSPACE_HOME")]
    pub home: Option<PathBuf>,
    /// Also write every core input to this trace file.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Largest request body accepted, in bytes.
    #[arg(long, env = "HEADSPACE_MAX_BODY", default_value_t = 1 << 20)]
    pub max_body: usize,
    /// Bearer token required on every route but /healthz (required off loopback).
    #[arg(long, env = "HEADSPACE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The dashboard's files.
    #[arg(long, env = "HEADSPACE_STATIC_DIR")]
    pub static_dir: Option<PathBuf>,
    /// Seconds between transcript sweeps (catches events the OS dropped).
    #[arg(long, default_value_t = 2.0)]
    pub sweep_seconds: f64,
    /// Seconds between captures of each agent's pane.
    #[arg(long, env = "HEADSPACE_PANE_POLL_SECONDS", default_value_t = 3.0)]
    pub pane_poll_seconds: f64,
    /// Seconds new pane output may go without a turn before the transcript is read.
    #[arg(long, env = "HEADSPACE_GAP_SECONDS", default_value_t = 5.0)]
    pub gap_seconds: f64,
    /// Lines of each pane captured.
    #[arg(long, env = "HEADSPACE_PANE_LINES", default_value_t = 20)]
    pub pane_lines: u32,
    /// The longest transcript line kept whole, in bytes: a longer one is read in bounded
    /// memory (its first this-many bytes and its last 64 KiB) and its turn's text is marked
    /// as truncated.
    #[arg(long, env = "HEADSPACE_MAX_LINE_BYTES", default_value_t = headspace_core::framing::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// tmux socket name (`tmux -L NAME`); the default server when unset.
    #[arg(long, env = "HEADSPACE_TMUX_SOCKET")]
    pub tmux_socket: Option<String>,
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// Claude Code's folder when none is given: `$HOME/.claude`. The server, the hook installer
/// and the orchestration runner must agree on it, even without `HOME`.
pub fn default_claude_dir() -> PathBuf {
    home_dir().join(".claude")
}

fn default_static() -> PathBuf {
    let exe = std::env::current_exe().ok();
    let candidates = [
        exe.as_ref()
            .and_then(|e| e.parent())
            .map(|d| d.join("../../static")),
        Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../static"
        ))),
        Some(PathBuf::from("static")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("index.html").exists())
        .unwrap_or_else(|| PathBuf::from("static"))
}

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ServeArgs) -> Result<(), String> {
    let claude_dir = args.claude_dir.clone().unwrap_or_else(default_claude_dir);
    let claude_dir = std::fs::canonicalize(&claude_dir).unwrap_or(claude_dir);
    let home = args
        .home
        .clone()
        .unwrap_or_else(|| home_dir().join(".local/share/headspace"));
    if !args.addr.ip().is_loopback() && args.token.is_none() {
        return Err(format!(
            "listening on {} (not loopback) needs a token: set HEADSPACE_TOKEN or --token",
            args.addr
        ));
    }
    let mut embedded = None;
    let url = match &args.database_url {
        Some(u) => u.clone(),
        None => {
            let home = home.clone();
            let pg = tokio::task::spawn_blocking(move || EmbeddedPg::start(&home))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            let url = pg.url.clone();
            embedded = Some(pg);
            url
        }
    };
    let result = serve(args, claude_dir, url).await;
    if let Some(pg) = embedded {
        info!("stopping the embedded database");
        let _ = tokio::task::spawn_blocking(move || pg.stop()).await;
    }
    result
}

async fn serve(args: ServeArgs, claude_dir: PathBuf, url: String) -> Result<(), String> {
    let mut delay = Duration::from_millis(200);
    let applied = loop {
        match crate::migrate::run(&url).await {
            Ok(a) => break a,
            Err(e) if delay < Duration::from_secs(10) => {
                warn!("database not ready ({e}); retrying");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    if !applied.is_empty() {
        info!("applied migrations: {}", applied.join(", "));
    }
    let store = PgStore::new(&url, 8).map_err(|e| e.to_string())?;
    let world = World {
        clock: Arc::new(SystemClock),
        store: Arc::new(store),
        files: Arc::new(DiskFiles::new(claude_dir.clone())),
        panes: Arc::new(TmuxPanes {
            socket: args.tmux_socket.clone(),
        }),
    };
    let recorder = match &args.record {
        Some(p) => Some(
            Recorder::open(p, &claude_dir.display().to_string(), world.clock.now())
                .map_err(|e| format!("cannot record to {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let mut core = headspace_core::Config::new(claude_dir.display().to_string());
    core.gap_threshold_ms = (args.gap_seconds * 1000.0) as i64;
    core.max_line_bytes = args.max_line_bytes;
    let settings = Settings {
        core,
        sweep_every: Duration::from_secs_f64(args.sweep_seconds.max(0.05)),
        pane_interval: Duration::from_secs_f64(args.pane_poll_seconds.max(0.05)),
        pane_lines: args.pane_lines,
        max_body: args.max_body,
        token: args.token.clone(),
        static_dir: args.static_dir.clone().unwrap_or_else(default_static),
        core_home: CoreHome::Thread,
    };
    let app = start(&world, settings, recorder).await?;
    crate::watcher::start_notify(claude_dir.clone(), app.core.clone());
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!(
        "headspace: listening on http://{local}/ (claude dir {})",
        claude_dir.display()
    );
    let exe = std::env::current_exe()
        .map(|e| e.display().to_string())
        .unwrap_or_else(|_| "headspace".into());
    eprintln!("headspace: dashboard at http://{local}/");
    eprintln!("headspace: next, connect Claude Code: {exe} hooks install --url http://{local}");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    // A closed terminal or tmux session (SIGHUP) also shuts down cleanly.
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|e| e.to_string())?;
    let shutdown = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = hangup.recv() => {}
        }
    };
    accept_loop(listener, app.clone(), shutdown).await;
    eprintln!("headspace: shutting down");
    // Give the writer a moment to commit what it holds.
    for _ in 0..50 {
        if app
            .health
            .backlog
            .load(std::sync::atomic::Ordering::Relaxed)
            == 0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// What a server runs with besides its adapters.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The core's configuration (claude dir, gap threshold, trust window).
    pub core: headspace_core::Config,
    /// Time between transcript sweeps.
    pub sweep_every: Duration,
    /// Time between captures of each pane.
    pub pane_interval: Duration,
    /// Lines of each pane captured.
    pub pane_lines: u32,
    /// Largest request body accepted.
    pub max_body: usize,
    /// Bearer token, when one is required.
    pub token: Option<String>,
    /// The dashboard's files.
    pub static_dir: PathBuf,
    /// Where the core's loop runs.
    pub core_home: CoreHome,
}

/// Starts a server's insides on `world`: restores the core from the store, then starts the
/// core's loop, the writer, the transcript sweep, the pane watchdog and the ticker. The
/// returned app serves requests (see [`accept_loop`]).
pub async fn start(
    world: &World,
    settings: Settings,
    recorder: Option<Recorder>,
) -> Result<Arc<App>, String> {
    let snapshot = world
        .store
        .snapshot()
        .await
        .map_err(|e| format!("cannot load state: {e}"))?;
    // Event ids keep increasing across restarts: they start from the clock.
    let now_ms = world.clock.now().millis().max(0) as u64;
    let hub = Arc::new(Hub::new(now_ms * 1000, 65_536));
    let metrics = Arc::new(Metrics::default());
    let health = Arc::new(Health::default());
    health
        .healthy
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let config = settings.core;
    let shared = driver::Shared {
        hub: hub.clone(),
        metrics: metrics.clone(),
        health: health.clone(),
    };
    let core = driver::start(
        config,
        world,
        snapshot,
        shared,
        recorder,
        settings.core_home,
    );
    crate::watcher::start_sweep(world.files.clone(), core.clone(), settings.sweep_every);
    crate::watchdog::start(
        world.store.clone(),
        world.panes.clone(),
        core.clone(),
        settings.pane_interval,
        settings.pane_lines,
    );
    Ok(Arc::new(App {
        core,
        store: world.store.clone(),
        hub,
        metrics,
        health,
        max_body: settings.max_body,
        token: settings.token,
        static_dir: settings.static_dir,
        reconcile_budget: Duration::from_secs(5),
        panes: world.panes.clone(),
    }))
}

/// A source of accepted connections: a TCP listener, or turmoil's in the simulation.
pub trait Listen {
    /// An accepted connection.
    type Conn: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static;
    /// Waits for the next connection.
    fn accept(&mut self) -> impl std::future::Future<Output = std::io::Result<Self::Conn>>;
}

impl Listen for tokio::net::TcpListener {
    type Conn = tokio::net::TcpStream;

    async fn accept(&mut self) -> std::io::Result<tokio::net::TcpStream> {
        let (stream, _) = tokio::net::TcpListener::accept(self).await?;
        // Events are small and must not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

/// Serves HTTP/1.1 on every connection `listener` accepts, until `shutdown` resolves.
pub async fn accept_loop<L: Listen>(
    mut listener: L,
    app: Arc<App>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok(stream) = accepted else { continue };
                let app = app.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| http::handle(app.clone(), req));
                    let _ = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc).await;
                });
            }
            _ = &mut shutdown => break,
        }
    }
}
