// The one gate every discovered device passes before it reaches the
// registry. The adapters build ids and names from what devices announced;
// whatever an adapter did, here ids must be in the device-file character set
// (they reach a model unquoted: `front_door.lock`), and every name, area,
// alias, unit and device class is cleaned and capped (they reach a model as
// quoted device data). A device or entity whose id breaks the rules is
// refused, with the reason, rather than repaired into something else.
import { cleanUntrustedText, INVISIBLE } from '../util/untrusted-text.js';
import { type Device, deviceWith, type Entity, entityWith } from './model.js';
import { sharedParts } from './shared-parts.js';

/** Device ids, as in device files. */
export const DEVICE_ID_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Entity keys, as in device files. */
export const ENTITY_KEY_RE = /^[a-z0-9][a-z0-9_]{0,63}$/;
export const MAX_NAME_CHARS = 120;
export const MAX_AREA_CHARS = 60;
export const MAX_MAKER_CHARS = 80;
export const MAX_ALIASES = 8;
export const MAX_WORD_CHARS = 40;
/**
 * Most values an option list keeps (a select's options, a vacuum's fan speeds, an event's types), and their longest.
 * The longest real lists are Zigbee2MQTT's: an IR blaster's 235 air conditioner brands, a light's 220 effects.
 */
export const MAX_OPTIONS = 256;
export const MAX_OPTION_CHARS = 64;
/** Most entities one discovered device may bring (real ones have a few dozen). */
export const MAX_ENTITIES_PER_DEVICE = 256;

export interface Refusal {
  /** The device id, or `<device id>.<key>` for an entity, as announced (cleaned for the log). */
  what: string;
  reason: string;
}

const forLog = (text: string) => cleanUntrustedText(text, 80);

function optional(text: string | undefined, max: number): string | undefined {
  return cleanUntrustedText(text, max) || undefined;
}

/** The attributes of an entity that reads none, and the aliases of one with none: one shared, frozen object each. */
const NO_ATTRIBUTES: Entity['attributes'] = Object.freeze({});
const NO_ALIASES: string[] = Object.freeze([]) as unknown as string[];

function admitEntity(device: Device, entity: Entity, shared: ReturnType<typeof sharedParts>): Entity | Refusal {
  if (!ENTITY_KEY_RE.test(entity.key))
    return { what: forLog(entity.id), reason: `entity key ${JSON.stringify(forLog(entity.key))} is not [a-z0-9_], 1-64 characters` };
  if (entity.id !== `${device.id}.${entity.key}` || entity.deviceId !== device.id) {
    return { what: forLog(entity.id), reason: `entity id must be "${device.id}.${entity.key}"` };
  }
  const area = optional(entity.area, MAX_AREA_CHARS);
  const unit = optional(entity.unit, MAX_WORD_CHARS);
  const deviceClass = optional(entity.deviceClass, MAX_WORD_CHARS);
  const icon = optional(entity.icon, MAX_WORD_CHARS);
  const aliases = entity.aliases
    .map((a) => cleanUntrustedText(a, MAX_AREA_CHARS))
    .filter(Boolean)
    .slice(0, MAX_ALIASES);
  // A copy with the cleaned fields set (undefined where left out), not deleted: a `delete` made each entity a
  // dictionary, ~1.5 KiB (entityWith; issue 45).
  return entityWith(entity, {
    name: cleanUntrustedText(entity.name, MAX_NAME_CHARS) || entity.key.replace(/_/g, ' '),
    aliases: aliases.length ? aliases : NO_ALIASES,
    // Options are sent to the device as they are, so they cannot be cleaned: a value with hidden characters, or too
    // long to be a setting, is left out (it reaches a model in schemas and errors), and a list is capped.
    options: shared(Object.fromEntries(Object.entries(entity.options).map(([name, values]) => [name, cleanOptions(values)] as const))),
    // The parts most entities of a kind have alike, one frozen copy each for the list (shared-parts.ts).
    payloads: shared(entity.payloads),
    states: shared(entity.states),
    ranges: shared(entity.ranges),
    commandTopics: shared(entity.commandTopics),
    attributes: Object.keys(entity.attributes).length ? entity.attributes : NO_ATTRIBUTES,
    area,
    unit,
    deviceClass,
    icon,
  });
}

function cleanOptions(values: string[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    if (out.length >= MAX_OPTIONS) break;
    INVISIBLE.lastIndex = 0;
    if (typeof v === 'string' && v.length && v.length <= MAX_OPTION_CHARS && !INVISIBLE.test(v) && !out.includes(v)) out.push(v);
  }
  return out;
}

/** The devices as the registry may hold them, and what was refused and why. */
export function admitDiscovered(devices: Device[]): { devices: Device[]; refused: Refusal[] } {
  const admitted: Device[] = [];
  const refused: Refusal[] = [];
  // For this list only: a device's parts decide what is kept, so the table goes with the list.
  const shared = sharedParts(4096);
  for (const device of devices) {
    if (!DEVICE_ID_RE.test(device.id)) {
      refused.push({ what: forLog(device.id), reason: 'device id is not [a-z0-9_-], 1-64 characters' });
      continue;
    }
    if (device.entities.length > MAX_ENTITIES_PER_DEVICE) {
      refused.push({ what: forLog(device.id), reason: `${device.entities.length} entities, more than the ${MAX_ENTITIES_PER_DEVICE} a device may have` });
      continue;
    }
    const entities: Entity[] = [];
    for (const entity of device.entities) {
      const e = admitEntity(device, entity, shared);
      if ('reason' in e) refused.push(e);
      else entities.push(e);
    }
    if (!entities.length) continue;
    admitted.push(
      deviceWith(device, {
        name: cleanUntrustedText(device.name, MAX_NAME_CHARS) || device.id,
        entities,
        area: optional(device.area, MAX_AREA_CHARS),
        manufacturer: optional(device.manufacturer, MAX_MAKER_CHARS),
        model: optional(device.model, MAX_MAKER_CHARS),
      }),
    );
  }
  return { devices: admitted, refused };
}
