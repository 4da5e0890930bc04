// Entity history (migration 0013) kept within a disk budget. The recorder appends rows to history_recent; every
// five minutes a pass (rollUp) packs each entity's rows into a block of raw changes (block.ts) and folds the
// numbers into five-minute summaries packed per entity and hour. Blocks and summaries are appended in time order,
// so the oldest are the lowest rowids: when the database is over its budget the oldest raw blocks go first (never
// those younger than minRawMs), then the oldest summaries. Reads downsample a long range into buckets
// (min/max/avg for numbers, the last state for everything else), from the summaries where the buckets are wide,
// so a long chart is a few hundred points whatever the sensor's rate. Statements are prepared once; every write
// is one synchronous transaction.
import type { Db } from '../db/database.js';
import { decodeBlock, encodeBlock, type Value } from './block.js';

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
/** Five minutes are packed this long after they end, so that rows still in the recorder's batch are in them. */
export const ROLLUP_GRACE_MS = 60_000;
/**
 * Recent rows a pass reads, packs and deletes per call, in one transaction (five minutes of a very busy home are
 * 600,000: a slice at a time, the event loop free between). Larger slices make larger blocks (fewer bytes a
 * change) and longer stalls: 50,000 rows of 2,000 sensors are blocks of 25 changes, ~5 bytes a change, and
 * ~50 ms of work.
 */
const PASS_SLICE = 50_000;
const PASS_MAX = PASS_SLICE;

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
  /** The oldest raw change kept, or null when there is none. */
  rawSince: number | null;
  /** The oldest five-minute summary's start, or null. */
  rollupSince: number | null;
  /** Summaries are complete before this (later changes are read from the raw rows). */
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
  /** Raw changes deleted by pruning. */
  pruned: number;
  /** Raw blocks written by the passes. */
  blocks: number;
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

/** What a pass has read and not yet written: each entity's rows in the order they came. */
interface Pass {
  cursor: number;
  rows: number;
  series: Map<number, { ts: number[]; vals: Value[] }>;
}

interface Readings {
  ts: number[];
  vals: Value[];
}

export class HistoryStore {
  readonly options: HistoryOptions;
  private readonly ids = new Map<string, number>();
  private readonly insert;
  private readonly addSeries;
  private readonly seriesId;
  private readonly recentOfSeries;
  private readonly blockRange;
  private readonly blockBefore;
  private readonly blockFirst;
  private readonly oldestRecent;
  private readonly oldestBlock;
  private readonly oldestHourly;
  private readonly pruneBlocks;
  private readonly pruneHourly;
  private readonly scanRecent;
  private readonly firstRecent;
  private readonly deleteRecent;
  private readonly putBlock;
  private readonly getHourly;
  private readonly putHourly;
  private readonly hourlyRange;
  private readonly hourlyAny;
  private readonly getMeta;
  private readonly setMeta;
  private readonly writeBatch;
  private readonly writePass;
  private pass?: Pass;
  /** Summaries are complete before this time (ms). */
  private rolled: number;
  readonly stats: HistoryStats = { transactions: 0, rows: 0, pruned: 0, prunedRollups: 0, blocks: 0 };

  constructor(
    private readonly db: Db,
    options: Partial<HistoryOptions> = {},
  ) {
    this.options = { ...historyOptions(), ...options };
    this.insert = db.prepare('INSERT INTO history_recent (series, ts, num, state) VALUES (?, ?, ?, ?)');
    this.addSeries = db.prepare('INSERT OR IGNORE INTO history_series (entity_id) VALUES (?)');
    this.seriesId = db.prepare('SELECT id FROM history_series WHERE entity_id = ?').pluck();
    // history_recent holds the last few minutes and has no index: one scan per read gives an entity's rows there.
    this.recentOfSeries = db.prepare('SELECT ts, num, state FROM history_recent WHERE series = ? ORDER BY ts, rowid').raw();
    // A block never spans more than an hour, so the ones that reach into [a, b] start after a - 1 h.
    this.blockRange = db.prepare('SELECT t0, n, data FROM history_blocks WHERE series = ? AND t0 >= ? AND t0 <= ? AND t1 >= ? ORDER BY t0, rowid').raw();
    this.blockBefore = db.prepare('SELECT t0, n, data FROM history_blocks WHERE series = ? AND t0 < ? ORDER BY t0 DESC, rowid DESC LIMIT 1').raw();
    this.blockFirst = db.prepare('SELECT t0 FROM history_blocks WHERE series = ? ORDER BY t0 LIMIT 1').pluck();
    this.oldestRecent = db.prepare('SELECT ts FROM history_recent ORDER BY rowid LIMIT 1').pluck();
    this.oldestBlock = db.prepare('SELECT t0 FROM history_blocks ORDER BY rowid LIMIT 1').pluck();
    this.oldestHourly = db.prepare('SELECT hour FROM history_hourly ORDER BY rowid LIMIT 1').pluck();
    // The oldest go first: a slice from the front (rowid order is time order) of what is old enough.
    this.pruneBlocks = db
      .prepare('DELETE FROM history_blocks WHERE rowid IN (SELECT rowid FROM history_blocks ORDER BY rowid LIMIT @limit) AND t1 < @cutoff RETURNING n')
      .pluck();
    this.pruneHourly = db.prepare(
      'DELETE FROM history_hourly WHERE rowid IN (SELECT rowid FROM history_hourly ORDER BY rowid LIMIT @limit) AND hour < @cutoff',
    );
    this.scanRecent = db.prepare('SELECT rowid, series, ts, num, state FROM history_recent WHERE rowid > ? ORDER BY rowid LIMIT ?').raw();
    this.firstRecent = db.prepare('SELECT ts FROM history_recent ORDER BY rowid LIMIT 1').pluck();
    this.deleteRecent = db.prepare('DELETE FROM history_recent WHERE rowid <= ?');
    this.putBlock = db.prepare('INSERT INTO history_blocks (series, t0, t1, n, data) VALUES (?, ?, ?, ?, ?)');
    this.getHourly = db.prepare('SELECT slots FROM history_hourly WHERE series = ? AND hour = ?').pluck();
    this.putHourly = db.prepare(
      'INSERT INTO history_hourly (series, hour, slots) VALUES (?, ?, ?) ON CONFLICT (series, hour) DO UPDATE SET slots = excluded.slots',
    );
    this.hourlyRange = db.prepare('SELECT hour, slots FROM history_hourly WHERE series = ? AND hour >= ? AND hour <= ? ORDER BY hour');
    this.hourlyAny = db.prepare('SELECT 1 FROM history_hourly WHERE series = ? AND hour >= ? AND hour <= ? LIMIT 1').pluck();
    this.getMeta = db.prepare('SELECT value FROM history_meta WHERE key = ?').pluck();
    this.setMeta = db.prepare('INSERT INTO history_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    this.writeBatch = db.transaction((rows: HistoryRow[]) => {
      for (const r of rows) this.insert.run(this.idOf(r.entityId), r.ts, r.num ?? null, r.state ?? null);
    });
    this.writePass = db.transaction((pass: Pass, rolled: number) => this.packPass(pass, rolled));
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
   * Pack the recent rows of every five minutes that ended (ROLLUP_GRACE_MS ago) into blocks and summaries,
   * reading one slice of rows per call; returns true when it caught up (call again while it returns false).
   */
  rollUp(now = Date.now()): boolean {
    const upto = Math.floor((now - ROLLUP_GRACE_MS) / ROLLUP_MS) * ROLLUP_MS;
    if (!this.pass) {
      const first = this.firstRecent.get() as number | undefined;
      if (first === undefined || first >= upto) {
        if (upto > this.rolled) this.markRolled(upto);
        return true;
      }
      this.pass = { cursor: 0, rows: 0, series: new Map() };
    }
    const pass = this.pass;
    const rows = this.scanRecent.all(pass.cursor, PASS_SLICE) as Array<[number, number, number, number | null, string | null]>;
    let done = rows.length < PASS_SLICE;
    for (const [id, series, ts, num, state] of rows) {
      // Rows are appended in time order: the first of five minutes not yet over ends this pass.
      if (ts >= upto) {
        done = true;
        break;
      }
      pass.cursor = id;
      pass.rows++;
      let s = pass.series.get(series);
      if (!s) {
        s = { ts: [], vals: [] };
        pass.series.set(series, s);
      }
      s.ts.push(ts);
      s.vals.push(num ?? state);
    }
    if (!done && pass.rows < PASS_MAX) return false;
    this.writePass(pass, done ? Math.max(upto, this.rolled) : this.rolled);
    this.pass = undefined;
    if (done) this.rolled = Math.max(upto, this.rolled);
    return done;
  }

  private markRolled(upto: number): void {
    this.setMeta.run('rolled_until', upto);
    this.rolled = upto;
  }

  /** One transaction: the pass's blocks, its summaries merged into the hours' rows, and its rows deleted. */
  private packPass(pass: Pass, rolled: number): void {
    const blocks: Array<{ series: number; ts: number[]; vals: Value[] }> = [];
    for (const [series, { ts, vals }] of pass.series) {
      const order = sortedOrder(ts);
      const hours = new Map<number, Acc>();
      let i = 0;
      while (i < order.length) {
        // One block per hour at most, so that a range's blocks are found from its start less an hour.
        const hour = Math.floor(ts[order[i]!]! / HOUR_MS);
        const block = { series, ts: [] as number[], vals: [] as Value[] };
        while (i < order.length && Math.floor(ts[order[i]!]! / HOUR_MS) === hour) {
          const k = order[i++]!;
          const v = vals[k]!;
          block.ts.push(ts[k]!);
          block.vals.push(v);
          if (typeof v === 'number' && Number.isFinite(v)) {
            let acc = hours.get(hour);
            if (!acc) hours.set(hour, (acc = emptySlots()));
            addToSlot(acc, Math.floor((ts[k]! - hour * HOUR_MS) / ROLLUP_MS), v);
          }
        }
        blocks.push(block);
      }
      for (const [hour, acc] of hours) {
        const old = this.getHourly.get(series, hour) as Buffer | undefined;
        if (old) mergeSlots(acc, old);
        this.putHourly.run(series, hour, packSlots(acc));
      }
    }
    // Written oldest first whatever the entity, so that pruning from the front takes the oldest changes.
    blocks.sort((x, y) => x.ts[0]! - y.ts[0]!);
    for (const b of blocks) this.putBlock.run(b.series, b.ts[0], b.ts.at(-1), b.ts.length, encodeBlock(b.ts, b.vals));
    this.stats.blocks += blocks.length;
    this.deleteRecent.run(pass.cursor);
    this.setMeta.run('rolled_until', rolled);
  }

  /** Bytes of the database's pages in use (what the budget counts). */
  usedBytes(): number {
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    return (pages - free) * pageSize;
  }

  /**
   * Keep history within its limits: summaries older than rollupMs and raw changes older than maxRawMs go; then,
   * while the database is over its budget, the oldest raw blocks (not younger than minRawMs), and only when none
   * of those is left, the oldest summaries. Recent rows not yet packed stay.
   */
  prune(now = Date.now()): PruneResult {
    const result: PruneResult = { raw: 0, rollups: 0 };
    const rollupCutoff = Math.floor((now - this.options.rollupMs) / HOUR_MS);
    result.rollups += this.deleteHourly(rollupCutoff, Number.POSITIVE_INFINITY);
    const rawFloor = now - this.options.minRawMs;
    if (this.options.maxRawMs !== undefined) result.raw += this.deleteBlocks(Math.min(rawFloor, now - this.options.maxRawMs), Number.POSITIVE_INFINITY).changes;
    let over = this.usedBytes() - this.options.budgetBytes;
    // Raw blocks first, in slices sized to the excess, measuring again after each.
    while (over > 0) {
      const gone = this.deleteBlocks(rawFloor, Math.min(200_000, Math.max(200, Math.ceil(over / 100))));
      if (!gone.blocks) break;
      result.raw += gone.changes;
      over = this.usedBytes() - this.options.budgetBytes;
    }
    while (over > 0) {
      const gone = this.deleteHourly(Number.POSITIVE_INFINITY, Math.min(100_000, Math.max(200, Math.ceil(over / 200))));
      if (!gone) break;
      result.rollups += gone;
      over = this.usedBytes() - this.options.budgetBytes;
    }
    this.stats.pruned += result.raw;
    this.stats.prunedRollups += result.rollups;
    return result;
  }

  /** Delete up to `limit` of the oldest blocks that end before `cutoff`: how many blocks and changes went. */
  private deleteBlocks(cutoff: number, limit: number): { blocks: number; changes: number } {
    const gone = { blocks: 0, changes: 0 };
    for (;;) {
      const slice = Math.min(limit - gone.blocks, 20_000);
      if (slice <= 0) return gone;
      const ns = this.pruneBlocks.all({ limit: slice, cutoff }) as number[];
      gone.blocks += ns.length;
      for (const n of ns) gone.changes += n;
      if (ns.length < slice) return gone;
    }
  }

  private deleteHourly(cutoffHour: number, limit: number): number {
    let total = 0;
    for (;;) {
      const slice = Math.min(limit - total, 20_000);
      if (slice <= 0) return total;
      const gone = this.pruneHourly.run({ limit: slice, cutoff: Number.isFinite(cutoffHour) ? cutoffHour : Number.MAX_SAFE_INTEGER }).changes;
      total += gone;
      if (gone < slice) return total;
    }
  }

  /** How far back raw changes and summaries reach, and the budget. */
  reach(): HistoryReach {
    const block = this.oldestBlock.get() as number | undefined;
    const recent = this.oldestRecent.get() as number | undefined;
    const hour = this.oldestHourly.get() as number | undefined;
    return {
      rawSince: block ?? recent ?? null,
      rollupSince: hour === undefined ? null : hour * HOUR_MS,
      rolledUntil: this.rolled,
      usedBytes: this.usedBytes(),
      budgetBytes: this.options.budgetBytes,
      minRawMs: this.options.minRawMs,
      rollupMs: this.options.rollupMs,
    };
  }

  /** One entity's rows not yet packed, in time order (one scan of history_recent). */
  private recentOf(id: number): Readings {
    const out: Readings = { ts: [], vals: [] };
    for (const [t, num, state] of this.recentOfSeries.all(id) as Array<[number, number | null, string | null]>) {
      out.ts.push(t);
      out.vals.push(num ?? state);
    }
    return out;
  }

  /** One entity's raw changes in [a, b], in time order: the packed blocks, then the recent rows. */
  private readings(id: number, a: number, b: number, recent: Readings): Readings {
    const out: Readings = { ts: [], vals: [] };
    if (a > b) return out;
    let sorted = true;
    for (const [t0, n, data] of this.blockRange.all(id, a - HOUR_MS, b, a) as Array<[number, number, Buffer]>) {
      const block = decodeBlock(t0, n, data);
      for (let k = 0; k < n; k++) {
        const t = block.ts[k]!;
        if (t < a || t > b) continue;
        if (out.ts.length && t < out.ts[out.ts.length - 1]!) sorted = false;
        out.ts.push(t);
        out.vals.push(block.vals[k]!);
      }
    }
    for (let k = 0; k < recent.ts.length; k++) {
      const t = recent.ts[k]!;
      if (t < a || t > b) continue;
      if (out.ts.length && t < out.ts[out.ts.length - 1]!) sorted = false;
      out.ts.push(t);
      out.vals.push(recent.vals[k]!);
    }
    if (sorted) return out;
    // Late rows packed in a later block: put them in their place.
    const order = sortedOrder(out.ts);
    return { ts: order.map((k) => out.ts[k]!), vals: order.map((k) => out.vals[k]!) };
  }

  /** The last change of one entity before `ts`, or undefined. */
  private lastBefore(id: number, ts: number, recent: Readings): HistoryPoint | undefined {
    let best: HistoryPoint | undefined;
    for (let k = recent.ts.length - 1; k >= 0 && !best; k--) if (recent.ts[k]! < ts) best = { ts: recent.ts[k]!, value: recent.vals[k]! };
    const block = this.blockBefore.get(id, ts) as [number, number, Buffer] | undefined;
    if (block) {
      const { ts: times, vals } = decodeBlock(block[0], block[1], block[2]);
      for (let k = times.length - 1; k >= 0; k--) {
        if (times[k]! < ts) {
          if (!best || times[k]! > best.ts) best = { ts: times[k]!, value: vals[k]! };
          break;
        }
      }
    }
    return best;
  }

  /** The oldest raw change kept of one entity, or null. */
  private firstRaw(id: number, recent: Readings): number | null {
    const block = this.blockFirst.get(id) as number | undefined;
    const first = recent.ts[0];
    if (block === undefined) return first ?? null;
    return first === undefined ? block : Math.min(block, first);
  }

  /** The changes of one entity in [since, until], downsampled to about `points` when there are more. */
  series(entityId: string, since: number, until: number, points: number): HistorySeries {
    const id = this.known(entityId);
    if (id === undefined) return { entityId, since, until, type: 'state', before: null, points: [], bucketMs: null, rows: 0, rawSince: null };
    const recent = this.recentOf(id);
    const rawSince = this.firstRaw(id, recent);
    const prev = this.lastBefore(id, since, recent);
    const width = Math.max(1, Math.ceil((until - since + 1) / points));
    // The five-minute summaries to read: whole ones inside the range that are complete, all of them where the
    // chart's buckets are wide, only those older than the raw changes otherwise. The rest comes from the changes.
    const olderThanRaw = rawSince === null ? until : Math.min(until, rawSince - 1);
    const first = Math.ceil(since / ROLLUP_MS);
    let last = Math.min(Math.floor((until + 1) / ROLLUP_MS), Math.floor(this.rolled / ROLLUP_MS)) - 1;
    if (width < 4 * ROLLUP_MS) last = Math.min(last, Math.floor((olderThanRaw + 1) / ROLLUP_MS) - 1);
    const useSlots = first <= last && this.hourlyAny.get(id, Math.floor(first / SLOTS), Math.floor(last / SLOTS)) !== undefined;
    const base = { entityId, since, until, before: prev ?? null, rawSince };
    if (useSlots) {
      const parts = [
        ...this.numberBuckets(this.readings(id, since, first * ROLLUP_MS - 1, recent), since, width),
        ...this.slotBuckets(id, first, last, since, width),
        ...this.numberBuckets(this.readings(id, (last + 1) * ROLLUP_MS, until, recent), since, width),
      ];
      return { ...base, type: 'number', ...foldBuckets(parts, width) };
    }
    const raw = this.readings(id, since, until, recent);
    const n = raw.ts.length;
    let numeric = n > 0;
    for (const v of raw.vals) if (typeof v !== 'number') numeric = false;
    if (!n) numeric = typeof prev?.value === 'number';
    const type = numeric ? ('number' as const) : ('state' as const);
    if (n <= points) return { ...base, type, points: raw.ts.map((ts, k) => ({ ts, value: raw.vals[k]! })), bucketMs: null, rows: n };
    if (numeric) return { ...base, type, ...foldBuckets(this.numberBuckets(raw, since, width), width) };
    // Each bucket shows its newest state.
    const buckets = new Map<number, { ts: number; value: Value; n: number }>();
    for (let k = 0; k < n; k++) {
      const b = Math.floor((raw.ts[k]! - since) / width);
      const o = buckets.get(b);
      if (!o) buckets.set(b, { ts: raw.ts[k]!, value: raw.vals[k]!, n: 1 });
      else {
        o.n++;
        if (raw.ts[k]! >= o.ts) Object.assign(o, { ts: raw.ts[k]!, value: raw.vals[k]! });
      }
    }
    const ordered = [...buckets.entries()].sort((x, y) => x[0] - y[0]).map(([, o]) => o);
    return { ...base, type, points: ordered.map((o) => ({ ts: o.ts, value: o.value, count: o.n })), bucketMs: width, rows: n };
  }

  /** Changes folded into the chart's buckets (numbers only). */
  private numberBuckets(raw: Readings, origin: number, width: number): Bucket[] {
    const out = new Map<number, Bucket>();
    for (let k = 0; k < raw.ts.length; k++) {
      const v = raw.vals[k];
      if (typeof v !== 'number') continue;
      const t = raw.ts[k]!;
      const b = Math.floor((t - origin) / width);
      const o = out.get(b);
      if (!o) out.set(b, { b, ts: t, min: v, max: v, avg: v, n: 1 });
      else {
        o.avg = (o.avg * o.n + v) / (o.n + 1);
        o.n++;
        if (v < o.min) o.min = v;
        if (v > o.max) o.max = v;
        if (t > o.ts) o.ts = t;
      }
    }
    return [...out.values()];
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

  /** The newest `limit` changes of one entity in [since, until], newest first (the agent's answers). */
  latest(entityId: string, since: number, until: number, limit: number): HistoryPoint[] {
    const id = this.known(entityId);
    if (id === undefined) return [];
    const raw = this.readings(id, since, until, this.recentOf(id));
    const out: HistoryPoint[] = [];
    for (let k = raw.ts.length - 1; k >= 0 && out.length < limit; k--) out.push({ ts: raw.ts[k]!, value: raw.vals[k]! });
    return out;
  }

  /** Raw changes kept, packed or recent (tests, the bench). */
  count(): number {
    const packed = (this.db.prepare('SELECT coalesce(sum(n), 0) AS n FROM history_blocks').get() as { n: number }).n;
    return packed + (this.db.prepare('SELECT count(*) AS n FROM history_recent').get() as { n: number }).n;
  }

  /** Hourly summary rows (tests, the bench). */
  countRollups(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM history_hourly').get() as { n: number }).n;
  }
}

/** Indexes of `ts` in time order, ties in the order they came. */
function sortedOrder(ts: readonly number[]): number[] {
  const order = ts.map((_, k) => k);
  let sorted = true;
  for (let k = 1; k < ts.length; k++) if (ts[k]! < ts[k - 1]!) sorted = false;
  return sorted ? order : order.sort((x, y) => ts[x]! - ts[y]! || x - y);
}

function foldBuckets(parts: Bucket[], width: number): { points: HistoryPoint[]; bucketMs: number; rows: number } {
  const merged = new Map<number, { ts: number; min: number; max: number; sum: number; n: number }>();
  for (const x of parts) {
    const o = merged.get(x.b);
    if (!o) merged.set(x.b, { ts: x.ts, min: x.min, max: x.max, sum: x.avg * x.n, n: x.n });
    else Object.assign(o, { ts: Math.max(o.ts, x.ts), min: Math.min(o.min, x.min), max: Math.max(o.max, x.max), sum: o.sum + x.avg * x.n, n: o.n + x.n });
  }
  const buckets = [...merged.entries()].sort((x, y) => x[0] - y[0]).map(([, o]) => o);
  return {
    points: buckets.map((o) => ({ ts: o.ts, value: round(o.sum / o.n), min: o.min, max: o.max, count: o.n })),
    bucketMs: width,
    rows: buckets.reduce((t, o) => t + o.n, 0),
  };
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
  const mib = (b: number) => (b < 10 * 2 ** 20 ? (b / 2 ** 20).toFixed(1) : String(Math.round(b / 2 ** 20)));
  return (
    `raw changes ${back(reach.rawSince)}, five-minute summaries ${back(reach.rollupSince)}; ` +
    `database ${mib(reach.usedBytes)} of ${mib(reach.budgetBytes)} MiB budget (raw kept >= ${reach.minRawMs / HOUR_MS} h, summaries <= ${Math.round(reach.rollupMs / DAY_MS)} days)`
  );
}
