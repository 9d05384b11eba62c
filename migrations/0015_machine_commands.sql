-- Commands for another machine grow two kinds (docs/multi-machine.md, "Commands to panes"):
-- `reconcile` (the machine's core re-reads an agent's transcripts) and `orchestrate` (an
-- orchestration command on a project whose files and runner live on that machine).
ALTER TABLE pane_commands DROP CONSTRAINT IF EXISTS pane_commands_kind_check;
ALTER TABLE pane_commands ADD CONSTRAINT pane_commands_kind_check CHECK (kind IN
    ('send', 'clear', 'interrupt', 'answer', 'answer_questions', 'reconcile', 'orchestrate'));
