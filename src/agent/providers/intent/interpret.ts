// One utterance -> tool calls or a reply. Every template match is resolved to
// entities and then to calls on the offered tools; the best-scoring reading that
// yields calls wins, else the most useful reply (ambiguity, "cannot here", ...).
import type { Entity } from '../../../devices/model.js';
import { actionsOf, hasColor } from '../../../tools/parameters.js';
import { matchAll, type Captures, type Match } from './matcher.js';
import { tokenize } from './normalize.js';
import { isReply, resolveTarget, sortEntities, type Reply, type Target } from './resolve.js';
import { INTENT_KINDS, type IntentId } from './sentences.js';
import { scaleToRange, snap, type OfferedTools, type PlannedCall } from './tools.js';
import type { Vocabulary } from './vocabulary.js';

export interface Home {
  vocabulary: Vocabulary;
  offered: OfferedTools;
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
}

const MAX_TOKENS = 40;
const MAX_COMMANDS = 20;
const MAX_READS = 10;
const MAX_CAMERAS = 3;

/** What each intent does, for messages ("I can't <verb> the camera"). */
export const VERB: Record<IntentId, string> = {
  HassTurnOn: 'turn on',
  HassTurnOff: 'turn off',
  HassLightSet: 'dim',
  HassLightSetColor: 'change the colour of',
  HassSetLevel: 'set',
  HassClimateSetTemperature: 'set the temperature of',
  HassClimateSetMode: 'change the mode of',
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
  HassCameraImage: 'look through',
  UnknownDevice: 'use',
};

/** What each command intent acts on, for "I could not find a ...". */
const NOUN: Partial<Record<IntentId, string>> = {
  HassTurnOn: 'light or switch',
  HassTurnOff: 'light or switch',
  HassLightSet: 'dimmable light',
  HassLightSetColor: 'colour light',
  HassSetLevel: 'light, thermostat or cover',
  HassClimateSetTemperature: 'thermostat',
  HassClimateSetMode: 'thermostat',
  HassOpenCover: 'door, blind or cover',
  HassCloseCover: 'door, blind or cover',
  HassStopCover: 'door, blind or cover',
  HassSetPosition: 'door, blind or cover',
  HassLock: 'lock',
  HassUnlock: 'lock',
  HassPress: 'button',
  HassCameraImage: 'camera',
};

type Planned = { calls: PlannedCall[]; entities: Entity[]; asked?: string; intent?: IntentId };
type Step = { action?: string; extra?: Record<string, unknown> };

export function interpret(text: string, home: Home): Interpretation {
  const tokens = tokenize(text, true);
  // Commands and questions are short; a long text is not one.
  const matches = tokens.length <= MAX_TOKENS ? matchAll(tokens, home.vocabulary) : [];
  let best: { reply: Reply; match: Match } | undefined;
  for (const m of matches) {
    const r = plan(m, home);
    if (!r) continue;
    if (isReply(r)) {
      if (!best || r.rank > best.reply.rank) best = { reply: r, match: m };
      continue;
    }
    // A clear question back from a better reading beats acting on a worse one.
    if (best && best.reply.rank >= 3 && best.match.score > m.score) break;
    return { intent: r.intent ?? m.intent, template: m.template, calls: r.calls, entities: r.entities, asked: r.asked };
  }
  if (best) return { intent: best.match.intent, template: best.match.template, calls: [], reply: best.reply, entities: [] };
  return { calls: [], reply: { type: 'not_understood', rank: 0 }, entities: [] };
}

function plan(m: Match, home: Home): Planned | Reply | null {
  const c = m.captures;
  switch (m.intent) {
    case 'UnknownDevice':
      return { type: 'not_understood', unknown: c.any && !knowsAny(c.any, home.vocabulary) ? c.any : undefined, rank: 0 };
    case 'HassGetAll':
      return readArea(undefined, home);
    case 'HassGetArea':
      return c.area ? readArea(c.area.value, home) : null;
    case 'HassGetState':
      return planRead(c, home);
    case 'HassCameraImage':
      return planCamera(c, home);
    default:
      return planCommand(m.intent, c, home);
  }
}

/** Did the unknown words contain a known name (then the sentence, not the device, was the problem)? */
function knowsAny(words: string, v: Vocabulary): boolean {
  const tokens = tokenize(words);
  for (let i = 0; i < tokens.length; i++) if (v.names.match(tokens, i).length || v.areas.match(tokens, i).length) return true;
  return false;
}

// ------------------------------------------------------------------ commands

function hasBrightness(e: Entity): boolean {
  return e.kind === 'light' && ('brightness' in e.ranges || 'brightness' in e.attributes);
}

function brightnessStep(e: Entity, percent: number): Step | Reply {
  if (percent < 0 || percent > 100) return { type: 'out_of_range', entity: e, what: 'brightness', min: 0, max: 100, unit: '%', rank: 3 };
  if (percent === 0) return { action: 'turn_off' };
  return { action: 'turn_on', extra: { brightness: scaleToRange(percent, e.ranges.brightness ?? { min: 0, max: 255 }) } };
}

function temperatureStep(e: Entity, value: number): Step | Reply {
  const r = e.ranges.temperature;
  if (!r) return { type: 'unsupported', entity: e, verb: 'set the temperature of', rank: 2 };
  if (value < r.min || value > r.max) return { type: 'out_of_range', entity: e, what: 'temperature', min: r.min, max: r.max, unit: e.unit ?? '', rank: 3 };
  return { action: 'set_temperature', extra: { temperature: snap(value, r) } };
}

function preferredOnMode(e: Entity): string | undefined {
  const modes = e.options.mode ?? [];
  return ['heat', 'auto', 'heat_cool', 'cool'].find((m) => modes.includes(m)) ?? modes.find((m) => m !== 'off');
}

/** What to do to one entity for this intent; null when the intent does not apply to its kind. */
function stepFor(intent: IntentId, e: Entity, c: Captures, t: Target): Step | Reply | null {
  const kinds = INTENT_KINDS[intent] ?? [];
  if (!kinds.includes(e.kind)) {
    // A switch called "lamp" found by the word "light" cannot dim.
    if ((intent === 'HassLightSet' || intent === 'HassSetLevel') && e.kind === 'switch' && t.kind?.id === 'light') {
      return { type: 'unsupported', entity: e, verb: 'dim', rank: 2 };
    }
    return null;
  }
  const actions = actionsOf(e);
  const unsupported = (verb = VERB[intent]): Reply => ({ type: 'unsupported', entity: e, verb, rank: 2 });
  const n = c.number;
  switch (intent) {
    case 'HassTurnOn':
    case 'HassTurnOff': {
      const on = intent === 'HassTurnOn';
      if (e.kind !== 'climate') return { action: on ? 'turn_on' : 'turn_off' };
      // Thermostats: only when named or asked for as heating; "everything" leaves them alone.
      if (!t.named && t.kind?.id !== 'climate') return null;
      const mode = on ? preferredOnMode(e) : (e.options.mode ?? []).includes('off') ? 'off' : undefined;
      return mode && actions.includes('set_mode') ? { action: 'set_mode', extra: { mode } } : unsupported();
    }
    case 'HassLightSetColor':
      if (!c.color) return null;
      return hasColor(e) ? { action: 'turn_on', extra: { color: c.color } } : unsupported();
    case 'HassLightSet':
      if (!n || n.unit === 'degree') return null;
      return hasBrightness(e) ? brightnessStep(e, n.value) : unsupported('dim');
    case 'HassSetLevel': {
      if (!n) return null;
      if (e.kind === 'climate') return n.unit === 'percent' ? null : temperatureStep(e, n.value);
      if (n.unit === 'degree') return null;
      if (e.kind === 'light') return hasBrightness(e) ? brightnessStep(e, n.value) : unsupported('dim');
      if (e.kind === 'cover') {
        if (!actions.includes('set_position')) return unsupported('move');
        if (n.value < 0 || n.value > 100) return { type: 'out_of_range', entity: e, what: 'position', min: 0, max: 100, unit: '%', rank: 3 };
        return { action: 'set_position', extra: { position: scaleToRange(n.value, e.ranges.position ?? { min: 0, max: 100 }) } };
      }
      const r = e.ranges.value ?? { min: 0, max: 100 };
      if (n.value < r.min || n.value > r.max) return { type: 'out_of_range', entity: e, what: 'value', min: r.min, max: r.max, unit: e.unit ?? '', rank: 3 };
      return { extra: { value: snap(n.value, r) } };
    }
    case 'HassClimateSetTemperature':
      if (!n || n.unit === 'percent') return null;
      return temperatureStep(e, n.value);
    case 'HassClimateSetMode': {
      const mode = c.mode;
      if (!mode || !(e.options.mode ?? []).includes(mode) || !actions.includes('set_mode')) return unsupported(`set to ${mode?.replace(/_/g, ' ') ?? 'that mode'}`);
      return { action: 'set_mode', extra: { mode } };
    }
    case 'HassOpenCover':
      return actions.includes('open') ? { action: 'open' } : unsupported();
    case 'HassCloseCover':
      return actions.includes('close') ? { action: 'close' } : unsupported();
    case 'HassStopCover':
      return actions.includes('stop') ? { action: 'stop' } : unsupported();
    case 'HassSetPosition': {
      if (!n || n.unit === 'degree') return null;
      if (!actions.includes('set_position')) return unsupported();
      if (n.value < 0 || n.value > 100) return { type: 'out_of_range', entity: e, what: 'position', min: 0, max: 100, unit: '%', rank: 3 };
      return { action: 'set_position', extra: { position: scaleToRange(n.value, e.ranges.position ?? { min: 0, max: 100 }) } };
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
  const resolved = resolveTarget(c, v, 'command');
  if (isReply(resolved)) return resolved;
  let t = resolved;
  if (t.implicit) {
    // Only a few commands have an obvious target when none is said.
    if (intent === 'HassClimateSetTemperature' || intent === 'HassClimateSetMode') t = { ...t, entities: t.entities.filter((e) => e.kind === 'climate') };
    else if (intent === 'HassLock') t = { ...t, entities: t.entities.filter((e) => e.kind === 'lock'), plural: true };
    else return null;
  }
  // "make it 22 degrees in the living room": the area narrows, it is not the target.
  if (t.areaOnly && (intent === 'HassClimateSetTemperature' || intent === 'HassClimateSetMode')) t = { ...t, plural: false };

  const ok: Array<{ e: Entity; step: Step }> = [];
  const refusals: Reply[] = [];
  for (const e of t.entities) {
    const step = stepFor(intent, e, c, t);
    if (!step) continue;
    if (isReply(step)) refusals.push(step);
    else ok.push({ e, step });
  }
  if (!ok.length) {
    if (refusals.length && (refusals.length === 1 || t.named)) return refusals.sort((a, b) => b.rank - a.rank)[0];
    if (t.named && t.entities.length === 1) return { type: 'unsupported', entity: t.entities[0], verb: VERB[intent], rank: 2 };
    return { type: 'not_found', what: NOUN[intent] ?? 'device', area: t.area, rank: 1 };
  }
  // Several, said in the singular, or of different kinds for a bare number: ask which.
  const mixed = intent === 'HassSetLevel' && new Set(ok.map((o) => o.e.kind)).size > 1;
  if (ok.length > 1 && (!t.plural || mixed)) return { type: 'ambiguous', candidates: ok.map((o) => o.e), rank: 3 };

  const calls: PlannedCall[] = [];
  const entities: Entity[] = [];
  for (const { e, step } of ok.slice(0, MAX_COMMANDS)) {
    const call = home.offered.control(e, step.action, step.extra);
    if (!call) continue;
    calls.push(call);
    entities.push(e);
  }
  if (!calls.length) return { type: 'not_here', entities: ok.map((o) => o.e), verb: VERB[intent], rank: 3 };
  return { calls, entities, intent: specificIntent(intent, ok[0].step) };
}

/** "set X to 21" is a climate, light or cover intent once the entity is known. */
function specificIntent(intent: IntentId, step: Step): IntentId {
  if (intent !== 'HassSetLevel') return intent;
  if (step.action === 'set_temperature') return 'HassClimateSetTemperature';
  if (step.action === 'set_position') return 'HassSetPosition';
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
      return e.kind === 'cover' || (e.kind === 'binary_sensor' && ['door', 'window', 'garage_door', 'opening'].includes(e.deviceClass ?? ''));
    case 'heating':
    case 'cooling':
    case 'idle':
      return e.kind === 'climate';
    default:
      return e.kind === 'switch' || e.kind === 'light' || e.kind === 'binary_sensor' || e.kind === 'climate';
  }
}

function readArea(area: string | undefined, home: Home): Planned | Reply {
  const v = home.vocabulary;
  const entities = area ? v.entities.filter((e) => (e.area ?? '').toLowerCase() === area.toLowerCase()) : v.entities;
  const whole = home.offered.state(area);
  if (whole) return { calls: [whole], entities: sortEntities(entities) };
  // No get_state here: read what can be read one by one.
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

function planRead(c: Captures, home: Home): Planned | Reply | null {
  const t = resolveTarget(c, home.vocabulary, 'read');
  if (isReply(t)) return t;
  if (t.implicit) return null;
  // "how is everything", "what is everything in the kitchen".
  if (t.kind?.id === 'everything' && !c.state) return readArea(t.area, home);
  let entities = t.entities;
  if (c.state && !t.named) {
    const fitting = entities.filter((e) => stateApplies(e, c.state!));
    if (fitting.length) entities = fitting;
    else if (!t.areaOnly) return { type: 'not_found', what: `${t.kind?.id ?? 'device'} that can be ${c.state}`, area: t.area, rank: 1 };
  }
  if (t.areaOnly && (!c.state || entities.length > MAX_READS)) return readArea(t.area, home);
  if (entities.length > MAX_READS) {
    const whole = home.offered.state(t.area);
    if (whole) return { calls: [whole], entities, asked: c.state };
  }
  // "is there motion in the hallway" asks whether it is on.
  return readEach(entities, home, c.state ?? (t.kind?.id === 'motion' ? 'on' : undefined));
}

function planCamera(c: Captures, home: Home): Planned | Reply | null {
  const v = home.vocabulary;
  const cameras = v.entities.filter((e) => e.kind === 'camera');
  let found: Entity[];
  if (c.name) {
    const t = resolveTarget(c, v, 'read');
    if (isReply(t)) return t;
    found = t.entities.filter((e) => e.kind === 'camera');
    // "who is at the front door": the camera on the same device, else in the same area.
    if (!found.length) found = cameras.filter((cam) => t.entities.some((e) => e.deviceId === cam.deviceId));
    if (!found.length) found = cameras.filter((cam) => t.entities.some((e) => e.area && e.area === cam.area));
    if (!found.length) return t.entities.length === 1 ? { type: 'unsupported', entity: t.entities[0], verb: 'look through', rank: 2 } : { type: 'not_found', what: 'camera', rank: 1 };
  } else if (c.kind) {
    const t = resolveTarget(c, v, 'read');
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
  if (!found.length) return { type: 'not_found', what: 'camera', area: c.area?.value, rank: 1 };
  const calls: PlannedCall[] = [];
  const done: Entity[] = [];
  for (const cam of sortEntities(found)) {
    if (calls.length >= MAX_CAMERAS) break;
    const call = home.offered.camera(cam);
    if (!call) continue;
    calls.push(call);
    done.push(cam);
  }
  if (!calls.length) return { type: 'not_here', entities: found, verb: 'look through', rank: 3 };
  return { calls, entities: done };
}
