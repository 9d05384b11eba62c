-- Full-text indexing off the commit path, and tool steps in search (issue 18).
--
-- 0008 kept each turn's full-text vector in a generated column, so every turn insert ran
-- `to_tsvector` inside the writer's transaction (a 6 KB turn: 0.31 → 2.15 ms). Now the
-- vectors live in a side table that a background task fills (pgstore/search_index.rs):
--
-- * `turn_words`: one vector per indexed turn, under the GIN index. Deleting a turn (prune)
--   deletes its vector.
-- * `turn_words_pending`: the turns to (re)index, written by the triggers below in the
--   writer's transaction (an id, no parsing). A turn and its pending row commit together, so
--   no turn is ever missed, whatever order ids commit in (servers sharing the database use
--   their own id spaces). Indexers take rows with `FOR UPDATE SKIP LOCKED` and delete them in
--   the transaction that writes the vectors: two servers never index the same turn, and a
--   turn leaves the queue only indexed. Search reads the pending turns' text on the fly.
-- * `turn_words_backfill`: the turns that existed before this migration, indexed newest
--   first below `below` by whichever server holds the row's lock, so the migration itself
--   stays instant on a large table. Until it is done, older turns are found by the exact
--   (trigram) side only.
--
-- Dropping the column is a catalog change (no rewrite); its space is reused as rows change.
ALTER TABLE turns DROP COLUMN IF EXISTS text_search;

CREATE TABLE IF NOT EXISTS turn_words (
    turn_id BIGINT PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
    words   TSVECTOR NOT NULL
);
CREATE INDEX IF NOT EXISTS turn_words_search ON turn_words USING gin (words);

-- No foreign key: the writer's insert stays one plain row, and the indexer skips ids whose
-- turn has gone.
CREATE TABLE IF NOT EXISTS turn_words_pending (
    turn_id BIGINT PRIMARY KEY
);

CREATE TABLE IF NOT EXISTS turn_words_backfill (
    one     BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    below   BIGINT NOT NULL,
    total   BIGINT NOT NULL,
    done    BIGINT NOT NULL DEFAULT 0
);
-- A new database has nothing to backfill.
INSERT INTO turn_words_backfill (below, total)
SELECT max(id) + 1, count(*) FROM turns HAVING count(*) > 0
ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION turn_words_queue_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO turn_words_pending (turn_id) SELECT id FROM new_turns ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION turn_words_queue_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO turn_words_pending (turn_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS turns_queue_words ON turns;
CREATE TRIGGER turns_queue_words AFTER INSERT ON turns
    REFERENCING NEW TABLE AS new_turns
    FOR EACH STATEMENT EXECUTE FUNCTION turn_words_queue_new();
-- The writer never changes a turn's text today; should anything, the turn is indexed again.
DROP TRIGGER IF EXISTS turns_requeue_words ON turns;
CREATE TRIGGER turns_requeue_words AFTER UPDATE OF text ON turns
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text)
    EXECUTE FUNCTION turn_words_queue_changed();

-- Steps: their one-line summaries (commands, paths, patterns) are short, so their indexes
-- stay on the write path: exact text by trigram, words by full text, and newest first by
-- start for common text.
CREATE INDEX IF NOT EXISTS steps_summary_trgm ON steps USING gin (summary gin_trgm_ops);
CREATE INDEX IF NOT EXISTS steps_summary_search ON steps
    USING gin (to_tsvector('english'::regconfig, left(summary, 100000)));
CREATE INDEX IF NOT EXISTS steps_started ON steps (started_at);
