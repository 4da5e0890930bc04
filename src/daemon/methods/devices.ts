// `devices` and `sources`: the home's devices with their entities' state, and where devices were looked for;
// `devices.refused`: the entities left out for their command topic, and whose it is; `devices.forget`: a person
// says a device that is away is gone for good, and its topics and names are freed; `devices.confirm-move`: a person
// says a device its source moved (renamed in Zigbee2MQTT) really moved, and it takes its new topics.
import { demoEnabled, type Bridge } from '../../bridge.js';
import { stateJson, stateWords } from '../../present/state.js';
import { notDone, notFound } from '../protocol.js';
import type { ConfirmMoveAnswer, DeviceJson, SourcesAnswer } from '../schema.js';

export function devices(bridge: Bridge, now = Date.now()): DeviceJson[] {
  return bridge.registry.devices().map((d) => ({
    id: d.id,
    identity: d.identity ?? d.id,
    name: d.name,
    area: d.area ?? null,
    floor: d.floor ?? null,
    areaFrom: d.areaFrom ?? null,
    suggestedArea: d.suggestedArea ?? null,
    aliases: d.aliases ?? [],
    manufacturer: d.manufacturer ?? null,
    model: d.model ?? null,
    source: d.source,
    entities: d.entities.map((e) => {
      const s = bridge.cache.get(e.id);
      return { ...stateJson(e, s, now), words: stateWords(e, s) };
    }),
  }));
}

export function sources(bridge: Bridge): SourcesAnswer {
  const d = bridge.config.discovery;
  return {
    deviceFiles: { paths: bridge.paths, read: bridge.deviceFiles.length, problems: bridge.deviceProblems.length },
    discovery: {
      homeassistant: { enabled: d.homeassistant.enabled, topic: `${d.homeassistant.prefix}/#` },
      zigbee2mqtt: { enabled: d.zigbee2mqtt.enabled, topic: `${d.zigbee2mqtt.prefix}/bridge/devices` },
      homie: { enabled: d.homie.enabled, topic: `${d.homie.prefix}/#` },
    },
    demo: demoEnabled(bridge.config),
  };
}

/**
 * Forget a device that is away, or the entities a present device no longer has (its source dropped them): not found
 * when Hearth remembers no such device, not done while a source has the device and all it remembers of it.
 */
export function forgetDevice(bridge: Bridge, p: { device: string }): { device: string; forgotten: string[]; present?: true } {
  const { forgotten, present } = bridge.registry.forgetDevice(p.device);
  if (present && !forgotten.length)
    throw notDone(
      `${p.device} is in the home now (its source announces it): Hearth forgets only a device that is gone. Remove it at its source first (Zigbee2MQTT, its discovery config), then forget it`,
    );
  if (!forgotten.length) throw notFound(`Hearth remembers no device ${JSON.stringify(p.device)} (a device's id, as \`hearth devices\` or a refusal names it)`);
  bridge.log.info(
    { device: p.device, forgotten, ...(present ? { present } : {}) },
    present
      ? `forgot what ${p.device} no longer has at a person's word: those entities' topics and names are free`
      : `forgot ${p.device} at a person's word: its command topics and names are free`,
  );
  return { device: p.device, forgotten, ...(present ? { present: true as const } : {}) };
}

/**
 * A person confirms a device's move (a rename in Zigbee2MQTT): its entities take the command topics their source
 * gives them now and let go of the old ones. `to`: the topic the person was shown; refused when the device is going
 * elsewhere now. Not found when no move of this device waits.
 */
export function confirmMove(bridge: Bridge, p: { device: string; to?: string }): ConfirmMoveAnswer {
  const { moved, going } = bridge.registry.confirmMove(p.device, p.to);
  if (!going.length)
    throw notFound(`no move of ${JSON.stringify(p.device)} waits for a confirmation (a device's id, as \`hearth devices\` or a refusal names it)`);
  if (!moved.length)
    throw notDone(`${p.device} is being moved to ${going.join(', ')} now, not to ${p.to}: look again (\`hearth devices\`) and confirm what you see`);
  bridge.log.info({ device: p.device, moved }, `${p.device} moved at a person's word: it holds ${going.join(', ')} now, and its old command topics are free`);
  return { device: p.device, moved: moved.map((m) => ({ entity: m.entity, from: [...m.from], to: [...m.to] })) };
}
