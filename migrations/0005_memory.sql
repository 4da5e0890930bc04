-- Project memory: each completed agent turn's final answer (short), per
-- principal, recalled by that principal's later sessions. Not written for
-- ephemeral sessions. `hearth memory list | forget` shows and clears it.
CREATE TABLE memory (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  principal   TEXT NOT NULL,
  session_id  TEXT,                         -- the session that answered (no foreign key: memory outlives threads)
  created_at  TEXT NOT NULL,                -- ISO 8601 UTC, ms
  prompt      TEXT NOT NULL DEFAULT '',     -- what was asked, trimmed
  text        TEXT NOT NULL                 -- the answer, trimmed
);
CREATE INDEX memory_principal ON memory (principal, id);
