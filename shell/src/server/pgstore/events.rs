//! Events in PostgreSQL, read in one global order by any number of processes: how hubs serve
//! the events of every edge (docs/multi-machine.md). An edge's writer commits each batch's
//! events with its writes ([`APPEND_MANY`]) and announces them ([`ANNOUNCE`]); a hub's
//! fan-out (`server/fanout.rs`) sequences and reads them. `--role all` keeps its events in
//! its in-memory hub (`sse.rs`) alone.
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
    /// Its insert id (a tiebreak for the sequencer; never a reader's cursor).
    pub id: i64,
    /// Its global position: 1, 2, 3, … in the order readers see events.
    pub pos: i64,
    /// The machine whose change caused it.
    pub machine: String,
    /// Its SSE event name (`turn_created`, `card_refresh`, …).
    pub kind: String,
    /// Its data.
    pub data: serde_json::Value,
}

/// The channel edges announce committed events on.
pub const CHANNEL: &str = "hs_events";

/// Announces events on [`CHANNEL`] (its parameter), inside the writer's transaction:
/// PostgreSQL delivers it on commit.
pub const ANNOUNCE: &str = "SELECT pg_notify($1, '')";

/// Adds a batch's events, in order, inside the writer's transaction; parameters from
/// [`append_params`].
pub const APPEND_MANY: &str = "INSERT INTO events (machine, kind, data)
     SELECT $1, u.kind, u.data FROM UNNEST($2::text[], $3::jsonb[]) WITH ORDINALITY AS u(kind, data, n)
     ORDER BY u.n";

/// The parameters of [`APPEND_MANY`], borrowing the events' data.
pub struct AppendParams<'a> {
    machine: &'a str,
    kinds: Vec<&'static str>,
    data: Vec<tokio_postgres::types::Json<&'a serde_json::value::RawValue>>,
}

impl AppendParams<'_> {
    /// As a statement's parameter list.
    pub fn refs(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 3] {
        [&self.machine, &self.kinds, &self.data]
    }
}

/// The parameters that append `events` as machine `machine`'s.
pub fn append_params<'a>(
    machine: &'a str,
    events: &[&'a headspace_core::Event],
) -> AppendParams<'a> {
    AppendParams {
        machine,
        kinds: events.iter().map(|e| e.name).collect(),
        data: events
            .iter()
            .map(|e| tokio_postgres::types::Json(e.data.raw()))
            .collect(),
    }
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
    // Bitmap scans off: a bitmap scan of `events_unsequenced` visits every row version that
    // earlier rounds left dead, where an index scan learns to skip them.
    tx.execute(
        "SELECT pg_advisory_xact_lock($1), set_config('enable_bitmapscan', 'off', true)",
        &[&SEQUENCER_LOCK],
    )
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
            "SELECT id, pos, machine, kind, data FROM events WHERE pos > $1 ORDER BY pos LIMIT $2",
            &[&after, &limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| StoredEvent {
            id: r.get(0),
            pos: r.get(1),
            machine: r.get(2),
            kind: r.get(3),
            data: r.get(4),
        })
        .collect())
}

impl super::PgStore {
    /// Runs the sequencer once ([`sequence`]); returns how many events it numbered.
    pub async fn sequence_events(&self) -> Result<u64, crate::server::store::StoreError> {
        let mut c = self.pool.get().await?;
        Ok(sequence(&mut c).await?)
    }

    /// The sequenced events after position `after`, in order, at most `limit`.
    pub async fn events_after(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, crate::server::store::StoreError> {
        let c = self.pool.get().await?;
        Ok(read_after(&**c, after, limit).await?)
    }

    /// The largest position given (0 when none).
    pub async fn last_event_pos(&self) -> Result<i64, crate::server::store::StoreError> {
        let c = self.pool.get().await?;
        let row = c
            .query_one("SELECT coalesce(max(pos), 0) FROM events", &[])
            .await?;
        Ok(row.get(0))
    }

    /// Deletes sequenced events more than `keep` positions behind the newest (the oldest a
    /// reconnecting client can still be served from); returns how many went.
    pub async fn prune_events(&self, keep: i64) -> Result<u64, crate::server::store::StoreError> {
        let c = self.pool.get().await?;
        Ok(c.execute(
            "DELETE FROM events WHERE pos <= (SELECT max(pos) FROM events) - $1",
            &[&keep],
        )
        .await?)
    }
}
