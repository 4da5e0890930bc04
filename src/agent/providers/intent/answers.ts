// What the intent model says: replies when it will not call a tool (not
// understood, which one, cannot here), and the plain-sentence answer composed
// from tool results in the second round.
import type { Entity } from '../../../devices/model.js';
import { selectGroup } from '../../../tools/group-call.js';
import { actionsOf, hasColor, hasColorTemp } from '../../../tools/parameters.js';
import type { GeneratedTool } from '../../../tools/types.js';
import type { Reply } from './resolve.js';
import { attribute, outcomeOf, parseStateLine, unquote, type StateLine } from './results.js';
import { cleanDeviceText } from '../../../tools/device-text.js';
import { personName, resultText, sentence, spoken, theArea, theName } from './names.js';
import { HISTORY_TOOL, historySentence, historyWas, isMotion, type HistoryAsk } from './history.js';
import { AUDIT_TOOL, auditSentence, POLICY_TOOL, policySentence } from './records.js';
import { NEW_KIND_ACTIONS, PARTICIPLE_ACTIONS, type Responses, type Slots } from './responses.js';
import type { OfferedTools } from './tools.js';

// ------------------------------------------------------------------ replies

const PARTICIPLES = new Set<string>(PARTICIPLE_ACTIONS);

function whatItDoes(e: Entity, r: Responses): string {
  if (e.kind === 'camera') return r.say('can_camera');
  if (e.kind === 'sensor' || e.kind === 'binary_sensor') return r.say('can_read');
  const can = actionsOf(e)
    .filter((a) => PARTICIPLES.has(a))
    .map((a) => r.say(`participle_${a}`));
  // A light's own settings, so a refusal does not describe a dimmable white lamp as only on and off.
  if (e.kind === 'light') {
    if ('brightness' in e.ranges || 'brightness' in e.attributes) can.push(r.say('participle_dim'));
    if (hasColor(e)) can.push(r.say('participle_set_colour'));
    if (hasColorTemp(e)) can.push(r.say('participle_set_colour_temp'));
  }
  return can.length ? r.say('can_be', { actions: r.list(can) }) : '';
}

/** "a toaster", "an oven": the `indefinite_vowel` form before the language's `indefinite_vowels`. */
function withArticle(r: Responses, what: string): string {
  const lower = what.toLowerCase();
  const vowel = r
    .say('indefinite_vowels')
    .toLowerCase()
    .split(/\s+/)
    .some((v) => v && lower.startsWith(v));
  return r.say(vowel ? 'indefinite_vowel' : 'indefinite', { what });
}

/**
 * Up to three phrasings this home and these tools really support; with `placeholders`, fewer than two are filled up
 * with the language's `<device>` phrasings (the "not understood" answer's; a chat's `help` shows only real ones).
 */
export function examples(entities: Entity[], offered: OfferedTools, r: Responses, placeholders = true): string[] {
  const sorted = [...entities].sort((a, b) => (a.id < b.id ? -1 : 1));
  const usable = (e: Entity) => {
    const words = spoken(e.name).split(' ').length;
    return words <= 5 && /^[\w' -]+$/.test(spoken(e.name));
  };
  const out: string[] = [];
  const add = (text: string | undefined) => {
    if (text && out.length < 3 && !out.includes(text)) out.push(text);
  };
  const first = (pred: (e: Entity) => boolean) => sorted.find((e) => usable(e) && pred(e));
  const light = first((e) => (e.kind === 'light' || e.kind === 'switch') && !!offered.actuator(e, 'turn_on'));
  if (light) add(r.say('example_turn_on', { name: theName(r, light) }));
  const lock = first((e) => e.kind === 'lock' && !!offered.read(e));
  if (lock) {
    // "is the front door locked?" reads better than "is the front door lock locked?".
    const said = (x: Entity) => [x.name, ...x.aliases].map((n) => n.trim().toLowerCase());
    const unique = lock.aliases.find(
      (a) =>
        !/\block\b/i.test(a) && /^[\w' -]+$/.test(a) && a.split(' ').length <= 4 && !sorted.some((o) => o !== lock && said(o).includes(a.trim().toLowerCase())),
    );
    add(r.say('example_locked', { name: unique ? theName(r, { name: unique, id: lock.id }) : theName(r, lock) }));
  }
  const climate = first((e) => e.kind === 'climate' && !!offered.actuator(e, 'set_temperature'));
  if (climate) add(r.say('example_set_temperature', { name: theName(r, climate) }));
  const temp = first((e) => e.kind === 'sensor' && e.deviceClass === 'temperature' && !!e.area && !!offered.read(e));
  if (temp?.area && /^[\w' -]+$/.test(spoken(temp.area))) add(r.say('example_temperature', { area: theArea(r, temp.area) }));
  const cover = first((e) => e.kind === 'cover' && !!offered.actuator(e, 'open'));
  if (cover) add(r.say('example_open', { name: theName(r, cover) }));
  const camera = first((e) => e.kind === 'camera' && !!offered.camera(e));
  if (camera) add(r.say('example_camera', { name: theName(r, camera) }));
  if (placeholders) for (const k of ['example_placeholder_1', 'example_placeholder_2', 'example_placeholder_3']) if (out.length < 2) add(r.say(k));
  const placeholder = new Set(['example_placeholder_1', 'example_placeholder_2', 'example_placeholder_3'].map((k) => r.say(k)));
  if (out.length < 3 && out[0] && !placeholder.has(out[0])) {
    const read = first((e) => !!e.area && !!offered.state(e.area));
    if (read?.area && /^[\w' -]+$/.test(spoken(read.area))) add(r.say('example_area', { area: theArea(r, read.area) }));
  }
  return out;
}

export function replyText(reply: Reply, hints: string[], r: Responses): string {
  const tryThis = hints.length ? ` ${r.say('try_this', { examples: r.list(hints.map((x) => r.say('quoted', { text: x }))) })}` : '';
  switch (reply.type) {
    case 'not_understood': {
      const unknown = reply.unknown ? spoken(reply.unknown, 40) : '';
      const closest = reply.closest?.length ? ` ${r.say('closest', { names: r.list(reply.closest.map((e) => theName(r, e))) })}` : '';
      if (unknown && closest) return `${r.say('unknown_device', { unknown })}${closest}`;
      return `${r.say('not_understood')}${unknown ? ` ${r.say('not_understood_unknown', { unknown })}` : ''}${tryThis}`;
    }
    case 'which_area':
      return r.say('which_area');
    case 'which_device':
      return r.say('which_device');
    case 'too_many':
      return r.say('too_many', { count: reply.count });
    case 'out_of_scope': {
      const key = `out_of_scope_${reply.topic}`;
      return `${r.say(r.has(key) ? key : 'out_of_scope')}${tryThis}`;
    }
    case 'question':
      return r.say('question');
    case 'refused':
      return r.say(reply.key);
    case 'not_found': {
      // "is anyone in the den": a motion sensor is what was looked for, not "an anyone".
      const noun = reply.noun ?? (reply.kind && r.has(`noun_${reply.kind}`) ? reply.kind : undefined);
      const what = noun
        ? r.say(`noun_${noun}`, { kind: spoken(reply.what || r.say('word_device'), 40), state: reply.state })
        : withArticle(r, spoken(reply.what, 60));
      // On a floor: "a light upstairs", "a light on the first floor" (never "in the upstairs").
      if (!reply.area && reply.floor) return `${r.say('not_found', { what: `${what}${floorPlace(reply.floor, r)}` })}${tryThis}`;
      return `${reply.area ? r.say('not_found_in_area', { what, area: theArea(r, reply.area) }) : r.say('not_found', { what })}${tryThis}`;
    }
    case 'unsupported': {
      const verb = r.say(`verb_${reply.verb}`, { value: reply.value });
      if (reply.why) return r.say('unsupported_why', { verb, name: theName(r, reply.entity), why: r.say(`why_${reply.why}`) });
      return `${r.say('unsupported', { verb, name: theName(r, reply.entity) })} ${whatItDoes(reply.entity, r)}`.trim();
    }
    case 'ambiguous': {
      const names = reply.candidates.map((e) => theName(r, e));
      const dup = new Set(names.filter((n, i) => names.indexOf(n) !== i));
      const labels = reply.candidates.map((e, i) => (dup.has(names[i]) && e.area ? r.say('in_area', { name: names[i], area: theArea(r, e.area) }) : names[i]));
      // "or one of 1 more" is no way to speak: a list that would leave out only one says it too.
      const shown = labels.length <= 7 ? labels : labels.slice(0, 6);
      const more = labels.length - shown.length;
      return r.say('ambiguous', { choices: more > 0 ? r.say('ambiguous_more', { shown: shown.join(r.say('list_separator')), count: more }) : r.list(shown) });
    }
    case 'not_here': {
      const names = r.list(reply.entities.slice(0, 3).map((e) => theName(r, e)));
      const verb = r.say(`verb_${reply.verb}`);
      if (reply.entities.length > 3) return r.say('not_here_more', { verb, names, count: reply.entities.length - 3 });
      // One device not acted on: ask the policy why ("why can't I unlock the front door?" names the rule, and how to allow it).
      if (reply.entities.length === 1 && !READ_VERBS.has(reply.verb) && r.has('not_here_act')) return r.say('not_here_act', { verb, names });
      return r.say('not_here', { verb, names });
    }
    case 'out_of_range': {
      const unit = reply.unit === '%' ? '%' : reply.unit ? ` ${spoken(reply.unit, 8)}` : '';
      return r.say('out_of_range', { name: theName(r, reply.entity), what: r.say(`quantity_${reply.what}`), min: reply.min, max: reply.max, unit });
    }
  }
}

// ------------------------------------------------------------------ round 2

export interface AnsweredCall {
  /** Tool name without `host__`. */
  tool: string;
  args: Record<string, unknown>;
  /** The tool message's content. */
  result: string;
}

export interface AnswerContext {
  entity(id: string): Entity | undefined;
  tool(name: string): GeneratedTool | undefined;
  /** A state word the question asked about ("locked"), for yes/no. */
  asked?: string;
  /** A question over several devices: which ones are in the asked state, how many, or whether any. */
  ask?: 'which' | 'count' | 'any' | 'all' | HistoryAsk;
  /** The entities the question was about (a whole-area read may return more). */
  subjects?: string[];
  /** The kind a question asked about ("what lights are on?"), to say "No lights are on." */
  kind?: string;
  /** A relative change ("dim it a bit", "turn the heating up"): which way, so the answer says it. */
  change?: 'up' | 'down';
  /** What the model says in this language. */
  responses: Responses;
}

function percentOf(value: number, e: Entity | undefined, max?: number): number {
  const r = e?.ranges.brightness ?? { min: 0, max: max ?? 255 };
  return Math.round(((value - r.min) / (r.max - r.min || 1)) * 100);
}

function unitOf(e: Entity | undefined): string {
  const u = e?.unit ? spoken(e.unit, 8) : '';
  return u ? (u === '%' ? '%' : ` ${u}`) : '';
}

/** "open the garage door", "set the kitchen light to 30%"; as `doing`: "Opening the garage door". */
function actionPhrase(
  action: string | undefined,
  args: Record<string, unknown>,
  e: Entity | undefined,
  fallbackName: string,
  r: Responses,
  form: 'do' | 'doing' = 'do',
): string {
  const name = e ? theName(r, e) : fallbackName;
  const say = (what: string, slots: Slots = {}) => r.say(`${form}_${what}`, { name, ...slots });
  const num = (k: string) => (typeof args[k] === 'number' ? (args[k] as number) : undefined);
  switch (action) {
    case 'turn_on': {
      // The tool's percentage as said; a device-scale brightness (a flow's) as its percentage.
      const pct = num('brightness_pct') ?? (num('brightness') !== undefined ? percentOf(num('brightness')!, e) : undefined);
      return pct !== undefined ? say('set_to', { value: `${Math.round(pct)}%` }) : say('turn_on');
    }
    case 'turn_off':
      return say('turn_off');
    case 'set_position':
      return say('move_to', { value: `${num('position') ?? '?'}%` });
    case 'set_mode':
      return args.mode === 'off' ? say('turn_off') : say('set_to', { value: spoken(String(args.mode ?? ''), 20).replace(/_/g, ' ') });
    case 'set_temperature':
      return say('set_to', { value: `${num('temperature') ?? '?'}${unitOf(e)}` });
    case 'set_value':
      return say('set_to', { value: `${num('value') ?? '?'}${unitOf(e)}` });
    case 'select_option':
      return say('set_to', { value: spoken(String(args.option ?? ''), 30) });
    case 'open':
    case 'close':
    case 'stop':
    case 'lock':
    case 'unlock':
    case 'press':
    case 'camera':
      return say(action);
    case 'set_humidity':
      return say('set_to', { value: `${num('humidity') ?? '?'}%` });
    default:
      if ((NEW_KIND_ACTIONS as readonly string[]).includes(action ?? '')) return say(action!);
      return say('read');
  }
}

/** The logical state of a line in question vocabulary: `on`, `open`, `locked`... */
function logicalState(e: Entity | undefined, line: StateLine): string | undefined {
  const main = line.parts[0];
  if (!main) return undefined;
  if (e?.kind === 'binary_sensor') {
    const v = main.split(' ').pop();
    if (['door', 'window', 'garage_door', 'opening'].includes(e.deviceClass ?? '')) return v === 'on' ? 'open' : v === 'off' ? 'closed' : undefined;
    if (e.deviceClass === 'vibration') return v === 'on' ? 'vibrating' : v === 'off' ? 'still' : undefined;
    return v;
  }
  // Anywhere but home (a zone, or not_home) is away.
  if (e?.kind === 'device_tracker') return main === 'home' ? 'home' : 'away';
  if (e?.kind === 'climate') {
    const mode = attribute(line.parts, 'mode');
    const activity = attribute(line.parts, 'activity');
    return activity && ['heating', 'cooling', 'idle'].includes(activity) ? activity : mode === 'off' ? 'off' : 'on';
  }
  return /^[a-z]+$/.test(main) ? main : undefined;
}

const SAME_VOCABULARY = [
  ['on', 'off'],
  ['open', 'closed', 'opening', 'closing', 'stopped'],
  ['locked', 'unlocked', 'locking', 'unlocking', 'jammed'],
  ['heating', 'cooling', 'idle', 'off'],
  ['home', 'away'],
  ['vibrating', 'still'],
];

function yesNo(asked: string | undefined, actual: string | undefined): 'yes' | 'no' | undefined {
  if (!asked || !actual) return undefined;
  if (!SAME_VOCABULARY.some((v) => v.includes(asked) && v.includes(actual))) return undefined;
  return asked === actual ? 'yes' : 'no';
}

/** How an answer names a device; a tracker is a person (or their phone), named as written: "Anna", not "the anna". */
function nameOf(r: Responses, line: StateLine, e: Entity | undefined): string {
  if (e?.kind === 'device_tracker') return personName(e);
  return e ? theName(r, e) : theName(r, { name: line.name, id: line.id });
}

/** A state line as a sentence: "The front door lock is locked." */
export function stateSentence(line: StateLine, e: Entity | undefined, r: Responses, asked?: string): string {
  const name = nameOf(r, line, e);
  const main = line.parts[0] ?? '';
  const offline = line.offline ? ` ${sentence(r.say('state_offline', { name }))}` : '';
  const answer = yesNo(asked, line.noState ? undefined : logicalState(e, line));
  const say = (body: string) => (answer ? r.say(answer === 'yes' ? 'answer_yes' : 'answer_no', { answer: body }) : sentence(body));
  if (line.noState) return `${sentence(r.say('state_not_reported', { name }))}${offline}`;
  const is = (state: string) => r.say('state_is', { name, state });
  const kind = e?.kind;
  let body: string;
  if (kind === 'light' || kind === 'switch') {
    const b = attribute(line.parts, 'brightness');
    const m = b?.match(/(-?[\d.]+) of ([\d.]+)\)?$/);
    body = main === 'on' && m ? r.say('state_on_at', { name, value: `${percentOf(Number(m[1]), e, Number(m[2]))}%` }) : is(clean(main));
  } else if (kind === 'cover') {
    const pos = attribute(line.parts, 'position');
    body = pos && !['open', 'closed'].includes(main) ? r.say('state_at', { name, state: clean(main), value: clean(pos) }) : is(clean(main));
  } else if (kind === 'lock') {
    body = is(clean(main));
  } else if (kind === 'device_tracker') {
    body =
      main === 'home'
        ? r.say('state_person_home', { name })
        : main === 'not_home' || main === 'away'
          ? r.say('state_person_away', { name })
          : r.say('state_person_zone', { name, zone: cleanDeviceText(unquote(main), 40) });
  } else if (kind === 'climate') {
    const mode = attribute(line.parts, 'mode') ?? '';
    const target = attribute(line.parts, 'target temperature');
    const current = attribute(line.parts, 'current temperature');
    const activity = attribute(line.parts, 'activity');
    const now = current ? r.say('climate_now', { value: clean(current) }) : '';
    const doing = activity && activity !== 'off' && activity !== mode ? r.say('climate_doing', { activity: clean(activity) }) : '';
    body =
      mode === 'off'
        ? r.say('climate_off', { name, now })
        : r.say('climate_set', {
            name,
            mode: clean(mode.replace(/_/g, ' ')) || r.say('climate_unknown_mode'),
            target: target ? r.say('climate_target', { value: clean(target) }) : '',
            doing,
            now,
          });
  } else if (kind === 'binary_sensor') {
    const v = main.split(' ').pop();
    const dc = e?.deviceClass ?? '';
    const on = v === 'on';
    if (v !== 'on' && v !== 'off') body = r.say('state_reports', { name, value: clean(main) });
    else if (['motion', 'occupancy', 'presence'].includes(dc)) body = r.say(on ? 'state_motion' : 'state_no_motion', { name });
    else if (['door', 'window', 'garage_door', 'opening'].includes(dc)) body = is(r.say(on ? 'word_open' : 'word_closed'));
    else if (dc === 'moisture') body = is(r.say(on ? 'word_wet' : 'word_dry'));
    else if (dc === 'vibration') body = is(r.say(on ? 'word_vibrating' : 'word_still'));
    else if (['smoke', 'gas', 'carbon_monoxide', 'problem', 'safety', 'tamper'].includes(dc))
      body = on ? r.say('state_detects', { name, what: dc.replace(/_/g, ' ') }) : r.say('state_clear', { name });
    else body = is(v);
  } else if (kind === 'camera') {
    body = r.say(main.startsWith('latest frame') ? 'state_picture_ready' : 'state_no_picture', { name });
  } else if (kind === 'sensor' || !kind) {
    body = line.parts.length === 1 ? is(clean(main)) : r.say('state_parts', { name, parts: line.parts.map(clean).join(r.say('list_separator')) });
  } else {
    body = is(line.parts.map(clean).join(r.say('list_separator')));
  }
  return `${say(body)}.${offline}`;
}

function clean(value: string): string {
  return spoken(unquote(value), 80).replace(/\.$/, '');
}

/** The white a light reports, in words: "warm white (about 2700 K)"; undefined when its line has none. */
function whiteOf(line: StateLine, r: Responses): string | undefined {
  for (const p of line.parts) {
    const m = /^colour temperature about (\d+) K \(([^()]+)\)/.exec(p);
    if (m) return r.say('white_about', { white: clean(m[2]), kelvin: m[1] });
  }
  return undefined;
}

function doneSentence(
  action: string | undefined,
  args: Record<string, unknown>,
  line: StateLine | undefined,
  e: Entity | undefined,
  r: Responses,
  change?: 'up' | 'down',
): string {
  if (!line || line.noState) return r.say('done_action', { action: actionPhrase(action, args, e, r.say('the_device'), r) });
  const name = e ? theName(r, e) : theName(r, { name: line.name, id: line.id });
  const main = clean(line.parts[0] ?? '');
  switch (action) {
    case 'turn_on': {
      const b = attribute(line.parts, 'brightness')?.match(/(-?[\d.]+) of ([\d.]+)\)?$/);
      const pct = b ? percentOf(Number(b[1]), e, Number(b[2])) : undefined;
      // Every property the call changed is said: the colour or the white, and the brightness beside it.
      const color = args.color !== undefined ? line.parts.map((p) => /^colour about ([a-z]+(?: [a-z]+)*)/.exec(p)?.[1]).find(Boolean) : undefined;
      const kelvin = args.color_temp_kelvin ?? args.color_temp;
      const dimmed = args.brightness_pct !== undefined || args.brightness !== undefined;
      const white = kelvin !== undefined ? (whiteOf(line, r) ?? `${kelvin} K`) : undefined;
      // "Dimmed the kitchen light to 40%", "made the lamp warmer": a step says which way it went, and where to.
      if (change && white && !dimmed) return r.say(change === 'down' ? 'done_warmer' : 'done_cooler', { name, value: white });
      if (change && pct !== undefined && dimmed) return r.say(change === 'down' ? 'done_dimmed' : 'done_brightened', { name, value: `${pct}%` });
      const shade = color ?? white;
      if (shade && pct !== undefined && dimmed) return r.say('done_state_at', { name, state: shade, value: `${pct}%` });
      if (shade) return r.say('done_state', { name, state: shade });
      if (pct !== undefined && dimmed) return r.say('done_at', { name, value: `${pct}%` });
      if (pct !== undefined && main === 'on') return r.say('done_on_at', { name, value: `${pct}%` });
      return r.say('done_state', { name, state: main });
    }
    case 'set_percentage': {
      const speed = attribute(line.parts, 'speed') ?? attribute(line.parts, 'percentage');
      if (change && speed) return r.say(change === 'down' ? 'done_lowered' : 'done_raised', { name, value: clean(speed) });
      const s = stateSentence(line, e, r);
      return r.say('done_read', { sentence: `${s[0].toLowerCase()}${s.slice(1)}` });
    }
    case 'set_position': {
      const pos = attribute(line.parts, 'position');
      if (pos && change) return r.say(change === 'down' ? 'done_lowered' : 'done_raised', { name, value: clean(pos) });
      return pos ? r.say('done_at', { name, value: clean(pos) }) : r.say('done_state', { name, state: main });
    }
    case 'set_temperature': {
      const target = attribute(line.parts, 'target temperature');
      const value = target ? clean(target) : `${args.temperature}${unitOf(e)}`;
      if (change) return r.say(change === 'down' ? 'done_lowered' : 'done_raised', { name, value });
      return r.say('done_set_to', { name, value });
    }
    case 'set_mode': {
      const mode = attribute(line.parts, 'mode') ?? String(args.mode ?? '');
      return mode === 'off' ? r.say('done_state', { name, state: mode }) : r.say('done_set_to', { name, value: clean(mode.replace(/_/g, ' ')) });
    }
    default: {
      const s = stateSentence(line, e, r);
      return r.say('done_read', { sentence: `${s[0].toLowerCase()}${s.slice(1)}` });
    }
  }
}

/** What one call was about: its entity, area and action. */
function subjectOf(call: AnsweredCall, ctx: AnswerContext): { entity?: Entity; entityId?: string; area?: string; action?: string; camera: boolean } {
  const tool = ctx.tool(call.tool);
  const a = call.args;
  const fromArgs = typeof a.entity === 'string' ? a.entity : typeof a.camera === 'string' ? a.camera : undefined;
  const single =
    tool && !tool.meta.group && tool.name !== 'get_state' && tool.name !== 'find_entities' && tool.meta.entityIds.length === 1
      ? tool.meta.entityIds[0]
      : undefined;
  const entityId = fromArgs ?? single;
  // get_state and get_history cover cameras too, but only a camera tool looks through one.
  const camera =
    !!tool?.meta.kinds.includes('camera') &&
    tool.capability === 'read' &&
    tool.name !== 'get_state' &&
    tool.name !== HISTORY_TOOL &&
    tool.name !== 'find_entities';
  let action = typeof a.action === 'string' ? a.action : undefined;
  if (!action && tool?.capability === 'actuator' && tool.meta.actions.length === 1) action = tool.meta.actions[0];
  if (!action && tool?.capability === 'read') action = camera ? 'camera' : 'read';
  return { entity: entityId ? ctx.entity(entityId) : undefined, entityId, area: typeof a.area === 'string' ? a.area : undefined, action, camera };
}

function readSentences(result: string, ctx: AnswerContext, asked: string | undefined): string {
  const lines = result
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const states = lines.map((l) => parseStateLine(l));
  const single = states.filter(Boolean).length === 1;
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const s = states[i];
    if (s) {
      out.push(stateSentence(s, ctx.entity(s.id), ctx.responses, single ? asked : undefined));
      continue;
    }
    const more = lines[i].match(/^\((\d+) more\b/);
    const r = ctx.responses;
    if (more) out.push(r.say('read_more', { count: Number(more[1]) }));
    else if (lines[i] === 'no matching entities') out.push(r.say('read_none'));
    else out.push(`${sentence(resultText(lines[i], 200))}.`);
  }
  return out.join(' ');
}

/** Text without its bracketed asides (nested ones too): "1 failed: "X" (offline)" -> "1 failed: "X"". */
function withoutAsides(text: string): string {
  let out = '';
  let depth = 0;
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')' && depth > 0) depth--;
    else if (!depth) out += ch;
  }
  return out.replace(/\s+([.,;:])/g, '$1').replace(/\s{2,}/g, ' ');
}

const PLURAL_KIND: Record<string, string> = { light: 'lights', switch: 'switches', fan: 'fans' };
/** Floor names said as they are, without "on the": "upstairs", "outside". */
const BARE_FLOORS = /^(upstairs|downstairs|outside|outdoors|indoors|inside)$/i;

/** The members of a grouped call, as the tool chose them from what this caller is offered; undefined if unknown. */
function groupMembers(call: AnsweredCall, ctx: AnswerContext): Entity[] | undefined {
  const pool = (ctx.tool(call.tool)?.meta.entityIds ?? []).map((id) => ctx.entity(id)).filter((e): e is Entity => !!e);
  const got = selectGroup(call.args, pool);
  return typeof got === 'string' ? undefined : got;
}

/** Where the members are, as a person says it: " upstairs", " in the kids room", " on the ground floor", or "". */
function groupPlace(args: Record<string, unknown>, members: Entity[], r: Responses): string {
  const shared = (of: (e: Entity) => string | undefined) => {
    const first = of(members[0]!);
    return first && members.every((e) => of(e)?.trim().toLowerCase() === first.trim().toLowerCase()) ? first : undefined;
  };
  // What was asked for first; a list of ids says the place its members share, if they share one.
  const area = typeof args.area === 'string' ? args.area : typeof args.floor === 'string' ? undefined : shared((e) => e.area);
  const floor = typeof args.floor === 'string' ? args.floor : area ? undefined : shared((e) => e.floor);
  if (area) return ` in ${theArea(r, area)}`;
  return floor ? floorPlace(floor, r) : '';
}

/** " upstairs", " on the ground floor": where something on a floor is, as a person says it. */
function floorPlace(floor: string, r: Responses): string {
  return BARE_FLOORS.test(floor.trim()) ? ` ${floor.trim().toLowerCase()}` : ` on ${theArea(r, floor)}`;
}

/** "the 3 lights", "both lights", "the nightlight", "2 lights and the nightlight": the members, counted by kind. */
function groupNoun(members: Entity[], r: Responses): string {
  const kinds = [...new Set(members.map((e) => e.kind))];
  if (kinds.length === 1) {
    if (members.length === 1) return theName(r, members[0]);
    const plural = PLURAL_KIND[kinds[0]!] ?? 'devices';
    return members.length === 2 ? `both ${plural}` : `the ${members.length} ${plural}`;
  }
  const parts = kinds.map((k) => {
    const of = members.filter((e) => e.kind === k);
    return of.length === 1 ? theName(r, of[0]) : `${of.length} ${PLURAL_KIND[k] ?? 'devices'}`;
  });
  return r.list(parts, 'and');
}

/** The first sentence of a grouped call's answer, from its members; undefined where the result's own words stay. */
function groupHead(call: AnsweredCall, ctx: AnswerContext, first: string): string | undefined {
  const members = groupMembers(call, ctx);
  const m = first.match(/^(confirmed|partly done|not allowed|needs approval|failed): .*?\bturned (on|off)\b(?: (\d+) of )?/);
  if (!members?.length || !m) return undefined;
  // The result's count is the pipeline's; where this view of the home counts otherwise, its words stay.
  const count = first.match(/\b(?:all|of|none of the) (\d+)\b/)?.[1] ?? (/ both /.test(first) ? '2' : / the one /.test(first) ? '1' : undefined);
  if (count !== String(members.length)) return undefined;
  const r = ctx.responses;
  const verb = `turned ${m[2]}`;
  const place = groupPlace(call.args, members, r);
  // "lights and switches" only where there are several of each; else "devices", so the plural is never wrong.
  const kinds = [...new Set(members.map((e) => e.kind))];
  const several = kinds.every((k) => PLURAL_KIND[k] && members.filter((e) => e.kind === k).length > 1);
  const noun = several
    ? r.list(
        kinds.map((k) => PLURAL_KIND[k]!),
        'and',
      )
    : kinds.length === 1
      ? (PLURAL_KIND[kinds[0]!] ?? 'devices')
      : 'devices';
  if (m[1] === 'confirmed') return sentence(`${verb} ${groupNoun(members, r)}${place}.`);
  if (m[1] === 'partly done' && m[3]) return sentence(`${verb} ${m[3]} of the ${members.length} ${noun}${place}.`);
  const tail = m[1] === 'needs approval' ? ' yet; nothing was sent.' : '; nothing was sent.';
  if (members.length === 1) return sentence(`${theName(r, members[0])}${place} was not ${verb}${tail}`);
  return sentence(`none of the ${members.length} ${noun}${place} was ${verb}${tail}`);
}

/** A grouped call's result (control_group), spoken: how many, and who needs approval, was refused or failed. */
function groupAnswer(call: AnsweredCall, ctx: AnswerContext): string {
  const lines = call.result
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const head = groupHead(call, ctx, lines[0] ?? '');
  const said = lines.map((l, i) =>
    withoutAsides(
      (i ? l : l.replace(/^(confirmed|partly done|not allowed|needs approval|failed|already handled): /, '')).replace(/, each confirmed by its device\.$/, '.'),
    ),
  );
  // Device names come quoted as data; spoken, they are names.
  const rest = said
    .map((l) => l.replace(/"((?:[^"\\]|\\.)*)"/g, (_, name: string) => spoken(unquote(`"${name}"`), 60)))
    .map((l) => sentence(resultText(l, 400)));
  if (head) rest[0] = head.replace(/\.$/, '');
  return rest.join('. ').concat('.');
}

/** A grouped call's first line, in each of its forms (group-call.ts, groupResult). */
const GROUP_HEAD = /^(confirmed|partly done|not allowed|needs approval|failed|already handled): (\S+ (on|off) |none of the \d+ |the one |every member )/;

/** What a not_here reply's verb is when it only reads: no policy question to point to. */
const READ_VERBS = new Set(['read', 'read_history', 'look_through']);

/** One sentence (or a few) for one tool result. */
export function answerFor(call: AnsweredCall, ctx: AnswerContext): string {
  if (ctx.tool(call.tool)?.meta.group && GROUP_HEAD.test(call.result)) return groupAnswer(call, ctx);
  const { entity, entityId, area, action, camera } = subjectOf(call, ctx);
  const r = ctx.responses;
  const fallbackName = entityId ? theName(r, { name: entityId, id: entityId }) : area ? r.say('devices_in', { area: theArea(r, area) }) : r.say('the_home');
  const name = entity ? theName(r, entity) : fallbackName;
  // The audit and the policy answer in their own words, a refusal too (issue 42).
  if (call.tool === AUDIT_TOOL) {
    const said = auditSentence(call.result.trim(), r, ctx.asked, (n) => theName(r, { name: unquote(`"${n}"`), id: '' }));
    if (said) return said;
  }
  if (call.tool === POLICY_TOOL) {
    const said = policySentence(call.result.trim(), r, name, String(call.args.action ?? 'read'));
    if (said) return said;
  }
  const { outcome, rest } = outcomeOf(call.result);
  const phrase = (form: 'do' | 'doing') =>
    action === 'read' && !entityId
      ? area
        ? r.say(`${form}_read_area`, { area: theArea(r, area) })
        : r.say(`${form}_read_home`)
      : actionPhrase(action, call.args, entity, fallbackName, r, form);
  switch (outcome) {
    case 'confirmed':
      if (/^pressed\b/.test(rest)) return r.say('done_pressed', { name });
      return doneSentence(action, call.args, parseStateLine(rest), entity, r, ctx.change);
    case 'unconfirmed':
      return r.say('unconfirmed', { name });
    case 'needs_approval':
      return r.say('needs_approval', { action: phrase('doing'), reason: resultText(rest, 600) });
    case 'not_allowed':
      return rest ? r.say('not_allowed_why', { action: phrase('do'), reason: resultText(rest, 300) }) : r.say('not_allowed', { action: phrase('do') });
    case 'failed':
      return r.say('failed', { reason: resultText(rest, 300) });
    case 'duplicate':
      return r.say('duplicate');
    case 'other':
      break;
  }
  const text = call.result.trim();
  if (call.tool === HISTORY_TOOL) {
    const said = historySentence(text, {
      entity,
      name,
      asked: ctx.asked,
      ask: ctx.ask === 'which' || ctx.ask === 'count' || ctx.ask === 'any' || ctx.ask === 'all' ? undefined : ctx.ask,
      responses: r,
    });
    if (said) return sentence(said);
  }
  if (camera || /^Latest frame from the camera /.test(text)) {
    if (/^Latest frame from the camera /.test(text)) {
      const offline = /OFFLINE/.test(text) ? ` ${r.say('camera_offline')}` : '';
      return `${r.say('camera_frame', { name })}${offline}`;
    }
    if (/has not sent a frame yet/.test(text)) return sentence(r.say('camera_no_picture', { name }));
  }
  if (action === 'read' || action === 'camera') {
    if (parseStateLine(text.split('\n')[0] ?? '') || /^\(\d+ /.test(text) || text === 'no matching entities') return readSentences(text, ctx, ctx.asked);
  }
  if (!text) return sentence(r.say('no_answer', { name }));
  if (/^(not done|interrupted|cancelled)\b/.test(text)) return `${sentence(resultText(text, 300))}.`;
  return r.say('failed', { reason: resultText(text, 300) });
}

/** "Which lights are on?", "how many locks are open?", "is any door unlocked?": one sentence over every read. */
function summaryAnswer(calls: AnsweredCall[], ctx: AnswerContext): string | undefined {
  const asked = ctx.asked;
  if (!asked || (ctx.ask !== 'which' && ctx.ask !== 'count' && ctx.ask !== 'any' && ctx.ask !== 'all')) return undefined;
  const wanted = ctx.subjects ? new Set(ctx.subjects) : undefined;
  const seen = new Map<string, { line: StateLine; e: Entity | undefined }>();
  for (const call of calls) {
    if (outcomeOf(call.result).outcome !== 'other') return undefined;
    for (const l of call.result.split('\n')) {
      const line = parseStateLine(l);
      if (!line || (wanted && !wanted.has(line.id))) continue;
      seen.set(line.id, { line, e: ctx.entity(line.id) });
    }
  }
  // One device: the plain yes/no sentence says it better.
  if (seen.size <= 1) return undefined;
  const matching = [...seen.values()].filter(({ line, e }) => !line.noState && logicalState(e, line) === asked);
  const r = ctx.responses;
  const names = matching.map(({ line, e }) => nameOf(r, line, e));
  const shown = names.length > 9 ? [...names.slice(0, 8), r.say('n_more', { count: names.length - 8 })] : names;
  const unknown = [...seen.values()].filter(({ line }) => line.noState).length;
  const note = unknown ? r.say('summary_not_reported', { count: unknown }) : '';
  const state = spoken(asked, 20);
  // "Are all the doors locked?": yes, or the ones that are not.
  if (ctx.ask === 'all') {
    const known = [...seen.values()].filter(({ line }) => !line.noState);
    const others = known.filter((x) => !matching.includes(x)).map(({ line, e }) => nameOf(r, line, e));
    if (!others.length) return r.say('summary_all_yes', { count: known.length, state, note });
    const list = others.length > 9 ? [...others.slice(0, 8), r.say('n_more', { count: others.length - 8 })] : others;
    return r.say('summary_all_no', { count: others.length, checked: seen.size, state, names: r.list(list, 'and'), note });
  }
  if (!names.length) {
    const kinds = ctx.kind && r.has(`kinds_${ctx.kind}`) ? r.say(`kinds_${ctx.kind}`) : undefined;
    if (kinds && (ctx.ask === 'which' || ctx.ask === 'any'))
      return r.say(ctx.ask === 'any' ? 'summary_none_any_kind' : 'summary_none_kind', { kind: kinds, state, note });
    return r.say(ctx.ask === 'any' ? 'summary_none_any' : 'summary_none', { count: seen.size, state, note });
  }
  const slots = { count: names.length, checked: seen.size, state, names: r.list(shown, 'and'), note };
  if (ctx.ask === 'count') return r.say('summary_count', slots);
  if (ctx.ask === 'any') return r.say('summary_any', slots);
  return sentence(r.say('summary_which', slots));
}

/** "Has anyone moved recently?" over several sensors: the ones that saw motion in the window, or none did. */
function sawMotionAnswer(calls: AnsweredCall[], ctx: AnswerContext): string | undefined {
  if (calls.length < 2 || ctx.ask !== 'was' || !calls.every((c) => c.tool === HISTORY_TOOL)) return undefined;
  const r = ctx.responses;
  const each = calls.map((c) => {
    const entity = ctx.entity(String(c.args.entity));
    return entity && isMotion(entity)
      ? historyWas(c.result.trim(), { entity, name: theName(r, entity), asked: ctx.asked, ask: 'was', responses: r })
      : undefined;
  });
  if (each.some((x) => !x)) return undefined;
  const seen = each.filter((x) => x!.yes);
  if (seen.length) return seen.map((x) => sentence(x!.text)).join(' ');
  return r.say('history_was_no_motion_any', { count: each.length, since: each[0]!.since, until: each[0]!.until });
}

/** The whole second-round answer. */
export function composeAnswer(calls: AnsweredCall[], ctx: AnswerContext): string {
  const summary = summaryAnswer(calls, ctx) ?? sawMotionAnswer(calls, ctx);
  if (summary) return summary;
  const parts = calls.map((c) => answerFor(c, { ...ctx, asked: calls.length === 1 ? ctx.asked : undefined }));
  return parts.join(' ') || ctx.responses.say('done');
}

/** Answer text as a few words per token event. */
export function chunkWords(text: string, per = 3): string[] {
  const words = text.match(/\S+\s*/g) ?? [];
  const out: string[] = [];
  for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(''));
  return out;
}
