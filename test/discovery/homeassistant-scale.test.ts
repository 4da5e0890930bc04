// A discovered home of 1,000 entities (250 Zigbee2MQTT-style devices with a
// temperature sensor, a humidity sensor, a relay and a JSON-schema bulb each):
// the tool set is regenerated well under a second after the last config
// arrives, and the grouped tool set stays within the token budget.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { loadConfig } from '../../src/config/load.js';
import type { HomeAssistantDiscovery } from '../../src/devices/discovery/homeassistant/adapter.js';
import { Hearth } from '../../src/hearth.js';
import { estimateTokens, toolSpecs } from '../../src/tools/generator.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { logSink } from '../helpers/log-sink.js';

const DEVICES = 250;

function configs(i: number): Array<{ topic: string; payload: string }> {
  const ieee = `0x00158d00${i.toString(16).padStart(8, '0')}`;
  const name = `room_${i}`;
  const device = { identifiers: [`zigbee2mqtt_${ieee}`], manufacturer: 'Aqara', model: 'Multi sensor with relay', name, suggested_area: `Room ${i % 40}` };
  const availability = [{ topic: 'zigbee2mqtt/bridge/state', value_template: '{{ value_json.state }}' }];
  const origin = { name: 'Zigbee2MQTT', sw: '2.1.0' };
  const base = { availability, device, origin, state_topic: `zigbee2mqtt/${name}` };
  const list = [
    {
      platform: 'sensor',
      object: 'temperature',
      payload: {
        ...base,
        device_class: 'temperature',
        unit_of_measurement: '°C',
        state_class: 'measurement',
        value_template: '{{ value_json.temperature }}',
        object_id: `${name}_temperature`,
        unique_id: `${ieee}_temperature`,
      },
    },
    {
      platform: 'sensor',
      object: 'humidity',
      payload: {
        ...base,
        device_class: 'humidity',
        unit_of_measurement: '%',
        value_template: '{{ value_json.humidity }}',
        object_id: `${name}_humidity`,
        unique_id: `${ieee}_humidity`,
      },
    },
    {
      platform: 'switch',
      object: 'relay',
      payload: {
        ...base,
        name: 'Relay',
        command_topic: `zigbee2mqtt/${name}/set`,
        value_template: '{{ value_json.state_relay }}',
        payload_on: 'ON',
        payload_off: 'OFF',
        object_id: `${name}_relay`,
        unique_id: `${ieee}_relay`,
      },
    },
    {
      platform: 'light',
      object: 'light',
      payload: {
        ...base,
        name: null,
        schema: 'json',
        brightness: true,
        brightness_scale: 254,
        command_topic: `zigbee2mqtt/${name}_bulb/set`,
        state_topic: `zigbee2mqtt/${name}_bulb`,
        supported_color_modes: ['color_temp'],
        object_id: `${name}_bulb`,
        unique_id: `${ieee}_light`,
      },
    },
  ];
  return list.map((c) => ({ topic: `homeassistant/${c.platform}/${ieee}/${c.object}/config`, payload: JSON.stringify(c.payload) }));
}

describe('Home Assistant discovery at scale', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let client: MqttClient;
  let dir: string;

  before(async () => {
    broker = await startAedes();
    dir = mkdtempSync(join(tmpdir(), 'hearth-ha-scale-'));
    mkdirSync(join(dir, 'devices'));
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: {
        'mqtt.url': broker.url,
        'mqtt.protocolVersion': '4',
        'devices.paths': [join(dir, 'devices')],
        demo: false,
        'database.path': join(dir, 'hearth.db'),
        'discovery.zigbee2mqtt.enabled': 'false',
        'discovery.homie.enabled': 'false',
      },
    });
    hearth = await Hearth.open({ config, log: logSink('warn').log, connectWaitMs: 5000 });
    client = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  });

  after(async () => {
    await client?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('1,000 discovered entities: the tool set is regenerated, in batches, not per config', async () => {
    const all = Array.from({ length: DEVICES }, (_, i) => configs(i)).flat();
    assert.equal(all.length, 1000);
    const adapter = hearth.bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
    const complete = new Promise<void>((resolve) => {
      // Registered after the tool set's own listener: when this runs, the tools are already rebuilt.
      const on = () => {
        if (hearth.bridge.registry.entities().length < 1000) return;
        hearth.bridge.registry.off('changed', on);
        resolve();
      };
      hearth.bridge.registry.on('changed', on);
    });
    for (let i = 0; i < all.length; i += 100) {
      await Promise.all(all.slice(i, i + 100).map((m) => client.publishAsync(m.topic, m.payload, { qos: 1 })));
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([complete, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('not all 1,000 entities arrived')), 120_000)))]);
    clearTimeout(timer);
    const tools = hearth.tools.all();
    // How long it takes is bench/toolgen.ts's and bench/bighomes.ts's question, never a test's.
    assert.equal(hearth.bridge.registry.entities().length, 1000);
    assert.equal(hearth.tools.shape, 'grouped');
    assert.ok(tools.some((t) => t.name === 'control_lights') && tools.some((t) => t.name === 'control_switches'));
    assert.ok(adapter.stats.flushes < 100, `changes are batched (${adapter.stats.flushes} registry updates)`);
  });

  test('the grouped tool set of that home stays under 8,000 tokens', () => {
    const grouped = estimateTokens(toolSpecs(hearth.toolsInShape('grouped')));
    const perEntity = estimateTokens(toolSpecs(hearth.toolsInShape('per-entity')));
    console.log(`tokens: grouped ${grouped}, per-entity ${perEntity}`);
    assert.ok(grouped < 8000, `grouped: ${grouped} tokens`);
  });
});
