-- Events kept in the database, for dashboards served by several processes (docs/multi-machine.md).
-- A writer inserts its events with pos NULL in the transaction of the change that causes
-- them; the sequencer (one at a time, under an advisory lock) gives committed events their
-- public position, in order. Readers read by pos, never by id: ids are taken at insert time
-- but become visible at commit time, so id order is not the order readers can see them in.
CREATE TABLE IF NOT EXISTS events (
    id          BIGSERIAL PRIMARY KEY,
    pos         BIGINT UNIQUE,
    machine     TEXT NOT NULL DEFAULT '',
    kind        TEXT NOT NULL,
    data        JSONB NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS events_unsequenced ON events(id) WHERE pos IS NULL;
