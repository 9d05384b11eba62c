-- Transcript offsets belong to the machine whose files they count (docs/multi-machine.md):
-- two machines may hold a file at the same path under their own claude directories. Stamped
-- like agents.machine, by the writing connection's `headspace.machine` setting; rows from
-- before get '' and the first server to register takes them.
ALTER TABLE transcript_offsets ADD COLUMN IF NOT EXISTS machine TEXT NOT NULL
    DEFAULT COALESCE(current_setting('headspace.machine', true), '');
ALTER TABLE transcript_offsets DROP CONSTRAINT IF EXISTS transcript_offsets_pkey;
ALTER TABLE transcript_offsets ADD CONSTRAINT transcript_offsets_pkey PRIMARY KEY (machine, path);
