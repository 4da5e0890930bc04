// One utterance -> tool calls or a reply. Every template match is resolved to
// entities and then to calls on the offered tools; the best-scoring reading that
// yields calls wins, else the most useful reply (ambiguity, "cannot here", ...).
import type { Entity } from '../../../devices/model.js';
import type { EntityState } from '../../../devices/state-cache.js';
import { GROUP_KINDS, GROUP_MAX_LIST, GROUP_TOOL, selectGroup } from '../../../tools/group-call.js';
import { fromDeviceColorTemp } from '../../../devices/color-temp.js';
import { actionsOf, hasColor, hasColorTemp } from '../../../tools/parameters.js';
import { correctNames, closestEntities } from './fuzzy.js';
import { matchAll, type Captures, type Match, type MatchContext, type NumberValue, type PreviousTurn } from './matcher.js';
import type { Token } from './normalize.js';
import { planHistory, type HistoryAsk } from './history.js';
import { planAudit, planPolicy } from './records.js';
import { isQuestionTokens } from './question.js';
import { isReply, resolveTarget, sortEntities, type Reply, type Target } from './resolve.js';
import { INTENT_KINDS, KIND_BY_ID, kindClass, READ_INTENTS, type IntentId } from './sentences.js';
import { scaleToRange, snap, type OfferedTools, type PlannedCall } from './tools.js';
import type { Vocabulary } from './vocabulary.js';

export interface Home {
  vocabulary: Vocabulary;
  offered: OfferedTools;
  /** The speaker's context (the area a session speaks from). */
  context?: MatchContext;
  /** Current states, for relative changes ("brighter", "two degrees warmer", "toggle"). */
  state?: (id: string) => EntityState | undefined;
  /** The time now (history windows: "this morning", "at 8"). */
  now?: () => number;
}

export interface Interpretation {
  intent?: IntentId;
  /** The template that matched (for diagnostics). */
  template?: string;
  calls: PlannedCall[];
  reply?: Reply;
  /** The entities acted on or read. */
  entities: Entity[];
  /** A state word asked about ("is it locked?"), for a yes/no answer. */
  asked?: string;
  /** The text was a question: answered by reads alone. */
  question?: boolean;
  /** How a question over several devices is answered: which ones, how many, or whether any. */
  ask?: 'which' | 'count' | 'any' | 'all' | HistoryAsk;
  /** What the sentence meant, for the session's next one ("and the hallway too"). */
  meant?: { intent: IntentId; captures: Captures };
}

export type { PreviousTurn };

/** What a sentence leaves for the session's next one: undefined when it did nothing. */
export function turnOf(i: Interpretation): PreviousTurn | undefined {
  if (!i.calls.length || !i.meant || !i.entities.length) return undefined;
  return { ...i.meant, entities: i.entities };
}

const MAX_TOKENS = 40;
const MAX_COMMANDS = 20;
const MAX_READS = 24;
const MAX_CAMERAS = 3;

/**
 * What each intent does, for messages ("I can't <verb> the camera"): a key of
 * the language's `verb_*` responses.
 */
export const VERB: Record<IntentId, string> = {
  HassTurnOn: 'turn_on',
  HassTurnOff: 'turn_off',
  HassToggle: 'toggle',
  HassLightSet: 'dim',
  HassLightStep: 'dim',
  HassClimateStep: 'change_temperature',
  HassFanSetSpeed: 'set_speed',
  HassFanSetPreset: 'set_preset',
  HassLightSetColor: 'change_colour',
  HassSetLevel: 'set',
  HassClimateSetTemperature: 'set_temperature',
  HassClimateSetMode: 'change_mode',
  HassOpenCover: 'open',
  HassCloseCover: 'close',
  HassStopCover: 'stop',
  HassSetPosition: 'move',
  HassLock: 'lock',
  HassUnlock: 'unlock',
  HassPress: 'press',
  HassGetState: 'read',
  HassGetArea: 'read',
  HassGetAll: 'read',
  HassCameraImage: 'look_through',
  HassGetHistory: 'read_history',
  HearthAudit: 'read',
  HearthPolicy: 'read',
  HearthRepeat: 'use',
  HearthOutOfScope: 'use',
  UnknownDevice: 'use',
  HassVacuumReturnToBase: 'send_home',
  HassLawnMowerDock: 'send_home',
  HassHumidifierSetpoint: 'set_humidity',
};

/** What each command intent acts on, for "I could not find a ...": a key of the language's `noun_*` responses. */
const NOUN: Partial<Record<IntentId, string>> = {
  HassTurnOn: 'light_or_switch',
  HassTurnOff: 'light_or_switch',
  HassToggle: 'light_or_switch',
  HassLightSet: 'dimmable_light',
  HassLightStep: 'dimmable_light',
  HassClimateStep: 'thermostat',
  HassFanSetSpeed: 'fan',
  HassFanSetPreset: 'fan',
  HassLightSetColor: 'colour_light',
  HassSetLevel: 'light_thermostat_or_cover',
  HassClimateSetTemperature: 'thermostat',
  HassClimateSetMode: 'thermostat',
  HassOpenCover: 'cover_or_valve',
  HassCloseCover: 'cover_or_valve',
  HassStopCover: 'cover_or_valve',
  HassSetPosition: 'cover_or_valve',
  HassLock: 'lock',
  HassUnlock: 'lock',
  HassPress: 'button',
  HassCameraImage: 'camera',
};

type Planned = {
  calls: PlannedCall[];
  entities: Entity[];
  asked?: string;
  intent?: IntentId;
  ask?: Interpretation['ask'];
  /** A repeated sentence: what it meant once repeated. */
  meant?: Interpretation['meant'];
};
type Step = { action?: string; extra?: Record<string, unknown> };

export function interpret(text: string, home: Home): Interpretation {
  const v = home.vocabulary;
  const tokens = v.lang.normalizer.tokenize(text, true);
  const question = isQuestionTokens(tokens, v.lang);
  const first = interpretTokens(tokens, home, question);
  // Beyond Hearth: said so, never "corrected" into a device ("weather" is not the heater).
  if (first.calls.length || tokens.length > MAX_TOKENS || first.reply?.type === 'out_of_scope') return { ...first, question };
  // "It's cold, turn the heating up to 23": a remark, then what to do.
  const remark = v.lang.normalizer.afterRemark(tokens);
  if (remark) {
    const rest = tokens.slice(remark);
    const asked = isQuestionTokens(rest, v.lang);
    const after = interpretTokens(rest, home, asked);
    if (after.calls.length || (after.reply?.rank ?? 0) > (first.reply?.rank ?? 0)) return { ...after, question: asked };
  }
  // Two commands in one ("turn the lamp on and the kitchen light off"): each half on its own.
  if (!question) {
    const both = splitCommands(tokens, home);
    if (both) return { ...both, question };
  }
  // "The lamp is too bright, turn it off": a complaint about a device, then a command on "it".
  if (!question) {
    const complaint = afterComplaint(tokens, home);
    if (complaint) return { ...complaint, question };
  }
  // Nothing done: a word that is no word of the sentences may be a misheard or mistyped name.
  const corrected = correctNames(tokens, v);
  if (corrected) {
    const second = interpretTokens(corrected, home, question);
    if (second.calls.length || (second.reply?.rank ?? 0) > (first.reply?.rank ?? 0)) return { ...second, question };
  }
  // Something unknown was named: the closest names it might have meant.
  if (first.reply?.type === 'not_understood' && first.reply.unknown) {
    return { ...first, question, reply: { ...first.reply, closest: closestEntities(first.reply.unknown, v) } };
  }
  if (first.reply?.type === 'not_found' && first.reply.named) {
    return { ...first, question, reply: { ...first.reply, closest: closestEntities(first.reply.what, v) } };
  }
  return { ...first, question };
}

/** How far into a sentence a complaint's device may start, and how many words it may say about it. */
const COMPLAINT_START = 3;
const COMPLAINT_WORDS = 6;

/**
 * A remark naming a device, then a command on "it" ("the lamp is too bright, turn it off"): the command, with
 * "it" the device the remark named. Only when the sentence says "it" after the name, and only as the whole rest.
 */
function afterComplaint(tokens: Token[], home: Home): Interpretation | undefined {
  const v = home.vocabulary;
  const refs = v.lang.list('reference');
  if (!refs || tokens.length > MAX_TOKENS) return undefined;
  const kinds = v.lang.list('kind');
  for (let p = 0; p < Math.min(COMPLAINT_START, tokens.length); p++) {
    // A device by its name ("the bedroom lamp"), or by its kind in the speaker's room ("the lamp").
    const said: Array<{ end: number; captures: Captures }> = [
      ...v.names.match(tokens, p).map((hit) => ({ end: hit.end, captures: { names: [hit], other: {} } })),
      ...(kinds?.match(tokens, p) ?? []).map((hit) => ({
        end: hit.end,
        captures: { names: [], kind: { ...hit, value: kindClass(String(hit.value)) }, other: {} },
      })),
    ];
    for (const { end, captures } of said) {
      const t = resolveTarget(captures, v, 'command', home.context);
      if (isReply(t) || t.implicit || !t.entities.length) continue;
      let entities = t.entities;
      // "The lamp": of the lights, those called lamps.
      const words = captures.kind?.said.split(' ') ?? [];
      const carried = entities.filter((e) => words.length && words.every((w) => v.classEntity.get(e.id)?.words.has(w)));
      if (carried.length) entities = carried;
      const last = Math.min(tokens.length - 1, end + COMPLAINT_WORDS);
      if (!tokens.slice(end + 1).some((_, i) => refs.match(tokens, end + 1 + i).length)) continue;
      // "The lamp" of several, with no room to narrow it: which one, as a command on it would ask.
      const several = entities.length > 1 && !t.plural && !(t.area && entities.every((e) => ROOM_KINDS.has(e.kind)));
      if (several) return { calls: [], entities: [], reply: { type: 'ambiguous', candidates: entities, rank: 3 } };
      for (let i = end + 1; i <= last; i++) {
        // A command before it is no complaint ("turn on the lamp, make it blue" is two commands).
        if (interpretTokens(tokens.slice(0, i), home, false).calls.length) break;
        const previous: PreviousTurn = { intent: 'HassGetState', captures, entities };
        const rest = interpretTokens(tokens.slice(i), { ...home, context: { ...home.context, previous } }, false);
        if (rest.calls.length && rest.entities.every((e) => entities.includes(e))) return rest;
      }
    }
  }
  return undefined;
}

/** How many commands one sentence may join ("turn on the lamp, then lock the door and close the blinds"). */
const MAX_JOINED = 4;

/**
 * Commands joined by a joining word, when each part is a command on its own. A later part may refer to an
 * earlier one ("turn on the kitchen light and make it blue").
 */
function splitCommands(tokens: Token[], home: Home, depth = 1): Interpretation | undefined {
  const joins = home.vocabulary.lang.list('join');
  if (!joins || depth >= MAX_JOINED) return undefined;
  // A part understood but refused ("... and make it blue" of a white light): said, and nothing done.
  let refused: Interpretation | undefined;
  for (let i = 1; i < tokens.length - 1; i++) {
    const hits = joins.match(tokens, i).filter((h) => h.end < tokens.length);
    if (!hits.length) continue;
    const left = interpretTokens(tokens.slice(0, i), home, false);
    if (!left.calls.length) continue;
    const after: Home = { ...home, context: { ...home.context, previous: turnOf(left) ?? home.context?.previous } };
    for (const hit of hits) {
      const rest = tokens.slice(hit.end);
      let right = interpretTokens(rest, after, false);
      if (!right.calls.length) right = splitCommands(rest, after, depth + 1) ?? right;
      // "turn off the fan and the kitchen lights": the rest is no command alone, but is the first one again
      // on another target (the session's follow-up, joining word and all).
      if (!right.calls.length) {
        const again = interpretTokens(tokens.slice(i), after, false);
        if (again.calls.length) right = again;
      }
      if (!right.calls.length) {
        if ((right.reply?.rank ?? 0) >= 2 && (right.reply?.rank ?? 0) > (refused?.reply?.rank ?? 0)) refused = right;
        continue;
      }
      if (left.calls.length + right.calls.length > MAX_COMMANDS)
        return { calls: [], entities: [], reply: { type: 'too_many', count: left.calls.length + right.calls.length, rank: 3 } };
      return {
        intent: left.intent,
        template: left.template,
        calls: [...left.calls, ...right.calls],
        entities: [...left.entities, ...right.entities],
        meant: right.meant,
      };
    }
  }
  return refused;
}

function interpretTokens(tokens: Token[], home: Home, question: boolean): Interpretation {
  // Commands and questions are short; a long text is not one.
  let matches = tokens.length <= MAX_TOKENS ? matchAll(tokens, home.vocabulary, home.vocabulary.lang, home.context) : [];
  // A question is answered by reads alone, whatever a sentence of a command would make of it.
  if (question) {
    const previous = home.context?.previous;
    const reads = matches.filter((m) => READ_INTENTS.has(m.intent) || (m.intent === 'HearthRepeat' && !!previous && READ_INTENTS.has(previous.intent)));
    if (!reads.length && matches.some((m) => m.intent !== 'UnknownDevice')) return { calls: [], reply: { type: 'question', rank: 3 }, entities: [] };
    matches = reads;
  }
  let best: { reply: Reply; match: Match } | undefined;
  for (const m of matches) {
    const r = plan(m, home);
    if (!r) continue;
    if (isReply(r)) {
      if (!best || r.rank > best.reply.rank) best = { reply: r, match: m };
      continue;
    }
    // A clear question back from a better reading beats acting on a worse one.
    // So does "I can't dim the lamp" (named) over dimming some other light the word "lamp" describes.
    if (best && best.match.score > m.score && (best.reply.rank >= 3 || (best.reply.rank === 2 && best.match.intent === m.intent))) break;
    // One thing said that is several ("set the fan speed to 30" with two fans) asks which, rather than a later
    // reading of the same words acting on several of them.
    if (best?.reply.type === 'ambiguous' && best.match.score >= m.score) {
      const asked = new Set(best.reply.candidates);
      if (r.entities.filter((e) => asked.has(e)).length > 1) break;
    }
    return {
      intent: r.intent ?? m.intent,
      template: m.template,
      calls: r.calls,
      entities: r.entities,
      asked: r.asked,
      ask: r.ask,
      meant: r.meant ?? { intent: m.intent, captures: m.captures },
    };
  }
  if (best) return { intent: best.match.intent, template: best.match.template, calls: [], reply: best.reply, entities: [] };
  return { calls: [], reply: { type: 'not_understood', rank: 0 }, entities: [] };
}

function plan(m: Match, home: Home): Planned | Reply | null {
  const c = m.captures;
  switch (m.intent) {
    case 'UnknownDevice':
      return { type: 'not_understood', unknown: c.any && !isKnownPhrase(c.any, home.vocabulary) ? c.any : undefined, rank: 0 };
    case 'HassGetAll':
      return readArea(undefined, home);
    case 'HassGetArea': {
      const t = resolveTarget(c, home.vocabulary, 'read', home.context);
      if (isReply(t)) return t;
      if (t.floor && !t.area) return readAreas(t.entities, home);
      return t.area ? readArea(t.area, home) : null;
    }
    case 'HassGetState':
      return planRead(c, home);
    case 'HassCameraImage':
      return planCamera(c, home);
    case 'HassGetHistory':
      return planHistory(c, home.vocabulary, home.offered, home.context ?? {}, home.now?.() ?? Date.now());
    case 'HearthAudit':
      return planAudit(c, home.vocabulary, home.offered, home.context ?? {}, home.now?.() ?? Date.now());
    case 'HearthPolicy':
      return planPolicy(c, home.vocabulary, home.offered, home.context ?? {});
    case 'HearthRepeat':
      return planRepeat(m, home);
    case 'HearthOutOfScope':
      return { type: 'out_of_scope', topic: typeof c.other.out_of_scope === 'string' ? c.other.out_of_scope : '', rank: 3 };
    default:
      return planCommand(m.intent, c, home);
  }
}

/**
 * "And the hallway too", "same for the bedroom": the session's last sentence on what is said now. Said
 * without a kind, the kind it was about ("turn on the kitchen light", "and the hallway too": its lights).
 */
function planRepeat(m: Match, home: Home): Planned | Reply | null {
  const previous = home.context?.previous;
  if (!previous || previous.intent === 'HearthRepeat') return null;
  const c = m.captures;
  const before = previous.captures;
  let kind = c.kind ?? (c.names.length ? undefined : before.kind);
  if (!kind && !c.names.length) {
    // The kind every one of them is: by what its name says ("Kitchen window"), else by its own kind.
    const v = home.vocabulary;
    const info = previous.entities.map((e) => v.classEntity.get(e.id)).filter((x) => !!x);
    const ids = [...(info[0]?.named ?? []), previous.entities[0]?.kind ?? ''];
    const id = ids.find((k) => KIND_BY_ID.has(k) && info.every((x) => KIND_BY_ID.get(k)!.match(x, 'read')));
    if (id) kind = { end: 0, value: kindClass(id), plural: true, said: id.replace(/_/g, ' ') };
  }
  const { area2: _area2, floor2: _floor2, whole: _whole, ...kept } = before.other;
  const captures: Captures = {
    ...before,
    names: c.names,
    area: c.area,
    floor: c.floor,
    here: c.here,
    all: c.all,
    reference: false,
    kind,
    other: { ...kept, ...c.other },
  };
  const again: Match = { ...m, intent: previous.intent, captures };
  const r = plan(again, home);
  if (!r || isReply(r)) return r;
  return { ...r, intent: r.intent ?? previous.intent, meant: { intent: previous.intent, captures } };
}

/** Are the unknown words exactly a known name or area (then the sentence, not the device, was the problem)? */
function isKnownPhrase(words: string, v: Vocabulary): boolean {
  const tokens = v.lang.normalizer.tokenize(words);
  const whole = (hits: Array<{ end: number }>) => hits.some((h) => h.end === tokens.length);
  return tokens.length > 0 && (whole(v.names.match(tokens, 0)) || whole(v.areas.match(tokens, 0)));
}

// ------------------------------------------------------------------ commands

function hasBrightness(e: Entity): boolean {
  return e.kind === 'light' && ('brightness' in e.ranges || 'brightness' in e.attributes);
}

function brightnessStep(e: Entity, percent: number): Step | Reply {
  if (percent < 0 || percent > 100) return { type: 'out_of_range', entity: e, what: 'brightness', min: 0, max: 100, unit: '%', rank: 3 };
  if (percent === 0) return { action: 'turn_off' };
  // In percent, as the light's tool takes it (brightness_pct): the tool puts it on the light's own scale.
  return { action: 'turn_on', extra: { brightness_pct: Math.max(1, percent) } };
}

function temperatureStep(e: Entity, said: number, unit?: string): Step | Reply {
  // "68 fahrenheit" to a thermostat that works in Celsius.
  const celsius = /c/i.test(e.unit ?? '°C') && !/f/i.test(e.unit ?? '');
  const value = unit === 'fahrenheit' && celsius ? Math.round((((said - 32) * 5) / 9) * 10) / 10 : said;
  const r = e.ranges.temperature;
  if (!r) return { type: 'unsupported', entity: e, verb: 'set_temperature', rank: 2 };
  if (value < r.min || value > r.max) return { type: 'out_of_range', entity: e, what: 'temperature', min: r.min, max: r.max, unit: e.unit ?? '', rank: 3 };
  return { action: 'set_temperature', extra: { temperature: snap(value, r) } };
}

function preferredOnMode(e: Entity): string | undefined {
  const modes = e.options.mode ?? [];
  return ['heat', 'auto', 'heat_cool', 'cool'].find((m) => modes.includes(m)) ?? modes.find((m) => m !== 'off');
}

/** A level (percent) on a cover, valve or fan. */
function percentStep(e: Entity, percent: number, action: 'set_position' | 'set_percentage', range: string, what: string, verb: string): Step | Reply {
  if (!actionsOf(e).includes(action)) return { type: 'unsupported', entity: e, verb, rank: 2 };
  if (percent < 0 || percent > 100) return { type: 'out_of_range', entity: e, what, min: 0, max: 100, unit: '%', rank: 3 };
  if (action === 'set_percentage' && percent === 0) return { action: 'turn_off' };
  return { action, extra: { [range]: scaleToRange(percent, e.ranges[range] ?? { min: 0, max: 100 }) } };
}

/** A bare number no thermostat is set to but a white is ("set the temperature to 2700"): a colour temperature. */
function kelvinLike(n: NumberValue): boolean {
  return !n.unit && n.value >= 1000 && n.value <= 12000;
}

/** Kelvin -> an RGB hex colour (Tanner Helland's fit of the Planckian locus). */
export function kelvinToHex(kelvin: number): string {
  const t = Math.min(40000, Math.max(1000, kelvin)) / 100;
  const clamp = (v: number) => Math.round(Math.min(255, Math.max(0, v)));
  const r = t <= 66 ? 255 : clamp(329.698727446 * (t - 60) ** -0.1332047592);
  const g = t <= 66 ? clamp(99.4708025861 * Math.log(t) - 161.1195681661) : clamp(288.1221695283 * (t - 60) ** -0.0755148492);
  const b = t >= 66 ? 255 : t <= 19 ? 0 : clamp(138.5177312231 * Math.log(t - 10) - 305.0447927307);
  return `#${[r, g, b].map((x) => x.toString(16).padStart(2, '0')).join('')}`;
}

/** A white said as its colour temperature: the language's `color` list gives it as "<kelvin>K" ("warm white": 2700K). */
function whiteKelvin(color: string | undefined): number | undefined {
  const m = color ? /^(\d{4,5})K$/.exec(color) : null;
  return m ? Number(m[1]) : undefined;
}

/**
 * The brightness said beside a colour: with a colour word the one number ("warm white at 30%"); beside a
 * colour temperature the sentence's second number (`{number:number2}`: "2700 K at 50%").
 */
function brightnessBeside(c: Captures): NumberValue | undefined {
  const second = c.other.number2;
  if (typeof second === 'number') return { value: second, unit: 'percent' };
  if (second && typeof second === 'object') return second as NumberValue;
  return c.color && c.number && c.number.unit !== 'degree' && c.number.unit !== 'kelvin' ? c.number : undefined;
}

/** A colour step with the brightness said beside it; a light that cannot dim says so rather than doing half. */
function withBrightnessBeside(e: Entity, c: Captures, step: Step | Reply): Step | Reply {
  const b = brightnessBeside(c);
  if (!b || isReply(step) || step.action !== 'turn_on') return step;
  if (!hasBrightness(e)) return { type: 'unsupported', entity: e, verb: 'dim', rank: 2 };
  const level = brightnessStep(e, b.value);
  if (isReply(level) || level.action !== 'turn_on') return isReply(level) ? level : step;
  return { action: 'turn_on', extra: { ...step.extra, ...level.extra } };
}

/**
 * How far a relative change goes without a number: a small step ("a bit", "a little"), the usual one and a large
 * one ("a lot"), as the sentence's `{amount}` says; never to an end of the range in one go.
 */
const STEPS = {
  brightness: [10, 25, 50],
  speed: [10, 25, 50],
  temperature: [0.5, 1, 2],
  kelvin: [250, 500, 1000],
  position: [10, 25, 50],
} as const;

/** The least a step down goes to: the small step, or from below it the lowest level (never off, never a jump to the end). */
function lowestStep(now: number, what: 'brightness' | 'speed'): number {
  const small = STEPS[what][0];
  return now > small ? small : 1;
}

function stepBy(what: keyof typeof STEPS, c: Captures): number {
  // "by 10 percent", "by two degrees": the number said.
  if (c.number) return c.number.value;
  const [small, usual, large] = STEPS[what];
  const amount = c.other.amount;
  return amount === 'small' ? small : amount === 'large' ? large : usual;
}

/** Colour-temperature routing: "warm white", "daylight", "2700 kelvin", "warmer" on a light that takes colour temperature. */
function colorTempStep(e: Entity, c: Captures, state: EntityState | undefined): Step | Reply | undefined {
  if (!hasColorTemp(e)) return undefined;
  const { minKelvin: min, maxKelvin: max } = e.colorTemp!;
  const n = c.number;
  const said = !c.color && n && (n.unit === 'kelvin' || (n.value >= 1000 && n.value <= 12000 && !n.unit)) ? n.value : undefined;
  if (said !== undefined) {
    if (said < min || said > max) return { type: 'out_of_range', entity: e, what: 'color_temp', min, max, unit: 'K', rank: 3 };
    return { action: 'turn_on', extra: { color_temp_kelvin: Math.round(said) } };
  }
  const white = whiteKelvin(c.color);
  // A word asks for the warmest or coolest the light has when its own white is beyond it.
  if (white !== undefined) return { action: 'turn_on', extra: { color_temp_kelvin: Math.min(max, Math.max(min, white)) } };
  // "warmer" (direction down: fewer kelvin) or "cooler", from the white it shows now.
  if (!c.color && !n && c.direction) {
    const now = state?.value === 'on' ? fromDeviceColorTemp(e.colorTemp!, state.attributes.color_temp) : undefined;
    if (now === undefined) return { type: 'unsupported', entity: e, verb: 'change_colour_temp', why: 'colour_temp_unknown', rank: 2 };
    const to = Math.min(max, Math.max(min, now + (c.direction === 'down' ? -1 : 1) * stepBy('kelvin', c)));
    return { action: 'turn_on', extra: { color_temp_kelvin: to } };
  }
  return undefined;
}

/** Current brightness as a percent (undefined when unknown); 0 when off. */
function brightnessNow(e: Entity, state: EntityState | undefined): number | undefined {
  if (!state || state.value === undefined) return undefined;
  if (state.value === 'off') return 0;
  const b = state.attributes.brightness;
  const r = e.ranges.brightness ?? { min: 0, max: 255 };
  return typeof b === 'number' ? Math.round(((b - r.min) / (r.max - r.min || 1)) * 100) : 100;
}

/** On and off for the kinds of #31 (an empty word: nothing for that direction). */
const ON_OFF_WORDS: Partial<Record<Entity['kind'], [string, string]>> = {
  scene: ['activate', ''],
  vacuum: ['start', 'stop'],
  lawn_mower: ['start_mowing', 'dock'],
  siren: ['turn_on', 'turn_off'],
  humidifier: ['turn_on', 'turn_off'],
  water_heater: ['turn_on', 'turn_off'],
};

/** What to do to one entity for this intent; null when the intent does not apply to its kind. */
function stepFor(intent: IntentId, e: Entity, c: Captures, t: Target, home: Home): Step | Reply | null {
  const kinds = INTENT_KINDS[intent] ?? [];
  // "Open the front door lock": a lock opens by unlocking (and is held as an unlock), in the sentences that say
  // so (`slots: {lock: unlock}`) and only when the words said name a lock: "open the front door" opens no lock.
  if (intent === 'HassOpenCover' && e.kind === 'lock' && c.other.lock === 'unlock' && saysKind(c, home.vocabulary, 'lock')) return { action: 'unlock' };
  if (!kinds.includes(e.kind)) {
    // A switch called "lamp" found by the word "light" cannot dim.
    const lightSwitch = e.kind === 'switch' && (t.kind?.id === 'light' || (t.named && !!home.vocabulary.classEntity.get(e.id)?.named.has('light')));
    if ((intent === 'HassLightSet' || intent === 'HassSetLevel' || intent === 'HassLightStep') && lightSwitch) {
      return { type: 'unsupported', entity: e, verb: 'dim', rank: 2 };
    }
    if (intent === 'HassLightSetColor' && lightSwitch) return { type: 'unsupported', entity: e, verb: VERB[intent], rank: 2 };
    return null;
  }
  const actions = actionsOf(e);
  const unsupported = (verb = VERB[intent], value?: string): Reply => ({ type: 'unsupported', entity: e, verb, value, rank: 2 });
  const n = c.number;
  const state = home.state?.(e.id);
  switch (intent) {
    case 'HassTurnOn':
    case 'HassTurnOff': {
      const on = intent === 'HassTurnOn';
      // Kinds of #31: "activate movie time", "start the vacuum", "stop the mower", "sound the siren".
      const word = ON_OFF_WORDS[e.kind]?.[on ? 0 : 1];
      if (word !== undefined) {
        if (!t.named && t.kind?.id !== e.kind) return null;
        return actions.includes(word) ? { action: word } : unsupported();
      }
      if (e.kind === 'valve') {
        if (!t.named && t.kind?.id !== 'valve') return null;
        const action = on ? 'open' : 'close';
        return actions.includes(action) ? { action } : unsupported();
      }
      if (e.kind !== 'climate') return { action: on ? 'turn_on' : 'turn_off' };
      // Thermostats: only when named or asked for as heating; "everything" leaves them alone.
      if (!t.named && t.kind?.id !== 'climate') return null;
      const mode = on ? preferredOnMode(e) : (e.options.mode ?? []).includes('off') ? 'off' : undefined;
      return mode && actions.includes('set_mode') ? { action: 'set_mode', extra: { mode } } : unsupported();
    }
    case 'HassToggle': {
      // Toggle needs to know the state now; unknown is not guessed.
      if (state?.value === 'on') return { action: 'turn_off' };
      if (state?.value === 'off') return { action: 'turn_on' };
      return { type: 'unsupported', entity: e, verb: 'toggle', why: 'state_unknown', rank: 2 };
    }
    case 'HassLightSetColor': {
      const white = colorTempStep(e, c, state);
      if (white) return withBrightnessBeside(e, c, white);
      if (!c.color && !n && c.direction) return unsupported('change_colour_temp');
      const kelvin = !c.color && n && (n.unit === 'kelvin' || (n.value >= 1000 && n.value <= 12000 && !n.unit)) ? n.value : whiteKelvin(c.color);
      const color = kelvin !== undefined ? kelvinToHex(kelvin) : c.color;
      if (!color) return null;
      if (!hasColor(e)) return unsupported();
      // "pink at 50%": the colour and the brightness in one call.
      return withBrightnessBeside(e, c, { action: 'turn_on', extra: { color } });
    }
    case 'HassLightSet':
      if (!n || n.unit === 'degree' || n.unit === 'kelvin') return null;
      return hasBrightness(e) ? brightnessStep(e, n.value) : unsupported('dim');
    case 'HassLightStep': {
      if (e.kind === 'fan') {
        // "turn the fan up": its speed, a step at a time.
        if (!actions.includes('set_percentage')) return unsupported(c.direction === 'down' ? 'slow_down' : 'speed_up');
        const now = state?.value === 'off' ? 0 : typeof state?.attributes.percentage === 'number' ? state.attributes.percentage : undefined;
        if (now === undefined)
          return { type: 'unsupported', entity: e, verb: c.direction === 'down' ? 'slow_down' : 'speed_up', why: 'speed_unknown', rank: 2 };
        // Slowing down a fan that is off, or to nothing, is not a step: said, or the fan's lowest speed.
        if (c.direction === 'down' && now === 0) return { type: 'unsupported', entity: e, verb: 'slow_down', why: 'already_off', rank: 2 };
        const to = Math.min(100, Math.max(c.direction === 'down' ? lowestStep(now, 'speed') : 0, now + (c.direction === 'down' ? -1 : 1) * stepBy('speed', c)));
        return percentStep(e, to, 'set_percentage', 'percentage', 'speed', 'set_speed');
      }
      if (!hasBrightness(e)) return unsupported(c.direction === 'down' ? 'dim' : 'brighten');
      if (n && (n.unit === 'degree' || n.unit === 'kelvin')) return null;
      const by = stepBy('brightness', c);
      // A step from where the light is now: unknown is not guessed (a guess could dim a light said to be brightened).
      const now = brightnessNow(e, state);
      if (now === undefined) return { type: 'unsupported', entity: e, verb: c.direction === 'down' ? 'dim' : 'brighten', why: 'brightness_unknown', rank: 2 };
      // Dimming a light that is off would turn it on at its dimmest: said instead.
      if (c.direction === 'down' && now === 0) return { type: 'unsupported', entity: e, verb: 'dim', why: 'already_off', rank: 2 };
      const to = Math.min(100, Math.max(c.direction === 'down' ? lowestStep(now, 'brightness') : 0, now + (c.direction === 'down' ? -by : by)));
      return brightnessStep(e, to);
    }
    case 'HassSetLevel': {
      if (!n || n.unit === 'kelvin') return null;
      if (e.kind === 'climate') return n.unit === 'percent' || kelvinLike(n) ? null : temperatureStep(e, n.value, n.unit);
      if (n.unit === 'degree') return null;
      if (e.kind === 'light') return hasBrightness(e) ? brightnessStep(e, n.value) : unsupported('dim');
      if (e.kind === 'cover' || e.kind === 'valve') return percentStep(e, n.value, 'set_position', 'position', 'position', 'move');
      if (e.kind === 'fan') return percentStep(e, n.value, 'set_percentage', 'percentage', 'speed', 'set_speed');
      const r = e.ranges.value ?? { min: 0, max: 100 };
      if (n.value < r.min || n.value > r.max) return { type: 'out_of_range', entity: e, what: 'value', min: r.min, max: r.max, unit: e.unit ?? '', rank: 3 };
      return { extra: { value: snap(n.value, r) } };
    }
    case 'HassFanSetSpeed':
      if (!n || n.unit === 'degree' || n.unit === 'kelvin') return null;
      return percentStep(e, n.value, 'set_percentage', 'percentage', 'speed', 'set_speed');
    case 'HassFanSetPreset':
      if (!c.preset || !(e.options.preset_mode ?? []).includes(c.preset) || !actions.includes('set_preset_mode'))
        return c.preset ? unsupported('set_to', c.preset) : unsupported('set_to_preset');
      return { action: 'set_preset_mode', extra: { preset_mode: c.preset } };
    case 'HassClimateSetTemperature':
      if (!n || n.unit === 'percent' || n.unit === 'kelvin' || kelvinLike(n)) return null;
      return temperatureStep(e, n.value, n.unit);
    case 'HassVacuumReturnToBase':
      return actions.includes('return_to_base') ? { action: 'return_to_base' } : unsupported();
    case 'HassLawnMowerDock':
      return actions.includes('dock') ? { action: 'dock' } : unsupported();
    case 'HassHumidifierSetpoint': {
      if (!n || n.unit === 'degree' || n.unit === 'kelvin') return null;
      const r = e.ranges.humidity ?? { min: 0, max: 100 };
      if (!actions.includes('set_humidity')) return unsupported();
      if (n.value < r.min || n.value > r.max) return { type: 'out_of_range', entity: e, what: 'value', min: r.min, max: r.max, unit: '%', rank: 3 };
      return { action: 'set_humidity', extra: { humidity: Math.round(n.value) } };
    }
    case 'HassClimateStep': {
      const r = e.ranges.temperature;
      if (!r || !actions.includes('set_temperature')) return unsupported('change_temperature');
      // Raising the target of a thermostat that is off heats nothing: said, not "done".
      if (state?.value === 'off') return { type: 'unsupported', entity: e, verb: 'change_temperature', why: 'thermostat_off', rank: 2 };
      const target = state?.attributes.temperature ?? state?.attributes.target_temperature;
      if (typeof target !== 'number') return { type: 'unsupported', entity: e, verb: 'change_temperature', why: 'setting_unknown', rank: 2 };
      return temperatureStep(e, target + (c.direction === 'down' ? -1 : 1) * stepBy('temperature', c));
    }
    case 'HassClimateSetMode': {
      const mode = c.mode;
      if (!mode || !(e.options.mode ?? []).includes(mode) || !actions.includes('set_mode'))
        return mode ? unsupported('set_to', mode.replace(/_/g, ' ')) : unsupported('set_to_mode');
      return { action: 'set_mode', extra: { mode } };
    }
    case 'HassOpenCover':
      return actions.includes('open') ? { action: 'open' } : unsupported();
    case 'HassCloseCover':
      return actions.includes('close') ? { action: 'close' } : unsupported();
    case 'HassStopCover':
      // "Pause the vacuum": a robot is held where it is only by the action its sentence names (`slots: {action: pause}`);
      // "stop the vacuum" is turning it off.
      if (e.kind === 'vacuum' || e.kind === 'lawn_mower') {
        const wanted = typeof c.other.action === 'string' ? c.other.action : undefined;
        if (!wanted) return null;
        return actions.includes(wanted) ? { action: wanted } : unsupported();
      }
      return actions.includes('stop') ? { action: 'stop' } : unsupported();
    case 'HassSetPosition': {
      // "open the blinds a bit", "lower the shade a lot": a step from where it is now (a small, usual or large one).
      if (!n && c.direction) {
        if (!actions.includes('set_position')) return unsupported('move');
        const p = state?.attributes.position;
        const now = typeof p === 'number' ? p : state?.value === 'closed' ? 0 : state?.value === 'open' ? 100 : undefined;
        if (now === undefined) return { type: 'unsupported', entity: e, verb: 'move', why: 'position_unknown', rank: 2 };
        const by = stepBy('position', c);
        return percentStep(e, Math.min(100, Math.max(0, now + (c.direction === 'down' ? -by : by))), 'set_position', 'position', 'position', 'move');
      }
      if (!n || n.unit === 'degree' || n.unit === 'kelvin') return null;
      return percentStep(e, n.value, 'set_position', 'position', 'position', 'move');
    }
    case 'HassLock':
      return { action: 'lock' };
    case 'HassUnlock':
      return { action: 'unlock' };
    case 'HassPress':
      return { action: 'press' };
    default:
      return null;
  }
}

function planCommand(intent: IntentId, c: Captures, home: Home): Planned | Reply | null {
  const v = home.vocabulary;
  const resolved = resolveTarget(c, v, 'command', home.context);
  if (isReply(resolved)) return resolved;
  let t = resolved;
  const climate = intent === 'HassClimateSetTemperature' || intent === 'HassClimateSetMode' || intent === 'HassClimateStep';
  if (t.implicit) {
    // Only a few commands have an obvious target when none is said.
    if (climate) t = { ...t, entities: t.entities.filter((e) => e.kind === 'climate') };
    else if (intent === 'HassLock') t = { ...t, entities: t.entities.filter((e) => e.kind === 'lock'), plural: true };
    else return null;
  }
  // "make it 22 degrees in the living room": the area narrows, it is not the target.
  if (t.areaOnly && climate) t = { ...t, plural: false };

  const ok: Array<{ e: Entity; step: Step }> = [];
  const refusals: Reply[] = [];
  for (const e of t.entities) {
    const step = stepFor(intent, e, c, t, home);
    if (!step) continue;
    if (isReply(step)) refusals.push(step);
    else ok.push({ e, step });
  }
  if (!ok.length) {
    if (refusals.length && (refusals.length === 1 || t.named)) return refusals.sort((a, b) => b.rank - a.rank)[0];
    // A kind this intent never acts on: a weak refusal, any other reading of the words goes first.
    if (t.named && t.entities.length === 1) return { type: 'unsupported', entity: t.entities[0], verb: VERB[intent], rank: 1 };
    return { type: 'not_found', what: '', noun: NOUN[intent] ?? 'device', area: t.area, rank: 1 };
  }
  // Several, said in the singular, or of different kinds for a bare number: ask which. A kind word with a place
  // ("turn on the kitchen light" in a kitchen with two) is all of them, as Assist does, for lights, switches and
  // fans; a name said, or a lock, door or alarm, still asks.
  // "Set the bedroom to 19": a bare number for a place with one thermostat, that fits its temperatures, is that
  // thermostat's target (Home Assistant's HassClimateSetTemperature takes an area); a percent or no fit still asks.
  if (intent === 'HassSetLevel' && t.areaOnly && c.number?.unit !== 'percent') {
    const climates = ok.filter((o) => o.e.kind === 'climate');
    const thermostats = t.entities.filter((e) => e.kind === 'climate');
    if (climates.length === 1 && thermostats.length === 1) ok.splice(0, ok.length, climates[0]!);
  }
  const mixed = intent === 'HassSetLevel' && new Set(ok.map((o) => o.e.kind)).size > 1;
  const roomKind = !t.named && !!t.kind && !!(t.area || t.floor) && ok.every((o) => ROOM_KINDS.has(o.e.kind));
  if (roomKind && !t.plural && ok.length > 1 && c.kind) {
    // Those whose own name carries the word said win ("the office lamp": the desk lamp, not the ceiling light).
    const words = c.kind.said.split(' ');
    const carried = ok.filter((o) => words.every((w) => v.classEntity.get(o.e.id)?.words.has(w)));
    if (carried.length) ok.splice(0, ok.length, ...carried);
  }
  if (ok.length > 1 && (!(t.plural || roomKind) || mixed)) return { type: 'ambiguous', candidates: ok.map((o) => o.e), rank: 3 };
  // Several names ("the hall light and the porch light"): each must be one device.
  if (t.perName && t.perName.length > 1) {
    for (const { found, plural } of t.perName) {
      const acted = found.filter((e) => ok.some((o) => o.e === e));
      if (acted.length > 1 && !plural) return { type: 'ambiguous', candidates: acted, rank: 3 };
    }
  }

  // Several lights, switches or fans on or off: one grouped call, when the tool is offered.
  const grouped = groupCall(intent, ok, t, home);
  if (grouped) return { calls: [grouped], entities: ok.map((o) => o.e), intent };

  // All of them or none: more than one sentence may change at once, or some this conversation has no tool for,
  // and nothing is done (the answer says which).
  if (ok.length > MAX_COMMANDS) return { type: 'too_many', count: ok.length, rank: 3 };
  const calls: PlannedCall[] = [];
  const entities: Entity[] = [];
  const missing: Entity[] = [];
  for (const { e, step } of ok) {
    const call = home.offered.control(e, step.action, step.extra);
    if (!call) {
      missing.push(e);
      continue;
    }
    calls.push(call);
    entities.push(e);
  }
  if (missing.length) return { type: 'not_here', entities: missing, verb: VERB[intent], rank: 3 };
  return { calls, entities, intent: specificIntent(intent, ok[0].step) };
}

/**
 * "All lights off", "turn on the lights upstairs": the grouped tool over exactly these entities, said
 * as briefly as picks the same ones (an area, a floor, the whole home, else the list of ids).
 */
function groupCall(intent: IntentId, ok: Array<{ e: Entity; step: Step }>, t: Target, home: Home): PlannedCall | undefined {
  // Devices named one by one ("the lamp and the hall light") keep a call each: each answers in its own words.
  // "Turn them off" after "turn on the lights": one call over them again, as the first was.
  if ((intent !== 'HassTurnOn' && intent !== 'HassTurnOff') || (t.named && !t.reference) || ok.length < 2 || ok.length > GROUP_MAX_LIST) return undefined;
  const tool = home.offered.get(GROUP_TOOL);
  if (!tool) return undefined;
  const action = intent === 'HassTurnOn' ? 'turn_on' : 'turn_off';
  const covered = new Set(tool.meta.entityIds);
  if (!ok.every(({ e, step }) => step.action === action && !step.extra && GROUP_KINDS.includes(e.kind) && covered.has(e.id))) return undefined;
  const kinds = new Set(ok.map((o) => o.e.kind));
  const kind = kinds.size === 1 ? [...kinds][0] : 'all';
  const wanted = ok
    .map((o) => o.e.id)
    .sort()
    .join('\n');
  const pool = home.vocabulary.entities.filter((e) => covered.has(e.id));
  const picks = (args: Record<string, unknown>) => {
    const got = selectGroup(args, pool);
    return (
      typeof got !== 'string' &&
      got
        .map((e) => e.id)
        .sort()
        .join('\n') === wanted
    );
  };
  const first = ok[0]!.e;
  const tries: Array<Record<string, unknown>> = [];
  if (t.area && first.area) tries.push({ action, kind, area: first.area });
  if (t.floor && first.floor) tries.push({ action, kind, floor: first.floor });
  tries.push({ action, kind });
  const args = tries.find(picks) ?? { action, kind, entities: ok.map((o) => o.e.id).sort() };
  return { tool: tool.name, args };
}

/** Kinds a singular kind word with a place acts on together ("the kitchen light": every light there). */
const ROOM_KINDS: ReadonlySet<Entity['kind']> = new Set(['light', 'switch', 'fan']);

/** Do the words said for the target name this kind ("the front door lock" says lock; "the front door" does not)? */
function saysKind(c: Captures, v: Vocabulary, kind: string): boolean {
  if (c.kind?.value.id === kind) return true;
  const words = v.lang.list('kind');
  if (!words) return false;
  return c.names.some((n) => {
    const tokens = v.lang.normalizer.tokenize(n.said);
    return tokens.some((_, i) => words.match(tokens, i).some((h) => h.value === kind));
  });
}

/** "set X to 21" is a climate, light or cover intent once the entity is known. */
function specificIntent(intent: IntentId, step: Step): IntentId {
  if (intent === 'HassLightStep' && step.action === 'set_percentage') return 'HassFanSetSpeed';
  if (intent === 'HassOpenCover' && step.action === 'unlock') return 'HassUnlock';
  if (intent !== 'HassSetLevel') return intent;
  if (step.action === 'set_temperature') return 'HassClimateSetTemperature';
  if (step.action === 'set_position') return 'HassSetPosition';
  if (step.action === 'set_percentage') return 'HassFanSetSpeed';
  if (step.action === 'turn_on' || step.action === 'turn_off') return 'HassLightSet';
  return intent;
}

// ------------------------------------------------------------------ reads

/** Does a state word make sense for this entity ("open" for a door, "locked" for a lock)? */
function stateApplies(e: Entity, state: string): boolean {
  switch (state) {
    case 'locked':
    case 'unlocked':
    case 'jammed':
      return e.kind === 'lock';
    case 'open':
    case 'closed':
    case 'opening':
    case 'closing':
    case 'stopped':
      return (
        e.kind === 'cover' || e.kind === 'valve' || (e.kind === 'binary_sensor' && ['door', 'window', 'garage_door', 'opening'].includes(e.deviceClass ?? ''))
      );
    case 'heating':
    case 'cooling':
      return e.kind === 'climate';
    case 'vibrating':
    case 'still':
      return e.kind === 'binary_sensor' && e.deviceClass === 'vibration';
    case 'idle':
      return e.kind === 'climate' || e.kind === 'vacuum' || e.kind === 'lawn_mower';
    // A robot's own states.
    case 'cleaning':
    case 'docked':
    case 'returning':
    case 'paused':
    case 'mowing':
      return e.kind === 'vacuum' || e.kind === 'lawn_mower';
    // A person's tracker: home, or anywhere else.
    case 'home':
    case 'away':
      return e.kind === 'device_tracker';
    default:
      return e.kind === 'switch' || e.kind === 'light' || e.kind === 'fan' || e.kind === 'binary_sensor' || e.kind === 'climate';
  }
}

/** Entities that can be in the asked state whose names carry every word of a name said. */
function sensorsNamedAfter(c: Captures, t: Target, v: Vocabulary): Entity[] {
  const said = c.names.flatMap((n) => sameThings(v.lang.normalizer.tokenize(n.said), v));
  if (!c.state || !said.length) return [];
  return v.entities.filter((e) => {
    if (!stateApplies(e, c.state!) || (t.area && (e.area ?? '').toLowerCase() !== t.area.toLowerCase())) return false;
    const words = new Set(v.lang.normalizer.tokenize(e.name).map((w) => w.w));
    return said.some((name) => name.every((w) => words.has(w)));
  });
}

/** A name said, and the same name with each other word for one appliance ("washing machine": also "washer"). */
function sameThings(tokens: Token[], v: Vocabulary): string[][] {
  const words = tokens.map((w) => w.w);
  const out = [words];
  const list = v.lang.list('same_thing');
  if (!list) return out;
  const others = new Map<string, string[][]>();
  for (const [phrase, value] of list.phrases()) (others.get(String(value)) ?? others.set(String(value), []).get(String(value))!).push(phrase.split(' '));
  for (let i = 0; i < tokens.length; i++)
    for (const h of list.match(tokens, i))
      for (const other of others.get(String(h.value)) ?? []) out.push([...words.slice(0, i), ...other, ...words.slice(h.end)]);
  return out;
}

function readArea(area: string | undefined, home: Home): Planned | Reply {
  const v = home.vocabulary;
  const entities = area ? v.entities.filter((e) => (e.area ?? '').toLowerCase() === area.toLowerCase()) : v.entities;
  const whole = home.offered.state(area);
  if (whole) return { calls: [whole], entities: sortEntities(entities), intent: area ? 'HassGetArea' : 'HassGetAll' };
  // No get_state here: read what can be read one by one.
  return readEach(sortEntities(entities), home, undefined);
}

/** Every area of these entities, one get_state each (a floor), and those on it without an area one by one. */
function readAreas(entities: Entity[], home: Home): Planned | Reply {
  const areas = [...new Set(entities.map((e) => e.area).filter((a): a is string => !!a))].sort();
  const calls = areas.map((a) => home.offered.state(a)).filter((c): c is PlannedCall => !!c);
  const loose = sortEntities(entities.filter((e) => !e.area));
  const looseCalls = loose.map((e) => home.offered.read(e)).filter((c): c is PlannedCall => !!c);
  if (calls.length === areas.length && looseCalls.length === loose.length && calls.length + looseCalls.length && calls.length + looseCalls.length <= MAX_READS)
    return { calls: [...calls, ...looseCalls], entities: sortEntities(entities) };
  return readEach(sortEntities(entities), home, undefined);
}

function readEach(entities: Entity[], home: Home, asked: string | undefined): Planned | Reply {
  const calls: PlannedCall[] = [];
  const done: Entity[] = [];
  for (const e of entities) {
    if (calls.length >= (e.kind === 'camera' ? MAX_CAMERAS : MAX_READS)) break;
    const call = home.offered.read(e);
    if (!call) continue;
    calls.push(call);
    done.push(e);
  }
  if (!calls.length) return { type: 'not_here', entities, verb: 'read', rank: 3 };
  return { calls, entities: done, asked, intent: done.every((e) => e.kind === 'camera') ? 'HassCameraImage' : undefined };
}

function askOf(c: Captures): 'which' | 'count' | 'any' | 'all' | undefined {
  const a = c.other.ask;
  return a === 'which' || a === 'count' || a === 'any' || a === 'all' ? a : undefined;
}

function planRead(c: Captures, home: Home): Planned | Reply | null {
  const t = resolveTarget(c, home.vocabulary, 'read', home.context);
  if (isReply(t)) return t;
  if (t.implicit) return null;
  const ask = askOf(c);
  // "how is everything", "what is everything in the kitchen".
  if (t.kind?.id === 'everything' && !c.state) return t.floor && !t.area ? readAreas(t.entities, home) : readArea(t.area, home);
  let entities = t.entities;
  if (c.state && t.named) {
    // "is the front door locked": of the front door's entities, the lock.
    const fitting = entities.filter((e) => stateApplies(e, c.state!));
    // "is the washer vibrating": none of the washer's own can be, so the sensor whose name carries the name said
    // ("Washer vibration"), in the place said if one was.
    const beside = fitting.length ? fitting : sensorsNamedAfter(c, t, home.vocabulary);
    if (beside.length) entities = beside;
  } else if (c.state) {
    const fitting = entities.filter((e) => stateApplies(e, c.state!));
    if (fitting.length) entities = fitting;
    else if (!t.areaOnly)
      return { type: 'not_found', what: t.kind?.id ?? '', noun: 'that_can_be', state: c.state, ...(t.area ? { area: t.area } : { floor: t.floor }), rank: 1 };
  }
  if (t.areaOnly && (!c.state || entities.length > MAX_READS)) return t.floor && !t.area ? readAreas(entities, home) : readArea(t.area, home);
  const asked = c.state ?? (t.kind?.id === 'motion' ? 'on' : undefined);
  if (entities.length > MAX_READS) {
    if (t.floor && !t.area) {
      const r = readAreas(entities, home);
      return isReply(r) ? r : { ...r, entities, asked, ask };
    }
    const whole = home.offered.state(t.area);
    if (whole) return { calls: [whole], entities, asked, ask };
  }
  // "is there motion in the hallway" asks whether it is on.
  const r = readEach(entities, home, asked);
  return isReply(r) ? r : { ...r, ask };
}

function planCamera(c: Captures, home: Home): Planned | Reply | null {
  const v = home.vocabulary;
  const cameras = v.entities.filter((e) => e.kind === 'camera');
  let found: Entity[];
  if (c.names.length) {
    const t = resolveTarget(c, v, 'read', home.context);
    if (isReply(t)) return t;
    found = t.entities.filter((e) => e.kind === 'camera');
    // "who is at the front door": the camera on the same device, else in the same area.
    if (!found.length) found = cameras.filter((cam) => t.entities.some((e) => e.deviceId === cam.deviceId));
    if (!found.length) found = cameras.filter((cam) => t.entities.some((e) => e.area && e.area === cam.area));
    if (!found.length)
      return t.entities.length === 1
        ? { type: 'unsupported', entity: t.entities[0], verb: 'look_through', rank: 2 }
        : { type: 'not_found', what: '', noun: 'camera', rank: 1 };
  } else if (c.kind) {
    const t = resolveTarget(c, v, 'read', home.context);
    if (isReply(t)) return t;
    found = t.entities.filter((e) => e.kind === 'camera');
  } else if (c.hint) {
    const words = c.hint.split(' ');
    const sees = (cam: Entity) => {
      const own = v.classEntity.get(cam.id)?.words ?? new Set<string>();
      const area = new Set((cam.area ?? '').toLowerCase().split(/\s+/));
      return words.every((w) => own.has(w) || area.has(w));
    };
    found = cameras.filter(sees);
    if (!found.length) found = cameras;
  } else if (c.area) {
    found = cameras.filter((cam) => (cam.area ?? '').toLowerCase() === c.area!.value.toLowerCase());
  } else {
    found = cameras;
  }
  if (!found.length) return { type: 'not_found', what: '', noun: 'camera', area: c.area?.value, rank: 1 };
  const calls: PlannedCall[] = [];
  const done: Entity[] = [];
  for (const cam of sortEntities(found)) {
    if (calls.length >= MAX_CAMERAS) break;
    const call = home.offered.camera(cam);
    if (!call) continue;
    calls.push(call);
    done.push(cam);
  }
  if (!calls.length) return { type: 'not_here', entities: found, verb: 'look_through', rank: 3 };
  return { calls, entities: done };
}
