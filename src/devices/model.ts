// The device model every source (device files, discovery adapters) produces
// and everything downstream (state cache, tool generator, simulator) reads.
import type { ColorMode } from './color.js';
import type { ColorTempSupport } from './color-temp.js';

export const ENTITY_KINDS = [
  'sensor',
  'binary_sensor',
  'camera',
  'switch',
  'light',
  'cover',
  'lock',
  'climate',
  'number',
  'select',
  'button',
  'fan',
  'valve',
  'alarm_control_panel',
  'scene',
  'vacuum',
  'lawn_mower',
  'siren',
  'device_tracker',
  'event',
  'update',
  'humidifier',
  'water_heater',
  'text',
  'notify',
  'image',
] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

/** Kinds that only report: their entities are read, never called. */
const REPORT_ONLY_KINDS: ReadonlySet<EntityKind> = new Set(['sensor', 'binary_sensor', 'camera', 'device_tracker', 'event', 'image']);

/**
 * Kinds whose calls change the world: every kind but those that only report, so a new kind is an actuator
 * (policy-checked and audited) until it is said to be read-only.
 */
export const ACTUATOR_KINDS: ReadonlySet<EntityKind> = new Set(ENTITY_KINDS.filter((k) => !REPORT_ONLY_KINDS.has(k)));

/** Kinds read as frames (get_camera_image), not as a value: a camera, and an image entity (HA's MQTT image). */
export const FRAME_KINDS: ReadonlySet<EntityKind> = new Set(['camera', 'image']);

/** A received message as a transform sees it (src/devices/decode.ts Message). */
export interface PayloadView {
  readonly topic: string;
  readonly payload: Buffer;
  /** UTF-8 text; throws a PayloadError for binary or oversized payloads. */
  text(): string;
  /** Parsed JSON; throws a PayloadError when it is not JSON. */
  json(): unknown;
  /** What a JSON path reads (`a.b`, `values['rel humidity']`), or without one the text: what a reading with no transform reads. */
  read(path: string | undefined): unknown;
}

/**
 * Computes the raw value of a message where a JSON path is not enough (a
 * discovered value template, say). Returns what a path would have read
 * (undefined: nothing to update); throws a PayloadError for a payload it
 * cannot use. Optional everywhere: sources without one read `path` as before.
 * Where one is made, say what it reads (reading.ts `readsAs`: the template's text, the path and words), so that
 * the one a re-published config gives compares with it: a reading that changed is read again, one that did not
 * is left alone. One that says nothing counts as unchanged.
 */
export type PayloadTransform = (message: PayloadView) => unknown;

/**
 * Renders one command's payload from the value of the call (a discovered
 * command template such as `{"temperature": {{ value }}}`), with named parts
 * of it where the template wants them (a colour's red, green, blue). Throws
 * when it cannot render that value.
 */
export type CommandRender = (value: string | number, parts?: Record<string, string | number>) => string;

export interface AvailabilitySource {
  topic: string;
  /** JSON path into the payload; absent means the whole payload. */
  path?: string;
  /** Used instead of `path` when set. */
  transform?: PayloadTransform;
  payloadAvailable: string;
  payloadNotAvailable: string;
}

export interface Availability {
  sources: AvailabilitySource[];
  /** all: every source online; any: one is enough; latest: the last message decides. */
  mode: 'all' | 'any' | 'latest';
}

export interface Range {
  min: number;
  max: number;
  step?: number;
}

/** Where to read one attribute inside a state payload. */
export interface AttributeSource {
  /** Topic the attribute arrives on; defaults to the entity's state topic. */
  topic?: string;
  /** JSON path into a JSON payload; absent means the payload is the value. */
  path?: string;
  /** Used instead of `path` when set. */
  transform?: PayloadTransform;
}

export interface Entity {
  /** Globally unique: `<device id>.<entity key>`. */
  id: string;
  /** The key inside its device (`lamp`, `temperature`). */
  key: string;
  kind: EntityKind;
  name: string;
  aliases: string[];
  area?: string;
  /** The floor its area is on ("Upstairs"), for "upstairs lights off". */
  floor?: string;
  deviceId: string;
  deviceClass?: string;
  unit?: string;
  icon?: string;
  /**
   * The source's category (Zigbee2MQTT expose `category`, HA `entity_category`): a setting or a diagnostic
   * reading of the device, not an everyday control. Not shown to agents unless a person exposes it.
   */
  category?: EntityCategory;
  /**
   * Whether agents are shown it at all (Home Assistant's "expose to Assist"), as the home model resolved it:
   * a person's choice for the entity, then for its device, then the default of its category and kind. Not the
   * policy: the policy decides who may do what with what is shown. Undefined reads as shown (the home model leaves an
   * entity it has nothing to change on as its source gave it).
   */
  exposed?: boolean;
  /**
   * The text its tool name is made from when it differs from `name`: the source's whole name
   * (`Living room/Ceiling light`), so that a tool keeps the name it had before areas were read from names.
   */
  toolBase?: string;

  /** State: the main value and any further attributes (brightness, position, mode...). */
  stateTopic?: string;
  valuePath?: string;
  /** Reads the main value instead of `valuePath` when set (commands still use `valuePath`). */
  transform?: PayloadTransform;
  attributes: Record<string, AttributeSource>;

  /** Commands. */
  commandTopic?: string;
  /** `plain`: payload is the bare value; `json`: an object built from the command. */
  commandFormat: 'plain' | 'json';
  /** Extra command topics by attribute (a thermostat's mode and setpoint topics). */
  commandTopics: Record<string, string>;
  /**
   * Payloads rendered per call, by slot: `value` (a number's or a select's
   * value on commandTopic) or an attribute with its own topic (`mode`,
   * `temperature`, `position`, `percentage`, `preset_mode`, `brightness`).
   * Without one the value is sent as it is.
   */
  commandTemplates?: Record<string, CommandRender>;

  /** Payload vocabulary (on/off, open/close/stop, lock/unlock, states). */
  payloads: Record<string, string>;
  /** JSON commands only: the payload words are JSON literals (Zigbee2MQTT's `true`/`false`, `1`/`0`) and are sent as such, not as text. */
  payloadLiterals?: boolean;
  /** State vocabulary: what the device reports for each logical state. */
  states: Record<string, string>;

  /** Numeric ranges by attribute: brightness, position, temperature, value, color_temp. */
  ranges: Record<string, Range>;
  /** Enumerations: select options, climate modes, light effects. */
  options: Record<string, string[]>;

  /**
   * The colour encodings the light takes, best first (`xy`, `hs`, `rgb`). With
   * JSON commands a colour is written to the attributes of that mode
   * (color_x/color_y, hue/saturation, red/green/blue) at their paths; with a
   * command topic for the mode (`commandTopics.xy|hs|rgb`) it is sent there
   * as `x,y` / `h,s` / `r,g,b`, or through `commandTemplates` of that mode.
   */
  colorModes?: ColorMode[];
  /**
   * White by colour temperature: the light's range in kelvin and the unit it
   * speaks. The attribute `color_temp` (state and JSON command, at its path)
   * or `commandTopics.color_temp` (through `commandTemplates.color_temp`)
   * carries it in that unit; tools and people speak kelvin.
   */
  colorTemp?: ColorTempSupport;

  /** Camera: how frames are encoded on the wire. */
  imageEncoding?: 'raw' | 'b64';

  /** How long a commanded change may take before the result is `unconfirmed`. */
  confirmTimeoutMs?: number;

  availability?: Availability;
  /** Free-form hints for the simulator (initial value, drift, travel time). */
  simulate?: Record<string, unknown>;
}

export type EntityCategory = 'config' | 'diagnostic';

export interface Device {
  id: string;
  name: string;
  area?: string;
  floor?: string;
  /**
   * The device's own identity at its source, `<source>:<its id>` (`zigbee2mqtt:0x00158d0001a2b3c4`): what a
   * person's choices (area, name, aliases, exposed) are kept by, so they survive a rename. `<source>:<id>` when
   * the source gives none.
   */
  identity?: string;
  /** Where the area came from, once the home model applied: a person's choice, the source, or none. */
  areaFrom?: 'person' | 'source';
  /** A known area that the device's name starts with ("Kitchen spots"): offered to a person, never applied. */
  suggestedArea?: string;
  /** Aliases a person gave the device ("the espresso"): its main entity answers to them. */
  aliases?: string[];
  manufacturer?: string;
  model?: string;
  /** Where it came from: a file path or a discovery source. */
  source: string;
  /**
   * Made of configs that name no device (Home Assistant discovery without a `device` block: each config its own
   * device). Such entities may read one state topic among themselves, as hand-written configs for one JSON topic do;
   * never a topic a device that names itself (or a device file's commanding device) reads (topic-owners.ts
   * assignStateTopicReaders).
   */
  unnamed?: boolean;
  availability?: Availability;
  entities: Entity[];
}

/** The topics an entity's state arrives on (main + attribute topics). */
export function stateTopicsOf(entity: Entity): string[] {
  // Without a Set and a spread: the registry asks this of every entity, more than once, on each rebuild.
  const topics: string[] = entity.stateTopic ? [entity.stateTopic] : [];
  for (const key in entity.attributes) {
    const t = entity.attributes[key]!.topic;
    if (t && !topics.includes(t)) topics.push(t);
  }
  return topics;
}

export function isActuator(entity: Entity): boolean {
  return ACTUATOR_KINDS.has(entity.kind);
}

/**
 * Whether a device's name already ends with an entity's own part as a whole word ("Back door contact" and "contact",
 * "Sink water leak" and "water leak"), case aside: then that entity is called as the device is, never "Back door
 * contact Contact" (Zigbee2MQTT's names and a person's rename alike).
 */
export function endsWithPart(deviceName: string, part: string): boolean {
  const name = deviceName.toLowerCase();
  const own = part.trim().toLowerCase();
  return !!own && (name === own || name.endsWith(` ${own}`));
}

/**
 * A copy of an entity with some fields changed. Every field is written in one literal, in the same order, so that
 * V8 lays every copy out the same way, as a plain object of its own (~290 bytes): a copy by `Object.assign({}, ...)`
 * becomes a dictionary past a dozen fields (~1.5 KiB), and one by a spread followed by fields that the source did not
 * have gets a layout of its own (~330 bytes more; issue 45). The `satisfies` makes a field added to Entity a
 * compile error here until it is copied too.
 */
export function entityWith(e: Entity, c: Partial<Entity>): Entity {
  const has = (k: keyof Entity) => Object.hasOwn(c, k);
  return {
    id: has('id') ? c.id! : e.id,
    key: has('key') ? c.key! : e.key,
    kind: has('kind') ? c.kind! : e.kind,
    name: has('name') ? c.name! : e.name,
    aliases: has('aliases') ? c.aliases! : e.aliases,
    area: has('area') ? c.area : e.area,
    floor: has('floor') ? c.floor : e.floor,
    deviceId: has('deviceId') ? c.deviceId! : e.deviceId,
    deviceClass: has('deviceClass') ? c.deviceClass : e.deviceClass,
    unit: has('unit') ? c.unit : e.unit,
    icon: has('icon') ? c.icon : e.icon,
    category: has('category') ? c.category : e.category,
    exposed: has('exposed') ? c.exposed : e.exposed,
    toolBase: has('toolBase') ? c.toolBase : e.toolBase,
    stateTopic: has('stateTopic') ? c.stateTopic : e.stateTopic,
    valuePath: has('valuePath') ? c.valuePath : e.valuePath,
    transform: has('transform') ? c.transform : e.transform,
    attributes: has('attributes') ? c.attributes! : e.attributes,
    commandTopic: has('commandTopic') ? c.commandTopic : e.commandTopic,
    commandFormat: has('commandFormat') ? c.commandFormat! : e.commandFormat,
    commandTopics: has('commandTopics') ? c.commandTopics! : e.commandTopics,
    commandTemplates: has('commandTemplates') ? c.commandTemplates : e.commandTemplates,
    payloads: has('payloads') ? c.payloads! : e.payloads,
    payloadLiterals: has('payloadLiterals') ? c.payloadLiterals : e.payloadLiterals,
    states: has('states') ? c.states! : e.states,
    ranges: has('ranges') ? c.ranges! : e.ranges,
    options: has('options') ? c.options! : e.options,
    colorModes: has('colorModes') ? c.colorModes : e.colorModes,
    colorTemp: has('colorTemp') ? c.colorTemp : e.colorTemp,
    imageEncoding: has('imageEncoding') ? c.imageEncoding : e.imageEncoding,
    confirmTimeoutMs: has('confirmTimeoutMs') ? c.confirmTimeoutMs : e.confirmTimeoutMs,
    availability: has('availability') ? c.availability : e.availability,
    simulate: has('simulate') ? c.simulate : e.simulate,
  } satisfies { [K in keyof Required<Entity>]: Entity[K] };
}

/** A copy of a device with some fields changed, laid out the same way every time (see entityWith). */
export function deviceWith(d: Device, c: Partial<Device>): Device {
  const has = (k: keyof Device) => Object.hasOwn(c, k);
  return {
    id: has('id') ? c.id! : d.id,
    name: has('name') ? c.name! : d.name,
    area: has('area') ? c.area : d.area,
    floor: has('floor') ? c.floor : d.floor,
    identity: has('identity') ? c.identity : d.identity,
    areaFrom: has('areaFrom') ? c.areaFrom : d.areaFrom,
    suggestedArea: has('suggestedArea') ? c.suggestedArea : d.suggestedArea,
    aliases: has('aliases') ? c.aliases : d.aliases,
    manufacturer: has('manufacturer') ? c.manufacturer : d.manufacturer,
    model: has('model') ? c.model : d.model,
    source: has('source') ? c.source! : d.source,
    unnamed: has('unnamed') ? c.unnamed : d.unnamed,
    availability: has('availability') ? c.availability : d.availability,
    entities: has('entities') ? c.entities! : d.entities,
  } satisfies { [K in keyof Required<Device>]: Device[K] };
}
