// What Hearth sends to Zigbee2MQTT devices, checked against Zigbee2MQTT's own converters (zigbee-herdsman-converters):
// each payload Hearth publishes for a tool call, built by Hearth's own code from the device's bridge/devices entry,
// is handed to the real definition's toZigbee converters as Zigbee2MQTT's publish extension does, and the Zigbee that
// comes out must mean what the call meant, with no key left unconverted ("No converter available" is a dropped key).
// The other way: the state Zigbee2MQTT publishes from the converters (their optimistic result and the device's
// reports through fromZigbee), on a real broker, confirms Hearth's call and reads as a person would say it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import * as zhc from 'zigbee-herdsman-converters';
import { encodeCommand } from '../../src/devices/commands.js';
import { convertDevice, endpointNamesOfList } from '../../src/devices/discovery/zigbee2mqtt/device.js';
import type { Entity } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import { toCommand } from '../../src/tools/parameters.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { actuatorTool, OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { type SimulatedZigbeeDevice, simulatedDevice, type ZigbeeCall } from '../helpers/zigbee2mqtt-converters.js';

// The converters log through a logger of their own: keep their warnings for a failed assertion, not the console.
const converterLog: string[] = [];
const keep = (level: string) => (m: unknown, ns?: string) => void converterLog.push(`${level} ${ns ?? ''}: ${typeof m === 'function' ? m() : m}`);
zhc.setLogger({ debug: () => undefined, info: () => undefined, warning: keep('warning'), error: keep('error') });

const OPTIONS = { prefix: 'zigbee2mqtt', deviceAvailability: true };

/** The fixture homes' kinds, each a real definition (vendor file, model), named as an owner names it. */
const HOME = {
  hue: [
    'philips',
    '9290022166',
    '0x0017880104a1b2c1',
    'Living room/Floor lamp',
    { state: 'OFF', brightness: 120, color: { x: 0.46, y: 0.41 }, color_mode: 'xy' },
  ],
  ikeaColour: [
    'ikea',
    'LED1624G9',
    '0x000d6ffffe1b2c4e',
    'Kitchen/Colour bulb',
    { state: 'OFF', brightness: 254, color_mode: 'xy', color: { x: 0.3, y: 0.3 } },
  ],
  dimmable: ['ikea', 'LED1836G9', '0x000d6ffffe7a8b9c', 'Bedroom/Bedside lamp', { state: 'OFF', brightness: 80 }],
  plug: ['lumi', 'ZNCZ02LM', '0x00158d0003c4d5e6', 'Kitchen/Coffee machine', { state: 'OFF', power: 0 }],
  wallSwitch: ['lumi', 'QBKG12LM', '0x00158d0002d4e5f6', 'Hallway/Wall switch', { state_left: 'OFF', state_right: 'OFF' }],
  blind: ['ikea', 'E1757', '0x000d6ffffe5c4d3e', 'Living room/Blind', { position: 100, state: 'OPEN', battery: 66 }],
  lock: ['yale', 'YRD426NRSC', '0x000b57fffe9a8b7c', 'Entrance/Front door lock', { state: 'UNLOCK', lock_state: 'unlocked', battery: 74 }],
  trv: [
    'eurotronic',
    'SPZB0001',
    '0x0015bc001b02a9f0',
    'Bedroom/Radiator',
    { local_temperature: 19.5, occupied_heating_setpoint: 17, system_mode: 'heat', battery: 87 },
  ],
  tuyaTrv: [
    'tuya',
    'TS0601_thermostat',
    '0xa4c1385f6e7d8c9b',
    'Kids room/Radiator',
    { local_temperature: 20.5, current_heating_setpoint: 18, system_mode: 'heat' },
  ],
  purifier: ['ikea', 'E2007', '0x000d6ffffe9f8e7d', 'Den/Air purifier', { fan_state: 'OFF', fan_mode: 'off', pm25: 8 }],
  siren: ['tuya', 'TS0216', '0xa4c1381a2b3c4d5e', 'Garden/Siren', { alarm: false, volume: 50, battery: 100 }],
  warningSiren: ['heiman', 'HS2WD-E', '0x000d6f000ff1a2b3', 'Hall/Siren', { battery: 90 }],
} as const;
type Name = keyof typeof HOME;

const newDevice = (name: Name): Promise<SimulatedZigbeeDevice> => {
  const [file, model, ieee, friendly, state] = HOME[name];
  return simulatedDevice(file, model, ieee, friendly, JSON.parse(JSON.stringify(state)));
};

/** The device's entity of this kind (or key), as Hearth's Zigbee2MQTT adapter makes it from the bridge/devices entry. */
function entityOf(sim: SimulatedZigbeeDevice, key: string): Entity {
  const converted = convertDevice(sim.entry, OPTIONS);
  const entity = converted.device?.entities.find((e) => e.key === key);
  if (!entity) throw new Error(`${sim.entry.friendly_name} has no entity ${key}: ${converted.device?.entities.map((e) => e.key).join(', ')}`);
  return entity;
}

/** A tool call's arguments through Hearth (toCommand, encodeCommand) and each payload through Zigbee2MQTT. */
async function call(sim: SimulatedZigbeeDevice, key: string, args: Record<string, unknown>): Promise<ZigbeeCall[]> {
  const entity = entityOf(sim, key);
  const messages = encodeCommand(entity, toCommand(entity, args));
  const calls: ZigbeeCall[] = [];
  for (const m of messages) {
    assert.equal(m.topic, `zigbee2mqtt/${sim.entry.friendly_name}/set`, 'Hearth publishes on the device set topic');
    const r = await sim.set(m.payload);
    assert.deepEqual(r.errors, [], `Zigbee2MQTT took every key of ${m.payload} (converter log: ${converterLog.slice(-3).join(' | ')})`);
    calls.push(...r.calls);
  }
  assert.ok(calls.length > 0, `${JSON.stringify(args)} sent nothing over the air`);
  return calls;
}

const commands = (calls: ZigbeeCall[]) => calls.filter((c): c is Extract<ZigbeeCall, { type: 'command' }> => c.type === 'command');
const only = (calls: ZigbeeCall[], cluster: string, command: string) => {
  const found = commands(calls).filter((c) => c.cluster === cluster && c.command === command);
  assert.equal(found.length, 1, `one ${cluster}.${command} in ${JSON.stringify(calls)}`);
  return found[0]!;
};
/** Zigbee's colour x and y are in 1/65535 steps. */
const xyOf = (payload: Record<string, unknown>) => ({ x: (payload.colorx as number) / 65535, y: (payload.colory as number) / 65535 });
const near = (a: number, b: number, within: number, what: string) => assert.ok(Math.abs(a - b) <= within, `${what}: ${a} is not within ${within} of ${b}`);

/** The name Zigbee2MQTT lists for an endpoint (lib/model/device.ts endpointName: the definition's last name for it, none for `default`). */
function endpointName(sim: SimulatedZigbeeDevice, id: number): string | undefined {
  const names = Object.entries((sim.definition.endpoint?.(sim.zh as never) ?? {}) as Record<string, number>).filter(([, ep]) => ep === id);
  const last = names.at(-1)?.[0];
  return last === 'default' ? undefined : last;
}

/**
 * Each scene entity Hearth makes from the device's entry, called as a tool: the topic Hearth publishes on, and the
 * endpoint Zigbee2MQTT's scene_recall converter sends genScenes recall to for it (the topic's endpoint part, as
 * Zigbee2MQTT resolves `<device>/<endpoint id>/set`; none for `<device>/set`).
 */
async function recallEach(sim: SimulatedZigbeeDevice) {
  const scenes = convertDevice(sim.entry, OPTIONS).device!.entities.filter((e) => e.kind === 'scene');
  const out: Array<{ key: string; name: string; topic: string; endpoint: number; sceneid: unknown }> = [];
  for (const entity of scenes) {
    for (const m of encodeCommand(entity, toCommand(entity, {}))) {
      const rest = m.topic.slice(`zigbee2mqtt/${sim.entry.friendly_name}/`.length).split('/');
      const r = await sim.set(m.payload, rest.length === 2 && rest[1] === 'set' ? rest[0] : undefined);
      assert.deepEqual(r.errors, []);
      const recall = only(r.calls, 'genScenes', 'recall');
      out.push({ key: entity.key, name: entity.name, topic: m.topic, endpoint: recall.endpoint, sceneid: recall.payload.sceneid });
    }
  }
  return out;
}

describe("Hearth's Zigbee2MQTT payloads through Zigbee2MQTT's toZigbee converters", () => {
  it('a colour bulb (Philips 9290022166): on, off, 40 %, red, a hex colour, 2700 K', async () => {
    const hue = await newDevice('hue');
    assert.deepEqual(only(await call(hue, 'light', { action: 'turn_on' }), 'genOnOff', 'on').payload, {});
    only(await call(hue, 'light', { action: 'turn_off' }), 'genOnOff', 'off');
    // 40 % of the bulb's 0-254 level.
    const level = only(await call(hue, 'light', { action: 'turn_on', brightness_pct: 40 }), 'genLevelCtrl', 'moveToLevelWithOnOff').payload.level as number;
    near(level, 0.4 * 254, 1, 'level for 40 %');
    // sRGB red's chromaticity (0.64, 0.33); #0000ff is blue's (0.15, 0.06).
    const red = xyOf(only(await call(hue, 'light', { action: 'turn_on', color: 'red' }), 'lightingColorCtrl', 'moveToColor').payload);
    near(red.x, 0.64, 0.005, 'x of red');
    near(red.y, 0.33, 0.005, 'y of red');
    const blue = xyOf(only(await call(hue, 'light', { action: 'turn_on', color: '#0000ff' }), 'lightingColorCtrl', 'moveToColor').payload);
    near(blue.x, 0.15, 0.005, 'x of #0000ff');
    near(blue.y, 0.06, 0.005, 'y of #0000ff');
    // 2700 K is 370 mireds, which the bulb takes as its colour temperature.
    assert.equal(only(await call(hue, 'light', { action: 'turn_on', color_temp_kelvin: 2700 }), 'lightingColorCtrl', 'moveToColorTemp').payload.colortemp, 370);
  });

  it('an IKEA colour bulb (LED1624G9) without colour temperature gets 2700 K as its warm white in xy', async () => {
    const bulb = await newDevice('ikeaColour');
    const red = xyOf(only(await call(bulb, 'light', { action: 'turn_on', color: 'red' }), 'lightingColorCtrl', 'moveToColor').payload);
    near(red.x, 0.64, 0.005, 'x of red');
    // The converter turns 370 mireds into the black body's chromaticity at 2700 K: about (0.46, 0.41).
    const warm = xyOf(only(await call(bulb, 'light', { action: 'turn_on', color_temp_kelvin: 2700 }), 'lightingColorCtrl', 'moveToColor').payload);
    near(warm.x, 0.46, 0.01, 'x of 2700 K');
    near(warm.y, 0.41, 0.01, 'y of 2700 K');
  });

  it('a dimmable bulb (LED1836G9): 40 % and off', async () => {
    const lamp = await newDevice('dimmable');
    near(
      only(await call(lamp, 'light', { action: 'turn_on', brightness_pct: 40 }), 'genLevelCtrl', 'moveToLevelWithOnOff').payload.level as number,
      101.6,
      1,
      'level',
    );
    only(await call(lamp, 'light', { action: 'turn_off' }), 'genOnOff', 'off');
  });

  it('a plug and a double wall switch: on and off, each rocker on its own endpoint', async () => {
    const plug = await newDevice('plug');
    only(await call(plug, 'switch', { action: 'turn_on' }), 'genOnOff', 'on');
    only(await call(plug, 'switch', { action: 'turn_off' }), 'genOnOff', 'off');
    const wall = await newDevice('wallSwitch');
    const left = only(await call(wall, 'switch_left', { action: 'turn_on' }), 'genOnOff', 'on');
    const right = only(await call(wall, 'switch_right', { action: 'turn_off' }), 'genOnOff', 'off');
    // QBKG12LM's definition: left is endpoint 1, right endpoint 2.
    assert.deepEqual([left.endpoint, right.endpoint], [1, 2]);
  });

  it('a blind (IKEA E1757): open, close, stop, and 40 % open (IKEA counts closed, so 60)', async () => {
    const blind = await newDevice('blind');
    only(await call(blind, 'cover', { action: 'open' }), 'closuresWindowCovering', 'upOpen');
    only(await call(blind, 'cover', { action: 'close' }), 'closuresWindowCovering', 'downClose');
    only(await call(blind, 'cover', { action: 'stop' }), 'closuresWindowCovering', 'stop');
    assert.deepEqual(only(await call(blind, 'cover', { action: 'set_position', position: 40 }), 'closuresWindowCovering', 'goToLiftPercentage').payload, {
      percentageliftvalue: 60,
    });
  });

  it('a lock (Yale YRD426NRSC): lock and unlock', async () => {
    const lock = await newDevice('lock');
    only(await call(lock, 'lock', { action: 'lock' }), 'closuresDoorLock', 'lockDoor');
    only(await call(lock, 'lock', { action: 'unlock' }), 'closuresDoorLock', 'unlockDoor');
  });

  it('a thermostat valve (Eurotronic SPZB0001): 21 °C in hundredths, and its mode', async () => {
    const trv = await newDevice('trv');
    const writes = (await call(trv, 'climate', { action: 'set_temperature', temperature: 21 })).filter((c) => c.type === 'write');
    assert.deepEqual(writes, [{ endpoint: 1, type: 'write', cluster: 'hvacThermostat', attributes: { occupiedHeatingSetpoint: 2100 } }]);
    // Eurotronic keeps its mode in its own host flags (attribute 0x4008): heat is 5 there, off 33.
    const heat = (await call(trv, 'climate', { action: 'set_mode', mode: 'heat' })).find((c) => c.type === 'write');
    assert.deepEqual(heat, { endpoint: 1, type: 'write', cluster: 'hvacThermostat', attributes: { 16392: { value: 5, type: 34 } } });
  });

  it('a Tuya thermostat (TS0601_thermostat): 21 °C as its data point 2 in tenths', async () => {
    const trv = await newDevice('tuyaTrv');
    const dp = only(await call(trv, 'climate', { action: 'set_temperature', temperature: 21 }), 'manuSpecificTuya', 'dataRequest').payload.dpValues as Array<{
      dp: number;
      data: Buffer;
    }>;
    assert.equal(dp.length, 1);
    assert.equal(dp[0]!.dp, 2);
    assert.equal(Buffer.from(dp[0]!.data).readUInt32BE(0), 210);
  });

  it('an air purifier (IKEA E2007): on, off and a preset', async () => {
    const fan = await newDevice('purifier');
    const write = (calls: ZigbeeCall[]) => calls.find((c) => c.type === 'write') as Extract<ZigbeeCall, { type: 'write' }>;
    // Fan mode 1 is auto (on), 0 is off.
    assert.deepEqual(write(await call(fan, 'fan', { action: 'turn_on' })).attributes, { fanMode: 1 });
    assert.deepEqual(write(await call(fan, 'fan', { action: 'turn_off' })).attributes, { fanMode: 0 });
    assert.deepEqual(write(await call(fan, 'fan', { action: 'set_preset_mode', preset_mode: '3' })).attributes, { fanMode: 20 });
  });

  it('sirens: an alarm switch (TS0216) and a warning device (HS2WD-E) sound and stop', async () => {
    // IAS WD startWarning: the warning mode is the top nibble of startwarninginfo, 0 is stop.
    const mode = (calls: ZigbeeCall[]) => (only(calls, 'ssIasWd', 'startWarning').payload.startwarninginfo as number) >> 4;
    const alarm = await newDevice('siren');
    assert.notEqual(mode(await call(alarm, 'alarm', { action: 'turn_on' })), 0);
    assert.equal(mode(await call(alarm, 'alarm', { action: 'turn_off' })), 0);
    const warning = await newDevice('warningSiren');
    const on = only(await call(warning, 'siren', { action: 'turn_on', duration: 30 }), 'ssIasWd', 'startWarning').payload;
    assert.equal((on.startwarninginfo as number) >> 4, 3, 'emergency');
    assert.equal(on.warningduration, 30);
    assert.equal(mode(await call(warning, 'siren', { action: 'turn_off' })), 0);
  });

  it('a colour bulb that speaks hue and saturation only (OSRAM AC03647): red and #0000ff in Zigbee hue steps', async () => {
    const [file, model] = ['osram', 'AC03647'];
    const bulb = await simulatedDevice(file, model, '0x8418260000a1b2c3', 'Hall/Ceiling bulb', { state: 'OFF' });
    assert.deepEqual(entityOf(bulb, 'light').colorModes, ['hs']);
    // Zigbee hue and saturation are 0-254: red is hue 0 at full saturation, blue 240 degrees (169 steps).
    const hs = (calls: ZigbeeCall[]) => only(calls, 'lightingColorCtrl', 'moveToHueAndSaturation').payload;
    const red = hs(await call(bulb, 'light', { action: 'turn_on', color: 'red' }));
    assert.deepEqual([red.hue, red.saturation], [0, 254]);
    near(hs(await call(bulb, 'light', { action: 'turn_on', color: '#0000ff' })).hue as number, (240 / 360) * 254, 1, 'hue of #0000ff');
  });

  it('scenes stored on a double switch (Heiman HS2SW2A): each is recalled on the endpoint that holds it, the same id on both too', async () => {
    const wall = await simulatedDevice('heiman', 'HS2SW2A/HS2SW2A-N', '0x0d6f0000a1b2c3d4', 'Hallway/Wall switch');
    // Scene 1 stored on both rockers, as Zigbee2MQTT 2.x lists them: with the name the definition gives each endpoint.
    wall.entry.endpoints = {
      1: { name: endpointName(wall, 1), scenes: [{ id: 1, name: 'Evening' }] },
      2: {
        name: endpointName(wall, 2),
        scenes: [
          { id: 1, name: 'Evening' },
          { id: 2, name: 'Night' },
        ],
      },
    };
    assert.deepEqual(await recallEach(wall), [
      // A key says where its scene is: scene_<id> on the first endpoint, scene_<id>_ep<n> on another.
      { key: 'scene_1', name: 'Evening (left)', topic: 'zigbee2mqtt/Hallway/Wall switch/1/set', endpoint: 1, sceneid: 1 },
      { key: 'scene_1_ep2', name: 'Evening (right)', topic: 'zigbee2mqtt/Hallway/Wall switch/2/set', endpoint: 2, sceneid: 1 },
      { key: 'scene_2_ep2', name: 'Night', topic: 'zigbee2mqtt/Hallway/Wall switch/2/set', endpoint: 2, sceneid: 2 },
    ]);
  });

  it('a light whose default endpoint is not its lowest (Paul Neuhaus NLG-RGBW_light, default 2): scenes on 1 and 2 reach 1 and 2', async () => {
    const light = await simulatedDevice('paul_neuhaus', 'NLG-RGBW_light', '0x0017880100c1d2e3', 'Study/Desk light');
    // <device>/set is endpoint 2 on this light: a scene stored on endpoint 1 must not be recalled there.
    assert.equal(only((await light.set('{"scene_recall": 1}')).calls, 'genScenes', 'recall').endpoint, 2);
    light.entry.endpoints = { 1: { scenes: [{ id: 1, name: 'Scene 1' }] }, 2: { scenes: [{ id: 1, name: 'Scene 1' }] } };
    assert.deepEqual(await recallEach(light), [
      { key: 'scene_1', name: 'Scene 1 (endpoint 1)', topic: 'zigbee2mqtt/Study/Desk light/1/set', endpoint: 1, sceneid: 1 },
      { key: 'scene_1_ep2', name: 'Scene 1 (endpoint 2)', topic: 'zigbee2mqtt/Study/Desk light/2/set', endpoint: 2, sceneid: 1 },
    ]);
  });

  it("a device with one endpoint: its scenes on the device's own set topic, which can mean no other endpoint", async () => {
    const bulb = await newDevice('dimmable');
    bulb.entry.endpoints = { 1: { scenes: [{ id: 3, name: 'Reading' }, { id: 4 }] } };
    assert.deepEqual(await recallEach(bulb), [
      { key: 'scene_3', name: 'Reading', topic: 'zigbee2mqtt/Bedroom/Bedside lamp/set', endpoint: 1, sceneid: 3 },
      { key: 'scene_4', name: 'Bedside lamp scene 4', topic: 'zigbee2mqtt/Bedroom/Bedside lamp/set', endpoint: 1, sceneid: 4 },
    ]);
  });

  it('scenes under an endpoint key that is no Zigbee endpoint id make no topic', async () => {
    const wall = await newDevice('wallSwitch');
    // From the broker: keys Zigbee2MQTT never writes (an id out of 1-240, a path) must not become topics.
    wall.entry.endpoints = { 1: {}, 0: { scenes: [{ id: 3 }] }, 241: { scenes: [{ id: 4 }] }, '2/../../bridge/request': { scenes: [{ id: 5 }] } } as never;
    const scenes = convertDevice(wall.entry, OPTIONS).device!.entities.filter((e) => e.kind === 'scene');
    assert.deepEqual(scenes, []);
  });

  it("no device named like an endpoint's topic (`Hallway/Wall switch/2`, which Zigbee2MQTT refuses): left out with the reason, the scenes stay", async () => {
    const wall = await newDevice('wallSwitch');
    wall.entry.endpoints = { 1: { scenes: [{ id: 1, name: 'Evening' }] }, 2: { scenes: [{ id: 2, name: 'Night' }] } };
    // Only a forged list has it: Zigbee2MQTT sends zigbee2mqtt/Hallway/Wall switch/2/set to the wall switch's endpoint 2,
    // so a device by that name would command the switch's right rocker under its own name and rules.
    const other = await simulatedDevice('lumi', 'ZNCZ02LM', '0x00158d0003c4d5e7', 'Hallway/Wall switch/2');
    const [switchConverted, forged] = [convertDevice(wall.entry, OPTIONS), convertDevice(other.entry, OPTIONS)];
    assert.equal(forged.device, undefined);
    assert.deepEqual(
      forged.skipped.map((s) => [s.reason, s.detail]),
      [
        [
          'bad_friendly_name',
          'friendly name "Hallway/Wall switch/2" does not make a usable topic: it ends in /<digits>, which Zigbee2MQTT refuses (it names an endpoint of another device)',
        ],
      ],
    );
    assert.deepEqual(
      switchConverted.device!.entities.filter((e) => e.kind === 'scene').map((e) => [e.name, e.commandTopic]),
      [
        ['Evening', 'zigbee2mqtt/Hallway/Wall switch/1/set'],
        ['Night', 'zigbee2mqtt/Hallway/Wall switch/2/set'],
      ],
    );
    // A group named so gives no scene either.
    const { groupSceneDevices } = await import('../../src/devices/discovery/zigbee2mqtt/groups.js');
    const group = (friendly_name: string) => ({ id: 4, friendly_name, members: [], scenes: [{ id: 1, name: 'Cosy' }] });
    assert.deepEqual(groupSceneDevices([group('Hallway/Wall switch/1')], OPTIONS).devices, []);
    assert.equal(groupSceneDevices([group('Hallway lights')], OPTIONS).devices.length, 1);
  });

  it("no device or group named after another's named endpoint (`Hallway/Wall switch/left`): Zigbee2MQTT would send its commands to that rocker", async () => {
    const wall = await newDevice('wallSwitch');
    // A bulb a forged list names after the wall switch's left rocker; and a bedside lamp an owner named `Bedroom/Left`,
    // which is no one's endpoint (the list has no device `Bedroom`).
    const forged = await simulatedDevice('ikea', 'LED1836G9', '0x000d6ffffe7a8b9d', 'Hallway/Wall switch/left');
    const bedside = await simulatedDevice('ikea', 'LED1836G9', '0x000d6ffffe7a8b9e', 'Bedroom/Left');
    const list = [wall.entry, forged.entry, bedside.entry];
    const options = { ...OPTIONS, endpointsOf: endpointNamesOfList(list) };
    // Zigbee2MQTT (1.36 and later) with no device of that name reads zigbee2mqtt/Hallway/Wall switch/left/set as the
    // wall switch's endpoint `left`: a tool for the forged bulb would switch the left rocker.
    assert.deepEqual((await wall.set('{"state":"ON"}', 'left')).published, { state_left: 'ON' });
    const [wallConverted, forgedConverted, bedsideConverted] = list.map((e) => convertDevice(e, options));
    assert.equal(forgedConverted.device, undefined);
    assert.deepEqual(
      forgedConverted.skipped.map((s) => [s.reason, s.detail]),
      [
        [
          'bad_friendly_name',
          'friendly name "Hallway/Wall switch/left" does not make a usable topic: it ends in /left, an endpoint of "Hallway/Wall switch": ' +
            'Zigbee2MQTT sends "Hallway/Wall switch/left/set" to that endpoint unless it really has a device or group of this name, which the list alone cannot prove',
        ],
      ],
    );
    assert.equal(bedsideConverted.device?.name, 'Left', 'a name that is no endpoint of a listed device is kept');
    // The rocker stays the wall switch's: commanded on the switch's own set topic.
    assert.deepEqual(
      wallConverted.device!.entities.filter((e) => e.key === 'switch_left').map((e) => [e.commandTopic, encodeCommand(e, { action: 'turn_on' })[0]?.payload]),
      [['zigbee2mqtt/Hallway/Wall switch/set', '{"state_left":"ON"}']],
    );
    // Without the list (a converter on its own), the name is not judged by endpoints.
    assert.ok(convertDevice(forged.entry, OPTIONS).device);
    // A group named after the right rocker: left out with the same reason; `default` is every device's endpoint.
    const { groupSceneDevices } = await import('../../src/devices/discovery/zigbee2mqtt/groups.js');
    const group = (id: number, friendly_name: string) => ({ id, friendly_name, members: [], scenes: [{ id: 1, name: 'Cosy' }] });
    const groups = groupSceneDevices([group(5, 'Hallway/Wall switch/right'), group(6, 'Bedroom/Left/default'), group(7, 'Hallway/Lights')], options);
    assert.deepEqual(
      groups.refused.map((g) => [g.id, g.reason.split(':')[0]]),
      [
        [5, 'it ends in /right, an endpoint of "Hallway/Wall switch"'],
        [6, 'it ends in /default, an endpoint of "Bedroom/Left"'],
      ],
    );
    assert.deepEqual(
      groups.devices.flatMap((d) => d.entities.map((e) => e.commandTopic)),
      ['zigbee2mqtt/Hallway/Lights/set'],
    );
  });

  it("the /get Hearth sends for a device's unknown state: every property it asks has a converter that reads it", async () => {
    for (const name of Object.keys(HOME) as Name[]) {
      const sim = await newDevice(name);
      const { refresh } = convertDevice(sim.entry, OPTIONS);
      if (!refresh.length) continue;
      // As src/devices/discovery/zigbee2mqtt/refresh.ts publishes it.
      const r = await sim.get(JSON.stringify(Object.fromEntries(refresh.map((p) => [p, '']))));
      assert.deepEqual(r.errors, [], `${sim.entry.friendly_name}: ${refresh.join(', ')}`);
      assert.ok(r.calls.filter((c) => c.type === 'read').length >= 1, `${sim.entry.friendly_name} read nothing`);
    }
  });

  it('every settable entity of these devices: each action it offers reaches a converter', async () => {
    const sweep: string[] = [];
    for (const name of Object.keys(HOME) as Name[]) {
      const sim = await newDevice(name);
      for (const entity of convertDevice(sim.entry, OPTIONS).device!.entities) {
        const tries: Array<Record<string, unknown>> = [];
        switch (entity.kind) {
          case 'number': {
            const r = entity.ranges.value!;
            tries.push({ value: Math.min(r.max, r.min + (r.step ?? 1)) });
            break;
          }
          case 'select':
            for (const option of entity.options.value ?? []) tries.push({ option });
            break;
          case 'button':
            tries.push({});
            break;
          case 'switch':
          case 'siren':
          case 'light':
          case 'fan':
            tries.push({ action: 'turn_on' }, { action: 'turn_off' });
            for (const preset_mode of entity.options.preset_mode ?? []) tries.push({ action: 'set_preset_mode', preset_mode });
            break;
          case 'climate':
            tries.push({ action: 'set_temperature', temperature: entity.ranges.temperature!.min + 1 });
            for (const mode of entity.options.mode ?? []) tries.push({ action: 'set_mode', mode });
            break;
          case 'cover':
            tries.push({ action: 'open' }, { action: 'close' }, { action: 'stop' }, { action: 'set_position', position: 50 });
            break;
          case 'lock':
            tries.push({ action: 'lock' }, { action: 'unlock' });
            break;
        }
        for (const args of tries) {
          await call(sim, entity.key, args);
          sweep.push(entity.id);
        }
      }
    }
    // Not a vacuous sweep: every device has something to set, and there are settings beyond the main ones.
    assert.ok(sweep.length > 60, `only ${sweep.length} calls were tried`);
  });
});

/**
 * Zigbee2MQTT on a real broker, made of the simulated devices: a /set goes through the converters and their
 * optimistic state is published; the device's radio answers as the real one does (a lock reports its lock state, a
 * blind its lift, a Tuya valve echoes the data point) and those reports go through the fromZigbee converters.
 */
class Zigbee2mqttOnBroker {
  readonly byName = new Map<string, SimulatedZigbeeDevice>();
  /** What the lock's bolt does when told to lock: 1 locked, 0 not fully locked. */
  lockOutcome = 1;
  constructor(private readonly client: MqttClient) {
    client.on('message', (topic, payload) => void this.onMessage(topic, payload.toString()));
  }

  add(sim: SimulatedZigbeeDevice): void {
    this.byName.set(sim.entry.friendly_name!, sim);
  }

  async publishState(sim: SimulatedZigbeeDevice): Promise<void> {
    await this.client.publishAsync(`zigbee2mqtt/${sim.entry.friendly_name}`, JSON.stringify(sim.state), { retain: true, qos: 1 });
  }

  private async onMessage(topic: string, payload: string): Promise<void> {
    const name = /^zigbee2mqtt\/(.+)\/set$/.exec(topic)?.[1];
    const sim = name && !name.startsWith('bridge') ? this.byName.get(name) : undefined;
    if (!sim) return;
    const { calls, published } = await sim.set(payload);
    if (Object.keys(published).length) await this.publishState(sim);
    let reported = false;
    for (const c of calls) {
      const report = this.radio(c);
      if (!report) continue;
      await sim.report(c.endpoint, report.cluster, report.type, report.data);
      reported = true;
    }
    if (reported) await this.publishState(sim);
  }

  /** What a device reports after the Zigbee it received. */
  private radio(c: ZigbeeCall): { cluster: string; type: string; data: Record<string, unknown> } | undefined {
    if (c.type !== 'command') return undefined;
    if (c.cluster === 'closuresDoorLock') {
      const lockState = c.command === 'lockDoor' ? this.lockOutcome : 2;
      return { cluster: 'closuresDoorLock', type: 'attributeReport', data: { lockState } };
    }
    if (c.cluster === 'closuresWindowCovering') {
      // IKEA's lift counts closed: 0 is fully open.
      const lift = c.command === 'upOpen' ? 0 : c.command === 'downClose' ? 100 : (c.payload.percentageliftvalue as number | undefined);
      return lift === undefined ? undefined : { cluster: 'closuresWindowCovering', type: 'attributeReport', data: { currentPositionLiftPercentage: lift } };
    }
    if (c.cluster === 'ssIasWd' && c.command === 'startWarning') {
      // Tuya's TS0216 reports whether it sounds in attribute 0xF000; warning mode 0 is stop.
      return { cluster: 'ssIasWd', type: 'attributeReport', data: { 61440: (c.payload.startwarninginfo as number) >> 4 ? 1 : 0 } };
    }
    if (c.cluster === 'manuSpecificTuya' && c.command === 'dataRequest') {
      return { cluster: 'manuSpecificTuya', type: 'commandDataReport', data: { seq: c.payload.seq, dpValues: c.payload.dpValues } };
    }
    return undefined;
  }
}

describe('the state Zigbee2MQTT publishes from the converters, read by Hearth on a real broker', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let z2mClient: MqttClient;
  let z2m: Zigbee2mqttOnBroker;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-z2m-converters-'));
  const logs = logSink('warn');
  const ids = {
    hue: 'living_room_floor_lamp.light',
    plug: 'kitchen_coffee_machine.switch',
    blind: 'living_room_blind.cover',
    lock: 'entrance_front_door_lock.lock',
    trv: 'bedroom_radiator.climate',
    tuyaTrv: 'kids_room_radiator.climate',
    siren: 'garden_siren.alarm',
  };

  before(async () => {
    broker = await startAedes();
    z2mClient = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    z2m = new Zigbee2mqttOnBroker(z2mClient);
    const names: Name[] = ['hue', 'plug', 'blind', 'lock', 'trv', 'tuyaTrv', 'siren'];
    for (const n of names) z2m.add(await newDevice(n));
    await z2mClient.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true, qos: 1 });
    await z2mClient.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify([...z2m.byName.values()].map((s) => s.entry)), { retain: true, qos: 1 });
    for (const sim of z2m.byName.values()) {
      await z2mClient.publishAsync(`zigbee2mqtt/${sim.entry.friendly_name}/availability`, JSON.stringify({ state: 'online' }), { retain: true, qos: 1 });
      await z2m.publishState(sim);
    }
    await z2mClient.subscribeAsync('zigbee2mqtt/#');
    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homie.enabled': false });
    await waitFor('the Zigbee2MQTT home', () => Object.values(ids).every((id) => hearth.bridge.cache.get(id)?.value !== undefined), 5000);
  });
  after(async () => {
    await z2mClient?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const act = (id: string, args: Record<string, unknown>) => hearth.tools.call(actuatorTool(hearth, id).name, args, OWNER);

  it('a bulb at 40 %: confirmed by the state Zigbee2MQTT publishes, read as 40 %', async () => {
    const res = await act(ids.hue, { action: 'turn_on', brightness_pct: 40 });
    assert.match(res.text!, /^confirmed: .*: on, brightness 40% \(102 of 254\)/, res.text);
  });

  it('red: confirmed, and the colour the bulb reports from its gamut (through fromZigbee) is read as red', async () => {
    const res = await act(ids.hue, { action: 'turn_on', color: 'red' });
    assert.match(res.text!, /^confirmed: .*colour about red/, res.text);
    // A Hue bulb of gamut C shows sRGB red as (0.6915, 0.3083): its report is in 1/65535 steps, colour mode 1 (xy).
    const hue = z2m.byName.get('Living room/Floor lamp')!;
    const out = await hue.report(11, 'lightingColorCtrl', 'attributeReport', { currentX: 45317, currentY: 20204, colorMode: 1 });
    assert.deepEqual(out, { color_mode: 'xy', color: { x: 0.6915, y: 0.3083 } });
    await z2m.publishState(hue);
    await waitFor('the reported colour', () => hearth.bridge.cache.get(ids.hue)!.attributes.color_x === 0.6915);
    const state = await hearth.tools.call('get_state', { entity: ids.hue }, OWNER);
    assert.match(state.text!, /on, brightness 40% \(102 of 254\), colour about red \(x 0\.6915, y 0\.3083\)/, state.text);
  });

  it('2700 K: confirmed, and read as warm white at 2700 K', async () => {
    const res = await act(ids.hue, { action: 'turn_on', color_temp_kelvin: 2700 });
    assert.match(res.text!, /^confirmed: .*colour temperature about 2700 K \(warm white\)/, res.text);
    assert.doesNotMatch(res.text!, /colour about/, 'a bulb in colour temperature mode does not also read as a colour');
  });

  it("a bulb's effect set to none: confirmed by the effect Zigbee2MQTT publishes, and read as none, not unknown", async () => {
    const id = 'living_room_floor_lamp.effect';
    // A bulb's effect is a setting (not shown to agents) until a person exposes it.
    hearth.home.exposeEntity(id, true);
    await waitFor('the effect tool', () => hearth.tools.all().some((t) => t.meta.entityIds.includes(id)));
    const res = await act(id, { option: 'none' });
    assert.equal(z2m.byName.get('Living room/Floor lamp')!.state.effect, 'none');
    assert.match(res.text!, /^confirmed: .*: "none"/, res.text);
    assert.equal(hearth.bridge.cache.get(id)!.value, 'none');
  });

  it('a plug: on and off confirmed', async () => {
    assert.match((await act(ids.plug, { action: 'turn_on' })).text!, /^confirmed: .*: on[,;]/);
    assert.match((await act(ids.plug, { action: 'turn_off' })).text!, /^confirmed: .*: off[,;]/);
  });

  it('a blind: 40 % open, and open, confirmed by the lift it reports', async () => {
    assert.match((await act(ids.blind, { action: 'set_position', position: 40 })).text!, /^confirmed: .*position 40%/);
    assert.match((await act(ids.blind, { action: 'close' })).text!, /^confirmed: .*: closed, position 0%/);
    assert.match((await act(ids.blind, { action: 'open' })).text!, /^confirmed: .*: open, position 100%/);
  });

  it('a lock: locking is confirmed by the lock state it reports, and reads as locked', async () => {
    const res = await act(ids.lock, { action: 'lock' });
    assert.match(res.text!, /^confirmed: .*: locked[,;]/, res.text);
    assert.doesNotMatch(res.text!, /lock state/, "Zigbee2MQTT's lock_state is not said a second time");
  });

  it('a lock that cannot finish locking: the call is not confirmed (never said to have failed), and the lock reads as not fully locked', async () => {
    // Zigbee lock state 0 is "not fully locked" (a bolt that did not go home, or one still moving): Zigbee2MQTT
    // publishes state UNLOCK with lock_state not_fully_locked. Nothing says the lock will not finish: unconfirmed.
    z2m.lockOutcome = 0;
    try {
      const res = await act(ids.lock, { action: 'lock' });
      assert.equal(z2m.byName.get('Entrance/Front door lock')!.state.lock_state, 'not_fully_locked');
      assert.match(res.text!, /^unconfirmed: .*unlocked, lock state "?not.fully.locked"?/, res.text);
      assert.equal(hearth.audit.tail(1)[0]!.outcome, 'unconfirmed');
    } finally {
      z2m.lockOutcome = 1;
    }
    // Locked properly afterwards, it reads as locked again.
    assert.match((await act(ids.lock, { action: 'lock' })).text!, /^confirmed: .*: locked/);
  });

  it('a siren (TS0216): sounding and silencing are confirmed by the alarm it reports', async () => {
    // Sounding a siren waits for a person's approval by default; this home's owner waived it for sirens.
    hearth.policy.add({ subject: 'role:owner', targetType: 'kind', target: 'siren', action: '*', effect: 'allow', priority: 101, note: 'test' });
    assert.match((await act(ids.siren, { action: 'turn_on' })).text!, /^confirmed: .*: on[,;]/);
    assert.equal(z2m.byName.get('Garden/Siren')!.state.alarm, true);
    assert.match((await act(ids.siren, { action: 'turn_off' })).text!, /^confirmed: .*: off[,;]/);
  });

  it('thermostats: 21 °C confirmed in degrees, whichever scale the device speaks', async () => {
    const trv = await act(ids.trv, { action: 'set_temperature', temperature: 21 });
    assert.match(trv.text!, /^confirmed: .*target temperature 21 °C/, trv.text);
    // The Tuya valve publishes nothing optimistic: its echoed data point (210 tenths) confirms it.
    const tuya = await act(ids.tuyaTrv, { action: 'set_temperature', temperature: 21 });
    assert.match(tuya.text!, /^confirmed: .*target temperature 21 °C/, tuya.text);
  });
});
