//! `headspace serve`: the server around the core.

pub mod archive;
pub mod audit_loop;
pub mod backoff;
pub mod connections;
pub mod driver;
pub mod embedded_pg;
pub mod event_log;
pub mod fanout;
pub mod http;
pub mod machines;
pub mod metrics;
pub mod migrate;
pub mod notifier;
pub mod pane_keys;
pub mod pane_queue;
pub mod pgstore;
pub mod prices;
pub mod push;
pub mod record;
pub mod role;
pub mod search;
mod serve_args;
pub mod spool;
pub mod sse;
pub mod store;
pub mod tls;
pub mod watchdog;
pub mod watcher;
pub mod world;

use crate::config::{default_claude_dir, default_home, read_token, token_path};
use crate::server::connections::Connections;
use crate::server::driver::{CoreHome, Health};
use crate::server::embedded_pg::EmbeddedPg;
use crate::server::http::App;
use crate::server::metrics::Metrics;
use crate::server::pgstore::PgStore;
use crate::server::record::Recorder;
use crate::server::role::Role;
use crate::server::serve_args::default_static;
pub use crate::server::serve_args::ServeArgs;
use crate::server::sse::Hub;
use crate::server::world::{DiskFiles, SystemClock, TmuxPanes, World};
use headspace_core::access::AccessPolicy;
use headspace_core::kind::AgentKind;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, warn};

/// The agent CLIs' folders the server reads transcripts in.
struct AgentDirs {
    /// Claude Code's (`--claude-dir`).
    claude: PathBuf,
    /// Codex CLI's, when watched (`--codex-dir`).
    codex: Option<PathBuf>,
    /// Gemini CLI's, when watched (`--gemini-dir`).
    gemini: Option<PathBuf>,
}

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ServeArgs) -> Result<(), String> {
    let claude_dir = match args.claude_dir.clone() {
        Some(d) => d,
        None => default_claude_dir()?,
    };
    let claude_dir = std::fs::canonicalize(&claude_dir).unwrap_or(claude_dir);
    let codex_dir = match (&args.codex_dir, &args.claude_dir) {
        (Some(d), _) => Some(d.clone()),
        (None, None) => crate::config::default_codex_dir(),
        (None, Some(_)) => None,
    }
    .map(|d| std::fs::canonicalize(&d).unwrap_or(d));
    let gemini_dir = match (&args.gemini_dir, &args.claude_dir) {
        (Some(d), _) => Some(d.clone()),
        (None, None) => crate::config::default_gemini_dir(),
        (None, Some(_)) => None,
    }
    .map(|d| std::fs::canonicalize(&d).unwrap_or(d));
    let dirs = AgentDirs {
        claude: claude_dir,
        codex: codex_dir,
        gemini: gemini_dir,
    };
    let home = match args.home.clone() {
        Some(h) => h,
        None => default_home()?,
    };
    crate::private_files::private_dir(&home)?;
    let token = match read_token(args.token_file.as_deref(), args.token.as_deref())? {
        Some(t) => t,
        None if !args.addr.ip().is_loopback()
            || args.tls_addr.is_some_and(|a| !a.ip().is_loopback()) =>
        {
            let addr = match args.tls_addr {
                Some(a) if !a.ip().is_loopback() => a,
                _ => args.addr,
            };
            return Err(format!(
                "listening on {addr} (not loopback) needs a token you chose and shared: \
                 --token-file FILE (or HEADSPACE_TOKEN)"
            ));
        }
        // The first start makes one; the CLI and the hooks read it from there.
        None => crate::private_files::secret_or_new(&token_path(&home))
            .map_err(|e| format!("the token: {e}"))?,
    };
    // HTTPS is all three flags or none, and its files are checked before anything starts.
    let tls_flags = [
        args.tls_addr.is_some(),
        args.tls_cert.is_some(),
        args.tls_key.is_some(),
    ];
    if tls_flags.contains(&true) && tls_flags.contains(&false) {
        return Err("HTTPS needs all three of --tls-addr, --tls-cert and --tls-key".into());
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        crate::server::tls::acceptor(cert, key)?;
    }
    // What Claude Code's HTTP hooks send: it posts hooks and opens nothing else.
    let hook_key = crate::private_files::secret_or_new(&crate::config::hook_key_path(&home))
        .map_err(|e| format!("the hook key: {e}"))?;
    if args.role != Role::All && args.database_url.is_none() {
        return Err(format!(
            "--role {} works on the database the machines share: give --database-url (or DATABASE_URL)",
            args.role
        ));
    }
    if args.role == Role::Edge && !args.addr.ip().is_loopback() {
        return Err(format!(
            "--role edge takes hooks from this machine only: listen on loopback (--addr 127.0.0.1:PORT), not {}",
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
    let result = serve(args, token, hook_key, home, dirs, url).await;
    if let Some(pg) = embedded {
        info!("stopping the embedded database");
        let _ = tokio::task::spawn_blocking(move || pg.stop()).await;
    }
    result
}

/// The file descriptors kept free for the database pool, tmux, transcripts and logs.
const FD_RESERVE: u64 = 64;

/// `wanted` connections, lowered so that they and [`FD_RESERVE`] fit the process's limit on
/// open files (raising the soft limit to the hard one first).
fn connection_cap(wanted: usize) -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we own.
    let limit = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return wanted;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
        lim.rlim_cur
    };
    let room = limit.saturating_sub(FD_RESERVE).max(8);
    wanted.min(usize::try_from(room).unwrap_or(usize::MAX))
}

async fn serve(
    args: ServeArgs,
    token: String,
    hook_key: String,
    home: PathBuf,
    dirs: AgentDirs,
    url: String,
) -> Result<(), String> {
    let AgentDirs {
        claude: claude_dir,
        codex: codex_dir,
        gemini: gemini_dir,
    } = dirs;
    // Before anything says it listens: a SIGTERM sent as soon as "listening" shows must find
    // its handler (a test once waited for ever on one that came in between).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    // A closed terminal or tmux session (SIGHUP) also shuts down cleanly.
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|e| e.to_string())?;
    let mut delay = Duration::from_millis(200);
    let applied = loop {
        match crate::server::migrate::run(&url).await {
            Ok(a) => break a,
            Err(e) if delay < Duration::from_secs(10) && !e.is_permanent() => {
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
    let role = args.role;
    // A hub is no machine: it holds no agents, and every pane command it is asked goes to
    // the agent's edge.
    let (store, machine, id) = if role == Role::Hub {
        (
            PgStore::new(&url, 8).map_err(|e| e.to_string())?,
            String::new(),
            0,
        )
    } else {
        let machine = args.machine.clone().unwrap_or_else(machines::default_name);
        machines::valid_name(&machine)?;
        let store = PgStore::for_machine(&url, 8, Some(&machine)).map_err(|e| e.to_string())?;
        let wanted = (role == Role::All).then_some(0);
        let id = crate::server::pgstore::machines::register_and_beat(
            store.clone(),
            machine.clone(),
            wanted,
        )
        .await?;
        let store = if role.shares_events() {
            store.sharing_events()
        } else {
            store
        };
        (store, machine, id)
    };
    // Full-text indexing of committed turns, off the writer's commit path.
    if role.indexes_turns() {
        crate::server::pgstore::search_index::start_indexer(store.clone());
    }
    // The store as PostgreSQL, for the fan-out.
    let pg = store.clone();
    let pane_queue = crate::server::pgstore::pane_commands::PgPaneQueue {
        store: store.clone(),
        url: url.clone(),
    };
    let store = Arc::new(store);
    let launches: Arc<dyn crate::launch::LaunchBook> = store.clone();
    let world = World {
        clock: Arc::new(SystemClock),
        archive: Some(store.clone()),
        store,
        files: Arc::new({
            let mut files = DiskFiles::new(claude_dir.clone());
            if let Some(d) = &codex_dir {
                files = files.with_codex(d.clone());
            }
            if let Some(d) = &gemini_dir {
                files = files.with_gemini(d.clone());
            }
            files
        }),
        panes: Arc::new(TmuxPanes {
            socket: args.tmux_socket.clone(),
        }),
        pane_queue: Some(Arc::new(pane_queue)),
        launcher: role
            .has_agents()
            .then(|| launcher(&args, launches))
            .transpose()?,
        push: Some(crate::server::push::Push::load(
            &home,
            args.push_contact.clone(),
            args.allow_loopback_push,
        )?),
    };
    let recorder = match &args.record {
        Some(p) => Some(
            Recorder::open(
                p,
                &crate::server::record::TraceDirs {
                    claude: claude_dir.display().to_string(),
                    codex: codex_dir.as_ref().map(|d| d.display().to_string()),
                    gemini: gemini_dir.as_ref().map(|d| d.display().to_string()),
                },
                world.clock.now(),
            )
            .map_err(|e| format!("cannot record to {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let trusted = args
        .trusted_pane_keys
        .clone()
        .unwrap_or_else(|| pane_keys::default_trusted_file(&home));
    let keys = pane_keys::PaneKeys::load(&home, &trusted)?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
    // HTTPS for browsers on the network (a phone): a second listener, beside the plain
    // loopback one that the hooks and the CLI use.
    let tls = match (args.tls_addr, &args.tls_cert, &args.tls_key) {
        (Some(addr), Some(cert), Some(key)) => {
            let acceptor = crate::server::tls::acceptor(cert, key)?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("cannot listen on {addr} (--tls-addr): {e}"))?;
            Some((listener, acceptor))
        }
        (None, None, None) => None,
        _ => {
            return Err("HTTPS needs all three of --tls-addr, --tls-cert and --tls-key".to_string())
        }
    };
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let mut core = headspace_core::Config::new(claude_dir.display().to_string());
    core.codex_dir = codex_dir.as_ref().map(|d| d.display().to_string());
    core.gemini_dir = gemini_dir.as_ref().map(|d| d.display().to_string());
    core.id_base = headspace_core::engine::id_base_of(id);
    core.gap_threshold_ms = (args.gap_seconds * 1000.0) as i64;
    core.evict_after_ms = (args.evict_after_seconds * 1000.0) as i64;
    let listen_host = local.ip().to_string();
    let tls_host = tls
        .as_ref()
        .and_then(|(l, _)| l.local_addr().ok())
        .map(|a| a.ip().to_string());
    let hosts = args
        .allow_hosts
        .iter()
        .map(String::as_str)
        .chain([listen_host.as_str()])
        .chain(tls_host.as_deref());
    let max_connections = connection_cap(args.max_connections);
    if max_connections < args.max_connections {
        info!("at most {max_connections} connections at once (the process's open-file limit)");
    }
    core.max_line_bytes = args.max_line_bytes;
    let settings = Settings {
        core,
        sweep_every: Duration::from_secs_f64(args.sweep_seconds.max(0.05)),
        pane_interval: Duration::from_secs_f64(args.pane_poll_seconds.max(0.05)),
        pane_lines: args.pane_lines,
        audit_every: (args.audit_minutes > 0.0)
            .then(|| Duration::from_secs_f64((args.audit_minutes * 60.0).max(0.5))),
        max_body: args.max_body,
        access: AccessPolicy::new(hosts, &token).with_hook_key(&hook_key),
        token,
        pane_keys: Arc::new(keys),
        // Runners this server starts talk back to the address it listens on (loopback when it
        // listens on every address).
        self_addr: if local.ip().is_unspecified() {
            format!("127.0.0.1:{}", local.port())
        } else {
            local.to_string()
        },
        max_connections,
        header_timeout: Duration::from_secs_f64(args.header_timeout_seconds.max(0.1)),
        static_dir: args.static_dir.clone().unwrap_or_else(default_static),
        core_home: CoreHome::Thread,
        prices: crate::server::prices::load(args.prices.as_deref())?,
        prices_file: args.prices.clone(),
        machine,
        role,
        hold_limits: headspace_core::store::outage::HoldLimits {
            max_bytes: (args.max_held_mb.max(1.0) * (1u64 << 20) as f64) as u64,
            max_count: args.max_held.max(1),
        },
        spool_dir: role.has_agents().then(|| home.join("spool")),
    };
    let app = match role {
        Role::Hub => {
            let hub = fanout::preloaded_hub(&pg, &settings.core).await?;
            let wake = crate::server::pgstore::listen::wake_on(
                url.clone(),
                crate::server::pgstore::events::CHANNEL,
                None,
            );
            fanout::start(pg.clone(), wake, hub.clone(), settings.core.clone());
            start_hub(&world, settings, hub)
        }
        _ => start(&world, settings, recorder).await?,
    };
    if role.has_agents() {
        // Commands other servers write for this machine's panes (docs/multi-machine.md).
        http::start_pane_executor(app.clone());
        crate::server::watcher::start_notify(claude_dir.clone(), app.core.clone());
        for (dir, kind) in [
            (&codex_dir, AgentKind::Codex),
            (&gemini_dir, AgentKind::Gemini),
        ] {
            if let Some(d) = dir {
                crate::server::watcher::start_notify_kind(d.clone(), kind, app.core.clone());
            }
        }
    }
    crate::server::notifier::start(
        app.hub.clone(),
        app.store.clone(),
        args.notify_command.clone(),
        app.push.clone(),
    );
    // Orchestration runs whose runner died with the machine or the server: shown as such,
    // and restarted where the user chose it.
    if role.has_agents() {
        tokio::spawn({
            let app = app.clone();
            async move { http::revive_runners(&app).await }
        });
    }
    let exe = std::env::current_exe()
        .map(|e| e.display().to_string())
        .unwrap_or_else(|_| "headspace".into());
    match role {
        Role::All => {
            eprintln!(
                "headspace: listening on http://{local}/ (claude dir {}{})",
                claude_dir.display(),
                [("codex", &codex_dir), ("gemini", &gemini_dir)]
                    .iter()
                    .filter_map(|(k, d)| d.as_ref().map(|d| format!(", {k} dir {}", d.display())))
                    .collect::<String>()
            );
            eprintln!("headspace: dashboard at http://{local}/");
            eprintln!("headspace: {}", login_line(local, &app.token));
        }
        Role::Edge => eprintln!(
            "headspace: edge {:?} listening on http://{local}/ for hooks (claude dir {}); its agents show on every hub",
            app.machine,
            claude_dir.display()
        ),
        Role::Hub => {
            eprintln!("headspace: hub listening on http://{local}/; dashboard at http://{local}/");
            eprintln!("headspace: {}", login_line(local, &app.token));
        }
    }
    if role.has_agents() {
        eprintln!("headspace: next, connect Claude Code: {exe} hooks install --url http://{local}");
    }
    let shutdown = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = hangup.recv() => {}
        }
    };
    if let Some((listener, acceptor)) = tls {
        let secure = Arc::new(App {
            https: true,
            tls: Some(acceptor),
            ..(*app).clone()
        });
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!("headspace: HTTPS for browsers at https://{addr}/");
        tokio::spawn(accept_loop(listener, secure, std::future::pending::<()>()));
    }
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

/// The line that gives the user the login link: one click logs the browser in (the link
/// sets the login cookie and the page drops the token from the address bar).
fn login_line(local: std::net::SocketAddr, token: &str) -> String {
    let host = if local.ip().is_unspecified() {
        format!("127.0.0.1:{}", local.port())
    } else {
        local.to_string()
    };
    let token = crate::client::encode_segment(token);
    format!("log in: open http://{host}/login?token={token}")
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
    /// Time between background audits; `None`: never.
    pub audit_every: Option<Duration>,
    /// Largest request body accepted.
    pub max_body: usize,
    /// Who may call which route.
    pub access: AccessPolicy,
    /// The token (handed to the runners the server starts).
    pub token: String,
    /// The key that signs the pane commands this server forwards, and the keys whose
    /// commands it runs.
    pub pane_keys: Arc<pane_keys::PaneKeys>,
    /// The server's own address, for the runners it starts.
    pub self_addr: String,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Time allowed for a request's headers and between requests on a connection.
    pub header_timeout: Duration,
    /// The dashboard's files.
    pub static_dir: PathBuf,
    /// Where the core's loop runs.
    pub core_home: CoreHome,
    /// Prices per model (the shipped table, or it overridden by `--prices`).
    pub prices: headspace_core::usage::PriceTable,
    /// The `--prices` file, handed to the orchestration runners this server starts.
    pub prices_file: Option<std::path::PathBuf>,
    /// This machine's name (agents' `machine`).
    pub machine: String,
    /// What the process does (`--role`).
    pub role: Role,
    /// How much the server holds while the database is away before it sheds.
    pub hold_limits: headspace_core::store::outage::HoldLimits,
    /// Where hooks are spooled when it sheds (`None`: it never sheds).
    pub spool_dir: Option<PathBuf>,
}

/// What the server starts agents with (`--projects-root`, `--claude-command`,
/// `--worktrees-dir`), keeping them in `book`. The roots are made canonical here, once: the
/// core compares canonical paths.
fn launcher(
    args: &ServeArgs,
    book: Arc<dyn crate::launch::LaunchBook>,
) -> Result<crate::launch::Launcher, String> {
    let given = if args.projects_roots.is_empty() {
        vec![crate::private_files::user_home()?]
    } else {
        args.projects_roots.clone()
    };
    let mut roots = Vec::new();
    for r in given {
        roots.push(
            std::fs::canonicalize(&r)
                .map_err(|e| format!("--projects-root {}: {e}", r.display()))?,
        );
    }
    let mut settings = crate::launch::start::LaunchSettings::new(
        roots,
        args.claude_command.clone(),
        args.tmux_socket.clone(),
    );
    settings.worktrees_dir = args.worktrees_dir.clone();
    settings.codex_command = args.codex_command.clone();
    settings.gemini_command = args.gemini_command.clone();
    Ok(crate::launch::Launcher {
        settings: Arc::new(settings),
        book,
    })
}

/// Starts a server's insides on `world`: restores the core from the store, then starts the
/// core's loop, the writer, the transcript sweep, the pane watchdog and the ticker. The
/// returned app serves requests (see [`accept_loop`]).
pub async fn start(
    world: &World,
    settings: Settings,
    recorder: Option<Recorder>,
) -> Result<Arc<App>, String> {
    // The live agents whole; the others known by their rows, loaded when news of them comes.
    let live_since =
        headspace_core::model::live_since(world.clock.now(), settings.core.evict_after_ms);
    let snapshot = world
        .store
        .restore_snapshot(live_since)
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
    let config = settings.core.clone();
    let max_line_bytes = config.max_line_bytes;
    let shared = driver::Shared {
        hub: hub.clone(),
        metrics: metrics.clone(),
        health: health.clone(),
    };
    let spool = match &settings.spool_dir {
        Some(dir) => {
            let spool = crate::server::spool::Spool::new(dir)?;
            if spool.is_none() {
                warn!(
                    "another server uses the hook spool in {}: this one will hold everything \
                     in memory while the database is away (give each server its own --home)",
                    dir.display()
                );
            }
            spool
        }
        None => None,
    };
    let core = driver::start(
        config,
        world,
        snapshot,
        shared,
        recorder,
        settings.core_home,
        driver::Shedding {
            limits: settings.hold_limits,
            spool,
        },
    );
    crate::server::watcher::start_sweep(world.files.clone(), core.clone(), settings.sweep_every);
    crate::server::watchdog::start(
        world.store.clone(),
        world.panes.clone(),
        core.clone(),
        settings.pane_interval,
        settings.pane_lines,
    );
    let audit = Arc::new(crate::server::audit_loop::AuditStatus::default());
    if let Some(every) = settings.audit_every {
        crate::server::audit_loop::start(
            world.store.clone(),
            world.files.clone(),
            world.clock.clone(),
            max_line_bytes,
            audit.clone(),
            every,
        );
    }
    Ok(assemble(world, settings, core, hub, metrics, health, audit))
}

/// Starts a hub's insides on `world` (`--role hub`): no core, no transcripts, no panes; the
/// API reads the store and SSE serves `hub`, which the fan-out feeds from the database.
pub fn start_hub(world: &World, settings: Settings, hub: Arc<Hub>) -> Arc<App> {
    let metrics = Arc::new(Metrics::default());
    let health = Arc::new(Health::default());
    health.healthy.store(true, Relaxed);
    // Nothing listens: what would go to a core (a reconcile) is answered as a stopped core.
    let (core, _) = tokio::sync::mpsc::unbounded_channel();
    let audit = Arc::new(crate::server::audit_loop::AuditStatus::default());
    assemble(world, settings, core, hub, metrics, health, audit)
}

/// The app that serves requests, from its parts.
fn assemble(
    world: &World,
    settings: Settings,
    core: tokio::sync::mpsc::UnboundedSender<driver::Msg>,
    hub: Arc<Hub>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    audit: Arc<crate::server::audit_loop::AuditStatus>,
) -> Arc<App> {
    Arc::new(App {
        core,
        store: world.store.clone(),
        hub,
        metrics,
        health,
        max_body: settings.max_body,
        access: settings.access,
        token: settings.token,
        pane_keys: settings.pane_keys,
        guesses: Arc::new(http::GuessGate::default()),
        https: false,
        tls: None,
        self_addr: settings.self_addr,
        connections: Connections::new(settings.max_connections),
        header_timeout: settings.header_timeout,
        static_dir: settings.static_dir,
        reconcile_budget: Duration::from_secs(5),
        panes: world.panes.clone(),
        files: world.files.clone(),
        max_line_bytes: settings.core.max_line_bytes,
        rules: settings.core.clone(),
        audit,
        clock: world.clock.clone(),
        prices: Arc::new(settings.prices),
        prices_file: settings.prices_file,
        machine: settings.machine,
        role: settings.role,
        pane_queue: world.pane_queue.clone(),
        archive: world.archive.clone(),
        launcher: world.launcher.clone(),
        push: world.push.clone(),
    })
}

/// A source of accepted connections: a TCP listener, or turmoil's in the simulation.
///
/// `accept` only accepts: nothing about the client is looked up there (the loop that calls
/// it serves every client, so any wait in it would be every client's), and who the client is
/// comes from the credential of each request, never from the connection.
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

/// Whether an accept error means the process is out of file descriptors.
fn out_of_files(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

/// Serves HTTP/1.1 on every connection `listener` accepts, until `shutdown` resolves. At most
/// `app.connections`' cap are open at once (a full table closes its longest-idle connection);
/// a client gets `app.header_timeout` to send its headers and may stay idle that long between
/// requests; running out of file descriptors sheds an idle connection and backs off instead of
/// spinning.
pub async fn accept_loop<L: Listen>(
    mut listener: L,
    app: Arc<App>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut backoff = backoff::Backoff::new(Duration::from_millis(10), Duration::from_millis(500));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        if out_of_files(&e) {
                            let shed = app.connections.shed_one();
                            warn!("[HTTP] out of file descriptors accepting a connection ({e}); {}, retrying in {:?}",
                                if shed { "closed the longest-idle connection" } else { "no idle connection to close" }, backoff.next());
                        } else {
                            debug!("[HTTP] accept failed: {e}");
                        }
                        backoff.pause().await;
                        continue;
                    }
                };
                backoff.reset();
                serve_connection(&app, stream);
            }
            _ = &mut shutdown => break,
        }
    }
}

/// Serves one connection on its own task, within the connection table.
fn serve_connection<C>(app: &Arc<App>, stream: C)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let evicted_before = app.connections.evicted();
    let Some(admitted) = app.connections.admit() else {
        // Every open connection is in the middle of a request: turn this one away at once.
        app.metrics.requests_refused.fetch_add(1, Relaxed);
        tokio::spawn(async move {
            let mut stream = stream;
            let _ = tokio::io::AsyncWriteExt::write_all(
                &mut stream,
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: 40\r\nconnection: close\r\n\r\n{\"error\":\"too many connections; retry\"}\n",
            )
            .await;
        });
        return;
    };
    let evicted = app.connections.evicted() - evicted_before;
    app.metrics.connections_evicted.fetch_add(evicted, Relaxed);
    app.metrics
        .connections_open
        .store(app.connections.open() as u64, Relaxed);
    let app = app.clone();
    tokio::spawn(async move {
        let mut admitted = admitted;
        let (conns, id) = admitted.handle();
        let svc_app = app.clone();
        let svc = service_fn(move |req| {
            let app = svc_app.clone();
            // Busy from the request's arrival until its answer's last byte (an SSE stream, a
            // long wait): only idle connections are ever closed to make room.
            let guard = crate::server::connections::busy(&conns, id);
            async move {
                let resp = http::handle(app, req).await?;
                Ok::<_, std::convert::Infallible>(resp.map(|b| http::with_guard(b, guard)))
            }
        });
        let builder = {
            let mut b = http1::Builder::new();
            b.timer(TokioTimer::new())
                .header_read_timeout(app.header_timeout)
                .keep_alive(true);
            b
        };
        match &app.tls {
            // The handshake runs here, on the connection's own task, within the time a
            // client has for its headers: a slow one holds up nobody else.
            Some(tls) => {
                match tokio::time::timeout(app.header_timeout, tls.0.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let conn = builder.serve_connection(TokioIo::new(stream), svc);
                        tokio::pin!(conn);
                        tokio::select! {
                            _ = conn.as_mut() => {}
                            _ = &mut admitted.closed => debug!("[HTTP] closed an idle connection to make room"),
                        }
                    }
                    Ok(Err(e)) => debug!("[HTTP] TLS handshake failed: {e}"),
                    Err(_) => debug!("[HTTP] TLS handshake took too long"),
                }
            }
            None => {
                let conn = builder.serve_connection(TokioIo::new(stream), svc);
                tokio::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    _ = &mut admitted.closed => debug!("[HTTP] closed an idle connection to make room"),
                }
            }
        }
        drop(admitted);
        app.metrics
            .connections_open
            .store(app.connections.open() as u64, Relaxed);
    });
}
