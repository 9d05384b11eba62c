-- Why the reaper ended an agent (pane_closed, process_exited, silent); NULL while it lives
-- or when its SessionEnd hook ended it.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS end_reason TEXT;
-- The pid of the Claude Code process last seen in the agent's pane (the reaper's witness).
ALTER TABLE agents ADD COLUMN IF NOT EXISTS claude_pid BIGINT;
