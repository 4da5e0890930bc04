// A newcomer never takes an existing entity's tool name (read tools included), name or state topic, not even while
// a move waits. The front door lock (Zigbee2MQTT, its real model's exposes) has two sensors of its own (`Front door
// lock Action user`, `... Action source name`): read tools, on the lock's state topic. A forged list renames the
// lock "Porch" and adds a newcomer named "Front door lock". Before, the lock waited on its command topic but its
// sensors followed the forged name: they became "Porch ..." on `zigbee2mqtt/Porch`, and their tool names, names and
// state topic went to the newcomer's sensors, so "the front door lock's action user" read what the forger says and
// the real lock's reports fed the forger's sensors. Now a device whose move waits waits whole; tool names stay
// with their holders after a restart too; and a newcomer reading an existing device's state topic (named like it)
// is left out whole: a state topic is read by one device. Real broker (aedes), real SQLite file.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import Database from 'better-sqlite3';
import { stateTopicsOf } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'z2m');
const LIST: Array<{ friendly_name: string }> = JSON.parse(readFileSync(join(FIXTURES, 'bridge-devices.json'), 'utf8'));
const LOCK_STATE = 'zigbee2mqtt/Front door lock';
const OWNER = { id: 'cli:owner', roles: ['owner'] };

describe('security: a newcomer takes no tool name, name or state topic, even while a move waits', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-forged-rename-names-'));
  let broker: TestBroker;
  let hearth: Hearth | undefined;
  let zigbee: MqttClient;
  /** Every device tool's name -> its entity, and every entity's name and state topics, as an owner first saw them. */
  let first: { tools: Map<string, string>; entities: Map<string, { name: string; topics: string[] }> };

  const open = async () => {
    hearth = await openHearth(broker.url, dir, logSink('debug').log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
  };
  const h = () => hearth!;
  const seen = () => ({
    tools: new Map(
      h()
        .tools.all()
        .filter((t) => t.meta.entityIds.length === 1)
        .map((t) => [t.name, t.meta.entityIds[0]!]),
    ),
    entities: new Map(
      h()
        .bridge.registry.entities()
        .map((e) => [e.id, { name: e.name, topics: stateTopicsOf(e) }]),
    ),
  });
  const mover = () =>
    h()
      .bridge.registry.refusedClaims()
      .find((r) => r.refused.id === 'front_door_lock.lock' && r.movedFrom);
  /** The newcomer's sensors, left out for reading the lock's state topic (waited for). */
  const newcomerSensorsLeftOut = () =>
    waitFor("the newcomer's sensors left out", () => {
      const r = h()
        .bridge.registry.refusedClaims()
        .filter((c) => c.refused.deviceId === 'front_door_lock_2' && c.read);
      return r.length ? r : undefined;
    });
  /** The newcomer's entities, present or left out. */
  const newcomers = () => [...seen().entities].filter(([id]) => id.startsWith('front_door_lock_2.'));
  /** What an owner first saw is still so: each tool name on its entity, each entity's name and state topics. */
  const nothingTaken = () => {
    const now = seen();
    for (const [tool, entity] of first.tools) if (now.tools.has(tool)) assert.equal(now.tools.get(tool), entity, `${tool} is still ${entity}'s`);
    for (const [tool, entity] of first.tools)
      if (now.entities.has(entity) && !entity.endsWith('.lock')) assert.ok(now.tools.get(tool) === entity, `${entity} keeps ${tool}`);
    for (const [id, was] of first.entities) {
      const is = now.entities.get(id);
      if (!is) continue;
      assert.deepEqual(is, was, `${id} keeps its name and state topics`);
    }
    const names = new Set([...first.entities.values()].map((e) => e.name.toLowerCase()));
    for (const [id, e] of newcomers()) assert.ok(!names.has(e.name.toLowerCase()), `${id} is not called ${e.name}`);
  };

  before(async () => {
    broker = await startAedes();
    zigbee = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(LIST), { qos: 1, retain: true });
    await open();
    await waitFor('the lock', () => h().bridge.registry.entity('front_door_lock.lock'));
    first = seen();
    assert.equal(first.tools.get('front_door_lock_action_user'), 'front_door_lock.action_user');
    assert.deepEqual(first.entities.get('front_door_lock.action_user')?.topics, [LOCK_STATE]);
  });
  after(async () => {
    await hearth?.close();
    await zigbee?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("while a forged move waits, the lock's sensors keep their tool names, names and state topic; the newcomer's do not get them", async () => {
    const newcomer = await z2mEntry('YRD426NRSC', '0x00deadbeef000001', 'Front door lock');
    const forged = [...LIST.map((d) => (d.friendly_name === 'Front door lock' ? { ...d, friendly_name: 'Porch' } : d)), newcomer];
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(forged), { qos: 1, retain: true });
    await waitFor('the lock held back', mover);
    // The newcomer's sensors read the lock's state topic: the lock's readings would be theirs. They are left out.
    const misread = await newcomerSensorsLeftOut();
    for (const r of misread) assert.deepEqual([r.topic, r.owner?.deviceId], [LOCK_STATE, 'front_door_lock']);
    assert.deepEqual(newcomers(), []);
    nothingTaken();
    // The read tool gives the lock's own sensor, which still hears the lock.
    await zigbee.publishAsync(LOCK_STATE, JSON.stringify({ action_user: 7, lock_state: 'locked' }), { qos: 1 });
    await waitFor('the report', () => h().bridge.cache.get('front_door_lock.action_user')?.value === 7);
    const read = await h().tools.call('front_door_lock_action_user', {}, OWNER);
    assert.equal(read.isError, undefined, read.text);
    assert.equal((read.details as { entity?: string } | undefined)?.entity ?? 'front_door_lock.action_user', 'front_door_lock.action_user');
    assert.match(read.text!, /7/);
    // What an owner chooses meanwhile still applies: the move holds back the source's names and topics, not the
    // owner's area, and the sensor keeps its name.
    const placed = h().home.setEntityArea('front_door_lock.action_user', 'Hallway', { create: true });
    assert.equal(placed.area, 'Hallway');
    assert.equal(h().bridge.registry.entity('front_door_lock.action_user')?.area, 'Hallway');
    assert.equal(h().bridge.registry.entity('front_door_lock.action_user')?.name, first.entities.get('front_door_lock.action_user')!.name);
    assert.ok(mover(), 'the move still waits');
  });

  it("after a restart with the forged list still retained, the move waits whole: the lock's sensors keep their names, tool names and state topic", async () => {
    await hearth!.close();
    await open();
    await waitFor('the lock held back after the restart', mover);
    const misread = await newcomerSensorsLeftOut();
    for (const r of misread) assert.deepEqual([r.topic, r.owner?.deviceId], [LOCK_STATE, 'front_door_lock']);
    const now = seen();
    for (const [tool, entity] of first.tools) if (now.tools.has(tool)) assert.equal(now.tools.get(tool), entity, `${tool} is still ${entity}'s`);
    for (const id of ['front_door_lock.action_user', 'front_door_lock.action_source_name']) {
      const tool = [...first.tools].find(([, e]) => e === id)![0];
      assert.equal(now.tools.get(tool), id, `${id} keeps ${tool}`);
      assert.deepEqual(now.entities.get(id), first.entities.get(id), `${id} keeps its name and state topic`);
    }
    // The owner's area, chosen before the restart, still applies.
    assert.equal(h().bridge.registry.entity('front_door_lock.action_user')?.area, 'Hallway');
    assert.deepEqual(newcomers(), []);
    nothingTaken();
    // The lock's reports reach the lock's sensors, read through the lock's tool; nothing reads zigbee2mqtt/Porch.
    await zigbee.publishAsync(LOCK_STATE, JSON.stringify({ action_user: 9, lock_state: 'locked' }), { qos: 1 });
    await waitFor('the report', () => h().bridge.cache.get('front_door_lock.action_user')?.value === 9);
    const read = await h().tools.call('front_door_lock_action_user', {}, OWNER);
    assert.match(read.text!, /9/);
    assert.deepEqual(
      h()
        .bridge.registry.entities()
        .filter((e) => stateTopicsOf(e).includes('zigbee2mqtt/Porch'))
        .map((e) => e.id),
      [],
    );
  });

  it('a held form the database cannot read is a finding: after a restart its sensor is withheld, never let follow the forged list', async () => {
    await hearth!.close();
    hearth = undefined;
    // A hand edit, a damaged file: one row that is no JSON, one without the readings it must have.
    const db = new Database(join(dir, 'hearth.db'));
    try {
      db.prepare('UPDATE entity_held_forms SET form = ? WHERE entity_id = ?').run('{not json', 'front_door_lock.action_user');
      db.prepare('UPDATE entity_held_forms SET form = ? WHERE entity_id = ?').run('{"name":"Porch source"}', 'front_door_lock.action_source_name');
    } finally {
      db.close();
    }
    const logs = logSink('debug');
    hearth = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
    await waitFor('the lock held back after the restart', mover);
    for (const id of ['front_door_lock.action_user', 'front_door_lock.action_source_name']) {
      assert.ok(logs.find(new RegExp(`held form of ${id.replace('.', '\\.')} in the database could not be read`))[0], `an error names ${id}`);
      assert.equal(h().bridge.registry.entity(id), undefined, `${id} is withheld`);
    }
    // Nothing of the lock follows the forged list meanwhile.
    assert.deepEqual(
      h()
        .bridge.registry.entities()
        .filter((e) => stateTopicsOf(e).includes('zigbee2mqtt/Porch'))
        .map((e) => e.id),
      [],
    );
    assert.deepEqual(newcomers(), []);
    // Nor is it remembered as following the move: what it read stays its own (held for it while it is withheld).
    await waitFor('what the restart remembers', () => h().bridge.registry.memory.rememberedStateTopics?.().size);
    for (const id of ['front_door_lock.action_user', 'front_door_lock.action_source_name']) {
      assert.deepEqual(h().bridge.registry.memory.rememberedStateTopics?.().get(id), [LOCK_STATE], `${id} keeps ${LOCK_STATE}`);
    }
  });

  it('once an owner confirms the move, the sensors follow it; a restart then keeps the new names', async () => {
    const waiting = mover()!;
    assert.ok(h().bridge.registry.confirmMove('front_door_lock', waiting.topic).moved.length);
    await waitFor('the sensors moved', () => h().bridge.registry.entity('front_door_lock.action_user')?.stateTopic === 'zigbee2mqtt/Porch');
    await hearth!.close();
    await open();
    await waitFor('the lock on its new topic', () => h().bridge.registry.entity('front_door_lock.lock')?.commandTopic === 'zigbee2mqtt/Porch/set');
    assert.equal(h().bridge.registry.entity('front_door_lock.action_user')?.stateTopic, 'zigbee2mqtt/Porch');
    assert.equal(mover(), undefined);
  });

  it('a newcomer named like an existing sensor (no move) reads its state topic: it is left out; the sensor keeps its topic, names and readings', async () => {
    const twin = await z2mEntry('WSDCGQ11LM', '0x00deadbeef000002', 'Balcony sensor 2');
    const list = [...LIST, { ...twin, friendly_name: 'Balcony sensor' }];
    // Zigbee2MQTT never lists two devices of one name: one is forged. The first seen keeps everything.
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(list), { qos: 1, retain: true });
    // The twin reads the sensor's state topic (`zigbee2mqtt/Balcony sensor`): its readings would be the sensor's,
    // under the twin's names. The twin is left out whole, and listed saying whose topic it is.
    const twins = await waitFor('the twin left out', () => {
      const r = h()
        .bridge.registry.refusedClaims()
        .filter((c) => c.read && c.refused.deviceId !== 'balcony_sensor' && c.refused.deviceId.startsWith('balcony_sensor'));
      return r.length >= 3 && r;
    });
    for (const r of twins) assert.deepEqual([r.topic, r.owner?.deviceId], ['zigbee2mqtt/Balcony sensor', 'balcony_sensor']);
    const now = seen();
    for (const id of ['balcony_sensor.temperature', 'balcony_sensor.humidity', 'balcony_sensor.pressure']) {
      const tool = [...first.tools].find(([, e]) => e === id)![0];
      assert.equal(now.tools.get(tool), id, `${id} keeps ${tool}`);
      assert.deepEqual(now.entities.get(id), first.entities.get(id));
    }
    assert.deepEqual(
      [...now.entities.keys()].filter((id) => id.startsWith('balcony_sensor') && !id.startsWith('balcony_sensor.')),
      [],
      'no entity of the twin',
    );
    // The sensor's readings stay the sensor's.
    await zigbee.publishAsync('zigbee2mqtt/Balcony sensor', JSON.stringify({ temperature: 19.5, humidity: 61, pressure: 1013 }), { qos: 1 });
    await waitFor('the reading', () => h().bridge.cache.get('balcony_sensor.temperature')?.value === 19.5);
  });
});
