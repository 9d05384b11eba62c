//! The benches' PostgreSQL plumbing: a client connection, and a fresh migrated database of
//! their own on the cluster `scripts/with-test-postgres.sh` starts.

use headspace::server::migrate;
use tokio_postgres::{Client, NoTls};

/// A client on `url`, its connection driven by a spawned task.
pub async fn connect(url: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await.expect("database");
    tokio::spawn(conn);
    client
}

/// This run's name for database `name` (the process id keeps runs apart).
pub fn database_name(name: &str) -> String {
    format!("{name}_{}", std::process::id())
}

/// Database `db` made afresh on the cluster at `cluster` (dropped first if an earlier run
/// left it) and migrated; its URL.
pub async fn fresh_database(cluster: &str, db: &str) -> String {
    let admin = connect(cluster).await;
    for statement in [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ] {
        admin
            .simple_query(&statement)
            .await
            .expect("the bench database");
    }
    let url = cluster.replace("dbname=postgres", &format!("dbname={db}"));
    migrate::run(&url).await.expect("migrations");
    url
}

/// A blocking SQL client for a bench's main thread: its own small runtime and connection.
pub struct Sql {
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl Sql {
    /// Connects to `url`.
    pub fn connect(url: &str) -> Sql {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(connect(url));
        Sql { rt, client }
    }

    /// The first column of the first row of `query`, as text (empty if none).
    pub fn scalar(&self, query: &str) -> String {
        self.rt.block_on(async {
            let rows = self
                .client
                .simple_query(query)
                .await
                .unwrap_or_else(|e| panic!("{query}: {}", migrate::describe(&e)));
            rows.iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                    _ => None,
                })
                .unwrap_or_default()
        })
    }

    /// `query`'s first column as a number.
    pub fn count(&self, query: &str) -> i64 {
        self.scalar(query).parse().unwrap_or(0)
    }
}

/// A fresh migrated database `name` (this run's) on the cluster at `cluster`, from a
/// blocking caller; its URL.
pub fn fresh_database_blocking(cluster: &str, name: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(fresh_database(cluster, &database_name(name)))
}
