//! Numbered SQL migrations from `migrations/`, applied once each, in order, under a lock.

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
];

/// Why migrating failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
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

/// A database error with the server's own message, which `Display` leaves out.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Applies the migrations not yet applied; returns their names. Safe to run concurrently:
/// an advisory lock serialises runners and each migration commits with its record.
pub async fn run(database_url: &str) -> Result<Vec<String>, MigrateError> {
    let (mut client, conn) = tokio_postgres::connect(database_url, NoTls)
        .await
        .map_err(MigrateError::Connect)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
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
        tx.batch_execute(sql).await.map_err(apply(name))?;
        tx.execute("INSERT INTO schema_migrations (name) VALUES ($1)", &[name])
            .await
            .map_err(apply(name))?;
        applied.push(name.to_string());
    }
    tx.commit().await.map_err(apply("(commit)"))?;
    Ok(applied)
}
