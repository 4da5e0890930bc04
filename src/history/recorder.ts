// Feeds the history table from the state cache's change events. Rows wait in
// memory and go to SQLite in one transaction per batch (when `batchSize`
// rows are waiting or `flushMs` after the first), never one per message: a
// home of 2,000 chatty sensors costs a write per second, not 2,000.
// Once a minute it packs and summarises the five minutes that ended (HistoryStore.rollUp: a slice of rows per
// turn of the event loop), and every pruneEveryMs it keeps the database within its budget (HistoryStore.prune).
// Only live changes of an entity's main value are kept: a retained message
// is the broker's old copy with an unknown time, and an unchanged value adds
// nothing a chart or an answer would show.
import { type Entity, FRAME_KINDS } from '../devices/model.js';
import type { EntityState } from '../devices/state-cache.js';
import type { Logger } from '../log.js';
import type { HistoryRow, HistoryStore } from './store.js';

export interface ChangeSource {
  on(event: 'change', fn: (state: EntityState, entity: Entity) => void): unknown;
  off(event: 'change', fn: (state: EntityState, entity: Entity) => void): unknown;
}

export interface RecorderOptions {
  batchSize?: number;
  flushMs?: number;
  /** How often the database is brought within its budget. */
  pruneEveryMs?: number;
  /** How often the five minutes that ended are packed and summarised. */
  rollupEveryMs?: number;
  now?: () => number;
}

/** Events recorded per event entity: this many at once, and this many a second on average. */
export const EVENT_BURST = 20;
export const EVENT_RATE = 2;

export class HistoryRecorder {
  private pending: HistoryRow[] = [];
  private timer?: NodeJS.Timeout;
  private pruneTimer?: NodeJS.Timeout;
  private rollupTimer?: NodeJS.Timeout;
  private rolling = false;
  private closed = false;
  private last = new Map<string, string | number | null>();
  /** Per event entity: the tokens left (EVENT_BURST at most, EVENT_RATE a second back), and when they were counted. */
  private eventTokens = new Map<string, { tokens: number; at: number; dropped: number; saidAt?: number }>();
  private readonly batchSize: number;
  private readonly flushMs: number;
  private readonly now: () => number;
  private readonly onChange = (state: EntityState, entity: Entity) => this.record(state, entity);

  constructor(
    private readonly store: HistoryStore,
    private readonly source: ChangeSource,
    private readonly log: Logger,
    options: RecorderOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 1000;
    this.flushMs = options.flushMs ?? 1000;
    this.now = options.now ?? Date.now;
    source.on('change', this.onChange);
    this.maintain(true);
    this.pruneTimer = setInterval(() => this.maintain(true), options.pruneEveryMs ?? 10 * 60_000);
    this.pruneTimer.unref();
    this.rollupTimer = setInterval(() => this.maintain(false), options.rollupEveryMs ?? 60_000);
    this.rollupTimer.unref();
  }

  private record(state: EntityState, entity: Entity): void {
    if (FRAME_KINDS.has(entity.kind) || state.retained || state.value === undefined) return;
    const value = state.value;
    const key = typeof value === 'number' ? value : value === null ? null : String(value);
    // An event is an occurrence each time (the doorbell rang again), not a state that stayed the same; so a
    // device that floods events is held to a rate, or it would fill the budget and push out everyone's history.
    if (entity.kind === 'event' ? !this.eventAllowed(entity.id) : this.last.has(entity.id) && this.last.get(entity.id) === key) return;
    this.last.set(entity.id, key);
    this.pending.push(
      typeof key === 'number'
        ? { entityId: entity.id, ts: state.updatedAt ?? this.now(), num: key }
        : { entityId: entity.id, ts: state.updatedAt ?? this.now(), state: key },
    );
    if (this.pending.length >= this.batchSize) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Whether this event may be recorded now: a token bucket per entity (a doorbell rings a few times, not hundreds). */
  private eventAllowed(entityId: string): boolean {
    const now = this.now();
    let b = this.eventTokens.get(entityId);
    if (!b) this.eventTokens.set(entityId, (b = { tokens: EVENT_BURST, at: now, dropped: 0 }));
    b.tokens = Math.min(EVENT_BURST, b.tokens + ((now - b.at) / 1000) * EVENT_RATE);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return true;
    }
    b.dropped++;
    if (b.saidAt === undefined || now - b.saidAt >= 60_000) {
      b.saidAt = now;
      this.log.warn(
        { entity: entityId, dropped: b.dropped },
        `history: ${entityId} sends events faster than ${EVENT_RATE} a second; the excess is not recorded`,
      );
    }
    return false;
  }

  /** Write what is waiting, in one transaction. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const rows = this.pending;
    if (!rows.length) return;
    this.pending = [];
    try {
      this.store.write(rows);
    } catch (err) {
      // History is a convenience: a full disk must not stop the home; the rows are dropped, said once per batch.
      this.log.error({ err, rows: rows.length }, 'history: could not write a batch; those rows are lost');
    }
  }

  /** Pack and summarise what ended, a slice per turn of the event loop, then (when asked) prune to the budget. */
  private maintain(prune: boolean): void {
    if (this.rolling) return;
    this.rolling = true;
    const step = () => {
      if (this.closed) return;
      try {
        if (!this.store.rollUp(this.now())) {
          setImmediate(step);
          return;
        }
        if (prune) {
          const gone = this.store.prune(this.now());
          if (gone.raw || gone.rollups) this.log.debug({ pruned: gone.raw, prunedRollups: gone.rollups }, 'history: pruned to the budget');
        }
      } catch (err) {
        this.log.error({ err }, 'history: summarising or pruning failed');
      }
      this.rolling = false;
    };
    step();
  }

  /** Rows waiting for the next batch. */
  get waiting(): number {
    return this.pending.length;
  }

  close(): void {
    this.source.off('change', this.onChange);
    this.closed = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    if (this.rollupTimer) clearInterval(this.rollupTimer);
    this.flush();
  }
}
