-- Text was sent to the agent's pane and its prompt has not arrived yet: it is running.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS sent_at TIMESTAMPTZ;
