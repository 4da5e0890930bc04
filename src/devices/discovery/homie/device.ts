// A Homie device description as a Hearth device. Each property is one entity:
//   boolean  settable -> switch ("true"/"false"; non-retained: a button)   read-only -> binary_sensor
//   integer, float  settable with a $format range -> number               read-only -> sensor
//   enum     settable -> select                                           read-only -> sensor
//   string, color, datetime, duration, json -> sensor (setting them has no tool)
// Values are read from the property topic, commands go plain to `<property>/set`.
// Homie 5 devices publish `<property>/$target` when a command is accepted and the
// value is still on its way; it is kept as the `target` attribute, and the command
// counts as confirmed when the property value itself reaches the commanded value.
import { joined } from '../../../util/interner.js';
import type { Availability, Device, Entity, EntityKind, PayloadTransform } from '../../model.js';
import { entityProblem } from '../zigbee2mqtt/entity-check.js';
import { cleanName, DEVICE_ID_RE, deviceIdOf, isExactTopic, KeyAllocator, keyOf, labelOf } from '../zigbee2mqtt/naming.js';
import type { Skip } from '../zigbee2mqtt/skips.js';
import { parseEnum, parseRange } from './format.js';
import { READY_STATES, type HomieDescription, type HomieProperty } from './types.js';

export interface HomieDeviceOptions {
  /** `homie` (v4) or `homie/5` (v5): the device topic is `<base>/<id>`. */
  base: string;
}

export interface ConvertedHomie {
  device?: Device;
  skipped: Skip[];
}

const UNIT_CLASS: Record<string, string> = {
  '°C': 'temperature',
  '°F': 'temperature',
  W: 'power',
  kW: 'power',
  Wh: 'energy',
  kWh: 'energy',
  V: 'voltage',
  A: 'current',
  Pa: 'pressure',
  hPa: 'pressure',
  lx: 'illuminance',
};

export function homieDeviceId(id: string): string | undefined {
  return DEVICE_ID_RE.test(id) ? id : deviceIdOf(id);
}

/** A `$state` word as available (`ready`) or not (`lost`); an empty payload stays empty (a cleared topic). */
export const stateWord: PayloadTransform = (message) => {
  const word = message.text().trim();
  return !word ? '' : READY_STATES.has(word) ? 'ready' : 'lost';
};

/** Availability from `$state`: ready (and alert) is available; lost, disconnected, init and sleeping are not. */
export function homieAvailability(stateTopic: string): Availability {
  return { sources: [{ topic: stateTopic, transform: stateWord, payloadAvailable: 'ready', payloadNotAvailable: 'lost' }], mode: 'latest' };
}

export function homieToDevice(desc: HomieDescription, options: HomieDeviceOptions): ConvertedHomie {
  const skipped: Skip[] = [];
  const deviceId = homieDeviceId(desc.id);
  if (!deviceId) return { skipped: [{ what: desc.id, reason: 'bad_id', detail: `device id ${JSON.stringify(desc.id.slice(0, 40))} cannot be a Hearth id` }] };
  const deviceTopic = `${options.base}/${desc.id}`;
  const name = cleanName(desc.name) || desc.id;
  const availability = homieAvailability(`${deviceTopic}/$state`);
  const keys = new KeyAllocator();
  // Property names shared by two nodes need the node's name to tell them apart.
  const counts = new Map<string, number>();
  for (const n of desc.nodes)
    for (const p of n.properties) {
      const label = labelOf(p.name, p.id).toLowerCase();
      counts.set(label, (counts.get(label) ?? 0) + 1);
    }
  const entities: Entity[] = [];
  for (const node of desc.nodes) {
    for (const prop of node.properties) {
      const what = `${node.id}/${prop.id}`;
      const skip = (reason: string, detail: string, partial = false) => skipped.push({ what, reason, detail, ...(partial ? { partial } : {}) });
      const topic = `${deviceTopic}/${node.id}/${prop.id}`;
      if (!isExactTopic(`${topic}/$target`)) {
        skip('bad_id', `${what} does not make a usable topic`);
        continue;
      }
      const label = labelOf(prop.name, prop.id);
      const ambiguous = (counts.get(label.toLowerCase()) ?? 0) > 1 || (desc.nodes.length > 1 && !prop.name);
      const nodeLabel = labelOf(node.name, node.id);
      const entityName = cleanName(`${name} ${ambiguous ? `${nodeLabel} ` : ''}${label}`);
      const mapped = mapProperty(prop, topic, desc.version === 5, skip);
      if (!mapped) continue;
      const key = keys.take(keyOf(`${node.id}_${prop.id}`) ?? 'property');
      const entity: Entity = {
        id: joined(deviceId, '.', key),
        key,
        name: entityName || name,
        aliases: [],
        deviceId,
        attributes: {},
        commandFormat: 'plain',
        commandTopics: {},
        payloads: {},
        states: {},
        ranges: {},
        options: {},
        availability,
        ...mapped,
      };
      const problem = entityProblem(entity);
      if (problem) {
        skip('invalid', `would not make a valid ${entity.kind}: ${problem}`);
        continue;
      }
      entities.push(entity);
    }
  }
  if (!entities.length) {
    skipped.unshift({
      what: desc.id,
      reason: 'no_entities',
      detail: desc.nodes.length ? 'none of its properties maps to a tool (see the other reasons)' : 'it announces no nodes',
    });
    return { skipped };
  }
  return {
    device: { id: deviceId, name, source: desc.version === 5 ? 'homie5' : 'homie', availability, entities },
    skipped,
  };
}

type Mapped = Partial<Entity> & { kind: EntityKind };

function mapProperty(prop: HomieProperty, topic: string, v5: boolean, skip: (reason: string, detail: string, partial?: boolean) => void): Mapped | undefined {
  const datatype = (prop.datatype ?? 'string').trim().toLowerCase();
  const unit = prop.unit ? cleanName(prop.unit, 32) || undefined : undefined;
  const set = `${topic}/set`;
  // A non-retained property reports momentary events; settable, it is a trigger.
  const stateless = prop.retained === false;
  const target: Entity['attributes'] = v5 ? { target: { topic: `${topic}/$target` } } : {};
  const sensor = (extra: Partial<Entity> = {}): Mapped => ({
    kind: 'sensor',
    stateTopic: topic,
    unit,
    deviceClass: unit ? UNIT_CLASS[unit] : undefined,
    ...extra,
  });
  const readOnlyToo = (reason: string, why: string): Mapped => {
    skip(reason, `${why}; only its value is offered`, true);
    return sensor();
  };
  switch (datatype) {
    case 'boolean':
      if (!prop.settable) return { kind: 'binary_sensor', stateTopic: topic, states: { on: 'true', off: 'false' } };
      if (stateless) return { kind: 'button', commandTopic: set, payloads: { press: 'true' } };
      return {
        kind: 'switch',
        stateTopic: topic,
        commandTopic: set,
        attributes: { ...target },
        payloads: { on: 'true', off: 'false' },
        states: { on: 'true', off: 'false' },
      };
    case 'integer':
    case 'float': {
      if (!prop.settable) return sensor();
      const range = parseRange(prop.format, datatype === 'integer');
      if (!range) return readOnlyToo('no_range', `${prop.id} is settable but its $format ${JSON.stringify(prop.format ?? '')} gives no min:max range`);
      return {
        kind: 'number',
        stateTopic: topic,
        commandTopic: set,
        attributes: { ...target },
        unit,
        ranges: { value: range },
      };
    }
    case 'enum': {
      const values = parseEnum(prop.format);
      if (!values.length) {
        if (!prop.settable) return sensor();
        return readOnlyToo('empty_enum', `${prop.id} is an enum whose $format lists no values`);
      }
      if (!prop.settable) return sensor();
      if (stateless && values.length === 1) return { kind: 'button', commandTopic: set, payloads: { press: values[0] } };
      return {
        kind: 'select',
        stateTopic: topic,
        commandTopic: set,
        attributes: { ...target },
        options: { value: values },
      };
    }
    case 'color':
      if (prop.settable) return readOnlyToo('color', `${prop.id} is a colour, and Hearth has no colour command`);
      return sensor();
    case 'string':
    case 'datetime':
    case 'duration':
    case 'json':
      if (prop.settable) return readOnlyToo('text_command', `${prop.id} takes free ${datatype === 'string' ? 'text' : datatype}, and no tool kind sets it`);
      return sensor();
    default:
      skip('unknown_datatype', `${prop.id} has the unknown $datatype ${JSON.stringify(datatype.slice(0, 20))}`);
      return undefined;
  }
}
