//! Events in PostgreSQL, read in one global order by any number of processes: the read side
//! of serving a dashboard from several hubs (docs/multi-machine.md). Not yet wired into the
//! server, whose events still go through its in-memory hub (`sse.rs`).
//!
//! The problem it solves: an event's `id` comes from a sequence when it is inserted, but the
//! row becomes visible when its transaction commits. Two writers committing at once can make
//! id 6 visible before id 5; a reader whose cursor moved to 6 never sees 5. So readers never
//! read by `id`. A [`sequence`] step, one at a time under an advisory lock, gives every
//! committed event without one a position `pos`, continuing from the largest given, in id
//! order. Sequencer transactions commit one after the other, so any snapshot sees a prefix of
//! their work: the positions a reader can see run 1, 2, 3, … without a hole, and a reader
//! that read up to `pos = n` has seen every event that will ever get a position ≤ n.

use tokio_postgres::GenericClient;

/// The advisory lock key that makes sequencers take turns ("hs-evseq").
pub const SEQUENCER_LOCK: i64 = 0x6873_2d65_7673_6571;

/// One event as readers see it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    /// Its global position: 1, 2, 3, … in the order readers see events.
    pub pos: i64,
    /// The machine whose change caused it.
    pub machine: String,
    /// Its SSE event name (`turn_created`, `card_refresh`, …).
    pub kind: String,
    /// Its data.
    pub data: serde_json::Value,
}

/// Adds an event, inside the caller's transaction (the one that writes the change it
/// announces). It has no position until [`sequence`] runs after the commit.
pub async fn append<C: GenericClient>(
    client: &C,
    machine: &str,
    kind: &str,
    data: &serde_json::Value,
) -> Result<(), tokio_postgres::Error> {
    client
        .execute(
            "INSERT INTO events (machine, kind, data) VALUES ($1, $2, $3)",
            &[&machine, &kind, data],
        )
        .await
        .map(|_| ())
}

/// Gives every committed event without a position the next positions, in id order, and
/// returns how many it numbered. Safe to run from any number of processes at once: they take
/// turns on [`SEQUENCER_LOCK`].
pub async fn sequence(client: &mut tokio_postgres::Client) -> Result<u64, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SEQUENCER_LOCK])
        .await?;
    // A new statement, so a new snapshot: it sees every earlier sequencer's commit.
    let numbered = tx
        .execute(
            "UPDATE events e SET pos = n.pos
             FROM (SELECT id, (SELECT coalesce(max(pos), 0) FROM events) + row_number() OVER (ORDER BY id) AS pos
                   FROM events WHERE pos IS NULL) n
             WHERE e.id = n.id",
            &[],
        )
        .await?;
    tx.commit().await?;
    Ok(numbered)
}

/// The events after position `after`, in order, at most `limit`.
pub async fn read_after<C: GenericClient>(
    client: &C,
    after: i64,
    limit: i64,
) -> Result<Vec<StoredEvent>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT pos, machine, kind, data FROM events WHERE pos > $1 ORDER BY pos LIMIT $2",
            &[&after, &limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| StoredEvent {
            pos: r.get(0),
            machine: r.get(1),
            kind: r.get(2),
            data: r.get(3),
        })
        .collect())
}
