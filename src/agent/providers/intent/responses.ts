// What the intent model says, as data: the `responses:` section of a language's
// sentence files (sentences/<language>/responses.yaml ships English). A response
// is a template with `{slot}` placeholders, or a map of plural variants chosen
// by the `count` slot (`one`, `other`, and optionally `zero`). A user's folder
// replaces responses key by key. Code only picks a key and fills its slots;
// the words are here, so a second language is a data change.
import { isMap, isScalar, type Node as YamlNode } from 'yaml';
import { CORE_ACTIONS } from '../../../policy/rules.js';

export interface ResponseOrigin {
  file: string;
  line: number;
}

export interface ResponseProblem extends ResponseOrigin {
  reason: string;
}

/** One response: a template, or plural variants of one. */
export interface ResponseData {
  variants: Partial<Record<Variant, string>>;
  origin: ResponseOrigin;
}

type Variant = 'one' | 'other' | 'zero' | 'text';
const VARIANTS: Variant[] = ['zero', 'one', 'other'];

/** Actions that have a `participle_<action>` response ("turned on"): the core actions, as the policy lists them. */
export const PARTICIPLE_ACTIONS = CORE_ACTIONS;

/**
 * Every response Hearth says, with the slots its template may use. A key not
 * here is a problem in the file (a typo would otherwise never be said).
 */
export const RESPONSE_SLOTS: Record<string, readonly string[]> = {
  // lists: "a, b or c"
  list_separator: [],
  list_or: ['rest', 'last'],
  list_and: ['rest', 'last'],
  quoted: ['text'],
  // round 1: replies without a tool call
  not_understood: [],
  not_understood_unknown: ['unknown'],
  unknown_device: ['unknown'],
  closest: ['names'],
  try_this: ['examples'],
  which_area: [],
  which_device: [],
  too_many: ['count'],
  question: [],
  not_found: ['what'],
  not_found_in_area: ['what', 'area'],
  unsupported: ['verb', 'name'],
  unsupported_why: ['verb', 'name', 'why'],
  ambiguous: ['choices'],
  ambiguous_more: ['shown', 'count'],
  in_area: ['name', 'area'],
  not_here: ['verb', 'names'],
  not_here_more: ['verb', 'names', 'count'],
  not_here_act: ['verb', 'names'],
  out_of_range: ['name', 'what', 'min', 'max', 'unit'],
  // round 2: answers from tool results
  done: [],
  done_action: ['action'],
  done_state: ['name', 'state'],
  done_at: ['name', 'value'],
  done_on_at: ['name', 'value'],
  done_set_to: ['name', 'value'],
  done_state_at: ['name', 'state', 'value'],
  white_about: ['white', 'kelvin'],
  done_dimmed: ['name', 'value'],
  done_brightened: ['name', 'value'],
  done_raised: ['name', 'value'],
  done_lowered: ['name', 'value'],
  done_warmer: ['name', 'value'],
  done_cooler: ['name', 'value'],
  done_read: ['sentence'],
  the_device: [],
  // a device's state, read: "The front door lock is locked."
  answer_yes: ['answer'],
  answer_no: ['answer'],
  state_offline: ['name'],
  state_not_reported: ['name'],
  state_is: ['name', 'state'],
  state_person_home: ['name'],
  state_person_away: ['name'],
  state_person_zone: ['name', 'zone'],
  state_on_at: ['name', 'value'],
  state_at: ['name', 'state', 'value'],
  state_reports: ['name', 'value'],
  state_parts: ['name', 'parts'],
  state_motion: ['name'],
  state_no_motion: ['name'],
  state_detects: ['name', 'what'],
  state_clear: ['name'],
  state_picture_ready: ['name'],
  state_no_picture: ['name'],
  word_open: [],
  word_closed: [],
  word_wet: [],
  word_dry: [],
  word_vibrating: [],
  word_still: [],
  climate_off: ['name', 'now'],
  climate_set: ['name', 'mode', 'target', 'doing', 'now'],
  climate_target: ['value'],
  climate_doing: ['activity'],
  climate_now: ['value'],
  climate_unknown_mode: [],
  the_home: [],
  devices_in: ['area'],
  done_pressed: ['name'],
  unconfirmed: ['name'],
  needs_approval: ['action', 'reason'],
  not_allowed: ['action'],
  not_allowed_why: ['action', 'reason'],
  failed: ['reason'],
  duplicate: [],
  camera_frame: ['name'],
  camera_offline: [],
  camera_no_picture: ['name'],
  no_answer: ['name'],
  no_reply_match: [],
  read_more: ['count'],
  read_none: [],
  // "which lights are on?", "how many ...", "is any ...": `count` picks the variant
  summary_none: ['count', 'state', 'note'],
  summary_none_kind: ['kind', 'state', 'note'],
  summary_none_any_kind: ['kind', 'state', 'note'],
  summary_none_any: ['count', 'state', 'note'],
  summary_count: ['count', 'checked', 'state', 'names', 'note'],
  summary_any: ['count', 'state', 'names', 'note'],
  summary_which: ['count', 'state', 'names', 'note'],
  summary_not_reported: ['count'],
  summary_all_yes: ['count', 'state', 'note'],
  summary_all_no: ['count', 'checked', 'state', 'names', 'note'],
  // history: "when did the front door last open?", "how warm was it this morning?"
  history_last: ['name', 'state', 'time', 'age'],
  history_last_motion: ['name', 'time', 'age'],
  history_not_since: ['name', 'state', 'since'],
  history_since: ['name', 'state', 'value', 'time', 'age'],
  history_since_not: ['name', 'state', 'value', 'time', 'age'],
  history_was_yes: ['name', 'state', 'time', 'age'],
  history_was_no: ['name', 'state', 'since', 'until'],
  history_was_yes_motion: ['name', 'time', 'age'],
  history_was_no_motion: ['name', 'since', 'until'],
  history_was_no_motion_any: ['count', 'since', 'until'],
  history_low: ['name', 'value', 'time', 'age'],
  history_high: ['name', 'value', 'time', 'age'],
  history_value_at: ['name', 'value', 'time', 'age'],
  history_value_before: ['name', 'value', 'time', 'age'],
  history_range: ['name', 'low', 'high', 'average', 'count'],
  history_none: ['name'],
  // the audit and the policy (issue 42): "who unlocked the front door today?", "why can't I unlock it?"
  audit_refused: [],
  audit_none: [],
  audit_line: ['who', 'action', 'name', 'time', 'age', 'outcome'],
  audit_more: ['count'],
  audit_away: ['answer'],
  policy_answer: ['action', 'name', 'lines'],
  policy_line: ['who', 'effect', 'reason'],
  policy_others_refused: [],
};

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** Problems with one template for this key: unbalanced braces, slots the key does not have. */
function templateProblems(key: string, text: string): string[] {
  const out: string[] = [];
  const stripped = text.replace(PLACEHOLDER, '');
  if (/[{}]/.test(stripped)) out.push(`response ${key}: unbalanced "{" or "}" in ${JSON.stringify(text)}`);
  const allowed = RESPONSE_SLOTS[key] ?? [];
  for (const m of text.matchAll(PLACEHOLDER)) {
    if (!allowed.includes(m[1]))
      out.push(`response ${key}: unknown slot {${m[1]}} (this response has: ${allowed.length ? allowed.map((s) => `{${s}}`).join(', ') : 'no slots'})`);
  }
  return out;
}

/** Read a `responses:` map into `out`; later files replace earlier keys. */
export function readResponses(
  node: unknown,
  file: string,
  line: (n: YamlNode | null | undefined) => number,
  out: Map<string, ResponseData>,
  problems: ResponseProblem[],
): void {
  const problem = (n: YamlNode | null | undefined, reason: string) => problems.push({ file, line: line(n), reason });
  if (!isMap(node)) {
    problem(node as YamlNode, 'responses must be a map of response name to template');
    return;
  }
  for (const pair of node.items) {
    const keyNode = pair.key as YamlNode | null;
    const key = String(isScalar(keyNode) ? keyNode.value : keyNode);
    const value = pair.value as YamlNode | null;
    if (key === 'intents') {
      problem(
        keyNode,
        'Home Assistant\'s per-intent responses ("responses: intents:") are not used: reword Hearth\'s responses by name (the names are in the shipped responses.yaml)',
      );
      continue;
    }
    // "out_of_scope_<topic>": what Hearth says to a topic a sentence file names (slots: {out_of_scope: <topic>}).
    if (!(key in RESPONSE_SLOTS) && !/^out_of_scope_\w+$/.test(key)) {
      const near = Object.keys(RESPONSE_SLOTS)
        .filter((k) => k.startsWith(key.split('_')[0]))
        .slice(0, 8);
      problem(keyNode, `unknown response "${key}"${near.length ? ` (similar: ${near.join(', ')})` : ''}; the names are in the shipped responses.yaml`);
      continue;
    }
    const variants: ResponseData['variants'] = {};
    if (isScalar(value) && typeof value.value === 'string') variants.text = value.value;
    else if (isMap(value)) {
      for (const v of value.items) {
        const name = String(isScalar(v.key) ? v.key.value : v.key);
        const text = v.value as YamlNode | null;
        if (!VARIANTS.includes(name as Variant)) problem(v.key as YamlNode, `response ${key}: unknown variant "${name}" (known: ${VARIANTS.join(', ')})`);
        else if (!isScalar(text) || typeof text.value !== 'string') problem(text ?? (v.key as YamlNode), `response ${key}.${name} must be a template string`);
        else variants[name as Variant] = text.value;
      }
      if (!variants.other) {
        problem(value, `response ${key}: plural variants need at least "other"`);
        continue;
      }
    } else {
      problem(value ?? keyNode, `response ${key} must be a template string or a map of plural variants (one, other, zero)`);
      continue;
    }
    const bad = Object.values(variants).flatMap((t) => templateProblems(key, t!));
    if (bad.length) {
      for (const b of bad) problem(value, b);
      continue;
    }
    out.set(key, { variants, origin: { file, line: line(value ?? keyNode) } });
  }
}

/** Actions of the kinds of #31 said as `do_<action>` / `doing_<action>`. */
export const NEW_KIND_ACTIONS = ['activate', 'start', 'pause', 'return_to_base', 'start_mowing', 'dock', 'install'] as const;

// What a call does, said two ways: `do_*` ("open the garage door") and `doing_*` ("Opening the garage door").
for (const form of ['do', 'doing']) {
  for (const a of ['turn_on', 'turn_off', 'open', 'close', 'stop', 'lock', 'unlock', 'press', 'camera', 'read']) RESPONSE_SLOTS[`${form}_${a}`] = ['name'];
  RESPONSE_SLOTS[`${form}_set_to`] = ['name', 'value'];
  RESPONSE_SLOTS[`${form}_move_to`] = ['name', 'value'];
  RESPONSE_SLOTS[`${form}_read_area`] = ['area'];
  RESPONSE_SLOTS[`${form}_read_home`] = [];
}

// What a refused command would have done ("Sorry, I can't <verb> the lamp"), why not, and what was out of range.
for (const v of [
  'turn_on',
  'turn_off',
  'toggle',
  'dim',
  'brighten',
  'change_temperature',
  'set_speed',
  'set_preset',
  'change_colour',
  'set',
  'set_temperature',
  'change_mode',
  'open',
  'close',
  'stop',
  'move',
  'lock',
  'unlock',
  'press',
  'read',
  'look_through',
  'read_history',
  'use',
  'slow_down',
  'speed_up',
  'set_to_preset',
  'set_to_mode',
  'change_colour_temp',
])
  RESPONSE_SLOTS[`verb_${v}`] = [];
RESPONSE_SLOTS.verb_set_to = ['value'];
// The kinds of #31 (their words are in sentences/<language>/<kind>.yaml).
for (const v of ['send_home', 'set_humidity']) RESPONSE_SLOTS[`verb_${v}`] = [];
for (const form of ['do', 'doing']) for (const a of NEW_KIND_ACTIONS) RESPONSE_SLOTS[`${form}_${a}`] = ['name'];
// The plural of each kind a question may ask about ("No lights are on").
for (const k of [
  'light',
  'switch',
  'fan',
  'valve',
  'cover',
  'blind',
  'curtain',
  'shade',
  'shutter',
  'door',
  'garage',
  'window',
  'gate',
  'lock',
  'climate',
  'motion',
  'opening',
])
  RESPONSE_SLOTS[`kinds_${k}`] = [];
for (const w of [
  'state_unknown',
  'speed_unknown',
  'setting_unknown',
  'colour_temp_unknown',
  'brightness_unknown',
  'position_unknown',
  'already_off',
  'thermostat_off',
])
  RESPONSE_SLOTS[`why_${w}`] = [];
for (const q of ['brightness', 'temperature', 'value', 'position', 'speed', 'color_temp']) RESPONSE_SLOTS[`quantity_${q}`] = [];

// What a device can do instead, after a refusal: "It can be turned on or turned off."
RESPONSE_SLOTS.can_be = ['actions'];
RESPONSE_SLOTS.can_camera = [];
RESPONSE_SLOTS.can_read = [];
for (const a of PARTICIPLE_ACTIONS) RESPONSE_SLOTS[`participle_${a}`] = [];
// What a light takes besides on and off: "It can be turned on, turned off, dimmed or set to a colour temperature."
export const LIGHT_PARTICIPLES = ['dim', 'set_colour', 'set_colour_temp'] as const;
for (const a of LIGHT_PARTICIPLES) RESPONSE_SLOTS[`participle_${a}`] = [];

// Names and examples: "the kitchen light"; phrasings this home supports, offered after "not understood".
RESPONSE_SLOTS.the_name = ['name'];
RESPONSE_SLOTS.name_articles = [];
RESPONSE_SLOTS.word_device = [];
RESPONSE_SLOTS.n_more = ['count'];
for (const k of ['example_turn_on', 'example_locked', 'example_set_temperature', 'example_open', 'example_camera']) RESPONSE_SLOTS[k] = ['name'];
for (const k of ['example_temperature', 'example_area']) RESPONSE_SLOTS[k] = ['area'];
for (const k of ['example_placeholder_1', 'example_placeholder_2', 'example_placeholder_3']) RESPONSE_SLOTS[k] = [];

// "Sorry, I could not find <a noun>": a word said gets an indefinite article; a noun Hearth names is whole.
RESPONSE_SLOTS.indefinite = ['what'];
RESPONSE_SLOTS.indefinite_vowel = ['what'];
RESPONSE_SLOTS.indefinite_vowels = [];
for (const n of [
  'device',
  'camera',
  'light_or_switch',
  'dimmable_light',
  'thermostat',
  'fan',
  'colour_light',
  'light_thermostat_or_cover',
  'cover_or_valve',
  'lock',
  'button',
  'motion',
])
  RESPONSE_SLOTS[`noun_${n}`] = [];
RESPONSE_SLOTS.noun_that_can_be = ['kind', 'state'];

// Things Hearth does not do, said so: the shipped topics (a user's sentence files may add others).
for (const k of ['out_of_scope', 'out_of_scope_weather', 'out_of_scope_scene', 'out_of_scope_timer', 'out_of_scope_media']) RESPONSE_SLOTS[k] = [];

export type Slots = Record<string, string | number | undefined>;

/** The responses in use: fills templates; a response missing from the data says its own key (and is a load problem). */
export class Responses {
  constructor(private readonly data: ReadonlyMap<string, ResponseData>) {}

  /** Keys Hearth says that the data does not have. */
  missing(): string[] {
    return Object.keys(RESPONSE_SLOTS).filter((k) => !this.data.has(k));
  }

  /** Does the data have this response? */
  has(key: string): boolean {
    return this.data.has(key);
  }

  say(key: string, slots: Slots = {}): string {
    const r = this.data.get(key);
    if (!r) return `[${key}]`;
    const count = typeof slots.count === 'number' ? slots.count : undefined;
    const v = r.variants;
    const text = v.text ?? (count === 0 && v.zero !== undefined ? v.zero : count === 1 && v.one !== undefined ? v.one : v.other!);
    return text.replace(PLACEHOLDER, (_, name: string) => String(slots[name] ?? ''));
  }

  /** "a, b or c" in this language. */
  list(items: string[], join: 'or' | 'and' = 'or'): string {
    if (items.length <= 1) return items.join('');
    return this.say(join === 'or' ? 'list_or' : 'list_and', { rest: items.slice(0, -1).join(this.say('list_separator')), last: items[items.length - 1] });
  }
}
