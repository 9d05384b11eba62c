-- The git branch an agent's transcript last named (gitBranch), shown with its name.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS git_branch TEXT;
