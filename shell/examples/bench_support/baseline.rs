//! The baselines the server's insert rate is set against, on the same cluster and database:
//! the turns the server stored, inserted again by a plain client from one connection, as
//! single-row commits and as multi-row `INSERT`s of 100 rows, each statement its own
//! (durable) commit.

use super::pg::connect;
use std::time::Instant;
use tokio_postgres::types::ToSql;
use tokio_postgres::Client;

/// One stored turn's columns, as read back from `turns`.
struct Row {
    agent_id: i64,
    task_id: i64,
    actor: String,
    intent: String,
    text: String,
    millis: i64,
    timestamp_source: String,
    entry_uuid: Option<String>,
    source: String,
    session_id: Option<String>,
}

/// Rows per second of each baseline.
pub struct Rates {
    /// One `INSERT` of one row per commit.
    pub single: f64,
    /// Rows inserted by single-row commits.
    pub single_rows: usize,
    /// One `INSERT … VALUES (…), (…)` of 100 rows per commit.
    pub batched: f64,
    /// Rows inserted in batches.
    pub batched_rows: usize,
}

const COLUMNS: usize = 11;

/// Inserts `rows` into `bench_turns` (new ids from `first_id`), `per` rows a statement.
async fn insert(client: &Client, rows: &[Row], first_id: i64, per: usize) {
    let mut id = first_id;
    for chunk in rows.chunks(per) {
        let mut sql = String::from(
            "INSERT INTO bench_turns (id, agent_id, task_id, actor, intent, text, \"timestamp\", timestamp_source, entry_uuid, source, session_id) VALUES ",
        );
        let ids: Vec<i64> = (0..chunk.len() as i64).map(|n| id + n).collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(chunk.len() * COLUMNS);
        for (n, r) in chunk.iter().enumerate() {
            let b = n * COLUMNS;
            if n > 0 {
                sql.push(',');
            }
            sql.push_str(&format!(
                "(${},${},${},${},${},${},to_timestamp(${}::bigint / 1000.0),${},${},${},${})",
                b + 1,
                b + 2,
                b + 3,
                b + 4,
                b + 5,
                b + 6,
                b + 7,
                b + 8,
                b + 9,
                b + 10,
                b + 11
            ));
            params.extend_from_slice(&[
                &ids[n],
                &r.agent_id,
                &r.task_id,
                &r.actor,
                &r.intent,
                &r.text,
                &r.millis,
                &r.timestamp_source,
                &r.entry_uuid,
                &r.source,
                &r.session_id,
            ]);
        }
        client
            .execute(&sql, &params)
            .await
            .expect("baseline insert");
        id += chunk.len() as i64;
    }
}

/// Reads back up to `limit` turns the server stored and times both baselines on them.
pub fn measure(url: &str, limit: i64, single_rows: usize) -> Rates {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = connect(url).await;
        client
            .batch_execute(
                "DROP TABLE IF EXISTS bench_turns; CREATE TABLE bench_turns (LIKE turns INCLUDING ALL)",
            )
            .await
            .expect("baseline table");
        let rows: Vec<Row> = client
            .query(
                "SELECT agent_id, task_id, actor, intent, text, (extract(epoch from \"timestamp\") * 1000)::bigint,
                        timestamp_source, entry_uuid, source, session_id
                 FROM turns ORDER BY id LIMIT $1",
                &[&limit],
            )
            .await
            .expect("turns read back")
            .into_iter()
            .map(|r| Row {
                agent_id: r.get(0),
                task_id: r.get(1),
                actor: r.get(2),
                intent: r.get(3),
                text: r.get(4),
                millis: r.get(5),
                timestamp_source: r.get(6),
                entry_uuid: r.get(7),
                source: r.get(8),
                session_id: r.get(9),
            })
            .collect();
        let single = &rows[..single_rows.min(rows.len())];
        let t = Instant::now();
        insert(&client, single, 1, 1).await;
        let single_rate = single.len() as f64 / t.elapsed().as_secs_f64();
        client
            .batch_execute("TRUNCATE bench_turns")
            .await
            .expect("truncate");
        let t = Instant::now();
        insert(&client, &rows, 1, 100).await;
        let batched_rate = rows.len() as f64 / t.elapsed().as_secs_f64();
        client
            .batch_execute("DROP TABLE bench_turns")
            .await
            .expect("drop");
        Rates {
            single: single_rate,
            single_rows: single.len(),
            batched: batched_rate,
            batched_rows: rows.len(),
        }
    })
}
