// A Zigbee2MQTT endpoint scene's entity id says where it is, the same on every list: `scene_<id>` on the device's
// first listed endpoint, `scene_<id>_ep<endpoint>` on another. Before, `scene_<id>` went to the lowest endpoint
// holding that scene id each time: once a person stored a scene 1 on the left rocker of a double switch whose right
// rocker had scene 1 ("Evening"), `hall_switch.scene_1` recalled the left rocker's scene, and the rules, approvals,
// history and audit rows naming it meant another scene (found by review). Nothing is stored for it, so a forged list
// can make no id stick (a stored key, tried first, could: review).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { endpointSceneEntities } from '../../src/devices/discovery/zigbee2mqtt/endpoint-scenes.js';
import type { Z2mDevice } from '../../src/devices/discovery/zigbee2mqtt/types.js';

const owner = { deviceId: 'hall_switch', name: 'Hall switch', baseTopic: 'zigbee2mqtt/Hall switch', availability: { mode: 'all' as const, sources: [] } };
/** The scenes of a list, by entity id, as a person reads them. */
const scenes = (endpoints: Z2mDevice['endpoints']) =>
  [...endpointSceneEntities({ endpoints } as Z2mDevice, owner, new Set()).map((e) => [e.id, `${e.name} on ${e.commandTopic}`] as const)].sort();

describe('a Zigbee2MQTT endpoint scene keeps its id', () => {
  it("the right rocker's Evening keeps its id once the left rocker stores a scene 1 of its own", () => {
    assert.deepEqual(scenes({ '1': { name: 'left', scenes: [] }, '2': { name: 'right', scenes: [{ id: 1, name: 'Evening' }] } }), [
      ['hall_switch.scene_1_ep2', 'Evening on zigbee2mqtt/Hall switch/2/set'],
    ]);
    assert.deepEqual(scenes({ '1': { name: 'left', scenes: [{ id: 1, name: 'Night' }] }, '2': { name: 'right', scenes: [{ id: 1, name: 'Evening' }] } }), [
      ['hall_switch.scene_1', 'Night on zigbee2mqtt/Hall switch/1/set'],
      ['hall_switch.scene_1_ep2', 'Evening on zigbee2mqtt/Hall switch/2/set'],
    ]);
  });

  it('a one-endpoint device: `scene_<id>` on its own set topic', () => {
    assert.deepEqual(scenes({ '11': { scenes: [{ id: 3, name: 'Reading' }] } }), [['hall_switch.scene_3', 'Reading on zigbee2mqtt/Hall switch/set']]);
  });

  it('two endpoints a list names alike: their scenes are told apart by the endpoint ids', () => {
    assert.deepEqual(
      scenes({ '1': { name: 'left', scenes: [{ id: 1, name: 'Evening' }] }, '2': { name: 'left', scenes: [{ id: 1, name: 'Evening' }] } }).map(([, n]) => n),
      ['Evening (endpoint 1) on zigbee2mqtt/Hall switch/1/set', 'Evening (endpoint 2) on zigbee2mqtt/Hall switch/2/set'],
    );
  });
});
