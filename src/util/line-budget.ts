// Log lines about many things at once, bounded. Anything from the broker is bounded in work per message and per
// second, log lines included: a forged Zigbee2MQTT list renaming thousands of devices must not write thousands of
// lines. A batch (what one list or one rebuild changed) gets a line per thing for its first few things, then one
// summary line for the rest (its count and the first few ids); across batches a token bucket caps the lines
// (`burst` at once, then `perSecond`), and what it kept quiet is counted into the next summary. At most
// `burst + perSecond * seconds` lines, whatever comes.
import { TokenBucket } from './token-bucket.js';

export interface LineBudgetOptions {
  /** Things of one batch that get a line of their own; the rest share one summary line. */
  each?: number;
  /** Lines at once across batches. */
  burst?: number;
  /** Lines a second on average after the burst. */
  perSecond?: number;
  now?: () => number;
}

/** The things of a batch a summary line stands for, and how many were kept quiet before it (the bucket was empty). */
export interface Summary<T> {
  rest: readonly T[];
  /** Things of earlier batches that got no line at all. */
  unlogged: number;
}

export const LINE_BUDGET = { each: 10, burst: 30, perSecond: 1 } as const;

export class LineBudget {
  private readonly bucket: TokenBucket;
  private readonly each: number;
  private unlogged = 0;

  constructor(options: LineBudgetOptions = {}) {
    this.each = options.each ?? LINE_BUDGET.each;
    this.bucket = new TokenBucket(options.perSecond ?? LINE_BUDGET.perSecond, options.burst ?? LINE_BUDGET.burst, options.now);
  }

  /**
   * Log a batch: `one(thing)` writes a thing's own line, `summary` the line for the rest. A batch no bigger than
   * `each` gets a line per thing; a bigger one (or any batch after the bucket kept things quiet) the first `each`
   * less one, then the summary. Lines the bucket refuses are counted, never written.
   */
  batch<T>(things: readonly T[], one: (thing: T) => void, summary: (s: Summary<T>) => void): void {
    if (!things.length) return;
    const own = this.unlogged ? 0 : things.length <= this.each ? things.length : this.each - 1;
    let i = 0;
    for (; i < own; i++) {
      if (!this.bucket.take()) break;
      one(things[i]!);
    }
    const rest = things.slice(i);
    if (!rest.length) return;
    if (!this.bucket.take()) {
      this.unlogged += rest.length;
      return;
    }
    summary({ rest, unlogged: this.unlogged });
    this.unlogged = 0;
  }
}

/** The first few of a list, for a summary line: `a, b, c and 12 more`. */
export function firstFew(ids: readonly string[], few = 5): string {
  const shown = ids.slice(0, few).join(', ');
  return ids.length > few ? `${shown} and ${ids.length - few} more` : shown;
}

/** What a LineTrickle kept quiet: how many lines, and the keys (topics) of the first few. */
export interface Quieted {
  count: number;
  first: readonly string[];
}

/**
 * Lines about things that come one message at a time, on any number of keys (a bad discovery config per topic):
 * a line per key is not a bound when a publisher invents keys. The first `burst` lines are written; once the
 * bucket is dry, the rest are counted (with their first few keys) and said in one summary line as soon as the
 * bucket allows, by a timer, since a burst may end with no further message; then at most `perSecond` lines a
 * second, each a line or a summary. At most `burst + perSecond * seconds` lines, whatever comes.
 */
export class LineTrickle {
  private readonly bucket: TokenBucket;
  private readonly intervalMs: number;
  private quiet: { count: number; first: string[] } | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly summary: (q: Quieted) => void,
    options: Omit<LineBudgetOptions, 'each'> = {},
  ) {
    const perSecond = options.perSecond ?? LINE_BUDGET.perSecond;
    this.bucket = new TokenBucket(perSecond, options.burst ?? LINE_BUDGET.burst, options.now);
    this.intervalMs = 1000 / perSecond;
  }

  /** Write a key's line if the budget allows (and nothing waits to be summed up before it); else count it. */
  line(key: string, write: () => void): void {
    if (!this.quiet && this.bucket.take()) return write();
    this.quiet ??= { count: 0, first: [] };
    this.quiet.count++;
    if (this.quiet.first.length < 5) this.quiet.first.push(key);
    this.schedule();
  }

  /** The summary of what was kept quiet, now (when stopping: it is the last line). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.sayQuiet();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.bucket.take()) this.sayQuiet();
      else this.schedule();
    }, this.intervalMs);
    this.timer.unref?.();
  }

  private sayQuiet(): void {
    const quiet = this.quiet;
    if (!quiet) return;
    this.quiet = undefined;
    this.summary(quiet);
  }
}

/** The keys a summary names: `a, b, c and 2,995 more`. */
export function quietKeys(q: Quieted): string {
  const shown = q.first.join(', ');
  return q.count > q.first.length ? `${shown} and ${q.count - q.first.length} more` : shown;
}
