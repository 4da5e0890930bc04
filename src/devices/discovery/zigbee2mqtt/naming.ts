// Keys, names, JSON paths and topics for discovered entities (shared by the
// Zigbee2MQTT and Homie adapters). Device-provided strings are data: control
// characters go and lengths are capped before they reach the model.
import { shortHash, slug } from '../../../util/slug.js';
import { cleanDeviceText } from '../../device-text.js';

/** Entity keys follow the device-file rule. */
export const KEY_RE = /^[a-z0-9][a-z0-9_]{0,63}$/;
/** Device ids follow the device-file rule. */
export const DEVICE_ID_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export const MAX_NAME = 120;

/** A device-provided name made safe to show (no control characters, capped). */
export function cleanName(text: string | undefined, max = MAX_NAME): string {
  return cleanDeviceText(text, max);
}

/** A device-file key (`[a-z0-9_]`, at most 64) from any text, or undefined if nothing is left. */
export function keyOf(text: string): string | undefined {
  let key = slug(text)
    .replace(/-/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (!key) return undefined;
  if (key.length > 64) key = `${key.slice(0, 57).replace(/_+$/, '')}_${shortHash(text)}`;
  return KEY_RE.test(key) ? key : undefined;
}

/** A device id (`[a-z0-9_-]`, at most 64) from any text, or undefined. */
export function deviceIdOf(text: string): string | undefined {
  let id = slug(text);
  if (!id) return undefined;
  if (id.length > 64) id = `${id.slice(0, 57).replace(/[_-]+$/, '')}_${shortHash(text)}`;
  return DEVICE_ID_RE.test(id) ? id : undefined;
}

/** Hands out unique keys within one device: `temperature`, then `temperature_2`, ... */
export class KeyAllocator {
  private readonly used = new Set<string>();

  take(wanted: string): string {
    let key = wanted;
    for (let n = 2; this.used.has(key); n++) {
      const suffix = `_${n}`;
      key = `${wanted.slice(0, 64 - suffix.length).replace(/_+$/, '')}${suffix}`;
    }
    this.used.add(key);
    return key;
  }

  has(key: string): boolean {
    return this.used.has(key);
  }
}

/**
 * The JSON path that reads (and writes) one top-level key of a JSON payload,
 * or undefined when the key cannot be written as a path (it holds both quote kinds or `]`).
 */
export function jsonKeyPath(key: string): string | undefined {
  if (!key || key.includes(']')) return undefined;
  if (/^[A-Za-z0-9_][^.[\]'"]*$/.test(key) && key.trim() === key) return key;
  if (!key.includes("'")) return `['${key}']`;
  if (!key.includes('"')) return `["${key}"]`;
  return undefined;
}

/**
 * The endpoint names the device a list calls `name` (by friendly name or IEEE address) answers to on
 * `<name>/<endpoint>/set`, or undefined when the list has no device of that name (endpointNamesOfList, device.ts).
 */
export type EndpointNamesOf = (name: string) => ReadonlySet<string> | undefined;

/**
 * Why Hearth refuses this friendly name for a device or group, in words, or undefined. Beside the topic's own rules
 * (isExactTopic):
 * - what Zigbee2MQTT's own check (its settings' validateFriendlyName) refuses, so a list that holds one is not
 *   Zigbee2MQTT's: `/` at either end, and `/<digits>` at the end, which Zigbee2MQTT reads as an endpoint
 *   (`Hall switch/2/set` is the Hall switch's endpoint 2: a device named so would command another device's relay);
 * - `<device>/<endpoint name>`, where the same list (`endpointsOf`) has that device with an endpoint of that name.
 *   Zigbee2MQTT before 1.36 refused every name ending in one of its fixed list of endpoint names (`/left`,
 *   `/right`, `/l1`, ...); since then it accepts them, and reads `<x>/<y>/set` as the device or group named `<x>/<y>`
 *   when it has one, else as endpoint `<y>` of device `<x>`. So `Hall switch/left` is a real name only where
 *   Zigbee2MQTT really has that device: on a forged list, its `set` topic is the Hall switch's left rocker, under
 *   another name and its rules. A list cannot prove which, so the name is refused where it is ambiguous: only when
 *   the list has the device with that endpoint (a bedside lamp named `Bedroom/Left` is no one's endpoint).
 */
export function refusedFriendlyName(name: string, endpointsOf?: EndpointNamesOf): string | undefined {
  if (name.startsWith('/') || name.endsWith('/')) return 'it begins or ends with /';
  if (/\/\d+$/.test(name)) return 'it ends in /<digits>, which Zigbee2MQTT refuses (it names an endpoint of another device)';
  const cut = name.lastIndexOf('/');
  if (cut > 0 && endpointsOf) {
    const device = name.slice(0, cut);
    const endpoint = name.slice(cut + 1);
    if (endpointsOf(device)?.has(endpoint)) {
      const topic = JSON.stringify(`${device.slice(0, 60)}/${endpoint.slice(0, 30)}/set`);
      return (
        `it ends in /${endpoint.slice(0, 30)}, an endpoint of ${JSON.stringify(device.slice(0, 60))}: Zigbee2MQTT sends ${topic} to that endpoint ` +
        'unless it really has a device or group of this name, which the list alone cannot prove'
      );
    }
  }
  return undefined;
}

/** An exact topic Hearth can subscribe to and publish on (no wildcards, no NUL, not too long). */
export function isExactTopic(topic: string): boolean {
  return topic.length > 0 && topic.length <= 512 && !/[#+\u0000]/.test(topic);
}

/** `Temperature`, `Child lock`; a label made from a property name when there is none. */
export function labelOf(label: string | undefined, name: string | undefined): string {
  const text = label?.trim() || (name ?? '').replace(/[_-]+/g, ' ').trim();
  return text ? text[0].toUpperCase() + text.slice(1) : '';
}
