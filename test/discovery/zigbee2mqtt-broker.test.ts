// Zigbee2MQTT through a real broker and the real bridge: recorded bridge/devices,
// bridge/info and state messages published retained, then commands through the
// pipeline to a tiny fake Zigbee2MQTT that echoes them, renames and removals
// through later bridge/devices messages, and a device file that outranks discovery.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, subscribesAt, type TestBroker } from '../helpers/brokers.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'z2m');
const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as T;

type Entry = { ieee_address: string; friendly_name: string; [k: string]: unknown };
const DEVICES = fixture<Entry[]>('bridge-devices.json');
const STATES = fixture<Record<string, Record<string, unknown>>>('states.json');
const INFO = fixture<unknown>('bridge-info.json');

// Ids from the friendly names the devices had when first seen (a rename keeps them).
const ID = {
  light: 'living_room_light',
  switch: 'hall_switch',
  heater: 'bathroom_heater',
  blind: 'bedroom_blind',
  lock: 'front_door_lock',
  sensor: 'balcony_sensor',
};

/** A few lines of Zigbee2MQTT: merges what arrives on <device>/set into the state and publishes it, answers /get. */
class FakeZ2m {
  readonly state = new Map<string, Record<string, unknown>>();
  readonly received: Array<{ topic: string; payload: string }> = [];
  constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload) => this.onMessage(topic, payload.toString('utf8')));
  }

  static async start(url: string): Promise<FakeZ2m> {
    const client = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 100 });
    const fake = new FakeZ2m(client);
    await client.subscribeAsync(['zigbee2mqtt/+/set', 'zigbee2mqtt/+/get'], { qos: 1 });
    return fake;
  }

  private onMessage(topic: string, payload: string): void {
    this.received.push({ topic, payload });
    const m = /^(zigbee2mqtt\/[^/]+)\/(set|get)$/.exec(topic);
    if (!m) return;
    const base = m[1];
    const current = { ...(this.state.get(base) ?? {}) };
    const body = JSON.parse(payload) as Record<string, unknown>;
    if (m[2] === 'get') {
      for (const key of Object.keys(body)) current[key] ??= key.startsWith('state') ? 'OFF' : null;
    } else {
      Object.assign(current, body);
      if (body.state === 'OPEN') current.position = 100;
      if (body.state === 'CLOSE') current.position = 0;
      if (typeof body.position === 'number') current.state = body.position > 0 ? 'OPEN' : 'CLOSE';
    }
    this.state.set(base, current);
    void this.client.publishAsync(base, JSON.stringify(current));
  }

  sets(base: string): string[] {
    return this.received.filter((r) => r.topic === `${base}/set`).map((r) => r.payload);
  }
}

describe('Zigbee2MQTT discovery on a real broker', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let fake: FakeZ2m;
  let pub: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-z2m-'));
  const logs = logSink('debug');

  const publishRetained = (topic: string, payload: unknown) =>
    pub.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { retain: true, qos: 1 });
  const state = (id: string) => hearth.bridge.cache.get(id);
  const entitiesOf = (deviceId: string) => hearth.bridge.registry.device(deviceId)?.entities ?? [];
  const toolFor = (entityId: string) => {
    const tool = hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.length === 1 && t.meta.entityIds[0] === entityId);
    assert.ok(
      tool,
      `no actuator tool for ${entityId}: ${hearth.tools
        .all()
        .map((t) => t.name)
        .join(', ')}`,
    );
    return tool.name;
  };
  const call = (entityId: string, args: Record<string, unknown>) => hearth.tools.call(toolFor(entityId), args, OWNER);

  before(async () => {
    broker = await startAedes();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    // What a running Zigbee2MQTT leaves on the broker (device states retained, as with `retain: true`).
    await publishRetained('zigbee2mqtt/bridge/state', { state: 'online' });
    await publishRetained('zigbee2mqtt/bridge/info', INFO);
    await publishRetained('zigbee2mqtt/bridge/devices', DEVICES);
    for (const [name, s] of Object.entries(STATES)) await publishRetained(`zigbee2mqtt/${name}`, s);
    for (const d of DEVICES) if (d.definition) await publishRetained(`zigbee2mqtt/${d.friendly_name}/availability`, { state: 'online' });
    fake = await FakeZ2m.start(broker.url);
    for (const [name, s] of Object.entries(STATES)) fake.state.set(`zigbee2mqtt/${name}`, { ...s });

    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homeassistant.enabled': false, 'discovery.homie.enabled': false });
    await waitFor('the six Zigbee2MQTT devices', () => Object.values(ID).every((id) => hearth.bridge.registry.device(id)), 5000);
  });

  after(async () => {
    await fake?.client.endAsync(true).catch(() => undefined);
    await pub?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('turns bridge/devices into devices and entities of the right kinds', () => {
    const kinds = (id: string) => Object.fromEntries(entitiesOf(id).map((e) => [e.key, e.kind]));
    assert.equal(hearth.bridge.registry.device(ID.light)!.name, 'Living room light');
    assert.equal(hearth.bridge.registry.device(ID.light)!.manufacturer, 'IKEA');
    assert.equal(kinds(ID.light).light, 'light');
    // The light's color_temp is set through the light (in kelvin), not as a number of its own.
    assert.equal(kinds(ID.light).color_temp, undefined);
    assert.equal(kinds(ID.light).color_temp_startup, 'number');
    assert.equal(kinds(ID.light).power_on_behavior, 'select');
    assert.equal(kinds(ID.light).identify, 'button');
    assert.equal(kinds(ID.switch).switch_left, 'switch');
    assert.equal(kinds(ID.switch).switch_right, 'switch');
    assert.equal(kinds(ID.switch).power, 'sensor');
    assert.equal(kinds(ID.switch).operation_mode_left, 'select');
    assert.equal(kinds(ID.heater).climate, 'climate');
    assert.equal(kinds(ID.heater).unoccupied_heating_setpoint, 'number');
    assert.equal(kinds(ID.blind).cover, 'cover');
    assert.equal(kinds(ID.blind).battery, 'sensor');
    assert.equal(kinds(ID.lock).lock, 'lock');
    assert.equal(kinds(ID.lock).battery_low, 'binary_sensor');
    assert.deepEqual(Object.values(kinds(ID.sensor)).sort(), ['sensor', 'sensor', 'sensor', 'sensor', 'sensor']);

    const light = hearth.bridge.registry.entity(`${ID.light}.light`)!;
    assert.equal(light.stateTopic, 'zigbee2mqtt/Living room light');
    assert.equal(light.commandTopic, 'zigbee2mqtt/Living room light/set');
    assert.equal(light.commandFormat, 'json');
    assert.deepEqual(light.ranges.brightness, { min: 0, max: 254, step: 1 });
    assert.deepEqual(light.colorTemp, { minKelvin: 2200, maxKelvin: 4000, unit: 'mired', mireds: { min: 250, max: 454 } });
    const sw = hearth.bridge.registry.entity(`${ID.switch}.switch_left`)!;
    assert.equal(sw.valuePath, 'state_left');
    assert.equal(sw.name, 'Hall switch left');
    const heater = hearth.bridge.registry.entity(`${ID.heater}.climate`)!;
    assert.deepEqual(heater.options.mode, ['off', 'heat', 'auto']);
    assert.deepEqual(heater.ranges.temperature, { min: 7, max: 28, step: 0.5 });

    // The coordinator and the half-interviewed device are skipped, each with a logged reason.
    const skipped = logs.find(/^zigbee2mqtt: skipped /);
    assert.ok(
      skipped.some((l) => l.reason === 'coordinator'),
      JSON.stringify(skipped),
    );
    assert.ok(
      skipped.some((l) => l.reason === 'no_definition' && /interview/.test(l.msg)),
      JSON.stringify(skipped),
    );
    // And the exposes with no tool of their own are listed per device.
    assert.ok(logs.find(/exposes of "Living room light" have no tool/).length === 1);
  });

  it('mirrors state from zigbee2mqtt/<friendly_name>', async () => {
    // Retained states arrive in any order: wait for every one asserted below.
    await waitFor(
      'retained states',
      () =>
        state(`${ID.light}.light`)?.value === 'on' &&
        [`${ID.heater}.climate`, `${ID.blind}.cover`, `${ID.lock}.lock`, `${ID.lock}.battery_low`, `${ID.sensor}.temperature`].every(
          (id) => state(id)?.value !== undefined,
        ),
    );
    assert.equal(state(`${ID.light}.light`)!.attributes.brightness, 180);
    assert.equal(state(`${ID.light}.light`)!.attributes.color_temp, 370);
    const heater = state(`${ID.heater}.climate`)!;
    assert.equal(heater.value, 'heat');
    assert.deepEqual(heater.attributes, { temperature: 20, current_temperature: 19.4, action: 'heat' });
    assert.equal(state(`${ID.blind}.cover`)!.value, 'closed');
    assert.equal(state(`${ID.blind}.cover`)!.attributes.position, 0);
    assert.equal(state(`${ID.lock}.lock`)!.value, 'locked');
    assert.equal(state(`${ID.lock}.lock`)!.attributes.lock_state, 'locked');
    assert.equal(state(`${ID.lock}.battery_low`)!.value, 'off');
    assert.equal(state(`${ID.sensor}.temperature`)!.value, 12.3);
    // A live (not retained) report, the way Zigbee2MQTT publishes by default.
    await pub.publishAsync('zigbee2mqtt/Balcony sensor', JSON.stringify({ ...STATES['Balcony sensor'], temperature: 13.1 }));
    await waitFor('new temperature', () => state(`${ID.sensor}.temperature`)?.value === 13.1);
    const text = await hearth.tools.call('get_state', { entity: `${ID.sensor}.temperature` }, OWNER);
    assert.match(text.text!, /13\.1 °C/);
  });

  it('asks a device with no reported state once, with /get, for its gettable properties', async () => {
    const get = await waitFor('a /get to the wall switch', () => fake.received.find((r) => r.topic === 'zigbee2mqtt/Hall switch/get'), 5000);
    assert.deepEqual(Object.keys(JSON.parse(get.payload)).sort(), ['state_left', 'state_right']);
    await waitFor('switch state from the answer', () => state(`${ID.switch}.switch_left`)?.value === 'off');
    // Battery devices are never woken; devices that reported are not asked.
    assert.equal(fake.received.filter((r) => r.topic.endsWith('/get')).length, 1);
  });

  it('follows availability: the device topic and the bridge state', async () => {
    await waitFor('lock online', () => state(`${ID.lock}.lock`)?.available === true);
    await pub.publishAsync('zigbee2mqtt/Front door lock/availability', JSON.stringify({ state: 'offline' }), { retain: true });
    await waitFor('lock offline', () => state(`${ID.lock}.lock`)?.available === false);
    const refused = await call(`${ID.lock}.lock`, { action: 'lock' });
    assert.match(refused.text!, /offline/);
    assert.equal(fake.sets('zigbee2mqtt/Front door lock').length, 0);
    await pub.publishAsync('zigbee2mqtt/Front door lock/availability', JSON.stringify({ state: 'online' }), { retain: true });
    await waitFor('lock online again', () => state(`${ID.lock}.lock`)?.available === true);
    // Zigbee2MQTT itself going away makes every device unavailable.
    await pub.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'offline' }), { retain: true });
    await waitFor('all offline with the bridge', () => Object.values(ID).every((id) => state(`${entitiesOf(id)[0].id}`)?.available === false));
    await pub.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true });
    await waitFor('back with the bridge', () => state(`${ID.light}.light`)?.available === true);
  });

  it('sends commands as JSON to <device>/set and confirms them from the echo', async () => {
    const light = `${ID.light}.light`;
    const on = await call(light, { action: 'turn_on', brightness: 100 });
    assert.match(on.text!, /^confirmed: .*on, brightness 39% \(100 of 254\)/);
    assert.deepEqual(fake.sets('zigbee2mqtt/Living room light').at(-1), '{"state":"ON","brightness":100}');
    const warm = await call(light, { action: 'turn_on', color_temp: 2700 });
    assert.match(warm.text!, /^confirmed: .*colour temperature about 2700 K \(warm white\)/, warm.text);
    assert.deepEqual(fake.sets('zigbee2mqtt/Living room light').at(-1), '{"state":"ON","color_temp":370}');
    assert.match((await call(light, { action: 'turn_off' })).text!, /^confirmed: .*off/);
    assert.equal(fake.sets('zigbee2mqtt/Living room light').at(-1), '{"state":"OFF"}');

    assert.match((await call(`${ID.switch}.switch_right`, { action: 'turn_on' })).text!, /^confirmed/);
    assert.equal(fake.sets('zigbee2mqtt/Hall switch').at(-1), '{"state_right":"ON"}');

    const heater = `${ID.heater}.climate`;
    assert.match((await call(heater, { action: 'set_temperature', temperature: 21.5 })).text!, /^confirmed: .*target temperature 21\.5 °C/);
    assert.equal(fake.sets('zigbee2mqtt/Bathroom heater').at(-1), '{"occupied_heating_setpoint":21.5}');
    assert.match((await call(heater, { action: 'set_mode', mode: 'off' })).text!, /^confirmed: .*mode off/);
    assert.equal(fake.sets('zigbee2mqtt/Bathroom heater').at(-1), '{"system_mode":"off"}');
    assert.match((await call(`${ID.heater}.unoccupied_heating_setpoint`, { value: 17 })).text!, /^confirmed/);
    assert.equal(fake.sets('zigbee2mqtt/Bathroom heater').at(-1), '{"unoccupied_heating_setpoint":17}');

    assert.match((await call(`${ID.blind}.cover`, { action: 'set_position', position: 40 })).text!, /^confirmed: .*position 40%/);
    assert.equal(fake.sets('zigbee2mqtt/Bedroom blind').at(-1), '{"position":40}');
    assert.match((await call(`${ID.blind}.cover`, { action: 'close' })).text!, /^confirmed: .*closed/);
    assert.equal(fake.sets('zigbee2mqtt/Bedroom blind').at(-1), '{"state":"CLOSE"}');

    // The lock reports UNLOCK after someone opened it by hand; locking it is confirmed by LOCK.
    await pub.publishAsync('zigbee2mqtt/Front door lock', JSON.stringify({ ...STATES['Front door lock'], state: 'UNLOCK', lock_state: 'unlocked' }));
    fake.state.set('zigbee2mqtt/Front door lock', { ...STATES['Front door lock'], state: 'UNLOCK' });
    await waitFor('unlocked', () => state(`${ID.lock}.lock`)?.value === 'unlocked');
    assert.match((await call(`${ID.lock}.lock`, { action: 'lock' })).text!, /^confirmed: .*locked/);
    assert.equal(fake.sets('zigbee2mqtt/Front door lock').at(-1), '{"state":"LOCK"}');
    // Unlocking needs a person, even for an owner (the built-in rule).
    assert.match((await call(`${ID.lock}.lock`, { action: 'unlock' })).text!, /^needs approval/);

    // Settings (Zigbee2MQTT's category config) are not shown to agents until a person exposes them.
    assert.equal(hearth.bridge.registry.entity(`${ID.light}.power_on_behavior`)?.exposed, false);
    assert.ok(!hearth.tools.all().some((t) => t.meta.entityIds.includes(`${ID.light}.power_on_behavior`)));
    hearth.home.exposeEntity(`${ID.light}.power_on_behavior`, true);
    hearth.home.exposeEntity(`${ID.light}.identify`, true);
    assert.match((await call(`${ID.light}.power_on_behavior`, { option: 'on' })).text!, /^confirmed/);
    assert.equal(fake.sets('zigbee2mqtt/Living room light').at(-1), '{"power_on_behavior":"on"}');
    assert.match((await call(`${ID.light}.identify`, {})).text!, /^confirmed: pressed/);
    // A button has no state to wait for: the result comes at the broker's PUBACK, the device gets it right after.
    await waitFor('identify at the device', () => fake.sets('zigbee2mqtt/Living room light').at(-1) === '{"identify":"identify"}');

    const ids = new Set(Object.values(ID));
    const rows = hearth.audit.tail(20).filter((r) => r.entityId && ids.has(r.entityId.split('.')[0]!));
    assert.ok(rows.length >= 10 && rows.every((r) => r.outcome !== 'pending'));
  });

  it('reads plain online/offline availability (legacy payloads) too', async () => {
    await pub.publishAsync('zigbee2mqtt/Bedroom blind/availability', 'offline', { retain: true });
    await waitFor('blind offline (plain)', () => state(`${ID.blind}.cover`)?.available === false);
    await pub.publishAsync('zigbee2mqtt/bridge/state', 'online', { retain: true });
    await pub.publishAsync('zigbee2mqtt/Bedroom blind/availability', 'online', { retain: true });
    await waitFor('blind online (plain)', () => state(`${ID.blind}.cover`)?.available === true);
    assert.equal(logs.find(/skipped a payload: availability/).length, 0, 'no availability payload was refused');
    // And back to JSON.
    await pub.publishAsync('zigbee2mqtt/Bedroom blind/availability', JSON.stringify({ state: 'offline' }), { retain: true });
    await waitFor('blind offline (JSON)', () => state(`${ID.blind}.cover`)?.available === false);
    await pub.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true });
    await pub.publishAsync('zigbee2mqtt/Bedroom blind/availability', JSON.stringify({ state: 'online' }), { retain: true });
    await waitFor('blind online (JSON)', () => state(`${ID.blind}.cover`)?.available === true);
  });

  it('follows a rename (once an owner confirms it) and a removal in a later bridge/devices', async () => {
    const later = DEVICES.filter((d) => d.friendly_name !== 'Balcony sensor').map((d) =>
      d.friendly_name === 'Living room light' ? { ...d, friendly_name: 'Lounge light' } : d,
    );
    await publishRetained('zigbee2mqtt/bridge/devices', later);
    // A rename moves the light's command topic: a forged list looks the same, so it waits for an owner.
    const waiting = await waitFor('the move waiting', () =>
      hearth.bridge.registry.refusedClaims().find((r) => r.refused.id === `${ID.light}.light` && r.movedFrom),
    );
    assert.deepEqual([waiting.topic, ...waiting.movedFrom!], ['zigbee2mqtt/Lounge light/set', 'zigbee2mqtt/Living room light/set']);
    assert.ok(hearth.bridge.registry.confirmMove(ID.light, 'zigbee2mqtt/Lounge light/set').moved.length);
    await waitFor('renamed', () => hearth.bridge.registry.device(ID.light)?.name === 'Lounge light');
    await waitFor('removed', () => !hearth.bridge.registry.device(ID.sensor));
    const light = hearth.bridge.registry.entity(`${ID.light}.light`)!;
    assert.equal(light.id, `${ID.light}.light`, 'a rename keeps the ids');
    assert.equal(light.stateTopic, 'zigbee2mqtt/Lounge light');
    assert.equal(light.commandTopic, 'zigbee2mqtt/Lounge light/set');
    assert.ok(hearth.tools.get('lounge_light'));
    assert.equal(hearth.tools.get('living_room_light'), undefined);
    assert.ok(!hearth.tools.all().some((t) => t.meta.entityIds.some((id) => id.startsWith(ID.sensor))));
    // Not retained: sent once the broker has acknowledged Hearth's subscription to the new topic (the SUBSCRIBE
    // went out with the confirmed move; a busy broker may route a publish from another client before it).
    assert.ok(hearth.bridge.connection.subscriptions.has('zigbee2mqtt/Lounge light'), 'Hearth reads the new topic');
    const acked = await hearth.bridge.connection.whenSubscribed(['zigbee2mqtt/Lounge light'], 20_000);
    assert.notEqual(acked, false, 'the broker acknowledged the subscription to the new topic');
    await pub.publishAsync('zigbee2mqtt/Lounge light', JSON.stringify({ state: 'ON', brightness: 33 }));
    await waitFor('state from the new topic', () => state(`${ID.light}.light`)?.attributes.brightness === 33);
    fake.state.set('zigbee2mqtt/Lounge light', { state: 'ON', brightness: 33 });
    assert.match((await call(`${ID.light}.light`, { action: 'turn_off' })).text!, /^confirmed/);
    assert.equal(fake.sets('zigbee2mqtt/Lounge light').at(-1), '{"state":"OFF"}');
    assert.ok(logs.find(/was renamed "Lounge light"/).length === 1);
    assert.ok(logs.find(/"Balcony sensor" left the network/).length === 1);
  });

  it('a device file with the same id wins over discovery', async () => {
    const file = join(dir, 'blind.yaml');
    writeFileSync(
      file,
      `devices:
  - id: ${ID.blind}
    name: Blind from a file
    entities:
      blind:
        kind: cover
        state_topic: zigbee2mqtt/Bedroom blind
        value_path: state
        states: { open: OPEN, closed: CLOSE }
        command_topic: zigbee2mqtt/Bedroom blind/set
        command_format: json
`,
    );
    (hearth.bridge as unknown as { paths: string[] }).paths.push(file);
    hearth.bridge.loadDevices();
    const device = hearth.bridge.registry.device(ID.blind)!;
    assert.equal(device.source, file);
    assert.equal(device.name, 'Blind from a file');
    assert.deepEqual(
      device.entities.map((e) => e.key),
      ['blind'],
    );
    // A later bridge/devices does not take it back.
    await publishRetained('zigbee2mqtt/bridge/devices', DEVICES);
    await waitFor('sensor back', () => hearth.bridge.registry.device(ID.sensor));
    assert.equal(hearth.bridge.registry.device(ID.blind)!.source, file);
  });
});

describe('Zigbee2MQTT true/false settings on a real broker', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let fake: FakeZ2m;
  let pub: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-z2m-literal-'));
  const NAME = 'Hall thermostat';

  before(async () => {
    // A real definition with a true/false setting: Centralite 3157100's temperature_setpoint_hold.
    const entry = await z2mEntry('3157100', '0x000d6f0011223344', NAME);
    broker = await startAedes();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    const initial = { temperature_setpoint_hold: false, local_temperature: 20.5, occupied_heating_setpoint: 20, system_mode: 'heat' };
    await pub.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true, qos: 1 });
    await pub.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify([entry]), { retain: true, qos: 1 });
    await pub.publishAsync(`zigbee2mqtt/${NAME}`, JSON.stringify(initial), { retain: true, qos: 1 });
    fake = await FakeZ2m.start(broker.url);
    fake.state.set(`zigbee2mqtt/${NAME}`, { ...initial });
    hearth = await openHearth(broker.url, dir, logSink('warn').log, { 'discovery.homeassistant.enabled': false, 'discovery.homie.enabled': false });
    await waitFor('the thermostat', () => hearth.bridge.registry.entity('hall_thermostat.temperature_setpoint_hold'), 5000);
  });
  after(async () => {
    await fake?.client.endAsync(true).catch(() => undefined);
    await pub?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is a switch that sends a JSON boolean, not the text "false", and reads the boolean back', async () => {
    const id = 'hall_thermostat.temperature_setpoint_hold';
    assert.equal(hearth.bridge.registry.entity(id)!.kind, 'switch');
    await waitFor('the retained hold state', () => hearth.bridge.cache.get(id)?.value === 'off');
    const tool = hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(id))!;
    assert.ok(tool, 'the setting is an actuator tool');
    const on = await hearth.tools.call(tool.name, { action: 'turn_on' }, OWNER);
    assert.match(on.text!, /^confirmed: .*: on;/, on.text);
    assert.equal(fake.sets(`zigbee2mqtt/${NAME}`).at(-1), '{"temperature_setpoint_hold":true}');
    const off = await hearth.tools.call(tool.name, { action: 'turn_off' }, OWNER);
    assert.match(off.text!, /^confirmed: .*: off;/, off.text);
    assert.equal(fake.sets(`zigbee2mqtt/${NAME}`).at(-1), '{"temperature_setpoint_hold":false}');
  });
});

describe('Zigbee2MQTT: a setting that changes how availability is read, on a real broker', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let pub: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-z2m-reread-'));
  const NAME = 'Hallway motion';
  const ID = 'hallway_motion.occupancy';
  const info = (enabled: boolean) => ({ ...(INFO as object), config: { ...(INFO as { config: object }).config, availability: { enabled } } });
  const publishRetained = (topic: string, payload: unknown) => pub.publishAsync(topic, JSON.stringify(payload), { retain: true, qos: 1 });

  before(async () => {
    // An Aqara motion sensor: its occupancy is true/false, read as ON/OFF (a transform that is a closure).
    const entry = await z2mEntry('RTCGQ11LM', '0x00158d0003c4d5e6', NAME);
    broker = await startAedes();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await publishRetained('zigbee2mqtt/bridge/state', { state: 'online' });
    await publishRetained('zigbee2mqtt/bridge/info', info(true));
    await publishRetained('zigbee2mqtt/bridge/devices', [entry]);
    await publishRetained(`zigbee2mqtt/${NAME}`, { occupancy: true, illuminance: 30, battery: 90 });
    // Its availability was last said while Zigbee2MQTT still tracked it: offline.
    await publishRetained(`zigbee2mqtt/${NAME}/availability`, { state: 'offline' });
    hearth = await openHearth(broker.url, dir, logSink('warn').log, { 'discovery.homeassistant.enabled': false, 'discovery.homie.enabled': false });
    await waitFor('the sensor, offline', () => hearth.bridge.cache.get(ID)?.available === false && hearth.bridge.cache.get(ID)?.value === 'on', 5000);
  });
  after(async () => {
    await pub?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('device availability turned off: the bridge alone decides, read again from its retained state; the device topic is not subscribed again', async () => {
    const subscribes = subscribesAt(broker, hearth.bridge.connection.client.options.clientId!);
    try {
      // The owner turns availability off in Zigbee2MQTT, which says so in bridge/info and no longer publishes <device>/availability.
      await publishRetained('zigbee2mqtt/bridge/info', info(false));
      await waitFor('the sensor available, as the bridge says', () => hearth.bridge.cache.get(ID)?.available === true, 5000);
      assert.equal(hearth.bridge.cache.get(ID)!.value, 'on', 'its occupancy is kept: read the same way');
      assert.ok(!hearth.bridge.connection.subscriptions.has(`zigbee2mqtt/${NAME}/availability`));
      // The list was converted again (new entities, new transforms): only the bridge state is read again.
      assert.deepEqual(subscribes.topics, ['zigbee2mqtt/bridge/state']);
    } finally {
      subscribes.stop();
    }
  });
});
