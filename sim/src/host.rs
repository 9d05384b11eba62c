//! A simulated host that runs the real server: its turmoil listener, which server it is
//! (name, machine, role, id), its settings (timings shortened for the simulation), and the
//! host's body — the real shell's `start` and `accept_loop` over the simulated adapters.

use crate::world::{sim_now, SimWorld};
use headspace::server::record::Recorder;
use headspace::server::role::Role;
use headspace::server::{accept_loop, start, Listen, Settings};
use headspace_core::access::AccessPolicy;
use headspace_core::harness::planted::Bug;
use headspace_testkit::synth::CLAUDE_DIR;
use std::time::Duration;

/// Simulated time per turmoil step.
pub const TICK_MS: u64 = 10;

/// How long the reaper may take to end an agent whose pane or process went: ten pane
/// listings, some of which fail.
pub const GONE_WITHIN_MS: i64 = 20_000;

/// turmoil's listener, as the server's [`Listen`].
pub(crate) struct SimListener(pub(crate) turmoil::net::TcpListener);

impl Listen for SimListener {
    type Conn = turmoil::net::TcpStream;

    async fn accept(&mut self) -> std::io::Result<turmoil::net::TcpStream> {
        Ok(self.0.accept().await?.0)
    }
}

/// Which server a host runs: its turmoil name, its machine, its role and machine id.
#[derive(Clone, Copy, Debug)]
pub struct ServerSpec {
    /// The turmoil host name (what clients connect to and send as `Host`).
    pub host: &'static str,
    /// The machine name (agents' `machine`).
    pub machine: &'static str,
    /// `all` (one server) or `edge`.
    pub role: Role,
    /// The machine's id: its agents' ids start at `id_base_of(id)`.
    pub id: u16,
}

/// The single `--role all` server of the one-machine scenarios.
pub const SINGLE: ServerSpec = ServerSpec {
    host: "server",
    machine: "sim",
    role: Role::All,
    id: 0,
};

/// The server settings of a simulated host (timings shortened for the simulation).
pub(crate) fn settings(
    core: headspace_core::Config,
    host: &str,
    machine: &str,
    role: Role,
) -> Settings {
    Settings {
        core,
        sweep_every: Duration::from_millis(500),
        pane_interval: Duration::from_secs(2),
        pane_lines: 20,
        audit_every: None,
        max_body: 1 << 20,
        access: AccessPolicy::new([host], crate::net::TOKEN),
        token: crate::net::TOKEN.into(),
        // The simulated store forwards no pane commands: a key is needed, never used.
        pane_keys: std::sync::Arc::new(headspace::server::pane_keys::PaneKeys::ephemeral()),
        self_addr: format!("{host}:5055"),
        max_connections: 512,
        header_timeout: Duration::from_secs(10),
        static_dir: "/nonexistent".into(),
        core_home: headspace::server::driver::CoreHome::Task,
        prices: headspace_core::usage::PriceTable::builtin(),
        prices_file: None,
        machine: machine.into(),
        role,
        hold_limits: headspace_core::store::outage::HoldLimits::default(),
        spool_dir: None,
    }
}

/// A server host (`--role all`, or an edge): the real shell's `start` and `accept_loop`
/// over the simulated adapters.
pub(crate) async fn server(world: SimWorld, bug: Option<Bug>, spec: ServerSpec) -> turmoil::Result {
    world.lock().server_started();
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 5055)).await?;
    let mut core = headspace_core::Config::new(CLAUDE_DIR);
    core.codex_dir = Some(headspace_testkit::synth_codex::CODEX_DIR.to_string());
    core.gemini_dir = Some(headspace_testkit::synth_gemini::GEMINI_DIR.to_string());
    core.planted = bug;
    core.id_base = headspace_core::engine::id_base_of(spec.id);
    // Agents leave memory after 20 silent seconds (30 minutes in production), so the
    // simulation's faults meet agents coming back from the store all the time.
    core.evict_after_ms = 20_000;
    let mut settings = settings(core, spec.host, spec.machine, spec.role);
    if let Some(c) = &world.lock().cluster {
        settings.pane_keys = c.keys.clone();
    }
    let adapters = world.adapters();
    // While the store is down, wait, as a supervisor would before restarting us; only then
    // does the recorder mark the restart in the trace.
    while adapters.store.ping().await.is_err() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let existing = String::from_utf8_lossy(&world.lock().trace).into_owned();
    let existing = (!existing.is_empty()).then_some(existing);
    let recorder = Recorder::start(
        existing.as_deref(),
        Box::new(world.trace_sink()),
        &headspace::server::record::TraceDirs {
            claude: CLAUDE_DIR.to_string(),
            codex: Some(headspace_testkit::synth_codex::CODEX_DIR.to_string()),
            gemini: Some(headspace_testkit::synth_gemini::GEMINI_DIR.to_string()),
        },
        sim_now(),
    )?;
    let app = start(&adapters, settings, Some(recorder)).await?;
    // Commands other machines write for this one's panes (none without a shared table).
    headspace::server::http::start_pane_executor(app.clone());
    accept_loop(SimListener(listener), app, std::future::pending()).await;
    Ok(())
}
