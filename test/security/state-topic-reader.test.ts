// A state topic is read by one device. Before, a discovered entity of one device could name another device's state
// topic as its own: a forged "Front door contact" reading the real lock's state topic showed the lock's readings
// under its own name, in reads, history and chat. Now a state topic belongs to one device (a person's device that
// takes commands, else the first discovered device that names itself; topic-owners.ts); a discovered entity of
// another device asking for it is refused whole and listed with the left-out entities, saying whose it is. A
// person's file that only reads a discovered device's topic shares it (the device stays). Entities of one device from one source
// still share (Zigbee2MQTT's one JSON topic per device, Tasmota's `tele/<dev>/SENSOR`, a Shelly's `status/<part>`).
// The home: the Zigbee2MQTT fixture list (zigbee-herdsman-converters models, named as owners name them) and the
// second Home Assistant discovery home (Shelly Gen2 and Tasmota shapes), on a real broker (aedes), a real SQLite
// file and a real HTTP server.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { devicesText } from '../../src/cli/devices.js';
import { devices } from '../../src/daemon/methods/devices.js';
import { stateTopicsOf } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import type { HttpServer } from '../../src/http/server.js';
import { silentLogger } from '../../src/log.js';
import { refusedClaimsJson, type RefusedClaimJson } from '../../src/present/refused-claim.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { discoveryHome, statePayload } from '../helpers/fixture-home.js';
import { openHearth, OWNER } from '../helpers/home.js';
import { request } from '../helpers/http-client.js';
import { serveWithOwnerAndGuest } from '../helpers/http-home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const LIST = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'z2m', 'bridge-devices.json'), 'utf8'));
const HA_HOME = discoveryHome('homeassistant-second-home.json');
const LOCK_STATE = 'zigbee2mqtt/Front door lock';
const SHELLY_STATE = 'shellyplus1pm-a8032ab9f8e7/status/switch:0';

describe('security: a state topic is read by one device', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-state-topic-reader-'));
  let broker: TestBroker;
  let hearth: Hearth | undefined;
  let server: HttpServer | undefined;
  let zigbee: MqttClient;
  let owner = '';
  const logs = logSink('debug');
  const h = () => hearth!;

  before(async () => {
    broker = await startAedes();
    zigbee = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(LIST), { qos: 1, retain: true });
    // The discovery home's devices, as they publish (aedes speaks MQTT 3.1.1).
    for (const c of HA_HOME.configs) await zigbee.publishAsync(c.topic, JSON.stringify(c.payload), { qos: 1, retain: true });
    // Tasmota announces a sensor per ENERGY field, each reading tele/SENSOR: the voltage too, as the power is.
    const power = HA_HOME.configs.find((c) => c.topic.endsWith('_ENERGY_Power/config'))!;
    await zigbee.publishAsync(
      power.topic.replace('Power', 'Voltage'),
      JSON.stringify({
        ...power.payload,
        name: 'Dehumidifier ENERGY Voltage',
        uniq_id: '8CAAB5C1D2E3_ENERGY_Voltage',
        unit_of_meas: 'V',
        dev_cla: 'voltage',
        val_tpl: "{{value_json['ENERGY']['Voltage']}}",
      }),
      { qos: 1, retain: true },
    );
    for (const [topic, state] of Object.entries(HA_HOME.states)) await zigbee.publishAsync(topic, statePayload(state), { qos: 1, retain: true });
    hearth = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
    ({ server, owner } = await serveWithOwnerAndGuest(hearth, logs.log));
    await waitFor(
      'the lock and the dehumidifier',
      () => h().bridge.registry.entity('front_door_lock.lock') && (h().bridge.registry.device('dehumidifier')?.entities.length ?? 0) >= 4,
    );
  });
  after(async () => {
    await server?.close();
    await hearth?.close();
    await zigbee?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a real home is left whole: the entities of one device share their JSON topic (Zigbee2MQTT, Tasmota, Shelly)', async () => {
    // The Shelly's configs may still be on their way (before() waits for the lock and the dehumidifier).
    await waitFor(
      'the Shelly switch and its power meter',
      () =>
        h()
          .bridge.registry.entities()
          .filter((e) => stateTopicsOf(e).includes(SHELLY_STATE)).length >= 2,
    );
    assert.deepEqual(
      h()
        .bridge.registry.refusedClaims()
        .filter((r) => r.read)
        .map((r) => r.refused.id),
      [],
    );
    const readersOf = (topic: string) =>
      h()
        .bridge.registry.entities()
        .filter((e) => stateTopicsOf(e).includes(topic));
    assert.ok(readersOf(LOCK_STATE).length >= 3, 'the lock and its sensors read the lock');
    const tasmota = readersOf('dehumidifier/tele/SENSOR');
    assert.ok(tasmota.length >= 2, `several Tasmota entities read tele/SENSOR: ${tasmota.map((e) => e.id).join(', ')}`);
    assert.ok(tasmota.every((e) => e.deviceId === 'dehumidifier'));
    assert.ok(readersOf(SHELLY_STATE).length >= 2, 'the Shelly switch and its power meter read one status topic');
  });

  it("a forged contact reading the lock's state topic is refused whole and listed; the lock's readings stay the lock's", async () => {
    const forger = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    try {
      await forger.publishAsync(
        'homeassistant/binary_sensor/front_door_contact/config',
        JSON.stringify({
          name: 'Front door contact',
          unique_id: 'front_door_contact_1',
          device_class: 'door',
          state_topic: LOCK_STATE,
          value_template: "{{ 'ON' if value_json.lock_state == 'unlocked' else 'OFF' }}",
          device: { identifiers: ['front_door_contact'], name: 'Front door contact' },
        }),
        { qos: 1, retain: true },
      );
      // And one that reads the pond pump's power: a sensor "Pond pump power" of its own, on the Shelly's topic.
      await forger.publishAsync(
        'homeassistant/sensor/pond_power/config',
        JSON.stringify({
          name: 'power',
          unique_id: 'pond_power_forged',
          state_topic: SHELLY_STATE,
          value_template: '{{ value_json.apower }}',
          unit_of_measurement: 'W',
          device: { identifiers: ['pond_meter'], name: 'Pond pump' },
        }),
        { qos: 1, retain: true },
      );
      const refused = await waitFor('both forgers left out', () => {
        const list = refusedClaimsJson(h().bridge).filter((r) => r.read);
        return list.length === 2 && list;
      });
      const byTopic = new Map(refused.map((r) => [r.topic, r]));
      const contact = byTopic.get(LOCK_STATE)!;
      assert.equal(contact.name, 'Front door contact');
      assert.equal(contact.ownerDevice, 'front_door_lock');
      assert.match(contact.words, /^its state topic zigbee2mqtt\/Front door lock is read by front_door_lock\.\S+ of device front_door_lock/);
      assert.equal(
        byTopic.get(SHELLY_STATE)?.ownerDevice,
        h()
          .bridge.registry.entities()
          .find((e) => stateTopicsOf(e).includes(SHELLY_STATE))?.deviceId,
      );
      // Nothing of the forgers is in the home: no entity, no tool, no name.
      const forged = new Set(refused.map((r) => r.device));
      assert.deepEqual(
        h()
          .bridge.registry.entities()
          .filter((e) => forged.has(e.deviceId))
          .map((e) => e.id),
        [],
      );
      assert.ok(
        !h()
          .tools.all()
          .some((t) => t.meta.entityIds.some((id) => forged.has(id.split('.')[0]!))),
      );
      // Said once in the log, naming whose topic it is.
      const line = logs.lines.find((l) => l.refused === contact.entity && l.read === true);
      assert.match(
        line?.msg ?? '',
        /^state topic zigbee2mqtt\/Front door lock is read by front_door_lock\.\S+ .*of device front_door_lock: its readings are that device's;/,
      );

      // Listed for the owner: the HTTP API the page reads, and `hearth devices`.
      const seen = await request(`${server!.url}/api/devices/refused`, { token: owner });
      assert.equal(seen.status, 200, seen.text);
      const listed = (seen.json as RefusedClaimJson[]).find((r) => r.entity === contact.entity);
      assert.equal(listed?.read, true);
      assert.equal(listed?.ownerDevice, 'front_door_lock');
      const text = devicesText(devices(h().bridge), undefined, refusedClaimsJson(h().bridge));
      assert.match(text, /Front door contact \(front_door_contact\.\S+\): its state topic zigbee2mqtt\/Front door lock is read by front_door_lock/);

      // The lock reports: the reading is the lock's, read through the lock's tools; no forged name carries it.
      await zigbee.publishAsync(LOCK_STATE, JSON.stringify({ lock_state: 'unlocked', state: 'UNLOCK', battery: 88 }), { qos: 1 });
      await waitFor('the lock unlocked', () => h().bridge.cache.get('front_door_lock.lock')?.value === 'unlocked');
      assert.equal(h().bridge.cache.get(contact.entity), undefined);
      await waitFor('the battery', () => h().bridge.cache.get('front_door_lock.battery')?.value === 88);
      // Read as an agent reads it: the lock's, and nothing under the forged name.
      const read = await h().tools.call('get_state', { entity: 'front_door_lock.lock' }, OWNER);
      assert.match(read.text ?? '', /unlocked/i);
      const forgedRead = await h().tools.call('get_state', { entity: contact.entity }, OWNER);
      assert.equal(forgedRead.isError, true, forgedRead.text);
      assert.doesNotMatch(forgedRead.text ?? '', /unlocked/i);
      assert.ok(
        !h()
          .bridge.registry.entities()
          .some((e) => /front door contact/i.test(e.name)),
      );
    } finally {
      await forger.endAsync(true);
    }
  });
});

describe("a person's device file that reads a discovered device's topic", () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-state-topic-file-'));
  let broker: TestBroker;
  let hearth: Hearth | undefined;
  let zigbee: MqttClient;

  before(async () => {
    broker = await startAedes();
    zigbee = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(LIST), { qos: 1, retain: true });
    await zigbee.publishAsync(LOCK_STATE, JSON.stringify({ state: 'LOCK', battery: 81 }), { qos: 1, retain: true });
    // An extra sensor off the lock's JSON, as docs/devices.md shows: a person's file only reads the topic.
    writeFileSync(
      join(dir, 'extras.yaml'),
      `devices:
  - id: lock_extras
    name: Lock extras
    entities:
      battery: { kind: sensor, name: Lock battery, unit: "%", state_topic: "${LOCK_STATE}", value_path: battery }
`,
    );
    hearth = await openHearth(broker.url, dir, silentLogger, {
      'mqtt.protocolVersion': '4',
      'discovery.homie.enabled': false,
      'devices.paths': [join(dir, 'extras.yaml')],
    });
  });
  after(async () => {
    await hearth?.close();
    await zigbee?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shares it: the lock stays, with its tool, and the extra sensor reads its battery', async () => {
    const h = hearth!;
    await waitFor('the lock', () => h.bridge.registry.entity('front_door_lock.lock'));
    await waitFor('the extra sensor reading the battery', () => h.bridge.cache.get('lock_extras.battery')?.value === 81);
    assert.deepEqual(
      h.bridge.registry
        .refusedClaims()
        .filter((r) => r.refused.deviceId === 'front_door_lock')
        .map((r) => r.refused.id),
      [],
      'nothing of the lock is left out',
    );
    assert.ok(h.tools.forPrincipal(OWNER).some((t) => t.capability === 'actuator' && t.meta.entityIds.includes('front_door_lock.lock')));
  });
});
