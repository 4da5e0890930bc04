-- Agent sessions and their threads (not written for ephemeral sessions).
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  principal TEXT NOT NULL,
  model TEXT NOT NULL,
  system_prompt TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  turns INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_principal ON sessions (principal, updated_at);

CREATE TABLE session_messages (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
);
