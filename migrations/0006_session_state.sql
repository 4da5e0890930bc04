-- What a saved agent session needs to be reopened as it was (the Jan kit's
-- session/resume, session/fork, session/archive): its options, what the front
-- door that opened it keeps with it (the rpc server: the client's declared
-- tools), where it was forked from, and when it was archived (archived
-- sessions leave the lists and take no new turns).
ALTER TABLE sessions ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE sessions ADD COLUMN host_state TEXT;
ALTER TABLE sessions ADD COLUMN forked_from TEXT;
ALTER TABLE sessions ADD COLUMN archived_at TEXT;
CREATE INDEX sessions_live ON sessions (principal, archived_at, updated_at);
