// Discovery topics as Home Assistant reads them:
//   <prefix>/<component>/[<node_id>/]<object_id>/config
//   <prefix>/device/[<node_id>/]<object_id>/config      (device-based, with `cmps`)
// node_id and object_id are [a-zA-Z0-9_-]+; a topic that ends in `config` but
// breaks that rule is an "illegal discovery topic" (logged, ignored).

/** The MQTT platforms Home Assistant's discovery listens for. */
export const SUPPORTED_COMPONENTS: ReadonlySet<string> = new Set([
  'alarm_control_panel',
  'binary_sensor',
  'button',
  'camera',
  'climate',
  'cover',
  'device_automation',
  'device_tracker',
  'event',
  'fan',
  'humidifier',
  'image',
  'lawn_mower',
  'light',
  'lock',
  'notify',
  'number',
  'scene',
  'select',
  'sensor',
  'siren',
  'switch',
  'tag',
  'text',
  'update',
  'vacuum',
  'valve',
  'water_heater',
]);

/** Platforms that are not entities (HA does not ask them for a unique_id in device-based payloads). */
export const NON_ENTITY_PLATFORMS: ReadonlySet<string> = new Set(['device_automation', 'tag']);

export const DEVICE_COMPONENT = 'device';

// HA: `(?P<component>\w+)/(?:(?P<node_id>[a-zA-Z0-9_-]+)/)?(?P<object_id>[a-zA-Z0-9_-]+)/config`
// (Python's \w is Unicode-aware, hence \p{L}\p{N}_ here.)
const TOPIC_MATCHER = /^([\p{L}\p{N}_]+)\/(?:([a-zA-Z0-9_-]+)\/)?([a-zA-Z0-9_-]+)\/config$/u;

export type ParsedTopic =
  | { kind: 'discovery'; component: string; nodeId?: string; objectId: string; discoveryId: string }
  /** Ends in `config` but breaks the character rules. */
  | { kind: 'illegal' }
  /** Not a discovery topic at all (another suffix, another prefix). */
  | { kind: 'other' };

export function parseDiscoveryTopic(prefix: string, topic: string): ParsedTopic {
  if (!topic.startsWith(`${prefix}/`)) return { kind: 'other' };
  const rest = topic.slice(prefix.length + 1);
  const m = TOPIC_MATCHER.exec(rest);
  if (!m) return rest.endsWith('config') ? { kind: 'illegal' } : { kind: 'other' };
  const [, component, nodeId, objectId] = m;
  return {
    kind: 'discovery',
    component,
    ...(nodeId ? { nodeId } : {}),
    objectId,
    discoveryId: nodeId ? `${nodeId} ${objectId}` : objectId,
  };
}

/** The wildcard subscriptions that cover every discovery topic under a prefix. */
export function discoverySubscriptions(prefix: string): string[] {
  return [`${prefix}/+/+/config`, `${prefix}/+/+/+/config`];
}

/** Where Home Assistant's birth message goes. */
export function birthTopic(prefix: string): string {
  return `${prefix}/status`;
}

/** A prefix must be an exact topic (no wildcards, no empty level). */
export function validPrefix(prefix: string): string | undefined {
  if (!prefix) return 'the discovery prefix is empty';
  if (/[#+\u0000]/.test(prefix)) return `the discovery prefix ${JSON.stringify(prefix)} holds an MQTT wildcard`;
  if (prefix.split('/').some((level) => level === '')) return `the discovery prefix ${JSON.stringify(prefix)} has an empty level`;
  if (prefix.startsWith('$')) return `the discovery prefix ${JSON.stringify(prefix)} starts with $`;
  return undefined;
}
