// How long ago, for people and models.
export function formatAge(ms: number): string {
  if (ms < 1000) return 'just now';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(h / 24)} days ago`;
}

export function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

/** The earliest and latest instants a time filter may name: an audit log has nothing outside them. */
export const TIME_FILTER_MIN = Date.UTC(2000, 0, 1);
export const TIME_FILTER_MAX = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * A time filter (audit `since` / `until`) as the stored form
 * (`2025-01-31T18:00:00.000Z`), or an Error saying what is wrong: ISO 8601
 * with a four-digit year (a date, or a date and time with Z or an offset;
 * without one, UTC), or epoch milliseconds, from 2000 to 9999.
 */
export function parseTimeFilter(raw: string): string | Error {
  const text = raw.trim();
  const shown = JSON.stringify(text.slice(0, 60));
  const range = 'from 2000-01-01 to 9999-12-31';
  if (/^\d+$/.test(text)) {
    const ms = text.length > 16 ? Infinity : Number(text);
    if (ms < 1e11 && ms >= 1e8) return new Error(`must be epoch milliseconds; ${shown} looks like seconds (multiply by 1000)`);
    if (!(ms >= TIME_FILTER_MIN && ms <= TIME_FILTER_MAX))
      return new Error(`must be epoch milliseconds ${range} (${TIME_FILTER_MIN} to ${TIME_FILTER_MAX}), got ${shown}`);
    return new Date(ms).toISOString();
  }
  const m = ISO_RE.exec(text);
  if (!m) return new Error(`must be an ISO 8601 time such as 2025-01-31T18:00:00Z (or epoch milliseconds), got ${shown}`);
  const [, y, mo, d, h, mi, , zone] = m;
  const date = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (date.getUTCFullYear() !== Number(y) || date.getUTCMonth() !== Number(mo) - 1 || date.getUTCDate() !== Number(d))
    return new Error(`${shown} is not a date`);
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59)) return new Error(`${shown} is not a time of day`);
  const local = text.replace(' ', 'T');
  const withZone = h === undefined ? `${y}-${mo}-${d}T00:00:00Z` : zone ? local.replace(/([+-]\d{2})(\d{2})$/, '$1:$2') : `${local}Z`;
  const ms = Date.parse(withZone);
  if (!Number.isFinite(ms)) return new Error(`${shown} is not a valid ISO 8601 time`);
  if (ms < TIME_FILTER_MIN || ms > TIME_FILTER_MAX) return new Error(`must be a time ${range}, got ${shown}`);
  return new Date(ms).toISOString();
}
