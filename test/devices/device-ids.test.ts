// Stable device ids (issue 41): a discovered device's id is made once from its name, when its identity is first
// seen, and kept in SQLite; a rename, a restart, the order devices arrive in and a forged device named like a known
// one never move it, so a deny rule written against it keeps holding. A home upgraded from the ids made of radio
// addresses keeps every one its database refers to, and a forged list of devices cannot grow the table past its cap.
// Real mosquitto, a simulated Zigbee2MQTT publishing the fixture home, a real Home Assistant discovery home, real
// SQLite files.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { openDatabase } from '../../src/db/database.js';
import { deviceIdFromName } from '../../src/devices/device-ids.js';
import type { Hearth } from '../../src/hearth.js';
import { HistoryStore, historyOptions } from '../../src/history/store.js';
import { discoveryHome, discoverySource, useFixtureHome, zigbee2mqttSource } from '../helpers/fixture-home.js';
import { OWNER } from '../helpers/home.js';
import { zigbee2mqttHome } from '../helpers/simulated-zigbee2mqtt.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';
import { Z2M_HOME } from '../helpers/zigbee2mqtt-home.js';

const HOME = zigbee2mqttHome();
const DEVICES = HOME.devices.length - 1; // the coordinator is no device
const { CEILING, LOCK } = Z2M_HOME;

/** Every device's identity at its source -> its id, as the registry has them now. */
const idsByIdentity = (hearth: Hearth) => Object.fromEntries(hearth.bridge.registry.devices().map((d) => [d.identity, d.id]));
const storedRows = (hearth: Hearth) => (hearth.db.prepare('SELECT count(*) AS n FROM device_ids').get() as { n: number }).n;

describe('device ids on a Zigbee2MQTT home (mosquitto, a real SQLite file)', () => {
  const home = useFixtureHome({
    name: 'ids',
    source: zigbee2mqttSource(),
    devices: DEVICES,
    flags: { 'discovery.homeassistant.enabled': false },
  });
  const ceiling = HOME.devices.find((d) => d.friendly_name === 'Living room/Ceiling light')!;
  // Another ceiling light, named so that its name makes the same id.
  const twin = { ...ceiling, ieee_address: '0x000d6ffffe1a2bff', friendly_name: 'Living room ceiling light' };
  let other: MqttClient;
  const list = (entries: unknown[]) => other.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(entries), { retain: true, qos: 1 });

  before(async () => {
    other = await mqtt.connectAsync(home.broker.url, { protocolVersion: 5 });
    home.cleanup(() => other.endAsync(true).catch(() => undefined));
  });

  it('gives every device the id of its whole friendly name; the untouched sensor the id of its name, its IEEE address', () => {
    assert.deepEqual(
      home.hearth.bridge.registry
        .devices()
        .map((d) => d.id)
        .sort(),
      [
        '0x00158d0004a1b2c3',
        'bathroom_leak_sensor',
        'bedroom_bedside_lamp',
        'bedroom_climate_sensor',
        'bedroom_radiator',
        'entrance_front_door_lock',
        'hallway_motion_sensor',
        'hallway_wall_switch',
        'kitchen_coffee_machine',
        'kitchen_smoke_detector',
        'kitchen_spots',
        'living_room_blind',
        'living_room_ceiling_light',
        'living_room_floor_lamp',
        'living_room_remote',
        'office_desk_plug',
      ],
    );
    assert.equal(home.hearth.bridge.registry.device(CEILING)!.identity, 'zigbee2mqtt:0x000d6ffffe1a2b3c');
    // Each is stored once, by its IEEE address.
    assert.equal(storedRows(home.hearth), DEVICES);
    assert.deepEqual(home.hearth.db.prepare("SELECT id FROM device_ids WHERE source = 'zigbee2mqtt' AND identity = ?").get('0x000d6ffffe1a2b3c'), {
      id: CEILING,
    });
    // Tools are still named from the names.
    assert.deepEqual(home.hearth.tools.get('living_room_ceiling_light')!.meta.entityIds, [`${CEILING}.light`]);
  });

  it('a device named like a known one, listed first, does not take its id: it gets the next free one', async () => {
    await list([twin, ...HOME.devices]);
    await waitFor('the twin', () => home.hearth.bridge.registry.device(`${CEILING}_2`));
    assert.equal(home.hearth.bridge.registry.device(`${CEILING}_2`)!.identity, 'zigbee2mqtt:0x000d6ffffe1a2bff');
    assert.equal(home.hearth.bridge.registry.device(CEILING)!.identity, 'zigbee2mqtt:0x000d6ffffe1a2b3c');
    assert.deepEqual(home.hearth.tools.get('living_room_ceiling_light')!.meta.entityIds, [`${CEILING}.light`]);
  });

  it('a restart keeps every id, whatever order the devices arrive in', async () => {
    const before = idsByIdentity(home.hearth);
    assert.equal(Object.keys(before).length, DEVICES + 1);
    await home.hearth.close();
    // While Hearth is down the list comes back in the opposite order.
    await list([twin, ...HOME.devices].reverse());
    await home.open(DEVICES + 1);
    assert.deepEqual(idsByIdentity(home.hearth), before);
    assert.equal(storedRows(home.hearth), DEVICES + 1, 'nothing new is written for devices already known');
  });

  it('a rename in Zigbee2MQTT keeps the id, and a deny rule on it still holds, also after a restart', async () => {
    home.hearth.policy.add({
      subject: 'role:owner',
      targetType: 'entity',
      target: `${LOCK}.lock`,
      action: '*',
      effect: 'deny',
      priority: 50,
      note: 'test: the lock stays as it is',
    });
    const refused = await home.hearth.tools.call('entrance_front_door_lock', { action: 'lock' }, OWNER);
    assert.match(refused.text!, /not allowed: rule #\d+ .*the lock stays as it is/, refused.text);
    await home.source.rename('Entrance/Front door lock', 'Entrance/Main door');
    // The lock's command topic moves with its name: that waits for an owner (a forged rename looks the same).
    await waitFor('the move waiting', () => home.hearth.bridge.registry.refusedClaims().some((r) => r.refused.id === `${LOCK}.lock` && r.movedFrom));
    assert.ok(home.hearth.bridge.registry.confirmMove(LOCK, 'zigbee2mqtt/Entrance/Main door/set').moved.length);
    await waitFor('the rename', () => home.hearth.bridge.registry.entity(`${LOCK}.lock`) && home.hearth.bridge.registry.device(LOCK)?.name === 'Main door');
    // The name, the topics and the tool name follow the rename; the id does not.
    assert.equal(home.hearth.bridge.registry.entity(`${LOCK}.lock`)!.commandTopic, 'zigbee2mqtt/Entrance/Main door/set');
    assert.equal(home.hearth.tools.get('entrance_front_door_lock'), undefined);
    const tool = await waitFor('the renamed tool', () => home.hearth.tools.get('entrance_main_door'));
    assert.deepEqual(tool.meta.entityIds, [`${LOCK}.lock`]);
    const still = await home.hearth.tools.call('entrance_main_door', { action: 'lock' }, OWNER);
    assert.match(still.text!, /not allowed: rule #\d+ .*the lock stays as it is/, still.text);
    await home.hearth.close();
    await home.open();
    assert.equal(home.hearth.bridge.registry.device(LOCK)!.identity, 'zigbee2mqtt:0x000b57fffe9a8b7c');
    const afterRestart = await home.hearth.tools.call('entrance_main_door', { action: 'lock' }, OWNER);
    assert.match(afterRestart.text!, /not allowed: rule #\d+ .*the lock stays as it is/, afterRestart.text);
    assert.deepEqual(home.source.sets('Entrance/Main door'), [], 'nothing reached the lock');
    assert.deepEqual(home.source.sets('Entrance/Front door lock'), []);
  });
});

describe('device ids on a Home Assistant discovery home (mosquitto, a real SQLite file)', () => {
  // The configs alone, as the devices announce themselves.
  const HA = { ...discoveryHome(), states: {} };
  const home = useFixtureHome({ name: 'ids-ha', source: discoverySource(HA), devices: 7, flags: { 'discovery.zigbee2mqtt.enabled': false } });

  it("takes each id from the device's name, not its identifier; a Zigbee2MQTT device's from its IEEE address's entry", () => {
    const ids = home.hearth.bridge.registry
      .devices()
      .map((d) => d.id)
      .sort();
    assert.deepEqual(ids, ['desk_lamp', 'garage_door', 'hallway_motion', 'kettle', 'office_climate', 'radiator', 'reading_lamp']);
    // Announced by Zigbee2MQTT as `zigbee2mqtt_0x00158d00054c3b2a`: kept as that IEEE address's id, which its
    // bridge/devices entry gets too when both are read.
    assert.deepEqual(home.hearth.db.prepare('SELECT source, identity FROM device_ids WHERE id = ?').get('hallway_motion'), {
      source: 'zigbee2mqtt',
      identity: '0x00158d00054c3b2a',
    });
  });

  it('a device announced again under another name keeps its id, across a restart', async () => {
    for (const c of HA.configs.filter((x) => x.topic.includes('shellyplus1pm'))) {
      const device = { ...(c.payload.device as Record<string, unknown>), name: 'Tea kettle' };
      await home.source.client.publishAsync(c.topic, JSON.stringify({ ...c.payload, device }), { retain: true, qos: 1 });
    }
    await waitFor('the new name', () => home.hearth.bridge.registry.device('kettle')?.name === 'Tea kettle');
    assert.equal(home.hearth.bridge.registry.device('tea_kettle'), undefined);
    await home.hearth.close();
    await home.open();
    assert.equal(home.hearth.bridge.registry.device('kettle')?.name, 'Tea kettle');
  });
});

describe('device ids on a home upgraded from ids made of IEEE addresses', () => {
  const OLD_LOCK = 'zigbee2mqtt_0x000b57fffe9a8b7c';
  const home = useFixtureHome({
    name: 'ids-upgrade',
    source: async (broker, dir) => {
      // A database as the Hearth before stable ids left it (schema 0020): a rule and history under the lock's old
      // id, a rule over two bulbs by a pattern of their old ids, and the blind remembered by its old id.
      const old = openDatabase(join(dir, 'hearth.db'), { upTo: 20 });
      const rule = old.prepare(
        "INSERT INTO policy_rules (subject, target_type, target, action, effect, priority, note) VALUES ('role:owner', 'entity', ?, 'actuate', 'deny', 50, ?)",
      );
      rule.run(`${OLD_LOCK}.lock`, 'the lock stays as it is');
      rule.run('zigbee2mqtt_0x00178801*.light', 'the hue bulbs stay as they are');
      new HistoryStore(old, historyOptions()).write([{ entityId: `${OLD_LOCK}.lock`, ts: Date.now() - 3_600_000, state: 'unlocked' }]);
      old
        .prepare("INSERT INTO entity_names (entity_id, first_seen, last_seen) VALUES ('zigbee2mqtt_0x000d6ffffe5c4d3e.cover', '2026-01-01T00:00:00.000Z', ?)")
        .run(new Date().toISOString());
      old.close();
      return zigbee2mqttSource()(broker);
    },
    devices: DEVICES,
    flags: { 'discovery.homeassistant.enabled': false },
  });

  it('keeps every old id its database refers to, and gives the others ids from their names', () => {
    const id = (friendly: string) =>
      home.hearth.bridge.registry.devices().find((d) => d.identity === `zigbee2mqtt:${HOME.devices.find((x) => x.friendly_name === friendly)!.ieee_address}`)
        ?.id;
    assert.equal(id('Entrance/Front door lock'), OLD_LOCK);
    assert.equal(id('Living room/Floor lamp'), 'zigbee2mqtt_0x0017880104a1b2c1');
    assert.equal(id('Kitchen spots'), 'zigbee2mqtt_0x0017880104a1b2c2');
    assert.equal(id('Living room/Blind'), 'zigbee2mqtt_0x000d6ffffe5c4d3e');
    assert.equal(id('Living room/Ceiling light'), CEILING, 'nothing referred to the ceiling light: its id comes from its name');
  });

  it('the rule written against the old id still applies to the same lock, and its history goes on', async () => {
    const refused = await home.hearth.tools.call('entrance_front_door_lock', { action: 'lock' }, OWNER);
    assert.match(refused.text!, /not allowed: rule #\d+ .*the lock stays as it is/, refused.text);
    const bulb = await home.hearth.tools.call('kitchen_spots', { action: 'turn_off' }, OWNER);
    assert.match(bulb.text!, /not allowed: rule #\d+ .*the hue bulbs stay as they are/, bulb.text);
    assert.deepEqual(home.source.sets('Entrance/Front door lock'), []);
    assert.deepEqual(home.source.sets('Kitchen spots'), []);
    const history = await home.hearth.tools.call('get_history', { entity: `${OLD_LOCK}.lock` }, OWNER);
    assert.match(history.text!, /unlocked/, history.text);
  });

  it('after a restart, the same ids', async () => {
    const before = idsByIdentity(home.hearth);
    await home.hearth.close();
    await home.open();
    assert.deepEqual(idsByIdentity(home.hearth), before);
  });
});

describe('device ids are capped: a forged list of devices cannot grow the table', () => {
  const MAX = 20;
  const FORGED = 100;
  const ieee = (i: number) => `0x00158d00${i.toString(16).padStart(8, '0')}`;
  const home = useFixtureHome({
    name: 'ids-cap',
    source: async (broker) => {
      const pub = await mqtt.connectAsync(broker.url, { protocolVersion: 5 });
      const plug = await z2mEntry('ZNCZ04LM', ieee(0), 'Plug');
      const list = Array.from({ length: FORGED }, (_, i) => ({ ...plug, ieee_address: ieee(i + 1), friendly_name: `Plug ${i + 1}` }));
      await pub.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(list), { retain: true, qos: 1 });
      return { close: () => pub.endAsync() };
    },
    devices: FORGED,
    flags: { 'discovery.homeassistant.enabled': false, 'discovery.maxDevices': String(MAX) },
    waitMs: 30_000,
  });

  it(`stores ${MAX} ids; past the cap a device gets the id of its IEEE address, unstored, said once`, async () => {
    assert.equal(storedRows(home.hearth), MAX);
    const device = (i: number) => home.hearth.bridge.registry.devices().find((d) => d.identity === `zigbee2mqtt:${ieee(i)}`)?.id;
    assert.equal(device(1), 'plug_1');
    assert.equal(device(MAX), `plug_${MAX}`);
    assert.equal(device(MAX + 1), `zigbee2mqtt_${ieee(MAX + 1)}`);
    assert.equal(device(FORGED), `zigbee2mqtt_${ieee(FORGED)}`);
    assert.equal(home.logs.find(/discovery\.max_devices/).length, 1);
    const before = idsByIdentity(home.hearth);
    await home.hearth.close();
    await home.open();
    assert.deepEqual(idsByIdentity(home.hearth), before, 'the same ids after a restart');
    assert.equal(storedRows(home.hearth), MAX);
  });
});

describe('an id from a name as owners write them', () => {
  it('says a dashed or a path-like name with single underscores', () => {
    assert.equal(deviceIdFromName('Master Bedroom - Ceiling'), 'master_bedroom_ceiling');
    assert.equal(deviceIdFromName('upstairs/kids_room/nightlight'), 'upstairs_kids_room_nightlight');
    assert.equal(deviceIdFromName('Wi-Fi plug'), 'wi-fi_plug');
    assert.equal(deviceIdFromName('💡'), undefined);
  });
});
