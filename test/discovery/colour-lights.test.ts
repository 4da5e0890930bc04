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
  const sets: Array<{ topic: string; body: Record<string, unknown> }> = [];
  const BULB = 'zigbee2mqtt_0x0017880100aabbcc.light';
  const STRIP = 'shelf_strip_dev.shelf_strip';

  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    // A Philips Hue colour bulb behind Zigbee2MQTT, and an LED strip announcing itself to Home Assistant.
    const bulb = await z2mEntry('9290022166', '0x0017880100aabbcc', 'Sofa bulb');
    await device.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true, qos: 1 });
    await device.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify([bulb]), { retain: true, qos: 1 });
    await device.publishAsync('zigbee2mqtt/Sofa bulb', JSON.stringify({ state: 'OFF', brightness: 254, color: { x: 0.3127, y: 0.329 }, color_mode: 'xy' }), { retain: true, qos: 1 });
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
    // The devices: a Hue bulb clamps xy to its gamut C; the strip rounds hue and saturation.
    const state: Record<string, Record<string, unknown>> = {
      'zigbee2mqtt/Sofa bulb': { state: 'OFF', brightness: 254, color: { x: 0.3127, y: 0.329 }, color_mode: 'xy' },
      'shelf/strip': { state: 'OFF', color_mode: 'hs', color: { h: 0, s: 0 } },
    };
    device.on('message', (topic, payload) => {
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
    await device.subscribeAsync(['zigbee2mqtt/+/set', 'shelf/strip/set']);
    hearth = await openHearth(broker.url, dir, logSink('warn').log, { 'discovery.homie.enabled': false });
    await waitFor('both lights', () => hearth.bridge.registry.entity(BULB) && hearth.bridge.registry.entity(STRIP), 5000);
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
