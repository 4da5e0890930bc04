-- Bearer tokens for the HTTP API, the web page and MCP over HTTP. Only a hash is kept.
CREATE TABLE tokens (
  name TEXT PRIMARY KEY,
  principal TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at TEXT
);
