-- The audit log: one row per actuator call and per denied or failed attempt.
-- Tamper-evident: `hash` chains the insert-time fields to the previous row
-- (prev_hash, in id order; the first row links to 64 zeros), and `done_hash`
-- seals the completion fields (outcome, error, latency_ms, echo,
-- completed_at) onto `hash`. See src/audit/chain.ts.
-- AUTOINCREMENT: ids are never reused, so a deleted tail row leaves a gap that
-- `hearth audit verify` reports even after more rows were written.
CREATE TABLE audit (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  at           TEXT    NOT NULL,            -- ISO 8601 UTC, ms (begin or record time)
  request_id   TEXT    NOT NULL UNIQUE,     -- idempotent retries: one row per request id
  principal    TEXT    NOT NULL,
  session      TEXT,
  run_id       TEXT,
  tool         TEXT    NOT NULL,
  entity_id    TEXT,
  action       TEXT    NOT NULL,
  args         TEXT    NOT NULL,            -- canonical JSON (keys sorted, no whitespace)
  decision     TEXT    NOT NULL,            -- allow | deny | confirm
  rule_id      INTEGER,                     -- null: the built-in default decided
  reason       TEXT    NOT NULL,
  outcome      TEXT    NOT NULL
               CHECK (outcome IN ('pending', 'confirmed', 'unconfirmed', 'failed', 'denied', 'interrupted')),
  error        TEXT,
  latency_ms   INTEGER,
  echo         TEXT,                        -- the state payload that confirmed (or the last one seen)
  completed_at TEXT,                        -- ISO 8601 UTC, ms; null while pending
  prev_hash    TEXT    NOT NULL,
  hash         TEXT    NOT NULL,
  done_hash    TEXT                         -- null while pending
);

CREATE INDEX audit_principal ON audit (principal, id);
CREATE INDEX audit_entity    ON audit (entity_id, id);
CREATE INDEX audit_outcome   ON audit (outcome, id);
CREATE INDEX audit_at        ON audit (at);
