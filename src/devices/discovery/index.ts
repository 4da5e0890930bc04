// The discovery adapters the config turns on. Each adapter lives in its own file.
import type { HearthConfig } from '../../config/schema.js';
import type { DiscoveryAdapter } from './adapter.js';
import { homeAssistantAdapter } from './homeassistant/adapter.js';
import { homieAdapter } from './homie/adapter.js';
import { zigbee2mqttAdapter } from './zigbee2mqtt/adapter.js';

export type AdapterFactory = (config: HearthConfig) => DiscoveryAdapter | undefined;

/** Adapters register here (one line each). */
export const ADAPTERS: AdapterFactory[] = [];
ADAPTERS.push(zigbee2mqttAdapter, homieAdapter);
ADAPTERS.push(homeAssistantAdapter);

export function createAdapters(config: HearthConfig): DiscoveryAdapter[] {
  return ADAPTERS.map((make) => make(config)).filter((a): a is DiscoveryAdapter => !!a);
}
