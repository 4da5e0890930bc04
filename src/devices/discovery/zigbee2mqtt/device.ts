// One entry of <prefix>/bridge/devices as a Hearth device. The id is the one
// its IEEE address was given when first seen, made from its friendly name then
// (`Living room/Ceiling light` -> `living_room_ceiling_light`; the device ids
// store, src/devices/device-ids.ts, keeps it), so a rename keeps the id and
// changes only the name and the topics.
import { joined } from '../../../util/interner.js';
import { deviceIdFromName, type DeviceIdLookup } from '../../device-ids.js';
import { readableName } from '../../device-text.js';
import { readJsonPath } from '../../json-path.js';
import type { Availability, AvailabilitySource, Device, Entity, PayloadTransform } from '../../model.js';
import { endpointSceneEntities } from './endpoint-scenes.js';
import { exposesToEntities } from './exposes.js';
import { cleanName, deviceIdOf, type EndpointNamesOf, isExactTopic, refusedFriendlyName } from './naming.js';
import type { Skip } from './skips.js';
import type { Z2mDevice, Z2mExpose } from './types.js';

/**
 * The availability word of a Zigbee2MQTT availability message, whichever form it takes:
 * `{"state":"online"}` (2.x, and 1.x with legacy_availability_payload: false) or plain `online`.
 */
export const availabilityWord: PayloadTransform = (message) => {
  const text = message.text().trim();
  if (!text.startsWith('{')) return text;
  const state = readJsonPath(message.json(), 'state');
  return typeof state === 'string' ? state : '';
};

export interface Z2mOptions {
  prefix: string;
  /** false when Zigbee2MQTT says device availability is off: only the bridge's own state counts then. */
  deviceAvailability: boolean;
  /**
   * The device ids store's lookup (src/devices/device-ids.ts): the id an IEEE address (or `group:<id>`) was given
   * when first seen. Without one (a converter on its own), the id is made from the name, unchecked.
   */
  deviceId?: DeviceIdLookup;
  /** The endpoints of the list's devices, by name (endpointNamesOfList): a name `<device>/<endpoint>` is refused. */
  endpointsOf?: EndpointNamesOf;
}

export interface ConvertedDevice {
  /** The IEEE address, lowercased ('' when the entry has none). */
  ieee: string;
  friendlyName?: string;
  device?: Device;
  /** Why the whole device, or parts of it, produced no tool. */
  skipped: Skip[];
  /** Gettable actuator properties, for one `/get` while their state is unknown. */
  refresh: string[];
  baseTopic?: string;
  /** Runs on battery: do not wake it with reads. */
  sleepy: boolean;
}

const IEEE_RE = /^0x[0-9a-f]{16}$/;

/**
 * A friendly name as Zigbee2MQTT's docs suggest writing it, `<area>/<device>` (`Living room/Ceiling light`;
 * with more levels, the one before the last is the area): the area the source says the device is in, and the
 * device's name within it, as its owner reads it. A name without a slash has no area.
 */
export function placeOfFriendlyName(whole: string): { area?: string; name: string } {
  const parts = whole
    .split('/')
    .map((p) => p.trim())
    .filter(Boolean);
  // The device's name as its owner reads it (`office/desk_fan` is "Desk fan"); the area is spelt by the home model.
  if (parts.length < 2) return { name: readableName(whole) };
  return { area: cleanName(parts[parts.length - 2], 60), name: readableName(parts[parts.length - 1]!) };
}

/** Most expose features walked per device for its endpoint names (a real device has a few dozen). */
const MAX_FEATURES_WALKED = 4096;

/**
 * The endpoint names each device of a list answers to on `<name>/<endpoint>/set`, looked up by its friendly name or
 * IEEE address (Zigbee2MQTT resolves a topic's device by either): `default` (every device has one), the names 2.x
 * lists under `endpoints`, and those its exposes are on (`state_left` is on `left`), which come from the same map of
 * its definition. Worked out only for a name asked for (a friendly name with a slash), once a list.
 */
export function endpointNamesOfList(entries: readonly Z2mDevice[]): EndpointNamesOf {
  const byName = new Map<string, Z2mDevice[]>();
  for (const e of entries) {
    if (!e || typeof e !== 'object') continue;
    for (const key of new Set([e.friendly_name, e.ieee_address])) {
      if (typeof key !== 'string' || !key) continue;
      const same = byName.get(key);
      if (same) same.push(e);
      else byName.set(key, [e]);
    }
  }
  const known = new Map<string, ReadonlySet<string>>();
  return (name) => {
    const devices = byName.get(name);
    if (!devices) return undefined;
    let names = known.get(name);
    if (!names) {
      const found = new Set(['default']);
      for (const d of devices) endpointNamesOf(d, found);
      known.set(name, (names = found));
    }
    return names;
  };
}

function endpointNamesOf(entry: Z2mDevice, into: Set<string>): void {
  const listed = entry.endpoints && typeof entry.endpoints === 'object' ? Object.values(entry.endpoints) : [];
  for (const ep of listed) if (ep && typeof ep === 'object' && typeof ep.name === 'string' && ep.name) into.add(ep.name);
  const exposes = entry.definition && typeof entry.definition === 'object' ? entry.definition.exposes : undefined;
  const stack: unknown[] = Array.isArray(exposes) ? exposes.slice(0, MAX_FEATURES_WALKED) : [];
  for (let walked = 0; stack.length && walked < MAX_FEATURES_WALKED; walked++) {
    const expose = stack.pop() as Z2mExpose | undefined;
    if (!expose || typeof expose !== 'object') continue;
    if (typeof expose.endpoint === 'string' && expose.endpoint) into.add(expose.endpoint);
    if (Array.isArray(expose.features)) for (const f of expose.features.slice(0, Math.max(0, MAX_FEATURES_WALKED - stack.length))) stack.push(f);
  }
}

/** The id an IEEE address gave a device before ids came from names (kept where a database still refers to it). */
export function z2mDeviceId(ieee: string): string | undefined {
  return deviceIdOf(`zigbee2mqtt_${ieee}`);
}

/** A Zigbee2MQTT device's (or group's) id: as the lookup has it, else made from its whole friendly name. */
export function z2mIdOf(options: Z2mOptions, identity: string, friendly: string, legacy: string): string | undefined {
  if (options.deviceId) return options.deviceId({ identity, name: friendly, legacy });
  return deviceIdFromName(friendly) ?? legacy;
}

function source(topic: string): AvailabilitySource {
  return { topic, transform: availabilityWord, payloadAvailable: 'online', payloadNotAvailable: 'offline' };
}

/** The bridge's own state, and the device's availability when Zigbee2MQTT publishes it: all must be online. */
export function z2mAvailability(baseTopic: string, options: Z2mOptions): Availability {
  const sources = [source(`${options.prefix}/bridge/state`)];
  if (options.deviceAvailability) sources.push(source(`${baseTopic}/availability`));
  return { sources, mode: 'all' };
}

export function convertDevice(entry: Z2mDevice, options: Z2mOptions): ConvertedDevice {
  const raw = entry && typeof entry === 'object' ? entry : ({} as Z2mDevice);
  const ieee = typeof raw.ieee_address === 'string' ? raw.ieee_address.trim().toLowerCase() : '';
  const friendly = typeof raw.friendly_name === 'string' ? raw.friendly_name : undefined;
  const out: ConvertedDevice = { ieee, friendlyName: friendly, skipped: [], refresh: [], sleepy: raw.power_source === 'Battery' };
  const what = friendly ?? (ieee || '(device)');
  const skip = (reason: string, detail: string) => {
    out.skipped.push({ what, reason, detail });
    return out;
  };
  if (!IEEE_RE.test(ieee)) return skip('malformed', `the entry has no IEEE address (got ${JSON.stringify(raw.ieee_address ?? null)})`);
  if (raw.type === 'Coordinator') return skip('coordinator', 'the coordinator is the Zigbee radio itself, not a device to control');
  if (raw.disabled === true) return skip('disabled', 'the device is disabled in Zigbee2MQTT');
  if (!raw.definition || typeof raw.definition !== 'object') {
    const why =
      raw.interview_completed === false || raw.interviewing ? 'its interview has not completed' : 'Zigbee2MQTT has no definition for it (unsupported)';
    return skip('no_definition', `no exposes: ${why}`);
  }
  if (!friendly?.trim()) return skip('bad_friendly_name', 'the device has no friendly name to address it by');
  const baseTopic = `${options.prefix}/${friendly}`;
  const refused = refusedFriendlyName(friendly, options.endpointsOf);
  if (!isExactTopic(`${baseTopic}/availability`) || refused) {
    return skip('bad_friendly_name', `friendly name ${JSON.stringify(friendly.slice(0, 60))} does not make a usable topic${refused ? `: ${refused}` : ''}`);
  }
  const exposes = Array.isArray(raw.definition.exposes) ? raw.definition.exposes : [];
  if (!exposes.length) return skip('no_exposes', 'its definition exposes nothing');
  const deviceId = z2mIdOf(options, ieee, friendly, z2mDeviceId(ieee)!);
  if (!deviceId) return skip('no_id', 'no device id could be given to it: discovery.max_devices devices have ids, and its own is taken');
  const whole = cleanName(friendly) || ieee;
  const { area, name } = placeOfFriendlyName(whole);
  const availability = z2mAvailability(baseTopic, options);
  const result = exposesToEntities(exposes, { deviceId, deviceName: name, baseTopic, availability });
  out.skipped.push(...result.skipped);
  out.refresh = result.refresh;
  const ids = new Set(result.entities.map((e) => e.key));
  // Firmware: Zigbee2MQTT reports {"update": {"state", "installed_version", "latest_version"}} in the device's state.
  if (raw.definition.supports_ota === true && !ids.has('update')) {
    result.entities.push(updateEntity(deviceId, name, baseTopic, availability));
  }
  result.entities.push(...endpointSceneEntities(raw, { deviceId, name, baseTopic, availability }, ids));
  out.baseTopic = baseTopic;
  if (!result.entities.length) {
    // The device-level reason first; the exposes' own reasons follow.
    out.skipped.unshift({
      what,
      reason: 'no_entities',
      detail: `none of its ${exposes.length} exposes maps to a tool: ${[...new Set(result.skipped.map((s) => s.reason))].join(', ')}`,
    });
    return out;
  }
  // Tools keep the names they were given from the whole friendly name (`living_room_ceiling_light`).
  // One flat string each (joined): a concatenation is kept as a pair of strings, twice the size.
  // Each entity is placed with its device, as the home model would place it: its copy of every entity (to write the
  // area in) was ~0.3 KiB an entity kept beside the source's (issue 45).
  if (area)
    for (const e of result.entities) {
      if (e.name.startsWith(name)) e.toolBase = joined(whole, '', e.name.slice(name.length));
      e.area ??= area;
    }
  out.device = {
    id: deviceId,
    identity: `zigbee2mqtt:${ieee}`,
    name,
    ...(area ? { area } : {}),
    manufacturer: raw.definition.vendor ? cleanName(raw.definition.vendor, 100) : undefined,
    model: raw.definition.model ? cleanName(raw.definition.model, 100) : undefined,
    source: 'zigbee2mqtt',
    availability,
    entities: result.entities,
  };
  return out;
}

function updateEntity(deviceId: string, name: string, baseTopic: string, availability: Availability): Entity {
  return {
    id: `${deviceId}.update`,
    key: 'update',
    kind: 'update',
    name: cleanName(`${name} firmware`),
    aliases: [],
    deviceId,
    deviceClass: 'firmware',
    stateTopic: baseTopic,
    valuePath: 'update.installed_version',
    attributes: {
      latest_version: { path: 'update.latest_version' },
      // idle, available, scheduled or updating.
      update_state: { path: 'update.state' },
    },
    commandFormat: 'json',
    commandTopics: {},
    payloads: {},
    states: {},
    ranges: {},
    options: {},
    availability,
  };
}
