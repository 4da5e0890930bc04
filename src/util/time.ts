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

/** A time ago as people write it on every surface: `-24h`, `24h`, `90m`, `30s`, `7d`, `2w`. */
const AGO_RE = /^-?(\d{1,6})\s*(s|m|min|h|d|w)$/i;
const AGO_UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** The instant an offset back from `now` names ("-24h", "7d"), or undefined when the text is not one. */
export function agoInstant(raw: string, now = Date.now()): number | undefined {
  const m = AGO_RE.exec(raw.trim());
  return m ? now - Number(m[1]) * AGO_UNIT_MS[m[2].toLowerCase()] : undefined;
}

/**
 * A time filter (audit `since` / `until`) as the stored form
 * (`2025-01-31T18:00:00.000Z`), or an Error saying what is wrong: ISO 8601
 * with a four-digit year (a date, or a date and time with Z or an offset;
 * without one, UTC), or epoch milliseconds, from 2000 to 9999.
 */
export function parseTimeFilter(raw: string, now = Date.now()): string | Error {
  const text = raw.trim();
  const shown = JSON.stringify(text.slice(0, 60));
  const range = 'from 2000-01-01 to 9999-12-31';
  const ago = agoInstant(text, now);
  if (ago !== undefined) return ago >= TIME_FILTER_MIN ? new Date(ago).toISOString() : new Error(`must be a time ${range}, got ${shown}`);
  if (/^\d+$/.test(text)) {
    const ms = text.length > 16 ? Infinity : Number(text);
    if (ms < 1e11 && ms >= 1e8) return new Error(`must be epoch milliseconds; ${shown} looks like seconds (multiply by 1000)`);
    if (!(ms >= TIME_FILTER_MIN && ms <= TIME_FILTER_MAX))
      return new Error(`must be epoch milliseconds ${range} (${TIME_FILTER_MIN} to ${TIME_FILTER_MAX}), got ${shown}`);
    return new Date(ms).toISOString();
  }
  const m = ISO_RE.exec(text);
  if (!m) return new Error(`must be an ISO 8601 time such as 2025-01-31T18:00:00Z, epoch milliseconds, or a time ago such as -24h, 90m or 7d, got ${shown}`);
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
