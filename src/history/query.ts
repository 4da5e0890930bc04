// A history range as the API and the agent tool take it: `since` and `until`
// as ISO 8601 times, epoch milliseconds, or an offset back from now (`-24h`,
// `90m`, `7d`), and how many points to draw. Wrong input is an error naming
// the field and what it should be.
import { agoInstant, parseTimeFilter } from '../util/time.js';
import { MAX_POINTS } from './store.js';

export const DEFAULT_POINTS = 500;
export const DEFAULT_RANGE_MS = 24 * 3_600_000;

export class HistoryRangeError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'HistoryRangeError';
  }
}

export interface HistoryRange {
  since: number;
  until: number;
  points: number;
}

/** An instant from the caller's words, or a HistoryRangeError naming the field. */
export function parseInstant(field: string, raw: string, now: number): number {
  const text = raw.trim();
  if (text === 'now') return now;
  const ago = agoInstant(text, now);
  if (ago !== undefined) return ago;
  const parsed = parseTimeFilter(text, now);
  if (parsed instanceof Error) throw new HistoryRangeError(field, parsed.message);
  return Date.parse(parsed);
}

export function parseRange(input: { since?: string | null; until?: string | null; points?: string | number | null }, now = Date.now()): HistoryRange {
  const until = input.until ? parseInstant('until', input.until, now) : now;
  const since = input.since ? parseInstant('since', input.since, now) : until - DEFAULT_RANGE_MS;
  if (since >= until)
    throw new HistoryRangeError('since', `must be before until (${new Date(since).toISOString()} is not before ${new Date(until).toISOString()})`);
  let points = DEFAULT_POINTS;
  if (input.points !== undefined && input.points !== null && input.points !== '') {
    const n = typeof input.points === 'number' ? input.points : /^\d{1,6}$/.test(input.points.trim()) ? Number(input.points) : NaN;
    if (!Number.isInteger(n) || n < 2 || n > MAX_POINTS)
      throw new HistoryRangeError('points', `must be a whole number from 2 to ${MAX_POINTS}, got ${JSON.stringify(String(input.points).slice(0, 40))}`);
    points = n;
  }
  return { since, until, points };
}
