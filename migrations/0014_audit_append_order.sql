-- The audit's one durable write touches one b-tree (issue 33). A pending call entry used to go into the table
-- and four indexes (the request id's UNIQUE, and the partial principal, entity and time indexes), each a page
-- more for the commit to write and fsync before the command could go out. Now `audit_entry`'s only key is its
-- id, the append order. What readers look calls up by lives in `audit_call_index`, a copy of each call's
-- request id, principal, entity and time, filled from the entries after the last one it holds: by the
-- outcome's commit, after the caller has its result. Entries not yet copied are the few at the end of the log:
-- readers (and the duplicate request-id check, inside the write lock) read the copy and those last entries.
-- The outcome fold's index (call_id, only outcome entries touch it) stays.
CREATE TABLE audit_entry_new (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  at           TEXT    NOT NULL,
  v            INTEGER NOT NULL DEFAULT 2 CHECK (v IN (1, 2)),
  kind         TEXT    NOT NULL DEFAULT 'call' CHECK (kind IN ('call', 'outcome', 'seal')),
  call_id      INTEGER,
  request_id   TEXT,
  principal    TEXT,
  session      TEXT,
  run_id       TEXT,
  tool         TEXT,
  entity_id    TEXT,
  action       TEXT,
  args         TEXT,
  decision     TEXT,
  rule_id      INTEGER,
  reason       TEXT,
  outcome      TEXT
               CHECK (outcome IS NULL OR outcome IN ('pending', 'confirmed', 'unconfirmed', 'failed', 'denied', 'interrupted', 'not_sent')),
  error        TEXT,
  latency_ms   INTEGER,
  echo         TEXT,
  completed_at TEXT,
  prev_hash    TEXT    NOT NULL,
  hash         TEXT    NOT NULL,
  done_hash    TEXT,
  CHECK (kind <> 'call' OR (request_id IS NOT NULL AND principal IS NOT NULL AND tool IS NOT NULL AND action IS NOT NULL
                            AND args IS NOT NULL AND decision IS NOT NULL AND reason IS NOT NULL AND outcome IS NOT NULL)),
  CHECK (kind <> 'outcome' OR (call_id IS NOT NULL AND outcome IS NOT NULL AND outcome <> 'pending'))
);
INSERT INTO audit_entry_new SELECT * FROM audit_entry ORDER BY id;
-- Keep the AUTOINCREMENT high-water mark (a deleted tail row's id is never reused: verify sees the gap).
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'audit_entry_new', seq FROM sqlite_sequence WHERE name = 'audit_entry'
    AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'audit_entry_new');
UPDATE sqlite_sequence SET seq = (SELECT seq FROM sqlite_sequence WHERE name = 'audit_entry')
  WHERE name = 'audit_entry_new' AND (SELECT seq FROM sqlite_sequence WHERE name = 'audit_entry') > seq;
DROP VIEW audit;
DROP TABLE audit_entry;
ALTER TABLE audit_entry_new RENAME TO audit_entry;
CREATE INDEX audit_entry_outcome_of ON audit_entry (call_id, id) WHERE kind = 'outcome';

CREATE TABLE audit_call_index (
  id         INTEGER PRIMARY KEY,
  request_id TEXT    NOT NULL,
  principal  TEXT    NOT NULL,
  entity_id  TEXT,
  at         TEXT    NOT NULL
);
CREATE UNIQUE INDEX audit_call_index_request ON audit_call_index (request_id);
CREATE INDEX audit_call_index_principal ON audit_call_index (principal, id);
CREATE INDEX audit_call_index_entity ON audit_call_index (entity_id, id);
CREATE INDEX audit_call_index_at ON audit_call_index (at, id);
INSERT INTO audit_call_index (id, request_id, principal, entity_id, at)
  SELECT id, request_id, principal, entity_id, at FROM audit_entry WHERE kind = 'call' ORDER BY id;

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

-- The calls a reader looks up by request id, principal, entity or time: the copy, and the entries after it.
CREATE VIEW audit_call_ids AS
  SELECT id, request_id, principal, entity_id, at FROM audit_call_index
  UNION ALL
  SELECT id, request_id, principal, entity_id, at FROM audit_entry
    WHERE id > (SELECT coalesce(max(id), 0) FROM audit_call_index) AND kind = 'call';
