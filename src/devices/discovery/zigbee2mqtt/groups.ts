// Zigbee2MQTT's groups (<prefix>/bridge/groups) for their scenes: each scene
// a group stores becomes a scene entity that recalls it with
// {"scene_recall": <id>} on <prefix>/<group>/set, as Zigbee2MQTT documents.
// Groups are read only for their scenes (their members are devices of their
// own). The list is the broker's, so it is bounded and checked like a device's.
import { readableName } from '../../device-text.js';
import type { Device, Entity } from '../../model.js';
import { type Z2mOptions, z2mAvailability, z2mIdOf } from './device.js';
import { entityProblem } from './entity-check.js';
import { cleanName, deviceIdOf, isExactTopic, refusedFriendlyName } from './naming.js';
import { sceneId, sceneRecallEntity } from './scene-recall.js';

/** Most groups read, and scenes read per group (Zigbee allows 255 of each; a home has a few). */
export const MAX_GROUPS = 256;
export const MAX_GROUP_SCENES = 32;

export interface Z2mGroup {
  id?: unknown;
  friendly_name?: unknown;
  scenes?: Array<{ id?: unknown; name?: unknown }>;
}

/** A group whose scenes give no entity because of its name: its group id, its friendly name, and why. */
export interface RefusedGroup {
  id: number;
  name: string;
  reason: string;
}

/**
 * The groups that store scenes, as devices with one scene entity per scene; and the groups left out for their
 * name (a name Zigbee2MQTT itself refuses, or one that makes no topic), for the adapter to say so.
 */
export function groupSceneDevices(list: unknown, options: Z2mOptions): { devices: Device[]; refused: RefusedGroup[] } {
  const out: Device[] = [];
  const refused: RefusedGroup[] = [];
  if (!Array.isArray(list)) return { devices: out, refused };
  for (const raw of list.slice(0, MAX_GROUPS) as Z2mGroup[]) {
    if (!raw || typeof raw !== 'object' || !Array.isArray(raw.scenes) || !raw.scenes.length) continue;
    const gid = raw.id;
    const friendly = typeof raw.friendly_name === 'string' ? raw.friendly_name : '';
    if (typeof gid !== 'number' || !Number.isInteger(gid) || gid < 0 || gid > 65535 || !friendly.trim()) continue;
    const baseTopic = `${options.prefix}/${friendly}`;
    const why = isExactTopic(`${baseTopic}/set`)
      ? refusedFriendlyName(friendly, options.endpointsOf)
      : 'it makes no usable topic (it holds +, # or a NUL character, or is too long)';
    if (why) {
      refused.push({ id: gid, name: friendly, reason: why });
      continue;
    }
    // A group's identity is its group id (a rename keeps it), as a device's is its IEEE address.
    const deviceId = z2mIdOf(options, `group:${gid}`, friendly, deviceIdOf(`zigbee2mqtt_group_${gid}`)!);
    if (!deviceId) continue;
    const groupName = readableName(cleanName(friendly)) || `Group ${gid}`;
    // A group reports no availability of its own: the bridge's decides.
    const availability = z2mAvailability(baseTopic, { ...options, deviceAvailability: false });
    const entities: Entity[] = [];
    const seen = new Set<number>();
    for (const scene of raw.scenes.slice(0, MAX_GROUP_SCENES)) {
      const id = sceneId(scene?.id);
      if (id === undefined || seen.has(id)) continue;
      seen.add(id);
      const entity = sceneRecallEntity({ id, name: scene.name }, { deviceId, name: groupName, baseTopic, availability });
      if (!entityProblem(entity)) entities.push(entity);
    }
    if (entities.length) out.push({ id: deviceId, name: groupName, source: 'zigbee2mqtt', availability, entities });
  }
  return { devices: out, refused };
}
