// The same guarantee as the embedded broker's gate (src/mqtt/broker-access.ts), for a broker Hearth does not run:
// a mosquitto acl_file, or the roles of mosquitto's dynamic-security plugin, in which only Hearth's user
// writes command topics and devices write what Hearth reads of them. Without one, any client on that
// broker can command a device behind the policy's back.
import type { HearthConfig } from '../config/schema.js';
import type { Device } from './model.js';
import { commandTopicsOf } from './commands.js';
import { readTopicsOf } from './topic-owners.js';

/** What a Homie property announces about itself (Homie 3 to 5). */
const HOMIE_PROPERTY_ATTRIBUTES = ['$name', '$datatype', '$format', '$settable', '$retained', '$unit', '$target'];

export interface AclInput {
  config: HearthConfig;
  devices: readonly Device[];
  /** Hearth's user on that broker (mqtt.username). */
  hearthUser: string;
}

/** What devices may write: every topic Hearth reads, and the sources' own announcement topics. */
export function deviceWriteTopics({ config, devices }: AclInput): string[] {
  const commands = new Set(devices.flatMap((d) => d.entities.flatMap(commandTopicsOf)));
  const read = [...readTopicsOf(devices).keys()].filter((t) => !commands.has(t));
  const { homeassistant: ha, zigbee2mqtt: z2m, homie } = config.discovery;
  const sources: string[] = [];
  if (ha.enabled) sources.push(`${ha.prefix}/+/+/config`, `${ha.prefix}/+/+/+/config`);
  // Zigbee2MQTT: device states one level under the prefix (commands are <prefix>/<device>/set, two levels),
  // availability, and the bridge's own reports (its requests, bridge/request/#, stay out).
  if (z2m.enabled) sources.push(`${z2m.prefix}/+`, `${z2m.prefix}/+/availability`, `${z2m.prefix}/bridge/+`, `${z2m.prefix}/bridge/response/#`);
  // Homie: mosquitto has no filter for "a level that starts with $", and a property's attributes sit as deep as
  // its `set` topic, so each known device gets its device and node levels, and each known property its
  // attributes by name.
  if (homie.enabled) {
    const base = homie.prefix.split('/').length;
    for (const d of devices.filter((x) => x.source.startsWith('homie'))) {
      for (const e of d.entities) {
        const levels = e.stateTopic?.split('/') ?? [];
        if (levels.length !== base + 3) continue;
        const [dev, node, prop] = levels.slice(base);
        sources.push(`${homie.prefix}/${dev}/+`, `${homie.prefix}/${dev}/+/+`);
        for (const attr of HOMIE_PROPERTY_ATTRIBUTES) sources.push(`${homie.prefix}/${dev}/${node}/${prop}/${attr}`);
      }
    }
  }
  return [...new Set([...sources, ...read.sort()])];
}

export function mosquittoAclFile(input: AclInput): string {
  const lines = [
    '# mosquitto acl_file for Hearth (printed by `hearth broker acl`): only Hearth publishes on command topics.',
    '# Use it with `acl_file` in mosquitto.conf; print it again when devices change.',
    '',
    '# Every client but Hearth (anonymous ones, and users with no section of their own):',
    'topic read #',
    ...deviceWriteTopics(input).map((t) => `topic write ${t}`),
    '',
    '# Hearth itself: reads everything, commands devices after its policy decided.',
    `user ${input.hearthUser}`,
    'topic readwrite #',
    '',
  ];
  return lines.join('\n');
}

/** Roles for mosquitto's dynamic-security plugin: give Hearth's client `hearth`, every device client `hearth-device`. */
export function dynamicSecurityRoles(input: AclInput): object {
  const writes = deviceWriteTopics(input);
  return {
    defaultACLAccess: { publishClientSend: false, publishClientReceive: true, subscribe: false, unsubscribe: true },
    roles: [
      {
        rolename: 'hearth',
        textdescription: 'Hearth: reads everything, commands devices after its policy decided',
        acls: [
          { acltype: 'publishClientSend', topic: '#', priority: 0, allow: true },
          { acltype: 'subscribePattern', topic: '#', priority: 0, allow: true },
        ],
      },
      {
        rolename: 'hearth-device',
        textdescription: 'A device: reports what Hearth reads, never publishes a command',
        acls: [
          ...writes.map((topic) => ({ acltype: 'publishClientSend', topic, priority: 0, allow: true })),
          { acltype: 'subscribePattern', topic: '#', priority: 0, allow: true },
        ],
      },
    ],
    clients: [{ username: input.hearthUser, textname: 'Hearth', roles: [{ rolename: 'hearth' }] }],
  };
}
