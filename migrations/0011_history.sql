-- Entity history for the page's charts and the agent's get_history tool: one
-- row per recorded change of an entity's main value. Numbers go in num (for
-- min/max/avg over buckets), everything else in state (on/off, open/closed,
-- a mode). ts is epoch milliseconds. Rows are pruned by age (history.retentionDays)
-- and by count (history.maxRows, using the rowid, which only grows).
CREATE TABLE history (
  entity_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  num REAL,
  state TEXT
);
CREATE INDEX history_entity_ts ON history (entity_id, ts);
CREATE INDEX history_ts ON history (ts);
