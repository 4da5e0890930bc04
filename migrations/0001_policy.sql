-- The policy table: who may do what to which devices, when, how often;
-- the principals' roles; rate-limit hits; and approvals for `confirm` rules.
-- Times: *_at TEXT columns are ISO-8601 UTC; rule_hits.at and the approval
-- times are INTEGER milliseconds since the epoch (compared, not shown).

CREATE TABLE principals (
  id          TEXT PRIMARY KEY,                       -- `chat:alice`, `voice:kitchen`
  roles       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(roles) AND json_type(roles) = 'array'),
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE policy_rules (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  subject       TEXT NOT NULL,                          -- `chat:alice`, `voice:*`, `*`, `role:owner` (`|` separates alternatives)
  target_type   TEXT NOT NULL CHECK (target_type IN ('tool', 'entity', 'area', 'kind', 'device_class', 'capability', 'any')),
  target        TEXT NOT NULL DEFAULT '*',              -- glob: `*`, `garage_*`, `lock`, `Kitchen`
  action        TEXT NOT NULL DEFAULT '*',              -- `read`, `actuate`, `unlock`, `disarm*`, `*`
  effect        TEXT NOT NULL CHECK (effect IN ('allow', 'deny', 'confirm')),
  priority      INTEGER NOT NULL DEFAULT 0,
  window_start  TEXT CHECK (window_start IS NULL OR window_start GLOB '[0-2][0-9]:[0-5][0-9]'),
  window_end    TEXT CHECK (window_end IS NULL OR window_end GLOB '[0-2][0-9]:[0-5][0-9]'),
  days          TEXT,                                   -- `mon,tue,...`, NULL = every day
  max_calls     INTEGER CHECK (max_calls IS NULL OR max_calls > 0),
  per_seconds   INTEGER CHECK (per_seconds IS NULL OR per_seconds > 0),
  note          TEXT,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  builtin       INTEGER NOT NULL DEFAULT 0 CHECK (builtin IN (0, 1)),
  CHECK ((window_start IS NULL) = (window_end IS NULL)),
  CHECK ((max_calls IS NULL) = (per_seconds IS NULL))
);

-- Rate-limit budget use, one row per allowed call of a rate-limited rule.
CREATE TABLE rule_hits (
  rule_id    INTEGER NOT NULL REFERENCES policy_rules(id) ON DELETE CASCADE,
  principal  TEXT NOT NULL,
  at         INTEGER NOT NULL
);
CREATE INDEX rule_hits_window ON rule_hits (rule_id, principal, at);

CREATE TABLE approvals (
  id          TEXT PRIMARY KEY,
  principal   TEXT NOT NULL,
  tool        TEXT NOT NULL,
  args_hash   TEXT NOT NULL,                          -- sha256 hex of the canonical (sorted-key) JSON of args
  args        TEXT NOT NULL,                          -- that canonical JSON
  reason      TEXT NOT NULL DEFAULT '',
  status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'granted', 'denied', 'used', 'expired')),
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  decided_by  TEXT,
  decided_at  INTEGER,
  used_at     INTEGER
);
CREATE INDEX approvals_call ON approvals (principal, tool, args_hash, status);
CREATE INDEX approvals_status ON approvals (status, created_at);

-- Bumped by triggers on every change to rules or principals, so a process
-- holding compiled rules sees another process's (the CLI's) edits.
CREATE TABLE policy_version (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  version  INTEGER NOT NULL
);
INSERT INTO policy_version (id, version) VALUES (1, 0);

CREATE TRIGGER policy_rules_ins AFTER INSERT ON policy_rules BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER policy_rules_upd AFTER UPDATE ON policy_rules BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER policy_rules_del AFTER DELETE ON policy_rules BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER principals_ins AFTER INSERT ON principals BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER principals_upd AFTER UPDATE ON principals BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER principals_del AFTER DELETE ON principals BEGIN UPDATE policy_version SET version = version + 1 WHERE id = 1; END;

-- Built-in defaults. Confirm rules sit at priority 100 so that an owner's
-- allow at a normal priority does not waive them; an explicit allow above
-- 100 does.
INSERT INTO policy_rules (subject, target_type, target, action, effect, priority, note, builtin) VALUES
  ('*', 'any', '*', 'read', 'allow', -100, 'built-in: reads are allowed unless a rule denies them', 1),
  ('*', 'any', '*', 'actuate', 'deny', -100, 'built-in: actuators are denied unless a rule allows them', 1),
  ('*', 'kind', 'lock', 'unlock', 'confirm', 100, 'built-in: unlocking needs a person to confirm, even for owners', 1),
  ('*', 'device_class', 'garage|door|gate', 'open|set_position', 'confirm', 100, 'built-in: opening a garage door, door or gate needs a person to confirm, even for owners', 1),
  ('*', 'kind', 'alarm_control_panel', 'disarm*', 'confirm', 100, 'built-in: disarming the alarm needs a person to confirm, even for owners', 1);
