// White light by colour temperature through the real pipeline on a real
// broker: a device-file lamp that speaks kelvin, a Zigbee2MQTT white-spectrum
// bulb (a real zigbee-herdsman-converters definition, mireds), and Home
// Assistant lights (JSON schema in mireds and in kelvin, default schema with a
// topic and template of its own). Each takes kelvin in its tool, gets it in its
// own unit, and is confirmed by what it reports back, within a few mireds.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { actuatorTool, OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const STUDIO_FILE = `devices:
  - id: studio_lamp
    name: Studio lamp
    entities:
      light:
        kind: light
        state_topic: studio/lamp
        value_path: state
        attributes: { brightness: brightness, color_temp: white.kelvin }
        command_topic: studio/lamp/set
        command_format: json
        color_temp: { min_kelvin: 2700, max_kelvin: 6500, unit: kelvin }
`;

describe('colour temperature on a real broker', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let device: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-colour-temp-'));
  const logs = logSink('warn');
  const sets: Array<{ topic: string; text: string }> = [];
  const STUDIO = 'studio_lamp.light';
  const BULB = 'desk_bulb.light';
  const HALL = 'hall_lamp.light';
  const PORCH = 'porch_light.light';
  const TASMOTA = 'led1.light';

  const retain = (topic: string, payload: unknown) =>
    device.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { retain: true, qos: 1 });
  const haLight = (id: string, name: string, fields: Record<string, unknown>) =>
    retain(`homeassistant/light/${id}/config`, { name, unique_id: id, device: { identifiers: [`${id}_dev`], name }, ...fields });

  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    // An IKEA white-spectrum bulb behind Zigbee2MQTT: color_temp 250-454 mireds.
    const bulb = await z2mEntry('LED1545G12', '0x000b57fffec6a5b2', 'Desk bulb');
    await retain('zigbee2mqtt/bridge/state', { state: 'online' });
    await retain('zigbee2mqtt/bridge/devices', [bulb]);
    // Home Assistant lights: JSON in mireds (HA's default unit), JSON in kelvin, and a Tasmota-like default-schema light.
    await haLight('hall_lamp', 'Hall lamp', {
      schema: 'json',
      command_topic: 'hall/lamp/set',
      state_topic: 'hall/lamp',
      supported_color_modes: ['color_temp'],
      min_mireds: 153,
      max_mireds: 370,
    });
    await haLight('porch_ct', 'Porch light', {
      schema: 'json',
      command_topic: 'porch/ct/set',
      state_topic: 'porch/ct',
      supported_color_modes: ['color_temp'],
      color_temp_kelvin: true,
      min_kelvin: 2200,
      max_kelvin: 5000,
    });
    await haLight('led1', 'Led1', {
      command_topic: 'cmnd/led1/POWER',
      state_topic: 'stat/led1/RESULT',
      state_value_template: '{{value_json.POWER}}',
      color_temp_command_topic: 'cmnd/led1/CT',
      color_temp_command_template: '{"ct": {{ value }}}',
      color_temp_state_topic: 'stat/led1/RESULT',
      color_temp_value_template: '{{value_json.CT}}',
      min_mireds: 153,
      max_mireds: 500,
    });
    const state: Record<string, Record<string, unknown>> = {
      'zigbee2mqtt/Desk bulb': { state: 'OFF', brightness: 254, color_temp: 250, color_mode: 'color_temp' },
      'hall/lamp': { state: 'OFF', color_mode: 'color_temp', color_temp: 200 },
      'porch/ct': { state: 'OFF', color_mode: 'color_temp', color_temp: 4000 },
      'studio/lamp': { state: 'OFF', brightness: 100, white: { kelvin: 6500 } },
      'stat/led1/RESULT': { POWER: 'OFF', CT: 153 },
    };
    for (const [topic, s] of Object.entries(state)) await retain(topic, s);
    device.on('message', (topic, payload) => {
      const text = payload.toString();
      sets.push({ topic, text });
      // Tasmota: POWER and CT on topics of their own, one RESULT back.
      if (topic === 'cmnd/led1/POWER' || topic === 'cmnd/led1/CT') {
        const next = state['stat/led1/RESULT']!;
        if (topic.endsWith('POWER')) next.POWER = text;
        else next.CT = (JSON.parse(text) as { ct: number }).ct;
        void device.publishAsync('stat/led1/RESULT', JSON.stringify(next));
        return;
      }
      const base = topic.replace(/\/set$/, '');
      const body = JSON.parse(text) as Record<string, unknown>;
      const next = { ...state[base]!, ...body };
      // The bulbs step their own way: the IKEA bulb by 3 mireds, the studio lamp to 100 K.
      if (base === 'zigbee2mqtt/Desk bulb' && typeof body.color_temp === 'number') next.color_temp = Math.min(454, body.color_temp + 3);
      if (base === 'studio/lamp' && body.white) next.white = { kelvin: Math.round((body.white as { kelvin: number }).kelvin / 100) * 100 };
      state[base] = next;
      void device.publishAsync(base, JSON.stringify(next));
    });
    await device.subscribeAsync(['zigbee2mqtt/+/set', 'hall/lamp/set', 'porch/ct/set', 'studio/lamp/set', 'cmnd/led1/#']);
    const devices = join(dir, 'devices');
    mkdirSync(devices);
    writeFileSync(join(devices, 'studio.yaml'), STUDIO_FILE);
    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homie.enabled': false, 'devices.paths': [devices] });
    await waitFor('the lights', () => [STUDIO, BULB, HALL, PORCH, TASMOTA].every((id) => hearth.bridge.registry.entity(id)), 5000);
    await waitFor('their states', () => [STUDIO, BULB, HALL, PORCH, TASMOTA].every((id) => hearth.bridge.cache.get(id)?.value === 'off'), 5000);
  });
  after(async () => {
    await device?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const tool = (entityId: string) => actuatorTool(hearth, entityId);
  const call = (entityId: string, args: Record<string, unknown>) => hearth.tools.call(tool(entityId).name, args, OWNER);
  const ctSchema = (entityId: string) =>
    (tool(entityId).parameters.properties as Record<string, { type?: string; minimum?: number; maximum?: number; description?: string }>).color_temp_kelvin;

  it('offers color_temp_kelvin with each light its own range', () => {
    assert.deepEqual([ctSchema(STUDIO)?.minimum, ctSchema(STUDIO)?.maximum], [2700, 6500]);
    // 250-454 mireds; 153-370 mireds; 2200-5000 K as declared; HA's 153-500 mireds.
    assert.deepEqual([ctSchema(BULB)?.minimum, ctSchema(BULB)?.maximum], [2200, 4000]);
    assert.deepEqual([ctSchema(HALL)?.minimum, ctSchema(HALL)?.maximum], [2700, 6540]);
    assert.deepEqual([ctSchema(PORCH)?.minimum, ctSchema(PORCH)?.maximum], [2200, 5000]);
    assert.deepEqual([ctSchema(TASMOTA)?.minimum, ctSchema(TASMOTA)?.maximum], [2000, 6540]);
    assert.equal(ctSchema(BULB)!.type, 'integer');
    assert.match(ctSchema(BULB)!.description!, /kelvin, 2200 to 4000 on this light .*warm white 2700/);
    assert.match(tool(BULB).description, /colour temperature 2200-4000 K/);
  });

  it('folds the Zigbee2MQTT color_temp into the light: no separate number entity for it', () => {
    const entities = hearth.bridge.registry.device('desk_bulb')!.entities;
    assert.deepEqual(
      entities
        .filter((e) => /color_temp/.test(e.key))
        .map((e) => `${e.key}:${e.kind}`)
        .filter((k) => k.startsWith('color_temp:')),
      [],
    );
    assert.equal(hearth.bridge.registry.entity(BULB)!.colorTemp?.unit, 'mired');
  });

  it('a device-file lamp in kelvin gets kelvin at its path, and its rounded report confirms it', async () => {
    const res = await call(STUDIO, { action: 'turn_on', color_temp_kelvin: 4250 });
    assert.match(res.text!, /^confirmed: "Studio lamp" .*: on, brightness 100, colour temperature about 4300 K \(neutral white\)/, res.text);
    assert.deepEqual(JSON.parse(sets.at(-1)!.text), { state: 'ON', white: { kelvin: 4250 } });
    const row = hearth.audit.tail(1)[0]!;
    assert.equal(row.outcome, 'confirmed');
    assert.equal(row.args.color_temp_kelvin, 4250);
  });

  it('a Zigbee2MQTT bulb gets mireds, and a report 3 mireds off still confirms it', async () => {
    const res = await call(BULB, { action: 'turn_on', color_temp_kelvin: 2700 });
    assert.match(res.text!, /^confirmed: .*: on, brightness 100% \(254 of 254\), colour temperature about 2700 K \(warm white\)/, res.text);
    assert.deepEqual(sets.at(-1), { topic: 'zigbee2mqtt/Desk bulb/set', text: JSON.stringify({ state: 'ON', color_temp: 370 }) });
    assert.equal(hearth.bridge.cache.get(BULB)!.attributes.color_temp, 373);
    // The warm end: 2200 K is 455 mireds, kept within the bulb's 454.
    const warm = await call(BULB, { action: 'turn_on', color_temp_kelvin: 2200 });
    assert.match(warm.text!, /^confirmed: .*colour temperature about 2200 K \(candlelight\)/, warm.text);
    assert.equal((JSON.parse(sets.at(-1)!.text) as { color_temp: number }).color_temp, 454);
  });

  it('a Home Assistant JSON light gets mireds, or kelvin when it says color_temp_kelvin', async () => {
    const hall = await call(HALL, { action: 'turn_on', color_temp_kelvin: 5000 });
    assert.match(hall.text!, /^confirmed: .*colour temperature about 5000 K \(cool white\)/, hall.text);
    assert.deepEqual(sets.at(-1), { topic: 'hall/lamp/set', text: JSON.stringify({ state: 'ON', color_temp: 200 }) });
    const porch = await call(PORCH, { action: 'turn_on', color_temp_kelvin: 2700 });
    assert.match(porch.text!, /^confirmed: .*colour temperature about 2700 K \(warm white\)/, porch.text);
    assert.deepEqual(sets.at(-1), { topic: 'porch/ct/set', text: JSON.stringify({ state: 'ON', color_temp: 2700 }) });
  });

  it('a default-schema light gets the mireds on its own topic, through its template, then ON', async () => {
    const before = sets.length;
    const res = await call(TASMOTA, { action: 'turn_on', color_temp_kelvin: 4000 });
    assert.match(res.text!, /^confirmed: .*: on, colour temperature about 4000 K \(neutral white\)/, res.text);
    assert.deepEqual(sets.slice(before), [
      { topic: 'cmnd/led1/CT', text: '{"ct": 250}' },
      { topic: 'cmnd/led1/POWER', text: 'ON' },
    ]);
  });

  it('out of range is a failed, audited result naming the range, and nothing is sent', async () => {
    const before = sets.length;
    const res = await call(STUDIO, { action: 'turn_on', color_temp_kelvin: 2000 });
    assert.equal(res.isError, true);
    assert.match(res.text!, /"color_temp_kelvin" must be from 2700 to 6500 K for this light \(got 2000 K\)/);
    const warm = await call(BULB, { action: 'turn_on', color_temp_kelvin: 9000 });
    assert.match(warm.text!, /"color_temp_kelvin" must be from 2200 to 4000 K for this light \(got 9000 K\)/);
    assert.equal(sets.length, before);
    const row = hearth.audit.tail(1)[0]!;
    assert.equal(row.outcome, 'failed');
    assert.equal(row.tool, tool(BULB).name);
    assert.equal(row.args.color_temp_kelvin, 9000);
    assert.match(row.error!, /must be from 2200 to 4000 K/);
  });

  it('a caller without a rule is denied a colour temperature, recorded, and nothing is sent', async () => {
    const before = sets.length;
    const res = await hearth.tools.call(tool(STUDIO).name, { action: 'turn_on', color_temp_kelvin: 3000 }, { id: 'cli:visitor', roles: ['guest'] });
    assert.equal(res.isError, true);
    assert.match(res.text!, /not allowed/);
    assert.equal(sets.length, before);
    const row = hearth.audit.tail(1)[0]!;
    assert.equal(row.outcome, 'denied');
    assert.equal(row.args.color_temp_kelvin, 3000);
  });
});
