// What Hearth sends to Zigbee2MQTT devices, checked against Zigbee2MQTT's own converters (zigbee-herdsman-converters):
// each payload Hearth publishes for a tool call, built by Hearth's own code from the device's bridge/devices entry,
// is handed to the real definition's toZigbee converters as Zigbee2MQTT's publish extension does, and the Zigbee that
// comes out must mean what the call meant, with no key left unconverted ("No converter available" is a dropped key).
// The other way: the state Zigbee2MQTT publishes from the converters (their optimistic result and the device's
// reports through fromZigbee), on a real broker, confirms Hearth's call and reads as a person would say it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as zhc from 'zigbee-herdsman-converters';
import { encodeCommand } from '../../src/devices/commands.js';
import { convertDevice } from '../../src/devices/discovery/zigbee2mqtt/device.js';
import type { Entity } from '../../src/devices/model.js';
import { toCommand } from '../../src/tools/parameters.js';
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
