// Validation and coercion of discovery configs, per platform, the way Home
// Assistant's voluptuous schemas do it: required keys, coercion ("35" -> 35,
// "true" -> true, true -> "True" for strings, 51840.0 -> 51840), unknown keys
// dropped (REMOVE_EXTRA) at the config level, refused (PREVENT_EXTRA) inside
// `device` and `origin`, and the cross-field checks HA makes (sensor unit vs
// device class, number min < max, cover/valve option pairs, light schemas...).
// Error text is voluptuous-like ("expected int @ data['qos']").
import { ensureList, isObject, type Json } from './abbreviations.js';
import { MAX_TEMPLATE_CHARS } from './templates.js';
import { NON_ENTITY_PLATFORMS, SUPPORTED_COMPONENTS } from './topics.js';

export class Invalid extends Error {
  constructor(
    message: string,
    readonly path: Array<string | number> = [],
  ) {
    super(message);
    this.name = 'Invalid';
  }
  /** voluptuous' rendering: `message @ data['a'][0]`. */
  describe(): string {
    return this.path.length ? `${this.message} @ data${this.path.map((p) => `[${typeof p === 'number' ? p : `'${p}'`}]`).join('')}` : this.message;
  }
}

type V = (value: unknown) => unknown;

/** Longest plain string value; templates may be longer. */
const MAX_STRING = 8 * 1024;
const MAX_LIST = 512;

// ---------------------------------------------------------------------------
// Value validators (config_validation.py equivalents)
// ---------------------------------------------------------------------------

/** cv.string: strings stay, numbers and booleans become their Python text, None/list/dict fail. */
export const string: V = (v) => {
  if (typeof v === 'string') {
    if (v.length > MAX_STRING) throw new Invalid(`string of ${v.length} characters is too long (at most ${MAX_STRING})`);
    return v;
  }
  if (v === null || v === undefined) throw new Invalid('string value is None');
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(v);
  throw new Invalid('expected str');
};

const stringOrNone: V = (v) => (v === null ? null : string(v));

/** cv.boolean */
export const boolean: V = (v) => {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') {
    const l = v.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on', 'enable'].includes(l)) return true;
    if (['0', 'false', 'no', 'off', 'disable'].includes(l)) return false;
  }
  throw new Invalid('invalid boolean value');
};

/** vol.Coerce(float) */
export const float: V = (v) => {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && /^\s*[+-]?(\d[\d_]*\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(v)) return Number(v.trim().replace(/_/g, ''));
  throw new Invalid('expected float');
};

/** vol.Coerce(int): Python's int() truncates floats and refuses "1.5". */
export const int: V = (v) => {
  if (typeof v === 'number' && Number.isFinite(v)) return Math.trunc(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && /^\s*[+-]?\d[\d_]*\s*$/.test(v)) return Number(v.trim().replace(/_/g, ''));
  throw new Invalid('expected int');
};

const range =
  (inner: V, min?: number, max?: number): V =>
  (v) => {
    const n = inner(v) as number;
    if (min !== undefined && n < min) throw new Invalid(`value must be at least ${min}`);
    if (max !== undefined && n > max) throw new Invalid(`value must be at most ${max}`);
    return n;
  };

export const positiveInt = range(int, 0);

const qos: V = (v) => {
  const n = int(v) as number;
  if (![0, 1, 2].includes(n)) throw new Invalid(`value must be one of [0, 1, 2]`);
  return n;
};

const oneOf =
  (...allowed: string[]): V =>
  (v) => {
    const s = string(v) as string;
    if (!allowed.includes(s)) throw new Invalid(`value must be one of ${JSON.stringify(allowed)}`);
    return s;
  };

/** cv.template: any string (or number) is a template; lists, dicts and None are not. */
const template: V = (v) => {
  if (v === null || v === undefined || typeof v === 'object') throw new Invalid('template value should be a string');
  const s = typeof v === 'string' ? v : (string(v) as string);
  if (s.length > MAX_TEMPLATE_CHARS) throw new Invalid(`template of ${s.length} characters is too long (at most ${MAX_TEMPLATE_CHARS})`);
  return s;
};

/** util.valid_topic */
const topic: V = (v) => {
  const s = string(v) as string;
  if (!s) throw new Invalid('MQTT topic name/filter must not be empty.');
  if (Buffer.byteLength(s, 'utf8') > 65535) throw new Invalid('MQTT topic name/filter must not be longer than 65535 encoded bytes.');
  if (/[\u0000-\u001f\u007f-\u009f\ufffe\uffff]/.test(s)) throw new Invalid('MQTT topic name/filter must not contain control characters.');
  return s;
};

/** util.valid_subscribe_topic: wildcards allowed, but only as whole levels (`#` last). */
export const subscribeTopic: V = (v) => {
  const s = topic(v) as string;
  const levels = s.split('/');
  levels.forEach((level, i) => {
    if (level.includes('+') && level !== '+') throw new Invalid('Single-level wildcard must occupy an entire level of the filter');
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) {
      throw new Invalid('Multi-level wildcard must be the last character in the topic filter.');
    }
  });
  return s;
};

/** util.valid_publish_topic: no wildcards. */
export const publishTopic: V = (v) => {
  const s = topic(v) as string;
  if (/[+#]/.test(s)) throw new Invalid('Wildcards cannot be used in topic names');
  return s;
};

const listOf =
  (item: V, options: { min?: number } = {}): V =>
  (v) => {
    const list = ensureList(v);
    if (list.length > MAX_LIST) throw new Invalid(`list of ${list.length} items is too long (at most ${MAX_LIST})`);
    if (options.min !== undefined && list.length < options.min) throw new Invalid(`length of value must be at least ${options.min}`);
    return list.map((x, i) => {
      try {
        return item(x);
      } catch (err) {
        if (err instanceof Invalid) throw new Invalid(err.message, [i, ...err.path]);
        throw err;
      }
    });
  };

const icon: V = (v) => {
  const s = string(v) as string;
  if (!s.includes(':')) throw new Invalid("Icons should be specified in the form 'prefix:name'");
  return s;
};

const url: V = (v) => {
  const s = string(v) as string;
  try {
    const u = new URL(s);
    if (!['http:', 'https:'].includes(u.protocol)) throw new Error();
  } catch {
    throw new Invalid('expected a URL');
  }
  return s;
};

const configurationUrl: V = (v) => {
  const s = string(v) as string;
  if (s.startsWith('homeassistant://')) return s;
  return url(s);
};

const entityCategory = oneOf('config', 'diagnostic');

const deviceClass =
  (classes: ReadonlySet<string>): V =>
  (v) => {
    if (v === null) return null;
    const s = (string(v) as string).toLowerCase();
    if (!classes.has(s)) throw new Invalid(`expected one of the device classes (got '${s}')`);
    return s;
  };

// ---------------------------------------------------------------------------
// Mapping schemas
// ---------------------------------------------------------------------------

interface Field {
  v: V;
  required?: boolean;
  default?: unknown;
}
type Fields = Record<string, V | Field>;

function field(f: V | Field): Field {
  return typeof f === 'function' ? { v: f } : f;
}

/** Validate a mapping: known keys checked and coerced, defaults filled, others dropped (or refused). */
function mapping(fields: Fields, extra: 'remove' | 'prevent', value: unknown, path: Array<string | number> = []): Json {
  if (!isObject(value)) throw new Invalid('expected a dictionary', path);
  const out: Json = {};
  for (const key of Object.keys(value)) {
    if (!Object.hasOwn(fields, key)) {
      if (extra === 'prevent') throw new Invalid('extra keys not allowed', [...path, key]);
      continue;
    }
    try {
      out[key] = field(fields[key]).v(value[key]);
    } catch (err) {
      if (err instanceof Invalid) throw new Invalid(err.message, [...path, key, ...err.path]);
      throw err;
    }
  }
  for (const [key, f] of Object.entries(fields)) {
    const spec = field(f);
    if (key in out) continue;
    if (spec.required) throw new Invalid('required key not provided', [...path, key]);
    if (spec.default !== undefined) out[key] = typeof spec.default === 'function' ? (spec.default as () => unknown)() : spec.default;
  }
  return out;
}

const deviceFields: Fields = {
  identifiers: { v: listOf(string), default: () => [] },
  connections: {
    v: listOf((pair) => {
      const l = ensureList(pair);
      if (!Array.isArray(pair) || l.length !== 2) throw new Invalid('length of value must be exactly 2');
      return l.map((x) => string(x));
    }),
    default: () => [],
  },
  manufacturer: string,
  model: string,
  model_id: string,
  name: string,
  hw_version: string,
  serial_number: string,
  sw_version: string,
  via_device: string,
  suggested_area: string,
  configuration_url: configurationUrl,
};

export interface DeviceBlock {
  identifiers: string[];
  connections: string[][];
  manufacturer?: string;
  model?: string;
  model_id?: string;
  name?: string;
  hw_version?: string;
  serial_number?: string;
  sw_version?: string;
  via_device?: string;
  suggested_area?: string;
  configuration_url?: string;
}

/** MQTT_ENTITY_DEVICE_INFO_SCHEMA */
export const device: V = (v) => {
  if (isObject(v) && 'via_hub' in v && !('via_device' in v)) {
    v = { ...v, via_device: v.via_hub };
    delete (v as Json).via_hub;
  }
  const d = mapping(deviceFields, 'prevent', v) as unknown as DeviceBlock;
  if (!d.identifiers.length && !d.connections.length) {
    throw new Invalid("Device must have at least one identifying value in 'identifiers' and/or 'connections'");
  }
  return d;
};

/** MQTT_ORIGIN_INFO_SCHEMA */
export const origin: V = (v) => mapping({ name: { v: string, required: true }, sw_version: string, support_url: configurationUrl }, 'prevent', v);

const availabilityEntry: V = (v) =>
  mapping(
    {
      topic: { v: subscribeTopic, required: true },
      payload_available: { v: string, default: 'online' },
      payload_not_available: { v: string, default: 'offline' },
      value_template: template,
    },
    'remove',
    v,
  );

const AVAILABILITY: Fields = {
  availability_topic: subscribeTopic,
  availability_template: template,
  payload_available: { v: string, default: 'online' },
  payload_not_available: { v: string, default: 'offline' },
  availability_mode: { v: oneOf('all', 'any', 'latest'), default: 'latest' },
  availability: (v) => {
    const list = listOf(availabilityEntry)(v) as Json[];
    if (list.length > 32) throw new Invalid('too many availability entries (at most 32)');
    return list;
  },
};

const COMMON: Fields = {
  ...AVAILABILITY,
  device,
  origin,
  entity_picture: url,
  enabled_by_default: { v: boolean, default: true },
  entity_category: entityCategory,
  icon,
  json_attributes_topic: subscribeTopic,
  json_attributes_template: template,
  default_entity_id: string,
  object_id: string,
  message_expiry_interval: positiveInt,
  unique_id: string,
  name: stringOrNone,
  encoding: { v: string, default: 'utf-8' },
  qos: { v: qos, default: 0 },
  retain: { v: boolean, default: false },
  optimistic: boolean,
};

const RO: Fields = { ...COMMON, state_topic: subscribeTopic, value_template: template };
const RW: Fields = { ...RO, command_topic: publishTopic, command_template: template };

const payload = (dflt?: string): Field => ({ v: string, ...(dflt !== undefined ? { default: dflt } : {}) });
const payloadOrNone = (dflt: string | null): Field => ({ v: stringOrNone, default: dflt });

// Device classes Home Assistant knows, per platform.
export const SENSOR_DEVICE_CLASSES = new Set([
  'absolute_humidity',
  'apparent_power',
  'aqi',
  'area',
  'atmospheric_pressure',
  'battery',
  'blood_glucose_concentration',
  'carbon_dioxide',
  'carbon_monoxide',
  'conductivity',
  'current',
  'data_rate',
  'data_size',
  'date',
  'distance',
  'duration',
  'energy',
  'energy_distance',
  'energy_storage',
  'enum',
  'frequency',
  'gas',
  'humidity',
  'illuminance',
  'irradiance',
  'moisture',
  'monetary',
  'nitrogen_dioxide',
  'nitrogen_monoxide',
  'nitrous_oxide',
  'ozone',
  'ph',
  'pm1',
  'pm10',
  'pm25',
  'pm4',
  'power',
  'power_factor',
  'precipitation',
  'precipitation_intensity',
  'pressure',
  'reactive_energy',
  'reactive_power',
  'signal_strength',
  'sound_pressure',
  'speed',
  'sulphur_dioxide',
  'temperature',
  'temperature_delta',
  'timestamp',
  'volatile_organic_compounds',
  'volatile_organic_compounds_parts',
  'voltage',
  'volume',
  'volume_flow_rate',
  'volume_storage',
  'water',
  'weight',
  'wind_direction',
  'wind_speed',
]);
const NUMBER_DEVICE_CLASSES = new Set([...SENSOR_DEVICE_CLASSES].filter((c) => !['date', 'enum', 'timestamp'].includes(c)));
export const BINARY_SENSOR_DEVICE_CLASSES = new Set([
  'battery',
  'battery_charging',
  'carbon_monoxide',
  'cold',
  'connectivity',
  'door',
  'garage_door',
  'gas',
  'heat',
  'light',
  'lock',
  'moisture',
  'motion',
  'moving',
  'occupancy',
  'opening',
  'plug',
  'power',
  'presence',
  'problem',
  'running',
  'safety',
  'smoke',
  'sound',
  'tamper',
  'update',
  'vibration',
  'window',
]);
const BUTTON_DEVICE_CLASSES = new Set(['identify', 'restart', 'update']);
export const COVER_DEVICE_CLASSES = new Set(['awning', 'blind', 'curtain', 'damper', 'door', 'garage', 'gate', 'shade', 'shutter', 'window']);
const SWITCH_DEVICE_CLASSES = new Set(['outlet', 'switch']);
const VALVE_DEVICE_CLASSES = new Set(['water', 'gas']);
const EVENT_DEVICE_CLASSES = new Set(['doorbell', 'button', 'motion']);
const UPDATE_DEVICE_CLASSES = new Set(['firmware']);
const HUMIDIFIER_DEVICE_CLASSES = new Set(['humidifier', 'dehumidifier']);

/** Units HA accepts with a sensor device class (a unit outside the set rejects the config). */
const POWER = ['mW', 'W', 'kW', 'MW', 'GW', 'TW', 'BTU/h'];
const ENERGY = ['J', 'kJ', 'MJ', 'GJ', 'mWh', 'Wh', 'kWh', 'MWh', 'GWh', 'TWh', 'cal', 'kcal', 'Mcal', 'Gcal'];
const PRESSURE = ['mPa', 'Pa', 'hPa', 'kPa', 'bar', 'cbar', 'mbar', 'mmHg', 'inHg', 'inH₂O', 'psi'];
const VOLUME = ['L', 'mL', 'gal', 'fl. oz.', 'm³', 'ft³', 'CCF', 'MCF'];
const SPEED = ['ft/s', 'in/d', 'in/h', 'in/s', 'km/h', 'kn', 'm/s', 'mph', 'mm/d', 'mm/h', 'mm/s', 'Beaufort'];
const DATA_SIZE = ['bit', 'kbit', 'Mbit', 'Gbit', 'B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB', 'ZiB', 'YiB'];
const DATA_RATE = ['bit/s', 'kbit/s', 'Mbit/s', 'Gbit/s', 'B/s', 'kB/s', 'MB/s', 'GB/s', 'KiB/s', 'MiB/s', 'GiB/s'];
const UG_M3 = ['µg/m³', 'μg/m³'];
export const DEVICE_CLASS_UNITS: Readonly<Record<string, ReadonlyArray<string | null>>> = {
  absolute_humidity: ['g/m³', 'mg/m³'],
  apparent_power: ['mVA', 'VA', 'kVA'],
  aqi: [null],
  area: ['m²', 'cm²', 'km²', 'mm²', 'in²', 'ft²', 'yd²', 'mi²', 'ac', 'ha'],
  atmospheric_pressure: PRESSURE,
  battery: ['%'],
  blood_glucose_concentration: ['mg/dL', 'mmol/L'],
  carbon_dioxide: ['ppm'],
  carbon_monoxide: ['ppm', 'ppb', 'mg/m³', ...UG_M3],
  conductivity: ['S/cm', 'mS/cm', 'µS/cm', 'μS/cm'],
  current: ['mA', 'A'],
  data_rate: DATA_RATE,
  data_size: DATA_SIZE,
  distance: ['km', 'm', 'cm', 'mm', 'mi', 'nmi', 'yd', 'in', 'ft'],
  duration: ['d', 'h', 'min', 's', 'ms', 'μs', 'µs'],
  energy: ENERGY,
  energy_distance: ['kWh/100km', 'Wh/km', 'mi/kWh', 'km/kWh'],
  energy_storage: ENERGY,
  frequency: ['Hz', 'kHz', 'MHz', 'GHz'],
  gas: ['L', 'm³', 'ft³', 'CCF', 'MCF'],
  humidity: ['%'],
  illuminance: ['lx'],
  irradiance: ['W/m²', 'BTU/(h⋅ft²)'],
  moisture: ['%'],
  nitrogen_dioxide: [...UG_M3, 'ppb'],
  nitrogen_monoxide: [...UG_M3, 'ppb'],
  nitrous_oxide: UG_M3,
  ozone: [...UG_M3, 'ppb'],
  ph: [null],
  pm1: UG_M3,
  pm10: UG_M3,
  pm25: UG_M3,
  pm4: UG_M3,
  power: POWER,
  power_factor: ['%', null],
  precipitation: ['cm', 'in', 'mm'],
  precipitation_intensity: ['in/d', 'in/h', 'mm/d', 'mm/h'],
  pressure: PRESSURE,
  reactive_energy: ['varh', 'kvarh'],
  reactive_power: ['mvar', 'var', 'kvar'],
  signal_strength: ['dB', 'dBm'],
  sound_pressure: ['dB', 'dBA'],
  speed: SPEED,
  sulphur_dioxide: [...UG_M3, 'ppb'],
  temperature: ['°C', '°F', 'K'],
  temperature_delta: ['°C', '°F', 'K'],
  volatile_organic_compounds: ['mg/m³', ...UG_M3],
  volatile_organic_compounds_parts: ['ppm', 'ppb'],
  voltage: ['µV', 'μV', 'mV', 'V', 'kV', 'MV'],
  volume: VOLUME,
  volume_flow_rate: ['m³/h', 'm³/min', 'm³/s', 'ft³/min', 'L/h', 'L/min', 'L/s', 'gal/h', 'gal/min', 'gal/d', 'mL/s'],
  volume_storage: VOLUME,
  water: ['L', 'gal', 'm³', 'ft³', 'CCF', 'MCF'],
  weight: ['kg', 'g', 'mg', 'µg', 'μg', 'oz', 'lb', 'st'],
  wind_direction: ['°'],
  wind_speed: ['ft/s', 'km/h', 'kn', 'm/s', 'mph', 'mm/s', 'Beaufort'],
};

const HVAC_MODES = ['auto', 'off', 'cool', 'heat', 'dry', 'fan_only', 'heat_cool'];
const COLOR_MODES = ['onoff', 'brightness', 'color_temp', 'hs', 'xy', 'rgb', 'rgbw', 'rgbww', 'white'];
const ALARM_FEATURES = ['arm_home', 'arm_away', 'arm_night', 'arm_vacation', 'arm_custom_bypass', 'trigger'];

type Check = (config: Json) => void;

function requireTogether(config: Json, a: string, b: string, message?: string): void {
  if (config[a] !== undefined && config[b] === undefined) throw new Invalid(message ?? `'${a}' must be set together with '${b}'.`);
}

interface PlatformSchema {
  fields: Fields;
  checks?: Check[];
}

const LIGHT_BASIC: PlatformSchema = {
  fields: {
    ...RW,
    command_topic: { v: publishTopic, required: true },
    state_value_template: template,
    payload_on: payload('ON'),
    payload_off: payload('OFF'),
    brightness_command_topic: publishTopic,
    brightness_command_template: template,
    brightness_scale: { v: range(int, 1), default: 255 },
    brightness_state_topic: subscribeTopic,
    brightness_value_template: template,
    color_mode_state_topic: subscribeTopic,
    color_mode_value_template: template,
    color_temp_command_topic: publishTopic,
    color_temp_command_template: template,
    color_temp_state_topic: subscribeTopic,
    color_temp_value_template: template,
    color_temp_kelvin: { v: boolean, default: false },
    effect_command_topic: publishTopic,
    effect_command_template: template,
    effect_list: listOf(string),
    effect_state_topic: subscribeTopic,
    effect_value_template: template,
    hs_command_topic: publishTopic,
    hs_command_template: template,
    hs_state_topic: subscribeTopic,
    hs_value_template: template,
    max_mireds: range(int, 1),
    min_mireds: range(int, 1),
    max_kelvin: range(int, 1),
    min_kelvin: range(int, 1),
    on_command_type: { v: oneOf('first', 'last', 'brightness'), default: 'last' },
    rgb_command_topic: publishTopic,
    rgb_command_template: template,
    rgb_state_topic: subscribeTopic,
    rgb_value_template: template,
    rgbw_command_topic: publishTopic,
    rgbw_command_template: template,
    rgbw_state_topic: subscribeTopic,
    rgbw_value_template: template,
    rgbww_command_topic: publishTopic,
    rgbww_command_template: template,
    rgbww_state_topic: subscribeTopic,
    rgbww_value_template: template,
    white_command_topic: publishTopic,
    white_scale: range(int, 1),
    xy_command_topic: publishTopic,
    xy_command_template: template,
    xy_state_topic: subscribeTopic,
    xy_value_template: template,
    schema: string,
  },
};

const supportedColorModes: V = (v) => {
  const modes = listOf(oneOf(...COLOR_MODES))(v) as string[];
  if (modes.length > 1 && (modes.includes('onoff') || modes.includes('brightness'))) {
    throw new Invalid('Invalid supported_color_modes: onoff and brightness cannot be combined with other modes');
  }
  return [...new Set(modes)];
};

const LIGHT_JSON: PlatformSchema = {
  fields: {
    ...RW,
    command_topic: { v: publishTopic, required: true },
    brightness: { v: boolean, default: false },
    brightness_scale: { v: range(int, 1), default: 255 },
    supported_color_modes: supportedColorModes,
    color_temp_kelvin: { v: boolean, default: false },
    effect: { v: boolean, default: false },
    effect_list: listOf(string),
    flash: boolean,
    flash_time_long: positiveInt,
    flash_time_short: positiveInt,
    max_mireds: range(int, 1),
    min_mireds: range(int, 1),
    max_kelvin: range(int, 1),
    min_kelvin: range(int, 1),
    transition: boolean,
    white_scale: range(int, 1),
    schema: string,
  },
};

const LIGHT_TEMPLATE: PlatformSchema = {
  fields: {
    ...RW,
    command_topic: { v: publishTopic, required: true },
    command_on_template: { v: template, required: true },
    command_off_template: { v: template, required: true },
    state_template: template,
    brightness_template: template,
    color_temp_template: template,
    color_temp_kelvin: { v: boolean, default: false },
    blue_template: template,
    green_template: template,
    red_template: template,
    effect_list: listOf(string),
    effect_template: template,
    max_mireds: range(int, 1),
    min_mireds: range(int, 1),
    max_kelvin: range(int, 1),
    min_kelvin: range(int, 1),
    schema: string,
  },
};

export const SCHEMAS: Record<string, PlatformSchema> = {
  alarm_control_panel: {
    fields: {
      ...RW,
      state_topic: { v: subscribeTopic, required: true },
      command_topic: { v: publishTopic, required: true },
      command_template: { v: template, default: '{{action}}' },
      code: string,
      code_arm_required: { v: boolean, default: true },
      code_disarm_required: { v: boolean, default: true },
      code_trigger_required: { v: boolean, default: true },
      payload_arm_away: payload('ARM_AWAY'),
      payload_arm_home: payload('ARM_HOME'),
      payload_arm_night: payload('ARM_NIGHT'),
      payload_arm_vacation: payload('ARM_VACATION'),
      payload_arm_custom_bypass: payload('ARM_CUSTOM_BYPASS'),
      payload_disarm: payload('DISARM'),
      payload_trigger: payload('TRIGGER'),
      supported_features: { v: listOf(oneOf(...ALARM_FEATURES)), default: () => [...ALARM_FEATURES] },
    },
  },
  binary_sensor: {
    fields: {
      ...RO,
      state_topic: { v: subscribeTopic, required: true },
      payload_on: payload('ON'),
      payload_off: payload('OFF'),
      device_class: deviceClass(BINARY_SENSOR_DEVICE_CLASSES),
      expire_after: positiveInt,
      force_update: boolean,
      off_delay: positiveInt,
    },
  },
  button: {
    fields: {
      ...COMMON,
      command_topic: { v: publishTopic, required: true },
      command_template: template,
      payload_press: payload('PRESS'),
      device_class: deviceClass(BUTTON_DEVICE_CLASSES),
    },
  },
  camera: {
    fields: { ...COMMON, topic: { v: subscribeTopic, required: true }, image_encoding: oneOf('b64') },
  },
  climate: {
    fields: {
      ...COMMON,
      action_template: template,
      action_topic: subscribeTopic,
      current_humidity_template: template,
      current_humidity_topic: subscribeTopic,
      current_temperature_template: template,
      current_temperature_topic: subscribeTopic,
      fan_mode_command_template: template,
      fan_mode_command_topic: publishTopic,
      fan_mode_state_template: template,
      fan_mode_state_topic: subscribeTopic,
      fan_modes: listOf(string),
      initial: float,
      max_humidity: float,
      max_temp: float,
      min_humidity: float,
      min_temp: float,
      mode_command_template: template,
      mode_command_topic: publishTopic,
      mode_state_template: template,
      mode_state_topic: subscribeTopic,
      modes: { v: listOf(oneOf(...HVAC_MODES)), default: () => ['auto', 'off', 'cool', 'heat', 'dry', 'fan_only'] },
      payload_on: payload('ON'),
      payload_off: payload('OFF'),
      power_command_template: template,
      power_command_topic: publishTopic,
      precision: (v) => {
        const n = float(v) as number;
        if (![0.1, 0.5, 1].includes(n)) throw new Invalid('value must be one of [0.1, 0.5, 1.0]');
        return n;
      },
      preset_mode_command_template: template,
      preset_mode_command_topic: publishTopic,
      preset_mode_state_topic: subscribeTopic,
      preset_mode_value_template: template,
      preset_modes: listOf(string),
      swing_mode_command_template: template,
      swing_mode_command_topic: publishTopic,
      swing_mode_state_template: template,
      swing_mode_state_topic: subscribeTopic,
      swing_modes: listOf(string),
      target_humidity_command_template: template,
      target_humidity_command_topic: publishTopic,
      target_humidity_state_template: template,
      target_humidity_state_topic: subscribeTopic,
      temperature_command_template: template,
      temperature_command_topic: publishTopic,
      temperature_high_command_template: template,
      temperature_high_command_topic: publishTopic,
      temperature_high_state_template: template,
      temperature_high_state_topic: subscribeTopic,
      temperature_low_command_template: template,
      temperature_low_command_topic: publishTopic,
      temperature_low_state_template: template,
      temperature_low_state_topic: subscribeTopic,
      temperature_state_template: template,
      temperature_state_topic: subscribeTopic,
      temperature_unit: (v) => {
        const s = (string(v) as string).toUpperCase();
        if (s === 'C' || s === '°C') return 'C';
        if (s === 'F' || s === '°F') return 'F';
        throw new Invalid('invalid temperature unit (expected C or F)');
      },
      temp_step: float,
      value_template: template,
    },
    checks: [
      (c) => {
        if (Array.isArray(c.preset_modes) && c.preset_modes.includes('none')) throw new Invalid("preset_modes must not include preset mode 'none'");
        if (typeof c.min_temp === 'number' && typeof c.max_temp === 'number' && c.min_temp > c.max_temp) throw new Invalid('max_temp must be >= min_temp');
      },
    ],
  },
  cover: {
    fields: {
      ...RW,
      payload_open: payloadOrNone('OPEN'),
      payload_close: payloadOrNone('CLOSE'),
      payload_stop: payloadOrNone('STOP'),
      payload_stop_tilt: payload('stop'),
      state_open: payload('open'),
      state_opening: payload('opening'),
      state_closed: payload('closed'),
      state_closing: payload('closing'),
      state_stopped: payload('stopped'),
      position_topic: subscribeTopic,
      position_template: template,
      set_position_topic: publishTopic,
      set_position_template: template,
      position_open: { v: int, default: 100 },
      position_closed: { v: int, default: 0 },
      device_class: deviceClass(COVER_DEVICE_CLASSES),
      tilt_command_topic: publishTopic,
      tilt_command_template: template,
      tilt_status_topic: subscribeTopic,
      tilt_status_template: template,
      tilt_closed_value: int,
      tilt_opened_value: int,
      tilt_min: int,
      tilt_max: int,
      tilt_optimistic: boolean,
    },
    checks: [
      (c) => {
        requireTogether(c, 'set_position_topic', 'position_topic');
        requireTogether(c, 'value_template', 'state_topic');
        requireTogether(c, 'position_template', 'position_topic');
        requireTogether(c, 'set_position_template', 'set_position_topic');
        requireTogether(c, 'tilt_command_template', 'tilt_command_topic');
        requireTogether(c, 'tilt_status_template', 'tilt_status_topic');
      },
    ],
  },
  device_automation: {
    fields: {
      automation_type: { v: oneOf('trigger'), required: true },
      device: { v: device, required: true },
      origin,
      payload: string,
      qos: { v: qos, default: 0 },
      encoding: { v: string, default: 'utf-8' },
      topic: { v: subscribeTopic, required: true },
      type: { v: string, required: true },
      subtype: { v: string, required: true },
      value_template: template,
    },
  },
  device_tracker: {
    fields: { ...RO, payload_home: payload('home'), payload_not_home: payload('not_home'), payload_reset: payload('None'), source_type: string },
  },
  event: {
    fields: {
      ...RO,
      state_topic: { v: subscribeTopic, required: true },
      event_types: { v: listOf(string, { min: 1 }), required: true },
      device_class: deviceClass(EVENT_DEVICE_CLASSES),
    },
  },
  fan: {
    fields: {
      ...RW,
      command_topic: { v: publishTopic, required: true },
      state_value_template: template,
      payload_on: payload('ON'),
      payload_off: payload('OFF'),
      percentage_command_topic: publishTopic,
      percentage_command_template: template,
      percentage_state_topic: subscribeTopic,
      percentage_value_template: template,
      preset_mode_command_topic: publishTopic,
      preset_mode_command_template: template,
      preset_mode_state_topic: subscribeTopic,
      preset_mode_value_template: template,
      preset_modes: { v: listOf(string), default: () => [] },
      speed_range_min: { v: range(int, 1), default: 1 },
      speed_range_max: { v: range(int, 1), default: 100 },
      payload_reset_percentage: payload('None'),
      payload_reset_preset_mode: payload('None'),
      oscillation_command_topic: publishTopic,
      oscillation_command_template: template,
      oscillation_state_topic: subscribeTopic,
      oscillation_value_template: template,
      payload_oscillation_on: payload('oscillate_on'),
      payload_oscillation_off: payload('oscillate_off'),
      direction_command_topic: publishTopic,
      direction_command_template: template,
      direction_state_topic: subscribeTopic,
      direction_value_template: template,
    },
    checks: [
      (c) => {
        if ((c.speed_range_max as number) <= (c.speed_range_min as number)) throw new Invalid('speed_range_max must be > speed_range_min');
      },
    ],
  },
  humidifier: {
    fields: {
      ...RW,
      command_topic: { v: publishTopic, required: true },
      target_humidity_command_topic: { v: publishTopic, required: true },
      target_humidity_command_template: template,
      target_humidity_state_topic: subscribeTopic,
      target_humidity_state_template: template,
      device_class: deviceClass(HUMIDIFIER_DEVICE_CLASSES),
      payload_on: payload('ON'),
      payload_off: payload('OFF'),
      max_humidity: float,
      min_humidity: float,
      modes: listOf(string),
      mode_command_topic: publishTopic,
      mode_command_template: template,
      mode_state_topic: subscribeTopic,
      mode_state_template: template,
      state_value_template: template,
      current_humidity_topic: subscribeTopic,
      current_humidity_template: template,
      action_topic: subscribeTopic,
      action_template: template,
    },
  },
  image: {
    fields: {
      ...COMMON,
      image_topic: subscribeTopic,
      url_topic: subscribeTopic,
      url_template: template,
      content_type: { v: string, default: 'image/jpeg' },
      image_encoding: oneOf('b64'),
    },
    checks: [
      (c) => {
        if (c.image_topic !== undefined && c.url_topic !== undefined) throw new Invalid("two or more values in the same group of exclusion 'image_topic'");
        if (c.image_topic === undefined && c.url_topic === undefined) throw new Invalid('Expected one of [`image_topic`, `url_topic`], got none');
      },
    ],
  },
  lawn_mower: {
    fields: {
      ...COMMON,
      activity_state_topic: subscribeTopic,
      activity_value_template: template,
      start_mowing_command_topic: publishTopic,
      start_mowing_command_template: template,
      pause_command_topic: publishTopic,
      pause_command_template: template,
      dock_command_topic: publishTopic,
      dock_command_template: template,
    },
  },
  lock: {
    fields: {
      ...RW,
      command_topic: { v: publishTopic, required: true },
      code_format: string,
      payload_lock: payload('LOCK'),
      payload_unlock: payload('UNLOCK'),
      payload_open: string,
      payload_reset: payload('None'),
      state_jammed: payload('JAMMED'),
      state_locked: payload('LOCKED'),
      state_locking: payload('LOCKING'),
      state_unlocked: payload('UNLOCKED'),
      state_unlocking: payload('UNLOCKING'),
      state_open: payload('OPEN'),
      state_opening: payload('OPENING'),
    },
  },
  notify: { fields: { ...COMMON, command_topic: { v: publishTopic, required: true }, command_template: template } },
  number: {
    fields: {
      ...RW,
      command_topic: { v: publishTopic, required: true },
      min: { v: float, default: 1 },
      max: { v: float, default: 100 },
      step: { v: range(float, 1e-3), default: 1 },
      mode: { v: oneOf('auto', 'box', 'slider'), default: 'auto' },
      unit_of_measurement: string,
      device_class: deviceClass(NUMBER_DEVICE_CLASSES),
      payload_reset: payload('None'),
    },
    checks: [
      (c) => {
        if ((c.max as number) <= (c.min as number)) throw new Invalid(`'max' must be > 'min'`);
      },
    ],
  },
  scene: {
    fields: { ...COMMON, command_topic: { v: publishTopic, required: true }, payload_on: payload('ON') },
  },
  select: {
    fields: { ...RW, command_topic: { v: publishTopic, required: true }, options: { v: listOf(string), required: true } },
  },
  sensor: {
    fields: {
      ...RO,
      state_topic: { v: subscribeTopic, required: true },
      device_class: deviceClass(SENSOR_DEVICE_CLASSES),
      state_class: oneOf('measurement', 'measurement_angle', 'total', 'total_increasing'),
      unit_of_measurement: (v) => {
        const s = string(v) as string;
        return s === '' ? null : s;
      },
      expire_after: positiveInt,
      force_update: boolean,
      last_reset_value_template: template,
      suggested_display_precision: positiveInt,
      options: listOf(string),
    },
    checks: [
      (c) => {
        const dc = c.device_class as string | null | undefined;
        const unit = c.unit_of_measurement as string | null | undefined;
        if (c.last_reset_value_template !== undefined && c.state_class !== 'total') {
          throw new Invalid('The option `last_reset_value_template` cannot be used together with state class other than `total`');
        }
        if (c.options !== undefined && dc !== 'enum' && dc !== undefined && dc !== null) {
          throw new Invalid('Options are only allowed with device class `enum`');
        }
        if (dc === 'enum' && (c.state_class !== undefined || unit)) {
          throw new Invalid('The `enum` device class cannot have a state class or a unit of measurement');
        }
        if (!dc || !(dc in DEVICE_CLASS_UNITS) || unit === undefined) return;
        if (!DEVICE_CLASS_UNITS[dc].includes(unit)) {
          throw new Invalid(`The unit of measurement \`${unit}\` is not valid together with device class \`${dc}\``);
        }
      },
    ],
  },
  siren: {
    fields: {
      ...RW,
      command_topic: { v: publishTopic, required: true },
      command_off_template: template,
      available_tones: listOf(string),
      payload_on: payload('ON'),
      payload_off: payload('OFF'),
      state_on: string,
      state_off: string,
      state_value_template: template,
      support_duration: { v: boolean, default: true },
      support_volume_set: { v: boolean, default: true },
    },
  },
  switch: {
    fields: {
      ...RW,
      command_topic: { v: publishTopic, required: true },
      payload_on: payload('ON'),
      payload_off: payload('OFF'),
      state_on: string,
      state_off: string,
      device_class: deviceClass(SWITCH_DEVICE_CLASSES),
    },
  },
  tag: {
    fields: {
      device,
      origin,
      topic: { v: subscribeTopic, required: true },
      value_template: template,
      qos: { v: qos, default: 0 },
      encoding: { v: string, default: 'utf-8' },
    },
  },
  text: {
    fields: {
      ...RW,
      command_topic: { v: publishTopic, required: true },
      mode: { v: oneOf('text', 'password'), default: 'text' },
      min: { v: range(int, 0, 255), default: 0 },
      max: { v: range(int, 0, 255), default: 255 },
      pattern: string,
    },
    checks: [
      (c) => {
        if ((c.max as number) < (c.min as number)) throw new Invalid('text length min must be <= max');
      },
    ],
  },
  update: {
    fields: {
      ...RW,
      latest_version_topic: subscribeTopic,
      latest_version_template: template,
      payload_install: string,
      release_summary: string,
      release_url: url,
      title: string,
      display_precision: positiveInt,
      device_class: deviceClass(UPDATE_DEVICE_CLASSES),
    },
  },
  vacuum: {
    fields: {
      ...COMMON,
      command_topic: publishTopic,
      state_topic: subscribeTopic,
      send_command_topic: publishTopic,
      set_fan_speed_topic: publishTopic,
      fan_speed_list: listOf(string),
      // HA's default: start, stop, return_home, status, clean_spot (pause, locate and fan_speed must be asked for).
      supported_features: { v: listOf(string), default: () => ['start', 'stop', 'return_home', 'status', 'clean_spot'] },
      payload_start: payload('start'),
      payload_pause: payload('pause'),
      payload_stop: payload('stop'),
      payload_return_to_base: payload('return_to_base'),
      payload_clean_spot: payload('clean_spot'),
      payload_locate: payload('locate'),
    },
  },
  valve: {
    fields: {
      ...RW,
      payload_open: stringOrNone,
      payload_close: stringOrNone,
      payload_stop: stringOrNone,
      state_open: payload('open'),
      state_opening: payload('opening'),
      state_closed: payload('closed'),
      state_closing: payload('closing'),
      reports_position: { v: boolean, default: false },
      position_open: { v: int, default: 100 },
      position_closed: { v: int, default: 0 },
      device_class: deviceClass(VALVE_DEVICE_CLASSES),
    },
    checks: [
      (c) => {
        if (c.reports_position) {
          if (c.payload_open !== undefined || c.payload_close !== undefined) {
            throw new Invalid('Options `payload_open` and `payload_close` are not allowed if the valve reports a position.');
          }
        } else {
          if (c.payload_open === undefined) c.payload_open = 'OPEN';
          if (c.payload_close === undefined) c.payload_close = 'CLOSE';
        }
      },
    ],
  },
  water_heater: {
    fields: {
      ...COMMON,
      value_template: template,
      mode_command_topic: publishTopic,
      mode_command_template: template,
      mode_state_topic: subscribeTopic,
      mode_state_template: template,
      modes: { v: listOf(string), default: () => ['off', 'eco', 'electric', 'gas', 'heat_pump', 'high_demand', 'performance'] },
      temperature_command_topic: publishTopic,
      temperature_command_template: template,
      temperature_state_topic: subscribeTopic,
      temperature_state_template: template,
      current_temperature_topic: subscribeTopic,
      current_temperature_template: template,
      power_command_topic: publishTopic,
      power_command_template: template,
      payload_on: payload('ON'),
      payload_off: payload('OFF'),
      min_temp: float,
      max_temp: float,
      precision: float,
      initial: float,
      temperature_unit: oneOf('C', 'F'),
    },
  },
};

/** The options availability checks share (HA: Exclusive(availability_topic, availability)). */
const availabilityCheck: Check = (c) => {
  if (c.availability_topic !== undefined && c.availability !== undefined) {
    throw new Invalid("two or more values in the same group of exclusion 'availability'");
  }
};

export type Validated = Json & { readonly __validated?: true };

/** Validate one component config for its platform: the coerced config, or Invalid. */
export function validateComponent(platform: string, config: Json): Validated {
  let schema = SCHEMAS[platform];
  if (platform === 'light') {
    const raw = config.schema === undefined ? 'basic' : config.schema;
    const name = typeof raw === 'string' ? raw : String(raw);
    if (name === 'basic' || name === 'default') schema = LIGHT_BASIC;
    else if (name === 'json') schema = LIGHT_JSON;
    else if (name === 'template') schema = LIGHT_TEMPLATE;
    else throw new Invalid(`value must be one of ['basic', 'json', 'template']`, ['schema']);
  }
  if (!schema) throw new Invalid(`'${platform}' is not an MQTT platform`);
  const out = mapping(schema.fields, 'remove', config);
  if (platform === 'light') out.schema = config.schema === 'json' || config.schema === 'template' ? config.schema : 'basic';
  availabilityCheck(out);
  for (const check of schema.checks ?? []) check(out);
  return out;
}

export interface DevicePayload {
  device: DeviceBlock;
  origin: Json;
  components: Record<string, Json>;
  shared: Json;
}

/** Options of a device payload that components inherit unless they set their own. */
export const SHARED_OPTIONS = [
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'command_topic',
  'encoding',
  'message_expiry_interval',
  'payload_available',
  'payload_not_available',
  'state_topic',
  'qos',
];

/** DEVICE_DISCOVERY_SCHEMA (after abbreviation expansion). */
export function validateDevicePayload(payload: Json): DevicePayload {
  const fields: Fields = {
    availability_topic: subscribeTopic,
    availability_template: template,
    payload_available: string,
    payload_not_available: string,
    availability_mode: oneOf('all', 'any', 'latest'),
    availability: AVAILABILITY.availability,
    device: { v: device, required: true },
    origin: { v: origin, required: true },
    components: {
      required: true,
      v: (v) => {
        if (!isObject(v)) throw new Invalid('expected a dictionary');
        const out: Record<string, Json> = {};
        const ids = Object.keys(v);
        if (ids.length > 500) throw new Invalid(`too many components (${ids.length}, at most 500)`);
        for (const id of ids) {
          const comp = v[id];
          try {
            if (!isObject(comp)) throw new Invalid('expected a dictionary');
            if (comp.platform === undefined) throw new Invalid('required key not provided', ['platform']);
            const platform = string(comp.platform) as string;
            if (!SUPPORTED_COMPONENTS.has(platform)) throw new Invalid(`value must be one of the supported components (got '${platform}')`, ['platform']);
            if (!NON_ENTITY_PLATFORMS.has(platform) && Object.keys(comp).length > 1) {
              if (comp.unique_id === undefined) throw new Invalid('required key not provided', ['unique_id']);
              string(comp.unique_id);
            }
            out[id] = { ...comp, platform };
          } catch (err) {
            if (err instanceof Invalid) throw new Invalid(err.message, [id, ...err.path]);
            throw err;
          }
        }
        return out;
      },
    },
    state_topic: subscribeTopic,
    command_topic: publishTopic,
    message_expiry_interval: positiveInt,
    qos,
    encoding: string,
  };
  const validated = mapping(fields, 'prevent', payload);
  availabilityCheck(validated);
  const shared: Json = {};
  for (const key of SHARED_OPTIONS) if (validated[key] !== undefined) shared[key] = payload[key];
  return {
    device: validated.device as DeviceBlock,
    origin: validated.origin as Json,
    components: validated.components as Record<string, Json>,
    shared,
  };
}

/** The migrate flag: `migrate_discovery` must be literally true (HA's MIGRATE_DISCOVERY_SCHEMA). */
export function migrateFlag(payload: Json): 'migrate' | 'invalid' | 'none' {
  if (payload.migr_discvry !== undefined) {
    const v = payload.migr_discvry;
    delete payload.migr_discvry;
    // HA only moves a truthy abbreviated flag over.
    if (v !== false && v !== 0 && v !== '' && v !== null) payload.migrate_discovery = v;
  }
  if (!('migrate_discovery' in payload)) return 'none';
  // vol.Schema({Optional("migrate_discovery"): True}): the flag alone, and true.
  const alone = Object.keys(payload).length === 1;
  return alone && (payload.migrate_discovery === true || payload.migrate_discovery === 1) ? 'migrate' : 'invalid';
}
