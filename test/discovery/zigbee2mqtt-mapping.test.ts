// The Zigbee2MQTT mapping case by case, and the adapter's handling of
// bridge/info, bad lists, duplicates and availability, without a broker.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { encodeCommand } from '../../src/devices/commands.js';
import { CONVERT_SLICE, Zigbee2mqttAdapter } from '../../src/devices/discovery/zigbee2mqtt/adapter.js';
import { availabilityWord, convertDevice } from '../../src/devices/discovery/zigbee2mqtt/device.js';
import { Message, normalizeValue } from '../../src/devices/decode.js';
import type { Z2mExpose } from '../../src/devices/discovery/zigbee2mqtt/types.js';
import { DeviceRegistry } from '../../src/devices/registry.js';
import type { MqttConnection } from '../../src/mqtt/connection.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const OPTIONS = { prefix: 'zigbee2mqtt', deviceAvailability: true };
const IEEE = '0x00158d0001a2b3c4';

function convert(exposes: Z2mExpose[], extra: Record<string, unknown> = {}) {
  return convertDevice({ ieee_address: IEEE, friendly_name: 'Dev', definition: { model: 'M', vendor: 'V', exposes }, ...extra }, OPTIONS);
}
const binary = (name: string, access: number, on: unknown = 'ON', off: unknown = 'OFF', endpoint?: string): Z2mExpose => ({
  type: 'binary',
  name,
  property: endpoint ? `${name}_${endpoint}` : name,
  access,
  value_on: on,
  value_off: off,
  ...(endpoint ? { endpoint } : {}),
});

describe('Zigbee2MQTT mapping', () => {
  it('maps generic exposes by type and access bits', () => {
    const c = convert([
      binary('occupancy', 1, true, false),
      binary('child_lock', 3, 'LOCK', 'UNLOCK'),
      binary('led_enable', 3, true, false),
      { type: 'numeric', name: 'temperature', property: 'temperature', access: 1, unit: '°C' },
      { type: 'numeric', name: 'duration', property: 'duration', access: 7, value_min: 0, value_max: 3600, value_step: 10, unit: 's' },
      { type: 'numeric', name: 'offset', property: 'offset', access: 3 },
      { type: 'enum', name: 'mode', property: 'mode', access: 3, values: ['a', 'b', ''] },
      { type: 'enum', name: 'action', property: 'action', access: 1, values: ['single', 'double'] },
      { type: 'enum', name: 'identify', property: 'identify', access: 2, values: ['identify'] },
      { type: 'enum', name: 'trv_mode', property: 'trv_mode', access: 7, values: [1, 2] },
      { type: 'text', name: 'label', property: 'label', access: 1 },
      { type: 'text', name: 'pin', property: 'pin', access: 2 },
      { type: 'composite', name: 'schedule', property: 'schedule', access: 3, features: [] },
      { type: 'list', name: 'alarms', property: 'alarms', access: 1 },
      { type: 'numeric', name: 'linkquality', property: 'linkquality', access: 1 },
      { type: 'gizmo', name: 'x', property: 'x', access: 1 },
    ]);
    const kinds = Object.fromEntries(c.device!.entities.map((e) => [e.key, e.kind]));
    assert.deepEqual(kinds, {
      occupancy: 'binary_sensor',
      child_lock: 'switch',
      led_enable: 'switch',
      temperature: 'sensor',
      duration: 'number',
      offset: 'sensor',
      mode: 'select',
      action: 'sensor',
      identify: 'button',
      trv_mode: 'sensor',
      label: 'sensor',
    });
    const e = (key: string) => c.device!.entities.find((x) => x.key === key)!;
    assert.equal(e('occupancy').deviceClass, 'occupancy');
    assert.deepEqual(e('duration').ranges.value, { min: 0, max: 3600, step: 10 });
    assert.equal(e('temperature').deviceClass, 'temperature');
    assert.deepEqual(e('mode').options.value, ['a', 'b']);
    assert.equal(e('identify').stateTopic, undefined);
    assert.deepEqual(encodeCommand(e('identify'), { action: 'press' }), [{ topic: 'zigbee2mqtt/Dev/set', payload: '{"identify":"identify"}' }]);
    assert.deepEqual(encodeCommand(e('child_lock'), { action: 'turn_on' }), [{ topic: 'zigbee2mqtt/Dev/set', payload: '{"child_lock":"LOCK"}' }]);
    // A true/false setting is sent as a JSON boolean, not the text "false" (truthy to many converters).
    assert.deepEqual(encodeCommand(e('led_enable'), { action: 'turn_off' }), [{ topic: 'zigbee2mqtt/Dev/set', payload: '{"led_enable":false}' }]);
    assert.deepEqual(encodeCommand(e('led_enable'), { action: 'turn_on' }), [{ topic: 'zigbee2mqtt/Dev/set', payload: '{"led_enable":true}' }]);
    const reasons = Object.fromEntries(c.skipped.map((s) => [s.what, `${s.reason}${s.partial ? ' (partial)' : ''}`]));
    assert.deepEqual(reasons, {
      offset: 'no_range (partial)',
      trv_mode: 'non_string_enum (partial)',
      pin: 'text_command',
      schedule: 'composite',
      alarms: 'list',
      linkquality: 'diagnostic',
      x: 'unknown_type',
    });
  });

  it('endpoints become separate entities addressed by their property', () => {
    const c = convert([
      { type: 'switch', endpoint: 'l1', features: [binary('state', 7, 'ON', 'OFF', 'l1')] },
      { type: 'switch', endpoint: 'l2', features: [binary('state', 7, 'ON', 'OFF', 'l2')] },
      { type: 'numeric', name: 'power', property: 'power_l1', endpoint: 'l1', access: 1, label: 'Power', unit: 'W' },
    ]);
    const [l1, l2, power] = c.device!.entities;
    assert.deepEqual([l1.key, l1.name, l1.valuePath], ['switch_l1', 'Dev l1', 'state_l1']);
    assert.deepEqual([l2.key, l2.name, l2.valuePath], ['switch_l2', 'Dev l2', 'state_l2']);
    assert.deepEqual([power.key, power.name, power.valuePath], ['power_l1', 'Dev Power l1', 'power_l1']);
    assert.deepEqual(encodeCommand(l2, { action: 'turn_off' }), [{ topic: 'zigbee2mqtt/Dev/set', payload: '{"state_l2":"OFF"}' }]);
    assert.deepEqual(c.refresh, ['state_l1', 'state_l2']);
  });

  it('odd property names become valid keys and exact JSON paths', () => {
    const c = convert([
      { type: 'numeric', name: 'ntc status', property: 'ntc status', access: 1 },
      { type: 'numeric', name: 'dimmingSpeedUpRemote', property: 'dimmingSpeedUpRemote', access: 7, value_min: 0, value_max: 127 },
      { type: 'numeric', name: 'a.b', property: 'a.b', access: 1 },
    ]);
    const got = c.device!.entities.map((e) => [e.key, e.valuePath]);
    assert.deepEqual(got, [
      ['ntc_status', 'ntc status'],
      ['dimmingspeedupremote', 'dimmingSpeedUpRemote'],
      ['a_b', "['a.b']"],
    ]);
    assert.deepEqual(encodeCommand(c.device!.entities[1], { action: 'set_value', value: 5 }), [
      { topic: 'zigbee2mqtt/Dev/set', payload: '{"dimmingSpeedUpRemote":5}' },
    ]);
  });

  it('a fan takes presets from fan_mode and speed as a percentage; without an on/off state it is generic', () => {
    const c = convert([
      {
        type: 'fan',
        features: [
          binary('state', 7, 'ON', 'OFF'),
          { type: 'numeric', name: 'speed', property: 'speed', access: 7, value_min: 1, value_max: 254 },
          { type: 'enum', name: 'mode', property: 'fan_mode', access: 7, values: ['low', 'high', 'auto'] },
        ],
      },
    ]);
    const fan = c.device!.entities[0];
    assert.equal(fan.kind, 'fan');
    assert.deepEqual(fan.attributes, { preset_mode: { path: 'fan_mode' }, percentage: { path: 'speed' } });
    assert.deepEqual(fan.ranges.percentage, { min: 1, max: 254, step: 1 });
    assert.deepEqual(encodeCommand(fan, { action: 'set_preset_mode', preset_mode: 'auto' }), [
      { topic: 'zigbee2mqtt/Dev/set', payload: '{"fan_mode":"auto"}' },
    ]);
    const bare = convert([{ type: 'fan', features: [{ type: 'enum', name: 'mode', property: 'fan_mode', access: 7, values: ['low', 'high'] }] }]);
    assert.deepEqual(
      bare.device!.entities.map((e) => [e.key, e.kind]),
      [['fan_mode', 'select']],
    );
  });

  it('a cover without STOP offers no stop; a climate without system_mode still sets its temperature', () => {
    const cover = convert([{ type: 'cover', features: [{ type: 'enum', name: 'state', property: 'state', access: 3, values: ['OPEN', 'CLOSE'] }] }]).device!
      .entities[0];
    assert.deepEqual(cover.payloads, { open: 'OPEN', close: 'CLOSE' });
    const trv = convert([
      {
        type: 'climate',
        features: [
          { type: 'numeric', name: 'current_heating_setpoint', property: 'current_heating_setpoint', access: 3, value_min: 5, value_max: 30, unit: '°C' },
          { type: 'numeric', name: 'local_temperature', property: 'local_temperature', access: 1, unit: '°C' },
          { type: 'enum', name: 'preset', property: 'preset', access: 3, values: ['comfort', 'eco'] },
        ],
      },
    ]).device!.entities;
    assert.deepEqual(
      trv.map((e) => [e.key, e.kind]),
      [
        ['climate', 'climate'],
        ['preset', 'select'],
      ],
    );
    assert.deepEqual(trv[0].ranges.temperature, { min: 5, max: 30, step: 0.5 });
    assert.deepEqual(encodeCommand(trv[0], { action: 'set_temperature', temperature: 19.5 }), [
      { topic: 'zigbee2mqtt/Dev/set', payload: '{"current_heating_setpoint":19.5}' },
    ]);
  });

  it('skips whole devices with the reason', () => {
    const reason = (entry: Record<string, unknown>) => convertDevice(entry, OPTIONS).skipped[0]?.reason;
    assert.equal(reason({ ieee_address: IEEE, type: 'Coordinator', friendly_name: 'Coordinator', definition: null }), 'coordinator');
    assert.equal(reason({ ieee_address: IEEE, friendly_name: 'x', disabled: true, definition: { exposes: [] } }), 'disabled');
    assert.equal(reason({ ieee_address: IEEE, friendly_name: 'x', definition: null, interview_completed: false }), 'no_definition');
    assert.equal(reason({ ieee_address: 'nope', friendly_name: 'x' }), 'malformed');
    assert.equal(reason({ ieee_address: IEEE, friendly_name: 'a/+/b', definition: { exposes: [binary('state', 7)] } }), 'bad_friendly_name');
    assert.equal(reason({ ieee_address: IEEE, friendly_name: 'x', definition: { exposes: [] } }), 'no_exposes');
    assert.equal(reason({ ieee_address: IEEE, friendly_name: 'x', definition: { exposes: [{ type: 'list', property: 'l', access: 1 }] } }), 'no_entities');
  });

  it('device names are device data: control characters go and length is capped', () => {
    const c = convertDevice({ ieee_address: IEEE, friendly_name: `Lamp\u0007 ${'x'.repeat(300)}`, definition: { exposes: [binary('state', 7)] } }, OPTIONS);
    assert.ok(c.device!.name.length <= 120);
    assert.ok(!/\u0007/.test(c.device!.name));
    assert.equal(c.device!.entities[0].stateTopic, `zigbee2mqtt/Lamp\u0007 ${'x'.repeat(300)}`, 'topics keep the exact name');
  });
});

describe('Zigbee2MQTT adapter', () => {
  const setup = () => {
    const logs = logSink('debug');
    const published: Array<[string, string]> = [];
    const connection = Object.assign(new EventEmitter(), {
      connected: true,
      subscribed: [] as string[],
      subscribe(topics: string[]) {
        this.subscribed.push(...topics);
      },
      unsubscribe() {},
      publish: async (topic: string, payload: string) => void published.push([topic, payload]),
    });
    const registry = new DeviceRegistry();
    const adapter = new Zigbee2mqttAdapter({ prefix: 'z2m/', refreshAfterMs: 30 });
    adapter.start({ connection: connection as unknown as MqttConnection, registry, log: logs.log, config: {} as never });
    const send = (topic: string, payload: unknown) =>
      connection.emit('message', topic, Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload)), true);
    return { logs, connection, registry, adapter, send, published };
  };
  const entry = (ieee: string, name: string, power = 'Mains (single phase)') => ({
    ieee_address: ieee,
    friendly_name: name,
    power_source: power,
    definition: { exposes: [{ type: 'light', features: [binary('state', 7)] }] },
  });

  it('converts a long list a slice at a time, other messages handled in between; a newer list supersedes one still converting', async () => {
    const { registry, send, connection, adapter } = setup();
    const ieee = (i: number) => `0x${(0x00124b0000000000 + i).toString(16).padStart(16, '0')}`;
    const long = Array.from({ length: CONVERT_SLICE * 3 }, (_, i) => entry(ieee(i), `Lamp ${i}`));
    send('z2m/bridge/devices', long);
    assert.equal(registry.devices().length, 0, 'not converted in one go');
    // The event loop is free between slices: a message sent now is handled before the list is done.
    let heard = -1;
    connection.on('message', () => (heard = registry.devices().length));
    await new Promise((r) => setImmediate(r));
    send('z2m/other', 'x');
    assert.equal(heard, 0);
    await waitFor('the long list', () => registry.devices().length === long.length);
    // A long list, then at once a short one: the short one is what the registry ends with.
    send(
      'z2m/bridge/devices',
      long.map((e, i) => ({ ...e, friendly_name: `Renamed ${i}` })),
    );
    // (Under its own name: a renamed lamp's move to a new command topic would wait for an owner's confirmation.)
    send('z2m/bridge/devices', [entry(ieee(7), 'Lamp 7')]);
    assert.equal(registry.devices().length, 1);
    await new Promise((r) => setTimeout(r, 0));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.equal(registry.devices().length, 1);
    assert.equal(registry.devices()[0]!.name, 'Lamp 7');
    adapter.stop();
  });

  it('subscribes to bridge/devices, bridge/info and bridge/groups under its prefix', () => {
    const { connection, adapter } = setup();
    assert.deepEqual(connection.subscribed, ['z2m/bridge/devices', 'z2m/bridge/info', 'z2m/bridge/groups']);
    adapter.stop();
  });

  it('takes device availability from bridge/info, and reads both availability payload forms', () => {
    const { registry, send, adapter } = setup();
    send('z2m/bridge/devices', [entry('0x0000000000000001', 'A')]);
    const sources = () => registry.devices()[0].availability!.sources;
    assert.deepEqual(
      sources().map((s) => s.topic),
      ['z2m/bridge/state', 'z2m/A/availability'],
    );
    send('z2m/bridge/info', { version: '2.0.0', config: { availability: { enabled: false } } });
    assert.deepEqual(
      sources().map((s) => s.topic),
      ['z2m/bridge/state'],
    );
    send('z2m/bridge/info', { version: '1.35.1', config: { availability: true } });
    assert.deepEqual(
      sources().map((s) => s.topic),
      ['z2m/bridge/state', 'z2m/A/availability'],
    );
    const word = (payload: string) => availabilityWord(new Message('t', Buffer.from(payload)));
    assert.equal(word('{"state":"online"}'), 'online');
    assert.equal(word('offline'), 'offline');
    assert.equal(word(' online\n'), 'online');
    assert.equal(word(''), '');
    assert.equal(word('{"state":1}'), '');
    adapter.stop();
  });

  it('reads true/false binaries by their value_on: a contact sensor is on when open', () => {
    const c = convert([binary('contact', 1, false, true), binary('water_leak', 1, true, false)]);
    const [contact, leak] = c.device!.entities;
    const read = (e: typeof contact, payload: unknown) => normalizeValue(e, e.transform!(new Message('t', Buffer.from(JSON.stringify(payload)))));
    assert.equal(contact.deviceClass, 'opening');
    assert.equal(read(contact, { contact: false }), 'on');
    assert.equal(read(contact, { contact: true }), 'off');
    assert.equal(read(leak, { water_leak: true }), 'on');
    assert.equal(leak.transform!(new Message('t', Buffer.from('{"battery":50}'))), undefined, 'a message without the key changes nothing');
  });

  it('keeps the devices it has when a list is not JSON, drops them all when the list is cleared', () => {
    const { registry, send, logs, adapter } = setup();
    send('z2m/bridge/devices', [entry('0x0000000000000001', 'A'), entry('0x0000000000000001', 'A again')]);
    assert.equal(registry.devices().length, 1);
    assert.ok(logs.find(/skipped "A again": IEEE address .* is listed twice/).length === 1);
    send('z2m/bridge/devices', '{not json');
    assert.equal(registry.devices().length, 1);
    assert.ok(logs.find(/bridge\/devices is not JSON/).length === 1);
    send('z2m/bridge/devices', '');
    assert.equal(registry.devices().length, 0);
    adapter.stop();
  });

  it('says once which group it leaves out for a name Zigbee2MQTT refuses, with the group id and why, while the name stays', () => {
    const { registry, send, logs, adapter } = setup();
    const group = (id: number, friendly_name: string) => ({ id, friendly_name, members: [], scenes: [{ id: 1, name: 'Evening' }] });
    const groups = [group(3, 'Lounge lights'), group(4, 'Kitchen/2')];
    send('z2m/bridge/devices', [entry('0x0000000000000001', 'Kitchen')]);
    send('z2m/bridge/groups', groups);
    const said = () => logs.lines.filter((l) => l.group === 'Kitchen/2');
    assert.equal(said().length, 1, 'the left-out group is said');
    assert.equal(said()[0]!.level, 40, 'as a warning');
    assert.equal(
      said()[0]!.msg,
      'zigbee2mqtt: left out group "Kitchen/2" (id 4) and its scenes: it ends in /<digits>, which Zigbee2MQTT refuses (it names an endpoint of another device)',
    );
    assert.equal(said()[0]!.groupId, 4);
    // The other group's scene is there; none of the left-out one's.
    assert.deepEqual(
      registry
        .entities()
        .filter((e) => e.kind === 'scene')
        .map((e) => e.commandTopic),
      ['z2m/Lounge lights/set'],
    );
    // Zigbee2MQTT publishes bridge/groups again on any group change, and every list and bridge/info rebuild: no new line.
    send('z2m/bridge/groups', [...groups, group(5, 'Hall lights')]);
    send('z2m/bridge/devices', [entry('0x0000000000000001', 'Kitchen'), entry('0x0000000000000002', 'Hall lamp')]);
    send('z2m/bridge/info', { version: '2.1.3', config: { availability: { enabled: false } } });
    assert.equal(said().length, 1, 'said once while it stays');
    // Renamed away, then back: said again.
    send('z2m/bridge/groups', [group(3, 'Lounge lights'), group(4, 'Kitchen spots')]);
    send('z2m/bridge/groups', groups);
    assert.equal(said().length, 2);
    adapter.stop();
  });

  it('asks mains devices that stay silent with one /get, never battery ones', (t) => {
    // The adapter's clock is the test's: every wait it has (30 ms for a state, the gap between two /get) runs out
    // when the test says, whatever the machine's load.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { send, published, adapter } = setup();
    send('z2m/bridge/devices', [entry('0x0000000000000001', 'Quiet'), entry('0x0000000000000002', 'Talks'), entry('0x0000000000000003', 'Sleeps', 'Battery')]);
    send('z2m/Talks', { state: 'ON' });
    t.mock.timers.tick(200);
    assert.deepEqual(published, [['z2m/Quiet/get', '{"state":""}']]);
    // The same list again asks nobody again.
    send('z2m/bridge/devices', [entry('0x0000000000000001', 'Quiet')]);
    t.mock.timers.tick(200);
    assert.equal(published.length, 1);
    adapter.stop();
  });
});
