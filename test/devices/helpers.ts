// What the device tests repeat: a light as Zigbee2MQTT exposes one, built in code.
import type { Entity } from '../../src/devices/model.js';

/**
 * `<device>.<key>`, a light with JSON state and commands on `z/<device>` (`z/<device>/set`), brightness 0-254 and
 * xy colour, changed by `over`.
 */
export const zigbeeLight = (device: string, key: string, name: string, over: Partial<Entity> = {}): Entity => ({
  id: `${device}.${key}`,
  key,
  kind: 'light',
  name,
  aliases: [],
  deviceId: device,
  stateTopic: `z/${device}`,
  valuePath: 'state',
  attributes: { brightness: { path: 'brightness' }, color_x: { path: 'color.x' }, color_y: { path: 'color.y' } },
  commandTopic: `z/${device}/set`,
  commandFormat: 'json',
  commandTopics: {},
  payloads: { on: 'ON', off: 'OFF' },
  states: { on: 'ON', off: 'OFF' },
  ranges: { brightness: { min: 0, max: 254, step: 1 } },
  options: {},
  colorModes: ['xy'],
  ...over,
});
