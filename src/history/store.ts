// The history table (migration 0011): batched writes, pruning by age and
// count, and reads that downsample a long range into buckets (min/max/avg
// for numbers, the last state for everything else) so a 7-day chart is a few
// hundred points whatever the sensor's rate. Statements are prepared once;
// every write is one synchronous transaction per batch.
import type { Db } from '../db/database.js';

export const DEFAULT_RETENTION_DAYS = 10;
export const DEFAULT_MAX_ROWS = 5_000_000;
/** Reads return at most this many points (the page asks for a chart's width). */
export const MAX_POINTS = 2000;
/** Numbers are also summarised per entity in buckets this wide (history_rollup). */
export const ROLLUP_MS = 5 * 60_000;

export interface HistoryRow {
  entityId: string;
  ts: number;
  /** Numbers (a temperature, a brightness): charted as lines. */
  num?: number | null;
  /** Everything else (on/off, open/closed, a mode): charted as a timeline. */
  state?: string | null;
}

/** One point of a series: raw, or a bucket's summary (ts = the bucket's last change). */
export interface HistoryPoint {
  ts: number;
  value: number | string | null;
  min?: number;
  max?: number;
  /** Rows the bucket summarises (1 for a raw point). */
  count?: number;
}

export interface HistorySeries {
  entityId: string;
  since: number;
  until: number;
  /** number: value is a number (avg of a bucket); state: text. Empty ranges are `state`. */
  type: 'number' | 'state';
  /** The state in force when the range began (the last row before `since`), or null. */
  before: HistoryPoint | null;
  points: HistoryPoint[];
  /** Set when rows were folded into buckets of this width. */
  bucketMs: number | null;
  /** Rows in the range. */
  rows: number;
}

export interface HistoryStats {
  /** Write transactions (one per batch). */
  transactions: number;
  /** Rows written. */
  rows: number;
  /** Rows deleted by pruning. */
  pruned: number;
}

export class HistoryStore {
  private readonly insert;
  private readonly countRange;
  private readonly rawRange;
  private readonly numBuckets;
  private readonly stateBuckets;
  private readonly lastBefore;
  private readonly lastRows;
  private readonly pruneAge;
  private readonly pruneCount;
  private readonly writeBatch;
  private readonly rollup;
  private readonly rollupBuckets;
  private readonly pruneRollup;
  readonly stats: HistoryStats = { transactions: 0, rows: 0, pruned: 0 };

  constructor(
    private readonly db: Db,
    readonly retentionDays = DEFAULT_RETENTION_DAYS,
    readonly maxRows = DEFAULT_MAX_ROWS,
  ) {
    this.insert = db.prepare('INSERT INTO history (entity_id, ts, num, state) VALUES (?, ?, ?, ?)');
    this.countRange = db.prepare('SELECT count(*) AS n, count(num) AS nums FROM (SELECT num FROM history WHERE entity_id = ? AND ts >= ? AND ts <= ? LIMIT ?)');
    this.rawRange = db.prepare('SELECT ts, num, state FROM history WHERE entity_id = ? AND ts >= ? AND ts <= ? ORDER BY ts, rowid');
    this.numBuckets = db.prepare(
      'SELECT CAST((ts - @origin) / @width AS INTEGER) AS b, max(ts) AS ts, min(num) AS min, max(num) AS max, avg(num) AS avg, count(*) AS n ' +
        'FROM history WHERE entity_id = @entity AND ts >= @since AND ts <= @until AND num IS NOT NULL GROUP BY b ORDER BY b',
    );
    // SQLite's bare column with max(): the state of the bucket's newest row.
    this.stateBuckets = db.prepare(
      'SELECT CAST((ts - @since) / @width AS INTEGER) AS b, max(ts) AS ts, state, count(*) AS n ' +
        'FROM history WHERE entity_id = @entity AND ts >= @since AND ts <= @until GROUP BY b ORDER BY b',
    );
    this.lastBefore = db.prepare('SELECT ts, num, state FROM history WHERE entity_id = ? AND ts < ? ORDER BY ts DESC, rowid DESC LIMIT 1');
    this.lastRows = db.prepare('SELECT ts, num, state FROM history WHERE entity_id = ? AND ts >= ? AND ts <= ? ORDER BY ts DESC, rowid DESC LIMIT ?');
    this.pruneAge = db.prepare('DELETE FROM history WHERE ts < ?');
    this.pruneCount = db.prepare('DELETE FROM history WHERE rowid <= (SELECT max(rowid) FROM history) - ?');
    this.rollup = db.prepare(
      'INSERT INTO history_rollup (entity_id, bucket, lo, hi, total, n, last_ts) VALUES (?, ?, ?, ?, ?, 1, ?) ' +
        'ON CONFLICT (entity_id, bucket) DO UPDATE SET lo = min(lo, excluded.lo), hi = max(hi, excluded.hi), total = total + excluded.total, n = n + 1, last_ts = max(last_ts, excluded.last_ts)',
    );
    // Whole summaries inside the range, folded again into the chart's buckets.
    this.rollupBuckets = db.prepare(
      'SELECT CAST((bucket * @rollup - @origin) / @width AS INTEGER) AS b, max(last_ts) AS ts, min(lo) AS min, max(hi) AS max, sum(total) / sum(n) AS avg, sum(n) AS n ' +
        'FROM history_rollup WHERE entity_id = @entity AND bucket >= @first AND bucket <= @last GROUP BY b ORDER BY b',
    );
    this.pruneRollup = db.prepare('DELETE FROM history_rollup WHERE bucket < ?');
    this.writeBatch = db.transaction((rows: HistoryRow[]) => {
      for (const r of rows) {
        this.insert.run(r.entityId, r.ts, r.num ?? null, r.state ?? null);
        if (typeof r.num === 'number') this.rollup.run(r.entityId, Math.floor(r.ts / ROLLUP_MS), r.num, r.num, r.num, r.ts);
      }
    });
  }

  /** Write a batch in one transaction. */
  write(rows: HistoryRow[]): void {
    if (!rows.length) return;
    this.writeBatch(rows);
    this.stats.transactions++;
    this.stats.rows += rows.length;
  }

  /** Drop rows older than the retention and beyond the row cap; returns how many went. */
  prune(now = Date.now()): number {
    const cutoff = now - this.retentionDays * 86_400_000;
    const old = this.pruneAge.run(cutoff).changes;
    this.pruneRollup.run(Math.floor(cutoff / ROLLUP_MS));
    const over = this.pruneCount.run(this.maxRows).changes;
    this.stats.pruned += old + over;
    return old + over;
  }

  /** The rows of one entity in [since, until], downsampled to about `points` when there are more. */
  series(entityId: string, since: number, until: number, points: number): HistorySeries {
    // Only as many rows as decide raw or bucketed: a week of readings is not counted one by one.
    const { n, nums } = this.countRange.get(entityId, since, until, points + 1) as { n: number; nums: number };
    const prev = this.lastBefore.get(entityId, since) as RawRow | undefined;
    const numeric = n > 0 ? nums === n : prev?.num !== null && prev?.num !== undefined;
    const base = { entityId, since, until, type: numeric ? ('number' as const) : ('state' as const), before: prev ? point(prev) : null };
    if (n <= points) {
      const raw = (this.rawRange.all(entityId, since, until) as RawRow[]).map(point);
      return { ...base, points: raw, bucketMs: null, rows: raw.length };
    }
    const width = Math.max(1, Math.ceil((until - since + 1) / points));
    const rowsIn = (from: number, to: number) =>
      from > to ? [] : (this.numBuckets.all({ entity: entityId, origin: since, since: from, until: to, width }) as Bucket[]);
    if (numeric) {
      let parts: Bucket[];
      if (width >= 4 * ROLLUP_MS) {
        // Whole five-minute summaries inside the range; the partial ones at its two ends from the rows.
        const first = Math.ceil(since / ROLLUP_MS);
        const last = Math.floor((until + 1) / ROLLUP_MS) - 1;
        parts =
          first <= last
            ? [
                ...rowsIn(since, first * ROLLUP_MS - 1),
                ...(this.rollupBuckets.all({ entity: entityId, rollup: ROLLUP_MS, origin: since, width, first, last }) as Bucket[]),
                ...rowsIn((last + 1) * ROLLUP_MS, until),
              ]
            : rowsIn(since, until);
      } else {
        parts = rowsIn(since, until);
      }
      const merged = new Map<number, { ts: number; min: number; max: number; sum: number; n: number }>();
      for (const x of parts) {
        const o = merged.get(x.b);
        if (!o) merged.set(x.b, { ts: x.ts, min: x.min, max: x.max, sum: x.avg * x.n, n: x.n });
        else Object.assign(o, { ts: Math.max(o.ts, x.ts), min: Math.min(o.min, x.min), max: Math.max(o.max, x.max), sum: o.sum + x.avg * x.n, n: o.n + x.n });
      }
      const buckets = [...merged.entries()].sort((x, y) => x[0] - y[0]).map(([, o]) => o);
      return {
        ...base,
        points: buckets.map((o) => ({ ts: o.ts, value: round(o.sum / o.n), min: o.min, max: o.max, count: o.n })),
        bucketMs: width,
        rows: buckets.reduce((t, o) => t + o.n, 0),
      };
    }
    const buckets = this.stateBuckets.all({ entity: entityId, since, until, width }) as Array<{ ts: number; state: string | null; n: number }>;
    return { ...base, points: buckets.map((b) => ({ ts: b.ts, value: b.state, count: b.n })), bucketMs: width, rows: buckets.reduce((t, b) => t + b.n, 0) };
  }

  /** The newest `limit` rows of one entity in [since, until], newest first (the agent's answers). */
  latest(entityId: string, since: number, until: number, limit: number): HistoryPoint[] {
    return (this.lastRows.all(entityId, since, until, limit) as RawRow[]).map(point);
  }

  /** Rows in the table (tests, the bench). */
  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM history').get() as { n: number }).n;
  }
}

interface Bucket {
  b: number;
  ts: number;
  min: number;
  max: number;
  avg: number;
  n: number;
}

interface RawRow {
  ts: number;
  num: number | null;
  state: string | null;
}

function point(r: RawRow): HistoryPoint {
  return { ts: r.ts, value: r.num ?? r.state };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
