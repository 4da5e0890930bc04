// Entity history (migration 0013) kept within a disk budget: raw rows (every recorded change) and five-minute
// summaries of the numbers packed per entity and hour. Raw rows are appended in time order, so the oldest are the
// lowest rowids; when the database is over its budget the oldest raw rows go first (never those younger than
// minRawMs, nor any not yet rolled up), then the oldest summaries. Reads downsample a long range into buckets
// (min/max/avg for numbers, the last state for everything else) so a long chart is a few hundred points whatever
// the sensor's rate. Statements are prepared once; every write is one synchronous transaction.
import type { Db } from '../db/database.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
export const DEFAULT_BUDGET_MB = 1024;
export const DEFAULT_MIN_RAW_HOURS = 24;
export const DEFAULT_ROLLUP_DAYS = 365;
/** Reads return at most this many points (the page asks for a chart's width). */
export const MAX_POINTS = 2000;
/** Numbers are also summarised per entity in buckets this wide (history_hourly). */
export const ROLLUP_MS = 5 * 60_000;
const SLOTS = HOUR_MS / ROLLUP_MS;
/** One packed summary: n (u16), low, high, mean (f32), little-endian. */
const SLOT_BYTES = 14;
/** An hour is rolled up this long after it ends, so that rows still in the recorder's batch are in it. */
export const ROLLUP_GRACE_MS = 2 * 60_000;
/** Raw rows the roll-up reads per call: an hour of a very busy home is millions, read a slice at a time. */
const ROLLUP_SLICE = 100_000;

export interface HistoryRow {
  entityId: string;
  ts: number;
  /** Numbers (a temperature, a brightness): charted as lines. */
  num?: number | null;
  /** Everything else (on/off, open/closed, a mode): charted as a timeline. */
  state?: string | null;
}

/** One point of a series: raw, or a bucket's summary (ts = the bucket's last change, or a summary's end). */
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
  /** The oldest raw row kept for this entity (older parts of the chart come from five-minute summaries), or null. */
  rawSince: number | null;
}

export interface HistoryOptions {
  /** The database may use this many bytes (pages in use); history is pruned to stay within it. */
  budgetBytes: number;
  /** Raw rows younger than this are kept even over the budget. */
  minRawMs: number;
  /** Five-minute summaries are kept this long (within the budget). */
  rollupMs: number;
  /** Raw rows older than this go even within the budget (unset: as long as the budget allows). */
  maxRawMs?: number;
}

/** How far back history reaches, and how much of the budget the database uses. */
export interface HistoryReach {
  /** The oldest raw row (every change), or null when there is none. */
  rawSince: number | null;
  /** The oldest five-minute summary's start, or null. */
  rollupSince: number | null;
  /** Summaries cover hours before this (later ones are read from the raw rows). */
  rolledUntil: number;
  usedBytes: number;
  budgetBytes: number;
  minRawMs: number;
  rollupMs: number;
}

export interface HistoryStats {
  /** Write transactions (one per batch). */
  transactions: number;
  /** Rows written. */
  rows: number;
  /** Raw rows deleted by pruning. */
  pruned: number;
  /** Hourly summary rows deleted by pruning. */
  prunedRollups: number;
}

export interface PruneResult {
  raw: number;
  rollups: number;
}

export function historyOptions(config?: { budgetMb?: number; minRawHours?: number; rollupDays?: number; retentionDays?: number }): HistoryOptions {
  return {
    budgetBytes: Math.round((config?.budgetMb ?? DEFAULT_BUDGET_MB) * 2 ** 20),
    minRawMs: (config?.minRawHours ?? DEFAULT_MIN_RAW_HOURS) * HOUR_MS,
    rollupMs: (config?.rollupDays ?? DEFAULT_ROLLUP_DAYS) * DAY_MS,
    maxRawMs: config?.retentionDays !== undefined ? config.retentionDays * DAY_MS : undefined,
  };
}

/** A slot's running summary while an hour is rolled up: n, low, high, sum per slot. */
type Acc = Float64Array;

export class HistoryStore {
  readonly options: HistoryOptions;
  private readonly ids = new Map<string, number>();
  private readonly insert;
  private readonly addSeries;
  private readonly seriesId;
  private readonly countRange;
  private readonly rawRange;
  private readonly numBuckets;
  private readonly stateBuckets;
  private readonly lastBefore;
  private readonly lastRows;
  private readonly firstRaw;
  private readonly oldestRaw;
  private readonly oldestHourly;
  private readonly pruneRaw;
  private readonly pruneHourly;
  private readonly scanRaw;
  private readonly getHourly;
  private readonly putHourly;
  private readonly hourlyRange;
  private readonly getMeta;
  private readonly setMeta;
  private readonly writeBatch;
  private readonly flushRollup;
  /** Summaries read but not yet written (an hour read across several slices). */
  private acc = new Map<number, { series: number; hour: number; slots: Acc }>();
  /** The raw rowid the summaries on disk have read up to, and the one this pass has read up to. */
  private scanned: number;
  private pendingScan: number;
  private rolled: number;
  readonly stats: HistoryStats = { transactions: 0, rows: 0, pruned: 0, prunedRollups: 0 };

  constructor(
    private readonly db: Db,
    options: Partial<HistoryOptions> = {},
  ) {
    this.options = { ...historyOptions(), ...options };
    this.insert = db.prepare('INSERT INTO history_raw (series, ts, num, state) VALUES (?, ?, ?, ?)');
    this.addSeries = db.prepare('INSERT OR IGNORE INTO history_series (entity_id) VALUES (?)');
    this.seriesId = db.prepare('SELECT id FROM history_series WHERE entity_id = ?').pluck();
    this.countRange = db.prepare(
      'SELECT count(*) AS n, count(num) AS nums FROM (SELECT num FROM history_raw WHERE series = ? AND ts >= ? AND ts <= ? LIMIT ?)',
    );
    this.rawRange = db.prepare('SELECT ts, num, state FROM history_raw WHERE series = ? AND ts >= ? AND ts <= ? ORDER BY ts, rowid');
    this.numBuckets = db.prepare(
      'SELECT CAST((ts - @origin) / @width AS INTEGER) AS b, max(ts) AS ts, min(num) AS min, max(num) AS max, avg(num) AS avg, count(*) AS n ' +
        'FROM history_raw WHERE series = @series AND ts >= @since AND ts <= @until AND num IS NOT NULL GROUP BY b ORDER BY b',
    );
    // SQLite's bare column with max(): the state of the bucket's newest row.
    this.stateBuckets = db.prepare(
      'SELECT CAST((ts - @since) / @width AS INTEGER) AS b, max(ts) AS ts, state, count(*) AS n ' +
        'FROM history_raw WHERE series = @series AND ts >= @since AND ts <= @until GROUP BY b ORDER BY b',
    );
    this.lastBefore = db.prepare('SELECT ts, num, state FROM history_raw WHERE series = ? AND ts < ? ORDER BY ts DESC, rowid DESC LIMIT 1');
    this.lastRows = db.prepare('SELECT ts, num, state FROM history_raw WHERE series = ? AND ts >= ? AND ts <= ? ORDER BY ts DESC, rowid DESC LIMIT ?');
    this.firstRaw = db.prepare('SELECT ts FROM history_raw WHERE series = ? ORDER BY ts LIMIT 1').pluck();
    this.oldestRaw = db.prepare('SELECT rowid AS id, ts FROM history_raw ORDER BY rowid LIMIT 1');
    this.oldestHourly = db.prepare('SELECT hour FROM history_hourly ORDER BY rowid LIMIT 1').pluck();
    // The oldest rows go first: a slice from the front (rowid order is time order), and only rows that are old
    // enough and already summarised.
    this.pruneRaw = db.prepare(
      'DELETE FROM history_raw WHERE rowid IN (SELECT rowid FROM history_raw WHERE rowid <= @upto ORDER BY rowid LIMIT @limit) AND ts < @cutoff',
    );
    this.pruneHourly = db.prepare(
      'DELETE FROM history_hourly WHERE rowid IN (SELECT rowid FROM history_hourly ORDER BY rowid LIMIT @limit) AND hour < @cutoff',
    );
    this.scanRaw = db.prepare('SELECT rowid AS id, series, ts, num FROM history_raw WHERE rowid > ? ORDER BY rowid LIMIT ?').raw();
    this.getHourly = db.prepare('SELECT slots FROM history_hourly WHERE series = ? AND hour = ?').pluck();
    this.putHourly = db.prepare(
      'INSERT INTO history_hourly (series, hour, slots) VALUES (?, ?, ?) ON CONFLICT (series, hour) DO UPDATE SET slots = excluded.slots',
    );
    this.hourlyRange = db.prepare('SELECT hour, slots FROM history_hourly WHERE series = ? AND hour >= ? AND hour <= ? ORDER BY hour');
    this.getMeta = db.prepare('SELECT value FROM history_meta WHERE key = ?').pluck();
    this.setMeta = db.prepare('INSERT INTO history_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    this.writeBatch = db.transaction((rows: HistoryRow[]) => {
      for (const r of rows) this.insert.run(this.idOf(r.entityId), r.ts, r.num ?? null, r.state ?? null);
    });
    this.flushRollup = db.transaction((scanned: number, rolled: number) => {
      for (const { series, hour, slots } of this.acc.values()) {
        const old = this.getHourly.get(series, hour) as Buffer | undefined;
        if (old) mergeSlots(slots, old);
        this.putHourly.run(series, hour, packSlots(slots));
      }
      this.setMeta.run('rollup_rowid', scanned);
      this.setMeta.run('rolled_until', rolled);
    });
    this.scanned = (this.getMeta.get('rollup_rowid') as number | undefined) ?? 0;
    this.pendingScan = this.scanned;
    this.rolled = (this.getMeta.get('rolled_until') as number | undefined) ?? 0;
  }

  private idOf(entityId: string): number {
    let id = this.ids.get(entityId);
    if (id === undefined) {
      this.addSeries.run(entityId);
      id = this.seriesId.get(entityId) as number;
      this.ids.set(entityId, id);
    }
    return id;
  }

  private known(entityId: string): number | undefined {
    return this.ids.get(entityId) ?? (this.seriesId.get(entityId) as number | undefined);
  }

  /** Write a batch in one transaction. */
  write(rows: HistoryRow[]): void {
    if (!rows.length) return;
    this.writeBatch(rows);
    this.stats.transactions++;
    this.stats.rows += rows.length;
  }

  /**
   * Summarise the numbers of every hour that ended (ROLLUP_GRACE_MS ago) into five-minute slots, reading at most
   * one slice of raw rows; returns true when it caught up (call again while it returns false).
   */
  rollUp(now = Date.now()): boolean {
    const upto = Math.floor((now - ROLLUP_GRACE_MS) / HOUR_MS) * HOUR_MS;
    if (upto <= this.rolled && !this.acc.size) return true;
    const rows = this.scanRaw.all(this.pendingScan, ROLLUP_SLICE) as Array<[number, number, number, number | null]>;
    let done = rows.length < ROLLUP_SLICE;
    for (const [id, series, ts, num] of rows) {
      // Rows are appended in time order: the first of an hour not yet over ends this pass.
      if (ts >= upto) {
        done = true;
        break;
      }
      this.pendingScan = id;
      if (num === null) continue;
      const hour = Math.floor(ts / HOUR_MS);
      const key = series * 4_194_304 + hour;
      let a = this.acc.get(key);
      if (!a) {
        a = { series, hour, slots: emptySlots() };
        this.acc.set(key, a);
      }
      addToSlot(a.slots, Math.floor((ts - hour * HOUR_MS) / ROLLUP_MS), num);
    }
    if (!done) return false;
    this.flushRollup(this.pendingScan, Math.max(upto, this.rolled));
    this.acc.clear();
    this.scanned = this.pendingScan;
    this.rolled = Math.max(upto, this.rolled);
    return true;
  }

  /** Bytes of the database's pages in use (what the budget counts). */
  usedBytes(): number {
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    return (pages - free) * pageSize;
  }

  /**
   * Keep history within its limits: summaries older than rollupMs and raw rows older than maxRawMs go; then, while
   * the database is over its budget, the oldest raw rows (not younger than minRawMs, and already summarised), and
   * only when none of those is left, the oldest summaries.
   */
  prune(now = Date.now()): PruneResult {
    const result: PruneResult = { raw: 0, rollups: 0 };
    const rollupCutoff = Math.floor((now - this.options.rollupMs) / HOUR_MS);
    result.rollups += this.deleteHourly(rollupCutoff, Number.POSITIVE_INFINITY);
    const rawFloor = now - this.options.minRawMs;
    if (this.options.maxRawMs !== undefined) result.raw += this.deleteRaw(Math.min(rawFloor, now - this.options.maxRawMs), Number.POSITIVE_INFINITY);
    let over = this.usedBytes() - this.options.budgetBytes;
    // Raw rows first, in slices sized to the excess (~60 bytes a row), measuring again after each.
    while (over > 0) {
      const gone = this.deleteRaw(rawFloor, Math.min(500_000, Math.max(2_000, Math.ceil(over / 60))));
      if (!gone) break;
      result.raw += gone;
      over = this.usedBytes() - this.options.budgetBytes;
    }
    while (over > 0) {
      const gone = this.deleteHourly(Number.POSITIVE_INFINITY, Math.min(100_000, Math.max(500, Math.ceil(over / 200))));
      if (!gone) break;
      result.rollups += gone;
      over = this.usedBytes() - this.options.budgetBytes;
    }
    this.stats.pruned += result.raw;
    this.stats.prunedRollups += result.rollups;
    return result;
  }

  /** Delete up to `limit` of the oldest raw rows older than `cutoff` (all of them when limit is infinite). */
  private deleteRaw(cutoff: number, limit: number): number {
    let total = 0;
    for (;;) {
      const slice = Math.min(limit - total, 200_000);
      if (slice <= 0) return total;
      const gone = this.pruneRaw.run({ upto: this.scanned, limit: slice, cutoff }).changes;
      total += gone;
      if (gone < slice) return total;
    }
  }

  private deleteHourly(cutoffHour: number, limit: number): number {
    let total = 0;
    for (;;) {
      const slice = Math.min(limit - total, 100_000);
      if (slice <= 0) return total;
      const gone = this.pruneHourly.run({ limit: slice, cutoff: Number.isFinite(cutoffHour) ? cutoffHour : Number.MAX_SAFE_INTEGER }).changes;
      total += gone;
      if (gone < slice) return total;
    }
  }

  /** How far back raw rows and summaries reach, and the budget. */
  reach(): HistoryReach {
    const raw = this.oldestRaw.get() as { ts: number } | undefined;
    const hour = this.oldestHourly.get() as number | undefined;
    return {
      rawSince: raw?.ts ?? null,
      rollupSince: hour === undefined ? null : hour * HOUR_MS,
      rolledUntil: this.rolled,
      usedBytes: this.usedBytes(),
      budgetBytes: this.options.budgetBytes,
      minRawMs: this.options.minRawMs,
      rollupMs: this.options.rollupMs,
    };
  }

  /** The rows of one entity in [since, until], downsampled to about `points` when there are more. */
  series(entityId: string, since: number, until: number, points: number): HistorySeries {
    const id = this.known(entityId);
    if (id === undefined) return { entityId, since, until, type: 'state', before: null, points: [], bucketMs: null, rows: 0, rawSince: null };
    // Only as many rows as decide raw or bucketed: a week of readings is not counted one by one.
    const { n, nums } = this.countRange.get(id, since, until, points + 1) as { n: number; nums: number };
    const prev = this.lastBefore.get(id, since) as RawRow | undefined;
    const rawSince = (this.firstRaw.get(id) as number | undefined) ?? null;
    // The part of the range older than the raw rows can only come from summaries.
    const olderThanRaw = rawSince === null ? until : Math.min(until, rawSince - 1);
    const hasOld =
      since <= olderThanRaw && this.rolled > since && this.hourlyRange.get(id, Math.floor(since / HOUR_MS), Math.floor(olderThanRaw / HOUR_MS)) !== undefined;
    const numeric = n > 0 ? nums === n : hasOld || (prev?.num !== null && prev?.num !== undefined);
    const base = { entityId, since, until, type: numeric ? ('number' as const) : ('state' as const), before: prev ? point(prev) : null, rawSince };
    if (n <= points && !hasOld) {
      const raw = (this.rawRange.all(id, since, until) as RawRow[]).map(point);
      return { ...base, points: raw, bucketMs: null, rows: raw.length };
    }
    const width = Math.max(1, Math.ceil((until - since + 1) / points));
    const rowsIn = (from: number, to: number) =>
      from > to ? [] : (this.numBuckets.all({ series: id, origin: since, since: from, until: to, width }) as Bucket[]);
    if (numeric) {
      let parts: Bucket[] = [];
      // Whole five-minute summaries inside the range (for wide buckets, or where no raw row is left); the rest,
      // the partial ones at its ends and the hours not yet summarised, from the rows.
      const first = Math.ceil(since / ROLLUP_MS);
      let last = Math.min(Math.floor((until + 1) / ROLLUP_MS), Math.floor(this.rolled / ROLLUP_MS)) - 1;
      if (width < 4 * ROLLUP_MS) last = Math.min(last, Math.floor((olderThanRaw + 1) / ROLLUP_MS) - 1);
      if (first <= last) {
        parts = [...rowsIn(since, first * ROLLUP_MS - 1), ...this.slotBuckets(id, first, last, since, width), ...rowsIn((last + 1) * ROLLUP_MS, until)];
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
    const buckets = this.stateBuckets.all({ series: id, since, until, width }) as Array<{ ts: number; state: string | null; n: number }>;
    return { ...base, points: buckets.map((b) => ({ ts: b.ts, value: b.state, count: b.n })), bucketMs: width, rows: buckets.reduce((t, b) => t + b.n, 0) };
  }

  /** The five-minute summaries firstSlot..lastSlot (slot = ts / ROLLUP_MS), folded into the chart's buckets. */
  private slotBuckets(id: number, firstSlot: number, lastSlot: number, origin: number, width: number): Bucket[] {
    const out: Bucket[] = [];
    const rows = this.hourlyRange.all(id, Math.floor(firstSlot / SLOTS), Math.floor(lastSlot / SLOTS)) as Array<{ hour: number; slots: Buffer }>;
    for (const { hour, slots } of rows) {
      for (let s = 0; s < SLOTS; s++) {
        const slot = hour * SLOTS + s;
        if (slot < firstSlot || slot > lastSlot) continue;
        const o = s * SLOT_BYTES;
        const n = slots.readUInt16LE(o);
        if (!n) continue;
        const start = slot * ROLLUP_MS;
        out.push({
          b: Math.floor((start - origin) / width),
          ts: start + ROLLUP_MS - 1,
          min: f32(slots.readFloatLE(o + 2)),
          max: f32(slots.readFloatLE(o + 6)),
          avg: slots.readFloatLE(o + 10),
          n,
        });
      }
    }
    return out;
  }

  /** The newest `limit` rows of one entity in [since, until], newest first (the agent's answers). */
  latest(entityId: string, since: number, until: number, limit: number): HistoryPoint[] {
    const id = this.known(entityId);
    if (id === undefined) return [];
    return (this.lastRows.all(id, since, until, limit) as RawRow[]).map(point);
  }

  /** Raw rows in the table (tests, the bench). */
  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM history_raw').get() as { n: number }).n;
  }

  /** Hourly summary rows (tests, the bench). */
  countRollups(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM history_hourly').get() as { n: number }).n;
  }
}

function emptySlots(): Acc {
  const a = new Float64Array(SLOTS * 4);
  for (let s = 0; s < SLOTS; s++) {
    a[s * 4 + 1] = Number.POSITIVE_INFINITY;
    a[s * 4 + 2] = Number.NEGATIVE_INFINITY;
  }
  return a;
}

function addToSlot(a: Acc, s: number, v: number): void {
  const o = s * 4;
  a[o]! += 1;
  if (v < a[o + 1]!) a[o + 1] = v;
  if (v > a[o + 2]!) a[o + 2] = v;
  a[o + 3]! += v;
}

/** Fold a stored hour into the running summaries (rows that came late, or an hour read in two passes). */
function mergeSlots(a: Acc, packed: Buffer): void {
  for (let s = 0; s < SLOTS; s++) {
    const p = s * SLOT_BYTES;
    const n = packed.readUInt16LE(p);
    if (!n) continue;
    const o = s * 4;
    a[o]! += n;
    a[o + 1] = Math.min(a[o + 1]!, packed.readFloatLE(p + 2));
    a[o + 2] = Math.max(a[o + 2]!, packed.readFloatLE(p + 6));
    a[o + 3]! += packed.readFloatLE(p + 10) * n;
  }
}

function packSlots(a: Acc): Buffer {
  const b = Buffer.alloc(SLOTS * SLOT_BYTES);
  for (let s = 0; s < SLOTS; s++) {
    const o = s * 4;
    const n = a[o]!;
    if (!n) continue;
    const p = s * SLOT_BYTES;
    // A slot of more than 65,535 readings (218 a second) keeps its mean and range; its count saturates.
    b.writeUInt16LE(Math.min(n, 65_535), p);
    b.writeFloatLE(a[o + 1]!, p + 2);
    b.writeFloatLE(a[o + 2]!, p + 6);
    b.writeFloatLE(a[o + 3]! / n, p + 10);
  }
  return b;
}

/** A stored 32-bit float as the decimal it was written from (7 significant digits: 21.37, not 21.3700008). */
function f32(x: number): number {
  return Number(x.toPrecision(7));
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

/** How far back history reaches, in words (the start banner, the agent's answers, the page). */
export function describeReach(reach: HistoryReach, now = Date.now()): string {
  const back = (ts: number | null) => {
    if (ts === null) return 'none yet';
    const hours = Math.max(0, (now - ts) / HOUR_MS);
    const span = hours >= 48 ? `${Math.floor(hours / 24)} days` : `${Math.floor(hours)} h`;
    return `${span} (since ${new Date(ts).toISOString().slice(0, 16).replace('T', ' ')} UTC)`;
  };
  const mib = (b: number) => Math.round(b / 2 ** 20);
  return (
    `raw changes ${back(reach.rawSince)}, five-minute summaries ${back(reach.rollupSince)}; ` +
    `database ${mib(reach.usedBytes)} of ${mib(reach.budgetBytes)} MiB budget (raw kept >= ${reach.minRawMs / HOUR_MS} h, summaries <= ${Math.round(reach.rollupMs / DAY_MS)} days)`
  );
}
