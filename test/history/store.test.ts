// The history tables on a real SQLite file: a disk budget that prunes the oldest raw rows first and the
// five-minute summaries last, how far each reaches,
// and a long range folded into buckets that keep each bucket's low and high
// (numbers) or its last state (everything else).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/database.js';
import { HistoryStore, describeReach } from '../../src/history/store.js';
import { parseRange } from '../../src/history/query.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-history-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 1, 12);

describe('history store', () => {
  it('keeps the database within its budget: the oldest raw rows go first, summaries last, and says how far each reaches', () => {
    const db = openDatabase(join(dir, 'budget.db'));
    const big = new HistoryStore(db, { budgetBytes: 2 ** 40, minRawMs: 2 * DAY, rollupMs: 365 * DAY });
    // 20 days of 6 sensors, one reading every 2 minutes (86,400 rows), oldest first as the recorder writes them.
    const start = NOW - 20 * DAY;
    for (let t = start; t < NOW; t += 6 * 3_600_000) {
      const batch = [];
      for (let u = t; u < t + 6 * 3_600_000; u += 120_000) for (let e = 0; e < 6; e++) batch.push({ entityId: `s${e}.t`, ts: u, num: e + (u % 1000) / 100 });
      big.write(batch);
    }
    while (!big.rollUp(NOW));
    const rows = big.count();
    assert.equal(rows, 86_400);
    assert.equal(big.countRollups(), 6 * 20 * 24, 'one summary row per sensor and hour');
    assert.ok(big.stats.blocks >= 6 * 20 * 24, 'the rows were packed into blocks, one per sensor and hour at most');
    assert.deepEqual(big.prune(NOW), { raw: 0, rollups: 0 }, 'within the budget nothing goes');
    let reach = big.reach();
    assert.equal(reach.rawSince, start);
    assert.equal(reach.rollupSince, start);
    // Summaries older than rollupDays go whatever the budget.
    const year = new HistoryStore(db, { budgetBytes: 2 ** 40, minRawMs: 2 * DAY, rollupMs: 19 * DAY });
    assert.deepEqual(year.prune(NOW), { raw: 0, rollups: 6 * 24 });
    assert.equal(year.reach().rollupSince, NOW - 19 * DAY, 'summaries are kept rollupDays');

    // A budget that the raw rows alone are over: the oldest raw rows go, no summary does.
    const used = big.usedBytes();
    const tight = new HistoryStore(db, { budgetBytes: used - 64 * 1024, minRawMs: 2 * DAY, rollupMs: 365 * DAY });
    const first = tight.prune(NOW);
    assert.ok(first.raw > 0 && first.rollups === 0, `raw rows went first: ${JSON.stringify(first)}`);
    assert.ok(tight.usedBytes() <= used - 64 * 1024, 'within the budget again');
    reach = tight.reach();
    assert.ok(reach.rawSince! > start, 'raw history now starts later');
    const oldestLeft = tight.latest('s0.t', 0, NOW, 1_000_000).at(-1)!.ts;
    assert.ok(oldestLeft - reach.rawSince! <= 3_600_000, 'what is left is the newest changes (whole blocks of an hour at most go)');
    assert.equal(tight.latest('s0.t', 0, NOW, 1_000_000).length, (NOW - oldestLeft) / 120_000, 'and every row after the oldest');
    assert.equal(reach.rollupSince, NOW - 19 * DAY, 'the summaries still reach back 19 days');
    const month = tight.series('s3.t', start, NOW, 200);
    assert.equal(month.type, 'number');
    assert.ok(month.points[0]!.ts < NOW - 18 * DAY, 'a chart of the whole range still starts 19 days back (from the summaries)');
    assert.equal(month.rows, ((rows / 6) * 19) / 20, 'every reading of the 19 days is counted once, summarised or raw');
    assert.ok(month.rawSince! >= reach.rawSince! && month.rawSince! - reach.rawSince! <= 3_600_000, 'the series says where its own raw rows start');

    // Raw changes older than retentionDays go whatever the budget; raw is then at its floor (two days).
    const kept = new HistoryStore(db, { budgetBytes: 2 ** 40, minRawMs: 2 * DAY, rollupMs: 365 * DAY, maxRawMs: 2 * DAY });
    kept.prune(NOW);
    assert.equal(kept.count(), 6 * ((2 * DAY) / 120_000), 'every change of the last two days is kept');
    // A budget only half the summaries fit in: no raw change younger than the floor goes, the oldest summaries do.
    const summaries = db.prepare("SELECT sum(pgsize) AS b FROM dbstat WHERE name LIKE 'history_hourly%'").get() as { b: number };
    const tiny = new HistoryStore(db, { budgetBytes: kept.usedBytes() - summaries.b / 2, minRawMs: 2 * DAY, rollupMs: 365 * DAY });
    const second = tiny.prune(NOW);
    assert.ok(second.raw === 0 && second.rollups > 0, JSON.stringify(second));
    reach = tiny.reach();
    assert.equal(reach.rawSince, NOW - 2 * DAY, 'raw changes still reach back min_raw_hours');
    assert.equal(tiny.count(), 6 * ((2 * DAY) / 120_000), 'and every one of them is kept, over the budget or not');
    assert.ok(reach.rollupSince! > start && reach.rollupSince! < NOW - 2 * DAY, 'the oldest summaries went last');
    assert.match(
      describeReach(reach, NOW),
      /^raw changes 2 days \(since 2026-05-30 12:00 UTC\), five-minute summaries \d+ days \(since .*\); database [\d.]+ of [\d.]+ MiB budget \(raw kept >= 48 h, summaries <= 365 days\)$/,
    );
    const nothing = new HistoryStore(db, { budgetBytes: 1, minRawMs: 2 * DAY, rollupMs: 365 * DAY });
    nothing.prune(NOW);
    assert.equal(nothing.count(), 6 * ((2 * DAY) / 120_000), 'a budget nothing fits in keeps min_raw_hours of changes');
    assert.equal(nothing.reach().rollupSince, null, 'and no summary');

    db.close();
  });

  it('packs and summarises only five minutes that ended, and folds late rows into summaries already written', () => {
    const db = openDatabase(join(dir, 'rollup.db'));
    const store = new HistoryStore(db);
    const hour = Math.floor(NOW / 3_600_000) * 3_600_000;
    store.write([
      { entityId: 'r.t', ts: hour - 3_600_000 + 1_000, num: 10 },
      { entityId: 'r.t', ts: hour - 3_600_000 + 2_000, num: 20 },
      { entityId: 'r.t', ts: hour + 1_000, num: 99 },
    ]);
    assert.equal(store.rollUp(hour + 30_000), true);
    assert.equal(store.countRollups(), 1, 'the ended hour is summarised');
    assert.equal(store.stats.blocks, 1, 'its two rows are packed; the newest is not, its five minutes are not over');
    assert.equal(store.count(), 3);
    store.write([{ entityId: 'r.t', ts: hour - 3_600_000 + 3_000, num: 30 }]);
    store.rollUp(hour + 10 * 60_000);
    // A new store on the same file reads what the last one wrote: the summaries are on disk.
    const again = new HistoryStore(db, { budgetBytes: 2 ** 40, minRawMs: 0, rollupMs: 365 * DAY, maxRawMs: 0 });
    assert.deepEqual(
      again.latest('r.t', 0, NOW + DAY, 10).map((p) => p.value),
      [99, 30, 20, 10],
      'packed changes read back in time order, the late one in its place',
    );
    again.prune(hour + 10 * 60_000);
    assert.equal(again.count(), 0, 'packed raw changes can go');
    const s = again.series('r.t', hour - 3_600_000, hour + 3_600_000 - 1, 100);
    assert.deepEqual(
      s.points.map((p) => [p.min, p.max, p.value, p.count]),
      [
        [10, 30, 20, 3],
        [99, 99, 99, 1],
      ],
      'the late row is in its five minutes, the summaries agree with the rows',
    );
    db.close();
  });

  it('packs changes so that they read back exactly: decimals, floats, text and null', () => {
    const db = openDatabase(join(dir, 'exact.db'));
    const store = new HistoryStore(db);
    const values = [21.37, -0.5, 1013.25, 0, 1e-7, Math.PI, 123456789.123, -40];
    const rows = [
      ...values.map((num, i) => ({ entityId: 'n.t', ts: NOW - DAY + i * 1_000, num })),
      ...['on', 'off', null, 'a "quoted" état'].map((state, i) => ({ entityId: 'm.t', ts: NOW - DAY + i * 61_000, state })),
    ];
    store.write(rows);
    while (!store.rollUp(NOW));
    assert.equal(store.stats.blocks, 2);
    assert.deepEqual(
      store.latest('n.t', 0, NOW, 100).reverse(),
      values.map((value, i) => ({ ts: NOW - DAY + i * 1_000, value })),
    );
    assert.deepEqual(
      store
        .latest('m.t', 0, NOW, 100)
        .map((p) => p.value)
        .reverse(),
      ['on', 'off', null, 'a "quoted" état'],
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

  it('takes its settings from history.budgetMb, minRawHours and rollupDays (1 GiB, 24 h, a year); a bad one stops start-up naming it', () => {
    const flags = { demo: false, 'database.path': ':memory:' };
    assert.deepEqual(loadConfig({ cwd: dir, env: {}, flags }).config.history, { budgetMb: 1024, minRawHours: 24, rollupDays: 365 });
    assert.equal(loadConfig({ cwd: dir, env: {}, flags: { ...flags, 'history.budgetMb': '300' } }).config.history.budgetMb, 300);
    for (const [key, value] of [
      ['history.budgetMb', '0'],
      ['history.minRawHours', '-1'],
      ['history.rollupDays', '0'],
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
