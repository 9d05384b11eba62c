-- When the agent CLI took a turn back (Gemini CLI's /rewind): the turn stays, marked.
ALTER TABLE turns ADD COLUMN IF NOT EXISTS rewound_at TIMESTAMPTZ;
