// The history table on a real SQLite file: retention by age and by row count,
// and a long range folded into buckets that keep each bucket's low and high
// (numbers) or its last state (everything else).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/database.js';
import { HistoryStore } from '../../src/history/store.js';
import { parseRange } from '../../src/history/query.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-history-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 1, 12);

describe('history store', () => {
  it('forgets rows older than the retention, and the oldest rows beyond the row cap', () => {
    const db = openDatabase(join(dir, 'retention.db'));
    const store = new HistoryStore(db, 10, 1000);
    store.write([
      { entityId: 'a.t', ts: NOW - 11 * DAY, num: 1 },
      { entityId: 'a.t', ts: NOW - 9 * DAY, num: 2 },
    ]);
    assert.equal(store.prune(NOW), 1, 'the 11-day-old row goes');
    assert.deepEqual(
      store.latest('a.t', 0, NOW, 10).map((p) => p.value),
      [2],
    );
    store.write(Array.from({ length: 1500 }, (_, i) => ({ entityId: 'b.t', ts: NOW - 1500 + i, num: i })));
    store.prune(NOW);
    assert.equal(store.count(), 1000, 'no more rows than the cap');
    assert.deepEqual(
      store.latest('b.t', 0, NOW, 1).map((p) => p.value),
      [1499],
      'the newest rows stay',
    );
    db.close();
  });

  it('folds a long range into buckets: min/max/avg for numbers, the last state for states', () => {
    const db = openDatabase(join(dir, 'buckets.db'));
    const store = new HistoryStore(db);
    const rows = [];
    for (let i = 0; i < 1000; i++) rows.push({ entityId: 'temp.t', ts: NOW - DAY + i * 60_000, num: i % 100 });
    for (let i = 0; i < 300; i++) rows.push({ entityId: 'door.d', ts: NOW - DAY + i * 60_000, state: i % 2 ? 'on' : 'off' });
    store.write(rows);
    const temp = store.series('temp.t', NOW - DAY, NOW, 10);
    assert.equal(temp.type, 'number');
    assert.ok(temp.points.length <= 10, `${temp.points.length} buckets`);
    assert.equal(Math.min(...temp.points.map((p) => p.min!)), 0);
    assert.equal(Math.max(...temp.points.map((p) => p.max!)), 99);
    assert.equal(
      temp.points.reduce((n, p) => n + (p.count ?? 0), 0),
      1000,
      'every row is in some bucket',
    );
    const door = store.series('door.d', NOW - DAY, NOW, 5);
    assert.equal(door.type, 'state');
    assert.equal(door.points.at(-1)!.value, 'on', 'the last bucket ends with the last state (row 299 is on)');
    const before = store.series('door.d', NOW - DAY + 100 * 60_000 + 1, NOW, 500);
    assert.deepEqual(before.before, { ts: NOW - DAY + 100 * 60_000, value: 'off' }, 'the state in force when the range starts');
    db.close();
  });

  it('draws a week from five-minute summaries that agree with the rows, ends included', () => {
    const db = openDatabase(join(dir, 'week.db'));
    const store = new HistoryStore(db);
    const rows = [];
    for (let i = 0; i < 7 * 24 * 60; i++) rows.push({ entityId: 'w.t', ts: NOW - 7 * DAY + i * 60_000 + 7_000, num: 15 + ((i * 7) % 100) / 10 });
    store.write(rows);
    // A range that starts and ends inside five-minute summaries.
    const since = NOW - 7 * DAY + 123_456;
    const until = NOW - 98_765;
    const inRange = rows.filter((r) => r.ts >= since && r.ts <= until);
    const week = store.series('w.t', since, until, 500);
    assert.ok(week.bucketMs! >= 20 * 60_000, 'wide buckets');
    assert.ok(week.points.length <= 501, `${week.points.length} points`);
    assert.equal(week.rows, inRange.length, 'every reading in the range is counted once');
    assert.equal(Math.min(...week.points.map((p) => p.min!)), Math.min(...inRange.map((r) => r.num)));
    assert.equal(Math.max(...week.points.map((p) => p.max!)), Math.max(...inRange.map((r) => r.num)));
    const mean = inRange.reduce((t, r) => t + r.num, 0) / inRange.length;
    const drawn = week.points.reduce((t, p) => t + (p.value as number) * p.count!, 0) / week.rows;
    assert.ok(Math.abs(mean - drawn) < 0.01, `the average agrees: ${mean} vs ${drawn}`);
    assert.ok(
      week.points.every((p, i) => i === 0 || p.ts > week.points[i - 1]!.ts),
      'points in time order',
    );
    db.close();
  });

  it('reads ranges as times, epoch milliseconds or offsets back from now, and names the field at fault', () => {
    assert.deepEqual(parseRange({ since: '-2h', points: '100' }, NOW), { since: NOW - 2 * 3_600_000, until: NOW, points: 100 });
    assert.equal(parseRange({ since: '2026-06-01T00:00:00Z' }, NOW).since, Date.UTC(2026, 5, 1));
    assert.throws(() => parseRange({ since: 'soon' }, NOW), /since: must be an ISO 8601 time/);
    assert.throws(() => parseRange({ points: '1' }, NOW), /points: must be a whole number from 2 to 2000/);
    assert.throws(() => parseRange({ since: '-1h', until: '-2h' }, NOW), /since: must be before until/);
  });

  it('takes its settings from history.retentionDays and history.maxRows (10 days by default); a bad one stops start-up naming it', () => {
    const flags = { demo: false, 'database.path': ':memory:' };
    assert.deepEqual(loadConfig({ cwd: dir, env: {}, flags }).config.history, { retentionDays: 10, maxRows: 5_000_000 });
    assert.equal(loadConfig({ cwd: dir, env: {}, flags: { ...flags, 'history.retentionDays': '3' } }).config.history.retentionDays, 3);
    for (const [key, value] of [
      ['history.retentionDays', '0'],
      ['history.maxRows', '10'],
    ]) {
      try {
        loadConfig({ cwd: dir, env: {}, flags: { ...flags, [key]: value } });
        assert.fail(`${key}=${value} was accepted`);
      } catch (err) {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match((err as Error).message, new RegExp(key.split('.')[1]!));
      }
    }
  });
});
