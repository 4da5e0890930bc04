// Logical commands and their MQTT form, both ways: the bridge encodes what a
// tool asked for; the simulator (and tests) decode what a device receives.
// Also: which state counts as the device confirming a command.
import type { EntityState } from './state-cache.js';
import { readJsonPath, writeJsonPath } from './json-path.js';
import { JsonLimitError, parseBoundedJson } from '../util/bounded-json.js';
import { MAX_STATE_BYTES } from './decode.js';
import { COLOR_ATTRIBUTES, colorAttributes, colorMatches, parseColor, rgbHex, rgbOfAttributes } from './color.js';
import { colorTempMatches, fromDeviceColorTemp, toDeviceColorTemp } from './color-temp.js';
import type { Entity } from './model.js';

export type Command =
  | { action: 'turn_on'; brightness?: number; color?: string /** Kelvin, whatever the light speaks. */; color_temp?: number }
  | { action: 'turn_off' }
  | { action: 'open' }
  | { action: 'close' }
  | { action: 'stop' }
  | { action: 'set_position'; position: number }
  | { action: 'lock' }
  | { action: 'unlock' }
  | { action: 'set_mode'; mode: string }
  | { action: 'set_temperature'; temperature: number }
  | { action: 'set_value'; value: number }
  | { action: 'select_option'; option: string }
  | { action: 'press' }
  | { action: 'set_percentage'; percentage: number }
  | { action: 'set_preset_mode'; preset_mode: string }
  | { action: 'arm_home' }
  | { action: 'arm_away' }
  | { action: 'arm_night' }
  | { action: 'disarm' };

export type Action = Command['action'];

/** The actions each kind understands. */
export const ACTIONS_BY_KIND: Record<string, Action[]> = {
  switch: ['turn_on', 'turn_off'],
  light: ['turn_on', 'turn_off'],
  cover: ['open', 'close', 'stop', 'set_position'],
  lock: ['lock', 'unlock'],
  climate: ['set_mode', 'set_temperature'],
  number: ['set_value'],
  select: ['select_option'],
  button: ['press'],
  fan: ['turn_on', 'turn_off', 'set_percentage', 'set_preset_mode'],
  valve: ['open', 'close', 'stop', 'set_position'],
  alarm_control_panel: ['arm_home', 'arm_away', 'arm_night', 'disarm'],
};

export class CommandError extends Error {}

export interface OutgoingMessage {
  topic: string;
  payload: string;
}

/** Which word of the payload vocabulary an action sends. */
const WORD: Partial<Record<Action, string>> = {
  turn_on: 'on',
  turn_off: 'off',
  open: 'open',
  close: 'close',
  stop: 'stop',
  lock: 'lock',
  unlock: 'unlock',
  press: 'press',
  arm_home: 'arm_home',
  arm_away: 'arm_away',
  arm_night: 'arm_night',
  disarm: 'disarm',
};

/** What a command changes: main value and/or attributes, in the entity's terms. */
interface Changes {
  word?: string;
  value?: string | number;
  attrs: Record<string, string | number>;
  /** A colour for a topic of its own (`commandTopics[mode]`). */
  color?: { mode: string; parts: Record<string, number> };
}

function changes(entity: Entity, cmd: Command): Changes {
  const attrs: Record<string, string | number> = {};
  switch (cmd.action) {
    case 'turn_on': {
      if (cmd.brightness !== undefined) attrs.brightness = cmd.brightness;
      if (cmd.color_temp !== undefined) {
        // In the light's unit, at its attribute's path or on its own topic (through its template).
        if (!entity.colorTemp) throw new CommandError(`${entity.id} takes no colour temperature`);
        attrs.color_temp = toDeviceColorTemp(entity.colorTemp, cmd.color_temp);
      }
      if (cmd.color !== undefined) {
        const mode = entity.colorModes?.[0];
        if (!mode || (entity.commandFormat !== 'json' && !entity.commandTopics[mode])) throw new CommandError(`${entity.id} takes no colour`);
        const rgb = parseColor(cmd.color);
        if (!rgb) throw new CommandError(`unknown colour ${JSON.stringify(cmd.color)}`);
        // A topic of the mode's own takes the whole colour at once; otherwise each part goes where its attribute is.
        if (entity.commandTopics[mode]) return { word: entity.payloads.on, attrs, color: { mode, parts: colorAttributes(mode, rgb) } };
        Object.assign(attrs, colorAttributes(mode, rgb));
      }
      return { word: entity.payloads.on, attrs };
    }
    case 'set_position':
      attrs.position = cmd.position;
      return { attrs };
    case 'set_mode':
      return { value: cmd.mode, attrs };
    case 'set_temperature':
      attrs.temperature = cmd.temperature;
      return { attrs };
    case 'set_value':
      return { value: cmd.value, attrs };
    case 'set_percentage':
      attrs.percentage = cmd.percentage;
      return { attrs };
    case 'set_preset_mode':
      attrs.preset_mode = cmd.preset_mode;
      return { attrs };
    case 'select_option':
      return { value: cmd.option, attrs };
    default: {
      const word = entity.payloads[WORD[cmd.action]!];
      if (word === undefined) throw new CommandError(`${entity.id} has no payload for ${cmd.action}`);
      return { word, attrs };
    }
  }
}

/** One slot's payload: through the entity's command template when it has one. */
function render(entity: Entity, slot: string, value: string | number): string {
  const template = entity.commandTemplates?.[slot];
  if (!template) return String(value);
  try {
    return template(value);
  } catch (err) {
    throw new CommandError(
      `${entity.id}'s ${slot === 'value' ? '' : `${slot} `}command template cannot render ${JSON.stringify(value)}: ${(err as Error).message}`,
    );
  }
}

/** The MQTT messages that carry a command to a device. */
export function encodeCommand(entity: Entity, cmd: Command): OutgoingMessage[] {
  if (!ACTIONS_BY_KIND[entity.kind]?.includes(cmd.action)) {
    throw new CommandError(`${entity.kind} ${entity.id} cannot ${cmd.action}`);
  }
  const { word, value, attrs, color } = changes(entity, cmd);
  const out: OutgoingMessage[] = [];
  if (color) {
    // Home Assistant's form: "x,y", "h,s" or "r,g,b"; a template gets the parts by name too.
    const csv = Object.values(color.parts).join(',');
    const template = entity.commandTemplates?.[color.mode];
    let payload = csv;
    if (template) {
      try {
        payload = template(csv, color.parts);
      } catch (err) {
        throw new CommandError(`${entity.id}'s ${color.mode} command template cannot render ${csv}: ${(err as Error).message}`);
      }
    }
    out.push({ topic: entity.commandTopics[color.mode]!, payload });
  }
  const main = word ?? value;
  // Settings with a topic of their own (a thermostat's mode, a cover's position) go there, plain.
  const mainTopicKey = cmd.action === 'set_mode' ? 'mode' : undefined;
  const rest: Record<string, string | number> = {};
  for (const [name, v] of Object.entries(attrs)) {
    const own = entity.commandTopics[name];
    if (own) out.push({ topic: own, payload: render(entity, name, v) });
    else rest[name] = v;
  }
  const mainOwn = mainTopicKey ? entity.commandTopics[mainTopicKey] : undefined;
  if (main !== undefined && mainOwn) {
    out.push({ topic: mainOwn, payload: render(entity, mainTopicKey!, main) });
  } else if (main !== undefined || Object.keys(rest).length) {
    if (!entity.commandTopic) throw new CommandError(`${entity.id} has no command topic for ${cmd.action}`);
    if (entity.commandFormat === 'json') {
      const body: Record<string, unknown> = {};
      // `"false"` is a truthy string to many converters: a literal vocabulary goes in as JSON.
      if (main !== undefined) writeJsonPath(body, entity.valuePath ?? 'state', word !== undefined && entity.payloadLiterals ? JSON.parse(word) : main);
      for (const [name, v] of Object.entries(rest)) writeJsonPath(body, entity.attributes[name]?.path ?? name, v);
      out.push({ topic: entity.commandTopic, payload: JSON.stringify(body) });
    } else {
      if (Object.keys(rest).length && main !== undefined) {
        throw new CommandError(`${entity.id} takes plain payloads: send ${Object.keys(rest).join(', ')} on its own`);
      }
      // A payload word (on, lock, ...) is already the device's own; a value goes through the template.
      const payload = word !== undefined ? word : value !== undefined ? render(entity, 'value', value) : render(entity, ...Object.entries(rest)[0]!);
      out.push({ topic: entity.commandTopic, payload });
    }
  }
  return out;
}

/** Every topic a device may receive commands on. */
export function commandTopicsOf(entity: Entity): string[] {
  return [...new Set([entity.commandTopic, ...Object.values(entity.commandTopics)].filter((t): t is string => !!t))];
}

function findWord(entity: Entity, payload: string): Action | undefined {
  for (const [action, word] of Object.entries(WORD) as [Action, string][]) {
    const p = entity.payloads[word];
    if (p !== undefined && p === payload && ACTIONS_BY_KIND[entity.kind]?.includes(action)) return action;
  }
  return undefined;
}

function num(v: unknown, what: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n)) throw new CommandError(`${what} ${JSON.stringify(v)} is not a number`);
  return n;
}

function colorTempOf(entity: Entity, value: number): number {
  const kelvin = entity.colorTemp ? fromDeviceColorTemp(entity.colorTemp, value) : undefined;
  if (kelvin === undefined) throw new CommandError(`color_temp ${value} is not a colour temperature ${entity.id} takes`);
  return kelvin;
}

/** What a device makes of a message on one of its command topics (the inverse of encodeCommand). */
export function decodeCommand(entity: Entity, topic: string, payload: string): Command {
  for (const [name, t] of Object.entries(entity.commandTopics)) {
    if (t !== topic) continue;
    if (name === 'mode') return { action: 'set_mode', mode: payload };
    if (name === 'temperature') return { action: 'set_temperature', temperature: num(payload, 'temperature') };
    if (name === 'position') return { action: 'set_position', position: num(payload, 'position') };
    if (name === 'brightness') return { action: 'turn_on', brightness: num(payload, 'brightness') };
    if (name === 'color_temp') return { action: 'turn_on', color_temp: colorTempOf(entity, num(payload, 'color_temp')) };
    if (name === 'percentage') return { action: 'set_percentage', percentage: num(payload, 'percentage') };
    if (name === 'preset_mode') return { action: 'set_preset_mode', preset_mode: payload };
    throw new CommandError(`no command is known for ${name}`);
  }
  if (topic !== entity.commandTopic) throw new CommandError(`${topic} is not a command topic of ${entity.id}`);
  let main: unknown = payload;
  let body: unknown;
  if (entity.commandFormat === 'json') {
    try {
      body = parseBoundedJson(payload, { maxChars: MAX_STATE_BYTES });
    } catch (err) {
      if (err instanceof JsonLimitError && err.reason !== 'not_json') throw new CommandError(`command is ${err.message}`);
      throw new CommandError(`command is not JSON: ${payload.slice(0, 40)}`);
    }
    main = readJsonPath(body, entity.valuePath ?? 'state');
  }
  const attr = (name: string) => (body === undefined ? undefined : readJsonPath(body, entity.attributes[name]?.path ?? name));
  switch (entity.kind) {
    case 'number':
      return { action: 'set_value', value: num(main, 'value') };
    case 'select':
      return { action: 'select_option', option: String(main) };
    case 'climate':
      if (main !== undefined) return { action: 'set_mode', mode: String(main) };
      return { action: 'set_temperature', temperature: num(attr('temperature'), 'temperature') };
    case 'fan':
      if (main === undefined && attr('percentage') !== undefined) return { action: 'set_percentage', percentage: num(attr('percentage'), 'percentage') };
      if (main === undefined && attr('preset_mode') !== undefined) return { action: 'set_preset_mode', preset_mode: String(attr('preset_mode')) };
      break;
    case 'valve':
    case 'cover':
      if (main === undefined && attr('position') !== undefined) return { action: 'set_position', position: num(attr('position'), 'position') };
      if (entity.commandFormat === 'plain' && /^\d+$/.test(payload)) return { action: 'set_position', position: Number(payload) };
      break;
  }
  const action = findWord(entity, String(main));
  if (!action) throw new CommandError(`${JSON.stringify(String(main).slice(0, 40))} is not a command ${entity.id} understands`);
  if (action === 'turn_on') {
    const cmd: Extract<Command, { action: 'turn_on' }> = { action };
    if (attr('brightness') !== undefined) cmd.brightness = num(attr('brightness'), 'brightness');
    if (entity.colorTemp && attr('color_temp') !== undefined) cmd.color_temp = colorTempOf(entity, num(attr('color_temp'), 'color_temp'));
    if (entity.colorModes?.length && body !== undefined) {
      const rgb = rgbOfAttributes(Object.fromEntries([...COLOR_ATTRIBUTES].map((k) => [k, attr(k)])));
      if (rgb) cmd.color = rgbHex(rgb);
    }
    return cmd;
  }
  return { action } as Command;
}

/** Does this state show the command done? (`confirmed` only when it does.) */
export function isConfirmedBy(entity: Entity, cmd: Command, state: EntityState): boolean {
  const near = (a: unknown, b: number) => typeof a === 'number' && Math.abs(a - b) <= (entity.ranges.temperature?.step ?? 0.5) / 2 + 1e-9;
  switch (cmd.action) {
    case 'turn_on': {
      // Brightness 0 is off on most lights (Zigbee2MQTT, HA).
      if (cmd.brightness === 0) return state.value === 'off';
      if (state.value !== 'on' || (cmd.brightness !== undefined && state.attributes.brightness !== cmd.brightness)) return false;
      if (cmd.color_temp !== undefined) {
        // Within a few mireds: a bulb steps its own way. A light that reports none is confirmed by being on.
        return !entity.colorTemp || colorTempMatches(entity.colorTemp, cmd.color_temp, state.attributes.color_temp) !== false;
      }
      if (cmd.color === undefined) return true;
      const rgb = parseColor(cmd.color);
      // A light that reports no colour at all is confirmed by being on.
      return rgb !== undefined && colorMatches(rgb, state.attributes) !== false;
    }
    case 'turn_off':
      return state.value === 'off';
    // With a position, only the end position proves fully open or closed ("open" also means partly open);
    // a cover that still says it is moving has not arrived, whatever position it reported on the way.
    case 'open':
      if (state.value === 'opening' || state.value === 'closing') return false;
      return typeof state.attributes.position === 'number' ? state.attributes.position === (entity.ranges.position?.max ?? 100) : state.value === 'open';
    case 'close':
      if (state.value === 'opening' || state.value === 'closing') return false;
      return typeof state.attributes.position === 'number' ? state.attributes.position === (entity.ranges.position?.min ?? 0) : state.value === 'closed';
    case 'stop':
      return state.value !== 'opening' && state.value !== 'closing';
    case 'set_position':
      return state.attributes.position === cmd.position;
    case 'lock':
      return state.value === 'locked';
    case 'unlock':
      return state.value === 'unlocked';
    case 'set_mode':
      return String(state.value) === cmd.mode;
    case 'set_temperature':
      return near(state.attributes.temperature, cmd.temperature);
    case 'set_value':
      return state.value === cmd.value;
    case 'select_option':
      // Options are words, but a device may report "1" that the cache reads as the number 1.
      return String(state.value) === cmd.option;
    case 'press':
      return true;
    case 'set_percentage':
      return cmd.percentage === 0 ? state.value === 'off' : state.attributes.percentage === cmd.percentage;
    case 'set_preset_mode':
      return String(state.attributes.preset_mode) === cmd.preset_mode;
    case 'arm_home':
    case 'arm_away':
    case 'arm_night':
      return state.value === cmd.action.replace('arm_', 'armed_');
    case 'disarm':
      return state.value === 'disarmed';
  }
}
