// A Zigbee2MQTT endpoint scene keeps its entity id from one list to the next, across restarts: the key is given when
// the scene is first seen and stored (entity-keys.ts, migration 0023). Before, `scene_<id>` went to the lowest endpoint
// holding that scene id each time: once a person stored a scene 1 on the left rocker of a double switch whose right
// rocker had scene 1 ("Evening"), `hall_switch.scene_1` recalled the left rocker's scene, and the rules, approvals,
// history and audit rows naming it meant another scene (found by review). A real SQLite file, reopened.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import { DeviceIds } from '../../src/devices/device-ids.js';
import { endpointSceneEntities } from '../../src/devices/discovery/zigbee2mqtt/endpoint-scenes.js';
import type { Z2mDevice } from '../../src/devices/discovery/zigbee2mqtt/types.js';

const owner = { deviceId: 'hall_switch', name: 'Hall switch', baseTopic: 'zigbee2mqtt/Hall switch', availability: { mode: 'all' as const, sources: [] } };

describe('a Zigbee2MQTT endpoint scene keeps its id (a real SQLite file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-scene-keys-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  /** The scenes of the list, by entity id, as a person reads them; the store opened afresh (a restart) each time. */
  const scenes = (endpoints: Z2mDevice['endpoints']) => {
    const db = openDatabase(join(dir, 'hearth.db'));
    try {
      const ids = new DeviceIds(db);
      const key = (deviceId: string, identity: string, wanted: string) => ids.entityKeys.keyFor(deviceId, { identity, wanted, legacy: [wanted] });
      const out = new Map(endpointSceneEntities({ endpoints } as Z2mDevice, owner, new Set(), key).map((e) => [e.id, `${e.name} on ${e.commandTopic}`]));
      ids.commit();
      return out;
    } finally {
      db.close();
    }
  };

  it("hall_switch.scene_1 still recalls the right rocker's Evening once the left rocker stores a scene 1 of its own", () => {
    const before = scenes({ '1': { name: 'left', scenes: [] }, '2': { name: 'right', scenes: [{ id: 1, name: 'Evening' }] } });
    assert.deepEqual([...before], [['hall_switch.scene_1', 'Evening on zigbee2mqtt/Hall switch/2/set']]);
    const now = scenes({ '1': { name: 'left', scenes: [{ id: 1, name: 'Night' }] }, '2': { name: 'right', scenes: [{ id: 1, name: 'Evening' }] } });
    assert.deepEqual([...now].sort(), [
      ['hall_switch.scene_1', 'Evening on zigbee2mqtt/Hall switch/2/set'],
      ['hall_switch.scene_1_2', 'Night on zigbee2mqtt/Hall switch/1/set'],
    ]);
  });

  it('two endpoints a list names alike: their scenes are told apart by the endpoint ids', () => {
    const alike = endpointSceneEntities(
      { endpoints: { '1': { name: 'left', scenes: [{ id: 1, name: 'Evening' }] }, '2': { name: 'left', scenes: [{ id: 1, name: 'Evening' }] } } } as Z2mDevice,
      owner,
      new Set(),
    );
    assert.deepEqual(
      alike.map((e) => e.name),
      ['Evening (endpoint 1)', 'Evening (endpoint 2)'],
    );
  });

  it('without a store, as a converter alone: the first endpoint holding an id has `scene_<id>`', () => {
    const alone = endpointSceneEntities(
      { endpoints: { '1': { scenes: [{ id: 1, name: 'Night' }] }, '2': { scenes: [{ id: 1, name: 'Evening' }] } } } as Z2mDevice,
      owner,
      new Set(),
    );
    assert.deepEqual(
      alone.map((e) => e.id),
      ['hall_switch.scene_1', 'hall_switch.scene_1_ep2'],
    );
  });
});
