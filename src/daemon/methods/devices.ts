// `devices` and `sources`: the home's devices with their entities' state, and where devices were looked for.
import { demoEnabled, type Bridge } from '../../bridge.js';
import { stateJson, stateWords } from '../../present/state.js';
import type { DeviceJson, SourcesAnswer } from '../schema.js';

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
