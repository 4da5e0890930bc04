// A validated Home Assistant config -> the pieces of a Hearth entity: what
// to read (topic + JSON path, or an evaluated value template), what to send
// (payloads pre-rendered through constant-input command templates, so the
// device receives what Home Assistant would send), ranges and options, and
// availability. Platforms Hearth has no kind for give a reason instead.
//
// Command templates whose output depends on the call (a number's value, a
// cover's position, a thermostat's setpoint) are compiled once and rendered
// with each call's value by the command encoder. One that uses what Hearth's
// template subset lacks leaves that setting read-only with a note, rather
// than sending the bare value to a device that expects something else.
import { DEFAULT_CONFIRM_TIMEOUT_MS, DEFAULT_STATES } from '../../defaults.js';
import { MAX_STATE_BYTES, PayloadError, VOCABULARY_KINDS } from '../../decode.js';
import { readJsonPath } from '../../json-path.js';
import { JsonLimitError, parseBoundedJson } from '../../../util/bounded-json.js';
import type { ColorMode } from '../../color.js';
import { type ColorTempSupport, kelvinRangeOfMireds } from '../../color-temp.js';
import {
  ACTUATOR_KINDS,
  type AttributeSource,
  type CommandRender,
  type Availability,
  type AvailabilitySource,
  type Entity,
  type EntityKind,
  type PayloadTransform,
  type PayloadView,
  type Range,
} from '../../model.js';
import { actionsOf } from '../../actions.js';
import { readsAs, readsOf } from '../../reading.js';
import type { Json } from './abbreviations.js';
import { chargeRender, mayRender, TEMPLATE_WORK_PER_SECOND } from './template-work.js';
import { compileTemplate, lastRenderCost, renderStripped, TemplateError, type CompiledTemplate } from './templates.js';

/** An entity without the parts the adapter fills in (id, key, name, device, area). */
export type EntityBody = Omit<Entity, 'id' | 'key' | 'name' | 'aliases' | 'deviceId' | 'area'>;

export interface NameSpec {
  /** The config's `name`: a string, null (the device's name), or absent (device class or platform default). */
  name: string | null | undefined;
  /** Used when `name` is absent and the platform names unnamed entities after their device class. */
  deviceClass?: string;
  /** HA's default name for the platform ("MQTT Sensor"). */
  platformDefault: string;
}

export interface Notes {
  /** Something the operator should fix or know (a template Hearth cannot evaluate). */
  warn(message: string): void;
  /** A capability left out on purpose (a per-call command template). */
  info(message: string): void;
}

export type Conversion = { body: EntityBody; nameSpec: NameSpec } | { noTool: string };

const DEFAULT_NAMES: Record<string, string> = {
  alarm_control_panel: 'MQTT Alarm',
  binary_sensor: 'MQTT Binary sensor',
  button: 'MQTT Button',
  camera: 'MQTT Camera',
  climate: 'MQTT HVAC',
  cover: 'MQTT Cover',
  device_tracker: 'MQTT Device tracker',
  event: 'MQTT Event',
  fan: 'MQTT Fan',
  humidifier: 'MQTT Humidifier',
  image: 'MQTT Image',
  lawn_mower: 'MQTT Lawn Mower',
  light: 'MQTT Light',
  lock: 'MQTT Lock',
  notify: 'MQTT notify',
  number: 'MQTT Number',
  scene: 'MQTT Scene',
  select: 'MQTT Select',
  sensor: 'MQTT Sensor',
  siren: 'MQTT Siren',
  switch: 'MQTT Switch',
  text: 'MQTT Text',
  update: 'MQTT Update',
  vacuum: 'MQTT Vacuum',
  valve: 'MQTT Valve',
  water_heater: 'MQTT Water Heater',
};

/** Platforms whose unnamed entities HA names after their device class. */
const NAMED_BY_DEVICE_CLASS = new Set(['sensor', 'binary_sensor', 'button', 'number', 'event', 'update']);

/** Why a platform HA accepts gives no tool. */
const NO_KIND: Record<string, string> = {
  device_automation: 'device triggers (device_automation) are automation events, not something to read or act on; Hearth has no kind for them',
  tag: 'tag scanners (tag) report scanned tag ids for automations; Hearth has no kind for them',
};

// ---------------------------------------------------------------------------
// Templates: readings and command payloads
// ---------------------------------------------------------------------------

interface Reading {
  topic: string;
  path?: string;
  transform?: PayloadTransform;
}

/** Reads one value of the config being converted (see `reading`). */
type ReadOf = (topic: unknown, template: unknown, what: string) => Reading | undefined;

function short(source: string): string {
  const flat = source.replace(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > 60 ? `${flat.slice(0, 57)}...` : flat);
}

/** What a reading reads of a message: its transform's value, else what its path reads, else the text (PayloadView.read). */
function readBy(r: { path?: string; transform?: PayloadTransform }, message: PayloadView): unknown {
  return r.transform ? r.transform(message) : message.read(r.path);
}

/**
 * readBy said in words, to compare with what a re-published config's reading reads (reading.ts): its transform's
 * text, its path, or the payload; undefined when its transform cannot be compared.
 */
function readsText(r: { path?: string; transform?: PayloadTransform }): string | undefined {
  if (r.transform) return readsOf(r.transform);
  return r.path ? `path ${r.path}` : 'payload';
}

/** `transform`, said to read `what` of the reading `base` (readsText); said nothing of when `base` cannot be compared. */
function readsOver(transform: PayloadTransform, what: string, base: { path?: string; transform?: PayloadTransform }): PayloadTransform {
  const text = readsText(base);
  return text === undefined ? transform : readsAs(transform, `${what} of ${text}`);
}

/**
 * A transform that renders a value template against a message, as HA does (value, value_json). Two read alike
 * when their template's text and encoding are the same (reading.ts).
 */
export function templateTransform(template: CompiledTemplate, encoding: string): PayloadTransform {
  const wantsJson = template.variables.has('value_json');
  const transform = (message: PayloadView) => {
    if (message.payload.length > MAX_STATE_BYTES) {
      throw new PayloadError('oversized', `${message.payload.length} bytes is over the ${MAX_STATE_BYTES}-byte limit for state`);
    }
    // HA hands raw bytes to templates when `encoding` is "" (e.g. for `unpack`).
    const value: string | Buffer = encoding === '' ? message.payload : message.payload.toString('utf8');
    let valueJson: unknown;
    if (wantsJson) {
      try {
        valueJson = parseBoundedJson(typeof value === 'string' ? value : value.toString('utf8'), { maxChars: MAX_STATE_BYTES });
      } catch (err) {
        // Not JSON: value_json is undefined, as in Home Assistant; too deep or too big: refused.
        if (!(err instanceof JsonLimitError) || err.reason === 'not_json') valueJson = undefined;
        else throw new PayloadError(err.reason, `payload is ${err.message}`);
      }
    }
    if (!mayRender(message.topic)) {
      throw new PayloadError(
        'over_budget',
        `template work on ${message.topic} is over its budget for now (more than ${TEMPLATE_WORK_PER_SECOND} units a second); skipped`,
      );
    }
    try {
      return renderStripped(template, { value, value_json: valueJson });
    } catch (err) {
      throw new PayloadError('bad_value', `template ${short(template.source)} failed: ${(err as Error).message}`);
    } finally {
      chargeRender(message.topic, lastRenderCost() + value.length);
    }
  };
  return readsAs(transform, `template ${JSON.stringify(encoding)} ${template.source}`);
}

function compile(source: string, what: string, notes: Notes): CompiledTemplate | undefined {
  try {
    return compileTemplate(source);
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    notes.warn(`${what} ${short(source)} cannot be evaluated (${err.message})`);
    return undefined;
  }
}

/** What to read for one value: topic plus a JSON path or a template. Undefined when there is nothing usable. */
function reading(topic: unknown, template: unknown, encoding: string, what: string, notes: Notes): Reading | undefined {
  if (typeof topic !== 'string' || !topic) return undefined;
  if (/[+#]/.test(topic)) {
    notes.warn(`${what} topic ${JSON.stringify(topic)} has a wildcard; Hearth follows exact state topics only, so it is not read`);
    return undefined;
  }
  if (typeof template !== 'string') return { topic };
  const compiled = compile(template, `${what} template`, notes);
  if (!compiled) {
    notes.warn(`${what} on ${JSON.stringify(topic)} will not be read`);
    return undefined;
  }
  if (compiled.simple?.kind === 'value' && encoding !== '') return { topic };
  if (compiled.simple?.kind === 'path') return { topic, path: compiled.simple.path };
  return { topic, transform: templateTransform(compiled, encoding) };
}

/** A command template rendered with constant inputs (a switch's payload_on): the payload HA would send. */
function rendered(template: unknown, vars: Record<string, unknown>, fallback: string, what: string, notes: Notes): string | undefined {
  if (typeof template !== 'string') return fallback;
  const compiled = compile(template, `${what} template`, notes);
  if (!compiled) return undefined;
  try {
    return renderStripped(compiled, vars);
  } catch (err) {
    notes.warn(`${what} template ${short(template)} failed: ${(err as Error).message}`);
    return undefined;
  }
}

/** Two payloads through the command template with constant inputs (payload_on/off, lock/unlock); undefined when it cannot be evaluated. */
function renderedPair(config: Json, keys: [string, string], notes: Notes): [string, string] | undefined {
  const [a, b] = keys.map((k) => rendered(config.command_template, { value: config[k] }, String(config[k]), 'command', notes));
  return a === undefined || b === undefined ? undefined : [a, b];
}

/**
 * The command topic switched with payload_on/payload_off through the command template (a switch, a fan, a
 * humidifier); the reason the entity is read-only when the template cannot be evaluated.
 */
function onOffCommand(draft: Draft, config: Json, notes: Notes): string | undefined {
  draft.body.commandTopic = str(config.command_topic);
  const pair = renderedPair(config, ['payload_on', 'payload_off'], notes);
  if (!pair) return 'its command template cannot be evaluated';
  draft.body.payloads = { on: pair[0], off: pair[1] };
  return undefined;
}

/**
 * A command template rendered with the value of each call (a number's value, a
 * thermostat's setpoint), with the variables Home Assistant gives it: `value`,
 * and for position templates `position` too. null: the identity, send the value
 * as it is; undefined: it does not compile (the note says why).
 */
function perCall(template: unknown, what: string, notes: Notes, variable?: string): CommandRender | null | undefined {
  if (identityTemplate(template, variable)) return null;
  const compiled = compile(String(template), `${what} template`, notes);
  if (!compiled) return undefined;
  return (value, parts) => renderStripped(compiled, { ...parts, value, ...(variable ? { [variable]: value } : {}) });
}

/**
 * A command with a value per call on a topic of its own (`<slot>_command_topic`, rendered by
 * `<slot>_command_template`): true when the entity offers it; a template that does not compile is
 * noted with what the entity goes without.
 */
function perCallCommand(draft: Draft, config: Json, slot: string, notes: Notes, without: string): boolean {
  const topic = str(config[`${slot}_command_topic`]);
  if (!topic) return false;
  const render = perCall(config[`${slot}_command_template`], `${slot}_command`, notes);
  if (render === undefined) {
    notes.info(without);
    return false;
  }
  draft.command(slot, topic, render);
  return true;
}

/**
 * The default-schema light's colour topics, per mode: the command topic and
 * template (whose variables are the parts: x, y / hue, sat / red, green,
 * blue), and the state topic, which reports the parts comma-separated.
 */
const COLOR_TOPICS = [
  colorTopics('xy', ['x', 'y'], ['color_x', 'color_y']),
  colorTopics('hs', ['hue', 'sat'], ['hue', 'saturation']),
  colorTopics('rgb', ['red', 'green', 'blue'], ['red', 'green', 'blue']),
];

/** One colour mode's keys: HA names them after the mode (`xy_command_topic`, `xy_command_template`, `xy_state_topic`, `xy_value_template`). */
function colorTopics<M extends ColorMode>(mode: M, vars: readonly string[], attrs: readonly string[]) {
  return {
    mode,
    command: `${mode}_command_topic`,
    template: `${mode}_command_template`,
    state: `${mode}_state_topic`,
    value: `${mode}_value_template`,
    vars,
    attrs,
  };
}

/** A cover's and a valve's commands on their command topic, and the config keys of their payloads. */
const OPEN_CLOSE_STOP = [
  ['open', 'payload_open'],
  ['close', 'payload_close'],
  ['stop', 'payload_stop'],
] as const;

/**
 * A light's colour temperature as Home Assistant declares it: mireds unless
 * color_temp_kelvin; the range from min/max_kelvin, else min/max_mireds, else
 * HA's own defaults (2000-6535 K, 153-500 mireds).
 */
function colorTempSupport(config: Json): ColorTempSupport | undefined {
  const unit = config.color_temp_kelvin === true ? 'kelvin' : 'mired';
  const [minK, maxK, minM, maxM] = [config.min_kelvin, config.max_kelvin, config.min_mireds, config.max_mireds].map((v) =>
    typeof v === 'number' ? v : undefined,
  );
  let range: { minKelvin: number; maxKelvin: number };
  if (minK !== undefined || maxK !== undefined) range = { minKelvin: minK ?? 2000, maxKelvin: maxK ?? 6535 };
  else if (minM !== undefined || maxM !== undefined) range = kelvinRangeOfMireds(minM ?? 153, maxM ?? 500);
  else range = unit === 'kelvin' ? { minKelvin: 2000, maxKelvin: 6535 } : kelvinRangeOfMireds(153, 500);
  return range.minKelvin < range.maxKelvin ? { ...range, unit } : undefined;
}

/** One number of a comma-separated reading ("255,0,0", after its template). */
function csvPart(r: Reading, index: number): PayloadTransform {
  const transform: PayloadTransform = (message) => {
    const text = readBy(r, message);
    if (text === undefined || text === null || text === '') return undefined;
    const part = Number(String(text).split(',')[index]);
    if (!Number.isFinite(part)) throw new PayloadError('bad_value', `expected comma-separated numbers, got ${JSON.stringify(String(text).slice(0, 40))}`);
    return part;
  };
  return readsOver(transform, `comma-separated part ${index}`, r);
}

/** Is a per-call command template the identity (`{{ value }}`, or the platform's own variable)? */
function identityTemplate(template: unknown, variable = 'value'): boolean {
  if (typeof template !== 'string') return true;
  return new RegExp(`^\\s*\\{\\{-?\\s*(value|${variable})\\s*-?\\}\\}\\s*$`).test(template);
}

// ---------------------------------------------------------------------------
// Building
// ---------------------------------------------------------------------------

class Draft {
  body: EntityBody;
  constructor(kind: EntityKind) {
    this.body = {
      kind,
      attributes: {},
      commandFormat: 'plain',
      commandTopics: {},
      payloads: {},
      states: {},
      ranges: {},
      options: {},
      confirmTimeoutMs: DEFAULT_CONFIRM_TIMEOUT_MS[kind],
    };
  }
  /** Send `slot` on `topic` (its own command topic), through `render` when the template is not the identity. */
  command(slot: string, topic: string, render: CommandRender | null): void {
    this.body.commandTopics[slot] = topic;
    if (render) (this.body.commandTemplates ??= {})[slot] = render;
  }
  main(r: Reading | undefined): void {
    if (!r) return;
    this.body.stateTopic = r.topic;
    if (r.path) {
      this.body.valuePath = r.path;
      // HA compares the rendered text: a JSON true is "True" (z2m's payload_on: true), not Hearth's generic on.
      if (VOCABULARY_KINDS.has(this.body.kind)) this.body.transform = pythonText(r.path);
    }
    if (r.transform) this.body.transform = r.transform;
  }
  attr(name: string, r: Reading | undefined): void {
    if (!r) return;
    const a: AttributeSource = { topic: r.topic };
    if (r.path) a.path = r.path;
    if (r.transform) a.transform = r.transform;
    this.body.attributes[name] = a;
  }
}

/**
 * One field of a JSON object a reading gives (a vacuum's `state`, an update's
 * `latest_version`, an event's `event_type`): from the payload's JSON, or from
 * the JSON text a template rendered. `whole`: a reading that is not a JSON
 * object is the value itself (a siren's plain ON, an update's bare version).
 */
function jsonField(r: Reading, field: string, whole: boolean): PayloadTransform {
  const transform: PayloadTransform = (message) => {
    let raw: unknown = readBy(r, message);
    if (typeof raw === 'string' && raw.trimStart().startsWith('{')) {
      const text = raw;
      try {
        raw = parseBoundedJson(text, { maxChars: MAX_STATE_BYTES });
      } catch (err) {
        if (err instanceof JsonLimitError && err.reason !== 'not_json') throw new PayloadError(err.reason, `payload is ${err.message}`);
        throw new PayloadError('not_json', `expected a JSON object with "${field}", got ${JSON.stringify(text.slice(0, 40))}`);
      }
    }
    if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) return (raw as Record<string, unknown>)[field];
    return whole ? raw : undefined;
  };
  return readsOver(transform, `JSON field ${JSON.stringify(field)}${whole ? ' (or the whole)' : ''}`, r);
}

/** Read a JSON path as Home Assistant's template would print it: booleans as True/False. */
function pythonText(path: string): PayloadTransform {
  const transform: PayloadTransform = (message) => {
    const v = readJsonPath(message.json(), path);
    return typeof v === 'boolean' ? (v ? 'True' : 'False') : v;
  };
  return readsAs(transform, `Python text of path ${path}`);
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function availabilityOf(config: Json, encoding: string, notes: Notes): Availability | undefined {
  const entries: Array<{ topic: unknown; on: unknown; off: unknown; template: unknown }> = [];
  if (Array.isArray(config.availability)) {
    for (const e of config.availability as Json[])
      entries.push({ topic: e.topic, on: e.payload_available, off: e.payload_not_available, template: e.value_template });
  } else if (typeof config.availability_topic === 'string') {
    entries.push({ topic: config.availability_topic, on: config.payload_available, off: config.payload_not_available, template: config.availability_template });
  }
  const sources: AvailabilitySource[] = [];
  for (const e of entries) {
    const r = reading(e.topic, e.template, encoding, 'availability', notes);
    if (!r) continue;
    const s: AvailabilitySource = { topic: r.topic, payloadAvailable: String(e.on ?? 'online'), payloadNotAvailable: String(e.off ?? 'offline') };
    if (r.path) s.path = r.path;
    if (r.transform) s.transform = r.transform;
    sources.push(s);
  }
  if (!sources.length) return undefined;
  const mode = config.availability_mode === 'all' || config.availability_mode === 'any' ? config.availability_mode : 'latest';
  return { sources, mode };
}

/** Map a device's words to Hearth's logical states (for entities kept read-only as sensors). */
function vocabulary(states: Record<string, string>, base: { path?: string; transform?: PayloadTransform }): PayloadTransform {
  const lookup = new Map(Object.entries(states).map(([logical, word]) => [word.toLowerCase(), logical]));
  const transform: PayloadTransform = (message) => {
    const raw = readBy(base, message);
    if (typeof raw !== 'string') return raw;
    return lookup.get(raw.trim().toLowerCase()) ?? raw;
  };
  return readsOver(transform, `the words ${JSON.stringify(states)}`, base);
}

/** Keep an actuator that cannot be actuated as a read-only sensor (its value still readable). */
function readOnly(draft: Draft, reason: string, notes: Notes): void {
  const b = draft.body;
  notes.info(`offered read-only (as a sensor): ${reason}`);
  if (b.stateTopic && Object.keys(b.states).length) {
    b.transform = vocabulary(b.states, { path: b.valuePath, transform: b.transform });
  }
  // Attributes that only existed to be commanded stay readable.
  b.kind = 'sensor';
  b.commandTopic = undefined;
  b.commandTopics = {};
  b.commandFormat = 'plain';
  b.payloads = {};
  b.ranges = {};
  b.options = {};
  b.confirmTimeoutMs = DEFAULT_CONFIRM_TIMEOUT_MS.sensor;
}

/**
 * What a climate and a water heater read alike: the mode as the state, the target and current temperature as
 * attributes. Each template falls back to value_template, as in HA: the lookup is returned for the other readings.
 */
function thermostatReadings(draft: Draft, config: Json, read: ReadOf): (key: string) => unknown {
  const tpl = (key: string) => config[key] ?? config.value_template;
  draft.main(read(config.mode_state_topic, tpl('mode_state_template'), 'mode'));
  draft.attr('temperature', read(config.temperature_state_topic, tpl('temperature_state_template'), 'temperature'));
  draft.attr('current_temperature', read(config.current_temperature_topic, tpl('current_temperature_template'), 'current_temperature'));
  return tpl;
}

/** What a climate and a water heater set alike: the mode, and the target temperature within `range` (each platform has its own defaults). */
function thermostatCommands(draft: Draft, config: Json, notes: Notes, range: Range): void {
  if (perCallCommand(draft, config, 'mode', notes, 'the mode is read-only')) draft.body.options.mode = [...(config.modes as string[])];
  if (perCallCommand(draft, config, 'temperature', notes, 'the target temperature is read-only')) draft.body.ranges.temperature = range;
}

/** Convert a validated config. `notes` hears about anything left out. */
export function toEntity(platform: string, config: Json, notes: Notes): Conversion {
  if (NO_KIND[platform]) return { noTool: NO_KIND[platform] };
  if (config.enabled_by_default === false) {
    return { noTool: 'disabled by default (enabled_by_default: false): Home Assistant registers it disabled, Hearth leaves it out' };
  }
  const encoding = typeof config.encoding === 'string' ? config.encoding : 'utf-8';
  const read: ReadOf = (topic, template, what) => reading(topic, template, encoding, what, notes);
  let draft: Draft;
  let readOnlyReason: string | undefined;

  switch (platform) {
    case 'sensor': {
      draft = new Draft('sensor');
      draft.main(read(config.state_topic, config.value_template, 'value'));
      if (str(config.unit_of_measurement)) draft.body.unit = str(config.unit_of_measurement);
      break;
    }
    case 'binary_sensor': {
      draft = new Draft('binary_sensor');
      draft.body.states = { on: String(config.payload_on), off: String(config.payload_off) };
      draft.main(read(config.state_topic, config.value_template, 'value'));
      break;
    }
    case 'camera': {
      draft = new Draft('camera');
      draft.body.stateTopic = str(config.topic);
      draft.body.imageEncoding = config.image_encoding === 'b64' ? 'b64' : 'raw';
      break;
    }
    case 'image': {
      if (config.image_topic === undefined) return { noTool: 'image by URL (url_topic): Hearth does not fetch images from URLs, so no tool' };
      draft = new Draft('image');
      draft.body.stateTopic = str(config.image_topic);
      draft.body.imageEncoding = config.image_encoding === 'b64' ? 'b64' : 'raw';
      break;
    }
    case 'switch': {
      draft = new Draft('switch');
      readOnlyReason = onOffCommand(draft, config, notes);
      draft.body.states = { on: String(config.state_on ?? config.payload_on), off: String(config.state_off ?? config.payload_off) };
      draft.main(read(config.state_topic, config.value_template, 'value'));
      break;
    }
    case 'light': {
      draft = new Draft('light');
      draft.body.commandTopic = str(config.command_topic);
      if (config.schema === 'json') {
        draft.body.commandFormat = 'json';
        draft.body.payloads = { on: 'ON', off: 'OFF' };
        draft.body.states = { on: 'ON', off: 'OFF' };
        draft.body.valuePath = 'state';
        const stateTopic = str(config.state_topic);
        if (stateTopic && !/[+#]/.test(stateTopic)) draft.body.stateTopic = stateTopic;
        const modes = Array.isArray(config.supported_color_modes) ? (config.supported_color_modes as string[]) : [];
        const brightness = config.brightness === true || modes.some((m) => m !== 'onoff');
        if (brightness) {
          draft.body.ranges.brightness = { min: 0, max: config.brightness_scale as number, step: 1 };
          draft.body.attributes.brightness = { path: 'brightness' };
        }
        if (modes.length) draft.body.attributes.color_mode = { path: 'color_mode' };
        if (modes.includes('color_temp')) {
          draft.body.attributes.color_temp = { path: 'color_temp' };
          const ct = colorTempSupport(config);
          if (ct) draft.body.colorTemp = ct;
          else notes.info('its colour temperature range is empty; Hearth reads the colour temperature but does not set it');
        }
        if (modes.includes('hs')) Object.assign(draft.body.attributes, { hue: { path: 'color.h' }, saturation: { path: 'color.s' } });
        if (modes.includes('xy')) Object.assign(draft.body.attributes, { color_x: { path: 'color.x' }, color_y: { path: 'color.y' } });
        if (modes.some((m) => m.startsWith('rgb')))
          Object.assign(draft.body.attributes, { red: { path: 'color.r' }, green: { path: 'color.g' }, blue: { path: 'color.b' } });
        // What a colour command may send, best first ({"color": {"x", "y"}}, {"h", "s"}, {"r", "g", "b"}); rgbw/rgbww want a white channel too.
        const colorModes = (['xy', 'hs', 'rgb'] as const).filter((m) => modes.includes(m));
        if (colorModes.length) draft.body.colorModes = [...colorModes];
        if (config.effect === true) {
          draft.body.attributes.effect = { path: 'effect' };
          if (Array.isArray(config.effect_list)) draft.body.options.effect = config.effect_list as string[];
        }
      } else if (config.schema === 'template') {
        const on = rendered(config.command_on_template, { state: 'on' }, '', 'command_on', notes);
        const off = rendered(config.command_off_template, { state: 'off' }, '', 'command_off', notes);
        if (on === undefined || off === undefined) readOnlyReason = 'its on/off command templates cannot be evaluated';
        else draft.body.payloads = { on, off };
        draft.body.states = { on: 'on', off: 'off' };
        if (config.state_template !== undefined) draft.main(read(config.state_topic, config.state_template, 'state'));
        if (config.brightness_template !== undefined) {
          notes.info('brightness is set through command_on_template per call; Hearth offers on/off only for this light');
        }
      } else {
        draft.body.payloads = { on: String(config.payload_on), off: String(config.payload_off) };
        draft.body.states = { on: String(config.payload_on), off: String(config.payload_off) };
        draft.main(read(config.state_topic, config.state_value_template, 'state'));
        if (perCallCommand(draft, config, 'brightness', notes, 'Hearth offers on/off only for this light')) {
          draft.body.ranges.brightness = { min: 0, max: config.brightness_scale as number, step: 1 };
          draft.attr('brightness', read(config.brightness_state_topic, config.brightness_value_template, 'brightness'));
        }
        const colorModes: ColorMode[] = [];
        for (const c of COLOR_TOPICS) {
          const topic = str(config[c.command]);
          if (!topic) continue;
          const template = config[c.template];
          const compiled = typeof template === 'string' ? compile(template, `${c.template}`, notes) : undefined;
          if (typeof template === 'string' && !compiled) {
            notes.info(`the ${c.mode} colour is not offered`);
            continue;
          }
          // The parts go in under HA's names (x, y / hue, sat / red, green, blue), in the order Hearth makes them.
          const render: CommandRender | null = compiled
            ? (value, parts) => renderStripped(compiled, { value, ...Object.fromEntries(c.vars.map((v, i) => [v, Object.values(parts ?? {})[i]])) })
            : null;
          draft.command(c.mode, topic, render);
          colorModes.push(c.mode);
          const state = read(config[c.state], config[c.value], `${c.mode} state`);
          if (state) for (const [i, a] of c.attrs.entries()) draft.body.attributes[a] = { topic: state.topic, transform: csvPart(state, i) };
        }
        if (colorModes.length) draft.body.colorModes = colorModes;
        draft.attr('color_temp', read(config.color_temp_state_topic, config.color_temp_value_template, 'color_temp'));
        const ctTopic = str(config.color_temp_command_topic);
        if (ctTopic) {
          const render = perCall(config.color_temp_command_template, 'color_temp_command', notes);
          const ct = colorTempSupport(config);
          if (render === undefined || !ct) {
            notes.info('the colour temperature is not offered');
          } else {
            draft.command('color_temp', ctTopic, render);
            draft.body.colorTemp = ct;
          }
        }
        draft.attr('color_mode', read(config.color_mode_state_topic, config.color_mode_value_template, 'color_mode'));
        draft.attr('effect', read(config.effect_state_topic, config.effect_value_template, 'effect'));
        if (config.on_command_type !== 'last' && draft.body.commandTopics.brightness) {
          notes.info(`on_command_type ${String(config.on_command_type)}: Hearth sends the brightness first, then payload_on`);
        }
      }
      break;
    }
    case 'cover': {
      draft = new Draft('cover');
      const commandTopic = str(config.command_topic);
      if (commandTopic) {
        draft.body.commandTopic = commandTopic;
        for (const [word, key] of OPEN_CLOSE_STOP) {
          if (typeof config[key] === 'string') draft.body.payloads[word] = config[key] as string;
        }
      }
      draft.body.states = {
        open: String(config.state_open),
        opening: String(config.state_opening),
        closed: String(config.state_closed),
        closing: String(config.state_closing),
        stopped: String(config.state_stopped),
      };
      draft.main(read(config.state_topic, config.value_template, 'state'));
      draft.attr('position', read(config.position_topic, config.position_template, 'position'));
      const open = config.position_open as number;
      const closed = config.position_closed as number;
      const setTopic = str(config.set_position_topic);
      if (setTopic) {
        const render = perCall(config.set_position_template, 'set_position', notes, 'position');
        if (render === undefined) {
          notes.info('Hearth offers open/close/stop only');
        } else if (closed >= open) {
          notes.info('position_closed is not below position_open; Hearth offers open/close/stop only');
        } else {
          draft.command('position', setTopic, render);
          draft.body.ranges.position = { min: closed, max: open, step: 1 };
        }
      }
      if (!commandTopic && !draft.body.commandTopics.position) readOnlyReason = 'it has no command topic';
      break;
    }
    case 'lock': {
      draft = new Draft('lock');
      draft.body.commandTopic = str(config.command_topic);
      const pair = renderedPair(config, ['payload_lock', 'payload_unlock'], notes);
      if (config.code_format !== undefined) readOnlyReason = 'it needs a code (code_format) and Hearth does not send codes';
      else if (!pair) readOnlyReason = 'its command template cannot be evaluated';
      else draft.body.payloads = { lock: pair[0], unlock: pair[1] };
      draft.body.states = {
        locked: String(config.state_locked),
        unlocked: String(config.state_unlocked),
        locking: String(config.state_locking),
        unlocking: String(config.state_unlocking),
        jammed: String(config.state_jammed),
        open: String(config.state_open),
        opening: String(config.state_opening),
      };
      draft.main(read(config.state_topic, config.value_template, 'state'));
      break;
    }
    case 'climate': {
      draft = new Draft('climate');
      const tpl = thermostatReadings(draft, config, read);
      draft.attr('current_humidity', read(config.current_humidity_topic, tpl('current_humidity_template'), 'current_humidity'));
      draft.attr('target_humidity', read(config.target_humidity_state_topic, tpl('target_humidity_state_template'), 'target_humidity'));
      draft.attr('action', read(config.action_topic, tpl('action_template'), 'action'));
      draft.attr('preset_mode', read(config.preset_mode_state_topic, tpl('preset_mode_value_template'), 'preset_mode'));
      draft.attr('fan_mode', read(config.fan_mode_state_topic, tpl('fan_mode_state_template'), 'fan_mode'));
      draft.attr('swing_mode', read(config.swing_mode_state_topic, tpl('swing_mode_state_template'), 'swing_mode'));
      const unit = config.temperature_unit === 'F' ? '°F' : config.temperature_unit === 'C' ? '°C' : undefined;
      if (unit) draft.body.unit = unit;
      const fahrenheit = unit === '°F';
      thermostatCommands(draft, config, notes, {
        min: num(config.min_temp) ?? (fahrenheit ? 45 : 7),
        max: num(config.max_temp) ?? (fahrenheit ? 95 : 35),
        step: num(config.temp_step) ?? num(config.precision) ?? 1,
      });
      break;
    }
    case 'number': {
      draft = new Draft('number');
      draft.body.commandTopic = str(config.command_topic);
      draft.body.ranges.value = { min: config.min as number, max: config.max as number, step: config.step as number };
      if (str(config.unit_of_measurement)) draft.body.unit = str(config.unit_of_measurement);
      draft.main(read(config.state_topic, config.value_template, 'value'));
      const render = perCall(config.command_template, 'command', notes);
      if (render === undefined) readOnlyReason = 'its command_template cannot be evaluated';
      else if (render) draft.body.commandTemplates = { value: render };
      break;
    }
    case 'select': {
      draft = new Draft('select');
      draft.body.commandTopic = str(config.command_topic);
      draft.body.options.value = [...(config.options as string[])];
      draft.main(read(config.state_topic, config.value_template, 'value'));
      const render = perCall(config.command_template, 'command', notes);
      if (render === undefined) readOnlyReason = 'its command_template cannot be evaluated';
      else if (!(config.options as string[]).length) readOnlyReason = 'it has no options';
      else if (render) draft.body.commandTemplates = { value: render };
      break;
    }
    case 'button': {
      draft = new Draft('button');
      draft.body.commandTopic = str(config.command_topic);
      const raw = String(config.payload_press);
      const press = rendered(config.command_template, { value: raw }, raw, 'command', notes);
      if (press === undefined) readOnlyReason = 'its command template cannot be evaluated';
      else draft.body.payloads = { press };
      break;
    }
    case 'scene': {
      // HA sends payload_on as it is (a scene has no command template).
      draft = new Draft('scene');
      draft.body.commandTopic = str(config.command_topic);
      draft.body.payloads = { activate: String(config.payload_on) };
      break;
    }
    case 'vacuum': {
      draft = new Draft('vacuum');
      draft.body.states = { ...DEFAULT_STATES.vacuum };
      // The state topic carries JSON: {"state": "cleaning", "battery_level": 61, "fan_speed": "max"}.
      const stateTopic = str(config.state_topic);
      if (stateTopic && !/[+#]/.test(stateTopic)) {
        draft.main({ topic: stateTopic, path: 'state' });
        draft.attr('battery_level', { topic: stateTopic, path: 'battery_level' });
        draft.attr('fan_speed', { topic: stateTopic, path: 'fan_speed' });
      }
      const features = new Set(config.supported_features as string[]);
      const commandTopic = str(config.command_topic);
      if (commandTopic) {
        draft.body.commandTopic = commandTopic;
        for (const [action, feature] of [
          ['start', 'start'],
          ['pause', 'pause'],
          ['stop', 'stop'],
          ['return_to_base', 'return_home'],
          ['clean_spot', 'clean_spot'],
          ['locate', 'locate'],
        ] as const) {
          if (features.has(feature)) draft.body.payloads[action] = String(config[`payload_${action}`]);
        }
      }
      const speeds = (config.fan_speed_list as string[] | undefined) ?? [];
      const fanTopic = str(config.set_fan_speed_topic);
      if (features.has('fan_speed') && fanTopic && speeds.length) {
        draft.command('fan_speed', fanTopic, null);
        draft.body.options.fan_speed = [...speeds];
      }
      break;
    }
    case 'lawn_mower': {
      draft = new Draft('lawn_mower');
      draft.body.states = { ...DEFAULT_STATES.lawn_mower };
      draft.main(read(config.activity_state_topic, config.activity_value_template, 'activity'));
      // Each command on a topic of its own; HA renders its template with the command's name as value.
      for (const action of ['start_mowing', 'pause', 'dock'] as const) {
        const topic = str(config[`${action}_command_topic`]);
        if (!topic) continue;
        const payload = rendered(config[`${action}_command_template`], { value: action }, action, `${action}_command`, notes);
        if (payload === undefined) continue;
        draft.body.commandTopics[action] = topic;
        draft.body.payloads[action] = payload;
      }
      break;
    }
    case 'siren': {
      draft = new Draft('siren');
      draft.body.commandTopic = str(config.command_topic);
      draft.body.payloads = { on: String(config.payload_on), off: String(config.payload_off) };
      draft.body.states = { on: String(config.state_on ?? config.payload_on), off: String(config.state_off ?? config.payload_off) };
      // A state is a word, or JSON with the state and the parameters it sounds with.
      const r = read(config.state_topic, config.state_value_template, 'state');
      if (r) {
        draft.body.stateTopic = r.topic;
        draft.body.transform = jsonField(r, 'state', true);
        for (const name of ['tone', 'volume_level', 'duration']) draft.body.attributes[name] = { topic: r.topic, transform: jsonField(r, name, false) };
      }
      const on = perCall(config.command_template, 'command', notes);
      const off = config.command_off_template === undefined ? on : perCall(config.command_off_template, 'command_off', notes);
      if (on === undefined || off === undefined) readOnlyReason = 'its command template cannot be evaluated';
      else {
        if (on) (draft.body.commandTemplates ??= {}).value = on;
        if (off) (draft.body.commandTemplates ??= {}).off = off;
        // Without a template HA sends JSON: {"state": "ON", "tone": ..., "volume_level": ..., "duration": ...}.
        if (!on) {
          draft.body.commandFormat = 'json';
          draft.body.valuePath = 'state';
        }
      }
      const tones = (config.available_tones as string[] | undefined) ?? [];
      if (tones.length) draft.body.options.tone = [...tones];
      if (config.support_volume_set) draft.body.ranges.volume_level = { min: 0, max: 1 };
      if (config.support_duration) draft.body.ranges.duration = { min: 1, max: 600, step: 1 };
      break;
    }
    case 'device_tracker': {
      draft = new Draft('device_tracker');
      draft.body.states = { home: String(config.payload_home), not_home: String(config.payload_not_home) };
      draft.main(read(config.state_topic, config.value_template, 'state'));
      break;
    }
    case 'event': {
      draft = new Draft('event');
      draft.body.options.event_type = [...(config.event_types as string[])];
      // The payload (or what its template renders) is JSON with the event type: {"event_type": "single", ...}.
      const r = read(config.state_topic, config.value_template, 'event');
      if (r) {
        draft.body.stateTopic = r.topic;
        draft.body.transform = jsonField(r, 'event_type', false);
      }
      break;
    }
    case 'update': {
      draft = new Draft('update');
      // The state is the installed version, or JSON with installed_version, latest_version, in_progress...
      const r = read(config.state_topic, config.value_template, 'state');
      if (r) {
        draft.body.stateTopic = r.topic;
        draft.body.transform = jsonField(r, 'installed_version', true);
        for (const name of ['latest_version', 'in_progress', 'update_percentage', 'title']) {
          draft.body.attributes[name] = { topic: r.topic, transform: jsonField(r, name, false) };
        }
      }
      const latest = read(config.latest_version_topic, config.latest_version_template, 'latest_version');
      if (latest) draft.attr('latest_version', latest);
      const commandTopic = str(config.command_topic);
      if (commandTopic && typeof config.payload_install === 'string') {
        draft.body.commandTopic = commandTopic;
        draft.body.payloads.install = config.payload_install;
      } else if (commandTopic) notes.info('it has no payload_install, so installing is not offered');
      break;
    }
    case 'humidifier': {
      draft = new Draft('humidifier');
      readOnlyReason = onOffCommand(draft, config, notes);
      draft.body.states = { on: String(config.payload_on), off: String(config.payload_off) };
      draft.main(read(config.state_topic, config.state_value_template, 'state'));
      const humidityTopic = str(config.target_humidity_command_topic);
      if (humidityTopic) {
        const render = perCall(config.target_humidity_command_template, 'target_humidity_command', notes);
        const range = { min: num(config.min_humidity) ?? 0, max: num(config.max_humidity) ?? 100, step: 1 };
        if (render === undefined) notes.info('the target humidity is read-only');
        else if (range.min >= range.max) notes.info('min_humidity is not below max_humidity; the target humidity is read-only');
        else {
          draft.command('humidity', humidityTopic, render);
          draft.body.ranges.humidity = range;
        }
      }
      draft.attr('humidity', read(config.target_humidity_state_topic, config.target_humidity_state_template, 'target_humidity'));
      const modes = (config.modes as string[] | undefined) ?? [];
      if (modes.length && perCallCommand(draft, config, 'mode', notes, 'the mode is read-only')) draft.body.options.mode = [...modes];
      draft.attr('mode', read(config.mode_state_topic, config.mode_state_template, 'mode'));
      draft.attr('current_humidity', read(config.current_humidity_topic, config.current_humidity_template, 'current_humidity'));
      draft.attr('action', read(config.action_topic, config.action_template, 'action'));
      break;
    }
    case 'water_heater': {
      draft = new Draft('water_heater');
      thermostatReadings(draft, config, read);
      const fahrenheit = config.temperature_unit === 'F';
      draft.body.unit = fahrenheit ? '°F' : '°C';
      // HA's water heater defaults: 110-140 °F (43.3-60 °C), a tenth of a degree in Celsius.
      thermostatCommands(draft, config, notes, {
        min: num(config.min_temp) ?? (fahrenheit ? 110 : 43.3),
        max: num(config.max_temp) ?? (fahrenheit ? 140 : 60),
        step: num(config.precision) ?? (fahrenheit ? 1 : 0.1),
      });
      const powerTopic = str(config.power_command_topic);
      if (powerTopic) {
        const on = rendered(config.power_command_template, { value: config.payload_on }, String(config.payload_on), 'power_command', notes);
        const off = rendered(config.power_command_template, { value: config.payload_off }, String(config.payload_off), 'power_command', notes);
        if (on !== undefined && off !== undefined) {
          draft.body.commandTopics.power = powerTopic;
          draft.body.payloads = { on, off };
        }
      }
      break;
    }
    case 'text': {
      if (config.mode === 'password') return { noTool: 'a password text (mode: password) holds a secret; Hearth neither reads nor sets it' };
      draft = new Draft('text');
      draft.body.commandTopic = str(config.command_topic);
      draft.main(read(config.state_topic, config.value_template, 'value'));
      draft.body.ranges.length = { min: config.min as number, max: config.max as number, step: 1 };
      const render = perCall(config.command_template, 'command', notes);
      if (render === undefined) readOnlyReason = 'its command_template cannot be evaluated';
      else if (render) draft.body.commandTemplates = { value: render };
      if (config.pattern !== undefined) notes.info('its pattern is not checked by Hearth (the device checks what it is sent)');
      break;
    }
    case 'notify': {
      draft = new Draft('notify');
      draft.body.commandTopic = str(config.command_topic);
      const render = perCall(config.command_template, 'command', notes);
      if (render === undefined) readOnlyReason = 'its command_template cannot be evaluated';
      else if (render) draft.body.commandTemplates = { value: render };
      break;
    }
    case 'fan': {
      draft = new Draft('fan');
      readOnlyReason = onOffCommand(draft, config, notes);
      draft.body.states = { on: String(config.payload_on), off: String(config.payload_off) };
      draft.main(read(config.state_topic, config.state_value_template, 'state'));
      if (perCallCommand(draft, config, 'percentage', notes, 'the speed is not offered')) {
        draft.body.ranges.percentage = { min: 0, max: config.speed_range_max as number, step: 1 };
        draft.attr('percentage', read(config.percentage_state_topic, config.percentage_value_template, 'percentage'));
      }
      const presets = (config.preset_modes as string[]) ?? [];
      if (presets.length && perCallCommand(draft, config, 'preset_mode', notes, 'presets are read-only')) draft.body.options.preset_mode = [...presets];
      draft.attr('preset_mode', read(config.preset_mode_state_topic, config.preset_mode_value_template, 'preset_mode'));
      break;
    }
    case 'valve': {
      draft = new Draft('valve');
      const commandTopic = str(config.command_topic);
      draft.body.states = {
        open: String(config.state_open),
        opening: String(config.state_opening),
        closed: String(config.state_closed),
        closing: String(config.state_closing),
      };
      const cmd = (value: unknown, what: string) => rendered(config.command_template, { value }, String(value), what, notes);
      if (config.reports_position) {
        draft.attr('position', read(config.state_topic, config.value_template, 'position'));
        const open = config.position_open as number;
        const closed = config.position_closed as number;
        if (commandTopic) {
          draft.body.commandTopic = commandTopic;
          const o = cmd(open, 'command');
          const c = cmd(closed, 'command');
          if (o !== undefined && c !== undefined) Object.assign(draft.body.payloads, { open: o, close: c });
          if (typeof config.payload_stop === 'string') draft.body.payloads.stop = config.payload_stop;
          const render = perCall(config.command_template, 'command', notes, 'position');
          if (render === undefined) notes.info('Hearth offers open/close only');
          else if (closed < open) {
            draft.command('position', commandTopic, render);
            draft.body.ranges.position = { min: closed, max: open, step: 1 };
          }
        }
      } else {
        draft.main(read(config.state_topic, config.value_template, 'state'));
        if (commandTopic) {
          draft.body.commandTopic = commandTopic;
          for (const [word, key] of OPEN_CLOSE_STOP) {
            if (typeof config[key] !== 'string') continue;
            const p = cmd(config[key], 'command');
            if (p !== undefined) draft.body.payloads[word] = p;
          }
        }
      }
      if (!commandTopic) readOnlyReason = 'it has no command topic';
      else if (draft.body.payloads.open === undefined && draft.body.payloads.close === undefined && !draft.body.commandTopics.position) {
        readOnlyReason = 'its command template cannot be evaluated';
      }
      break;
    }
    case 'alarm_control_panel': {
      draft = new Draft('alarm_control_panel');
      draft.body.commandTopic = str(config.command_topic);
      draft.body.states = { ...DEFAULT_STATES.alarm_control_panel };
      draft.main(read(config.state_topic, config.value_template, 'state'));
      const features = new Set(config.supported_features as string[]);
      const code = config.code !== undefined;
      const skipped: string[] = [];
      const word = (action: string, key: string, needsCode: boolean) => {
        if (needsCode) {
          skipped.push(action);
          return;
        }
        const p = rendered(config.command_template, { action: config[key], code: null, value: null }, String(config[key]), 'command', notes);
        if (p !== undefined) draft.body.payloads[action] = p;
      };
      for (const [action, key] of [
        ['arm_home', 'payload_arm_home'],
        ['arm_away', 'payload_arm_away'],
        ['arm_night', 'payload_arm_night'],
      ] as const) {
        if (features.has(action)) word(action, key, code && config.code_arm_required === true);
      }
      word('disarm', 'payload_disarm', code && config.code_disarm_required === true);
      if (skipped.length) notes.info(`${skipped.join(', ')} need a code and Hearth does not send codes: not offered`);
      break;
    }
    default:
      return { noTool: `Hearth has no kind for ${platform}, so no tool` };
  }

  draft.body.availability = availabilityOf(config, encoding, notes);
  if (str(config.device_class)) draft.body.deviceClass = str(config.device_class);
  if (str(config.icon)) draft.body.icon = str(config.icon);

  if (!readOnlyReason && ACTUATOR_KINDS.has(draft.body.kind)) {
    const hadCommands = Object.keys(config).some((k) => k === 'command_topic' || k.endsWith('_command_topic'));
    if (!draft.body.commandTopic && !Object.keys(draft.body.commandTopics).length) {
      readOnlyReason = hadCommands ? 'none of its commands can be sent' : 'it has no command topic';
    } else if (!actionsOf(draft.body as Entity).length) readOnlyReason = 'none of its commands can be sent';
  }
  if (readOnlyReason) readOnly(draft, readOnlyReason, notes);

  const deviceClass = str(config.device_class);
  return {
    body: draft.body,
    nameSpec: {
      name: config.name === null ? null : str(config.name),
      ...(NAMED_BY_DEVICE_CLASS.has(platform) && deviceClass ? { deviceClass } : {}),
      platformDefault:
        config.schema === 'json' ? 'MQTT JSON Light' : config.schema === 'template' ? 'MQTT Template Light' : (DEFAULT_NAMES[platform] ?? 'MQTT Entity'),
    },
  };
}

/** "temperature" -> "Temperature", "carbon_dioxide" -> "Carbon dioxide" (HA's device class names, in English). */
export function deviceClassName(deviceClass: string): string {
  const text = deviceClass.replace(/_/g, ' ');
  const special: Record<string, string> = { pm25: 'PM2.5', pm10: 'PM10', pm1: 'PM1', pm4: 'PM4', ph: 'pH', aqi: 'Air quality index', co: 'Carbon monoxide' };
  return special[deviceClass] ?? text.charAt(0).toUpperCase() + text.slice(1);
}

export type { Range };
