// Homie 4 and Homie 5 through a real broker and the real bridge: recorded
// retained messages, properties as entities, commands on `/set` to a tiny fake
// device (which publishes Homie 5's `$target` before the value), `$state`
// driving availability, and removals.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'homie');
const fixture = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Array<[string, string]>;

/** A suite's publisher, Hearth, broker and folder: whatever of them its before() got to. */
async function closeAll(pub: MqttClient | undefined, hearth: Hearth | undefined, broker: TestBroker | undefined, dir: string): Promise<void> {
  await pub?.endAsync(true).catch(() => undefined);
  await hearth?.close();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** The entities (key: kind) the fixtures describe, once every retained attribute has been read. */
const KITCHEN_KINDS = {
  light_power: 'switch',
  light_brightness: 'number',
  light_color: 'sensor',
  light_effect: 'select',
  sensor_temperature: 'sensor',
  sensor_motion: 'binary_sensor',
  maintenance_reboot: 'button',
};
const BOILER_KINDS = {
  heating_target: 'number',
  heating_mode: 'select',
  heating_water: 'sensor',
  heating_pump: 'switch',
  info_firmware: 'sensor',
  info_schedule: 'sensor',
};

/** A Homie device that does what `/set` says: Homie 5 announces `$target` first, then reaches it. */
class FakeHomie {
  readonly received: Array<{ topic: string; payload: string }> = [];
  constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload) => void this.onSet(topic, payload.toString('utf8')));
  }

  static async start(url: string): Promise<FakeHomie> {
    const client = await mqtt.connectAsync(url, { protocolVersion: 4 });
    const fake = new FakeHomie(client);
    await client.subscribeAsync(['homie/+/+/+/set', 'homie/5/+/+/+/set'], { qos: 1 });
    return fake;
  }

  private async onSet(topic: string, payload: string): Promise<void> {
    this.received.push({ topic, payload });
    const property = topic.slice(0, -'/set'.length);
    if (property.endsWith('/maintenance/reboot')) return;
    // Homie 5: the target first, then the value (one client's messages arrive in the order sent).
    if (property.startsWith('homie/5/')) await this.client.publishAsync(`${property}/$target`, payload, { retain: true, qos: 1 });
    await this.client.publishAsync(property, payload, { retain: true, qos: 1 });
  }

  last(property: string): string | undefined {
    return this.received.filter((r) => r.topic === `${property}/set`).at(-1)?.payload;
  }
}

describe('Homie discovery on a real broker', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let fake: FakeHomie;
  let pub: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-homie-'));
  const logs = logSink('debug');
  const retain = (topic: string, payload: string) => pub.publishAsync(topic, payload, { retain: true, qos: 1 });
  const state = (id: string) => hearth.bridge.cache.get(id);
  const entity = (id: string) => hearth.bridge.registry.entity(id);
  const toolFor = (entityId: string) => {
    const tool = hearth.tools.all().find((t) => t.meta.entityIds.length === 1 && t.meta.entityIds[0] === entityId && t.name !== 'get_state');
    assert.ok(tool, `no tool for ${entityId}`);
    return tool;
  };
  const call = (entityId: string, args: Record<string, unknown>) => hearth.tools.call(toolFor(entityId).name, args, OWNER);

  before(async () => {
    broker = await startAedes();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    for (const [topic, payload] of [...fixture('v4-kitchen-light.json'), ...fixture('v5-boiler.json')]) await retain(topic, payload);
    fake = await FakeHomie.start(broker.url);
    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homeassistant.enabled': false, 'discovery.zigbee2mqtt.enabled': false });
    // Not the devices' first appearance: a Homie 4 device is described from many retained topics, which a busy
    // machine reads in pieces, so it may first appear in part. Every attribute read: every kind, range and unit.
    const kinds = (id: string) => Object.fromEntries((hearth.bridge.registry.device(id)?.entities ?? []).map((e) => [e.key, e.kind]));
    await waitFor(
      'both Homie devices described whole',
      () =>
        isDeepStrictEqual(kinds('kitchen-light'), KITCHEN_KINDS) &&
        isDeepStrictEqual(kinds('boiler'), BOILER_KINDS) &&
        entity('kitchen-light.light_brightness')!.unit === '%' &&
        entity('kitchen-light.sensor_temperature')!.unit === '°C' &&
        entity('kitchen-light.light_effect')!.options.value?.length === 3,
    );
  });

  after(async () => {
    await fake?.client.endAsync(true).catch(() => undefined);
    await closeAll(pub, hearth, broker, dir);
  });

  it('turns Homie 4 nodes and properties into entities; settable ones into actuators', () => {
    const device = hearth.bridge.registry.device('kitchen-light')!;
    assert.equal(device.name, 'Kitchen light');
    assert.deepEqual(Object.fromEntries(device.entities.map((e) => [e.key, e.kind])), KITCHEN_KINDS);
    const power = entity('kitchen-light.light_power')!;
    assert.equal(power.stateTopic, 'homie/kitchen-light/light/power');
    assert.equal(power.commandTopic, 'homie/kitchen-light/light/power/set');
    assert.deepEqual(power.payloads, { on: 'true', off: 'false' });
    assert.deepEqual(entity('kitchen-light.light_brightness')!.ranges.value, { min: 0, max: 100, step: 1 });
    assert.equal(entity('kitchen-light.light_brightness')!.unit, '%');
    assert.deepEqual(entity('kitchen-light.light_effect')!.options.value, ['solid', 'rainbow', 'blink']);
    assert.equal(entity('kitchen-light.sensor_temperature')!.deviceClass, 'temperature');
    assert.equal(entity('kitchen-light.sensor_temperature')!.name, 'Kitchen light Temperature');
    assert.equal(toolFor('kitchen-light.light_power').capability, 'actuator');
    assert.equal(toolFor('kitchen-light.sensor_temperature').capability, 'read');
    // The colour is readable but not settable here, and the log says why.
    assert.ok(logs.lines.some((l) => JSON.stringify(l.skipped ?? '').includes('Hearth has no colour command')));
  });

  it('turns a Homie 5 $description into entities, with $target as an attribute', () => {
    const device = hearth.bridge.registry.device('boiler')!;
    assert.equal(device.name, 'Boiler');
    assert.deepEqual(Object.fromEntries(device.entities.map((e) => [e.key, e.kind])), BOILER_KINDS);
    const target = entity('boiler.heating_target')!;
    assert.equal(target.stateTopic, 'homie/5/boiler/heating/target');
    assert.equal(target.commandTopic, 'homie/5/boiler/heating/target/set');
    assert.deepEqual(target.attributes, { target: { topic: 'homie/5/boiler/heating/target/$target' } });
    assert.deepEqual(target.ranges.value, { min: 10, max: 30, step: 0.5 });
    assert.equal(target.unit, '°C');
  });

  it('mirrors property values', async () => {
    // Every value asserted below is waited for: retained messages arrive in no set order on a busy machine.
    const expected: Record<string, unknown> = {
      'kitchen-light.light_power': 'on',
      'boiler.heating_water': 48.2,
      'kitchen-light.light_brightness': 80,
      'kitchen-light.sensor_temperature': 21.5,
      'kitchen-light.sensor_motion': 'off',
      'kitchen-light.light_effect': 'solid',
      'boiler.heating_mode': 'comfort',
      'boiler.info_firmware': '2.4.1',
    };
    await waitFor('values', () => Object.entries(expected).every(([id, value]) => state(id)?.value === value));
    // Its retained $state "ready" is a topic of its own, read in no set order with the values.
    await waitFor('the kitchen light available', () => state('kitchen-light.light_power')!.available === true);
    await pub.publishAsync('homie/kitchen-light/sensor/motion', 'true', { retain: true });
    await waitFor('motion', () => state('kitchen-light.sensor_motion')?.value === 'on');
  });

  it('sends Homie 4 commands to <property>/set and confirms them from the value', async () => {
    assert.match((await call('kitchen-light.light_power', { action: 'turn_off' })).text!, /^confirmed: .*off/);
    assert.equal(fake.last('homie/kitchen-light/light/power'), 'false');
    assert.match((await call('kitchen-light.light_brightness', { value: 40 })).text!, /^confirmed: .*40 %/);
    assert.equal(fake.last('homie/kitchen-light/light/brightness'), '40');
    assert.match((await call('kitchen-light.light_effect', { option: 'rainbow' })).text!, /^confirmed/);
    assert.equal(fake.last('homie/kitchen-light/light/effect'), 'rainbow');
    assert.match((await call('kitchen-light.maintenance_reboot', {})).text!, /^confirmed: pressed/);
    await waitFor('reboot at the device', () => fake.last('homie/kitchen-light/maintenance/reboot') === 'true');
    const bad = await call('kitchen-light.light_brightness', { value: 140 });
    assert.equal(bad.isError, true);
  });

  it('sends Homie 5 commands; the device shows $target, then the value reaches it', async () => {
    const seen: Array<[unknown, unknown]> = [];
    const onChange = (s: { entityId: string; value?: unknown; attributes: Record<string, unknown> }) => {
      if (s.entityId === 'boiler.heating_target') seen.push([s.value, s.attributes.target]);
    };
    hearth.bridge.cache.on('change', onChange);
    const res = await call('boiler.heating_target', { value: 22.5 });
    hearth.bridge.cache.off('change', onChange);
    assert.match(res.text!, /^confirmed: .*22\.5 °C/);
    assert.equal(fake.last('homie/5/boiler/heating/target'), '22.5');
    // The target came first (value still 20.5), then the value reached it.
    assert.deepEqual(seen[0], [20.5, 22.5]);
    assert.deepEqual(seen.at(-1), [22.5, 22.5]);
    assert.match(res.text!, /target 22\.5/);
    assert.match((await call('boiler.heating_mode', { option: 'eco' })).text!, /^confirmed/);
    assert.equal(fake.last('homie/5/boiler/heating/mode'), 'eco');
    assert.match((await call('boiler.heating_pump', { action: 'turn_off' })).text!, /^confirmed: .*off/);
    assert.equal(fake.last('homie/5/boiler/heating/pump'), 'false');
  });

  it('$state decides availability: ready is available; lost, disconnected, init and sleeping are not', async () => {
    // Each word follows a "ready": a wait for "not available" right after another would be met by the one before.
    for (const [word, available] of [
      ['lost', false],
      ['ready', true],
      ['disconnected', false],
      ['ready', true],
      ['init', false],
      ['ready', true],
      ['sleeping', false],
      ['ready', true],
    ] as const) {
      await retain('homie/kitchen-light/$state', word);
      await waitFor(`kitchen light ${word}`, () => state('kitchen-light.light_power')?.available === available);
    }
    await retain('homie/5/boiler/$state', 'lost');
    await waitFor('boiler lost', () => state('boiler.heating_pump')?.available === false);
    const refused = await call('boiler.heating_pump', { action: 'turn_on' });
    assert.match(refused.text!, /offline/);
    assert.equal(fake.last('homie/5/boiler/heating/pump'), 'false', 'nothing was sent');
    await retain('homie/5/boiler/$state', 'ready');
    await waitFor('boiler ready', () => state('boiler.heating_pump')?.available === true);
    assert.equal(logs.find(/skipped a payload/).length, 0, 'no $state word was refused');
  });

  it('a device file with the same id wins', () => {
    const file = join(dir, 'kitchen.yaml');
    writeFileSync(
      file,
      'devices:\n  - id: kitchen-light\n    name: Kitchen (file)\n    entities:\n      lamp:\n        kind: switch\n        state_topic: homie/kitchen-light/light/power\n        command_topic: homie/kitchen-light/light/power/set\n        payloads: { on: "true", off: "false" }\n        states: { on: "true", off: "false" }\n',
    );
    (hearth.bridge as unknown as { paths: string[] }).paths.push(file);
    hearth.bridge.loadDevices();
    assert.equal(hearth.bridge.registry.device('kitchen-light')!.source, file);
    assert.deepEqual(
      hearth.bridge.registry.device('kitchen-light')!.entities.map((e) => e.key),
      ['lamp'],
    );
  });

  it('removes devices whose topics are cleared', async () => {
    // Homie 5: an empty $state removes the device.
    await retain('homie/5/boiler/$state', '');
    await waitFor('boiler gone', () => !hearth.bridge.registry.device('boiler'));
    assert.ok(!hearth.tools.all().some((t) => t.meta.entityIds.some((id) => id.startsWith('boiler.'))));
    // Homie 4: clearing $homie and $state.
    await retain('homie/kitchen-light/$homie', '');
    await retain('homie/kitchen-light/$state', '');
    await waitFor('discovered kitchen light gone', () => logs.find(/^homie: "Kitchen light" is gone/).length === 1);
    // The device file still declares it.
    assert.ok(hearth.bridge.registry.device('kitchen-light')!.source.endsWith('kitchen.yaml'));
  });
});

describe('Homie 4 property attributes that come after the values', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let pub: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-homie-late-'));
  const LATE = ['homie/kitchen-light/light/power/$datatype', 'homie/kitchen-light/sensor/motion/$datatype'];

  before(async () => {
    broker = await startAedes();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    // The retained values are on the broker; two properties' $datatype are not (yet): a busy broker hands a
    // device's retained burst over in pieces, and Hearth describes a device a moment after it begins.
    for (const [topic, payload] of fixture('v4-kitchen-light.json'))
      if (!LATE.includes(topic)) await pub.publishAsync(topic, payload, { retain: true, qos: 1 });
    hearth = await openHearth(broker.url, dir, logSink('warn').log, { 'discovery.homeassistant.enabled': false, 'discovery.zigbee2mqtt.enabled': false });
    await waitFor('the brightness read', () => hearth.bridge.cache.get('kitchen-light.light_brightness')?.value === 80);
  });

  after(() => closeAll(pub, hearth, broker, dir));

  it('reads their values by the $datatype, not as text first', async () => {
    for (const topic of LATE) await pub.publishAsync(topic, 'boolean', { retain: true, qos: 1 });
    await waitFor(
      'the late properties described as a switch and a binary sensor',
      () =>
        hearth.bridge.registry.entity('kitchen-light.light_power')?.kind === 'switch' &&
        hearth.bridge.registry.entity('kitchen-light.sensor_motion')?.kind === 'binary_sensor',
    );
    // The retained "true" and "false" read as a boolean's on and off.
    await waitFor(
      'power on, no motion',
      () => hearth.bridge.cache.get('kitchen-light.light_power')?.value === 'on' && hearth.bridge.cache.get('kitchen-light.sensor_motion')?.value === 'off',
    );
  });
});

describe('a Homie 4 property that never announces its $datatype', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let pub: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-homie-datatype-'));
  const logs = logSink('debug');
  const retain = (topic: string, payload: string) => pub.publishAsync(topic, payload, { retain: true, qos: 1 });
  const warned = () => logs.lines.filter((l) => l.level === 40 && l.reason === 'no_datatype');

  before(async () => {
    broker = await startAedes();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    // A garden pump whose firmware forgets the flow's $datatype, and a shed light still starting up (`init`) that has
    // not published its power's yet.
    for (const [topic, payload] of [
      ['homie/garden-pump/$homie', '4.0.0'],
      ['homie/garden-pump/$name', 'Garden pump'],
      ['homie/garden-pump/$nodes', 'pump'],
      ['homie/garden-pump/pump/$name', 'Pump'],
      ['homie/garden-pump/pump/$properties', 'power,flow'],
      ['homie/garden-pump/pump/power/$name', 'Power'],
      ['homie/garden-pump/pump/power/$datatype', 'boolean'],
      ['homie/garden-pump/pump/power/$settable', 'true'],
      ['homie/garden-pump/pump/power', 'false'],
      ['homie/garden-pump/pump/flow/$name', 'Flow'],
      ['homie/garden-pump/pump/flow/$unit', 'l/min'],
      ['homie/garden-pump/pump/flow', '0.0'],
      ['homie/garden-pump/$state', 'ready'],
      ['homie/shed-light/$homie', '4.0.0'],
      ['homie/shed-light/$name', 'Shed light'],
      ['homie/shed-light/$nodes', 'light'],
      ['homie/shed-light/light/$properties', 'power'],
      ['homie/shed-light/$state', 'init'],
    ])
      await retain(topic, payload);
    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homeassistant.enabled': false, 'discovery.zigbee2mqtt.enabled': false });
    await waitFor('the pump described', () => hearth.bridge.registry.entity('garden-pump.pump_power'));
  });

  after(() => closeAll(pub, hearth, broker, dir));

  it('is said once, as a warning naming the device, node and property, once the device is ready; it gets its tool when the $datatype comes', async () => {
    // The device is ready, yet the flow has no $datatype: after a moment's grace for retained topics still on their way, a warning.
    await waitFor('the warning', () => warned().length > 0, 15_000);
    assert.deepEqual(
      warned().map((l) => [l.device, l.node, l.property, l.topic]),
      [['garden-pump', 'pump', 'flow', 'homie/garden-pump/pump/flow/$datatype']],
      'the shed light, still in init, is not warned about',
    );
    assert.equal(
      warned()[0]!.msg,
      'homie: property pump/flow of Homie 4 device "garden-pump" ("Garden pump") has no tool: the device says it is ready, but the property has not announced $datatype, which Homie 4 requires',
    );
    assert.equal(hearth.bridge.registry.entity('garden-pump.pump_flow'), undefined);
    // Every later rebuild of the device (a rename here) finds it still missing: no second line.
    await retain('homie/garden-pump/$name', 'Garden pump by the pond');
    await waitFor('the rename', () => hearth.bridge.registry.device('garden-pump')?.name === 'Garden pump by the pond');
    assert.equal(warned().length, 1, 'once per property');
    // The firmware is fixed: the flow becomes a sensor, read by its datatype.
    await retain('homie/garden-pump/pump/flow/$datatype', 'float');
    await waitFor('the flow sensor', () => hearth.bridge.registry.entity('garden-pump.pump_flow')?.kind === 'sensor');
    await waitFor('the flow read as a number', () => hearth.bridge.cache.get('garden-pump.pump_flow')?.value === 0);
    assert.equal(warned().length, 1);
  });
});
