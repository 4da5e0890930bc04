// The scenes a Zigbee2MQTT device stores on its endpoints (bridge/devices `endpoints: {"1": {scenes: [...]}}`), each
// an entity that recalls it with {"scene_recall": <id>} on exactly the endpoint that holds it.
//
// How Zigbee2MQTT picks the endpoint of a set (lib/extension/publish.ts parseTopic, lib/zigbee.ts
// resolveEntityAndEndpoint, lib/model/device.ts endpoint()):
// - `<device>/<x>/set`: `<device>/<x>` is first looked up whole as a device or group name; else it is split at its
//   last slash into a name and an endpoint. No device or group is named `Lamp/2` (Zigbee2MQTT refuses a name ending
//   in `/<digits>`, and so does Hearth: naming.ts refusedFriendlyName), so `Lamp/2/set` is Lamp's; Hearth refuses
//   `Lamp/left` too where Lamp has an endpoint `left` (Zigbee2MQTT accepts it since 1.36). A numeric endpoint is the
//   endpoint with that id (zh getEndpoint), whatever the definition says; a named one (`right`) goes through the
//   definition's endpoint() map, and is no endpoint when the map does not name it.
// - `<device>/set`: the endpoint called `default`: the definition's endpoint() map's `default` entry when it has one
//   (Paul Neuhaus NLG-RGBW_light: 2, a Philips Hue bulb: 11), else the device's first endpoint in interview order.
//   bridge/devices says neither (its endpoints are an object: JSON sorts their ids), so where a device lists more
//   than one endpoint, `<device>/set` may reach another endpoint than the lowest listed one.
// - scene_recall (zigbee-herdsman-converters toZigbee.scene_recall) sends genScenes recall to that endpoint.
// So a scene is recalled on `<device>/<endpoint id>/set`, the numeric form (exact on every version and definition),
// except on a device that lists a single endpoint (Zigbee2MQTT lists all of a device's endpoints): `<device>/set`
// can mean no other endpoint there, and no other device or group can own it.
import type { Availability, Entity } from '../../model.js';
import { cleanName } from './naming.js';
import { sceneId, sceneRecallEntity } from './scene-recall.js';
import type { Z2mDevice } from './types.js';

/** Most scenes read from one device's endpoints (Zigbee allows 16 per group and endpoint; a hostile list is cut). */
const MAX_SCENES = 32;
/** Most endpoints read for scenes. */
const MAX_ENDPOINTS = 16;

interface Owner {
  deviceId: string;
  name: string;
  baseTopic: string;
  availability: Availability;
}

/** What a person calls an endpoint: the definition's name for it (Zigbee2MQTT 2.x lists `name`: `right`), else its id. */
function endpointLabel(ep: { name?: unknown } | undefined, id: number): string {
  const name = typeof ep?.name === 'string' ? cleanName(ep.name, 30) : '';
  return name || `endpoint ${id}`;
}

/**
 * One entity per scene an endpoint stores. Its key says where it is, the same on every list: `scene_<id>` on the
 * device's first listed endpoint, `scene_<id>_ep<endpoint>` on another, so the same scene id on both rockers of a
 * double switch is two scenes, and a scene stored later under the same number on another endpoint never takes the
 * key (and so the rules, history and audit rows) of one already there. Nothing is stored: a forged list can make no
 * key stick. Scenes named alike on different endpoints are told apart by the endpoint: "Evening (left)",
 * "Evening (right)".
 */
export function endpointSceneEntities(raw: Z2mDevice, owner: Owner, taken: Set<string>): Entity[] {
  const endpoints = raw.endpoints && typeof raw.endpoints === 'object' && !Array.isArray(raw.endpoints) ? raw.endpoints : {};
  const keys = Object.keys(endpoints);
  // Zigbee endpoint ids are 1-240; Zigbee2MQTT lists them as integer keys (read in ascending order).
  const listed = keys.filter((key) => /^\d{1,3}$/.test(key) && Number(key) >= 1 && Number(key) <= 240).slice(0, MAX_ENDPOINTS);
  const onlyEndpoint = keys.length === 1;
  const found: Array<{ endpoint: number; label: string; id: number; name: string }> = [];
  for (const key of listed) {
    const ep = endpoints[key];
    const scenes = ep && typeof ep === 'object' && Array.isArray(ep.scenes) ? ep.scenes : [];
    const endpoint = Number(key);
    const ids = new Set<number>();
    for (const scene of scenes) {
      if (found.length >= MAX_SCENES) break;
      const id = sceneId(scene?.id);
      if (id === undefined || ids.has(id)) continue;
      ids.add(id);
      found.push({ endpoint, label: endpointLabel(ep, endpoint), id, name: typeof scene.name === 'string' ? cleanName(scene.name) : '' });
    }
  }
  /** Whether a word said of a scene (its endpoint's label, its name) is said on more than one endpoint. */
  const onSeveralEndpoints = (word: (s: (typeof found)[number]) => string) => {
    const endpointsOf = new Map<string, Set<number>>();
    for (const s of found) endpointsOf.set(word(s), (endpointsOf.get(word(s)) ?? new Set()).add(s.endpoint));
    return (s: (typeof found)[number]) => endpointsOf.get(word(s))!.size > 1;
  };
  // Two endpoints a list names alike ("left" twice) are told apart by their ids.
  const labelShared = onSeveralEndpoints((s) => s.label.toLowerCase());
  for (const s of found.filter(labelShared)) s.label = `endpoint ${s.endpoint}`;
  // A name (its fallback "<device> scene <id>" for an unnamed one) shared by scenes on different endpoints.
  const nameShared = onSeveralEndpoints((s) => (s.name || `scene ${s.id}`).toLowerCase());
  const out: Entity[] = [];
  const first = listed.length ? Number(listed[0]) : undefined;
  for (const s of found) {
    const key = s.endpoint === first ? `scene_${s.id}` : `scene_${s.id}_ep${s.endpoint}`;
    if (taken.has(key)) continue;
    const commandTopic = onlyEndpoint ? `${owner.baseTopic}/set` : `${owner.baseTopic}/${s.endpoint}/set`;
    const where = nameShared(s) ? s.label : undefined;
    out.push(sceneRecallEntity({ id: s.id, name: s.name, key, where }, { ...owner, commandTopic }));
  }
  return out;
}
