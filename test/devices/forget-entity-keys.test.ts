// Forgetting a device (`hearth devices forget <device>`, the daemon's devices.forget) forgets its entities' keys
// too (entity_keys, migration 0023), in the SQLite file: no row is left for a device its owner said is gone, and the
// device announced again gets keys as a new device would. For a device still in the home, what it no longer has is
// forgotten, keys included, and its other entities keep theirs. The Tasmota dehumidifier of
// test/fixtures/homes/homeassistant-second-home.json retained on mosquitto, a real SQLite file read by its own
// connection.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { forgetDevice } from '../../src/daemon/methods/devices.js';
import { discoveryHome, discoverySource, useFixtureHome } from '../helpers/fixture-home.js';
import { waitFor } from '../helpers/wait.js';

const HA = discoveryHome('homeassistant-second-home.json');
const MAC = '8CAAB5C1D2E3';
const config = (name: string) => HA.configs.find((c) => c.topic === `homeassistant/${name}/config`)!;
const SWITCH = config(`switch/${MAC}_RL_1`);
const POWER = config(`sensor/${MAC}_ENERGY_Power`);
const STATUS = config(`sensor/${MAC}_status`);
/** Another power reading of the plug (a second channel), named as the first: its key is numbered. */
const powerReading = (n: number) => ({
  topic: `homeassistant/sensor/${MAC}_ENERGY_Power_${n}/config`,
  payload: { ...POWER.payload, uniq_id: `${MAC}_ENERGY_Power_${n}`, stat_t: `~tele/SENSOR${n}` },
});

describe('forgetting a device forgets its entity keys (mosquitto, a real SQLite file)', () => {
  const home = useFixtureHome({
    name: 'forget-entity-keys',
    source: discoverySource(HA),
    devices: 5,
    flags: { 'discovery.zigbee2mqtt.enabled': false },
  });
  const publish = (c: { topic: string; payload: unknown }) => home.source.client.publishAsync(c.topic, JSON.stringify(c.payload), { retain: true, qos: 1 });
  const retract = (c: { topic: string }) => home.source.client.publishAsync(c.topic, '', { retain: true, qos: 1 });
  /** The keys of a device in the SQLite file, by the entity's identity, as another connection reads them. */
  const storedKeys = (deviceId: string) => {
    const db = new Database(join(home.dir, 'hearth.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT identity, key FROM entity_keys WHERE device_id = ? ORDER BY identity').all(deviceId) as Array<{
        identity: string;
        key: string;
      }>;
      return Object.fromEntries(rows.map((r) => [r.identity, r.key]));
    } finally {
      db.close();
    }
  };
  const entityIds = (deviceId: string) => (home.hearth.bridge.registry.device(deviceId)?.entities ?? []).map((e) => e.id).sort();

  it('a reading a present device no longer has: its key is forgotten with it, and a newcomer named alike takes it', async () => {
    await publish(powerReading(2));
    await waitFor('the second power reading', () => home.hearth.bridge.registry.entity('dehumidifier.energy_power_2'));
    await waitFor('its key stored', () => storedKeys('dehumidifier')[`uid sensor ${MAC}_ENERGY_Power_2`] === 'energy_power_2');

    await retract(powerReading(2));
    await waitFor('the second reading gone', () => !home.hearth.bridge.registry.entity('dehumidifier.energy_power_2'));
    assert.deepEqual(forgetDevice(home.hearth.bridge, { device: 'dehumidifier' }), {
      device: 'dehumidifier',
      forgotten: ['dehumidifier.energy_power_2'],
      present: true,
    });
    assert.deepEqual(storedKeys('dehumidifier'), {
      [`uid sensor ${MAC}_ENERGY_Power`]: 'energy_power',
      [`uid sensor ${MAC}_status`]: 'status',
      [`uid switch ${MAC}_RL_1`]: 'switch',
    });

    // Before, the forgotten reading held `energy_power_2` for good, and a third one got `energy_power_3`.
    await publish(powerReading(3));
    await waitFor(
      'the third power reading',
      () => home.hearth.bridge.registry.entity('dehumidifier.energy_power_2')?.stateTopic === 'dehumidifier/tele/SENSOR3',
    );
    assert.deepEqual(entityIds('dehumidifier'), ['dehumidifier.energy_power', 'dehumidifier.energy_power_2', 'dehumidifier.status', 'dehumidifier.switch']);
  });

  it('a device gone from its source: every key is forgotten, the other devices keep theirs, and it comes back as a new device', async () => {
    const pumpKeys = storedKeys('pond_pump');
    assert.equal(Object.keys(pumpKeys).length, 3);
    for (const c of [SWITCH, POWER, STATUS, powerReading(3)]) await retract(c);
    await waitFor('the dehumidifier away', () => !home.hearth.bridge.registry.device('dehumidifier'));

    const answer = forgetDevice(home.hearth.bridge, { device: 'dehumidifier' });
    assert.deepEqual(answer.forgotten, ['dehumidifier.energy_power', 'dehumidifier.energy_power_2', 'dehumidifier.status', 'dehumidifier.switch']);
    assert.deepEqual(storedKeys('dehumidifier'), {}, 'no key of the forgotten device is left in the file');
    assert.deepEqual(storedKeys('pond_pump'), pumpKeys);

    // Announced again without its first power reading: the third is the device's only one, and a new device's
    // only power reading is `energy_power` (before, it kept `energy_power_2`).
    for (const c of [SWITCH, STATUS, powerReading(3)]) await publish(c);
    await waitFor('the dehumidifier back', () => entityIds('dehumidifier').length === 3);
    assert.deepEqual(entityIds('dehumidifier'), ['dehumidifier.energy_power', 'dehumidifier.status', 'dehumidifier.switch']);
    assert.equal(home.hearth.bridge.registry.entity('dehumidifier.energy_power')!.stateTopic, 'dehumidifier/tele/SENSOR3');
    await waitFor('its keys stored anew', () => storedKeys('dehumidifier')[`uid sensor ${MAC}_ENERGY_Power_3`] === 'energy_power');
    assert.deepEqual(storedKeys('dehumidifier'), {
      [`uid sensor ${MAC}_ENERGY_Power_3`]: 'energy_power',
      [`uid sensor ${MAC}_status`]: 'status',
      [`uid switch ${MAC}_RL_1`]: 'switch',
    });
  });
});
