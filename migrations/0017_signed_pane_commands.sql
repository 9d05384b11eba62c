-- Signed pane commands (docs/multi-machine.md, "Signed commands"): the server that took the
-- user's request signs what it asks (an Ed25519 signature over the envelope's exact text), and
-- an executor runs only a row whose signature verifies against a key it holds in a file. A
-- database client alone can no longer make any machine type. Rows without a signature (from a
-- server of an older version, or written by hand) are refused by the executor.
ALTER TABLE pane_commands ADD COLUMN IF NOT EXISTS envelope TEXT;
ALTER TABLE pane_commands ADD COLUMN IF NOT EXISTS signature TEXT;
ALTER TABLE pane_commands ADD COLUMN IF NOT EXISTS signer TEXT;
