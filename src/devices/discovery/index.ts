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

/**
 * The control topics of the sources Hearth reads, whether or not their discovery is on: Home Assistant's
 * discovery configs and birth topic, Zigbee2MQTT's bridge topics. No entity may be commanded on them (the
 * registry refuses it). Devices may live under the discovery prefix (Home Assistant's own examples put
 * `~/set` there): only the config and status topics are control topics. Hearth's own topics are control topics
 * too: a device "commanded" on the daemon-status topic would have Hearth forge its own status.
 */
export function controlTopics(config: HearthConfig): (topic: string) => string | undefined {
  const ha = config.discovery.homeassistant.prefix;
  const z2m = `${config.discovery.zigbee2mqtt.prefix}/bridge`;
  const status = config.mqtt.statusTopic;
  return (topic) => {
    if (topic === status || topic.startsWith(`${status}/`)) return `Hearth's own daemon-status topic (${status})`;
    if (topic === `${ha}/status` || (topic.startsWith(`${ha}/`) && topic.endsWith('/config')))
      return `a Home Assistant discovery topic (${ha}/…/config, ${ha}/status)`;
    if (topic === z2m || topic.startsWith(`${z2m}/`)) return `a Zigbee2MQTT bridge topic (${z2m}/#)`;
    return undefined;
  };
}
