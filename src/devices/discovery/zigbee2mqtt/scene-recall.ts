// A scene stored in Zigbee (on a device's endpoint or in a group) as the entity that recalls it: Zigbee2MQTT
// documents {"scene_recall": <id>} on <base topic>/set. Named by the scene's own name, else "<owner> scene <id>";
// "<owner> <scene>" is its alias, so "activate the lounge movie" finds it too. A scene named like one on another
// endpoint of the same device says which: "Evening (right)".
import type { Availability, Entity } from '../../model.js';
import { cleanName } from './naming.js';

/** A scene id as Zigbee stores it (0-255), or undefined when the broker's list says something else. */
export function sceneId(raw: unknown): number | undefined {
  return typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= 255 ? raw : undefined;
}

export function sceneRecallEntity(
  scene: { id: number; name?: unknown; key?: string; where?: string },
  owner: { deviceId: string; name: string; baseTopic: string; availability: Availability; commandTopic?: string },
): Entity {
  const given = typeof scene.name === 'string' ? cleanName(scene.name) : '';
  const where = scene.where ? ` (${scene.where})` : '';
  const sceneName = given && cleanName(`${given}${where}`);
  const key = scene.key ?? `scene_${scene.id}`;
  return {
    id: `${owner.deviceId}.${key}`,
    key,
    kind: 'scene',
    name: sceneName || cleanName(`${owner.name} scene ${scene.id}${where}`),
    aliases: sceneName ? [cleanName(`${owner.name} ${sceneName}`)] : [],
    deviceId: owner.deviceId,
    attributes: {},
    commandTopic: owner.commandTopic ?? `${owner.baseTopic}/set`,
    commandFormat: 'json',
    valuePath: 'scene_recall',
    commandTopics: {},
    payloads: { activate: String(scene.id) },
    payloadLiterals: true,
    states: {},
    ranges: {},
    options: {},
    availability: owner.availability,
  };
}
