-- Search over every turn (issue 18). Two indexes, two kinds of question:
--
-- * Words: a full-text vector of each turn's text with the 'english' configuration, kept in a
--   generated column (ranking reads it back instead of re-parsing the text) under a GIN index.
--   'english' because turns are mostly prose: "failing tests" finds "the test failed". Code
--   survives it: the parser keeps file paths (src/lib.rs), hosts, numbers and words with
--   digits (E0308) whole, outside the stemmer; identifiers split at '_' on both sides alike.
--   Only the first 100,000 characters are indexed: a tsvector is capped at 1 MB, and a turn
--   the database refused to index would be a turn lost. The trigram side sees all the text.
-- * Exact text: substrings, prefixes, paths and error strings with punctuation
--   (`error: expected `;``), answered by ILIKE '%…%' on a pg_trgm GIN index over the text.
--
-- pg_trgm ships with PostgreSQL's contrib (Debian: in the postgresql package) and is a
-- trusted extension since PostgreSQL 13, so the database's owner may create it. When the
-- account Headspace uses may not, the migration stops with the statement to run.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE EXCEPTION 'search needs the pg_trgm extension and this account cannot create it (%): run CREATE EXTENSION pg_trgm; in this database as its owner or a superuser (on Debian the extension comes with the postgresql package; elsewhere install postgresql-contrib), then start headspace again', SQLERRM;
END
$$;

ALTER TABLE turns ADD COLUMN IF NOT EXISTS text_search tsvector
    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, left(text, 100000))) STORED;
CREATE INDEX IF NOT EXISTS turns_text_search ON turns USING gin (text_search);
CREATE INDEX IF NOT EXISTS turns_text_trgm ON turns USING gin (text gin_trgm_ops);
-- Newest first across all agents: a word or text in a large share of the turns is answered
-- by walking back from the newest turn until enough match, not by reading every match.
CREATE INDEX IF NOT EXISTS turns_time ON turns ("timestamp", id);
-- Prune: an ended agent whose turns the user deleted stays as a row (its sessions and
-- transcript offsets keep the watcher from reading the pruned transcripts back in) but
-- leaves the agent list, the history and the audit.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS pruned_at TIMESTAMPTZ;
-- The history view: ended agents by day.
CREATE INDEX IF NOT EXISTS agents_ended_seen ON agents (last_seen_at) WHERE ended;
