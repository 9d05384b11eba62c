-- When a task's shown state last changed, for the dashboard's "time in state".
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS state_since TIMESTAMPTZ;
UPDATE tasks SET state_since = started_at WHERE state_since IS NULL;
ALTER TABLE tasks ALTER COLUMN state_since SET NOT NULL;
ALTER TABLE tasks ALTER COLUMN state_since SET DEFAULT now();
-- A task's turns, for the dashboard's card (its command, its open question).
CREATE INDEX IF NOT EXISTS turns_task ON turns(task_id, "timestamp", id);
