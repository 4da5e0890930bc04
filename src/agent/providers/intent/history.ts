// History questions: "when did the front door last open?", "when was the
// hallway motion last seen?", "how warm was it this morning?", "what was the
// living room temperature at 8?". Round 1 turns them into one get_history call
// (entity and a time window); round 2 reads its result back into a sentence.
// The words (and which hours "this morning" spans) are sentence data: the
// `period` list's values say `{from, to}` hours of the day and `day` (0 today,
// -1 yesterday) or `back` (hours back from now).
import type { Entity } from '../../../devices/model.js';
import type { Captures, MatchContext } from './matcher.js';
import type { Responses } from './responses.js';
import { isReply, resolveTarget, sortEntities, type Reply } from './resolve.js';
import type { OfferedTools, PlannedCall } from './tools.js';
import type { Vocabulary } from './vocabulary.js';

export const HISTORY_TOOL = 'get_history';

/** Most motion sensors one "has anyone moved recently?" reads the history of. */
const MAX_SENSORS = 8;

/** How far back "when did ... last" looks. */
const LAST_LOOKBACK = '-365d';

/**
 * When it was last in a state, its value at an hour, or its range over a period; how long it has been in a state
 * (`since`), whether it was in one during a period (`was`), or a period's lowest or highest reading.
 */
export type HistoryAsk = 'last' | 'at' | 'range' | 'since' | 'was' | 'low' | 'high';

const HISTORY_ASKS: ReadonlySet<string> = new Set(['last', 'since', 'was']);

export interface HistoryPlan {
  calls: PlannedCall[];
  entities: Entity[];
  asked?: string;
  ask: HistoryAsk;
}

/** A local time as ISO 8601 with its offset, so the tool reads it as the speaker meant it. */
export function localIso(d: Date): string {
  const off = -d.getTimezoneOffset();
  const pad = (n: number) => String(Math.trunc(Math.abs(n))).padStart(2, '0');
  const sign = off >= 0 ? '+' : '-';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:00${sign}${pad(off / 60)}:${pad(off % 60)}`;
}

/** A window of today (or an earlier day) from data `{from, to, day}`, or `{back}` hours; until never after now. */
export function windowOf(period: unknown, hour: number | undefined, now: number): { since?: string; until?: string } {
  const at = (day: number, h: number) => {
    const d = new Date(now);
    d.setDate(d.getDate() + day);
    d.setHours(h, 0, 0, 0);
    return d.getTime();
  };
  if (hour !== undefined) {
    // "at 8": the hour before 8 today, or yesterday when 8 is still to come.
    let until = at(0, hour);
    if (until > now) until = at(-1, hour);
    return { since: localIso(new Date(until - 3_600_000)), until: localIso(new Date(until)) };
  }
  const p = period && typeof period === 'object' ? (period as Record<string, unknown>) : {};
  if (typeof p.back === 'number') return { since: `-${p.back}h` };
  if (typeof p.from !== 'number' || typeof p.to !== 'number') return {};
  const day = typeof p.day === 'number' ? p.day : 0;
  let since = at(day, p.from);
  let until = at(day, p.to);
  // "this evening" asked in the morning: yesterday's.
  if (since >= now) {
    since = at(day - 1, p.from);
    until = at(day - 1, p.to);
  }
  return { since: localIso(new Date(since)), ...(until < now ? { until: localIso(new Date(until)) } : {}) };
}

/** Does a recorded value mean the state asked about? */
function sameState(e: Entity, asked: string, value: string): boolean {
  if (value === asked) return true;
  // A thermostat "runs" (is on) in any mode but off.
  if (e.kind === 'climate' && asked === 'on') return value !== 'off' && value !== 'unknown';
  if (e.kind === 'binary_sensor') {
    const opening = ['door', 'window', 'garage_door', 'opening'].includes(e.deviceClass ?? '');
    if (opening) return (asked === 'open' && value === 'on') || (asked === 'closed' && value === 'off');
  }
  return false;
}

/** The state to look for on this entity: a lock "opens" when it unlocks. */
function stateFor(e: Entity, asked: string | undefined): string | undefined {
  if (e.kind === 'lock' && asked === 'open') return 'unlocked';
  if (e.kind === 'lock' && asked === 'closed') return 'locked';
  if (isMotion(e)) return 'on';
  return asked;
}

/** Which of a target's entities the history is read from: the ones that take the asked state, never a camera. */
function pick(entities: Entity[], asked: string | undefined): Entity[] {
  const readable = entities.filter((e) => e.kind !== 'camera' && e.kind !== 'button');
  if (!asked) return readable;
  const opening = (e: Entity) =>
    e.kind === 'cover' || e.kind === 'valve' || (e.kind === 'binary_sensor' && ['door', 'window', 'garage_door', 'opening'].includes(e.deviceClass ?? ''));
  // "How long has the front door been unlocked?": of the front door's entities, its lock.
  if (asked === 'locked' || asked === 'unlocked') {
    const locks = readable.filter((e) => e.kind === 'lock');
    if (locks.length) return locks;
  }
  if (asked === 'open' || asked === 'closed') {
    // A door's contact sensor says when it opened; its lock says when it was unlocked.
    const sensors = readable.filter(opening);
    if (sensors.length) return sensors;
    const locks = readable.filter((e) => e.kind === 'lock');
    if (locks.length) return locks;
  }
  return readable;
}

export function planHistory(c: Captures, v: Vocabulary, offered: OfferedTools, context: MatchContext, now: number): HistoryPlan | Reply | null {
  const t = resolveTarget(c, v, 'read', context);
  if (isReply(t)) return t;
  if (t.implicit || t.areaOnly) return null;
  const kept = typeof c.other.history === 'string' && HISTORY_ASKS.has(c.other.history) ? (c.other.history as HistoryAsk) : undefined;
  const n = kept === 'last' || kept === 'since' ? undefined : c.number?.value;
  const said = n !== undefined && n >= 0 && n <= 24 && Number.isInteger(n) ? n % 24 : undefined;
  // "at 8 pm", "at 3 in the afternoon".
  const hour = said !== undefined && c.other.pm === true && said < 12 ? said + 12 : said;
  const extreme = c.other.extreme === 'low' || c.other.extreme === 'high' ? c.other.extreme : undefined;
  const ask: HistoryAsk = kept ?? (hour !== undefined ? 'at' : (extreme ?? 'range'));
  const byState = ask === 'last' || ask === 'since' || ask === 'was';
  let candidates = sortEntities(pick(t.entities, byState ? c.state : undefined));
  // "how warm was it this morning" on the bedroom's satellite: the bedroom's.
  const here = context.area?.toLowerCase();
  if (candidates.length > 1 && here && !t.area && !t.floor) {
    const local = candidates.filter((e) => e.area?.toLowerCase() === here);
    if (local.length) candidates = local;
  }
  if (!candidates.length) return null;
  const tool = offered.get(HISTORY_TOOL);
  // "Has anyone moved recently?": every motion sensor there over the window, answered together.
  if (candidates.length > 1 && ask === 'was' && candidates.length <= MAX_SENSORS && candidates.every(isMotion)) {
    const readable = candidates.filter((e) => tool?.meta.entityIds.includes(e.id));
    if (!tool || readable.length < candidates.length)
      return { type: 'not_here', entities: candidates.filter((e) => !readable.includes(e)), verb: 'read_history', rank: 3 };
    const window = windowOf(c.other.period, hour, now);
    return { calls: readable.map((e) => ({ tool: tool.name, args: { entity: e.id, ...window } })), entities: readable, asked: 'on', ask };
  }
  if (candidates.length > 1) return { type: 'ambiguous', candidates, rank: 3 };
  const e = candidates[0];
  if (!tool?.meta.entityIds.includes(e.id)) return { type: 'not_here', entities: [e], verb: 'read_history', rank: 3 };
  const window = ask === 'last' || ask === 'since' ? { since: LAST_LOOKBACK } : windowOf(c.other.period, hour, now);
  return { calls: [{ tool: tool.name, args: { entity: e.id, ...window } }], entities: [e], asked: stateFor(e, c.state), ask };
}

// ------------------------------------------------------------------ round 2

/** `2026-12-02 08:00 UTC (3 h ago)` -> its parts. */
const WHEN = /(\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\)/;

export interface HistoryAnswerContext {
  entity?: Entity;
  name: string;
  asked?: string;
  ask?: HistoryAsk;
  responses: Responses;
}

/** One sentence from a get_history result, or undefined when the text is not one (an error says itself). */
export function historySentence(result: string, ctx: HistoryAnswerContext): string | undefined {
  const r = ctx.responses;
  const [head, ...lines] = result.split('\n');
  const from = WHEN.exec(head);
  if (!from) return undefined;
  const { name, entity } = ctx;
  if (/: no changes recorded\./.test(head)) {
    const before = /It was (.+?) since (\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\)/.exec(head);
    if (before && ctx.ask === 'since' && ctx.asked && entity) {
      const slots = { name, state: ctx.asked, value: before[1], time: before[2], age: before[3] };
      return r.say(sameState(entity, ctx.asked, before[1]) ? 'history_since' : 'history_since_not', slots);
    }
    if (ctx.ask === 'was') {
      const was = historyWas(result, ctx);
      if (was) return was.text;
    }
    if (before && ctx.ask !== 'last') return r.say('history_value_before', { name, value: before[1], time: before[2], age: before[3] });
    if (before && ctx.ask === 'last' && ctx.asked && entity && sameState(entity, ctx.asked, before[1]))
      return r.say('history_last', { name, state: ctx.asked, time: before[2], age: before[3] });
    return r.say('history_none', { name });
  }
  const numbers =
    /: (\d+) readings?; low (.+?) at (\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\), high (.+?) at (\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\), average (.+?); latest (.+?) at (\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\)\./.exec(
      head,
    );
  if (numbers) {
    const [, n, low, lowTime, lowAge, high, highTime, highAge, average, latest, latestTime, latestAge] = numbers;
    const count = Number(n);
    // "What was the lowest temperature last night?": that reading and when.
    if (ctx.ask === 'low') return r.say('history_low', { name, value: low, time: lowTime, age: lowAge });
    if (ctx.ask === 'high') return r.say('history_high', { name, value: high, time: highTime, age: highAge });
    // "at 8": the reading nearest before; a period: its range.
    if (ctx.ask === 'at') return r.say('history_value_at', { name, value: latest, time: latestTime, age: latestAge });
    return r.say('history_range', { name, low, high, average, count });
  }
  // "How long has the lamp been on?": since its newest change, if that was into the state asked.
  if (ctx.ask === 'since' && ctx.asked && entity) {
    const m = /^(\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\): (.+)$/.exec(lines[0]?.trim() ?? '');
    if (m) {
      const value = m[3].replace(/^"|"$/g, '');
      const slots = { name, state: ctx.asked, value, time: m[1], age: m[2] };
      return r.say(sameState(entity, ctx.asked, value) ? 'history_since' : 'history_since_not', slots);
    }
  }
  // "Was the garage door open today?": yes with the latest time it became so, or no over the whole period.
  if (ctx.ask === 'was') {
    const was = historyWas(result, ctx);
    if (was) return was.text;
  }
  // State changes, newest first: the first in the asked state.
  const asked = ctx.asked;
  if (asked && entity) {
    for (const line of lines) {
      const m = /^(\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\): (.+)$/.exec(line.trim());
      if (m && sameState(entity, asked, m[3].replace(/^"|"$/g, ''))) {
        return r.say(isMotion(entity) ? 'history_last_motion' : 'history_last', { name, state: asked, time: m[1], age: m[2] });
      }
    }
    return r.say('history_not_since', { name, state: asked, since: from[1] });
  }
  const latest = /^(\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\): (.+)$/.exec(lines[0]?.trim() ?? '');
  return latest ? r.say('history_value_at', { name, value: latest[3], time: latest[1], age: latest[2] }) : r.say('history_none', { name });
}

/**
 * "Was the garage door open today?", "has anyone moved recently?": yes with the latest time it was so in the
 * window, or no over the whole window (whose ends are kept, for an answer over several sensors).
 */
export function historyWas(result: string, ctx: HistoryAnswerContext): { yes: boolean; text: string; since: string; until: string } | undefined {
  const { responses: r, name, entity, asked } = ctx;
  const [head = '', ...lines] = result.split('\n');
  const from = WHEN.exec(head);
  if (!from || !asked || !entity) return undefined;
  const since = from[1];
  const until = /from .+? to (\d{4}-\d\d-\d\d \d\d:\d\d UTC)/.exec(head)?.[1] ?? '';
  const motion = isMotion(entity);
  const yes = (time: string, age: string) => ({
    yes: true,
    since,
    until,
    text: motion ? r.say('history_was_yes_motion', { name, time, age }) : r.say('history_was_yes', { name, state: asked, time, age }),
  });
  const no = {
    yes: false,
    since,
    until,
    text: motion ? r.say('history_was_no_motion', { name, since, until }) : r.say('history_was_no', { name, state: asked, since, until }),
  };
  if (/: no changes recorded\./.test(head)) {
    const before = /It was (.+?) since (\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\)/.exec(head);
    return before && sameState(entity, asked, before[1]) ? yes(since, from[2]) : no;
  }
  for (const line of lines) {
    const m = /^(\d{4}-\d\d-\d\d \d\d:\d\d UTC) \(([^()]*)\): (.+)$/.exec(line.trim());
    if (m && sameState(entity, asked, m[3].replace(/^"|"$/g, ''))) return yes(m[1], m[2]);
  }
  return no;
}

/** A motion, occupancy or presence sensor: it "sees motion" rather than "is on". */
export function isMotion(e: Entity): boolean {
  return e.kind === 'binary_sensor' && ['motion', 'occupancy', 'presence'].includes(e.deviceClass ?? '');
}
