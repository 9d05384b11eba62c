-- A name the user gives an agent (POST /api/agents/{id}/rename), kept by the server so that
-- the page, the CLI and other devices show it. The core's upserts name their columns and
-- never touch it.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS name TEXT;
