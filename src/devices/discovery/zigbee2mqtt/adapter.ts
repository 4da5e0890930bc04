// The Zigbee2MQTT discovery adapter. It reads the retained
// <prefix>/bridge/devices list, turns each device's exposes into entities and
// keeps the registry in step with every later list: new devices appear, a
// rename keeps the id and moves the topics, a device missing from the list is
// removed. <prefix>/bridge/info says whether device availability is on; both
// availability payload forms (`{"state":"online"}` and plain `online`) are read.
import { createHash } from 'node:crypto';
import { discoveryPrefix, type HearthConfig } from '../../../config/schema.js';
import { JsonLimitError, parseBoundedJson } from '../../../util/bounded-json.js';
import { firstFew, LineBudget } from '../../../util/line-budget.js';
import { PerKeyThrottle } from '../../../util/per-key-throttle.js';
import { DeviceIds } from '../../device-ids.js';
import { admitDiscovered } from '../../discovered.js';
import type { Device } from '../../model.js';
import { listSignature, MAX_ENTITIES_PER_DEVICE, SOURCE_PRIORITY, type DiscoveryAdapter, type DiscoveryContext } from '../adapter.js';
import { type ConvertedDevice, convertDevice, endpointNamesOfList, type Z2mOptions } from './device.js';
import { groupSceneDevices, type RefusedGroup } from './groups.js';
import { Refresher } from './refresh.js';
import { groupSkips, type Skip } from './skips.js';
import type { Z2mDevice } from './types.js';

export const SOURCE_NAME = 'zigbee2mqtt';
/** Largest bridge/devices list read (a few hundred devices take a megabyte or two; a list of every model zigbee-herdsman-converters knows, 11 MB). */
export const MAX_DEVICES_LIST_BYTES = 32 * 1024 * 1024;
/** Most entries of bridge/devices read; the rest are skipped. */
export const MAX_DEVICES = 10_000;
/** Largest bridge/info read. */
export const MAX_INFO_BYTES = 1024 * 1024;
/**
 * Devices converted per turn of the event loop. A list of 2,000 devices (10,000 entities) takes
 * ~50 ms to convert on this machine; in slices, calls, echoes and other messages go on in between.
 * A list no longer than this is converted at once.
 */
export const CONVERT_SLICE = 250;

type Listener = (topic: string, payload: Buffer) => void;

export interface Zigbee2mqttAdapterOptions {
  prefix: string;
  /** Wait this long for a device's state before asking with `/get` (0: never ask). */
  refreshAfterMs?: number;
}

export class Zigbee2mqttAdapter implements DiscoveryAdapter {
  readonly name = SOURCE_NAME;
  private ctx?: DiscoveryContext;
  private refresher?: Refresher;
  private readonly prefix: string;
  private readonly devicesTopic: string;
  private readonly infoTopic: string;
  private readonly groupsTopic: string;
  /** The groups list as last received (for its scenes), converted at each rebuild. */
  private groups: unknown = [];
  /** Groups left out for their name, by name -> reason: said once while the name stays (bridge/groups comes often). */
  private refusedGroups = new Map<string, string>();
  /** Whether Zigbee2MQTT publishes per-device availability; assumed until bridge/info says otherwise. */
  private deviceAvailability = true;
  private entries: Z2mDevice[] = [];
  private haveList = false;
  /** Last conversion by device id (or IEEE address for skipped entries), for change logging. */
  private last = new Map<string, { name?: string; skips: string }>();
  private signature = '';
  /** The newest rebuild: a slow one still converting is dropped when a newer list (or bridge/info) comes. */
  private generation = 0;
  private baseTopics = new Set<string>();
  private readonly refusals = new PerKeyThrottle();
  /** The lines about what a list changed, bounded per list and per second (report). */
  private readonly lines = new LineBudget();
  /** The debug lines (devices found, exposes with no tool) on a budget of their own: never at the cost of a warning's. */
  private readonly debugLines = new LineBudget();
  /** The ids devices were given when first seen (the assembly's store, else one of this adapter's own). */
  private ids = new DeviceIds(undefined);
  private readonly onMessage: Listener = (topic, payload) => this.handle(topic, payload);
  /**
   * A digest (sha256) of the last payload of bridge/devices, bridge/groups and bridge/info handled, by topic: the
   * same bytes again (a reconnect's replay, the broker's retained copy sent again for another reader of the topic)
   * mean what they meant, and are not converted again. Not the payload itself: a list may be 32 MB. Gone when its
   * handling fails, however late (failed): the same bytes again are then handled again.
   */
  private readonly lastHandled = new Map<string, string>();

  constructor(private readonly options: Zigbee2mqttAdapterOptions) {
    this.prefix = options.prefix.replace(/\/+$/, '');
    this.devicesTopic = `${this.prefix}/bridge/devices`;
    this.infoTopic = `${this.prefix}/bridge/info`;
    this.groupsTopic = `${this.prefix}/bridge/groups`;
  }

  start(ctx: DiscoveryContext): void {
    this.ctx = ctx;
    if (ctx.deviceIds) this.ids = ctx.deviceIds;
    if (this.options.refreshAfterMs !== 0) this.refresher = new Refresher(ctx.connection, ctx.log, this.options.refreshAfterMs ?? 1500);
    ctx.connection.on('message', this.onMessage);
    ctx.connection.subscribe([this.devicesTopic, this.infoTopic, this.groupsTopic]);
  }

  stop(): void {
    if (!this.ctx) return;
    this.ctx.connection.off('message', this.onMessage);
    this.ctx.connection.unsubscribe([this.devicesTopic, this.infoTopic, this.groupsTopic]);
    this.lastHandled.clear();
    this.refresher?.stop();
    this.ctx = undefined;
  }

  /** Everything one message means to this adapter. Exposed for tests. */
  handle(topic: string, payload: Buffer): void {
    if (!this.ctx) return;
    const bridge = topic === this.devicesTopic || topic === this.infoTopic || topic === this.groupsTopic;
    const digest = bridge ? createHash('sha256').update(payload).digest('base64') : undefined;
    if (digest !== undefined && this.lastHandled.get(topic) === digest) return;
    // Noted before it is handled: a long list's conversion goes on in later turns, and fails there (failed) if it does.
    if (digest !== undefined) this.lastHandled.set(topic, digest);
    try {
      if (topic === this.devicesTopic) this.onDevices(payload);
      else if (topic === this.infoTopic) this.onInfo(payload);
      else if (topic === this.groupsTopic) this.onGroups(payload);
      else if (this.baseTopics.has(topic)) this.refresher?.noteMessage(topic);
    } catch (err) {
      this.failed(topic, err instanceof RangeError ? 'it is nested too deeply' : 'it could not be handled', err);
    }
  }

  /**
   * Handling a bridge payload failed, now or in a later turn (a long list's conversion, its admission, the
   * registry's turns): the same bytes again are handled again (a reconnect's replay may succeed where this failed),
   * and a line says why.
   */
  private failed(topic: string, reason: string, err: unknown): void {
    this.lastHandled.delete(topic);
    this.refuse(topic, reason, err);
  }

  /** A message that was not used: one line per topic a minute, with the reason; what is known so far is kept. */
  private refuse(topic: string, reason: string, err?: unknown): void {
    const suppressed = this.refusals.take(topic);
    if (suppressed === undefined) return;
    this.ctx!.log[err ? 'error' : 'warn'](
      { topic, reason, ...(err ? { err } : {}), ...(suppressed ? { suppressed } : {}) },
      `zigbee2mqtt: skipped ${topic}: ${reason}; keeping the devices known so far`,
    );
  }

  private onDevices(payload: Buffer): void {
    const text = payload.toString('utf8').trim();
    if (!text) {
      // The retained list was cleared: Zigbee2MQTT is gone for good.
      this.entries = [];
    } else {
      let list: unknown;
      try {
        list = parseBoundedJson(text, { maxChars: MAX_DEVICES_LIST_BYTES });
      } catch (err) {
        if (!(err instanceof JsonLimitError)) throw err;
        this.refuse(this.devicesTopic, err.reason === 'not_json' ? 'bridge/devices is not JSON' : `bridge/devices is ${err.message}`);
        return;
      }
      if (!Array.isArray(list)) {
        this.refuse(this.devicesTopic, 'bridge/devices is not a list');
        return;
      }
      if (list.length > MAX_DEVICES) {
        this.refuse(this.devicesTopic, `bridge/devices lists ${list.length} devices; only the first ${MAX_DEVICES} are read`);
        list = list.slice(0, MAX_DEVICES);
      }
      const before = this.entries;
      this.entries = list as Z2mDevice[];
      try {
        this.rebuild(before);
      } catch (err) {
        // A list that cannot be converted must not replace the one that could.
        this.entries = before;
        throw err;
      }
      this.haveList = true;
      return;
    }
    this.haveList = true;
    this.rebuild();
  }

  private onInfo(payload: Buffer): void {
    let info: { config?: Record<string, any> } | undefined;
    try {
      info = parseBoundedJson(payload.toString('utf8'), { maxChars: MAX_INFO_BYTES }) as typeof info;
    } catch (err) {
      if (!(err instanceof JsonLimitError)) throw err;
      if (err.reason !== 'not_json') this.refuse(this.infoTopic, `bridge/info is ${err.message}`);
      return;
    }
    const config = info?.config;
    if (!config || typeof config !== 'object') return;
    // 2.x: availability: {enabled}; 1.x: availability: true | {...}, or the older advanced.availability_timeout.
    const a = config.availability;
    const legacyTimeout = Number(config.advanced?.availability_timeout ?? 0) > 0;
    const enabled = typeof a === 'boolean' ? a : a && typeof a === 'object' ? a.enabled !== false : legacyTimeout;
    if (enabled === this.deviceAvailability) return;
    this.deviceAvailability = enabled;
    this.ctx!.log.info(
      { deviceAvailability: enabled },
      `zigbee2mqtt: device availability is ${enabled ? 'on' : 'off'}; ${enabled ? 'each device and the bridge' : 'only the bridge'} decide whether a device is online`,
    );
    if (this.haveList) this.rebuild();
  }

  /** bridge/groups: the groups' scenes (the list is bounded like bridge/devices; a bad one keeps the scenes known so far). */
  private onGroups(payload: Buffer): void {
    const text = payload.toString('utf8').trim();
    let list: unknown = [];
    if (text) {
      try {
        list = parseBoundedJson(text, { maxChars: MAX_INFO_BYTES });
      } catch (err) {
        if (!(err instanceof JsonLimitError)) throw err;
        this.refuse(this.groupsTopic, err.reason === 'not_json' ? 'bridge/groups is not JSON' : `bridge/groups is ${err.message}`);
        return;
      }
      if (!Array.isArray(list)) {
        this.refuse(this.groupsTopic, 'bridge/groups is not a list');
        return;
      }
    }
    this.groups = list;
    if (this.haveList) this.rebuild();
  }

  private zOptions(): Z2mOptions {
    return { prefix: this.prefix, deviceAvailability: this.deviceAvailability, deviceId: this.ids.lookup(SOURCE_NAME) };
  }

  /**
   * Convert the whole list and hand the registry the result in one go. A long list is converted
   * CONVERT_SLICE devices per turn of the event loop (no stall of the home while 10,000 entities
   * are read), and handed over in turns of its own (the checks; the signature; the admission; the
   * registry's stages); a newer rebuild started meanwhile supersedes it.
   */
  private rebuild(before?: Z2mDevice[]): void {
    const generation = ++this.generation;
    const entries = this.entries;
    // A device or group named `<device>/<endpoint>` of a device of this list is refused (naming.ts refusedFriendlyName).
    const options: Z2mOptions = { ...this.zOptions(), endpointsOf: endpointNamesOfList(entries) };
    const converted: ConvertedDevice[] = [];
    let i = 0;
    const long = entries.length > CONVERT_SLICE;
    const step = (): void => {
      if (generation !== this.generation || !this.ctx) return;
      if (i < entries.length) {
        const end = long ? Math.min(entries.length, i + CONVERT_SLICE) : entries.length;
        for (; i < end; i++) converted.push(convertDevice(entries[i]!, options));
        // A long list: each slice, then the hand-over, in a turn of its own.
        if (long) return void setImmediate(later);
      }
      this.apply(converted, long, generation, options);
    };
    const later = (): void => {
      try {
        step();
      } catch (err) {
        // As for a list converted at once: the devices known so far stay.
        if (generation === this.generation && before && this.entries === entries) this.entries = before;
        this.failed(this.devicesTopic, 'it could not be handled', err);
      }
    };
    step();
  }

  /** The converted list, checked for duplicates and sizes, to the registry (and the state refresher). */
  private apply(list: ConvertedDevice[], long: boolean, generation: number, options: Z2mOptions): void {
    const devices: Device[] = [];
    const converted: ConvertedDevice[] = [];
    const seen = new Map<string, ConvertedDevice>();
    for (const c of list) {
      if (c.device && c.device.entities.length > MAX_ENTITIES_PER_DEVICE) {
        c.skipped.unshift({
          what: c.friendlyName ?? c.ieee,
          reason: 'too_many_entities',
          detail: `it exposes ${c.device.entities.length} entities, more than the ${MAX_ENTITIES_PER_DEVICE} a device may have`,
        });
        c.device = undefined;
      }
      if (c.device && seen.has(c.device.id)) {
        c.skipped.unshift({
          what: c.friendlyName ?? c.ieee,
          reason: 'duplicate_device',
          detail: `IEEE address ${c.ieee} is listed twice; the first entry was used`,
        });
        c.device = undefined;
      }
      if (c.device) {
        seen.set(c.device.id, c);
        devices.push(c.device);
      }
      converted.push(c);
    }
    this.report(converted);
    // Zigbee2MQTT never gives a group a device's name: when a list does, one of them is forged, and which cannot be
    // told from here. The registry holds them to the one rule: whoever held the `set` topic first keeps it, present
    // or away, and the other is refused until a person forgets the first (topic-owners.ts).
    const groups = groupSceneDevices(this.groups, options);
    for (const g of groups.devices) if (!seen.has(g.id)) devices.push(g);
    this.reportGroups(groups.refused);
    // The ids given to devices first seen in this list, written in one transaction before anyone hears of them.
    this.ids.commit();
    this.baseTopics = new Set(converted.filter((c) => c.device && c.baseTopic).map((c) => c.baseTopic!));
    // A long list: the signature and the admission take a turn of their own.
    if (long)
      setImmediate(() => {
        if (generation !== this.generation || !this.ctx) return;
        try {
          this.admit(devices, generation);
        } catch (err) {
          this.failed(this.devicesTopic, 'it could not be handled', err);
        }
      });
    else this.admit(devices);
    this.refresher?.consider(
      converted
        .filter((c) => c.device && c.baseTopic)
        .map((c) => ({ deviceId: c.device!.id, baseTopic: c.baseTopic!, properties: c.refresh, sleepy: c.sleepy })),
    );
  }

  /**
   * The devices admitted (discovered.ts) to the registry, unless they are what it has already. A long list's
   * `generation`: the admission takes a turn of its own after the signature's, and the registry works the list
   * out over turns, stopping if a newer list comes meanwhile (a device that one removed is never announced
   * again by this one).
   */
  private admit(devices: Device[], generation?: number): void {
    const signature = listSignature(devices);
    if (signature === this.signature) return;
    if (generation === undefined) return this.handOver(devices, signature);
    setImmediate(() => {
      if (generation !== this.generation || !this.ctx) return;
      try {
        this.handOver(devices, signature, generation);
      } catch (err) {
        this.failed(this.devicesTopic, 'it could not be handled', err);
      }
    });
  }

  private handOver(devices: Device[], signature: string, generation?: number): void {
    const ctx = this.ctx!;
    const admitted = admitDiscovered(devices);
    // Once a minute per device, and a few lines a list (util/line-budget.ts).
    this.lines.batch(
      admitted.refused.filter((r) => this.refusals.take(r.what) !== undefined),
      (r) => ctx.log.warn({ device: r.what, reason: r.reason }, `zigbee2mqtt: refused ${r.what}: ${r.reason}`),
      ({ rest, unlogged }) =>
        ctx.log.warn(
          { refusedDeviceCount: rest.length, devices: rest.slice(0, 5).map((r) => r.what), ...(unlogged ? { unlogged } : {}) },
          `zigbee2mqtt: refused ${rest.length} more devices: ${firstFew(rest.map((r) => `${r.what} (${r.reason})`))}`,
        ),
    );
    if (generation === undefined) {
      this.signature = signature;
      return ctx.registry.setSource(SOURCE_NAME, SOURCE_PRIORITY.zigbee2mqtt, admitted.devices);
    }
    // A long list: the registry works it out over turns of its own (the old set answers until the new one is in).
    // What it has is known when it is in: a list it stopped for a newer one is handed again if it comes again.
    ctx.registry
      .setSourceInTurns(SOURCE_NAME, SOURCE_PRIORITY.zigbee2mqtt, admitted.devices, () => generation === this.generation && !!this.ctx)
      .then((swapped) => {
        if (swapped) this.signature = signature;
      })
      .catch((err: unknown) => this.failed(this.devicesTopic, 'it could not be handled', err));
  }

  /**
   * A warning for each group left out for its name, once while that name stays in bridge/groups with that reason
   * (Zigbee2MQTT publishes the list again on every change to any group); a name that goes and comes back is said
   * again. Bounded like the device lines: a forged list of 256 such groups gives a few lines and a summary.
   */
  private reportGroups(refused: RefusedGroup[]): void {
    const log = this.ctx!.log;
    // A name listed twice is said once.
    const now = new Map<string, RefusedGroup>();
    for (const g of refused) if (!now.has(g.name)) now.set(g.name, g);
    const fresh = [...now.values()].filter((g) => this.refusedGroups.get(g.name) !== g.reason);
    this.refusedGroups = new Map([...now.values()].map((g) => [g.name, g.reason]));
    const named = (g: RefusedGroup) => JSON.stringify(g.name.slice(0, 60));
    this.lines.batch(
      fresh,
      (g) =>
        log.warn(
          { group: g.name.slice(0, 120), groupId: g.id, reason: g.reason },
          `zigbee2mqtt: left out group ${named(g)} (id ${g.id}) and its scenes: ${g.reason}`,
        ),
      ({ rest, unlogged }) =>
        log.warn(
          { refusedGroupCount: rest.length, groups: rest.slice(0, 5).map((g) => g.name.slice(0, 120)), ...(unlogged ? { unlogged } : {}) },
          `zigbee2mqtt: left out ${rest.length} more groups for their names: ${firstFew(rest.map((g) => `${named(g)} (id ${g.id}: ${g.reason})`))}`,
        ),
    );
  }

  /**
   * Log what changed since the last list: new, renamed, removed and skipped devices, once each; bounded
   * (util/line-budget.ts): a list renaming or adding thousands of devices gives a few lines each and one summary.
   */
  private report(converted: ConvertedDevice[]): void {
    const log = this.ctx!.log;
    const now = new Map<string, { name?: string; skips: string }>();
    let entities = 0;
    let skippedDevices = 0;
    const skipped: ConvertedDevice[] = [];
    const renamed: Array<{ c: ConvertedDevice; from?: string }> = [];
    const found: ConvertedDevice[] = [];
    const partly: ConvertedDevice[] = [];
    for (const c of converted) {
      const id = c.device?.id ?? `ieee:${c.ieee || c.friendlyName || '?'}`;
      const skips = JSON.stringify(c.skipped);
      now.set(id, { name: c.friendlyName, skips });
      const before = this.last.get(id);
      if (c.device) entities += c.device.entities.length;
      else skippedDevices++;
      if (before && before.skips === skips && before.name === c.friendlyName) continue;
      if (!c.device) {
        skipped.push(c);
        continue;
      }
      if (before && before.name !== c.friendlyName) renamed.push({ c, from: before.name });
      else if (!before) found.push(c);
      if (c.skipped.length && (!before || before.skips !== skips)) partly.push(c);
    }
    const left = [...this.last].filter(([id]) => !now.has(id) && !id.startsWith('ieee:'));
    for (const [id] of left) this.refresher?.forget(id);
    const lines = this.lines;
    const named = (c: ConvertedDevice) => JSON.stringify(c.friendlyName ?? c.ieee);
    lines.batch(
      skipped,
      (c) => {
        const s: Skip | undefined = c.skipped.find((x) => !x.partial) ?? c.skipped[0];
        // The coordinator is in every list and never a device: not worth more than a debug line.
        const level = s?.reason === 'coordinator' ? 'debug' : 'info';
        log[level](
          { device: c.friendlyName, ieee: c.ieee, reason: s?.reason, features: groupSkips(c.skipped) },
          `zigbee2mqtt: skipped ${named(c)}: ${s?.detail ?? 'no reason'}`,
        );
      },
      ({ rest, unlogged }) =>
        log.info(
          { skippedCount: rest.length, devices: rest.slice(0, 5).map((c) => c.friendlyName ?? c.ieee), ...(unlogged ? { unlogged } : {}) },
          `zigbee2mqtt: skipped ${rest.length} more entries: ${firstFew(rest.map(named))}`,
        ),
    );
    lines.batch(
      renamed,
      ({ c, from }) =>
        log.info({ device: c.device!.id, from, to: c.friendlyName }, `zigbee2mqtt: ${JSON.stringify(from)} was renamed ${JSON.stringify(c.friendlyName)}`),
      ({ rest, unlogged }) =>
        log.info(
          { renamedCount: rest.length, devices: rest.slice(0, 5).map((r) => r.c.device!.id), ...(unlogged ? { unlogged } : {}) },
          `zigbee2mqtt: ${rest.length} more devices were renamed: ${firstFew(rest.map((r) => `${JSON.stringify(r.from)} to ${named(r.c)}`))}`,
        ),
    );
    this.debugLines.batch(
      found,
      (c) => log.debug({ device: c.device!.id, name: c.friendlyName, entities: c.device!.entities.length }, `zigbee2mqtt: found ${named(c)}`),
      ({ rest }) =>
        log.debug(
          { foundCount: rest.length, devices: rest.slice(0, 5).map((c) => c.device!.id) },
          `zigbee2mqtt: found ${rest.length} more devices: ${firstFew(rest.map(named))}`,
        ),
    );
    this.debugLines.batch(
      partly,
      (c) =>
        log.debug(
          { device: c.device!.id, skipped: c.skipped.map((s) => ({ what: s.what, reason: s.reason, detail: s.detail })) },
          `zigbee2mqtt: ${c.skipped.length} exposes of ${named(c)} have no tool of their own`,
        ),
      ({ rest }) =>
        log.debug({ devices: rest.slice(0, 5).map((c) => c.device!.id) }, `zigbee2mqtt: ${rest.length} more devices have exposes with no tool of their own`),
    );
    lines.batch(
      left,
      ([id, before]) =>
        log.info({ device: id, name: before.name }, `zigbee2mqtt: ${JSON.stringify(before.name)} left the network (not in bridge/devices any more)`),
      ({ rest, unlogged }) =>
        log.info(
          { leftCount: rest.length, devices: rest.slice(0, 5).map(([id]) => id), ...(unlogged ? { unlogged } : {}) },
          `zigbee2mqtt: ${rest.length} more devices left the network (not in bridge/devices any more): ${firstFew(rest.map(([, b]) => JSON.stringify(b.name)))}`,
        ),
    );
    const changed = now.size !== this.last.size || [...now].some(([id, v]) => this.last.get(id)?.skips !== v.skips || this.last.get(id)?.name !== v.name);
    if (changed) {
      log.info(
        { devices: converted.length - skippedDevices, entities, skipped: skippedDevices },
        `zigbee2mqtt: ${converted.length - skippedDevices} devices with ${entities} entities${skippedDevices ? ` (${skippedDevices} entries skipped)` : ''}`,
      );
    }
    this.last = now;
  }
}

/** The factory `discovery/index.ts` registers. */
export function zigbee2mqttAdapter(config: HearthConfig): DiscoveryAdapter | undefined {
  const c = config.discovery?.zigbee2mqtt;
  if (!c?.enabled) return undefined;
  return new Zigbee2mqttAdapter({ prefix: discoveryPrefix('zigbee2mqtt', c.prefix) });
}
