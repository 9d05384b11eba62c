//! The simulated world the real server runs in: transcript files, a durable store, tmux
//! panes and the clock, each implementing the shell's own adapter trait. Everything lives
//! outside the server host, so it survives the host's crashes; what the server had not
//! committed is lost with it.

pub mod directory;
pub mod events;
pub mod pane_queue;
mod store;

use crate::check::Checker;
use crate::rng::Rng;
use headspace::server::store::BoxFuture;
use headspace::server::world::{Clock, FileStat, Files, Panes};
use headspace_core::kind::AgentKind;
use headspace_core::pane::dialog::Key;
use headspace_core::pane::discovery::{PaneListing, PaneProcess};
use headspace_core::pane::send_check::Sent;
use headspace_core::store::MemStore;
use headspace_core::Timestamp;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// The epoch every simulation starts at.
pub const EPOCH_MS: i64 = 1_793_523_600_000; // 2026-11-01T09:00:00Z

/// Simulated time, from turmoil's clock (valid inside a host).
pub fn sim_now() -> Timestamp {
    let elapsed = turmoil::sim_elapsed().unwrap_or_default();
    Timestamp(EPOCH_MS + elapsed.as_millis() as i64)
}

/// What a pane shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    /// Claude Code's idle prompt.
    Idle,
    /// A spinner above the input box.
    Busy,
    /// AskUserQuestion's options.
    Question,
    /// A permission dialog.
    Permission,
}

impl Screen {
    /// The screen of an agent of `kind` as tmux would capture it.
    pub fn render_for(&self, kind: AgentKind) -> String {
        match kind {
            AgentKind::Claude => self.render(),
            AgentKind::Codex => self.render_codex(),
            AgentKind::Gemini => self.render_gemini(),
        }
    }

    /// Gemini CLI's screen (0.61's shapes: a spinner line with `esc to cancel` above the rule
    /// while it works; an approval box in place of the composer).
    fn render_gemini(&self) -> String {
        const RULE: &str = "────────────────────────────────────────";
        const COMPOSER: &str = " Shift+Tab to accept edits\n >   Type your message or @path/to/file\n workspace (/directory)     sandbox     /model\n ~/project                  no sandbox  gemini-2.5-pro\n";
        match self {
            Screen::Idle => format!(" > go\n✦ Done.\n{RULE}\n{COMPOSER}"),
            Screen::Busy | Screen::Question => format!(" > go\n ⠙ Thinking... (esc to cancel, 4s)\n{RULE}\n{COMPOSER}"),
            Screen::Permission => " > go\n╭──────────────────────────╮\n│ ? Shell  cargo test       │\n│ Allow execution of [Shell]? │\n│ ● 1. Allow once           │\n│   2. Allow for this session │\n│   3. No, suggest changes (esc) │\n╰──────────────────────────╯\n".to_string(),
        }
    }

    /// Codex CLI's screen (0.171's shapes: a turn ends with `Worked for …`; while it works a
    /// spinner line says `esc to interrupt`).
    fn render_codex(&self) -> String {
        const FOOTER: &str =
            "  gpt-5-codex default · ~/project\n  ← for agents · ? for shortcuts\n";
        match self {
            Screen::Idle => format!("› go\n\n• Done.\n\n  Worked for 2s • 10:00\n\n› Ask Codex to do anything\n\n{FOOTER}"),
            Screen::Busy | Screen::Question => format!("› go\n\n• Working (4s • esc to interrupt)\n\n› Ask Codex to do anything\n\n{FOOTER}"),
            Screen::Permission => "› go\n\n  Would you like to run the following command?\n\n  $ cargo test\n\n› 1. Yes, proceed (y)\n  2. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel\n".to_string(),
        }
    }

    /// Claude Code's screen as tmux would capture it (the shapes of `../shared/corpus/tui/`).
    pub fn render(&self) -> String {
        const RULE: &str = "────────────────────────────────────────────────────────────";
        match self {
            Screen::Idle => format!("⏺ Done.\n\n{RULE}\n❯\u{a0}\n{RULE}\n  ? for shortcuts\n"),
            Screen::Busy => format!("⏺ Working\n\n✳ Simmering… (4s · ↓ 1.2k tokens · esc to interrupt)\n\n{RULE}\n❯\u{a0}\n{RULE}\n"),
            Screen::Question => "☐ Choice\n\nWhich option?\n\n❯ 1. a\n  2. b\n  3. Type something.\n\nEnter to select · ↑/↓ to navigate · Esc to cancel\n".to_string(),
            Screen::Permission => "╭──────────────────────────────────────╮\n│ Bash command                          │\n│   cargo test                          │\n│ Do you want to proceed?               │\n│ ❯ 1. Yes                              │\n│   2. No, and tell Claude what to do differently (esc) │\n╰──────────────────────────────────────╯\n".to_string(),
        }
    }
}

/// What runs in a simulated pane, as the process table would show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaneProgram {
    /// The agent's process (Claude Code's, or Codex CLI's).
    Agent {
        /// Which CLI.
        kind: AgentKind,
        /// Its pid.
        pid: u32,
        /// Its folder.
        cwd: String,
        /// When it started.
        started_at: Timestamp,
    },
    /// Only the shell the process ran in (it was killed).
    Shell,
    /// Another program took the pane over.
    Other,
}

struct SimFile {
    data: Vec<u8>,
    ino: u64,
}

impl SimFile {
    fn stat(&self) -> FileStat {
        FileStat {
            len: self.data.len() as u64,
            ino: self.ino,
        }
    }
}

/// Faults the adapters apply, switched off for the liveness phase.
#[derive(Clone, Debug, Default)]
pub struct AdapterFaults {
    /// Probability a commit fails.
    pub store_fail: f64,
    /// Outage windows (sim ms since the epoch start, from..to).
    pub outages: Vec<(i64, i64)>,
    /// Probability the server crashes right after a commit that holds a turn.
    pub crash_after_turn: f64,
    /// Probability a capture fails.
    pub pane_fail: f64,
    /// How stale a capture is, in ms.
    pub pane_stale_ms: i64,
    /// Agent rows come back up to this many ms late (a slow store).
    pub slow_loads_ms: u64,
}

/// What really happened on the orchestration's side.
#[derive(Debug, Default)]
pub struct Truth {
    /// The project folder: a real temporary folder, for the runner's real files.
    pub project: Option<PathBuf>,
    /// Each `/flow.*` prompt the agent really worked on, in order.
    pub worked: Vec<String>,
    /// The runner stopped (the run is over, or a file could not be read).
    pub over: bool,
    /// The run's last status.
    pub status: Option<String>,
    /// The runner's decisions, `action: reason`, for a failure's detail.
    pub decisions: Vec<String>,
    /// The run's budget, when it was given one the whole phase exceeds.
    pub budget: Option<f64>,
    /// Why the run stopped short of completing (`errorMessage`).
    pub error: Option<String>,
    /// What it cost.
    pub cost_usd: f64,
    /// How often the runner crashed.
    pub runner_crashes: u32,
}

/// Everything the world holds.
pub struct State {
    files: BTreeMap<String, SimFile>,
    next_ino: u64,
    /// The durable store.
    pub store: MemStore,
    screens: BTreeMap<String, Vec<(Timestamp, Screen)>>,
    inbox: BTreeMap<String, VecDeque<String>>,
    /// What runs in each pane; a pane without an entry is not listed (closed, or never
    /// opened).
    programs: BTreeMap<String, PaneProgram>,
    /// The adapters' faults.
    pub faults: AdapterFaults,
    /// False once the liveness phase starts.
    pub hostile: bool,
    rng: Rng,
    /// Set by the store: the harness crashes the server at the next step.
    pub crash_requested: bool,
    held_locks: BTreeSet<u64>,
    /// The core's recorded inputs, as a `headspace replay` trace (all incarnations).
    pub trace: Vec<u8>,
    /// The invariant checker, fed every commit.
    pub checker: Checker,
    /// Commits so far.
    pub commits: u64,
    /// True from a server crash until its restart: the runner's calls fail then.
    pub server_down: bool,
    /// The orchestration's side of the world, in orchestration scenarios.
    pub orchestra: Truth,
    /// The turmoil host the agents post their hooks to: `server`, or an edge's.
    pub host: &'static str,
    /// Added to the agents' numbers in their session ids, so two edges' sessions differ.
    pub seat: u64,
    /// In the multi-machine scenario: this edge's name and the shared events table its
    /// commits append to (`None`: a single server, whose commits are immediate).
    pub edge: Option<events::EdgeLink>,
    /// In the multi-machine scenario: the shared pane-command table and the key every server
    /// signs with and trusts, and the hubs the agents' users send prompts through.
    pub cluster: Option<ClusterLinks>,
    /// Every text typed into a pane by `send`, in order (pane, text): what C1 counts.
    pub typed_log: Vec<(String, String)>,
}

/// What an edge shares with the other machines of the `cluster` scenario.
#[derive(Clone)]
pub struct ClusterLinks {
    /// The pane commands of the shared database.
    pub queue: pane_queue::SimPaneQueue,
    /// One signing key for every server (each trusts it as its own), so an edge runs what a
    /// hub forwards.
    pub keys: Arc<headspace::server::pane_keys::PaneKeys>,
    /// The hubs (turmoil hosts) a user's send goes through.
    pub hubs: Vec<&'static str>,
}

/// The shared world: cheap to clone, one per run.
#[derive(Clone)]
pub struct SimWorld(Arc<Mutex<State>>);

impl SimWorld {
    /// An empty world whose adapters draw their faults from `rng`.
    pub fn new(rng: Rng, faults: AdapterFaults) -> SimWorld {
        SimWorld(Arc::new(Mutex::new(State {
            files: BTreeMap::new(),
            next_ino: 1,
            store: MemStore::new(),
            screens: BTreeMap::new(),
            inbox: BTreeMap::new(),
            programs: BTreeMap::new(),
            faults,
            hostile: true,
            rng,
            crash_requested: false,
            held_locks: BTreeSet::new(),
            trace: Vec::new(),
            checker: Checker::default(),
            commits: 0,
            server_down: false,
            orchestra: Default::default(),
            host: "server",
            seat: 0,
            edge: None,
            cluster: None,
            typed_log: Vec::new(),
        })))
    }

    /// The state, locked (everything runs on one thread; the lock is never contended).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends bytes to a transcript (creating it).
    pub fn append(&self, rel: &str, bytes: &[u8]) {
        let mut s = self.lock();
        if !s.files.contains_key(rel) {
            let ino = s.next_ino;
            s.next_ino += 1;
            s.files.insert(
                rel.to_string(),
                SimFile {
                    data: Vec::new(),
                    ino,
                },
            );
        }
        s.files
            .get_mut(rel)
            .expect("just made")
            .data
            .extend_from_slice(bytes);
    }

    /// The pane now shows `screen`.
    pub fn show(&self, pane: &str, screen: Screen) {
        let now = sim_now();
        self.lock()
            .screens
            .entry(pane.to_string())
            .or_default()
            .push((now, screen));
    }

    /// Whether the pane is open (a closed one runs nothing).
    pub fn pane_open(&self, pane: &str) -> bool {
        self.lock().programs.contains_key(pane)
    }

    /// The pane now runs `program`; `None` closes it.
    pub fn run_in(&self, pane: &str, program: Option<PaneProgram>) {
        let mut s = self.lock();
        match program {
            Some(p) => s.programs.insert(pane.to_string(), p),
            None => s.programs.remove(pane),
        };
    }

    /// Text typed into the pane by `send`, oldest first.
    pub fn take_typed(&self, pane: &str) -> Option<String> {
        self.lock().inbox.get_mut(pane)?.pop_front()
    }

    /// A sink for the recorder: bytes go to [`State::trace`].
    pub fn trace_sink(&self) -> TraceSink {
        TraceSink(self.clone())
    }

    /// The adapters, as the server's `World`.
    pub fn adapters(&self) -> headspace::server::world::World {
        headspace::server::world::World {
            clock: Arc::new(SimClock),
            store: Arc::new(self.clone()),
            files: Arc::new(self.clone()),
            panes: Arc::new(self.clone()),
            pane_queue: self.lock().cluster.as_ref().map(|c| {
                Arc::new(c.queue.link(pane_queue::Reach::Edge(self.clone())))
                    as Arc<dyn headspace::server::pane_queue::PaneQueue>
            }),
            // No search indexes in memory: the search routes answer 501 here.
            archive: None,
            // The simulated panes start no agents: those routes answer 501 here.
            launcher: None,
            // No devices to push to: those routes answer 501 here.
            push: None,
        }
    }
}

/// Writes into the world's trace.
pub struct TraceSink(SimWorld);

impl std::io::Write for TraceSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().trace.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// turmoil's clock.
pub struct SimClock;

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        sim_now()
    }
}

impl Files for SimWorld {
    fn stat(&self, rel: &str) -> Option<FileStat> {
        self.lock().files.get(rel).map(SimFile::stat)
    }

    fn read_at(&self, rel: &str, offset: u64, max: u64) -> std::io::Result<Vec<u8>> {
        let s = self.lock();
        let f = s
            .files
            .get(rel)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
        let from = (offset as usize).min(f.data.len());
        let to = (from + max as usize).min(f.data.len());
        Ok(f.data[from..to].to_vec())
    }

    fn list(&self) -> BoxFuture<'_, Vec<(String, FileStat)>> {
        let out = self
            .lock()
            .files
            .iter()
            .map(|(k, f)| (k.clone(), f.stat()))
            .collect();
        Box::pin(async move { out })
    }
}

impl Panes for SimWorld {
    fn capture<'a>(&'a self, pane: &'a str, _lines: u32) -> BoxFuture<'a, Option<String>> {
        let now = sim_now();
        let mut s = self.lock();
        let (fail, stale) = (s.faults.pane_fail, s.faults.pane_stale_ms);
        let hostile = s.hostile;
        let kind = match s.programs.get(pane) {
            Some(PaneProgram::Agent { kind, .. }) => *kind,
            _ => AgentKind::Claude,
        };
        let out = if hostile && s.rng.chance(fail) {
            None
        } else {
            let at = if hostile { now.add_millis(-stale) } else { now };
            s.screens.get(pane).and_then(|h| {
                h.iter()
                    .rev()
                    .find(|(t, _)| *t <= at)
                    .or(h.first())
                    .map(|(_, sc)| sc.render_for(kind))
            })
        };
        Box::pin(async move { out })
    }

    fn list(&self) -> BoxFuture<'_, Option<Vec<PaneListing>>> {
        let mut s = self.lock();
        let fail = s.hostile && {
            let p = s.faults.pane_fail;
            s.rng.chance(p)
        };
        let out: Option<Vec<PaneListing>> = (!fail).then(|| {
            s.programs
                .iter()
                .map(|(pane, p)| listing(pane, p))
                .collect()
        });
        if out.is_some() {
            // The reaper can only end an agent whose process it saw in a listing while the
            // server knew the agent's pane.
            let seen: Vec<String> = s
                .programs
                .iter()
                .filter(|(_, p)| matches!(p, PaneProgram::Agent { .. }))
                .map(|(pane, _)| pane.clone())
                .filter(|pane| s.store.agents().any(|a| a.tmux_pane.as_ref() == Some(pane)))
                .collect();
            s.checker.seen_alive.extend(seen);
        }
        Box::pin(async move { out })
    }

    fn interrupt<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>> {
        // Escape reaches the pane at once; the simulated agent stops its turn on its own
        // schedule (its plan says which turns are interrupted), so the key is only recorded.
        Box::pin(async move { self.key(pane, ESCAPE) })
    }

    fn is_open<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, bool> {
        let open = self.lock().programs.contains_key(pane);
        Box::pin(async move { open })
    }

    fn close<'a>(&'a self, pane: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let mut s = self.lock();
            if s.programs.remove(pane).is_none() {
                return Err(format!("can't find pane: {pane}"));
            }
            s.screens.remove(pane);
            Ok(())
        })
    }

    fn press<'a>(&'a self, pane: &'a str, keys: &'a [Key]) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            for k in keys {
                self.key(pane, &format!("{k:?}"))?;
            }
            Ok(())
        })
    }

    fn send<'a>(&'a self, pane: &'a str, text: &'a str) -> BoxFuture<'a, Result<Sent, String>> {
        Box::pin(async move {
            if !self.lock().screens.contains_key(pane) {
                return Err(format!("can't find pane: {pane}"));
            }
            // Typing, the pause, Enter: the agent sees the text after a moment.
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            let mut s = self.lock();
            s.inbox
                .entry(pane.to_string())
                .or_default()
                .push_back(text.to_string());
            s.typed_log.push((pane.to_string(), text.to_string()));
            Ok(Sent {
                cleared_input: false,
                retried_enter: false,
                verified: true,
            })
        })
    }
}

/// What an interrupt types, as the typed log records it.
pub const ESCAPE: &str = "<Escape>";

impl SimWorld {
    /// Records a key pressed in `pane` (not text for the agent: its inbox is untouched).
    fn key(&self, pane: &str, key: &str) -> Result<(), String> {
        let mut s = self.lock();
        if !s.screens.contains_key(pane) {
            return Err(format!("can't find pane: {pane}"));
        }
        s.typed_log.push((pane.to_string(), key.to_string()));
        Ok(())
    }
}

/// A pane as tmux and `/proc` would list it: its shell, and what runs under it.
fn listing(pane: &str, program: &PaneProgram) -> PaneListing {
    let n: u32 = pane.trim_start_matches('%').parse().unwrap_or(0);
    let shell = PaneProcess {
        pid: 100 + n,
        command: "bash".into(),
        args: vec!["-bash".into()],
        cwd: None,
        started_at: Timestamp(0),
    };
    let agent = match program {
        // Gemini CLI as it runs: node on its script, which starts itself again as a child
        // with node flags and waits on it (only the first is the agent).
        PaneProgram::Agent {
            kind: AgentKind::Gemini,
            pid,
            cwd,
            started_at,
        } => {
            let script = "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js";
            let node = |pid: u32, args: Vec<&str>| PaneProcess {
                pid,
                command: "node".into(),
                args: args.into_iter().map(str::to_string).collect(),
                cwd: Some(cwd.clone()),
                started_at: *started_at,
            };
            vec![
                node(*pid, vec!["node", script]),
                node(
                    pid + 50_000,
                    vec!["/usr/bin/node", "--max-old-space-size=4096", script],
                ),
            ]
        }
        _ => Vec::new(),
    };
    let child = match program {
        PaneProgram::Agent { .. } if !agent.is_empty() => None,
        PaneProgram::Agent {
            kind,
            pid,
            cwd,
            started_at,
        } => Some(PaneProcess {
            pid: *pid,
            command: kind.name().into(),
            args: vec![kind.name().into()],
            cwd: Some(cwd.clone()),
            started_at: *started_at,
        }),
        PaneProgram::Other => Some(PaneProcess {
            pid: 9_000 + n,
            command: "vim".into(),
            args: vec!["vim".into(), "notes.md".into()],
            cwd: None,
            started_at: Timestamp(0),
        }),
        PaneProgram::Shell => None,
    };
    PaneListing {
        pane: pane.to_string(),
        current_path: None,
        processes: std::iter::once(shell).chain(child).chain(agent).collect(),
    }
}

impl State {
    /// A2 on the store as it is now.
    pub fn check_stuck(&mut self, now: Timestamp, bound_ms: i64) {
        self.checker.check_stuck(now, &self.store, bound_ms);
    }

    /// R2 on the store as it is now; not while the store is down, and counted from the end
    /// of the last outage.
    pub fn check_gone(&mut self, now: Timestamp, bound_ms: i64) {
        if self.down(now) {
            return;
        }
        let t = now.millis() - EPOCH_MS;
        let back = self
            .faults
            .outages
            .iter()
            .filter(|(_, end)| *end <= t)
            .map(|(_, end)| Timestamp(EPOCH_MS + end))
            .max()
            .filter(|_| self.hostile);
        self.checker.check_gone(now, &self.store, bound_ms, back);
    }

    /// The end-of-run checks on the store as it is now.
    pub fn finish(&mut self, now: Timestamp) {
        self.checker.finish(now, &self.store);
    }

    /// The server crashed: what it answered but had not committed is gone.
    pub fn server_crashed(&mut self) {
        self.checker.server_crashed(&self.store);
        self.server_down = true;
    }

    /// A server (re)started: locks its previous incarnation held are gone with it.
    pub fn server_started(&mut self) {
        self.held_locks.clear();
        self.server_down = false;
    }

    /// Whether the store is unreachable at `now` (one of the run's outages, while hostile).
    pub fn down(&mut self, now: Timestamp) -> bool {
        if !self.hostile {
            return false;
        }
        let t = now.millis() - EPOCH_MS;
        self.faults
            .outages
            .iter()
            .any(|(a, b)| (*a..*b).contains(&t))
    }
}
