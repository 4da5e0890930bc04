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

-- Five-minute summaries of the numbers (low, high, sum, count), kept with
-- the rows: a chart of a week reads ~2,000 summaries per entity instead of
-- every reading.
CREATE TABLE history_rollup (
  entity_id TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  lo REAL NOT NULL,
  hi REAL NOT NULL,
  total REAL NOT NULL,
  n INTEGER NOT NULL,
  last_ts INTEGER NOT NULL,
  PRIMARY KEY (entity_id, bucket)
) WITHOUT ROWID;
