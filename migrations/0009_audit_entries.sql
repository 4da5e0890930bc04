-- The audit becomes append-only (issue 15, finding 5). Rows are never edited:
-- the physical log is `audit_entry`, one hash-chained entry per event:
--   kind 'call'    a call: written `pending` before its command is published
--                  (begin), or with its final outcome at once (record: denied,
--                  not sent);
--   kind 'outcome' what became of a call (call_id): its outcome, and any later
--                  reconciliation ("confirmed late"), each a new entry;
--   kind 'seal'    written once, by the first writer after this migration: it
--                  binds the rows written before it (v = 1) with a hash over
--                  every stored field of them (args: {count, lastId, sha256}).
-- v = 2 entries: hash = sha256(prev_hash + canonical JSON of every other stored
-- column), so no field of an entry can change without breaking the chain.
-- v = 1 rows (written before this migration) keep their old hash + done_hash
-- and keep verifying as before; the seal covers their outcome too.
-- `audit` is now a view: one row per call, its current outcome folded in from
-- its latest outcome entry, with the columns the table had (readers unchanged).
-- The AUTOINCREMENT high-water mark is carried over: a tail row deleted before
-- the migration still shows.
CREATE TABLE audit_entry (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  at           TEXT    NOT NULL,            -- ISO 8601 UTC, ms (when the entry was written)
  v            INTEGER NOT NULL DEFAULT 2 CHECK (v IN (1, 2)),
  kind         TEXT    NOT NULL DEFAULT 'call' CHECK (kind IN ('call', 'outcome', 'seal')),
  call_id      INTEGER,                     -- outcome: the call it completes; seal: the last row sealed
  request_id   TEXT    UNIQUE,              -- calls: idempotent retries, one call per request id
  principal    TEXT,
  session      TEXT,
  run_id       TEXT,
  tool         TEXT,
  entity_id    TEXT,
  action       TEXT,
  args         TEXT,                        -- canonical JSON (keys sorted, no whitespace)
  decision     TEXT,                        -- allow | deny | confirm
  rule_id      INTEGER,
  reason       TEXT,
  outcome      TEXT
               CHECK (outcome IS NULL OR outcome IN ('pending', 'confirmed', 'unconfirmed', 'failed', 'denied', 'interrupted', 'not_sent')),
  error        TEXT,
  latency_ms   INTEGER,
  echo         TEXT,
  completed_at TEXT,                        -- v1 rows, and calls recorded finished at once
  prev_hash    TEXT    NOT NULL,
  hash         TEXT    NOT NULL,
  done_hash    TEXT,                        -- v1 rows only
  CHECK (kind <> 'call' OR (request_id IS NOT NULL AND principal IS NOT NULL AND tool IS NOT NULL AND action IS NOT NULL
                            AND args IS NOT NULL AND decision IS NOT NULL AND reason IS NOT NULL AND outcome IS NOT NULL)),
  CHECK (kind <> 'outcome' OR (call_id IS NOT NULL AND outcome IS NOT NULL AND outcome <> 'pending'))
);

INSERT INTO audit_entry (id, at, v, kind, call_id, request_id, principal, session, run_id, tool, entity_id, action, args, decision,
    rule_id, reason, outcome, error, latency_ms, echo, completed_at, prev_hash, hash, done_hash)
  SELECT id, at, 1, 'call', NULL, request_id, principal, session, run_id, tool, entity_id, action, args, decision,
    rule_id, reason, outcome, error, latency_ms, echo, completed_at, prev_hash, hash, done_hash
  FROM audit ORDER BY id;

-- Keep the high-water mark of the old table (higher than its last id when its tail was cut).
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'audit_entry', seq FROM sqlite_sequence WHERE name = 'audit'
    AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'audit_entry');
UPDATE sqlite_sequence SET seq = (SELECT seq FROM sqlite_sequence WHERE name = 'audit')
  WHERE name = 'audit_entry' AND (SELECT seq FROM sqlite_sequence WHERE name = 'audit') > seq;

DROP TABLE audit;

CREATE INDEX audit_entry_principal ON audit_entry (principal, id) WHERE kind = 'call';
CREATE INDEX audit_entry_entity    ON audit_entry (entity_id, id) WHERE kind = 'call';
CREATE INDEX audit_entry_at        ON audit_entry (at) WHERE kind = 'call';
-- The fold: a call's latest outcome entry.
CREATE INDEX audit_entry_outcome_of ON audit_entry (call_id, id) WHERE kind = 'outcome';

CREATE VIEW audit AS
  SELECT c.id, c.at, c.request_id, c.principal, c.session, c.run_id, c.tool, c.entity_id, c.action, c.args, c.decision,
    c.rule_id, c.reason,
    CASE WHEN o.id IS NULL THEN c.outcome ELSE o.outcome END AS outcome,
    CASE WHEN o.id IS NULL THEN c.error ELSE o.error END AS error,
    CASE WHEN o.id IS NULL THEN c.latency_ms ELSE o.latency_ms END AS latency_ms,
    CASE WHEN o.id IS NULL THEN c.echo ELSE o.echo END AS echo,
    CASE WHEN o.id IS NULL THEN c.completed_at ELSE o.at END AS completed_at,
    c.prev_hash, c.hash,
    CASE WHEN o.id IS NOT NULL THEN o.hash WHEN c.v = 1 THEN c.done_hash WHEN c.outcome <> 'pending' THEN c.hash END AS done_hash
  FROM audit_entry c
  LEFT JOIN audit_entry o ON o.id = (SELECT max(x.id) FROM audit_entry x WHERE x.call_id = c.id AND x.kind = 'outcome')
  WHERE c.kind = 'call';
