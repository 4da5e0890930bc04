// Entity ids on a Home Assistant discovery home made as Home Assistant makes them (object_id / default_entity_id,
// else the device's name and the entity's own: `dehumidifier.energy_power`), never of a firmware's MAC address
// (`dehumidifier.8caab5c1d2e3_rl_1` from a Tasmota unique_id); kept once given, across restarts and whatever order
// the configs arrive in; a device named like another gets the next id; and a home upgraded from the ids made of
// unique_ids keeps every one its database refers to. test/fixtures/homes/homeassistant-second-home.json (Shelly and
// Tasmota shapes) retained on mosquitto, real SQLite files.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import { EntityKeys } from '../../src/devices/entity-keys.js';
import type { Hearth } from '../../src/hearth.js';
import { discoveryHome, discoverySource, useFixtureHome } from '../helpers/fixture-home.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

const HA = discoveryHome('homeassistant-second-home.json');
const FLAGS = { 'discovery.zigbee2mqtt.enabled': false, 'tools.shape': 'per-entity' };
const ids = (hearth: Hearth) =>
  hearth.bridge.registry
    .entities()
    .map((e) => e.id)
    .sort();
const keyRows = (hearth: Hearth) => (hearth.db.prepare('SELECT count(*) AS n FROM entity_keys').get() as { n: number }).n;

/** A second Tasmota plug its owner also named "Dehumidifier" (the configs Tasmota's SetOption19 publishes). */
const TWIN_MAC = 'A0B1C2D3E4F5';
const twinConfigs = () =>
  HA.configs
    .filter((c) => c.topic.includes('8CAAB5C1D2E3'))
    .map((c) => ({
      topic: c.topic.replace('8CAAB5C1D2E3', TWIN_MAC),
      payload: JSON.parse(JSON.stringify(c.payload).replaceAll('8CAAB5C1D2E3', TWIN_MAC).replaceAll('dehumidifier/', 'dehumidifier2/')),
    }));

describe('entity ids on a Shelly and Tasmota discovery home (mosquitto, a real SQLite file)', () => {
  const home = useFixtureHome({ name: 'entity-keys', source: discoverySource(HA), devices: 5, flags: FLAGS });

  it("are made of the device's name and the entity's own, as Home Assistant makes them; no MAC address in any", () => {
    assert.deepEqual(ids(home.hearth), [
      'conservatory_blind.cover',
      'conservatory_blind.device_temperature',
      'conservatory_sensor.battery',
      'conservatory_sensor.humidity',
      'conservatory_sensor.temperature',
      'dehumidifier.energy_power',
      'dehumidifier.status',
      'dehumidifier.switch',
      'pond_pump.power',
      'pond_pump.reboot',
      'pond_pump.switch',
      'workshop_lights.light',
    ]);
    // Each is kept by its unique_id under its device.
    assert.equal(keyRows(home.hearth), 12);
    assert.deepEqual(home.hearth.db.prepare('SELECT device_id, key FROM entity_keys WHERE identity = ?').get('uid switch 8CAAB5C1D2E3_RL_1'), {
      device_id: 'dehumidifier',
      key: 'switch',
    });
  });

  it('a device named like a known one gets the next id, its entities theirs, and a restart keeps every id', async () => {
    for (const c of twinConfigs()) await home.source.client.publishAsync(c.topic, JSON.stringify(c.payload), { retain: true, qos: 1 });
    await waitFor('the second dehumidifier', () => home.hearth.bridge.registry.device('dehumidifier_2')?.entities.length === 3);
    assert.deepEqual(
      home.hearth.bridge.registry
        .device('dehumidifier_2')!
        .entities.map((e) => e.id)
        .sort(),
      ['dehumidifier_2.energy_power', 'dehumidifier_2.status', 'dehumidifier_2.switch'],
    );
    assert.equal(home.hearth.bridge.registry.entity('dehumidifier.switch')!.commandTopic, 'dehumidifier/cmnd/POWER');
    assert.equal(home.hearth.bridge.registry.entity('dehumidifier_2.switch')!.commandTopic, 'dehumidifier2/cmnd/POWER');
    const before = ids(home.hearth);
    const rows = keyRows(home.hearth);
    await home.hearth.close();
    await home.open(6);
    assert.deepEqual(ids(home.hearth), before);
    assert.equal(home.hearth.bridge.registry.entity('dehumidifier_2.switch')!.commandTopic, 'dehumidifier2/cmnd/POWER');
    assert.equal(keyRows(home.hearth), rows, 'nothing new is written for entities already known');
  });

  it('a second entity of a device named like one it has gets the next key; the first keeps its own', async () => {
    const power = HA.configs.find((c) => c.topic.includes('8CAAB5C1D2E3_ENERGY_Power'))!;
    const again = { ...power.payload, uniq_id: '8CAAB5C1D2E3_ENERGY_Power_2', stat_t: '~tele/SENSOR2' };
    await home.source.client.publishAsync('homeassistant/sensor/8CAAB5C1D2E3_ENERGY_Power_2/config', JSON.stringify(again), { retain: true, qos: 1 });
    await waitFor('the second power reading', () => home.hearth.bridge.registry.entity('dehumidifier.energy_power_2'));
    assert.equal(home.hearth.bridge.registry.entity('dehumidifier.energy_power')!.stateTopic, 'dehumidifier/tele/SENSOR');
    assert.equal(home.hearth.bridge.registry.entity('dehumidifier.energy_power_2')!.stateTopic, 'dehumidifier/tele/SENSOR2');
  });
});

describe('entity ids on a discovery home upgraded from ids made of unique_ids', () => {
  const OLD = 'dehumidifier.8caab5c1d2e3_rl_1';
  const home = useFixtureHome({
    name: 'entity-keys-upgrade',
    source: async (broker, dir) => {
      // A database as the Hearth before this one left it (schema 0022): the Tasmota plug's id, its three entities
      // remembered by their old ids, and an owner's rule that its switch stays as it is.
      const old = openDatabase(join(dir, 'hearth.db'), { upTo: 22 });
      const at = new Date().toISOString();
      old.prepare("INSERT INTO device_ids (source, identity, id, first_seen) VALUES ('homeassistant', 'ids 8CAAB5C1D2E3', 'dehumidifier', ?)").run(at);
      for (const id of [OLD, 'dehumidifier.8caab5c1d2e3_energy_power', 'dehumidifier.8caab5c1d2e3_status'])
        old.prepare('INSERT INTO entity_names (entity_id, first_seen, last_seen) VALUES (?, ?, ?)').run(id, at, at);
      old
        .prepare(
          "INSERT INTO policy_rules (subject, target_type, target, action, effect, priority, note) VALUES ('role:owner', 'entity', ?, '*', 'deny', 50, 'the dehumidifier stays as it is')",
        )
        .run(OLD);
      old.close();
      return discoverySource(HA)(broker);
    },
    devices: 5,
    flags: FLAGS,
  });

  it('keeps the old ids its database refers to, and its rule still holds; the other devices get ids of their names', async () => {
    const dehumidifier = home.hearth.bridge.registry.device('dehumidifier')!;
    assert.deepEqual(dehumidifier.entities.map((e) => e.id).sort(), ['dehumidifier.8caab5c1d2e3_energy_power', OLD, 'dehumidifier.8caab5c1d2e3_status']);
    assert.ok(home.hearth.bridge.registry.entity('pond_pump.switch'), ids(home.hearth).join(', '));
    home.hearth.policy.add({ subject: 'role:owner', targetType: 'entity', target: '*', action: '*', effect: 'allow', priority: 10, note: 'owners act' });
    const tool = home.hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(OLD))!;
    const refused = await home.hearth.tools.call(tool.name, { action: 'turn_on' }, OWNER);
    assert.match(refused.text!, /not allowed: rule #\d+ .*the dehumidifier stays as it is/, refused.text);
    const pump = home.hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes('pond_pump.switch'))!;
    const sent = await home.hearth.tools.call(pump.name, { action: 'turn_on' }, OWNER);
    assert.doesNotMatch(sent.text!, /not allowed|invalid/, sent.text);
  });

  it('after a restart, the same ids', async () => {
    const before = ids(home.hearth);
    await home.hearth.close();
    await home.open();
    assert.deepEqual(ids(home.hearth), before);
    assert.ok(home.hearth.bridge.registry.entity(OLD));
  });
});

describe('entity keys are capped: a stream of forged unique_ids cannot grow the table', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-entity-keys-cap-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('stores the most it may; past that an entity gets its unique_id key, unstored, the same on every run, said once', () => {
    const db = openDatabase(join(dir, 'h.db'));
    const warnings: string[] = [];
    const log = { warn: (_o: unknown, msg: string) => warnings.push(msg) } as never;
    const open = () => new EntityKeys(db, () => ({ ids: new Set(), patterns: [], entities: new Set(), entityPatterns: [] }), { log, max: 2 });
    const keys = open();
    const ask = (k: EntityKeys, n: number) => k.keyFor('plug', { identity: `uid sensor forged_${n}`, wanted: 'power', legacy: [`forged_${n}`] });
    assert.deepEqual([ask(keys, 1), ask(keys, 2), ask(keys, 3), ask(keys, 4)], ['power', 'power_2', 'forged_3', 'forged_4']);
    keys.commit();
    assert.equal((db.prepare('SELECT count(*) AS n FROM entity_keys').get() as { n: number }).n, 2);
    assert.equal(warnings.filter((w) => /entity keys: the most entities are remembered/.test(w)).length, 1);
    // A restart: the stored keep theirs, the others get the same unstored keys again.
    const again = open();
    assert.deepEqual([ask(again, 4), ask(again, 3), ask(again, 2), ask(again, 1)], ['forged_4', 'forged_3', 'power_2', 'power']);
    db.close();
  });
});
