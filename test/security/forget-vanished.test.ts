// An entity its device no longer has (its source dropped it: a firmware or converter update changed the exposes)
// holds the topics it had while Hearth remembers it, as an away device's do, and a newcomer reading them is left
// out, told `hearth devices forget <device>`. The device itself is present, so forgetting it whole is refused; what
// a person can forget is what the device no longer has: that is forgotten (in the database too), and the newcomer
// comes in. A present device with nothing gone is still refused. Aedes, Home Assistant discovery, a real SQLite file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { forgetDevice } from '../../src/daemon/methods/devices.js';
import type { Hearth } from '../../src/hearth.js';
import { silentLogger } from '../../src/log.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

const DEVICE = { identifiers: ['gate_controller_01'], name: 'Garden gate' };
const GATE = 'homeassistant/lock/garden_gate/config';
const BATTERY = 'homeassistant/sensor/garden_gate_battery/config';
const BATTERY_TOPIC = 'garden/gate/battery';
const NEWCOMER = 'homeassistant/sensor/shed_battery/config';

describe('security: what a present device no longer has holds its topics until a person forgets it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-forget-vanished-'));
  let broker: TestBroker;
  let hearth: Hearth | undefined;
  let device: MqttClient;
  const h = () => hearth!;
  const publish = (topic: string, payload: unknown) =>
    device.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { qos: 1, retain: true });
  const open = async () => {
    hearth = await openHearth(broker.url, dir, silentLogger, {
      'mqtt.protocolVersion': '4',
      'discovery.homie.enabled': false,
      'discovery.zigbee2mqtt.enabled': false,
    });
  };
  const newcomerRefused = () =>
    h()
      .bridge.registry.refusedClaims()
      .find((r) => r.refused.deviceId === 'shed_battery' && r.read);

  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await publish(GATE, { name: 'Garden gate', unique_id: 'gate_lock', state_topic: 'garden/gate/state', command_topic: 'garden/gate/set', device: DEVICE });
    await publish(BATTERY, { name: 'Battery', unique_id: 'gate_battery', state_topic: BATTERY_TOPIC, unit_of_measurement: '%', device: DEVICE });
    await open();
    await waitFor('the gate and its battery', () => h().bridge.registry.device('garden_gate')?.entities.length === 2);
  });
  after(async () => {
    await hearth?.close();
    await device?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a present device with nothing gone is not forgotten', () => {
    assert.throws(() => forgetDevice(h().bridge, { device: 'garden_gate' }), /is in the home now/);
  });

  it('the battery gone from the device holds its topic; forgetting what the device no longer has frees it, across a restart', async () => {
    const battery = h()
      .bridge.registry.device('garden_gate')!
      .entities.find((e) => e.stateTopic === BATTERY_TOPIC)!.id;
    await publish(BATTERY, '');
    await waitFor('the battery gone', () => h().bridge.registry.device('garden_gate')?.entities.length === 1);
    await publish(NEWCOMER, {
      name: 'Shed battery',
      unique_id: 'shed_battery',
      state_topic: BATTERY_TOPIC,
      device: { identifiers: ['shed_battery'], name: 'Shed battery' },
    });
    const refused = await waitFor('the newcomer left out', newcomerRefused);
    assert.equal(refused.awayOwner, battery);

    const answer = forgetDevice(h().bridge, { device: 'garden_gate' });
    assert.deepEqual(answer, { device: 'garden_gate', forgotten: [battery], present: true });
    await waitFor('the newcomer in', () =>
      h()
        .bridge.registry.entities()
        .some((e) => e.deviceId === 'shed_battery'),
    );
    assert.ok(h().bridge.registry.entity(h().bridge.registry.device('garden_gate')!.entities[0]!.id), 'the gate stays');

    await h().close();
    await open();
    await waitFor('the newcomer in after a restart', () =>
      h()
        .bridge.registry.entities()
        .some((e) => e.deviceId === 'shed_battery'),
    );
    assert.equal(newcomerRefused(), undefined);
    assert.throws(() => forgetDevice(h().bridge, { device: 'garden_gate' }), /is in the home now/, 'nothing more to forget');
  });
});
