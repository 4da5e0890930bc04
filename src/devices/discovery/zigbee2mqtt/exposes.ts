// One Zigbee2MQTT device's `definition.exposes` as Hearth entities.
//
// Specific exposes (light, switch, cover, lock, climate, fan) become one
// entity of that kind; their other features, and every generic expose, map by
// type and access bits (1 published, 2 settable, 4 gettable):
//   binary   settable with word payloads -> switch   otherwise -> binary_sensor
//   numeric  settable with a range -> number          read-only -> sensor
//   enum     settable -> select (write-only with one value: button)   read-only -> sensor
//   text     read-only -> sensor (setting text has no tool)
//   composite, list -> skipped with the reason
// State is read from <base> (JSON, the property as path), commands go to
// <base>/set as JSON with the property as key: `{"state_l1":"ON"}`. Endpoint
// features (`state_l1`) are entities of their own. Anything left out gets a Skip.
import { joined } from '../../../util/interner.js';
import { DEFAULT_STATES } from '../../defaults.js';
import { readJsonPath } from '../../json-path.js';
import type { ColorMode } from '../../color.js';
import { type ColorTempSupport, kelvinRangeOfMireds } from '../../color-temp.js';
import { type Availability, type Entity, type EntityKind, endsWithPart, type PayloadTransform, type Range } from '../../model.js';
import { readsAs } from '../../reading.js';
import { practicalCategory } from './categories.js';
import { entityProblem } from './entity-check.js';
import { cleanName, jsonKeyPath, KeyAllocator, keyOf, labelOf } from './naming.js';
import type { Skip } from './skips.js';
import { ACCESS, type Z2mExpose } from './types.js';

export interface ExposeContext {
  deviceId: string;
  /** The device's friendly name, cleaned: the start of every entity name. */
  deviceName: string;
  /** `<prefix>/<friendly_name>`: state topic; `/set` and `/get` hang below it. */
  baseTopic: string;
  availability?: Availability;
}

export interface ExposeResult {
  entities: Entity[];
  skipped: Skip[];
  /** Gettable properties that carry an actuator's state: worth a `/get` while the state is unknown. */
  refresh: string[];
}

/** How long a command to a property the device never reports may wait (no echo can come). */
const WRITE_ONLY_TIMEOUT_MS = 1500;

/** The source's own category, else what an expose of that name is in practice (categories.ts). */
function categoryOf(f: Z2mExpose): Pick<Entity, 'category'> {
  if (f.category === 'config' || f.category === 'diagnostic') return { category: f.category };
  const practical = practicalCategory(f.name);
  return practical ? { category: practical } : {};
}
/** Climate setpoints without a step in the expose move in half degrees. */
const DEFAULT_SETPOINT_STEP = 0.5;

const SENSOR_CLASS: Record<string, string> = {
  temperature: 'temperature',
  local_temperature: 'temperature',
  device_temperature: 'temperature',
  humidity: 'humidity',
  pressure: 'pressure',
  illuminance: 'illuminance',
  illuminance_lux: 'illuminance',
  co2: 'carbon_dioxide',
  voc: 'volatile_organic_compounds',
  pm25: 'pm25',
  pm10: 'pm10',
  battery: 'battery',
  voltage: 'voltage',
  current: 'current',
  power: 'power',
  energy: 'energy',
  soil_moisture: 'moisture',
};

/** Device classes by expose name; `on` is the expose's value_on (for contact that is `false`: open). */
const BINARY_CLASS: Record<string, string> = {
  contact: 'opening',
  occupancy: 'occupancy',
  presence: 'presence',
  water_leak: 'moisture',
  smoke: 'smoke',
  gas: 'gas',
  carbon_monoxide: 'carbon_monoxide',
  vibration: 'vibration',
  tamper: 'tamper',
  battery_low: 'battery',
};

const SPECIFIC = new Set(['light', 'switch', 'cover', 'lock', 'climate', 'fan']);

const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const readable = (f: Z2mExpose) => ((f.access ?? ACCESS.STATE) & ACCESS.STATE) !== 0;
const settable = (f: Z2mExpose) => ((f.access ?? 0) & ACCESS.SET) !== 0;
const gettable = (f: Z2mExpose) => ((f.access ?? 0) & ACCESS.GET) !== 0;
const finite = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);

/** Where an expose's value stands in the device's JSON, when its property names a usable key. */
const pathOf = (f: Z2mExpose | undefined): string | undefined => (f?.property ? jsonKeyPath(f.property) : undefined);

/** Finds a feature of a specific expose by the first of its names the expose has and no entity took yet. */
type Find = (...names: string[]) => Z2mExpose | undefined;

/** An on/off state feature and its words: the value of a switch, light, fan or lock. */
interface OnOffState {
  feature: Z2mExpose;
  on: string;
  off: string;
  path: string;
}

/** A numeric expose's range, when it declares a usable one. */
function rangeOf(f: Z2mExpose, defaultStep?: number): Range | undefined {
  if (!finite(f.value_min) || !finite(f.value_max) || f.value_min >= f.value_max) return undefined;
  const step = finite(f.value_step) && f.value_step > 0 ? f.value_step : defaultStep;
  return { min: f.value_min, max: f.value_max, ...(step !== undefined ? { step } : {}) };
}

/**
 * Reads a binary whose values are not words (true/false, 1/0) as ON/OFF, honouring which one
 * is `value_on`: a contact sensor's `false` (open) is on.
 */
function onOffWords(path: string, on: unknown, off: unknown): PayloadTransform {
  const transform: PayloadTransform = (message) => {
    const v = readJsonPath(message.json(), path);
    return v === undefined || v === null ? v : v === on ? 'ON' : v === off ? 'OFF' : String(v);
  };
  // The same path and values read alike: a list re-published with them reads nothing again (reading.ts).
  return readsAs(transform, `on/off ${JSON.stringify([path, on, off])}`);
}

/** A value a JSON command can carry as it is: a boolean or a finite number. */
function literal(v: unknown): v is boolean | number {
  return typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

/** Distinct, non-empty text values of an enum; undefined when any value is not text. */
function enumValues(f: Z2mExpose): string[] | undefined {
  const values = f.values ?? [];
  if (values.some((v) => typeof v !== 'string')) return undefined;
  return [...new Set((values as string[]).filter((v) => v.length > 0))];
}

class Builder {
  readonly entities: Entity[] = [];
  readonly skipped: Skip[] = [];
  readonly refresh = new Set<string>();
  private readonly keys = new KeyAllocator();
  private readonly properties = new Set<string>();
  /** How many light/switch/cover/lock/climate/fan exposes the device has. */
  specificCount = 0;

  constructor(private readonly ctx: ExposeContext) {}

  skip(f: Z2mExpose, reason: string, detail: string, partial = false): void {
    this.skipped.push({ what: f.property ?? f.name ?? f.type, reason, detail, ...(partial ? { partial } : {}) });
  }

  /** The property as a JSON path; a problem is recorded when it cannot be one. */
  path(f: Z2mExpose): string | undefined {
    if (!f.property) {
      this.skip(f, 'bad_property', `the ${f.type} expose "${f.name ?? '?'}" has no property`);
      return undefined;
    }
    const path = jsonKeyPath(f.property);
    if (!path) this.skip(f, 'bad_property', `property ${JSON.stringify(f.property)} cannot be addressed in a JSON payload`);
    return path;
  }

  /** Claim a property for one entity: a second expose of the same property is a duplicate. */
  claim(f: Z2mExpose): boolean {
    if (!f.property) return true;
    if (this.properties.has(f.property)) {
      this.skip(f, 'duplicate', `property ${f.property} is exposed twice; the first one was used`);
      return false;
    }
    this.properties.add(f.property);
    return true;
  }

  featureName(f: Z2mExpose): string {
    const label = labelOf(f.label, f.name ?? f.property);
    const endpoint = f.endpoint && !label.toLowerCase().includes(f.endpoint.toLowerCase()) ? ` ${f.endpoint}` : '';
    return cleanName(`${this.ctx.deviceName} ${label}${endpoint}`);
  }

  /**
   * A device with one light (switch, ...) and no endpoint: the entity takes the device's name.
   * Several: `<device> <endpoint>` or `<device> <kind>` ("Ceiling fan Light").
   */
  primaryName(expose: Z2mExpose): string {
    if (this.specificCount === 1 && !expose.endpoint) return this.ctx.deviceName;
    const label = expose.endpoint ?? labelOf(expose.label, expose.type);
    return cleanName(`${this.ctx.deviceName} ${label}`);
  }

  /** Add an entity after checking it; a failed check is a skip, never a bad tool. */
  add(f: Z2mExpose, kind: EntityKind, wantedKey: string, name: string, fields: Partial<Entity>): Entity | undefined {
    const key = this.keys.take(keyOf(wantedKey) ?? 'entity');
    const base = this.ctx.baseTopic;
    const entity: Entity = {
      id: joined(this.ctx.deviceId, '.', key),
      key,
      kind,
      name: name || this.ctx.deviceName,
      aliases: [],
      deviceId: this.ctx.deviceId,
      attributes: {},
      commandFormat: 'json',
      commandTopics: {},
      payloads: {},
      states: { ...DEFAULT_STATES[kind] },
      ranges: {},
      options: {},
      availability: this.ctx.availability,
      // A setting or a diagnostic reading of the device: not shown to agents unless a person exposes it. The
      // source's own category first, else what that expose is in practice (categories.ts).
      ...categoryOf(f),
      ...fields,
    };
    if (fields.states) entity.states = { ...DEFAULT_STATES[kind], ...fields.states };
    if (fields.stateTopic === undefined && entity.kind !== 'sensor' && entity.kind !== 'binary_sensor') {
      // Nothing will ever report this one: say so quickly rather than after the kind's usual wait.
      entity.confirmTimeoutMs ??= WRITE_ONLY_TIMEOUT_MS;
    }
    if (base && entity.commandFormat === 'json' && kind !== 'sensor' && kind !== 'binary_sensor') entity.commandTopic ??= `${base}/set`;
    const problem = entityProblem(entity);
    if (problem) {
      this.skip(f, 'invalid', `would not make a valid ${kind}: ${problem}`);
      return undefined;
    }
    this.entities.push(entity);
    return entity;
  }

  // ------------------------------------------------------------ generic features

  feature(f: Z2mExpose): void {
    switch (f.type) {
      case 'binary':
        return this.binary(f);
      case 'numeric':
        return this.numeric(f);
      case 'enum':
        return this.enumeration(f);
      case 'text':
        return this.text(f);
      case 'composite':
        if (f.property === 'warning') return this.warning(f);
        return this.skip(f, 'composite', `composite ${f.property ?? f.name ?? ''} sets several fields together; no single-value tool fits it`);
      case 'list':
        return this.skip(f, 'list', `list ${f.property ?? f.name ?? ''} holds a list of values; no single-value tool fits it`);
      default:
        if (SPECIFIC.has(f.type)) return this.specific(f);
        return this.skip(f, 'unknown_type', `expose type ${JSON.stringify(f.type)} is not known`);
    }
  }

  private noAccess(f: Z2mExpose): boolean {
    if (readable(f) || settable(f)) return false;
    this.skip(f, 'no_access', `${f.property ?? f.name} is neither published nor settable (access ${f.access ?? 'missing'})`);
    return true;
  }

  private readTopic(f: Z2mExpose): string | undefined {
    return readable(f) ? this.ctx.baseTopic : undefined;
  }

  binary(f: Z2mExpose): void {
    if (this.noAccess(f) || !this.claim(f)) return;
    const path = this.path(f);
    if (!path) return;
    const textual = isText(f.value_on) && isText(f.value_off) && f.value_on !== f.value_off;
    // A settable `alarm` (Tuya's sirens, TS0216 and the TS0601 ones) sounds the device: a siren, held to the rules
    // for sirens (a person approves sounding one), not a switch anyone allowed to switch things may flip.
    const kind = f.name === 'alarm' || f.property === 'alarm' ? 'siren' : 'switch';
    if (settable(f) && textual) {
      const on = f.value_on as string;
      const off = f.value_off as string;
      this.add(f, kind, f.property!, this.featureName(f), {
        stateTopic: this.readTopic(f),
        valuePath: path,
        payloads: { on, off },
        states: { on, off },
      });
      if (gettable(f)) this.refresh.add(f.property!);
      return;
    }
    if (settable(f) && literal(f.value_on) && literal(f.value_off) && f.value_on !== f.value_off) {
      // true/false (or 1/0): commands carry them as JSON literals; the state reads back as ON/OFF.
      this.add(f, kind, f.property!, this.featureName(f), {
        stateTopic: this.readTopic(f),
        valuePath: path,
        transform: onOffWords(path, f.value_on, f.value_off),
        payloads: { on: JSON.stringify(f.value_on), off: JSON.stringify(f.value_off) },
        payloadLiterals: true,
        states: { on: 'ON', off: 'OFF' },
      });
      if (gettable(f)) this.refresh.add(f.property!);
      return;
    }
    if (settable(f)) {
      const why = `${f.property} takes ${JSON.stringify(f.value_on)}/${JSON.stringify(f.value_off)}, which are not two distinct words or literals`;
      if (!readable(f)) return this.skip(f, 'odd_payload', `${why}; it is not published either`);
      this.skip(f, 'odd_payload', `${why}; only its state is offered, as a binary sensor`, true);
    }
    const cls = f.name ? BINARY_CLASS[f.name] : undefined;
    const words = textual
      ? { states: { on: f.value_on as string, off: f.value_off as string } }
      : { states: { on: 'ON', off: 'OFF' }, transform: onOffWords(path, f.value_on, f.value_off) };
    this.add(f, 'binary_sensor', f.property!, this.featureName(f), { stateTopic: this.ctx.baseTopic, valuePath: path, deviceClass: cls, ...words });
  }

  /**
   * A siren's `warning` composite (set only): {"warning": {"mode": "emergency", "level": "high", "duration": 10}}
   * sounds it, mode "stop" silences it. Its modes are the tones; its levels a volume in four steps, as
   * Zigbee2MQTT's own Home Assistant siren maps them (up to 0.25 low, 0.5 medium, 0.75 high, else very_high).
   */
  warning(f: Z2mExpose): void {
    if (!settable(f) || !this.claim(f)) return this.skip(f, 'no_access', 'the warning is not settable');
    const feature = (name: string) => (f.features ?? []).find((x) => x && x.property === name);
    const modes = enumValues(feature('mode') ?? ({} as Z2mExpose)) ?? [];
    const tones = modes.filter((m) => m !== 'stop');
    if (!modes.includes('stop') || !tones.length) return this.skip(f, 'odd_payload', 'the warning has no stop mode or no tone to sound');
    const levels = enumValues(feature('level') ?? ({} as Z2mExpose)) ?? [];
    const duration = feature('duration');
    const ranges: Record<string, Range> = {};
    if (levels.length) ranges.volume_level = { min: 0, max: 1 };
    if (duration) ranges.duration = { min: 1, max: Math.min(600, duration.value_max ?? 600), step: 1 };
    const tone = tones.includes('emergency') ? 'emergency' : tones[0]!;
    const level = (v: unknown): string | undefined => {
      if (typeof v !== 'number' || !levels.length) return undefined;
      const word = v <= 0.25 ? 'low' : v <= 0.5 ? 'medium' : v <= 0.75 ? 'high' : 'very_high';
      return levels.includes(word) ? word : levels[Math.min(levels.length - 1, Math.floor(v * levels.length))];
    };
    const render = (value: string | number, parts: Record<string, string | number> = {}) => {
      if (value === 'OFF') return JSON.stringify({ warning: { mode: 'stop' } });
      const warning: Record<string, unknown> = { mode: parts.tone ?? tone };
      const l = level(parts.volume_level);
      if (l) warning.level = l;
      if (parts.duration !== undefined) warning.duration = parts.duration;
      return JSON.stringify({ warning });
    };
    this.add(f, 'siren', 'siren', this.specificCount === 0 && !f.endpoint ? this.ctx.deviceName : cleanName(`${this.ctx.deviceName} siren`), {
      payloads: { on: 'ON', off: 'OFF' },
      states: { on: 'ON', off: 'OFF' },
      options: { tone: tones },
      ranges,
      commandTemplates: { value: render },
    });
  }

  numeric(f: Z2mExpose): void {
    if (this.noAccess(f)) return;
    if (f.name === 'linkquality' || f.property === 'linkquality') {
      return this.skip(f, 'diagnostic', 'link quality is radio diagnostics, not a device reading');
    }
    if (!this.claim(f)) return;
    const path = this.path(f);
    if (!path) return;
    const unit = f.unit ? cleanName(f.unit, 32) : undefined;
    if (settable(f)) {
      const range = rangeOf(f);
      if (range) {
        this.add(f, 'number', f.property!, this.featureName(f), { stateTopic: this.readTopic(f), valuePath: path, unit, ranges: { value: range } });
        return;
      }
      const why = `${f.property} is settable but declares no usable value_min/value_max`;
      if (!readable(f)) return this.skip(f, 'no_range', why);
      this.skip(f, 'no_range', `${why}; only its reading is offered`, true);
    }
    this.add(f, 'sensor', f.property!, this.featureName(f), {
      stateTopic: this.ctx.baseTopic,
      valuePath: path,
      unit,
      deviceClass: f.name ? SENSOR_CLASS[f.name] : undefined,
    });
  }

  enumeration(f: Z2mExpose): void {
    if (this.noAccess(f) || !this.claim(f)) return;
    const path = this.path(f);
    if (!path) return;
    const values = enumValues(f);
    if (settable(f)) {
      if (values?.length) {
        if (!readable(f) && values.length === 1) {
          // A one-word command nobody reports back (`identify`, `reset`): a button.
          this.add(f, 'button', f.property!, this.featureName(f), { valuePath: path, payloads: { press: values[0] } });
          return;
        }
        this.add(f, 'select', f.property!, this.featureName(f), { stateTopic: this.readTopic(f), valuePath: path, options: { value: values } });
        return;
      }
      const why = values
        ? `${f.property} lists no values`
        : `${f.property} takes non-text values ${JSON.stringify(f.values).slice(0, 60)}, which Hearth would send as text`;
      const reason = values ? 'empty_enum' : 'non_string_enum';
      if (!readable(f)) return this.skip(f, reason, why);
      this.skip(f, reason, `${why}; only its state is offered`, true);
    }
    this.add(f, 'sensor', f.property!, this.featureName(f), { stateTopic: this.ctx.baseTopic, valuePath: path });
  }

  text(f: Z2mExpose): void {
    if (this.noAccess(f) || !this.claim(f)) return;
    const path = this.path(f);
    if (!path) return;
    if (settable(f)) {
      const why = `${f.property} takes free text, and no tool kind sets text`;
      if (!readable(f)) return this.skip(f, 'text_command', why);
      this.skip(f, 'text_command', `${why}; only its value is offered`, true);
    }
    this.add(f, 'sensor', f.property!, this.featureName(f), { stateTopic: this.ctx.baseTopic, valuePath: path });
  }

  // ------------------------------------------------------------ specific exposes

  specific(expose: Z2mExpose): void {
    const features = expose.features ?? [];
    const used = new Set<Z2mExpose>();
    const find = (...names: string[]) => {
      for (const n of names) {
        const f = features.find((x) => x.name === n && !used.has(x));
        if (f) return f;
      }
      return undefined;
    };
    let mapped = false;
    switch (expose.type) {
      case 'light':
        mapped = this.light(expose, find, used);
        break;
      case 'switch':
        mapped = this.onOff(expose, 'switch', find, used);
        break;
      case 'cover':
        mapped = this.cover(expose, find, used);
        break;
      case 'lock':
        mapped = this.lock(expose, find, used);
        break;
      case 'climate':
        mapped = this.climate(expose, find, used);
        break;
      case 'fan':
        mapped = this.fan(expose, find, used);
        break;
    }
    if (!mapped) used.clear();
    // Whatever the kind did not take stands on its own.
    for (const f of features) if (!used.has(f)) this.feature(f);
  }

  /** The on/off state feature shared by lights, switches, fans and locks, with text payloads. */
  private onOffState(f: Z2mExpose | undefined): OnOffState | undefined {
    if (f?.type !== 'binary' || !settable(f) || !f.property) return undefined;
    if (!isText(f.value_on) || !isText(f.value_off) || f.value_on === f.value_off) return undefined;
    const path = jsonKeyPath(f.property);
    if (!path || this.properties.has(f.property)) return undefined;
    return { feature: f, on: f.value_on, off: f.value_off, path };
  }

  /** What an on/off entity (switch, light, fan) reads and sends: its state feature, with the on and off words as payloads and states. */
  private onOffFields(state: OnOffState): Partial<Entity> {
    return {
      stateTopic: readable(state.feature) ? this.ctx.baseTopic : undefined,
      valuePath: state.path,
      payloads: { on: state.on, off: state.off },
      states: { on: state.on, off: state.off },
    };
  }

  private keyFor(expose: Z2mExpose): string {
    return expose.endpoint ? `${expose.type}_${expose.endpoint}` : expose.type;
  }

  private commit(expose: Z2mExpose, used: Set<Z2mExpose>, features: Z2mExpose[], kind: EntityKind, fields: Partial<Entity>, refresh: Z2mExpose[]): boolean {
    const anchor = features[0];
    const entity = this.add(anchor ?? expose, kind, this.keyFor(expose), this.primaryName(expose), fields);
    if (!entity) return false;
    for (const f of features) {
      used.add(f);
      if (f.property) this.properties.add(f.property);
    }
    for (const f of refresh) if (gettable(f) && f.property) this.refresh.add(f.property);
    return true;
  }

  private onOff(expose: Z2mExpose, kind: 'switch', find: Find, used: Set<Z2mExpose>): boolean {
    const state = this.onOffState(find('state'));
    if (!state) return false;
    return this.commit(expose, used, [state.feature], kind, this.onOffFields(state), [state.feature]);
  }

  private light(expose: Z2mExpose, find: Find, used: Set<Z2mExpose>): boolean {
    const state = this.onOffState(find('state'));
    if (!state) return false;
    const taken = [state.feature];
    const attributes: Entity['attributes'] = {};
    const ranges: Record<string, Range> = {};
    const brightness = find('brightness');
    const bPath = pathOf(brightness);
    if (brightness && brightness.type === 'numeric' && settable(brightness) && bPath) {
      attributes.brightness = { path: bPath };
      ranges.brightness = rangeOf(brightness, 1) ?? { min: 0, max: 254, step: 1 };
      taken.push(brightness);
    }
    // Colour temperature, in mireds ({"color_temp": 370}), is set through the light itself; read-only it is only read.
    const colorTemp = find('color_temp');
    const ctPath = pathOf(colorTemp);
    let colorTempSupport: ColorTempSupport | undefined;
    if (colorTemp && colorTemp.type === 'numeric' && ctPath) {
      if (readable(colorTemp)) attributes.color_temp = { path: ctPath };
      const mireds = rangeOf(colorTemp, 1);
      if (settable(colorTemp) && mireds && mireds.min > 0 && !this.properties.has(colorTemp.property!)) {
        attributes.color_temp = { path: ctPath };
        // Zigbee2MQTT says mired; a converter that says kelvin gets kelvin.
        const kelvin = colorTemp.unit === 'K' || colorTemp.unit === 'kelvin';
        colorTempSupport = kelvin
          ? { minKelvin: mireds.min, maxKelvin: mireds.max, unit: 'kelvin' }
          : { ...kelvinRangeOfMireds(mireds.min, mireds.max), unit: 'mired' };
        taken.push(colorTemp);
      }
    }
    // Zigbee2MQTT reports and takes {"color": {"x", "y"}} (color_xy) and {"color": {"hue", "saturation"}} (color_hs).
    const colors = (expose.features ?? []).filter((f) => f.type === 'composite' && (f.name === 'color_xy' || f.name === 'color_hs'));
    const colorModes: ColorMode[] = [];
    for (const c of colors) {
      const path = pathOf(c);
      if (!path || (!readable(c) && !settable(c))) continue;
      const xy = c.name === 'color_xy';
      if (xy) Object.assign(attributes, { color_x: { path: `${path}.x` }, color_y: { path: `${path}.y` } });
      else Object.assign(attributes, { hue: { path: `${path}.hue` }, saturation: { path: `${path}.saturation` } });
      if (settable(c)) colorModes.push(xy ? 'xy' : 'hs');
    }
    // xy first: it is what a Zigbee light does natively.
    colorModes.sort((a, b) => (a === 'xy' ? -1 : b === 'xy' ? 1 : 0));
    // Which of colour and colour temperature the light shows now ("xy", "hs", "color_temp").
    if (colorTempSupport && colorModes.length) attributes.color_mode = { path: 'color_mode' };
    const ok = this.commit(
      expose,
      used,
      taken,
      'light',
      {
        ...this.onOffFields(state),
        attributes,
        ranges,
        ...(colorModes.length ? { colorModes } : {}),
        ...(colorTempSupport ? { colorTemp: colorTempSupport } : {}),
      },
      taken,
    );
    if (ok) for (const c of colors) used.add(c);
    return ok;
  }

  private cover(expose: Z2mExpose, find: Find, used: Set<Z2mExpose>): boolean {
    const stateF = find('state');
    const values = stateF?.type === 'enum' && settable(stateF) ? enumValues(stateF) : undefined;
    const word = (re: RegExp) => values?.find((v) => re.test(v));
    const open = word(/^open$/i);
    const close = word(/^close$/i);
    const stop = word(/^stop$/i);
    const path = pathOf(stateF);
    if (!stateF || !open || !close || !path || this.properties.has(stateF.property!)) return false;
    const taken = [stateF];
    const attributes: Entity['attributes'] = {};
    const ranges: Record<string, Range> = {};
    const position = find('position');
    const pPath = pathOf(position);
    if (position && position.type === 'numeric' && settable(position) && pPath) {
      attributes.position = { path: pPath };
      ranges.position = rangeOf(position, 1) ?? { min: 0, max: 100, step: 1 };
      taken.push(position);
    }
    return this.commit(
      expose,
      used,
      taken,
      'cover',
      {
        stateTopic: readable(stateF) || position ? this.ctx.baseTopic : undefined,
        valuePath: path,
        attributes,
        payloads: { open, close, ...(stop ? { stop } : {}) },
        // Zigbee2MQTT reports OPEN and CLOSE (and STOP on some covers).
        states: { open, closed: close, ...(stop ? { stopped: stop } : {}) },
        ranges,
      },
      taken,
    );
  }

  private lock(expose: Z2mExpose, find: Find, used: Set<Z2mExpose>): boolean {
    const state = this.onOffState(find('state'));
    if (!state) return false;
    const taken = [state.feature];
    const attributes: Entity['attributes'] = {};
    const lockState = find('lock_state');
    const lsPath = pathOf(lockState);
    if (lockState && readable(lockState) && lsPath && !this.properties.has(lockState.property!)) {
      attributes.lock_state = { path: lsPath };
      taken.push(lockState);
    }
    return this.commit(
      expose,
      used,
      taken,
      'lock',
      {
        stateTopic: readable(state.feature) ? this.ctx.baseTopic : undefined,
        valuePath: state.path,
        attributes,
        payloads: { lock: state.on, unlock: state.off },
        states: { locked: state.on, unlocked: state.off },
      },
      [state.feature],
    );
  }

  private climate(expose: Z2mExpose, find: Find, used: Set<Z2mExpose>): boolean {
    const usable = (f: Z2mExpose | undefined) => (f?.property && jsonKeyPath(f.property) && !this.properties.has(f.property) ? f : undefined);
    const mode = usable(find('system_mode'));
    const modes = mode && mode.type === 'enum' && settable(mode) ? enumValues(mode) : undefined;
    const setpointF = ['occupied_heating_setpoint', 'current_heating_setpoint', 'occupied_cooling_setpoint']
      .map((n) => usable(find(n)))
      .find((f) => f && f.type === 'numeric' && settable(f) && rangeOf(f));
    if (!modes?.length && !setpointF) return false;
    const taken: Z2mExpose[] = [];
    const attributes: Entity['attributes'] = {};
    const ranges: Record<string, Range> = {};
    const options: Record<string, string[]> = {};
    let valuePath: string | undefined;
    if (mode && (modes?.length || readable(mode))) {
      valuePath = jsonKeyPath(mode.property!);
      if (modes?.length) options.mode = modes;
      taken.push(mode);
    } else {
      // The climate's value is its mode; a device without one leaves it unset (never in the payload).
      valuePath = jsonKeyPath(expose.endpoint ? `system_mode_${expose.endpoint}` : 'system_mode');
    }
    if (setpointF) {
      attributes.temperature = { path: jsonKeyPath(setpointF.property!)! };
      ranges.temperature = rangeOf(setpointF, DEFAULT_SETPOINT_STEP)!;
      taken.push(setpointF);
    }
    const current = usable(find('local_temperature'));
    if (current && readable(current)) {
      attributes.current_temperature = { path: jsonKeyPath(current.property!)! };
      taken.push(current);
    }
    const action = usable(find('running_state'));
    if (action && readable(action) && !settable(action)) {
      attributes.action = { path: jsonKeyPath(action.property!)! };
      taken.push(action);
    }
    const unit = setpointF?.unit ?? current?.unit;
    return this.commit(
      expose,
      used,
      taken,
      'climate',
      {
        stateTopic: this.ctx.baseTopic,
        valuePath,
        attributes,
        ranges,
        options,
        unit: unit ? cleanName(unit, 32) : undefined,
      },
      [mode, setpointF].filter((f): f is Z2mExpose => !!f),
    );
  }

  private fan(expose: Z2mExpose, find: Find, used: Set<Z2mExpose>): boolean {
    const state = this.onOffState(find('state'));
    if (!state) return false;
    const taken = [state.feature];
    const attributes: Entity['attributes'] = {};
    const ranges: Record<string, Range> = {};
    const options: Record<string, string[]> = {};
    const mode = find('mode');
    const modes = mode && mode.type === 'enum' && settable(mode) ? enumValues(mode) : undefined;
    const mPath = pathOf(mode);
    if (mode && modes?.length && mPath && !this.properties.has(mode.property!)) {
      attributes.preset_mode = { path: mPath };
      options.preset_mode = modes;
      taken.push(mode);
    }
    const speed = find('speed');
    const sPath = pathOf(speed);
    const sRange = speed && speed.type === 'numeric' && settable(speed) ? rangeOf(speed, 1) : undefined;
    if (speed && sRange && sPath && !this.properties.has(speed.property!)) {
      attributes.percentage = { path: sPath };
      ranges.percentage = sRange;
      taken.push(speed);
    }
    return this.commit(
      expose,
      used,
      taken,
      'fan',
      {
        ...this.onOffFields(state),
        attributes,
        ranges,
        options,
      },
      taken,
    );
  }
}

/** Turn one device's exposes into entities, with a reason for everything left out. */
export function exposesToEntities(exposes: Z2mExpose[], ctx: ExposeContext): ExposeResult {
  const b = new Builder(ctx);
  b.specificCount = exposes.filter((e) => e && SPECIFIC.has(e.type)).length;
  for (const e of exposes) {
    if (!e || typeof e !== 'object' || typeof e.type !== 'string') {
      b.skipped.push({ what: '(expose)', reason: 'malformed', detail: 'an expose that is not an object with a type' });
      continue;
    }
    b.feature(e);
  }
  nameOnce(b.entities, ctx.deviceName);
  return { entities: b.entities, skipped: b.skipped, refresh: [...b.refresh] };
}

/**
 * A device named after what it reports (`Back door contact`, `Sink water leak`) names that reading once, not
 * "Back door contact Contact": where exactly one entity's own part ends the device's name and no entity is called
 * as the device is.
 */
function nameOnce(entities: Entity[], deviceName: string): void {
  const device = deviceName.toLowerCase();
  if (entities.some((e) => e.name.toLowerCase() === device)) return;
  const twice = entities.filter((e) => {
    const name = e.name.toLowerCase();
    return name.startsWith(`${device} `) && endsWithPart(deviceName, name.slice(device.length + 1));
  });
  if (twice.length === 1) twice[0]!.name = deviceName;
}
