-- Approvals and rate-limit hits bind to the entity a call acts on and its
-- exact arguments, not the tool name (a tool name can move to another entity).
-- Session ids stay with the principal that first used them, ephemeral ones too.

-- NULL: a call on no entity (a flow's own tool): bound by its tool name instead.
ALTER TABLE approvals ADD COLUMN entity_id TEXT;
CREATE INDEX approvals_entity_call ON approvals (principal, entity_id, args_hash, status);

-- What each counted call acted on (the budget itself is per rule and principal).
ALTER TABLE rule_hits ADD COLUMN entity_id TEXT;
ALTER TABLE rule_hits ADD COLUMN args_hash TEXT;

-- Every session id ever opened, with its principal: another principal cannot take it.
CREATE TABLE session_claims (
  id          TEXT PRIMARY KEY,
  principal   TEXT NOT NULL,
  claimed_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
INSERT OR IGNORE INTO session_claims (id, principal, claimed_at) SELECT id, principal, created_at FROM sessions;
