//! The options of `headspace serve`, and where the dashboard's files are found.

use crate::config::DEFAULT_ADDR;
use crate::server::role::Role;
use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// Codex CLI's directory (`$CODEX_HOME`; transcripts under sessions/). Without it, Codex
    /// sessions are watched in `$CODEX_HOME` or `~/.codex` only when --claude-dir is not
    /// given either (a server pointed at other transcripts reads none of the user's own).
    #[arg(long, env = "HEADSPACE_CODEX_DIR")]
    pub codex_dir: Option<PathBuf>,
    /// Gemini CLI's directory (`~/.gemini`; chat files under `tmp/<project>/chats/`). Without
    /// it, Gemini sessions are watched in `~/.gemini` only when --claude-dir is not given
    /// either.
    #[arg(long, env = "HEADSPACE_GEMINI_DIR")]
    pub gemini_dir: Option<PathBuf>,
    /// Headspace's own folder (embedded database, state).
    #[arg(long, env = "HEADSPACE_HOME")]
    pub home: Option<PathBuf>,
    /// Also write every core input to this trace file.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Largest request body accepted, in bytes.
    #[arg(long, env = "HEADSPACE_MAX_BODY", default_value_t = 1 << 20)]
    pub max_body: usize,
    /// A file holding the bearer token required on every route but /healthz and the
    /// dashboard's files (required off loopback). Keep it 0600.
    #[arg(long, env = "HEADSPACE_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// The token itself, from the environment (`HEADSPACE_TOKEN`). As a flag it is visible to
    /// every account in `ps`: prefer --token-file.
    #[arg(long, env = "HEADSPACE_TOKEN", hide_env_values = true, hide = true)]
    pub token: Option<String>,
    /// Another name this server answers to (the Host header), besides the loopback names and
    /// the listen address; repeat for more. Needed behind a proxy or a DNS name.
    #[arg(
        long = "allow-host",
        env = "HEADSPACE_ALLOW_HOSTS",
        value_delimiter = ','
    )]
    pub allow_hosts: Vec<String>,
    /// Most connections open at once (lowered to fit the process's file limit); when full,
    /// the longest-idle connection is closed to make room.
    #[arg(long, env = "HEADSPACE_MAX_CONNECTIONS", default_value_t = 512)]
    pub max_connections: usize,
    /// Seconds a client may take to send a request's headers, and may stay idle between
    /// requests, before its connection is closed.
    #[arg(long, env = "HEADSPACE_HEADER_TIMEOUT_SECONDS", default_value_t = 10.0)]
    pub header_timeout_seconds: f64,
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
    /// Minutes between background audits of every transcript line against the stored turns
    /// (`/metrics`, the dashboard's "all N turns accounted for"). 0: never.
    #[arg(long, env = "HEADSPACE_AUDIT_MINUTES", default_value_t = 10.0)]
    pub audit_minutes: f64,
    /// Seconds an agent may say nothing before it leaves memory (the database keeps it; any
    /// news of it brings it back); an ended agent leaves after a minute. 0: never.
    #[arg(long, env = "HEADSPACE_EVICT_AFTER_SECONDS", default_value_t = 1800.0)]
    pub evict_after_seconds: f64,
    /// Megabytes the server may hold while the database is away (writes waiting for it, inputs
    /// waiting for an agent's rows) before it sheds them: hooks to a spool under --home,
    /// transcripts read again from their stored offsets once the database is back.
    #[arg(long, env = "HEADSPACE_MAX_HELD_MB", default_value_t = 128.0)]
    pub max_held_mb: f64,
    /// The same limit in items (writes, events and inputs).
    #[arg(long, env = "HEADSPACE_MAX_HELD", default_value_t = 200_000)]
    pub max_held: u64,
    /// The longest transcript line kept whole, in bytes: a longer one is read in bounded
    /// memory (its first this-many bytes and its last 64 KiB) and its turn's text is marked
    /// as truncated.
    #[arg(long, env = "HEADSPACE_MAX_LINE_BYTES", default_value_t = headspace_core::transcript::framing::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// tmux socket name (`tmux -L NAME`); the default server when unset.
    #[arg(long, env = "HEADSPACE_TMUX_SOCKET")]
    pub tmux_socket: Option<String>,
    /// A folder agents may be started in from Headspace (`headspace new`, `POST
    /// /api/agents`), with everything below it; repeat for more (the environment variable
    /// takes them separated by ':'). Default: your home folder.
    #[arg(
        long = "projects-root",
        env = "HEADSPACE_PROJECTS_ROOTS",
        value_delimiter = ':'
    )]
    pub projects_roots: Vec<PathBuf>,
    /// The command that starts Claude Code in a new agent's tmux window, split on spaces
    /// (run as it is, never through a shell, so no quoting).
    #[arg(long, env = "HEADSPACE_CLAUDE_COMMAND", default_value = "claude")]
    pub claude_command: String,
    /// The command that starts Codex CLI in a new agent's tmux window (`--agent codex`),
    /// split on spaces like --claude-command.
    #[arg(long, env = "HEADSPACE_CODEX_COMMAND", default_value = "codex")]
    pub codex_command: String,
    /// The command that starts Gemini CLI in a new agent's tmux window (`--agent gemini`),
    /// split on spaces.
    #[arg(long, env = "HEADSPACE_GEMINI_COMMAND", default_value = "gemini")]
    pub gemini_command: String,
    /// Where the worktrees of agents started with one go: relative to the repository's main
    /// checkout (and then ignored by git there), or absolute.
    #[arg(long, env = "HEADSPACE_WORKTREES_DIR", default_value = ".worktrees")]
    pub worktrees_dir: PathBuf,
    /// A command run through `sh -c` when an agent starts waiting on you or finishes a task,
    /// with the notice as JSON on its stdin (rate-limited; sub-agents and slash commands are
    /// not told).
    #[arg(long, env = "HEADSPACE_NOTIFY_COMMAND")]
    pub notify_command: Option<String>,
    /// Who runs this server, for the push services its pushes go through (the `sub` of
    /// their VAPID tokens, RFC 8292): a `mailto:` or `https:` address.
    #[arg(
        long,
        env = "HEADSPACE_PUSH_CONTACT",
        default_value = "mailto:headspace@localhost"
    )]
    pub push_contact: String,
    /// Takes push subscriptions whose endpoint is a loopback `http://` URL (tests with a
    /// push receiver of their own); without it every endpoint must be `https://`.
    #[arg(long)]
    pub allow_loopback_push: bool,
    /// Also serves HTTPS here (with `--tls-cert` and `--tls-key`), for browsers on the
    /// network: a phone installs the app and takes pushes only from an HTTPS origin. The plain
    /// `--addr` stays for the hooks and the CLI; the login cookie set over HTTPS is `Secure`.
    /// Off loopback it needs a token you chose (`--token-file`), as `--addr` does.
    #[arg(long, env = "HEADSPACE_TLS_ADDR")]
    pub tls_addr: Option<SocketAddr>,
    /// The certificate chain (PEM) `--tls-addr` serves.
    #[arg(long, env = "HEADSPACE_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`; keep it 0600.
    #[arg(long, env = "HEADSPACE_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// A JSON price table (dollars per million tokens by model) whose entries replace the
    /// shipped ones, for the cost cards, `/api/usage` and `/metrics` show; the orchestration
    /// runners this server starts use it too.
    #[arg(long, env = "HEADSPACE_PRICES")]
    pub prices: Option<PathBuf>,
    /// The public keys (one a line, as in another server's `pane-key.pub`) whose signed pane
    /// commands this machine runs, besides its own (default: `$HEADSPACE_HOME/trusted-pane-keys`;
    /// see docs/multi-machine.md).
    #[arg(long, env = "HEADSPACE_TRUSTED_PANE_KEYS")]
    pub trusted_pane_keys: Option<PathBuf>,
    /// This machine's name in a shared database (default: the host name).
    #[arg(long, env = "HEADSPACE_MACHINE")]
    pub machine: Option<String>,
    /// What this process does: `all` (one machine: hooks, transcripts, panes and the page),
    /// `edge` (this machine's agents, into the shared --database-url; no page) or `hub` (the
    /// page and the API for every machine, from the shared database).
    #[arg(long, env = "HEADSPACE_ROLE", value_enum, default_value_t = Role::All)]
    pub role: Role,
}

/// The dashboard's files: next to the binary's workspace, the source tree, or `./static`.
pub(super) fn default_static() -> PathBuf {
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
