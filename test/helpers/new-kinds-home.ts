// The kinds of #31 the demo home does not have (it has a robot vacuum and a siren): a scene, a lawn
// mower, a humidifier, a water heater, a doorbell's events and a presence tracker, as a device file declares them.
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Entity } from '../../src/devices/model.js';

const FILE = `
devices:
  - id: movie_time
    name: Movie time
    area: Living room
    entities:
      scene: { kind: scene, command_topic: k/scene/movie }
  - id: mower
    name: Lawn mower
    area: Garden
    entities:
      mower: { kind: lawn_mower, aliases: [mower, robot mower], state_topic: k/mower, command_topics: { start_mowing: k/mower/start, pause: k/mower/pause, dock: k/mower/dock } }
  - id: bedroom_humidifier
    name: Bedroom humidifier
    area: Bedroom
    entities:
      humidifier: { kind: humidifier, state_topic: k/hum, command_topic: k/hum/set, command_topics: { humidity: k/hum/target }, ranges: { humidity: { min: 30, max: 80 } } }
  - id: water_heater
    name: Water heater
    area: Utility room
    entities:
      heater: { kind: water_heater, aliases: [boiler, hot water], unit: "°C", state_topic: k/wh, command_topics: { mode: k/wh/mode, temperature: k/wh/t, power: k/wh/power }, options: { mode: ["off", eco, performance] } }
  - id: doorbell
    name: Doorbell
    area: Entrance
    entities:
      button: { kind: event, name: Doorbell, state_topic: k/doorbell, value_path: event_type, options: { event_type: [press] } }
  - id: anna_phone
    name: Anna
    entities:
      tracker: { kind: device_tracker, name: Anna, state_topic: k/anna }
`;

export function newKindsExtras(): Entity[] {
  const parsed = parseDeviceFile('new-kinds.yaml', FILE);
  if (!('devices' in parsed)) throw new Error(JSON.stringify(parsed.problems));
  return parsed.devices.flatMap((d) => d.entities);
}
