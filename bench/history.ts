// Benchmark: entity history (src/history) against its disk budget, for two homes.
//
//   busy home:    2,000 sensor topics at one message a second for a simulated hour (7.2 million changes at the
//                 defaults; simulated time, so it runs as fast as the disk allows)
//   typical home: 300 entities changing once a minute for a simulated day (432,000 changes)
//
// Each goes through HistoryRecorder (fed the state cache's change events, batched) into a fresh SQLite file
// (WAL, the real migrations), with the five-minute pass (rollUp) run every simulated minute as the daemon's timer
// does. Baseline: raw prepared INSERTs of the same changes, 1,000 per transaction, into a plain table without an
// index (the least a batched writer can cost on this disk), timed in the same run.
//
// Printed: changes/s, bytes per change (packed blocks and their index), bytes per summary (one row per entity and
// hour), growth per day, and what a 1 GiB budget (history.budget_mb's default) keeps: the typical home must keep
// >= 10 days of raw changes beside a year of five-minute summaries, the busy one >= 24 hours of raw changes.
// The year is projected from the measured sizes (a year of summaries for 300 entities is 2.6 million rows).
// Then a 10-day chart of one entity (1 change/min, and 1 change/s), read as the API does (series(), 500 points),
// against a baseline of an indexed SELECT count(*) over the same rows in a plain table.
//
// A script, not a test: it prints numbers and ratios and writes bench/results/history.json; it never fails on
// timings or sizes. Knobs: BENCH_HISTORY_TOPICS (2000), BENCH_HISTORY_SECONDS (3600), BENCH_HISTORY_TYPICAL
// (300 entities), BENCH_HISTORY_TYPICAL_HOURS (24), BENCH_TMPDIR.
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { openDatabase, type Db } from '../src/db/database.js';
import type { Entity } from '../src/devices/model.js';
import type { EntityState } from '../src/devices/state-cache.js';
import { HistoryRecorder } from '../src/history/recorder.js';
import { DAY_MS, HOUR_MS, HistoryStore } from '../src/history/store.js';
import { silentLogger } from '../src/log.js';
import { envInt, fmt, machine, median, nowNs, prng, progress, ratio, secondsSince, table, tempDir, writeResults } from './lib/harness.js';

const BUSY_TOPICS = envInt('BENCH_HISTORY_TOPICS', 2000);
const BUSY_SECONDS = envInt('BENCH_HISTORY_SECONDS', 3600);
const TYPICAL_ENTITIES = envInt('BENCH_HISTORY_TYPICAL', 300);
const TYPICAL_HOURS = envInt('BENCH_HISTORY_TYPICAL_HOURS', 24);
const BUDGET = 2 ** 30;
const START = Date.UTC(2026, 0, 5, 0, 0, 0);
const BATCH = 1000;
const MiB = 2 ** 20;

const dir = tempDir('hearth-bench-history');

interface Home {
  name: string;
  entities: number;
  /** Seconds between two changes of one entity. */
  every: number;
  seconds: number;
}

const busy: Home = { name: 'busy', entities: BUSY_TOPICS, every: 1, seconds: BUSY_SECONDS };
const typical: Home = { name: 'typical', entities: TYPICAL_ENTITIES, every: 60, seconds: TYPICAL_HOURS * 3600 };

/** The same stream every time: each entity drifts a little at each change (two decimals, like a sensor). */
function* stream(home: Home): Generator<{ i: number; ts: number; value: number }> {
  const rand = prng(42);
  const values = Array.from({ length: home.entities }, () => 20 + rand() * 5);
  for (let s = 0; s < home.seconds; s += home.every) {
    for (let i = 0; i < home.entities; i++) {
      values[i] = Math.round((values[i]! + (rand() - 0.5) * 0.2) * 100) / 100;
      yield { i, ts: START + s * 1000 + Math.floor((i * home.every * 1000) / home.entities), value: values[i]! };
    }
  }
}

function fresh(name: string): Db {
  return openDatabase(join(dir.path, `${name}.db`));
}

/** Bytes of the named b-trees (tables and their indexes), from SQLite's dbstat. */
function bytesOf(db: Db, like: string): number {
  return (db.prepare('SELECT coalesce(sum(pgsize), 0) AS b FROM dbstat WHERE name LIKE ?').get(like) as { b: number }).b;
}

function baseline(home: Home): { seconds: number; changes: number } {
  const db = fresh(`${home.name}-baseline`);
  db.exec('CREATE TABLE plain (entity_id TEXT, ts INTEGER, num REAL)');
  const insert = db.prepare('INSERT INTO plain (entity_id, ts, num) VALUES (?, ?, ?)');
  const ids = Array.from({ length: home.entities }, (_, i) => `s${i}.temperature`);
  const write = db.transaction((rows: Array<{ i: number; ts: number; value: number }>) => {
    for (const r of rows) insert.run(ids[r.i], r.ts, r.value);
  });
  const total = (home.entities * home.seconds) / home.every;
  const p = progress(`${home.name}: baseline`, total);
  let pending: Array<{ i: number; ts: number; value: number }> = [];
  let n = 0;
  const t0 = nowNs();
  for (const m of stream(home)) {
    pending.push(m);
    if (pending.length >= BATCH) {
      write(pending);
      pending = [];
    }
    if (++n % 200_000 === 0) p.tick(n);
  }
  write(pending);
  const seconds = secondsSince(t0);
  p.end();
  db.close();
  return { seconds, changes: n };
}

interface Measured {
  changes: number;
  seconds: number;
  passSeconds: number;
  /** The longest single rollUp() call (one slice: the event loop's longest stall from history), ms. */
  longestStepMs: number;
  blockBytes: number;
  summaryBytes: number;
  summaryRows: number;
  recentBytes: number;
  usedBytes: number;
  emptyBytes: number;
  blocks: number;
}

function recorded(home: Home): Measured {
  const db = fresh(home.name);
  const store = new HistoryStore(db, { budgetBytes: 2 ** 50 });
  const emptyBytes = store.usedBytes();
  const source = new EventEmitter<{ change: [EntityState, Entity] }>();
  let now = START;
  const recorder = new HistoryRecorder(store, source, silentLogger, { batchSize: BATCH, flushMs: 3_600_000, pruneEveryMs: 3_600_000, now: () => now });
  const entities = Array.from({ length: home.entities }, (_, i) => ({ id: `s${i}.temperature`, kind: 'sensor' }) as unknown as Entity);
  const state: EntityState = { entityId: '', attributes: {}, available: true };
  const total = (home.entities * home.seconds) / home.every;
  const p = progress(`${home.name}: recorder`, total);
  let n = 0;
  let passSeconds = 0;
  let longestStepMs = 0;
  const step = () => {
    const ts = nowNs();
    const done = store.rollUp(now);
    longestStepMs = Math.max(longestStepMs, secondsSince(ts) * 1000);
    return done;
  };
  let nextMinute = START + 60_000;
  const t0 = nowNs();
  for (const m of stream(home)) {
    if (m.ts >= nextMinute) {
      // The daemon's timer: once a simulated minute, the pass over the five minutes that ended.
      recorder.flush();
      now = nextMinute;
      nextMinute += 60_000;
      const tp = nowNs();
      while (!step());
      passSeconds += secondsSince(tp);
    }
    const entity = entities[m.i]!;
    state.entityId = entity.id;
    state.value = m.value;
    state.updatedAt = m.ts;
    source.emit('change', state, entity);
    if (++n % 200_000 === 0) p.tick(n);
  }
  recorder.flush();
  now = START + home.seconds * 1000 + 10 * 60_000;
  const tp = nowNs();
  while (!step());
  passSeconds += secondsSince(tp);
  const seconds = secondsSince(t0);
  p.end();
  recorder.close();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const out: Measured = {
    changes: n,
    seconds,
    passSeconds,
    longestStepMs,
    blockBytes: bytesOf(db, 'history_blocks%'),
    summaryBytes: bytesOf(db, 'history_hourly%'),
    summaryRows: store.countRollups(),
    recentBytes: bytesOf(db, 'history_recent%'),
    usedBytes: store.usedBytes(),
    emptyBytes,
    blocks: store.stats.blocks,
  };
  db.close();
  return out;
}

console.log(
  `history: busy home ${busy.entities.toLocaleString('en-US')} topics x 1 msg/s x ${busy.seconds.toLocaleString('en-US')} s; ` +
    `typical home ${typical.entities} entities x 1 change/min x ${TYPICAL_HOURS} h (simulated time)`,
);

const results: Record<string, { base: ReturnType<typeof baseline>; rec: Measured; perDay: { raw: number; summaries: number }; keep: Record<string, number> }> =
  {};
for (const home of [typical, busy]) {
  const base = baseline(home);
  const rec = recorded(home);
  const days = home.seconds / 86_400;
  // Per day: the packed changes, and the summaries (one row per entity and hour, whatever the rate).
  const perDay = { raw: rec.blockBytes / days, summaries: (rec.summaryBytes / rec.summaryRows) * home.entities * 24 };
  const room = BUDGET - rec.emptyBytes;
  const keep = {
    // With a year of summaries beside them: how many days of raw changes the budget holds.
    rawDaysBesideYear: (room - 365 * perDay.summaries) / perDay.raw,
    // Raw changes alone (and their summaries for the same time): how many hours the budget holds.
    rawHoursAlone: (room / (perDay.raw + perDay.summaries)) * 24,
  };
  results[home.name] = { base, rec, perDay, keep };
}

console.log('\nwrite cost (recorder: batched appends + the five-minute passes that pack and summarise)');
table(
  ['home', 'changes', 'baseline changes/s', 'recorder changes/s', 'vs baseline', 'of which passes', 'longest pass step ms', 'blocks'],
  Object.entries(results).map(([name, r]) => [
    name,
    r.rec.changes.toLocaleString('en-US'),
    fmt(r.base.changes / r.base.seconds, 0),
    fmt(r.rec.changes / r.rec.seconds, 0),
    ratio(r.base.changes / r.base.seconds, r.rec.changes / r.rec.seconds).replace(/x$/, 'x slower'),
    `${fmt((r.rec.passSeconds / r.rec.seconds) * 100, 0)} %`,
    fmt(r.rec.longestStepMs, 1),
    r.rec.blocks.toLocaleString('en-US'),
  ]),
);
console.log('\ndisk (dbstat, after a checkpoint)');
table(
  ['home', 'bytes/change (packed)', 'bytes/summary row (12 x 5 min)', 'MiB raw/day', 'MiB summaries/day', 'MiB summaries/year', 'unpacked rows left (MiB)'],
  Object.entries(results).map(([name, r]) => [
    name,
    fmt(r.rec.blockBytes / r.rec.changes, 2),
    fmt(r.rec.summaryBytes / r.rec.summaryRows, 0),
    fmt(r.perDay.raw / MiB, 1),
    fmt(r.perDay.summaries / MiB, 1),
    fmt((r.perDay.summaries * 365) / MiB, 0),
    fmt(r.rec.recentBytes / MiB, 2),
  ]),
);
const t = results.typical!;
const b = results.busy!;
console.log(`\nin a ${BUDGET / MiB} MiB budget (history.budget_mb's default; the rest of the database: ${fmt(t.rec.emptyBytes / MiB, 1)} MiB)`);
table(
  ['home', 'raw days beside a year of summaries', 'raw hours (summaries of the same hours only)'],
  Object.entries(results).map(([name, r]) => [name, fmt(Math.max(0, r.keep.rawDaysBesideYear), 1), fmt(r.keep.rawHoursAlone, 1)]),
);

// -------------------------------------------------------------- 10-day charts
function chart(label: string, every: number): { label: string; readings: number; chartMs: number; countMs: number; points: number; dayMs: number } {
  const db = fresh(`chart-${every}`);
  const store = new HistoryStore(db, { budgetBytes: 2 ** 50 });
  const plain = fresh(`chart-${every}-plain`);
  plain.exec('CREATE TABLE plain (entity_id TEXT, ts INTEGER, num REAL); CREATE INDEX plain_entity_ts ON plain (entity_id, ts)');
  const insert = plain.prepare('INSERT INTO plain VALUES (?, ?, ?)');
  const writePlain = plain.transaction((rows: Array<{ entityId: string; ts: number; num: number }>) => {
    for (const r of rows) insert.run(r.entityId, r.ts, r.num);
  });
  const until = START + 10 * DAY_MS;
  let readings = 0;
  for (let t = START; t < until; t += HOUR_MS) {
    const batch = [];
    for (let u = t; u < t + HOUR_MS; u += every * 1000)
      batch.push({ entityId: 'ten.temperature', ts: u, num: Math.round((20 + Math.sin(u / 3_600_000) * 3) * 100) / 100 });
    store.write(batch);
    writePlain(batch);
    readings += batch.length;
    while (!store.rollUp(t + HOUR_MS));
  }
  while (!store.rollUp(until + 10 * 60_000));
  const count = plain.prepare('SELECT count(*) AS n FROM plain WHERE entity_id = ? AND ts >= ? AND ts <= ?');
  const chartMs: number[] = [];
  const countMs: number[] = [];
  const dayMs: number[] = [];
  let points = 0;
  // Warm-up: the first reads compile the decoding paths.
  for (let r = 0; r < 10; r++) store.series('ten.temperature', START, until, 500);
  for (let r = 0; r < 21; r++) {
    let t0 = nowNs();
    count.get('ten.temperature', START, until);
    countMs.push(secondsSince(t0) * 1000);
    t0 = nowNs();
    points = store.series('ten.temperature', START, until, 500).points.length;
    chartMs.push(secondsSince(t0) * 1000);
    t0 = nowNs();
    store.series('ten.temperature', until - DAY_MS, until, 500);
    dayMs.push(secondsSince(t0) * 1000);
  }
  db.close();
  plain.close();
  return { label, readings, chartMs: median(chartMs), countMs: median(countMs), points, dayMs: median(dayMs) };
}
const charts = [chart('1 change/min', 60), chart('1 change/s', 1)];
console.log('\n10-day chart of one entity, series() with 500 points (median of 21, after 10 warm-up reads)');
table(
  ['entity', 'changes in 10 days', 'baseline: indexed count(*) ms', '10-day chart ms', 'vs baseline', 'points', 'last 24 h chart ms'],
  charts.map((c) => [
    c.label,
    c.readings.toLocaleString('en-US'),
    fmt(c.countMs, 2),
    fmt(c.chartMs, 2),
    ratio(c.chartMs, c.countMs),
    String(c.points),
    fmt(c.dayMs, 2),
  ]),
);

const typicalMet = t.keep.rawDaysBesideYear >= 10;
const busyMet = b.keep.rawHoursAlone >= 24;
console.log(
  `\nTARGET history typical home (${typical.entities} entities, 1 change/min): >= 10 days raw + a year of 5-minute summaries in 1 GiB: ${typicalMet ? 'MET' : 'NOT MET'} ` +
    `(${fmt(t.keep.rawDaysBesideYear, 0)} days raw beside ${fmt((t.perDay.summaries * 365) / MiB, 0)} MiB of summaries; ${fmt(t.rec.blockBytes / t.rec.changes, 1)} bytes/change)`,
);
console.log(
  `TARGET history busy home (${busy.entities.toLocaleString('en-US')} topics at 1 msg/s): >= 24 h raw in 1 GiB: ${busyMet ? 'MET' : 'NOT MET'} ` +
    `(${fmt(b.keep.rawHoursAlone, 0)} h; ${fmt((b.perDay.raw + b.perDay.summaries) / MiB, 0)} MiB/day; ${fmt(b.rec.changes / b.rec.seconds, 0)} changes/s written, ${ratio(b.rec.changes / b.rec.seconds, b.base.changes / b.base.seconds)} the raw INSERT's)`,
);

const file = writeResults('history', {
  machine: machine(),
  budgetBytes: BUDGET,
  homes: results,
  charts,
  met: { typical: typicalMet, busy: busyMet },
});
console.log(`\nwrote ${file}`);
dir.cleanup();
