// Colour lights through the real pipeline on a real broker: a Zigbee2MQTT
// bulb (a real zigbee-herdsman-converters definition) and a Home Assistant
// JSON-schema light take a colour word, get it in their own terms, and are
// confirmed by the colour they report back, clamped to their gamut.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
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

describe('colour lights on a real broker', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let device: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-colour-'));
  const logs = logSink('warn');
  const sets: Array<{ topic: string; body: Record<string, unknown> }> = [];
  const BULB = 'sofa_bulb.light';
  const STRIP = 'shelf_strip.light';
  const PLAIN = 'desk_strip.light';
  const HS = 'porch_lamp.light';

  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    // A Philips Hue colour bulb behind Zigbee2MQTT, and an LED strip announcing itself to Home Assistant.
    const bulb = await z2mEntry('9290022166', '0x0017880100aabbcc', 'Sofa bulb');
    await device.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true, qos: 1 });
    await device.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify([bulb]), { retain: true, qos: 1 });
    await device.publishAsync('zigbee2mqtt/Sofa bulb', JSON.stringify({ state: 'OFF', brightness: 254, color: { x: 0.3127, y: 0.329 }, color_mode: 'xy' }), {
      retain: true,
      qos: 1,
    });
    await device.publishAsync(
      'homeassistant/light/shelf_strip/config',
      JSON.stringify({
        name: 'Shelf strip',
        unique_id: 'shelf_strip',
        device: { identifiers: ['shelf_strip_dev'], name: 'Shelf strip' },
        schema: 'json',
        command_topic: 'shelf/strip/set',
        state_topic: 'shelf/strip',
        brightness: true,
        supported_color_modes: ['hs'],
      }),
      { retain: true, qos: 1 },
    );
    await device.publishAsync('shelf/strip', JSON.stringify({ state: 'OFF', color_mode: 'hs', color: { h: 0, s: 0 } }), { retain: true, qos: 1 });
    // Default-schema lights (Tasmota, Shelly): the colour on a topic of its own, with and without a template.
    const plainLight = (id: string, name: string, colour: Record<string, string>) =>
      device.publishAsync(
        `homeassistant/light/${id}/config`,
        JSON.stringify({
          name,
          unique_id: id,
          device: { identifiers: [`${id}_dev`], name },
          command_topic: `${id}/set`,
          state_topic: `${id}/state`,
          ...colour,
        }),
        { retain: true, qos: 1 },
      );
    await plainLight('desk_strip', 'Desk strip', {
      rgb_command_topic: 'desk_strip/rgb/set',
      rgb_command_template: '{"r": {{ red }}, "g": {{ green }}, "b": {{ blue }}}',
      rgb_state_topic: 'desk_strip/rgb',
    });
    await plainLight('porch_lamp', 'Porch lamp', { hs_command_topic: 'porch_lamp/hs/set', hs_state_topic: 'porch_lamp/hs' });
    // The devices: a Hue bulb clamps xy to its gamut C; the strip rounds hue and saturation.
    const state: Record<string, Record<string, unknown>> = {
      'zigbee2mqtt/Sofa bulb': { state: 'OFF', brightness: 254, color: { x: 0.3127, y: 0.329 }, color_mode: 'xy' },
      'shelf/strip': { state: 'OFF', color_mode: 'hs', color: { h: 0, s: 0 } },
    };
    device.on('message', (topic, payload) => {
      const text = payload.toString();
      // The default-schema lights: ON/OFF on <id>/set, the colour on its own topic, reported back the same way.
      const own = /^(desk_strip|porch_lamp)\/(rgb\/|hs\/)?set$/.exec(topic);
      if (own) {
        sets.push({ topic, body: { text } });
        if (!own[2]) void device.publishAsync(`${own[1]}/state`, text);
        else if (own[2] === 'rgb/') {
          const c = JSON.parse(text) as { r: number; g: number; b: number };
          void device.publishAsync('desk_strip/rgb', `${c.r},${c.g},${c.b}`);
        } else void device.publishAsync('porch_lamp/hs', text);
        return;
      }
      const base = topic.replace(/\/set$/, '');
      if (base === topic) return;
      const body = JSON.parse(payload.toString()) as Record<string, unknown>;
      sets.push({ topic, body });
      const next = { ...state[base]!, ...body };
      const c = body.color as { x?: number; y?: number; h?: number; s?: number } | undefined;
      if (c?.x !== undefined && c.y !== undefined) next.color = { x: Math.min(c.x + 0.05, 0.6915), y: Math.max(c.y - 0.02, 0.3083) };
      if (c?.h !== undefined) next.color = { h: Math.round(c.h / 5) * 5, s: Math.round(c.s! / 5) * 5 };
      state[base] = next;
      void device.publishAsync(base, JSON.stringify(next));
    });
    await device.subscribeAsync(['zigbee2mqtt/+/set', 'shelf/strip/set', 'desk_strip/#', 'porch_lamp/#']);
    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homie.enabled': false });
    await waitFor('the lights', () => [BULB, STRIP, PLAIN, HS].every((id) => hearth.bridge.registry.entity(id)), 5000);
  });
  after(async () => {
    await device?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const toolFor = (entityId: string) => actuatorTool(hearth, entityId);

  it('offers a colour argument on colour lights', () => {
    const props = toolFor(BULB).parameters.properties as Record<string, { type?: string; description?: string }>;
    assert.equal(props.color?.type, 'string');
    assert.match(props.color!.description!, /red, .*#rrggbb/);
  });

  it('a Zigbee2MQTT bulb gets CIE xy, and its gamut-clamped report confirms the colour', async () => {
    const res = await hearth.tools.call(toolFor(BULB).name, { action: 'turn_on', color: 'red' }, OWNER);
    assert.match(res.text!, /^confirmed: .*: on, .*colour about red \(x 0\.6901, y 0\.31\)/, res.text);
    assert.deepEqual(sets.at(-1), { topic: 'zigbee2mqtt/Sofa bulb/set', body: { state: 'ON', color: { x: 0.6401, y: 0.33 } } });
  });

  it('a Home Assistant JSON light in hs mode gets hue and saturation', async () => {
    const res = await hearth.tools.call(toolFor(STRIP).name, { action: 'turn_on', color: '#0000ff', brightness: 128 }, OWNER);
    assert.match(res.text!, /^confirmed: .*colour about blue/, res.text);
    assert.deepEqual(sets.at(-1), { topic: 'shelf/strip/set', body: { state: 'ON', brightness: 128, color: { h: 240, s: 100 } } });
  });

  it('a default-schema light gets its colour on its own topic, through its template, before ON', async () => {
    const before = sets.length;
    const res = await hearth.tools.call(toolFor(PLAIN).name, { action: 'turn_on', color: 'orange' }, OWNER);
    assert.match(res.text!, /^confirmed: .*: on, .*colour about orange \(red 255, green 140, blue 0\)/, res.text);
    assert.deepEqual(sets.slice(before), [
      { topic: 'desk_strip/rgb/set', body: { text: '{"r": 255, "g": 140, "b": 0}' } },
      { topic: 'desk_strip/set', body: { text: 'ON' } },
    ]);
    const hs = await hearth.tools.call(toolFor(HS).name, { action: 'turn_on', color: 'blue' }, OWNER);
    assert.match(hs.text!, /^confirmed: .*colour about blue \(hue 240, saturation 100\)/, hs.text);
    assert.deepEqual(sets.at(-2), { topic: 'porch_lamp/hs/set', body: { text: '240,100' } });
  });

  it('a colour report that is not numbers is logged with the reason and skipped; the last colour stays', async () => {
    const before = hearth.bridge.cache.get(PLAIN)!.attributes.red;
    await device.publishAsync('desk_strip/rgb', 'very,orange,indeed');
    const line = await waitFor('the malformed report logged', () => logs.find(/^skipped a payload: expected comma-separated numbers/)[0]);
    assert.equal((line as unknown as { topic: string }).topic, 'desk_strip/rgb');
    assert.equal(hearth.bridge.cache.get(PLAIN)!.attributes.red, before);
  });

  it('an unknown colour is a failed result that says what it takes, and nothing is sent', async () => {
    const before = sets.length;
    const res = await hearth.tools.call(toolFor(BULB).name, { action: 'turn_on', color: 'octarine' }, OWNER);
    assert.equal(res.isError, true);
    assert.match(res.text!, /unknown colour "octarine": use a name/);
    assert.equal(sets.length, before);
    const row = hearth.audit.tail(1)[0]!;
    assert.equal(row.outcome, 'failed');
  });
});
