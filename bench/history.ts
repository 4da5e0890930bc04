// Benchmark: the history table (src/history) under a busy home.
//
// 2,000 sensor topics at one message a second each for a simulated hour
// (7.2 million state changes; simulated time, so it runs as fast as the disk
// allows). Three ways of writing them to a real SQLite file (WAL), each on a
// fresh database with the same schema (migrations, indexes included):
//
//   baseline:  raw prepared INSERTs, 1,000 rows per transaction: the least a
//              batched writer can cost on this disk
//   recorder:  HistoryRecorder fed the state cache's change events (skips an
//              unchanged value, batches, one transaction per batch, and keeps
//              the five-minute summaries charts of long ranges read)
//   per-message: one transaction per message (what the recorder must never
//              do), on the first BENCH_HISTORY_PER_MESSAGE messages only
//
// Then the database's growth (bytes per row, MiB per simulated hour), and the
// time to serve a 7-day chart for one entity: one entity with a full week at
// 1 message/s (604,800 rows) among the hour of the others, read as the API
// does (series(), 500 points), against a baseline of a plain indexed
// SELECT count(*) over the same range.
//
// A script, not a test: it prints numbers and ratios and writes
// bench/results/history.json; it never fails on timings or sizes.
// Knobs: BENCH_HISTORY_TOPICS (2000), BENCH_HISTORY_SECONDS (3600),
// BENCH_HISTORY_PER_MESSAGE (20000), BENCH_TMPDIR.
import { EventEmitter } from 'node:events';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase, type Db } from '../src/db/database.js';
import type { Entity } from '../src/devices/model.js';
import type { EntityState } from '../src/devices/state-cache.js';
import { HistoryRecorder } from '../src/history/recorder.js';
import { HistoryStore } from '../src/history/store.js';
import { silentLogger } from '../src/log.js';
import { envInt, fmt, machine, median, nowNs, prng, progress, ratio, secondsSince, table, tempDir, writeResults } from './lib/harness.js';

const TOPICS = envInt('BENCH_HISTORY_TOPICS', 2000);
const SECONDS = envInt('BENCH_HISTORY_SECONDS', 3600);
const PER_MESSAGE = envInt('BENCH_HISTORY_PER_MESSAGE', 20_000);
const MESSAGES = TOPICS * SECONDS;
const START = Date.UTC(2026, 0, 5, 0, 0, 0);
const BATCH = 1000;

const dir = tempDir('hearth-bench-history');
const entities: Entity[] = Array.from({ length: TOPICS }, (_, i) => ({ id: `s${i}.temperature`, kind: 'sensor' }) as unknown as Entity);

/** The same stream every time: each topic drifts a little every second. */
function* stream(seconds = SECONDS, topics = TOPICS): Generator<{ i: number; ts: number; value: number }> {
  const rand = prng(42);
  const values = Array.from({ length: topics }, () => 20 + rand() * 5);
  for (let s = 0; s < seconds; s++) {
    for (let i = 0; i < topics; i++) {
      values[i] = Math.round((values[i]! + (rand() - 0.5) * 0.2) * 100) / 100;
      yield { i, ts: START + s * 1000 + i, value: values[i]! };
    }
  }
}

function fresh(name: string): { db: Db; path: string } {
  const path = join(dir.path, `${name}.db`);
  return { db: openDatabase(path), path };
}

function size(path: string): number {
  let total = 0;
  for (const f of [path, `${path}-wal`]) {
    try {
      total += statSync(f).size;
    } catch {
      // no WAL
    }
  }
  return total;
}

console.log(
  `history: ${TOPICS.toLocaleString('en-US')} topics x ${SECONDS.toLocaleString('en-US')} s = ${MESSAGES.toLocaleString('en-US')} messages (simulated time)`,
);

// -------------------------------------------------------------- baseline: raw batched inserts
const base = fresh('baseline');
const insert = base.db.prepare('INSERT INTO history (entity_id, ts, num, state) VALUES (?, ?, ?, NULL)');
const writeRaw = base.db.transaction((rows: Array<{ i: number; ts: number; value: number }>) => {
  for (const r of rows) insert.run(entities[r.i]!.id, r.ts, r.value);
});
let pending: Array<{ i: number; ts: number; value: number }> = [];
let p = progress('baseline', MESSAGES);
let t0 = nowNs();
let n = 0;
for (const m of stream()) {
  pending.push(m);
  if (pending.length >= BATCH) {
    writeRaw(pending);
    pending = [];
  }
  if (++n % 200_000 === 0) p.tick(n);
}
writeRaw(pending);
const baselineS = secondsSince(t0);
p.end();
base.db.pragma('wal_checkpoint(TRUNCATE)');
const baselineBytes = size(base.path);
base.db.close();

// -------------------------------------------------------------- recorder
const rec = fresh('recorder');
const store = new HistoryStore(rec.db, 10, 50_000_000);
const source = new EventEmitter<{ change: [EntityState, Entity] }>();
const recorder = new HistoryRecorder(store, source, silentLogger, {
  batchSize: BATCH,
  flushMs: 60_000,
  pruneEveryMs: 3_600_000,
  now: () => START + SECONDS * 1000,
});
const state: EntityState = { entityId: '', attributes: {}, available: true };
p = progress('recorder', MESSAGES);
t0 = nowNs();
n = 0;
for (const m of stream()) {
  const entity = entities[m.i]!;
  state.entityId = entity.id;
  state.value = m.value;
  state.updatedAt = m.ts;
  source.emit('change', state, entity);
  if (++n % 200_000 === 0) p.tick(n);
}
recorder.flush();
const recorderS = secondsSince(t0);
p.end();
rec.db.pragma('wal_checkpoint(TRUNCATE)');
const recorderBytes = size(rec.path);
const rows = store.count();
const transactions = store.stats.transactions;

// -------------------------------------------------------------- per-message transactions (a slice)
const per = fresh('per-message');
const perInsert = per.db.prepare('INSERT INTO history (entity_id, ts, num, state) VALUES (?, ?, ?, NULL)');
const one = per.db.transaction((m: { i: number; ts: number; value: number }) => perInsert.run(entities[m.i]!.id, m.ts, m.value));
const slice = Math.min(PER_MESSAGE, MESSAGES);
t0 = nowNs();
n = 0;
for (const m of stream()) {
  if (n++ >= slice) break;
  one(m);
}
const perMessageS = secondsSince(t0);
per.db.close();
// The same first messages, batched, on a fresh file: the fair partner of the per-message slice.
const sliceBase = fresh('slice-batched');
const sliceInsert = sliceBase.db.prepare('INSERT INTO history (entity_id, ts, num, state) VALUES (?, ?, ?, NULL)');
const sliceWrite = sliceBase.db.transaction((batch: Array<{ i: number; ts: number; value: number }>) => {
  for (const r of batch) sliceInsert.run(entities[r.i]!.id, r.ts, r.value);
});
const sliceRows: Array<{ i: number; ts: number; value: number }> = [];
n = 0;
for (const m of stream()) {
  if (n++ >= slice) break;
  sliceRows.push(m);
}
t0 = nowNs();
for (let i = 0; i < sliceRows.length; i += BATCH) sliceWrite(sliceRows.slice(i, i + BATCH));
const sliceBatchedS = secondsSince(t0);
sliceBase.db.close();

// -------------------------------------------------------------- a 7-day chart for one entity
const WEEK = 7 * 86_400;
const weekId = 'week.temperature';
// Through the store, as the recorder writes (rows and five-minute summaries), in batches.
for (let s = 0; s < WEEK; s += BATCH) {
  const batch = [];
  for (let t = s; t < Math.min(WEEK, s + BATCH); t++)
    batch.push({ entityId: weekId, ts: START + SECONDS * 1000 - WEEK * 1000 + t * 1000, num: 20 + Math.sin(t / 3600) * 3 });
  store.write(batch);
}
const until = START + SECONDS * 1000;
const since = until - WEEK * 1000;
const countStmt = rec.db.prepare('SELECT count(*) AS n FROM history WHERE entity_id = ? AND ts >= ? AND ts <= ?');
const chartMs: number[] = [];
const countMs: number[] = [];
let points = 0;
for (let r = 0; r < 21; r++) {
  let t = nowNs();
  countStmt.get(weekId, since, until);
  countMs.push(secondsSince(t) * 1000);
  t = nowNs();
  points = store.series(weekId, since, until, 500).points.length;
  chartMs.push(secondsSince(t) * 1000);
}
const oneHourEntity: number[] = [];
for (let r = 0; r < 21; r++) {
  const t = nowNs();
  store.series(entities[7]!.id, since, until, 500);
  oneHourEntity.push(secondsSince(t) * 1000);
}
recorder.close();
rec.db.close();

const perMsgUs = (s: number, count: number) => (s / count) * 1e6;
console.log('\nwrite cost per message');
table(
  ['writer', 'messages', 'transactions', 'µs/message', 'vs baseline'],
  [
    [
      'baseline: raw inserts, 1,000 per transaction',
      MESSAGES.toLocaleString('en-US'),
      Math.ceil(MESSAGES / BATCH).toLocaleString('en-US'),
      fmt(perMsgUs(baselineS, MESSAGES), 2),
      '1x',
    ],
    [
      'recorder (batched)',
      MESSAGES.toLocaleString('en-US'),
      transactions.toLocaleString('en-US'),
      fmt(perMsgUs(recorderS, MESSAGES), 2),
      ratio(recorderS / MESSAGES, baselineS / MESSAGES),
    ],
    [
      `raw inserts, 1,000 per transaction (first ${slice.toLocaleString('en-US')})`,
      slice.toLocaleString('en-US'),
      Math.ceil(slice / BATCH).toLocaleString('en-US'),
      fmt(perMsgUs(sliceBatchedS, slice), 2),
      ratio(sliceBatchedS / slice, baselineS / MESSAGES),
    ],
    [
      `one transaction per message (same first ${slice.toLocaleString('en-US')})`,
      slice.toLocaleString('en-US'),
      slice.toLocaleString('en-US'),
      fmt(perMsgUs(perMessageS, slice), 2),
      `${ratio(perMessageS, sliceBatchedS)} of batched`,
    ],
  ],
);
console.log('\ndatabase growth');
table(
  ['database', 'rows', 'MiB', 'bytes/row', 'MiB per simulated hour'],
  [
    [
      'baseline',
      MESSAGES.toLocaleString('en-US'),
      fmt(baselineBytes / 2 ** 20),
      fmt(baselineBytes / MESSAGES),
      fmt(baselineBytes / 2 ** 20 / (SECONDS / 3600)),
    ],
    ['recorder', rows.toLocaleString('en-US'), fmt(recorderBytes / 2 ** 20), fmt(recorderBytes / rows), fmt(recorderBytes / 2 ** 20 / (SECONDS / 3600))],
  ],
);
console.log(`\n7-day chart of one entity (${WEEK.toLocaleString('en-US')} rows of it among ${rows.toLocaleString('en-US')} others), median of 21`);
table(
  ['read', 'ms', 'vs baseline'],
  [
    ['baseline: indexed count(*) over the range', fmt(median(countMs), 2), '1x'],
    [`series(), ${points} points (min/max/avg buckets)`, fmt(median(chartMs), 2), ratio(median(chartMs), median(countMs))],
    ['series() of an entity with an hour of data', fmt(median(oneHourEntity), 2), ratio(median(oneHourEntity), median(countMs))],
  ],
);

const file = writeResults('history', {
  machine: machine(),
  topics: TOPICS,
  seconds: SECONDS,
  messages: MESSAGES,
  write: {
    baselineUsPerMessage: perMsgUs(baselineS, MESSAGES),
    recorderUsPerMessage: perMsgUs(recorderS, MESSAGES),
    recorderTransactions: transactions,
    perMessageUsPerMessage: perMsgUs(perMessageS, slice),
    perMessageSample: slice,
    sliceBatchedUsPerMessage: perMsgUs(sliceBatchedS, slice),
  },
  growth: { baselineBytes, recorderBytes, rows, bytesPerRow: recorderBytes / rows },
  chart7d: { rowsOfEntity: WEEK, points, medianMs: median(chartMs), baselineCountMs: median(countMs), hourEntityMs: median(oneHourEntity) },
});
console.log(`\nwrote ${file}`);
dir.cleanup();
