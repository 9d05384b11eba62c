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
