//! Numbered SQL migrations from `migrations/`, applied once each, in order, under a lock.

use crate::server::pgstore::tls::DbTarget;
use tokio_postgres::NoTls;

/// The migrations, compiled in so the binary carries its schema. A test checks this list
/// against the folder.
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_initial.sql",
        include_str!("../../../migrations/0001_initial.sql"),
    ),
    (
        "0002_task_state_since.sql",
        include_str!("../../../migrations/0002_task_state_since.sql"),
    ),
    (
        "0003_agent_sent_at.sql",
        include_str!("../../../migrations/0003_agent_sent_at.sql"),
    ),
    (
        "0004_agent_permission.sql",
        include_str!("../../../migrations/0004_agent_permission.sql"),
    ),
    (
        "0005_agent_end_reason.sql",
        include_str!("../../../migrations/0005_agent_end_reason.sql"),
    ),
    (
        "0006_agent_git_branch.sql",
        include_str!("../../../migrations/0006_agent_git_branch.sql"),
    ),
    (
        "0007_steps_usage.sql",
        include_str!("../../../migrations/0007_steps_usage.sql"),
    ),
    (
        "0008_search.sql",
        include_str!("../../../migrations/0008_search.sql"),
    ),
    (
        "0009_events.sql",
        include_str!("../../../migrations/0009_events.sql"),
    ),
    (
        "0010_search_off_commit.sql",
        include_str!("../../../migrations/0010_search_off_commit.sql"),
    ),
    (
        "0011_machines.sql",
        include_str!("../../../migrations/0011_machines.sql"),
    ),
    (
        "0012_pane_commands.sql",
        include_str!("../../../migrations/0012_pane_commands.sql"),
    ),
    (
        "0014_offsets_by_machine.sql",
        include_str!("../../../migrations/0014_offsets_by_machine.sql"),
    ),
    (
        "0015_machine_commands.sql",
        include_str!("../../../migrations/0015_machine_commands.sql"),
    ),
    (
        "0016_exact_off_commit.sql",
        include_str!("../../../migrations/0016_exact_off_commit.sql"),
    ),
    (
        "0017_signed_pane_commands.sql",
        include_str!("../../../migrations/0017_signed_pane_commands.sql"),
    ),
    (
        "0018_launches.sql",
        include_str!("../../../migrations/0018_launches.sql"),
    ),
    (
        "0019_agent_names.sql",
        include_str!("../../../migrations/0019_agent_names.sql"),
    ),
    (
        "0020_agent_kind.sql",
        include_str!("../../../migrations/0020_agent_kind.sql"),
    ),
    (
        "0021_turn_rewound.sql",
        include_str!("../../../migrations/0021_turn_rewound.sql"),
    ),
];

/// Why migrating failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The database URL or its TLS options are wrong.
    #[error("{0}")]
    Url(String),
    /// The database could not be reached.
    #[error("cannot connect to the database: {}", describe(.0))]
    Connect(tokio_postgres::Error),
    /// A migration failed; nothing of it was applied.
    #[error("migration {name} failed: {}", describe(.source))]
    Apply {
        /// The file.
        name: String,
        /// The error.
        source: tokio_postgres::Error,
    },
}

impl MigrateError {
    /// True when waiting cannot help: a wrong URL, or a server whose TLS certificate fails
    /// the check asked for (the server is up; it is not the one, or not proved to be).
    pub fn is_permanent(&self) -> bool {
        match self {
            MigrateError::Url(_) => true,
            MigrateError::Connect(e) => rejected_certificate(e),
            MigrateError::Apply { .. } => false,
        }
    }
}

/// Whether a connection failed on the server's certificate (rustls said so, inside the
/// I/O error the TLS stream gave).
fn rejected_certificate(e: &tokio_postgres::Error) -> bool {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let rustls_error = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .or_else(|| c.downcast_ref::<rustls::Error>());
        if matches!(rustls_error, Some(rustls::Error::InvalidCertificate(_))) {
            return true;
        }
        cause = c.source();
    }
    false
}

/// A database error with the server's own message and the cause, which `Display` leaves
/// out.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        // The cause says what went wrong (a TLS handshake's "invalid peer certificate:
        // UnknownIssuer"); the error's own words only where it happened.
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                let said = c.to_string();
                if !text.contains(&said) {
                    text.push_str(": ");
                    text.push_str(&said);
                }
                cause = c.source();
            }
            text
        }
    }
}

/// Applies the migrations not yet applied; returns their names. Safe to run concurrently:
/// an advisory lock serialises runners and each migration commits with its record.
pub async fn run(database_url: &str) -> Result<Vec<String>, MigrateError> {
    let target = DbTarget::parse(database_url).map_err(MigrateError::Url)?;
    let mut client = match target.tls {
        Some(tls) => {
            let (client, conn) = target
                .config
                .connect(tls)
                .await
                .map_err(MigrateError::Connect)?;
            tokio::spawn(conn);
            client
        }
        None => {
            let (client, conn) = target
                .config
                .connect(NoTls)
                .await
                .map_err(MigrateError::Connect)?;
            tokio::spawn(conn);
            client
        }
    };
    let apply = |name: &str| {
        let name = name.to_string();
        move |source| MigrateError::Apply { name, source }
    };
    let tx = client.transaction().await.map_err(apply("(lock)"))?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(726854001);
         CREATE TABLE IF NOT EXISTS schema_migrations (
             name TEXT PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .await
    .map_err(apply("(schema_migrations)"))?;
    let mut applied = Vec::new();
    for (name, sql) in MIGRATIONS {
        let done = tx
            .query_opt("SELECT 1 FROM schema_migrations WHERE name = $1", &[name])
            .await
            .map_err(apply(name))?;
        if done.is_some() {
            continue;
        }
        // Said before, not only after: one may take a while on a large database (0016
        // copies every indexed turn's text), and start-up should say what it waits on.
        tracing::info!("applying migration {name}");
        tx.batch_execute(sql).await.map_err(apply(name))?;
        tx.execute("INSERT INTO schema_migrations (name) VALUES ($1)", &[name])
            .await
            .map_err(apply(name))?;
        applied.push(name.to_string());
    }
    tx.commit().await.map_err(apply("(commit)"))?;
    Ok(applied)
}
