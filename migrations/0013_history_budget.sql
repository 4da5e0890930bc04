-- History as a disk budget (issue 33). Raw changes are packed: the recorder appends rows to history_recent (no
-- index, so a row costs one append), and every five minutes a pass packs each entity's rows into one
-- history_blocks row (times and values delta-encoded: ~3-5 bytes a change instead of ~50 as an indexed row),
-- folds the numbers into five-minute summaries (history_hourly.slots: 12 x [n u16, low f32, high f32, mean f32],
-- little-endian, one row per entity and hour) and deletes the rows it packed. Entities are named by a small
-- number (history_series). Blocks and summaries are appended in time order, so the oldest are the lowest rowids
-- and the budget prunes them from the front. history_meta remembers how far the summaries are complete.
CREATE TABLE history_series (
  id INTEGER PRIMARY KEY,
  entity_id TEXT NOT NULL UNIQUE
);
CREATE TABLE history_recent (
  series INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  num REAL,
  state TEXT
);
CREATE TABLE history_blocks (
  series INTEGER NOT NULL,
  t0 INTEGER NOT NULL,
  t1 INTEGER NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE INDEX history_blocks_series_t0 ON history_blocks (series, t0);
CREATE TABLE history_hourly (
  series INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  slots BLOB NOT NULL
);
CREATE UNIQUE INDEX history_hourly_series_hour ON history_hourly (series, hour);
CREATE TABLE history_meta (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;

-- The kept rows become recent rows; the first pass packs and summarises them (the old per-row summaries are
-- not carried over: the rows they summarised are).
INSERT INTO history_series (entity_id) SELECT entity_id FROM history UNION SELECT entity_id FROM history_rollup;
INSERT INTO history_recent (series, ts, num, state)
  SELECT s.id, h.ts, h.num, h.state FROM history h JOIN history_series s ON s.entity_id = h.entity_id ORDER BY h.ts, h.rowid;
DROP TABLE history;
DROP TABLE history_rollup;
