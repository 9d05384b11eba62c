//! Events read from PostgreSQL by position, never by id (docs/multi-machine.md): writers
//! that commit out of id order never make a reader skip or repeat an event. On a real
//! PostgreSQL, with transactions held open on purpose and several sequencers at once.

mod common;
use common::*;
use headspace::server::pgstore::events::{append, read_after, sequence};
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio_postgres::{Client, NoTls};

async fn connect(url: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(conn);
    client
}

#[test]
fn an_event_committed_after_a_later_id_is_read_in_its_turn_not_skipped() {
    let Some(db) = migrated_db("events_late") else {
        return;
    };
    runtime().block_on(async {
        let (mut a, mut b, mut seq, reader) = (
            connect(&db).await,
            connect(&db).await,
            connect(&db).await,
            connect(&db).await,
        );
        // A takes id 1 and stays open; B takes id 2 and commits first.
        let ta = a.transaction().await.unwrap();
        append(&ta, "m1", "turn_created", &json!({"n": "a"}))
            .await
            .unwrap();
        let tb = b.transaction().await.unwrap();
        append(&tb, "m2", "turn_created", &json!({"n": "b"}))
            .await
            .unwrap();
        tb.commit().await.unwrap();

        // What a reader by id would do: it sees id 2, moves past 1, and never sees 1.
        let by_id = |after: i64| {
            let reader = &reader;
            async move {
                reader
                    .query("SELECT id FROM events WHERE id > $1 ORDER BY id", &[&after])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get::<_, i64>(0))
                    .collect::<Vec<_>>()
            }
        };
        let first = by_id(0).await;
        assert_eq!(first, [2]);

        assert_eq!(
            sequence(&mut seq).await.unwrap(),
            1,
            "only B's event is committed"
        );
        let seen = read_after(&reader, 0, 100).await.unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].pos, seen[0].data["n"].clone()), (1, json!("b")));

        ta.commit().await.unwrap();
        assert!(
            by_id(2).await.is_empty(),
            "the id reader skipped A's event for good"
        );
        assert_eq!(sequence(&mut seq).await.unwrap(), 1);
        let next = read_after(&reader, 1, 100).await.unwrap();
        assert_eq!(next.len(), 1, "the position reader gets it");
        assert_eq!((next[0].pos, next[0].data["n"].clone()), (2, json!("a")));
        assert_eq!(next[0].machine, "m1");
    });
}

#[test]
fn many_writers_and_sequencers_at_once_give_every_reader_each_event_once_in_order() {
    let Some(db) = migrated_db("events_swarm") else {
        return;
    };
    const WRITERS: usize = 6;
    const EACH: usize = 40;
    runtime().block_on(async {
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                let mut c = connect(&db).await;
                for i in 0..EACH {
                    let tx = c.transaction().await.unwrap();
                    append(
                        &tx,
                        &format!("m{w}"),
                        "turn_created",
                        &json!({"w": w, "i": i}),
                    )
                    .await
                    .unwrap();
                    // Hold the transaction open a while, longer for some: commits land out
                    // of id order all the time.
                    let hold = ((w * 7 + i * 13) % 5) as u64;
                    tokio::time::sleep(Duration::from_millis(hold)).await;
                    if i % 9 == 4 {
                        tx.rollback().await.unwrap(); // an aborted change announces nothing
                    } else {
                        tx.commit().await.unwrap();
                    }
                }
            }));
        }
        // Two sequencers at once: they take turns on the lock.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut sequencers = Vec::new();
        for _ in 0..2 {
            let (db, stop) = (db.clone(), stop.clone());
            sequencers.push(tokio::spawn(async move {
                let mut c = connect(&db).await;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    sequence(&mut c).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                sequence(&mut c).await.unwrap();
            }));
        }
        // A reader polling as a hub would, checking the positions as they come.
        let reader = connect(&db).await;
        let committed = WRITERS * (0..EACH).filter(|i| i % 9 != 4).count();
        let mut seen = BTreeSet::new();
        let mut cursor = 0i64;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut writers_done = false;
        loop {
            for e in read_after(&reader, cursor, 50).await.unwrap() {
                assert_eq!(e.pos, cursor + 1, "positions come without a hole");
                cursor = e.pos;
                let key = (e.data["w"].as_u64().unwrap(), e.data["i"].as_u64().unwrap());
                assert!(seen.insert(key), "{key:?} read twice");
                assert_ne!(key.1 % 9, 4, "a rolled-back event was read: {key:?}");
            }
            if !writers_done && tasks.iter().all(|t| t.is_finished()) {
                writers_done = true;
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            if writers_done && sequencers.iter().all(|s| s.is_finished()) {
                // One last read after the last sequencing.
                if read_after(&reader, cursor, 1).await.unwrap().is_empty() {
                    break;
                }
            }
            assert!(std::time::Instant::now() < deadline, "stuck at {cursor}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        for t in tasks.into_iter().chain(sequencers) {
            t.await.unwrap();
        }
        assert_eq!(seen.len(), committed, "every committed event, once");
    });
}
