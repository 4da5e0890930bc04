// Issue 15, finding 1: anyone who can publish on the broker can send any
// payload, and no single message may stop the bridge. Deep, huge or malformed
// state payloads, Home Assistant discovery configs, Zigbee2MQTT
// bridge/devices lists and Homie descriptions are refused with a log line
// that names the topic and the reason; the state and devices known before are
// kept, and the bridge still acts on a tool call afterwards. A real broker, the
// demo home with its simulator, and a real SQLite file.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32, deflateSync } from 'node:zlib';
import { actuatorTool, OWNER } from '../helpers/home.js';
import type { LogLine } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

/** A PNG of a few dozen bytes whose header declares `width` x `height` pixels (only the first row of data follows). */
function pngDeclaring(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(1 + width * 3))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** `{"<key>": [[[[...]]]]}`, `levels` deep: about 2 bytes a level. */
const deep = (levels: number, key = 'temperature') => `{"${key}": ${'['.repeat(levels)}${']'.repeat(levels)}}`;

describe('one device message never stops the bridge', () => {
  const home = useHome();

  const send = (topic: string, payload: string, retain = false) => home.device.publishAsync(topic, payload, { qos: 1, retain });
  /** The first log line on `topic` whose message matches. */
  const logLine = (what: string, topic: string, msg: RegExp, timeoutMs = 5000) =>
    waitFor<LogLine>(what, () => home.logs.lines.find((l) => l.topic === topic && msg.test(l.msg)), timeoutMs);
  /** The bridge still acts: the lamp goes on and the simulator's echo confirms it. */
  const lampStillWorks = async () => {
    const tool = actuatorTool(home.hearth, 'living_room_lamp.lamp');
    const off = await home.hearth.tools.call(tool.name, { action: 'turn_off' }, OWNER);
    const on = await home.hearth.tools.call(tool.name, { action: 'turn_on' }, OWNER);
    assert.match(typeof off === 'string' ? off : (off.text ?? ''), /^confirmed/);
    assert.match(typeof on === 'string' ? on : (on.text ?? ''), /^confirmed/);
  };

  it('skips a state payload nested 5,000 deep, logs topic and reason, keeps the old state', async () => {
    const topic = 'hearth-demo/living_room_climate';
    const before = home.hearth.bridge.cache.get('living_room_climate.temperature')!.value;
    assert.equal(typeof before, 'number');
    await send(topic, deep(5000));
    const line = await logLine('the deep payload refused', topic, /skipped a payload/);
    assert.equal(line.reason, 'too_deep');
    assert.match(line.msg, /nested deeper than 64 levels/);
    assert.equal(typeof home.hearth.bridge.cache.get('living_room_climate.temperature')!.value, 'number');
    // Nesting within the limit is read; a structured value is kept as capped text.
    await send(topic, deep(60));
    await waitFor('the nested value kept as short text', () => {
      const v = home.hearth.bridge.cache.get('living_room_climate.temperature')!.value;
      return typeof v === 'string' && v.startsWith('[[[') && v.length <= 1024;
    });
    await lampStillWorks();
  });

  it('Home Assistant: a deep or huge config is refused; a deep state for a discovered sensor is skipped', async () => {
    await send(
      'homeassistant/sensor/attic_t/config',
      JSON.stringify({
        name: 'Attic temperature',
        unique_id: 'attic_t',
        state_topic: 'attic/climate',
        value_template: '{{ value_json.temperature }}',
        unit_of_measurement: '°C',
        device_class: 'temperature',
      }),
      true,
    );
    const attic = await waitFor('the attic sensor discovered', () => home.hearth.bridge.registry.entities().find((e) => e.stateTopic === 'attic/climate'));
    await send('attic/climate', '{"temperature": 17.5}');
    await waitFor('the attic reading', () => home.hearth.bridge.cache.get(attic.id)?.value === 17.5);

    await send('attic/climate', deep(5000));
    const skipped = await logLine('the deep attic state refused', 'attic/climate', /skipped a payload/);
    assert.equal(skipped.reason, 'too_deep');
    assert.equal(home.hearth.bridge.cache.get(attic.id)?.value, 17.5);

    const deepConfig = `{"name": "Deep", "state_topic": "deep/state", "x": ${'['.repeat(5000)}${']'.repeat(5000)}}`;
    await send('homeassistant/sensor/deep_one/config', deepConfig, true);
    await logLine('the deep config refused', 'homeassistant/sensor/deep_one/config', /Unable to parse JSON: nested deeper than 64 levels/);
    await send('homeassistant/sensor/huge_one/config', JSON.stringify({ name: 'Huge', state_topic: 'huge/state', pad: 'x'.repeat(300 * 1024) }), true);
    await logLine('the huge config refused', 'homeassistant/sensor/huge_one/config', /over the 256 KiB limit/);
    assert.ok(!home.hearth.bridge.registry.entities().some((e) => e.stateTopic === 'deep/state' || e.stateTopic === 'huge/state'));
    await lampStillWorks();
  });

  it('Zigbee2MQTT: a deep bridge/devices is refused and the devices known so far are kept', async () => {
    const plug = {
      ieee_address: '0x00124b0000000001',
      type: 'Router',
      supported: true,
      disabled: false,
      interview_completed: true,
      friendly_name: 'Shed plug',
      definition: {
        model: 'TEST-PLUG',
        vendor: 'Test',
        description: 'plug',
        exposes: [{ type: 'switch', features: [{ type: 'binary', name: 'state', property: 'state', access: 7, value_on: 'ON', value_off: 'OFF' }] }],
      },
    };
    await send('zigbee2mqtt/bridge/devices', JSON.stringify([plug]), true);
    const shed = await waitFor('the shed plug discovered', () => home.hearth.bridge.registry.entities().find((e) => e.stateTopic === 'zigbee2mqtt/Shed plug'));

    await send('zigbee2mqtt/bridge/devices', `[${'['.repeat(5000)}${']'.repeat(5000)}]`, true);
    const line = await logLine('the deep list refused', 'zigbee2mqtt/bridge/devices', /skipped zigbee2mqtt\/bridge\/devices/);
    assert.match(String(line.reason), /nested deeper than 64 levels/);
    assert.ok(home.hearth.bridge.registry.entity(shed.id), 'the shed plug is still known');
    await lampStillWorks();
  });

  it('Homie: a deep $description is refused, and a device with too many properties is skipped', async () => {
    const property = { datatype: 'boolean', settable: true, name: 'Pump' };
    await send('homie/5/deepboiler/$state', 'ready', true);
    await send(
      'homie/5/deepboiler/$description',
      `{"homie": "5.0", "name": "Deep boiler", "nodes": {"heating": {"properties": {"pump": ${JSON.stringify(property)}}}}, "x": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      true,
    );
    const line = await logLine('the deep description refused', 'homie/5/deepboiler/$description', /skipped Homie 5 device "deepboiler"/);
    assert.match(line.msg, /nested deeper than 64 levels/);
    assert.equal(home.hearth.bridge.registry.device('deepboiler'), undefined);

    const properties = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, property]));
    await send('homie/5/manyprops/$state', 'ready', true);
    await send('homie/5/manyprops/$description', JSON.stringify({ homie: '5.0', name: 'Many', nodes: { n: { properties } } }), true);
    const many = await logLine('the 300-property device skipped', 'homie/5/manyprops/$description', /skipped Homie 5 device "manyprops"/);
    assert.equal(many.reason, 'too_many_entities');
    assert.equal(home.hearth.bridge.registry.device('manyprops'), undefined);
    await lampStillWorks();
  });

  it('a camera frame that declares a huge picture fails its tool call with the limit, before any decoding', async () => {
    await send('homeassistant/camera/bomb_cam/config', JSON.stringify({ name: 'Bomb camera', unique_id: 'bomb_cam', topic: 'bomb/cam' }), true);
    const camera = await waitFor('the camera discovered', () => home.hearth.bridge.registry.entities().find((e) => e.stateTopic === 'bomb/cam'));
    const tool = await waitFor('its tool', () => home.hearth.tools.all().find((t) => t.meta.entityIds.length === 1 && t.meta.entityIds[0] === camera.id));
    await home.device.publishAsync('bomb/cam', pngDeclaring(7000, 7000), { qos: 1 });
    await waitFor('the frame kept', () => home.hearth.bridge.cache.get(camera.id)?.frame);
    const result = await home.hearth.tools.call(tool.name, {}, OWNER);
    const text = typeof result === 'string' ? result : (result.text ?? result.error ?? '');
    assert.match(text, /declares 7000x7000 pixels, over the 40000000-pixel limit/);
    await lampStillWorks();
  });
});
