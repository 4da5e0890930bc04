// A discovered entity reading another source's control topic (Zigbee2MQTT's bridge/devices) as its state: each time
// its reading changed, Hearth would SUBSCRIBE to the topic again, and the broker's replay of the whole device list
// reaches every listener of the connection, the Zigbee2MQTT adapter included, which converted it again. No entity
// reads a control topic now, and the adapter does not convert a list it has already converted byte for byte.
// A real broker (aedes), a real SQLite file, Zigbee2MQTT's own device definitions.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import mqtt, { type MqttClient } from 'mqtt';
import type { HomeAssistantDiscovery, ProcessedEvent } from '../../src/devices/discovery/homeassistant/adapter.js';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, subscribesAt, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const INFO = readFileSync(fileURLToPath(new URL('../fixtures/z2m/bridge-info.json', import.meta.url)), 'utf8');
let broker: TestBroker;
let pub: MqttClient;
let hearth: Hearth;
let logs: ReturnType<typeof logSink>;
let list: string;
const dir = mkdtempSync(join(tmpdir(), 'hearth-control-reads-'));

before(async () => {
  broker = await startAedes();
  pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  const one = await z2mEntry('RTCGQ11LM', '0x00158d0003c4d5e6', 'Hallway motion');
  list = JSON.stringify(
    Array.from({ length: 40 }, (_, i) => ({ ...one, ieee_address: `0x00158d0003c4${i.toString(16).padStart(4, '0')}`, friendly_name: `Motion ${i}` })),
  );
  await pub.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true, qos: 1 });
  await pub.publishAsync('zigbee2mqtt/bridge/info', INFO, { retain: true, qos: 1 });
  await pub.publishAsync('zigbee2mqtt/bridge/devices', list, { retain: true, qos: 1 });
  logs = logSink('debug');
  hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homie.enabled': false });
  await waitFor('the Zigbee2MQTT devices', () => hearth.bridge.cache.get('motion_39.occupancy') !== undefined, 10_000);
});
after(async () => {
  await pub?.endAsync(true).catch(() => undefined);
  await hearth?.close();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Publish a Home Assistant config, and wait until the adapter and the registry (of `at`) have handled it. */
async function announce(topic: string, payload: unknown, at: Hearth = hearth): Promise<ProcessedEvent> {
  const adapter = at.bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
  const processed = new Promise<ProcessedEvent>((resolve) => {
    const on = (e: ProcessedEvent) => {
      if (e.topic !== topic) return;
      adapter.off('processed', on);
      resolve(e);
    };
    adapter.on('processed', on);
  });
  await pub.publishAsync(topic, JSON.stringify(payload), { qos: 1 });
  const e = await processed;
  await adapter.settled();
  return e;
}

describe("security: no entity reads a source's control topic", () => {
  it('a discovered sensor on zigbee2mqtt/bridge/devices is refused, saying why; its template flipped replays nothing', async () => {
    const subs = subscribesAt(broker, hearth.bridge.connection.client.options.clientId!);
    const config = (template: string) => ({
      name: 'Device count',
      unique_id: 'counter_devices',
      state_topic: 'zigbee2mqtt/bridge/devices',
      value_template: template,
      device: { identifiers: ['counter'], name: 'Counter' },
    });
    try {
      for (const template of ['{{ value_json | length }}', '{{ value_json | count }}', '{{ value_json | length }}'])
        await announce('homeassistant/sensor/counter/devices/config', config(template));
      assert.equal(hearth.bridge.registry.entity('counter.device_count'), undefined);
      assert.ok(!hearth.bridge.cache.topics().includes('zigbee2mqtt/bridge/devices'), 'the state cache does not read the list');
      const line = logs.find(/state topic zigbee2mqtt\/bridge\/devices is a topic Zigbee2MQTT's discovery reads/);
      assert.ok(line.length >= 1, 'a line says why it is refused');
      assert.match(line[0]!.msg, /counter\.device_count/);
      assert.deepEqual(subs.topics, [], 'nothing subscribed again');
    } finally {
      subs.stop();
    }
  });

  it('an availability topic a source reads (bridge/devices, a discovery config) is refused, saying why; a Homie $state is not', async () => {
    const subs = subscribesAt(broker, hearth.bridge.connection.client.options.clientId!);
    const presence = (id: string, availability: string, available = 'online', notAvailable = 'offline') => ({
      name: `Hall presence ${id}`,
      unique_id: `hall_presence_${id}`,
      state_topic: `tele/hall_${id}/presence`,
      availability_topic: availability,
      payload_available: available,
      payload_not_available: notAvailable,
      device: { identifiers: [`hall_presence_${id}`], name: `Hall presence ${id}` },
    });
    const named = (name: string) => hearth.bridge.registry.entities().find((e) => e.name === name);
    const refusal = (name: string) => hearth.bridge.registry.refusedClaims().find((r) => r.refused.name === name);
    try {
      // Its payload_available flipped, config after config: each flip would have read the whole list again.
      for (const word of ['online', 'up', 'online'])
        await announce('homeassistant/binary_sensor/hall/list/config', presence('list', 'zigbee2mqtt/bridge/devices', word));
      await announce('homeassistant/binary_sensor/hall/config/config', presence('config', 'homeassistant/sensor/counter/devices/config'));
      assert.equal(named('Hall presence list'), undefined);
      assert.equal(named('Hall presence config'), undefined);
      assert.ok(!hearth.bridge.cache.topics().includes('zigbee2mqtt/bridge/devices'), 'the state cache does not read the list');
      assert.equal(refusal('Hall presence list')?.kind, 'source');
      assert.equal(refusal('Hall presence list')?.availability, true);
      const line = logs.find(/availability topic zigbee2mqtt\/bridge\/devices is a topic Zigbee2MQTT's discovery reads/);
      assert.ok(line.length >= 1, 'a line says why it is refused');
      assert.ok(logs.find(/availability topic homeassistant\/sensor\/counter\/devices\/config is a topic Home Assistant discovery reads/).length >= 1);
      assert.deepEqual(subs.topics, [], 'nothing subscribed again');
      // A Homie device's $state is what Homie entities read their availability on: it is one.
      await announce('homeassistant/binary_sensor/hall/homie/config', presence('homie', 'homie/5/hall-sensor/$state', 'ready', 'lost'));
      assert.ok(named('Hall presence homie'), 'an availability on a Homie $state is read');
    } finally {
      subs.stop();
    }
  });

  it('bridge/devices and bridge/info re-published byte for byte are not converted again', async () => {
    let rebuilds = 0;
    const onChanged = () => rebuilds++;
    hearth.bridge.registry.on('changed', onChanged);
    // Each conversion of the list asks the store of device ids for its source's ids (the registry leaves out a
    // list converted to what it has, so this is where a conversion shows).
    const ids = hearth.bridge.deviceIds;
    const lookup = ids.lookup.bind(ids);
    let conversions = 0;
    ids.lookup = (source) => {
      if (source === 'zigbee2mqtt') conversions++;
      return lookup(source);
    };
    try {
      // A list that does change is converted (once: what one conversion asks of the store).
      const renamed = JSON.parse(list) as Array<{ friendly_name: string }>;
      renamed[0]!.friendly_name = 'Front door motion';
      await pub.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(renamed), { retain: true, qos: 1 });
      const named = (name: string) => () => hearth.bridge.registry.entities().some((e) => e.name.startsWith(name));
      await waitFor('the renamed list', named('Front door motion'), 10_000);
      const once = conversions;
      assert.ok(once > 0);
      for (let r = 0; r < 3; r++) {
        await pub.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(renamed), { retain: true, qos: 1 });
        await pub.publishAsync('zigbee2mqtt/bridge/info', INFO, { retain: true, qos: 1 });
      }
      // The list back as it was: converted, and the barrier that everything before it was handled.
      await pub.publishAsync('zigbee2mqtt/bridge/devices', list, { retain: true, qos: 1 });
      await waitFor('the list as it was', named('Motion 0'), 10_000);
      assert.equal(rebuilds, 2, 'a rebuild for each changed list');
      assert.equal(conversions, 2 * once, 'a conversion for each changed list, none for the same bytes');
    } finally {
      ids.lookup = lookup;
      hearth.bridge.registry.off('changed', onChanged);
    }
  });

  it('a long list whose hand-over failed in a later turn is converted again when the same bytes come again', async () => {
    const one = await z2mEntry('RTCGQ11LM', '0x00158d0003c4d5e6', 'Hallway motion');
    // Longer than a slice (CONVERT_SLICE): converted and handed over in turns of their own, after the message.
    const long = JSON.stringify(
      Array.from({ length: 300 }, (_, i) => ({ ...one, ieee_address: `0x00158d0004c4${i.toString(16).padStart(4, '0')}`, friendly_name: `Stair motion ${i}` })),
    );
    const registry = hearth.bridge.registry as { setSourceInTurns: typeof hearth.bridge.registry.setSourceInTurns };
    const inTurns = registry.setSourceInTurns;
    let failures = 0;
    // The registry fails the hand-over once (a database error while it works the list out).
    registry.setSourceInTurns = () => {
      failures++;
      registry.setSourceInTurns = inTurns;
      return Promise.reject(new Error('database is locked'));
    };
    const stairs = () => hearth.bridge.registry.entities().some((e) => e.name.startsWith('Stair motion 299'));
    try {
      await pub.publishAsync('zigbee2mqtt/bridge/devices', long, { retain: true, qos: 1 });
      await waitFor('the failure said', () => logs.find(/zigbee2mqtt: skipped zigbee2mqtt\/bridge\/devices: it could not be handled/).length > 0, 10_000);
      assert.equal(failures, 1);
      assert.ok(!stairs());
      // The same bytes again (a reconnect's replay): converted this time.
      await pub.publishAsync('zigbee2mqtt/bridge/devices', long, { retain: true, qos: 1 });
      await waitFor('the stair sensors in the home', stairs, 10_000);
    } finally {
      registry.setSourceInTurns = inTurns;
      await pub.publishAsync('zigbee2mqtt/bridge/devices', list, { retain: true, qos: 1 });
      await waitFor('the list as it was', () => !stairs() && hearth.bridge.registry.entities().some((e) => e.name.startsWith('Motion 0')), 10_000);
    }
  });

  it('a prefix written with a trailing slash (zigbee2mqtt/) guards the same topics the adapter reads', async () => {
    const dir2 = mkdtempSync(join(tmpdir(), 'hearth-control-reads-slash-'));
    const logs2 = logSink('debug');
    const slashed = await openHearth(broker.url, dir2, logs2.log, {
      'discovery.homie.enabled': false,
      'discovery.zigbee2mqtt.prefix': 'zigbee2mqtt/',
      'mqtt.clientId': 'hearth-control-reads-slash',
    });
    try {
      await waitFor('the Zigbee2MQTT devices', () => slashed.bridge.cache.get('motion_39.occupancy') !== undefined, 10_000);
      await announce(
        'homeassistant/sensor/counter2/devices/config',
        {
          name: 'Device count',
          unique_id: 'counter2_devices',
          state_topic: 'zigbee2mqtt/bridge/devices',
          value_template: '{{ value_json | length }}',
          device: { identifiers: ['counter2'], name: 'Counter two' },
        },
        slashed,
      );
      assert.equal(
        slashed.bridge.registry.entities().find((e) => e.name.startsWith('Counter two')),
        undefined,
      );
      assert.ok(!slashed.bridge.cache.topics().includes('zigbee2mqtt/bridge/devices'), 'the state cache does not read the list');
      assert.ok(logs2.find(/state topic zigbee2mqtt\/bridge\/devices is a topic Zigbee2MQTT's discovery reads/).length >= 1);
    } finally {
      await slashed.close();
      rmSync(dir2, { recursive: true, force: true });
    }
  });
});
