-- The permission dialog the agent's pane shows (question and options), while it shows one.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS permission JSONB;
