-- History as a disk budget (issue 33). Rows name their entity by a small number (history_series) instead of its
-- text id, and carry no index on time: they are appended in time order, so the oldest rows are the lowest rowids
-- and pruning takes them from the front. Five-minute summaries of the numbers are packed per entity and hour in
-- one small row (history_hourly.slots: 12 x [n u16, low f32, high f32, mean f32], little-endian), rolled up from
-- the raw rows once the hour is over; a year of them for 300 entities is ~0.5 GiB instead of ~2.5 as a row per
-- summary. history_meta remembers how far the roll-up has read.
CREATE TABLE history_series (
  id INTEGER PRIMARY KEY,
  entity_id TEXT NOT NULL UNIQUE
);
CREATE TABLE history_raw (
  series INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  num REAL,
  state TEXT
);
CREATE INDEX history_raw_series_ts ON history_raw (series, ts);
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

INSERT INTO history_series (entity_id) SELECT entity_id FROM history UNION SELECT entity_id FROM history_rollup;
INSERT INTO history_raw (series, ts, num, state)
  SELECT s.id, h.ts, h.num, h.state FROM history h JOIN history_series s ON s.entity_id = h.entity_id ORDER BY h.ts, h.rowid;
-- The old per-row summaries are not carried over: the store rolls the kept rows up again (from the first hour).
DROP TABLE history;
DROP TABLE history_rollup;
