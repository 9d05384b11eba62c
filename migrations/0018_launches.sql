-- Agents the user started from Headspace (CONTRACT.md, "Agents you start, review and stop"):
-- where each runs, the worktree and branch Headspace made for it (only those it made are ever
-- removed by a discard), the commit it started from (what its diff is against), and the agent
-- its pane turned out to hold once its first hook came.
CREATE TABLE IF NOT EXISTS launches (
    id BIGSERIAL PRIMARY KEY,
    machine TEXT NOT NULL DEFAULT COALESCE(current_setting('headspace.machine', true), ''),
    tmux_pane TEXT NOT NULL,
    kind TEXT NOT NULL,
    project TEXT NOT NULL,
    cwd TEXT NOT NULL,
    worktree TEXT,
    branch TEXT,
    base_branch TEXT,
    base_commit TEXT,
    created_branch BOOLEAN NOT NULL DEFAULT false,
    prompt TEXT,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    agent_id BIGINT,
    stopped_at TIMESTAMPTZ,
    discarded_at TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS launches_agent ON launches(agent_id);
