// A state topic stays its device's while the device is away. Before, while the front door lock was missing from
// Zigbee2MQTT's list for a moment (a bridge restarted with a partial list, a forged list leaving it out), a newcomer
// could read the lock's state topic and show the lock's readings under its own name. Now what a device read is
// remembered (in the database): a forged config and a forged list entry reading the lock's topic are refused and
// listed naming the away lock, after a restart of Hearth too; the lock coming back reads its topic again; once an
// owner forgets the lock (`hearth devices forget`), or it has been unseen for `discovery.remember_days`, the topic is
// free. Real broker (aedes), real SQLite file,
// Zigbee2MQTT's fixture list and a zigbee-herdsman-converters model for the forged entry.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { devicesText } from '../../src/cli/devices.js';
import { devices, forgetDevice } from '../../src/daemon/methods/devices.js';
import { openDatabase } from '../../src/db/database.js';
import { stateTopicsOf } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import { refusedClaimsJson } from '../../src/present/refused-claim.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'z2m');
const LIST: Array<{ friendly_name: string; ieee_address: string }> = JSON.parse(readFileSync(join(FIXTURES, 'bridge-devices.json'), 'utf8'));
const LOCK_STATE = 'zigbee2mqtt/Front door lock';
const LOCK = 'front_door_lock.lock';
const CONTACT_CONFIG = 'homeassistant/binary_sensor/front_door_contact/config';

describe('security: a state topic stays its device’s while the device is away', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-away-state-'));
  let broker: TestBroker;
  let hearth: Hearth | undefined;
  let logs = logSink('debug');
  let device: MqttClient;

  const publish = (topic: string, payload: unknown) =>
    device.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { qos: 1, retain: true });
  const open = async () => {
    logs = logSink('debug');
    hearth = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
  };
  const close = async () => {
    await hearth?.close();
    hearth = undefined;
  };
  const h = () => hearth!;
  const entity = (id: string) => h().bridge.registry.entity(id);
  /** The list without the lock, plus these entries. */
  const listWithout = (...more: unknown[]) => [...LIST.filter((d) => d.friendly_name !== 'Front door lock'), ...more];
  /** Entities left out for reading the lock's state topic while the lock is away. */
  const readAway = () => refusedClaimsJson(h().bridge).filter((r) => r.read && r.topic === LOCK_STATE && r.ownerAway && r.ownerDevice === 'front_door_lock');
  /** Entities in the home reading the lock's state topic. */
  const readers = () =>
    h()
      .bridge.registry.entities()
      .filter((e) => stateTopicsOf(e).includes(LOCK_STATE));
  /** A contact sensor of another device reading the lock's state topic: shows "unlocked" as an open door. */
  const contact = {
    name: 'Front door contact',
    unique_id: 'front_door_contact_1',
    device_class: 'door',
    state_topic: LOCK_STATE,
    value_template: "{{ 'ON' if value_json.lock_state == 'unlocked' else 'OFF' }}",
    device: { identifiers: ['front_door_contact'], name: 'Front door contact' },
  };
  let forgedEntry: unknown;

  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await publish('zigbee2mqtt/bridge/info', readFileSync(join(FIXTURES, 'bridge-info.json'), 'utf8'));
    await publish('zigbee2mqtt/bridge/devices', LIST);
    // A sensor with no command topic, named like the lock: Zigbee2MQTT would give it the lock's state topic.
    forgedEntry = await z2mEntry('WSDCGQ11LM', '0x00deadbeef000007', 'Front door lock');
    await open();
    await waitFor('the lock', () => entity(LOCK) && readers().length >= 2);
  });
  after(async () => {
    await close();
    await device?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the lock leaves the list: a forged contact and a forged sensor on its state topic are refused and listed', async () => {
    await publish('zigbee2mqtt/bridge/devices', listWithout(forgedEntry));
    await publish(CONTACT_CONFIG, contact);
    const refused = await waitFor('both forgers refused', () => {
      const list = readAway();
      return entity(LOCK) === undefined && list.some((r) => r.name === 'Front door contact') && list.some((r) => r.device !== 'front_door_contact') && list;
    });
    // Nothing reads the lock's topic: neither forger is in the home, nor has a tool.
    assert.deepEqual(
      readers().map((e) => e.id),
      [],
    );
    const forged = new Set(refused.map((r) => r.device));
    assert.ok(forged.has('front_door_contact'));
    assert.ok(
      !h()
        .tools.all()
        .some((t) => t.meta.entityIds.some((id) => forged.has(id.split(/[.#]/, 1)[0]!))),
    );
    // Said once each, naming the away lock and how to free its topic.
    for (const r of refused) {
      const lines = logs.lines.filter((l) => l.refused === r.entity && l.read === true);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assert.equal(lines[0].away, true);
      assert.match(
        lines[0].msg,
        /^state topic zigbee2mqtt\/Front door lock is read by front_door_lock \(front_door_lock\.\S+\), which is away .*`hearth devices forget front_door_lock`/,
      );
    }
    // `hearth devices`: under the one away device to forget.
    const text = devicesText(devices(h().bridge), undefined, refusedClaimsJson(h().bridge));
    assert.match(
      text,
      /\n {2}front_door_lock is away \(remembered, not in the home now\) and holds the state topics these \d+ entities claim; if it is really gone, `hearth devices forget front_door_lock` frees them:\n(?: {4}.*\n)*? {4}Front door contact \(front_door_contact\.\S+\): its state topic zigbee2mqtt\/Front door lock is read by front_door_lock\.\S+\n/,
    );
    // The lock reports (it is there, only missing from the list): nothing shows its reading under a forged name.
    await device.publishAsync(LOCK_STATE, JSON.stringify({ lock_state: 'unlocked', state: 'UNLOCK', battery: 77 }), { qos: 1 });
    const read = await h().tools.call('get_state', { entity: refused.find((r) => r.device === 'front_door_contact')!.entity }, OWNER);
    assert.equal(read.isError, true, read.text);
    assert.doesNotMatch(read.text ?? '', /unlocked|open/i);
  });

  it("a config naming the away lock's own Zigbee2MQTT identifier does not join it: no tool, nothing read, nothing commanded", async () => {
    // The IEEE address is public in the retained bridge/devices; Home Assistant discovery lets a config join a device
    // by its identifiers. Hearth reads Zigbee2MQTT devices from bridge/devices: this copy is not read.
    const forgedSwitch = {
      name: 'Porch light',
      unique_id: 'porch_light_forged',
      state_topic: LOCK_STATE,
      command_topic: `${LOCK_STATE}/set`,
      device: { identifiers: ['zigbee2mqtt_0x000b57fffe9a8b7c'], name: 'Porch light' },
    };
    await publish('homeassistant/switch/forged/porch/config', forgedSwitch);
    await waitFor('the config read and not taken', () =>
      logs.find(/a Zigbee2MQTT device's config, not read/).some((l) => String(l.topic).includes('homeassistant/switch/forged/porch/config')),
    );
    assert.deepEqual(
      readers().map((e) => e.id),
      [],
    );
    assert.equal(
      h()
        .bridge.registry.entities()
        .filter((e) => e.deviceId === 'front_door_lock').length,
      0,
      'nothing joins the away lock',
    );
    assert.ok(
      !h()
        .tools.all()
        .some((t) => t.name.startsWith('porch_light')),
    );
    await publish('homeassistant/switch/forged/porch/config', '');
  });

  it("no one commands the away lock's state topic: a switch aimed there is refused, naming the lock", async () => {
    // Without the two forgers (they read the lock's topic too, and would be named instead).
    await publish('zigbee2mqtt/bridge/devices', listWithout());
    await publish(CONTACT_CONFIG, '');
    await waitFor('the forgers gone', () => readAway().length === 0);
    const aimed = {
      name: 'Porch switch',
      unique_id: 'porch_switch_1',
      command_topic: LOCK_STATE,
      device: { identifiers: ['porch_switch'], name: 'Porch switch' },
    };
    await publish('homeassistant/switch/porch_switch/config', aimed);
    const refusal = await waitFor('the switch refused', () =>
      h()
        .bridge.registry.refusedClaims()
        .find((r) => r.refused.deviceId === 'porch_switch'),
    );
    assert.equal(refusal.topic, LOCK_STATE);
    assert.match(refusal.reason ?? '', /state topic of front_door_lock\.\S+, which is away/);
    assert.ok(
      !h()
        .tools.all()
        .some((t) => t.meta.entityIds.some((id) => id.startsWith('porch_switch.'))),
    );
    await publish('homeassistant/switch/porch_switch/config', '');
    await waitFor(
      'the switch gone',
      () =>
        !h()
          .bridge.registry.refusedClaims()
          .some((r) => r.refused.deviceId === 'porch_switch'),
    );
    await publish('zigbee2mqtt/bridge/devices', listWithout(forgedEntry));
    await publish(CONTACT_CONFIG, contact);
    await waitFor('the forgers back, left out', () => {
      const list = readAway();
      return list.some((r) => r.device === 'front_door_contact') && list.some((r) => r.device !== 'front_door_contact');
    });
  });

  it('after a restart while the lock is away, its state topic is still its own', async () => {
    await close();
    await open();
    await waitFor('the forgers refused after the restart', () => {
      const list = readAway();
      return list.some((r) => r.name === 'Front door contact') && list.some((r) => r.device !== 'front_door_contact');
    });
    assert.equal(entity(LOCK), undefined);
    assert.deepEqual(
      readers().map((e) => e.id),
      [],
    );
  });

  it('the lock returns and reads its topic again; the forgers stay out', async () => {
    await publish('zigbee2mqtt/bridge/devices', listWithout(forgedEntry, ...LIST.filter((d) => d.friendly_name === 'Front door lock')));
    await waitFor('the lock back', () => entity(LOCK) && readers().length >= 2);
    assert.ok(readers().every((e) => e.deviceId === 'front_door_lock'));
    assert.equal(readAway().length, 0, 'the lock is present: nothing waits on it away');
    const refused = refusedClaimsJson(h().bridge).filter((r) => r.read && r.topic === LOCK_STATE);
    assert.ok(refused.some((r) => r.device === 'front_door_contact' && r.ownerDevice === 'front_door_lock'));
    await device.publishAsync(LOCK_STATE, JSON.stringify({ lock_state: 'locked', state: 'LOCK', battery: 76 }), { qos: 1 });
    await waitFor('the lock locked', () => h().bridge.cache.get(LOCK)?.value === 'locked');
  });

  it('once an owner forgets the lock, its state topic is free', async () => {
    await publish('zigbee2mqtt/bridge/devices', listWithout());
    await waitFor('the lock away again', () => entity(LOCK) === undefined && readAway().some((r) => r.name === 'Front door contact'));
    // Hearth forgets only a device gone from its source (as `hearth devices forget` asks the daemon).
    const { forgotten } = forgetDevice(h().bridge, { device: 'front_door_lock' });
    assert.ok(forgotten.includes(LOCK), forgotten.join(', '));
    const admitted = await waitFor('the contact admitted', () => readers().find((e) => e.deviceId === 'front_door_contact'));
    assert.equal(admitted.name, 'Front door contact');
    assert.deepEqual(readAway(), []);
    // And it stays free after a restart: nothing of the lock is remembered.
    await close();
    await open();
    await waitFor('the contact admitted after the restart', () => readers().some((e) => e.deviceId === 'front_door_contact'));
    assert.deepEqual(readAway(), []);
  });
});

describe('security: a state topic held by an away device is freed after discovery.remember_days', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-away-state-days-'));
  let broker: TestBroker;
  let hearth: Hearth | undefined;
  let device: MqttClient;
  const logs = logSink('debug');
  const publish = (topic: string, payload: unknown) =>
    device.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { qos: 1, retain: true });
  const open = async () => {
    hearth = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false, 'discovery.rememberDays': '30' });
  };
  const contactIn = () => hearth!.bridge.registry.entities().some((e) => e.deviceId === 'front_door_contact' && stateTopicsOf(e).includes(LOCK_STATE));
  const refusedContact = () => refusedClaimsJson(hearth!.bridge).some((r) => r.device === 'front_door_contact' && r.ownerAway && r.read);

  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await publish('zigbee2mqtt/bridge/info', readFileSync(join(FIXTURES, 'bridge-info.json'), 'utf8'));
    await publish('zigbee2mqtt/bridge/devices', LIST);
    await open();
    await waitFor('the lock', () => hearth!.bridge.registry.entity(LOCK));
  });
  after(async () => {
    await hearth?.close();
    await device?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the lock away, then unseen for longer than remember_days: the contact reads the topic', async () => {
    await publish(
      'zigbee2mqtt/bridge/devices',
      LIST.filter((d) => d.friendly_name !== 'Front door lock'),
    );
    await publish(CONTACT_CONFIG, {
      name: 'Front door contact',
      unique_id: 'front_door_contact_1',
      device_class: 'door',
      state_topic: LOCK_STATE,
      device: { identifiers: ['front_door_contact'], name: 'Front door contact' },
    });
    await waitFor('the contact refused while the lock is away', refusedContact);
    await hearth!.close();
    hearth = undefined;
    // The lock was last seen 40 days ago (what a month and more away looks like in the database).
    const db = openDatabase(join(dir, 'hearth.db'));
    try {
      const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
      const aged = db
        .prepare("UPDATE entity_names SET first_seen = ?, last_seen = ? WHERE substr(entity_id, 1, 16) = 'front_door_lock.'")
        .run(old, old).changes;
      assert.ok(aged > 0);
    } finally {
      db.close();
    }
    await open();
    await waitFor('the contact admitted', contactIn);
    assert.equal(refusedContact(), false);
  });
});
