// The discovery adapters the config turns on. Each adapter lives in its own file.
import { discoveryPrefix, type HearthConfig } from '../../config/schema.js';
import { topicMatches } from '../../mqtt/topic.js';
import type { DiscoveryAdapter } from './adapter.js';
import { homeAssistantAdapter } from './homeassistant/adapter.js';
import { discoverySubscriptions } from './homeassistant/topics.js';
import { homieAdapter } from './homie/adapter.js';
import { v4Filters } from './homie/v4.js';
import { v5Filters } from './homie/v5.js';
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
 * What a topic a discovery source reads itself is to it: `list` Zigbee2MQTT's bridge/devices, bridge/groups and
 * bridge/info; `config` a Home Assistant discovery config; `description` a Homie device's description (Homie 5's
 * `$description`, Homie 4's `$homie`, `$name`, `$nodes` and the node and property attributes); `state` a Homie
 * device's `$state`, which its entities read as their availability.
 */
export type SourceTopicKind = 'list' | 'config' | 'description' | 'state';

/** A topic a discovery source reads itself: what it is to the source, and the reason in words. */
export interface SourceTopic {
  kind: SourceTopicKind;
  reason: string;
}

/** Which topics the discovery sources read themselves (sourceTopics). */
export type SourceTopics = (topic: string) => SourceTopic | undefined;

/** The configured prefixes as the adapters read them (discoveryPrefix: `zigbee2mqtt/` is `zigbee2mqtt`). */
function prefixesOf(config: HearthConfig): { ha: string; z2m: string; homie: string } {
  const d = config.discovery;
  return {
    ha: discoveryPrefix('homeassistant', d.homeassistant.prefix),
    z2m: discoveryPrefix('zigbee2mqtt', d.zigbee2mqtt.prefix),
    homie: discoveryPrefix('homie', d.homie.prefix),
  };
}

/**
 * The topics the discovery sources read themselves, whether or not their discovery is on: Zigbee2MQTT's
 * bridge/devices, bridge/groups and bridge/info, Home Assistant's discovery configs, Homie's descriptions and states.
 * No entity reads its state there, nor its availability but on a Homie `$state` (the registry refuses it): what
 * comes there is the source's, and the broker's replay of such a topic (a reading read again: state-cache.ts)
 * reaches every listener of the connection, the source's adapter included, which would convert the whole list
 * again. (Zigbee2MQTT's bridge/state is read as state and availability, by Zigbee2MQTT's own entities among others:
 * it is a control topic, not one a source reads.)
 */
export function sourceTopics(config: HearthConfig): SourceTopics {
  const prefixes = prefixesOf(config);
  const bridge = new Set(['devices', 'groups', 'info'].map((t) => `${prefixes.z2m}/bridge/${t}`));
  const haPrefix = `${prefixes.ha}/`;
  const ha = discoverySubscriptions(prefixes.ha);
  const homiePrefix = `${prefixes.homie}/`;
  const homie = [...v4Filters(prefixes.homie), ...v5Filters(prefixes.homie)];
  // Asked of every state and availability topic at every rebuild (10,000 entities in a big home): the filters only
  // for a topic that may match them.
  return (topic) => {
    if (bridge.has(topic)) return { kind: 'list', reason: `a topic Zigbee2MQTT's discovery reads (${topic}: its whole list)` };
    if (topic.startsWith(haPrefix) && topic.endsWith('/config') && ha.some((f) => topicMatches(f, topic)))
      return { kind: 'config', reason: 'a topic Home Assistant discovery reads (a discovery config)' };
    if (topic.startsWith(homiePrefix) && topic.includes('/$') && homie.some((f) => topicMatches(f, topic))) {
      return topic.endsWith('/$state')
        ? { kind: 'state', reason: "a topic Homie discovery reads (a device's $state)" }
        : { kind: 'description', reason: "a topic Homie discovery reads (a device's description)" };
    }
    return undefined;
  };
}

/**
 * The control topics of the sources Hearth reads, whether or not their discovery is on: Home Assistant's
 * discovery configs and birth topic, Zigbee2MQTT's bridge topics. No entity may be commanded on them (the
 * registry refuses it). Devices may live under the discovery prefix (Home Assistant's own examples put
 * `~/set` there): only the config and status topics are control topics. Hearth's own topics are control topics
 * too: a device "commanded" on the daemon-status topic would have Hearth forge its own status.
 */
export function controlTopics(config: HearthConfig): (topic: string) => string | undefined {
  const { ha, z2m: z2mPrefix } = prefixesOf(config);
  const z2m = `${z2mPrefix}/bridge`;
  const status = config.mqtt.statusTopic;
  return (topic) => {
    if (topic === status || topic.startsWith(`${status}/`)) return `Hearth's own daemon-status topic (${status})`;
    if (topic === `${ha}/status` || (topic.startsWith(`${ha}/`) && topic.endsWith('/config')))
      return `a Home Assistant discovery topic (${ha}/…/config, ${ha}/status)`;
    if (topic === z2m || topic.startsWith(`${z2m}/`)) return `a Zigbee2MQTT bridge topic (${z2m}/#)`;
    return undefined;
  };
}
