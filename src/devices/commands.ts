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
  | {
      action: 'turn_on';
      brightness?: number;
      color?: string;
      /** Kelvin, whatever the light speaks. */
      color_temp?: number;
      /** A siren's tone, volume (0-1) and duration in seconds. */
      tone?: string;
      volume?: number;
      duration?: number;
    }
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
  | { action: 'disarm' }
  | { action: 'activate' }
  | { action: 'start' }
  | { action: 'pause' }
  | { action: 'return_to_base' }
  | { action: 'locate' }
  | { action: 'clean_spot' }
  | { action: 'set_fan_speed'; fan_speed: string }
  | { action: 'start_mowing' }
  | { action: 'dock' }
  | { action: 'install' }
  | { action: 'set_humidity'; humidity: number }
  | { action: 'set_away'; away: boolean }
  | { action: 'set_text'; text: string }
  | { action: 'send_message'; message: string };

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
  scene: ['activate'],
  vacuum: ['start', 'pause', 'stop', 'return_to_base', 'locate', 'clean_spot', 'set_fan_speed'],
  lawn_mower: ['start_mowing', 'pause', 'dock'],
  siren: ['turn_on', 'turn_off'],
  update: ['install'],
  humidifier: ['turn_on', 'turn_off', 'set_humidity', 'set_mode'],
  water_heater: ['set_temperature', 'set_mode', 'turn_on', 'turn_off', 'set_away'],
  text: ['set_text'],
  notify: ['send_message'],
};

/** Actions a device has no state to answer (a button, a scene, a message): done once the broker has them. */
const STATELESS: ReadonlySet<Action> = new Set(['press', 'activate', 'locate', 'send_message']);

/** Is this command done once sent (nothing the device reports could confirm it)? */
export function isStateless(entity: Entity, cmd: Command): boolean {
  if (STATELESS.has(cmd.action)) return true;
  // Home Assistant's optimistic text, Zigbee2MQTT's set-only warning: no state topic, nothing to read back.
  return (entity.kind === 'text' || entity.kind === 'siren') && !entity.stateTopic;
}

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
  activate: 'activate',
  start: 'start',
  pause: 'pause',
  return_to_base: 'return_to_base',
  locate: 'locate',
  clean_spot: 'clean_spot',
  start_mowing: 'start_mowing',
  dock: 'dock',
  install: 'install',
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
      // A thermostat's and a water heater's state is its mode; a humidifier's mode is beside its on/off.
      if (entity.kind === 'humidifier') {
        attrs.mode = cmd.mode;
        return { attrs };
      }
      return { value: cmd.mode, attrs };
    case 'set_fan_speed':
      attrs.fan_speed = cmd.fan_speed;
      return { attrs };
    case 'set_humidity':
      attrs.humidity = cmd.humidity;
      return { attrs };
    case 'set_away':
      attrs.away_mode = cmd.away ? (entity.payloads.away_on ?? 'ON') : (entity.payloads.away_off ?? 'OFF');
      return { attrs };
    case 'set_text':
      return { value: cmd.text, attrs };
    case 'send_message':
      return { value: cmd.message, attrs };
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
  if (entity.kind === 'siren') return encodeSiren(entity, cmd);
  const { word, value, attrs, color } = changes(entity, cmd);
  const out: OutgoingMessage[] = [];
  // A word with a topic of its own (a mower's start_mowing, pause and dock topics; a water heater's power topic).
  const powerSlot = (cmd.action === 'turn_on' || cmd.action === 'turn_off') && entity.kind === 'water_heater' ? 'power' : undefined;
  const wordSlot =
    word === undefined ? undefined : entity.commandTopics[cmd.action] ? cmd.action : powerSlot && entity.commandTopics[powerSlot] ? powerSlot : undefined;
  if (wordSlot) return [{ topic: entity.commandTopics[wordSlot]!, payload: render(entity, wordSlot, word!) }];
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

/**
 * A siren: on or off, and with on its tone, volume (Home Assistant's
 * volume_level, 0-1) and duration. Through its command template when it has
 * one (the off template for off), with those as the template's variables;
 * otherwise JSON (Home Assistant's form: {"state": "ON", "tone": ...}) or the
 * bare word.
 */
function encodeSiren(entity: Entity, cmd: Command): OutgoingMessage[] {
  if (cmd.action !== 'turn_on' && cmd.action !== 'turn_off') throw new CommandError(`siren ${entity.id} cannot ${cmd.action}`);
  if (!entity.commandTopic) throw new CommandError(`${entity.id} has no command topic`);
  const on = cmd.action === 'turn_on';
  const word = on ? entity.payloads.on : entity.payloads.off;
  if (word === undefined) throw new CommandError(`${entity.id} has no payload for ${cmd.action}`);
  const params: Record<string, string | number> = {};
  if (on && cmd.tone !== undefined) params.tone = cmd.tone;
  if (on && cmd.volume !== undefined) params.volume_level = cmd.volume;
  if (on && cmd.duration !== undefined) params.duration = cmd.duration;
  const template = on ? entity.commandTemplates?.value : (entity.commandTemplates?.off ?? entity.commandTemplates?.value);
  if (template) {
    try {
      return [{ topic: entity.commandTopic, payload: template(word, params) }];
    } catch (err) {
      throw new CommandError(`${entity.id}'s command template cannot render ${cmd.action}: ${(err as Error).message}`);
    }
  }
  if (entity.commandFormat === 'json') {
    const body: Record<string, unknown> = {};
    writeJsonPath(body, entity.valuePath ?? 'state', entity.payloadLiterals ? JSON.parse(word) : word);
    for (const [name, v] of Object.entries(params)) writeJsonPath(body, entity.attributes[name]?.path ?? name, v);
    return [{ topic: entity.commandTopic, payload: JSON.stringify(body) }];
  }
  if (Object.keys(params).length) throw new CommandError(`${entity.id} takes plain payloads: it cannot be sent ${Object.keys(params).join(', ')}`);
  return [{ topic: entity.commandTopic, payload: word }];
}

/** Every topic a device may receive commands on. */
export function commandTopicsOf(entity: Entity): string[] {
  // Without a Set and two spreads: the registry asks this of every entity on each rebuild.
  const out: string[] = entity.commandTopic ? [entity.commandTopic] : [];
  for (const t of Object.values(entity.commandTopics)) if (t && !out.includes(t)) out.push(t);
  return out;
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
    if (name === 'fan_speed') return { action: 'set_fan_speed', fan_speed: payload };
    if (name === 'humidity') return { action: 'set_humidity', humidity: num(payload, 'humidity') };
    if (name === 'away_mode') return { action: 'set_away', away: payload === (entity.payloads.away_on ?? 'ON') };
    if (name === 'power') return { action: payload === entity.payloads.on ? 'turn_on' : 'turn_off' };
    if (ACTIONS_BY_KIND[entity.kind]?.includes(name as Action) && WORD[name as Action]) return { action: name } as Command;
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
    case 'text':
      return { action: 'set_text', text: String(main) };
    case 'notify':
      return { action: 'send_message', message: String(main) };
    case 'siren': {
      const action = main === entity.payloads.on || String(main) === entity.payloads.on ? 'turn_on' : 'turn_off';
      if (action === 'turn_off' && String(main) !== entity.payloads.off) break;
      const cmd: Extract<Command, { action: 'turn_on' }> | { action: 'turn_off' } = { action };
      if (cmd.action === 'turn_on' && body !== undefined) {
        if (attr('tone') !== undefined) cmd.tone = String(attr('tone'));
        if (attr('volume_level') !== undefined) cmd.volume = num(attr('volume_level'), 'volume_level');
        if (attr('duration') !== undefined) cmd.duration = num(attr('duration'), 'duration');
      }
      return cmd;
    }
    case 'humidifier':
      if (main === undefined && attr('humidity') !== undefined) return { action: 'set_humidity', humidity: num(attr('humidity'), 'humidity') };
      if (main === undefined && attr('mode') !== undefined) return { action: 'set_mode', mode: String(attr('mode')) };
      break;
    case 'water_heater':
      if (main !== undefined && !findWord(entity, String(main))) return { action: 'set_mode', mode: String(main) };
      if (main === undefined && attr('temperature') !== undefined) return { action: 'set_temperature', temperature: num(attr('temperature'), 'temperature') };
      break;
    case 'vacuum':
      if (main === undefined && attr('fan_speed') !== undefined) return { action: 'set_fan_speed', fan_speed: String(attr('fan_speed')) };
      break;
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
      // A water heater's state is its operation mode: on is any mode but off.
      if (entity.kind === 'water_heater') return state.value !== null && state.value !== undefined && state.value !== 'off';
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
      // A vacuum that stopped is idle (or back where it was: docked, paused).
      if (entity.kind === 'vacuum') return state.value === 'idle' || state.value === 'docked' || state.value === 'paused';
      return state.value !== 'opening' && state.value !== 'closing';
    case 'set_position':
      return state.attributes.position === cmd.position;
    case 'lock':
      return state.value === 'locked';
    case 'unlock':
      return state.value === 'unlocked';
    case 'set_mode':
      return String(entity.kind === 'humidifier' ? state.attributes.mode : state.value) === cmd.mode;
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
    case 'activate':
    case 'locate':
    case 'send_message':
      return true;
    // A vacuum or mower is confirmed by the activity it was asked for (HA's vacuum and lawn_mower states).
    case 'start':
    case 'clean_spot':
      return state.value === 'cleaning';
    case 'pause':
      return state.value === 'paused';
    case 'return_to_base':
      return state.value === 'returning' || state.value === 'docked';
    case 'set_fan_speed':
      return String(state.attributes.fan_speed) === cmd.fan_speed;
    case 'start_mowing':
      return state.value === 'mowing';
    case 'dock':
      return state.value === 'returning' || state.value === 'docked';
    // Installing is confirmed when the device says it is installing, or has the version it offered.
    case 'install':
      return (
        state.attributes.in_progress === true ||
        (state.value !== null && state.value !== undefined && String(state.value) === String(state.attributes.latest_version))
      );
    case 'set_humidity':
      return typeof state.attributes.humidity === 'number' && Math.abs(state.attributes.humidity - cmd.humidity) <= 0.5;
    case 'set_away':
      return String(state.attributes.away_mode).toLowerCase() === (cmd.away ? 'on' : 'off');
    case 'set_text':
      return String(state.value) === cmd.text;
  }
}
