// Home Assistant MQTT discovery, read as Home Assistant reads it (see
// homeassistant/components/mqtt/discovery.py): per-component topics
// `<prefix>/<component>/[<node_id>/]<object_id>/config` and device-based
// `<prefix>/device/[<node_id>/]<object_id>/config` with `cmps`; abbreviations
// and `~`; empty payload or migrate_discovery removes; origin checked; each
// config validated per platform; unique_id collisions ignored; `online` on
// `<prefix>/status` at every connect so devices announce themselves again.
//
// Accepted configs become Hearth devices (grouped by device.identifiers[0])
// in the registry under the `homeassistant` source. Changes are batched: one
// registry update per burst, so a home of a thousand entities regenerates its
// tool set once, not a thousand times. Every problem is logged once per topic, and the lines are bounded across
// topics (util/line-budget.ts): a burst of thousands of bad configs gives a few lines and a summary with the count.
import { joined } from '../../../util/interner.js';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { discoveryPrefix, type HearthConfig } from '../../../config/schema.js';
import type { Logger } from '../../../log.js';
import type { ConnectionState } from '../../../mqtt/connection.js';
import { JsonLimitError, MAX_JSON_DEPTH, parseBoundedJson } from '../../../util/bounded-json.js';
import { INVISIBLE } from '../../../util/untrusted-text.js';
import { LineTrickle, quietKeys } from '../../../util/line-budget.js';
import { PerKeyThrottle } from '../../../util/per-key-throttle.js';
import { TokenBucket } from '../../../util/token-bucket.js';
import { DeviceIds } from '../../device-ids.js';
import { admitDiscovered } from '../../discovered.js';
import type { Device, Entity } from '../../model.js';
import { SOURCE_PRIORITY, type DiscoveryAdapter, type DiscoveryContext } from '../adapter.js';
import { SOURCE_NAME as Z2M_SOURCE } from '../zigbee2mqtt/adapter.js';
import { isObject, replaceAllAbbreviations, replaceTopicBase, TOPIC_BASE, type Json } from './abbreviations.js';
import { Invalid, migrateFlag, origin as validateOrigin, validateComponent, validateDevicePayload, type DeviceBlock } from './schema.js';
import { deviceClassName, toEntity, type Conversion, type NameSpec } from './to-entity.js';
import { birthTopic, DEVICE_COMPONENT, discoverySubscriptions, parseDiscoveryTopic, SUPPORTED_COMPONENTS, validPrefix } from './topics.js';
import { errorOf } from '../../../util/error.js';

export const SOURCE_NAME = 'homeassistant';
/** Largest discovery config accepted. */
export const MAX_CONFIG_BYTES = 256 * 1024;
/** Most discovered components kept (a runaway publisher cannot grow the registry without bound). */
export const MAX_COMPONENTS = 20_000;
/** Deepest JSON nesting accepted in a config (real ones use four levels; Home Assistant's parser stops at 1024). */
export { MAX_JSON_DEPTH };
const FLUSH_QUIET_MS = 20;
/** The identifier Zigbee2MQTT gives its devices in Home Assistant discovery. */
const Z2M_IDENTIFIER = /^zigbee2mqtt_(0x[0-9a-f]{16})$/;
const FLUSH_MAX_WAIT_MS = 150;
const MAX_LOGGED = 10_000;

export type Outcome = 'accept' | 'reject' | 'remove' | 'ignore';

export interface ProcessedEvent {
  topic: string;
  outcome: Outcome;
  /** `<platform> <discovery id>` when known. */
  hash?: string;
  reason?: string;
}

export interface DiscoveredItem {
  /** `<platform> <discovery id>`, HA's discovery hash. */
  hash: string;
  platform: string;
  topic: string;
  /** Set once the registry has it (after the batch is flushed); absent for no-tool platforms. */
  entityId?: string;
  deviceId: string;
  uniqueId?: string;
  /** Why this accepted config gives no tool. */
  noTool?: string;
}

interface DeviceInfo {
  name?: string;
  manufacturer?: string;
  model?: string;
  area?: string;
}

interface Discovered {
  hash: string;
  platform: string;
  topic: string;
  /** For device-based discovery: the device topic's id; an empty payload there removes every component it gave. */
  deviceTopic?: string;
  uniqueId?: string;
  deviceId: string;
  /** The key an older Hearth gave it: object_id, default_entity_id, else its unique_id, else its object id. */
  keyHint: string;
  /** The entity id the config asks for (object_id, default_entity_id), as a key. */
  explicitKey?: string;
  conversion: Conversion;
  /** `entity_category`: a setting or a diagnostic reading, not shown to agents unless a person exposes it. */
  category?: 'config' | 'diagnostic';
  /** The config names no device (no identifiers, no connections): its device is itself (Device.unnamed). */
  unnamed?: boolean;
  /** A digest of the validated config: one the same again (a device-based payload re-sent for another component) costs nothing. */
  digest: string;
}

/** A config as process() takes it, kept to be read later (held for its device's name, or refused for a rate). */
interface HeldConfig {
  topic: string;
  platform: string;
  config: Json;
  via?: { deviceTopic: string; componentId: string };
}

export interface HomeAssistantEvents {
  processed: [event: ProcessedEvent];
  flushed: [devices: number, entities: number];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Device-provided text as stored: no control or invisible characters, one line, capped. */
export function cleanText(text: unknown, max = 100): string | undefined {
  if (typeof text !== 'string') return undefined;
  const clean = text.replace(INVISIBLE, ' ').replace(/\s+/g, ' ').trim();
  if (!clean) return undefined;
  return clean.length > max ? clean.slice(0, max).trimEnd() : clean;
}

export { jsonDepth } from '../../../util/bounded-json.js';

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64');
}

function shortHash(text: string, length = 6): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

function slugBase(text: string, allowDash: boolean): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(allowDash ? /[^a-z0-9_-]+/g : /[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^[^a-z0-9]+/, '')
    .replace(/[_-]+$/, '');
}

/** A device id under the device-file rules `^[a-z0-9][a-z0-9_-]{0,63}$`, the same for the same text. */
export function slugDeviceId(text: string): string {
  const base = slugBase(text, true) || `device_${shortHash(text)}`;
  return base.length <= 64 ? base : `${base.slice(0, 57).replace(/[_-]+$/, '')}_${shortHash(text)}`;
}

/** An entity key under `^[a-z0-9][a-z0-9_]{0,63}$`. */
export function slugKey(text: string): string {
  const base = slugBase(text, false);
  if (!base) return '';
  return base.length <= 64 ? base : `${base.slice(0, 57).replace(/_+$/, '')}_${shortHash(text)}`;
}

/** The entity id the config asks for, as a key: its object_id, else the part after the dot of its default_entity_id. */
function explicitKey(config: Json): string | undefined {
  if (typeof config.object_id === 'string' && slugKey(config.object_id)) return slugKey(config.object_id);
  if (typeof config.default_entity_id === 'string') {
    const part = config.default_entity_id.split('.').pop() ?? '';
    if (slugKey(part)) return slugKey(part);
  }
  return undefined;
}

function withSuffix(base: string, suffix: string): string {
  return `${base.slice(0, 64 - suffix.length - 1).replace(/[_-]+$/, '')}_${suffix}`;
}

/**
 * The entity's own part of its name, as Home Assistant builds a friendly name: '' for its device's main feature
 * (`name: null`, or named as its device is), else its name without the device's name in front ("ENERGY Power" of
 * "Dehumidifier ENERGY Power"), its device class's name, or the platform's default; undefined when it has no text.
 */
export function ownName(spec: NameSpec, deviceName: string | undefined): string | undefined {
  const device = cleanText(deviceName);
  if (spec.name === null || spec.name === '') return device ? '' : cleanText(spec.platformDefault);
  if (typeof spec.name !== 'string') return spec.deviceClass ? deviceClassName(spec.deviceClass) : spec.platformDefault;
  const own = cleanText(spec.name);
  // HA drops a device-name prefix from an entity name ("Ventilator_dimmer" on device "Ventilator").
  if (own && device && own.toLowerCase().startsWith(device.toLowerCase())) {
    const rest = own.slice(device.length);
    if (rest === '' || /^[\s_:-]/.test(rest)) return cleanText(rest.replace(/^[\s_:-]+/, '')) ?? '';
  }
  return own;
}

/** The entity's friendly name as Home Assistant builds it (device name + entity name). */
export function entityName(spec: NameSpec, deviceName: string | undefined, fallback: string): string {
  const device = cleanText(deviceName);
  const own = ownName(spec, deviceName);
  if (own === '') return device ?? fallback;
  return cleanText(device ? `${device} ${own ?? fallback}` : (own ?? fallback), 160) ?? fallback;
}

/**
 * The key Home Assistant's way gives an entity of this device: the config's object_id or default_entity_id (the
 * part after the dot), else its own name ("energy_power"; a name that still begins with the device's id says the
 * rest; an entity without a device, whose name made the device's id, repeats it: `porch_lamp.porch_lamp`), else,
 * for the device's main feature, its platform ("switch").
 */
export function readableKey(explicit: string | undefined, own: string | undefined, deviceId: string, platform: string, fallback: string): string {
  if (explicit) return explicit;
  if (own === undefined) return fallback;
  let key = slugKey(own);
  // A name with no letters or digits to make a key of ("💡"): the old key of its unique_id.
  if (own && !key) return fallback;
  // A device with no name of its own took its id from this entity's: the key repeats it, as HA's `light.porch_lamp`.
  if (key.startsWith(`${deviceId}_`)) key = key.slice(deviceId.length + 1);
  return key || slugKey(platform) || 'entity';
}

export interface HomeAssistantOptions {
  prefix: string;
  birth: boolean;
  /** Most entities kept from this source (discovery.maxEntities). */
  maxEntities?: number;
  /** Most entities one device may announce (discovery.maxEntitiesPerDevice). */
  maxEntitiesPerDevice?: number;
  /** How many new or changed configs one device may announce per second on average (discovery.announcementsPerSecond); 10x that at once. */
  announcementsPerSecond?: number;
  /** Where Hearth reads Zigbee2MQTT's bridge/devices, if it does: Zigbee2MQTT's own configs for it are not read here (process()). */
  zigbee2mqttPrefix?: string;
}

/** Defaults of the per-source and per-device bounds (a big home has a few thousand entities, a device a few dozen). */
export const DISCOVERY_LIMITS = { maxEntities: 5000, maxEntitiesPerDevice: 256, announcementsPerSecond: 50 };

export class HomeAssistantDiscovery extends EventEmitter<HomeAssistantEvents> implements DiscoveryAdapter {
  readonly name = SOURCE_NAME;
  private ctx?: DiscoveryContext;
  private log?: Logger;
  private stopped = false;
  private readonly filters: string[];

  private readonly records = new Map<string, Discovered>();
  private readonly byDevice = new Map<string, Set<string>>();
  private readonly deviceInfo = new Map<string, DeviceInfo>();
  private readonly uniqueIds = new Map<string, string>();
  /** The ids devices were given when first seen (the assembly's store, else one of this adapter's own). */
  private ids = new DeviceIds(undefined);
  private readonly devices = new Map<string, Device>();
  private readonly entityIdByHash = new Map<string, string>();
  /** A digest of the last payload per topic, to skip identical re-announcements (the text itself could be 256 KiB a topic). */
  private readonly lastText = new Map<string, string>();
  private readonly logged = new Set<string>();
  private readonly refusals = new PerKeyThrottle();
  /** Lines about configs (ignored, noted, refused), bounded across topics; debug lines on a budget of their own. */
  private readonly lines = new LineTrickle((q) =>
    this.log?.warn(
      { quietCount: q.count, topics: q.first },
      `Home Assistant discovery: ${q.count} more lines about configs not written one by one (${quietKeys(q)})`,
    ),
  );
  private readonly debugLines = new LineTrickle((q) =>
    this.log?.debug({ quietCount: q.count, topics: q.first }, `Home Assistant discovery: ${q.count} more debug lines about configs (${quietKeys(q)})`),
  );
  /** A line per valid config discovered, updated or removed, bounded across topics too: a publisher invents topics. */
  private readonly configLines = new LineTrickle((q) =>
    this.log?.debug(
      { quietCount: q.count, topics: q.first },
      `Home Assistant discovery: ${q.count} more configs discovered, updated or removed, not logged one by one (${quietKeys(q)})`,
    ),
  );
  private readonly dirty = new Set<string>();
  /** Configs of a device not yet named, held until the burst ends (see process()). */
  private readonly unnamed = new Map<string, HeldConfig>();
  /**
   * The latest change of each component refused for its device's rate (announcementsPerSecond), read again when the
   * bucket refills (retryTimer): a device that changed a config once too fast and then went quiet gets it read, not
   * the config it had until it next changes it. At most one per component Hearth has (a change of a record): bounded
   * as the records are.
   */
  private readonly refusedChanges = new Map<string, HeldConfig>();
  private retryTimer?: NodeJS.Timeout;
  private flushTimer?: NodeJS.Timeout;
  private firstPending = 0;
  private waiters: Array<() => void> = [];
  private added = 0;
  private removedSinceFlush = 0;

  readonly stats = { messages: 0, accepted: 0, rejected: 0, removed: 0, flushes: 0 };

  constructor(readonly options: HomeAssistantOptions) {
    super();
    this.filters = discoverySubscriptions(options.prefix);
  }

  get prefix(): string {
    return this.options.prefix;
  }

  start(ctx: DiscoveryContext): void {
    if (this.ctx) return;
    this.ctx = ctx;
    this.log = ctx.log;
    if (ctx.deviceIds) this.ids = ctx.deviceIds;
    const problem = validPrefix(this.prefix);
    if (problem) {
      ctx.log.error({ prefix: this.prefix }, `Home Assistant discovery is off: ${problem}`);
      return;
    }
    ctx.connection.on('message', this.onMessage);
    ctx.connection.on('state', this.onState);
    ctx.connection.subscribe(this.filters);
    ctx.log.debug({ prefix: this.prefix, topics: this.filters }, 'Home Assistant discovery listening');
    if (ctx.connection.connected) this.announce();
  }

  stop(): void {
    if (!this.ctx || this.stopped) return;
    this.stopped = true;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.refusedChanges.clear();
    this.ctx.connection.off('message', this.onMessage);
    this.ctx.connection.off('state', this.onState);
    this.ctx.connection.unsubscribe(this.filters);
    this.lines.stop();
    this.debugLines.stop();
    this.configLines.stop();
    for (const w of this.waiters.splice(0)) w();
  }

  /** What has been discovered (accepted configs), for tests and the CLI. */
  items(): DiscoveredItem[] {
    return [...this.records.values()].map((r) => ({
      hash: r.hash,
      platform: r.platform,
      topic: r.topic,
      deviceId: r.deviceId,
      ...(r.uniqueId ? { uniqueId: r.uniqueId } : {}),
      ...(this.entityIdByHash.has(r.hash) ? { entityId: this.entityIdByHash.get(r.hash) } : {}),
      ...('noTool' in r.conversion ? { noTool: r.conversion.noTool } : {}),
    }));
  }

  /** Resolves once every change so far has reached the registry. */
  settled(): Promise<void> {
    if (!this.flushTimer) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  // -------------------------------------------------------------------------
  // Connection
  // -------------------------------------------------------------------------

  private readonly onState = (state: ConnectionState) => {
    if (state === 'connected') this.announce();
  };

  /** Publish `online` on <prefix>/status (not retained) once our subscriptions are in place. */
  private announce(): void {
    if (!this.options.birth || this.stopped || !this.ctx) return;
    const connection = this.ctx.connection;
    const topic = birthTopic(this.prefix);
    const publish = () => {
      if (this.stopped) return;
      connection.publish(topic, 'online', { qos: 0, retain: false }).then(
        () => this.log?.debug({ topic }, 'published the Home Assistant birth message'),
        (err: unknown) => this.log?.warn({ topic, err: errorOf(err) }, 'could not publish the Home Assistant birth message'),
      );
    };
    // Wait for the broker to confirm the discovery subscriptions, so answers to the birth message are not missed.
    const client = connection.client as { subscribe?: (t: string[], o: object, cb: (err?: Error | null) => void) => unknown } | undefined;
    if (client?.subscribe) client.subscribe(this.filters, { qos: 0 }, () => publish());
    else setTimeout(publish, 50);
  }

  private readonly onMessage = (topic: string, payload: Buffer) => {
    if (this.stopped || !topic.startsWith(`${this.prefix}/`)) return;
    try {
      this.handle(topic, payload);
    } catch (err) {
      // Never let one message break the bridge.
      this.reject(topic, `could not process it: ${(err as Error)?.message ?? String(err)}`, undefined, 'error');
    }
  };

  // -------------------------------------------------------------------------
  // Messages
  // -------------------------------------------------------------------------

  /** Handle one message (the connection calls this; tests may too). */
  handle(topic: string, payload: Buffer): void {
    const parsed = parseDiscoveryTopic(this.prefix, topic);
    if (parsed.kind === 'other') return;
    this.stats.messages++;
    if (parsed.kind === 'illegal') {
      this.reject(topic, 'illegal discovery topic: node_id and object_id may only hold the characters a-z A-Z 0-9 _ -');
      return;
    }
    const { component } = parsed;
    if (component !== DEVICE_COMPONENT && !SUPPORTED_COMPONENTS.has(component)) {
      this.reject(topic, `"${component.slice(0, 40)}" is not an MQTT platform Home Assistant discovers`, undefined, 'debug');
      return;
    }
    if (payload.length > MAX_CONFIG_BYTES) {
      this.reject(topic, `config of ${payload.length} bytes is over the ${MAX_CONFIG_BYTES / 1024} KiB limit`);
      return;
    }
    let text: string;
    try {
      text = utf8.decode(payload);
    } catch {
      this.reject(topic, 'config is not UTF-8 text');
      return;
    }
    if (text !== '' && this.lastText.get(topic) === digest(text)) {
      this.emit('processed', { topic, outcome: 'ignore', reason: 'same config as before' });
      return;
    }
    if (component === DEVICE_COMPONENT) this.onDevice(topic, parsed.objectId, parsed.nodeId, text);
    else this.onComponent(topic, component, parsed.discoveryId, text);
  }

  private parseObject(topic: string, text: string, hash?: string): Json | undefined {
    let value: unknown;
    try {
      value = parseBoundedJson(text, { maxChars: MAX_CONFIG_BYTES, maxDepth: MAX_JSON_DEPTH });
    } catch (err) {
      if (!(err instanceof JsonLimitError)) throw err;
      const why =
        err.reason === 'too_deep'
          ? `nested deeper than ${MAX_JSON_DEPTH} levels`
          : err.reason === 'oversized'
            ? err.message
            : JSON.stringify(text.slice(0, 40));
      this.reject(topic, `Unable to parse JSON: ${why}`, hash);
      return undefined;
    }
    if (!isObject(value)) {
      this.reject(topic, `Unable to parse JSON: expected an object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`, hash);
      return undefined;
    }
    return value;
  }

  private onComponent(topic: string, platform: string, discoveryId: string, text: string): void {
    const hash = `${platform} ${discoveryId}`;
    if (text === '') {
      this.lastText.delete(topic);
      this.remove(hash, topic, 'empty config');
      return;
    }
    const config = this.parseObject(topic, text, hash);
    if (!config) return;
    const migrate = migrateFlag(config);
    if (migrate === 'migrate') {
      this.lastText.delete(topic);
      this.remove(hash, topic, 'migrate_discovery');
      return;
    }
    if (migrate === 'invalid') this.logOnce(topic, 'warn', 'migrate_discovery must be the only key and true; read as an ordinary config');
    replaceAllAbbreviations(config);
    if ('origin' in config) {
      try {
        validateOrigin(config.origin);
      } catch (err) {
        if (!(err instanceof Invalid)) throw err;
        this.reject(topic, `Unable to parse origin information from discovery message: ${err.describe()}`, hash);
        return;
      }
    }
    // A newer message stands in for a change refused earlier, whatever becomes of it.
    this.refusedChanges.delete(hash);
    if (this.process(topic, platform, hash, config)) this.lastText.set(topic, digest(text));
  }

  private onDevice(topic: string, objectId: string, nodeId: string | undefined, text: string): void {
    const deviceTopic = nodeId ? `${nodeId} ${objectId}` : objectId;
    const removeAll = (why: string) => {
      this.lastText.delete(topic);
      const hashes = [...this.records.values()].filter((r) => r.deviceTopic === deviceTopic).map((r) => r.hash);
      if (!hashes.length) {
        this.logOnce(topic, 'debug', `no device components to clean up for ${deviceTopic}`);
        this.emit('processed', { topic, outcome: 'ignore', reason: 'nothing to remove' });
      }
      for (const hash of hashes) this.remove(hash, topic, why);
    };
    if (text === '') {
      removeAll('empty device config');
      return;
    }
    const payload = this.parseObject(topic, text);
    if (!payload) return;
    const migrate = migrateFlag(payload);
    if (migrate === 'migrate') {
      removeAll('migrate_discovery');
      return;
    }
    replaceAllAbbreviations(payload);
    let device: ReturnType<typeof validateDevicePayload>;
    try {
      device = validateDevicePayload(payload);
    } catch (err) {
      if (!(err instanceof Invalid)) throw err;
      this.reject(topic, `Invalid MQTT device discovery payload for ${objectId}: ${err.describe()}`);
      return;
    }
    let ok = true;
    for (const [componentId, component] of Object.entries(device.components)) {
      const platform = component.platform as string;
      const config: Json = { ...component };
      delete config.platform;
      const componentObjectId = nodeId ? `${nodeId} ${componentId}` : componentId;
      const hash = `${platform} ${objectId} ${componentObjectId}`;
      if (Object.keys(config).length === 0) {
        this.remove(hash, topic, `component ${componentId} reduced to its platform`);
        continue;
      }
      config.device = payload.device;
      config.origin = payload.origin;
      for (const [key, value] of Object.entries(device.shared)) if (!(key in config)) config[key] = value;
      this.refusedChanges.delete(hash);
      ok = this.process(topic, platform, hash, config, { deviceTopic, componentId }) && ok;
    }
    if (ok) this.lastText.set(topic, digest(text));
  }

  /** Validate and keep one component. Returns whether it was accepted (or held for its device's name, unless `named`). */
  private process(topic: string, platform: string, hash: string, config: Json, via?: { deviceTopic: string; componentId: string }, named = false): boolean {
    const where = via ? `${topic} (component ${via.componentId})` : topic;
    if (TOPIC_BASE in config) replaceTopicBase(config);
    let validated: Json;
    try {
      validated = validateComponent(platform, config);
    } catch (err) {
      if (!(err instanceof Invalid)) throw err;
      this.reject(where, `invalid ${platform} config: ${err.describe()}`, hash);
      return false;
    }
    // Zigbee2MQTT announces its devices here too (`zigbee2mqtt_<IEEE address>`). When Hearth reads Zigbee2MQTT's own
    // list under the topics this config uses, that is where the device comes from: a copy read here would only let
    // any config naming such an identifier (the IEEE addresses are in the retained bridge/devices) join a Zigbee2MQTT
    // device from another source: read its state topic and command its topics, even while it is away. (A
    // Zigbee2MQTT under another base topic than Hearth's is read here, as before.)
    if (this.readsZigbee2mqttDevice(validated)) {
      this.logOnce(where, 'debug', `${platform}: a Zigbee2MQTT device's config, not read: Hearth reads the device from Zigbee2MQTT's bridge/devices`);
      this.emit('processed', { topic: where, outcome: 'ignore', hash, reason: "a Zigbee2MQTT device: read from Zigbee2MQTT's bridge/devices" });
      return false;
    }
    const uniqueId = typeof validated.unique_id === 'string' ? validated.unique_id : undefined;
    if (uniqueId) {
      const owner = this.uniqueIds.get(`${platform} ${uniqueId}`);
      if (owner && owner !== hash) {
        const other = this.records.get(owner)?.topic ?? owner;
        this.reject(where, `unique_id ${JSON.stringify(uniqueId.slice(0, 80))} is already used by ${other}; ignored, as Home Assistant does`, hash);
        return false;
      }
    }
    const previous = this.records.get(hash);
    const perSource = Math.min(this.options.maxEntities ?? DISCOVERY_LIMITS.maxEntities, MAX_COMPONENTS);
    if (!previous && this.records.size >= perSource) {
      this.refuse('source', where, `more than ${perSource} discovered entities from Home Assistant discovery (discovery.maxEntities); ignoring new ones`, hash);
      return false;
    }
    const notes = {
      warn: (message: string) => this.logOnce(where, 'warn', `${platform} ${hash.split(' ').slice(1).join(' ')}: ${message}`),
      info: (message: string) => this.logOnce(where, 'info', `${platform} ${hash.split(' ').slice(1).join(' ')}: ${message}`),
    };
    const conversion = toEntity(platform, validated, notes);
    const deviceBlock = validated.device as DeviceBlock | undefined;
    // Tasmota names its device in one config only (the others say `dev: {ids}`), and a broker hands retained
    // configs over in topic order, not as published: a device first seen without its name waits for the rest of
    // the burst, so that its id is made from its name ("dehumidifier") rather than from one entity's
    // ("dehumidifier_energy_power"). Its unique_id is held for it meanwhile, so the order first seen stands.
    if (!named && !previous && this.unnamed.size < perSource && this.awaitsName(deviceBlock)) {
      const replaced = this.unnamed.get(hash);
      if (replaced) this.releaseUniqueId(hash, replaced.config);
      this.unnamed.set(hash, { topic, platform, config, ...(via ? { via } : {}) });
      if (uniqueId) this.uniqueIds.set(`${platform} ${uniqueId}`, hash);
      // Accepted now (said once, here): only a refusal when it is read is said again.
      this.emit('processed', { topic: where, outcome: 'accept', hash, ...('noTool' in conversion ? { reason: conversion.noTool } : {}) });
      this.scheduleFlush();
      return true;
    }
    // A newer config for what was held stands in for it.
    const stale = named ? undefined : this.unnamed.get(hash);
    if (stale) {
      this.unnamed.delete(hash);
      this.releaseUniqueId(hash, stale.config);
    }
    const discoveryId = hash.slice(platform.length + 1);
    const deviceId = this.deviceIdFor(platform, deviceBlock, validated, uniqueId, discoveryId);
    if (!deviceId) {
      this.refuse('source', where, 'no device id could be given to its device: discovery.max_devices devices have ids, and its own is taken', hash);
      return false;
    }
    const keyHint = this.keyHint(validated, uniqueId, via?.componentId ?? discoveryId.split(' ').pop()!);
    const validatedDigest = digest(JSON.stringify(validated));
    if (previous && previous.digest === validatedDigest && previous.deviceId === deviceId) {
      // The same config again (a device-based payload sends every component again for one that changed): nothing
      // to do, nothing to charge. A change refused meanwhile is undone by it: the latest is this one.
      this.refusedChanges.delete(hash);
      if (!named) this.emit('processed', { topic: where, outcome: 'accept', hash, ...('noTool' in conversion ? { reason: conversion.noTool } : {}) });
      return true;
    }
    if (!previous) {
      // One device cannot flood the home: a cap on its entities, and on how fast it announces new ones.
      const perDevice = this.options.maxEntitiesPerDevice ?? DISCOVERY_LIMITS.maxEntitiesPerDevice;
      const held = this.byDevice.get(deviceId)?.size ?? 0;
      if (held >= perDevice) {
        this.refuse(deviceId, where, `device ${deviceId} already has ${held} discovered entities (discovery.maxEntitiesPerDevice); ignoring new ones`, hash);
        return false;
      }
      if (!this.bucketOf(deviceId).take()) {
        this.refuse(
          deviceId,
          where,
          `device ${deviceId} announces new entities faster than ${this.rate} per second (discovery.announcementsPerSecond); ignoring them until it slows down`,
          hash,
        );
        return false;
      }
    } else {
      // A changed config costs what a new one does: a rebuild, and a reading read another way has the state cache ask
      // the broker for its topic's retained message again. One moved to another device (its identifiers changed)
      // costs each device.
      // Both buckets asked before either is charged: a move refused by one spends nothing of the other.
      const here = this.bucketOf(deviceId);
      const there = previous.deviceId === deviceId ? undefined : this.bucketOf(previous.deviceId);
      const charged = here.available() >= 1 && (!there || there.available() >= 1) && here.take() && (!there || there.take());
      if (!charged) {
        this.refusedChanges.set(hash, { topic, platform, config, ...(via ? { via } : {}) });
        this.scheduleRetry();
        this.refuse(
          deviceId,
          where,
          `device ${deviceId} changes its configs faster than ${this.rate} per second (discovery.announcementsPerSecond); keeping the config it had until it slows down, then reading its latest`,
          hash,
        );
        return false;
      }
    }
    this.refusedChanges.delete(hash);

    if (previous) this.detach(previous);
    const category = validated.entity_category === 'config' || validated.entity_category === 'diagnostic' ? validated.entity_category : undefined;
    const record: Discovered = {
      hash,
      platform,
      topic,
      deviceTopic: via?.deviceTopic,
      uniqueId,
      deviceId,
      keyHint,
      ...(explicitKey(validated) ? { explicitKey: explicitKey(validated) } : {}),
      conversion,
      digest: validatedDigest,
      ...(category ? { category } : {}),
      ...(!deviceBlock?.identifiers.length && !deviceBlock?.connections.length ? { unnamed: true } : {}),
    };
    this.records.set(hash, record);
    if (uniqueId) this.uniqueIds.set(`${platform} ${uniqueId}`, hash);
    let set = this.byDevice.get(deviceId);
    if (!set) this.byDevice.set(deviceId, (set = new Set()));
    set.add(hash);
    if (deviceBlock) this.mergeDeviceInfo(deviceId, deviceBlock);
    this.dirty.add(deviceId);
    this.stats.accepted++;

    if ('noTool' in conversion) {
      this.logOnce(where, 'debug', `${platform} accepted, no tool: ${conversion.noTool}`);
    } else if (previous) {
      this.configLines.line(where, () => this.log?.debug({ topic: where, platform }, `updated ${platform} ${discoveryId}`));
    } else {
      this.configLines.line(where, () => this.log?.debug({ topic: where, platform, device: deviceId }, `discovered ${platform} ${discoveryId}`));
      this.added++;
    }
    if (!named) this.emit('processed', { topic: where, outcome: 'accept', hash, ...('noTool' in conversion ? { reason: conversion.noTool } : {}) });
    this.scheduleFlush();
    return true;
  }

  private remove(hash: string, topic: string, why: string): void {
    this.refusedChanges.delete(hash);
    const waiting = this.unnamed.get(hash);
    if (waiting) {
      this.unnamed.delete(hash);
      this.releaseUniqueId(hash, waiting.config);
    }
    const record = this.records.get(hash);
    if (!record) {
      this.configLines.line(topic, () => this.log?.debug({ topic, hash }, `nothing to remove for ${hash} (${why})`));
      this.emit('processed', { topic, outcome: 'ignore', hash, reason: 'nothing to remove' });
      return;
    }
    this.detach(record);
    this.records.delete(hash);
    // The same config announced again later must be read again.
    this.lastText.delete(record.topic);
    this.stats.removed++;
    this.removedSinceFlush++;
    this.configLines.line(topic, () => this.log?.debug({ topic, platform: record.platform }, `removed ${hash} (${why})`));
    this.emit('processed', { topic, outcome: 'remove', hash, reason: why });
    this.scheduleFlush();
  }

  /** Take a record out of the indexes (before replacing or removing it). */
  private detach(record: Discovered): void {
    if (record.uniqueId && this.uniqueIds.get(`${record.platform} ${record.uniqueId}`) === record.hash) {
      this.uniqueIds.delete(`${record.platform} ${record.uniqueId}`);
    }
    const set = this.byDevice.get(record.deviceId);
    set?.delete(record.hash);
    if (set && !set.size) {
      this.byDevice.delete(record.deviceId);
      this.deviceInfo.delete(record.deviceId);
    }
    this.entityIdByHash.delete(record.hash);
    this.dirty.add(record.deviceId);
  }

  private readonly buckets = new Map<string, TokenBucket>();
  private get rate(): number {
    return this.options.announcementsPerSecond ?? DISCOVERY_LIMITS.announcementsPerSecond;
  }

  private bucketOf(deviceId: string): TokenBucket {
    let bucket = this.buckets.get(deviceId);
    if (!bucket) {
      // Bounded: a publisher inventing device ids gets fresh buckets, but never an unbounded map.
      if (this.buckets.size >= MAX_COMPONENTS) this.buckets.clear();
      this.buckets.set(deviceId, (bucket = new TokenBucket(this.rate, this.rate * 10)));
    }
    return bucket;
  }

  /**
   * Read the changes refused for a rate again once the buckets of their devices have a token (the soonest of them),
   * each the latest of its component. Only as many of a device's as its bucket has tokens for are read; the rest wait
   * untouched: reading every held change again only to refuse it again was work a publisher could keep going with
   * nothing more than one burst of changes (thousands of conversions every 20 ms).
   */
  private scheduleRetry(): void {
    if (this.retryTimer || this.stopped || !this.refusedChanges.size) return;
    let wait = Number.POSITIVE_INFINITY;
    for (const hash of this.refusedChanges.keys()) {
      const dev = this.records.get(hash)?.deviceId;
      if (dev !== undefined) wait = Math.min(wait, this.bucketOf(dev).msUntilToken());
      if (wait === 0) break;
    }
    if (wait === Number.POSITIVE_INFINITY) wait = 0;
    this.retryTimer = setTimeout(() => this.retryRefused(), Math.max(1, wait));
    this.retryTimer.unref?.();
  }

  private retryRefused(): void {
    this.retryTimer = undefined;
    if (this.stopped) return;
    /** Tokens each device has for this round, asked once: a change read now spends one (process takes it). */
    const tokens = new Map<string, number>();
    for (const [hash, h] of [...this.refusedChanges]) {
      // Removed meanwhile: nothing to read.
      const dev = this.records.get(hash)?.deviceId;
      if (dev === undefined) {
        this.refusedChanges.delete(hash);
        continue;
      }
      const left = tokens.get(dev) ?? this.bucketOf(dev).available();
      if (left < 1) {
        tokens.set(dev, 0);
        continue;
      }
      tokens.set(dev, left - 1);
      this.refusedChanges.delete(hash);
      try {
        // Refused again (a move whose other device has no token): held again by process.
        if (!this.process(h.topic, h.platform, hash, h.config, h.via, true)) this.lastText.delete(h.topic);
      } catch (err) {
        this.reject(h.topic, `could not process it: ${(err as Error)?.message ?? String(err)}`, undefined, 'error');
      }
    }
    this.scheduleRetry();
  }

  /** A refusal by a bound: one log line per device (or for the source) a minute, not one per message. */
  private refuse(who: string, topic: string, reason: string, hash: string): void {
    this.stats.rejected++;
    const quiet = this.refusals.take(`bound ${who}`);
    if (quiet !== undefined) this.lines.line(topic, () => this.log?.warn({ topic, device: who, suppressed: quiet }, `discovery config ignored: ${reason}`));
    this.emit('processed', { topic, outcome: 'reject', hash, reason });
  }

  private reject(topic: string, reason: string, hash?: string, level: 'warn' | 'debug' | 'error' = 'warn'): void {
    this.stats.rejected++;
    this.logOnce(topic, level, `discovery config ignored: ${reason}`);
    this.emit('processed', { topic, outcome: 'reject', ...(hash ? { hash } : {}), reason });
  }

  private logOnce(topic: string, level: 'warn' | 'info' | 'debug' | 'error', message: string): void {
    const key = `${topic}\u0000${message}`;
    if (this.logged.has(key)) return;
    if (this.logged.size >= MAX_LOGGED) this.logged.clear();
    this.logged.add(key);
    (level === 'debug' ? this.debugLines : this.lines).line(topic, () => this.log?.[level]({ topic }, message));
  }

  // -------------------------------------------------------------------------
  // Devices and entities
  // -------------------------------------------------------------------------

  /** A device identified but not named, that has no id yet: its name may come in another config of the burst. */
  private awaitsName(device: DeviceBlock | undefined): boolean {
    if (!device?.identifiers.length || cleanText(device.name)) return false;
    if (Z2M_IDENTIFIER.test(device.identifiers[0]!)) return false;
    return this.ids.idOf(SOURCE_NAME, `ids ${device.identifiers[0]}`) === undefined;
  }

  /** A held config's unique_id, given up when it is removed or replaced before it was read. */
  private releaseUniqueId(hash: string, config: Json): void {
    const uniqueId = typeof config.unique_id === 'string' ? config.unique_id : undefined;
    const key = `${hash.split(' ', 1)[0]} ${uniqueId}`;
    if (uniqueId && this.uniqueIds.get(key) === hash) this.uniqueIds.delete(key);
  }

  /**
   * The id of the device a config belongs to. Its identity is the device block's first identifier (else its first
   * connection, else the config's unique_id, else its discovery id); the device ids store gives that identity an
   * id once, from the device's name (else the entity's name, else its object id), and keeps it across renames and
   * restarts. `legacy` is the id this identity had before ids came from names.
   */
  private deviceIdFor(platform: string, device: DeviceBlock | undefined, config: Json, uniqueId: string | undefined, discoveryId: string): string | undefined {
    let raw: string;
    let base: string;
    if (device?.identifiers.length) {
      raw = `ids ${device.identifiers[0]}`;
      base = device.identifiers[0];
    } else if (device?.connections.length) {
      raw = `cns ${device.connections[0].join(' ')}`;
      base = device.connections[0].join('_');
    } else if (uniqueId) {
      raw = `uid ${platform} ${uniqueId}`;
      base = uniqueId;
    } else {
      raw = `did ${platform} ${discoveryId}`;
      base = discoveryId;
    }
    const name =
      cleanText(device?.name) ??
      cleanText(config.name) ??
      (typeof config.object_id === 'string' ? config.object_id : undefined) ??
      discoveryId.split(' ').pop()!;
    // Zigbee2MQTT announces its devices here too, identified as `zigbee2mqtt_<IEEE address>`: the same device as
    // its bridge/devices entry, so the same id (the Zigbee2MQTT adapter's version of it wins, as it always did).
    const z2m = Z2M_IDENTIFIER.exec(device?.identifiers[0] ?? '');
    if (z2m) return this.ids.idFor(Z2M_SOURCE, { identity: z2m[1]!, name, legacy: slugDeviceId(base) });
    return this.ids.idFor(SOURCE_NAME, { identity: raw, name, legacy: slugDeviceId(base) });
  }

  /** A config of a Zigbee2MQTT device (its identifier) with a topic under the prefix Hearth reads Zigbee2MQTT at. */
  private readsZigbee2mqttDevice(config: Json): boolean {
    const prefix = this.options.zigbee2mqttPrefix;
    if (prefix === undefined || !Z2M_IDENTIFIER.test((config.device as DeviceBlock | undefined)?.identifiers[0] ?? '')) return false;
    return Object.entries(config).some(([k, v]) => k.endsWith('_topic') && typeof v === 'string' && v.startsWith(`${prefix}/`));
  }

  private keyHint(config: Json, uniqueId: string | undefined, objectId: string): string {
    return explicitKey(config) ?? (uniqueId && slugKey(uniqueId) ? uniqueId : objectId);
  }

  private mergeDeviceInfo(deviceId: string, block: DeviceBlock): void {
    const info = this.deviceInfo.get(deviceId) ?? {};
    const name = cleanText(block.name);
    if (name) info.name = name;
    const manufacturer = cleanText(block.manufacturer, 80);
    if (manufacturer) info.manufacturer = manufacturer;
    const model = cleanText(block.model, 80);
    if (model) info.model = model;
    const area = cleanText(block.suggested_area, 60);
    if (area) info.area = area;
    this.deviceInfo.set(deviceId, info);
  }

  private buildDevice(deviceId: string): Device | undefined {
    const hashes = [...(this.byDevice.get(deviceId) ?? [])].sort();
    const info = this.deviceInfo.get(deviceId) ?? {};
    const used = new Set<string>();
    const entities: Entity[] = [];
    for (const hash of hashes) {
      const record = this.records.get(hash);
      if (!record || 'noTool' in record.conversion) continue;
      const { body, nameSpec } = record.conversion;
      // The key an older Hearth gave it (kept where the database refers to it), and the one Home Assistant's way gives.
      const old = slugKey(record.keyHint) || slugKey(record.platform) || 'entity';
      const wanted = readableKey(record.explicitKey, ownName(nameSpec, info.name), deviceId, record.platform, old);
      const identity = record.uniqueId ? `uid ${record.platform} ${record.uniqueId}` : `did ${hash}`;
      let key = this.ids.entityKeys.keyFor(deviceId, { identity, wanted, legacy: [old, withSuffix(old, shortHash(hash))] });
      // The store keeps keys unique per device; one held twice here would be a bug, never a merged entity.
      if (used.has(key)) key = withSuffix(key, shortHash(hash));
      used.add(key);
      const entity: Entity = {
        ...body,
        attributes: { ...body.attributes },
        id: joined(deviceId, '.', key),
        key,
        name: entityName(nameSpec, info.name, key.replace(/_/g, ' ')),
        aliases: [],
        deviceId,
        ...(info.area ? { area: info.area } : {}),
        ...(record.category ? { category: record.category } : {}),
      };
      this.entityIdByHash.set(hash, entity.id);
      entities.push(entity);
    }
    if (!entities.length) return undefined;
    return {
      id: deviceId,
      name: info.name ?? entities[0].name,
      ...(info.area ? { area: info.area } : {}),
      ...(info.manufacturer ? { manufacturer: info.manufacturer } : {}),
      ...(info.model ? { model: info.model } : {}),
      source: `homeassistant discovery (${this.prefix})`,
      ...(hashes.every((h) => this.records.get(h)?.unnamed) ? { unnamed: true } : {}),
      entities,
    };
  }

  private scheduleFlush(): void {
    const now = Date.now();
    if (this.flushTimer) {
      if (now - this.firstPending >= FLUSH_MAX_WAIT_MS) return;
      clearTimeout(this.flushTimer);
    } else this.firstPending = now;
    this.flushTimer = setTimeout(() => this.flush(), FLUSH_QUIET_MS);
  }

  /** Push every pending change to the registry now (one update for the whole batch). */
  flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    // The configs held for their device's name: read now, once the burst that may name it has been.
    if (!this.stopped && this.unnamed.size) {
      const held = [...this.unnamed.entries()];
      this.unnamed.clear();
      for (const [hash, h] of held) {
        this.releaseUniqueId(hash, h.config);
        try {
          // Refused now (its unique_id taken meanwhile): the same config sent again must be read again.
          if (!this.process(h.topic, h.platform, hash, h.config, h.via, true)) this.lastText.delete(h.topic);
        } catch (err) {
          this.reject(h.topic, `could not process it: ${(err as Error)?.message ?? String(err)}`, undefined, 'error');
        }
      }
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    }
    if (!this.stopped && this.ctx && this.dirty.size) {
      for (const deviceId of this.dirty) {
        // This runs from a timer: nothing may escape it; a device that cannot be built keeps its last form.
        try {
          const device = this.buildDevice(deviceId);
          if (device) this.devices.set(deviceId, device);
          else this.devices.delete(deviceId);
        } catch (err) {
          this.log?.error({ err, device: deviceId }, `could not build the discovered device ${deviceId}`);
        }
      }
      this.dirty.clear();
      this.stats.flushes++;
      const devices = [...this.devices.values()];
      try {
        // The ids given to devices first seen in this burst, written in one transaction before anyone hears of them.
        this.ids.commit();
        const admitted = admitDiscovered(devices);
        for (const r of admitted.refused) {
          if (this.refusals.take(r.what) !== undefined)
            this.lines.line(r.what, () => this.log?.warn({ device: r.what, reason: r.reason }, `Home Assistant discovery: refused ${r.what}: ${r.reason}`));
        }
        this.ctx.registry.setSource(SOURCE_NAME, SOURCE_PRIORITY.homeassistant, admitted.devices);
      } catch (err) {
        this.log?.error({ err }, 'could not update the device registry from Home Assistant discovery');
      }
      const entities = devices.reduce((n, d) => n + d.entities.length, 0);
      const changes = { added: this.added, removed: this.removedSinceFlush };
      this.added = 0;
      this.removedSinceFlush = 0;
      const level = changes.added || changes.removed ? 'info' : 'debug';
      this.log?.[level]({ devices: devices.length, entities, ...changes }, `Home Assistant discovery: ${devices.length} devices, ${entities} entities`);
      this.emit('flushed', devices.length, entities);
    }
    for (const w of this.waiters.splice(0)) w();
  }
}

/** The factory src/devices/discovery/index.ts registers. */
export function homeAssistantAdapter(config: HearthConfig): DiscoveryAdapter | undefined {
  const ha = config.discovery?.homeassistant;
  if (!ha || ha.enabled === false) return undefined;
  const d = config.discovery;
  return new HomeAssistantDiscovery({
    prefix: discoveryPrefix('homeassistant', ha.prefix),
    birth: ha.birth !== false,
    maxEntities: d.maxEntities,
    maxEntitiesPerDevice: d.maxEntitiesPerDevice,
    announcementsPerSecond: d.announcementsPerSecond,
    ...(d.zigbee2mqtt?.enabled !== false ? { zigbee2mqttPrefix: discoveryPrefix('zigbee2mqtt', d.zigbee2mqtt?.prefix) } : {}),
  });
}
