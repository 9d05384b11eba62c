-- Agents, tasks, turns and transcript offsets: the rows of headspace-core's Write commands.
-- Every write is an idempotent upsert keyed by the id the core assigned.

CREATE TABLE IF NOT EXISTS agents (
    id                  BIGINT PRIMARY KEY,
    session_id          TEXT NOT NULL,
    sessions            TEXT[] NOT NULL DEFAULT '{}',
    project             TEXT,
    cwd                 TEXT,
    transcript_path     TEXT,
    tmux_pane           TEXT,
    ended               BOOLEAN NOT NULL DEFAULT FALSE,
    waiting_permission  BOOLEAN NOT NULL DEFAULT FALSE,
    last_seen_at        TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS tasks (
    id                  BIGINT PRIMARY KEY,
    agent_id            BIGINT NOT NULL REFERENCES agents(id),
    session_id          TEXT,
    state               TEXT NOT NULL,
    transcript_state    TEXT NOT NULL,
    started_at          TIMESTAMPTZ NOT NULL,
    hook_turn_end_at    TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS tasks_agent ON tasks(agent_id);

CREATE TABLE IF NOT EXISTS turns (
    id                  BIGINT PRIMARY KEY,
    agent_id            BIGINT NOT NULL REFERENCES agents(id),
    task_id             BIGINT NOT NULL REFERENCES tasks(id),
    actor               TEXT NOT NULL,
    intent              TEXT NOT NULL,
    text                TEXT NOT NULL,
    "timestamp"         TIMESTAMPTZ NOT NULL,
    timestamp_source    TEXT NOT NULL,
    entry_uuid          TEXT,
    source              TEXT NOT NULL,
    hook_key            TEXT,
    prompt_id           TEXT,
    tool_use_id         TEXT,
    question            JSONB,
    session_id          TEXT
);
-- S1: at most one turn per transcript entry, whatever the core does.
CREATE UNIQUE INDEX IF NOT EXISTS turns_entry ON turns(agent_id, entry_uuid) WHERE entry_uuid IS NOT NULL;
CREATE INDEX IF NOT EXISTS turns_agent_order ON turns(agent_id, "timestamp", id);

CREATE TABLE IF NOT EXISTS transcript_offsets (
    path                TEXT PRIMARY KEY,
    session_id          TEXT NOT NULL,
    "offset"            BIGINT NOT NULL,
    task_id             BIGINT
);
