// The agent's view of an entity's history (the get_history tool), read from
// the same table as the page's charts: for numbers the range's low, high and
// average with when they happened and a few samples; for states the changes,
// newest first, so "when did the front door last open?" is its first line.
import type { Entity } from '../devices/model.js';
import { HistoryRangeError, parseRange } from '../history/query.js';
import { describeReach, type HistoryPoint, type HistoryStore } from '../history/store.js';
import { formatAge } from '../util/time.js';
import { deviceWord, quoted } from './device-text.js';
import type { ToolResultObject } from './types.js';

const MAX_CHANGES = 20;
const SAMPLES = 12;

function when(ts: number, now: number): string {
  return `${new Date(ts).toISOString().slice(0, 16).replace('T', ' ')} UTC (${formatAge(now - ts)})`;
}

function shown(entity: Entity, value: HistoryPoint['value']): string {
  if (value === null) return 'unknown';
  if (typeof value === 'number') return `${value}${entity.unit ? ` ${deviceWord(entity.unit, 16)}` : ''}`;
  return /^(on|off|open|closed|opening|closing|stopped|locked|unlocked|jammed)$/.test(value) ? value : quoted(value, 60);
}

/** One point of the answer: an ISO time and the value then. */
export interface HistoryAnswerPoint {
  at: string;
  value: HistoryPoint['value'];
}

/**
 * What the answer's text says, as data (MCP's structuredContent): the range, how many changes or readings it holds,
 * the changes shown (newest first) or the numbers' low, high, average, latest and samples (oldest first).
 */
export interface HistoryAnswerData {
  entity: string;
  since: string;
  until: string;
  unit: string | null;
  /** 'state' (changes), 'number' (readings), or null when nothing was recorded in the range. */
  type: 'state' | 'number' | null;
  count: number;
  changes: HistoryAnswerPoint[];
  notShown: number;
  samples: HistoryAnswerPoint[];
  low: HistoryAnswerPoint | null;
  high: HistoryAnswerPoint | null;
  average: number | null;
  latest: HistoryAnswerPoint | null;
  /** With no change in the range: the value in force since before it. */
  before: HistoryAnswerPoint | null;
}

const point = (p: HistoryPoint): HistoryAnswerPoint => ({ at: new Date(p.ts).toISOString(), value: p.value });

export function historyAnswer(store: HistoryStore, entity: Entity, args: Record<string, unknown>, now = Date.now()): ToolResultObject {
  let range: ReturnType<typeof parseRange>;
  try {
    range = parseRange(
      { since: typeof args.since === 'string' ? args.since : undefined, until: typeof args.until === 'string' ? args.until : undefined, points: SAMPLES * 4 },
      now,
    );
  } catch (err) {
    if (err instanceof HistoryRangeError) return { text: `invalid arguments: ${err.message}`, isError: true };
    throw err;
  }
  const { since, until } = range;
  const head = `${quoted(entity.name)} (${entity.id}) from ${when(since, now)} to ${when(until, now)}`;
  const data: HistoryAnswerData = {
    entity: entity.id,
    since: new Date(since).toISOString(),
    until: new Date(until).toISOString(),
    unit: entity.unit ?? null,
    type: null,
    count: 0,
    changes: [],
    notShown: 0,
    samples: [],
    low: null,
    high: null,
    average: null,
    latest: null,
    before: null,
  };
  const series = store.series(entity.id, since, until, SAMPLES * 4);
  if (!series.rows) {
    const before = series.before ? ` It was ${shown(entity, series.before.value)} since ${when(series.before.ts, now)}.` : '';
    return {
      text: `${head}: no changes recorded.${before} (History keeps ${describeReach(store.reach(), now)}.)`,
      details: { entity: entity.id, rows: 0, history: { ...data, before: series.before ? point(series.before) : null } },
    };
  }
  if (series.type === 'number') {
    const raw = store.latest(entity.id, since, until, 100_000);
    let lo = raw[0],
      hi = raw[0],
      sum = 0;
    for (const p of raw) {
      if ((p.value as number) < (lo.value as number)) lo = p;
      if ((p.value as number) > (hi.value as number)) hi = p;
      sum += p.value as number;
    }
    const step = Math.max(1, Math.ceil(raw.length / SAMPLES));
    const sampled = raw.filter((_, i) => i % step === 0).reverse();
    const samples = sampled.map((p) => `${when(p.ts, now)}: ${shown(entity, p.value)}`);
    const average = Math.round((sum / raw.length) * 100) / 100;
    return {
      text:
        `${head}: ${raw.length} readings; low ${shown(entity, lo.value)} at ${when(lo.ts, now)}, high ${shown(entity, hi.value)} at ${when(hi.ts, now)}, ` +
        `average ${shown(entity, average)}; latest ${shown(entity, raw[0].value)} at ${when(raw[0].ts, now)}.\nSamples, oldest first:\n${samples.join('\n')}`,
      details: {
        entity: entity.id,
        rows: raw.length,
        history: { ...data, type: 'number', count: raw.length, samples: sampled.map(point), low: point(lo), high: point(hi), average, latest: point(raw[0]) },
      },
    };
  }
  const changes = store.latest(entity.id, since, until, MAX_CHANGES);
  const lines = changes.map((p) => `${when(p.ts, now)}: ${shown(entity, p.value)}`);
  const more = series.rows > changes.length ? `\n(${series.rows - changes.length} earlier changes not shown; ask for a shorter range)` : '';
  const history: HistoryAnswerData = { ...data, type: 'state', count: series.rows, changes: changes.map(point), notShown: series.rows - changes.length };
  return { text: `${head}: ${series.rows} changes, newest first:\n${lines.join('\n')}${more}`, details: { entity: entity.id, rows: series.rows, history } };
}
