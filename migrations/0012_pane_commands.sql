-- Commands to panes on another machine (docs/multi-machine.md, "Commands to panes"): a
-- server asked to type into a pane it does not hold writes a row for the machine that holds
-- it; that machine's executor claims it (at most once), runs it with the same code as a
-- local request and writes back the HTTP status and body it produced. A row refused (its
-- machine offline, or not taken before its deadline) can never be claimed later.
CREATE TABLE IF NOT EXISTS pane_commands (
    id          BIGSERIAL PRIMARY KEY,
    machine     TEXT NOT NULL,
    agent_id    BIGINT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('send', 'clear', 'interrupt', 'answer', 'answer_questions')),
    body        JSONB NOT NULL DEFAULT '{}',
    state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'refused')),
    result      JSONB,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    deadline    TIMESTAMPTZ NOT NULL
);
-- The claim reads one machine's pending rows in id order: only those are indexed, so the
-- index stays as small as the queue however many rows are done.
CREATE INDEX IF NOT EXISTS pane_commands_pending ON pane_commands(machine, id) WHERE state = 'pending';
