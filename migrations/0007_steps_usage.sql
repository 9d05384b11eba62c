-- Tool calls (steps) and each assistant message's token usage (issue 18). One row per
-- (agent, tool-use id) and per (agent, message id): every write is folded into its row by
-- the core's merge rules (headspace_core::step::merge, usage_sum::merge), so re-reads,
-- retries and late hooks never make a second one. No foreign keys: a merge of agents moves
-- these rows itself, and a step may be written before its agent's row in another batch.

CREATE TABLE IF NOT EXISTS steps (
    agent_id     BIGINT NOT NULL,
    tool_use_id  TEXT NOT NULL,
    task_id      BIGINT,
    tool         TEXT NOT NULL DEFAULT '',
    summary      TEXT NOT NULL DEFAULT '',
    file         TEXT,
    outcome      TEXT NOT NULL,
    -- What the outcome rests on: 0 nothing, 1 a guess (an over-long line), 2 a hook, 3 the
    -- interrupt line, 4 the result.
    evidence     SMALLINT NOT NULL DEFAULT 0,
    -- The transcript's tool_use line was read: its facts win over a hook's.
    confirmed    BOOLEAN NOT NULL DEFAULT FALSE,
    started_at   TIMESTAMPTZ,
    finished_at  TIMESTAMPTZ,
    PRIMARY KEY (agent_id, tool_use_id)
);
CREATE INDEX IF NOT EXISTS steps_agent_started ON steps(agent_id, started_at);
CREATE INDEX IF NOT EXISTS steps_pending ON steps(agent_id, started_at) WHERE outcome = 'pending';

CREATE TABLE IF NOT EXISTS message_usage (
    agent_id               BIGINT NOT NULL,
    message_id             TEXT NOT NULL,
    task_id                BIGINT,
    model                  TEXT NOT NULL DEFAULT '',
    input_tokens           BIGINT NOT NULL DEFAULT 0,
    output_tokens          BIGINT NOT NULL DEFAULT 0,
    cache_creation_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens      BIGINT NOT NULL DEFAULT 0,
    "at"                   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (agent_id, message_id)
);
CREATE INDEX IF NOT EXISTS message_usage_at ON message_usage("at");
CREATE INDEX IF NOT EXISTS message_usage_task ON message_usage(task_id);
