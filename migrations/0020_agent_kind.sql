-- The agent CLI an agent runs (`claude`, `codex`): the core reads its hooks, transcript and
-- screen by it. Rows written before other kinds are Claude Code's.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS kind TEXT NOT NULL DEFAULT 'claude';
