-- MCP sign-in by OAuth (#43): Hearth is its own authorization server for /mcp.
-- A client is registered (RFC 7591) or known by its metadata document's URL (CIMD, cached here).
-- A grant is what an owner consented to: it is a row of `tokens` too (name, principal, revoked_at), so
-- `hearth token list` shows it and `hearth token revoke` ends it; its tokens row's hash is of a secret
-- nobody holds. Only hashes of the access and refresh tokens are kept; a refresh rotates both.
CREATE TABLE oauth_clients (
  client_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('registered', 'metadata_document')),
  created_at TEXT NOT NULL
);

CREATE TABLE oauth_grants (
  token_name TEXT PRIMARY KEY REFERENCES tokens(name),
  client_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  resource TEXT NOT NULL,
  granted_by TEXT NOT NULL,
  access_hash TEXT UNIQUE,
  access_expires_at INTEGER,
  refresh_hash TEXT UNIQUE,
  refresh_expires_at INTEGER,
  previous_refresh_hash TEXT,
  created_at TEXT NOT NULL
);
