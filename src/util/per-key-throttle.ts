// "Log this once a minute per topic": a line for the first occurrence of a
// key, then silence (counted) until the interval has passed. The map of keys is
// capped, so a publisher inventing topics cannot grow it without bound.

export class PerKeyThrottle {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly everyMs = 60_000,
    private readonly maxKeys = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** undefined: stay quiet this time; a number: log now, saying how many were kept quiet since the last line. */
  take(key: string): number | undefined {
    const now = this.now();
    const entry = this.last.get(key);
    if (entry && now - entry.at < this.everyMs) {
      entry.suppressed++;
      return undefined;
    }
    if (!entry && this.last.size >= this.maxKeys) this.last.clear();
    const suppressed = entry?.suppressed ?? 0;
    this.last.set(key, { at: now, suppressed: 0 });
    return suppressed;
  }
}
