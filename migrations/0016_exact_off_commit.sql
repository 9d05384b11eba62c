-- The exact (trigram) side of search off the commit path too (issue 20).
--
-- The pg_trgm GIN index on `turns.text` made every turn insert extract and queue the text's
-- trigrams inside the writer's transaction: with it, 16,355 turns of the 100 MB bench took
-- 462 ms to insert, without it 110 ms (durable cluster, plain INSERT … SELECT; a larger
-- pending list changes nothing: the extraction is the cost; scripts/trigram-cost.sh). The text a turn is found by
-- exactly now lives beside its vector in `turn_words`, written by the background indexer in
-- the same statement, under the trigram index. Search reads, for the exact side:
--
-- * the indexed turns, by `turn_words.text` (the trigram index or the time walk);
-- * the queued turns (`turn_words_pending`), all of them, by their text in `turns`: the
--   indexer keeps the queue short, and a long one (a large transcript read at once) is read
--   whole rather than leave a committed turn unfound;
-- * while the 0010 backfill runs, the turns below its mark, by their text in `turns`.
--
-- The copy doubles the text on disk (compressed beyond 2 KB); the trigram index, which is
-- larger than the text, only moved. Servers sharing a database run the same version: an
-- older indexer would write vectors without the text.
ALTER TABLE turn_words ADD COLUMN IF NOT EXISTS text TEXT;
UPDATE turn_words w SET text = t.text FROM turns t WHERE t.id = w.turn_id AND w.text IS NULL;
CREATE INDEX IF NOT EXISTS turn_words_text_trgm ON turn_words USING gin (text gin_trgm_ops);
DROP INDEX IF EXISTS turns_text_trgm;
