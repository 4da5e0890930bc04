// A discovery adapter turns one convention's MQTT announcements (Home
// Assistant discovery, Zigbee2MQTT's bridge/devices, Homie) into devices in
// the registry. Device files outrank every adapter: same id, the file wins.
import { createHash } from 'node:crypto';
import type { HearthConfig } from '../../config/schema.js';
import type { Logger } from '../../log.js';
import type { MqttConnection } from '../../mqtt/connection.js';
import type { DeviceIds } from '../device-ids.js';
import type { Device } from '../model.js';
import type { DeviceRegistry } from '../registry.js';

export { MAX_ENTITIES_PER_DEVICE } from '../discovered.js';

/** Lower wins when two sources declare the same device id. */
export const SOURCE_PRIORITY = {
  files: 0,
  zigbee2mqtt: 10,
  homeassistant: 20,
  homie: 30,
} as const;

export interface DiscoveryContext {
  connection: MqttConnection;
  registry: DeviceRegistry;
  log: Logger;
  config: HearthConfig;
  /** The ids discovered devices were given when first seen (SQLite in the assembly); in memory for the adapter when not given. */
  deviceIds?: DeviceIds;
}

export interface DiscoveryAdapter {
  readonly name: string;
  /** Subscribe to the convention's topics and start adding devices. */
  start(ctx: DiscoveryContext): void;
  /** Unsubscribe and stop (devices already added stay until the bridge closes). */
  stop(): void;
}

/**
 * What a converted list of devices is, to tell an unchanged list from a new one: a digest of its JSON, not the JSON
 * (a 2,000-device list's is ~7 MiB, kept for as long as the list is: issue 45).
 */
export function listSignature(devices: Device[]): string {
  return createHash('sha256').update(JSON.stringify(devices)).digest('base64');
}
