-- Machines that write into this database (docs/multi-machine.md): each names itself, holds
-- a small id (its core's id space: ids stay below 2^53) and says it lives every few seconds.
CREATE TABLE IF NOT EXISTS machines (
    name          TEXT PRIMARY KEY,
    id            SMALLINT NOT NULL UNIQUE CHECK (id BETWEEN 0 AND 31),
    started_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    version       TEXT NOT NULL DEFAULT ''
);
-- The machine an agent runs on. Each server's connections carry its name (the startup
-- option `-c headspace.machine=NAME`), so every agent row it inserts is stamped without a
-- statement naming it. Rows from before this column get '' (the migration's own connection
-- carries no name; a non-volatile default is stored once, not written into every row), and
-- the first server to register takes them.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS machine TEXT NOT NULL
    DEFAULT COALESCE(current_setting('headspace.machine', true), '');
CREATE INDEX IF NOT EXISTS agents_machine ON agents(machine) WHERE NOT ended;
