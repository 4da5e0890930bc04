// Fuzzed MQTT input, seeded and reproducible: thousands of random and mutated
// payloads on the demo home's state, availability and camera topics, and on
// the discovery topics (Home Assistant, Zigbee2MQTT, Homie). The bridge must
// survive, give every skipped payload a reason, keep mirroring real state,
// and publish nothing it should not: a spy on the bridge's own MQTT client
// sees every topic it sends to, and the `#` watcher sees the broker's side.
//
// Replay a failure: HEARTH_FUZZ_SEED=<seed from the test name> node --import tsx --test test/faults/fuzz-payloads.test.ts
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { commandTopicsOf } from '../../src/devices/commands.js';
import type { PayloadError } from '../../src/devices/decode.js';
import { ADAPTERS } from '../../src/devices/discovery/index.js';
import { stateTopicsOf } from '../../src/devices/model.js';
import { isPublishableTopic } from '../../src/mqtt/topic.js';
import { isValidToolName } from '../../src/tools/names.js';
import { Fuzz, fuzzSeed, hexSeed } from '../helpers/fuzz.js';
import { OWNER } from '../helpers/home.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

const SEED = fuzzSeed(0x5eed_0001);
const STATE_MESSAGES = 6000;
const DISCOVERY_MESSAGES = 3000;
const PAYLOAD_REASONS = new Set(['oversized', 'binary', 'not_json', 'too_deep', 'bad_value', 'not_image']);

/** Valid discovery messages to mutate: the Home Assistant fixture cases, plus a few of each convention. */
function discoverySeeds(): Array<{ topic: string; payload: string }> {
  const out: Array<{ topic: string; payload: string }> = [
    {
      topic: 'homeassistant/switch/fz_node/plug/config',
      payload: JSON.stringify({ name: 'Fuzz plug', uniq_id: 'fz_plug', stat_t: 'fz/plug/state', cmd_t: 'fz/plug/set', dev: { ids: ['fz1'], name: 'Fuzz' } }),
    },
    {
      topic: 'homeassistant/light/fz_node/lamp/config',
      payload: JSON.stringify({ '~': 'fz/lamp', name: 'Fuzz lamp', uniq_id: 'fz_lamp', schema: 'json', stat_t: '~/state', cmd_t: '~/set', brightness: true }),
    },
    { topic: 'homeassistant/status', payload: 'online' },
    {
      topic: 'zigbee2mqtt/bridge/devices',
      payload: JSON.stringify([
        { ieee_address: '0x00124b0000000001', type: 'Coordinator', friendly_name: 'Coordinator', supported: true, interview_completed: true },
        {
          ieee_address: '0x00124b0000000002',
          type: 'Router',
          friendly_name: 'fuzz/bulb',
          supported: true,
          interview_completed: true,
          definition: {
            model: 'LED1545G12',
            vendor: 'IKEA',
            description: 'bulb',
            exposes: [
              {
                type: 'light',
                features: [
                  { type: 'binary', name: 'state', property: 'state', access: 7, value_on: 'ON', value_off: 'OFF' },
                  { type: 'numeric', name: 'brightness', property: 'brightness', access: 7, value_min: 0, value_max: 254 },
                ],
              },
              { type: 'numeric', name: 'linkquality', property: 'linkquality', access: 1, unit: 'lqi' },
            ],
          },
        },
      ]),
    },
    { topic: 'zigbee2mqtt/bridge/state', payload: JSON.stringify({ state: 'online' }) },
    { topic: 'zigbee2mqtt/fuzz/bulb', payload: JSON.stringify({ state: 'ON', brightness: 100, linkquality: 90 }) },
    { topic: 'zigbee2mqtt/fuzz/bulb/availability', payload: JSON.stringify({ state: 'online' }) },
    { topic: 'homie/fuzzdev/$homie', payload: '4.0.0' },
    { topic: 'homie/fuzzdev/$name', payload: 'Fuzz device' },
    { topic: 'homie/fuzzdev/$state', payload: 'ready' },
    { topic: 'homie/fuzzdev/$nodes', payload: 'light' },
    { topic: 'homie/fuzzdev/light/$name', payload: 'Light' },
    { topic: 'homie/fuzzdev/light/$properties', payload: 'power,level' },
    { topic: 'homie/fuzzdev/light/power/$datatype', payload: 'boolean' },
    { topic: 'homie/fuzzdev/light/power/$settable', payload: 'true' },
    { topic: 'homie/fuzzdev/light/level/$datatype', payload: 'integer' },
    { topic: 'homie/fuzzdev/light/level/$format', payload: '0:100' },
    { topic: 'homie/fuzzdev/light/power', payload: 'true' },
    {
      topic: 'homie/5/fuzzdev5/$description',
      payload: JSON.stringify({
        homie: '5.0',
        version: 1,
        name: 'Fuzz 5',
        nodes: { light: { name: 'Light', properties: { power: { datatype: 'boolean', settable: true } } } },
      }),
    },
    { topic: 'homie/5/fuzzdev5/$state', payload: 'ready' },
  ];
  const cases = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'ha-discovery');
  for (const f of readdirSync(cases)
    .filter((n) => /^(core|docs|shelly|esphome|emsesp|omg)-.*\.json$/.test(n))
    .sort()) {
    const c = JSON.parse(readFileSync(join(cases, f), 'utf8')) as { topic: string; payload: unknown };
    if (typeof c.topic === 'string') out.push({ topic: c.topic, payload: typeof c.payload === 'string' ? c.payload : JSON.stringify(c.payload) });
  }
  return out;
}

/** A topic the fuzz publisher may use: a broker would drop a client that publishes to a wildcard. */
const publishable = (topic: string) => isPublishableTopic(topic) && Buffer.byteLength(topic) < 1024 && !topic.includes('\ufffd');

describe(`fuzzed MQTT payloads (seed ${hexSeed(SEED)})`, () => {
  const home = useHome({ travelMs: 50 });
  let fuzzer: MqttClient;
  /** Every topic the bridge's own client published to. */
  const own: string[] = [];
  const malformed: Array<{ topic: string; entityId: string; err: PayloadError }> = [];
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);

  before(async () => {
    process.on('unhandledRejection', onRejection);
    home.cleanup(async () => {
      process.off('unhandledRejection', onRejection);
      await fuzzer?.endAsync(true).catch(() => undefined);
    });
    const client = home.hearth.bridge.connection.client;
    const publish = client.publish.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { publish: (...a: unknown[]) => unknown }).publish = (topic: unknown, ...rest: unknown[]) => {
      own.push(String(topic));
      return publish(topic, ...rest);
    };
    home.hearth.bridge.cache.on('malformed', (topic, entityId, err) => malformed.push({ topic, entityId, err }));
    fuzzer = await mqtt.connectAsync(home.broker.url, { protocolVersion: 4, reconnectPeriod: 0 });
  });

  it(`${STATE_MESSAGES} random and mutated payloads on state, availability and camera topics: survives, every skip has a reason`, async (t) => {
    const fz = new Fuzz(SEED);
    const entities = home.hearth.bridge.registry.entities();
    const topics = [...new Set(entities.flatMap((e) => [...stateTopicsOf(e), ...(e.availability?.sources.map((s) => s.topic) ?? [])]))].sort();
    // What is on each topic now (valid payloads to mutate), from the simulator's own messages.
    const valid = new Map<string, string[]>();
    for (const m of home.seen) if (topics.includes(m.topic)) valid.set(m.topic, [...(valid.get(m.topic) ?? []), m.payload].slice(-5));
    for (const t of topics) if (!valid.has(t)) valid.set(t, t.endsWith('availability') ? ['online', 'offline'] : ['ON', '{"state":"ON"}', '21.5']);
    const commandTopics = new Set(entities.flatMap(commandTopicsOf));
    const seenBefore = home.seen.length;
    const ownBefore = own.length;
    const errorsBefore = home.logs.lines.filter((l) => l.level >= 50).length;

    for (let i = 0; i < STATE_MESSAGES; i++) {
      const topic = fz.pick(topics);
      const payload = fz.payload(valid.get(topic)!);
      await fuzzer.publishAsync(topic, payload, { qos: 1, retain: fz.bool(0.1) });
    }
    // Everything sent has been handled once a marker sent after it is mirrored.
    await fuzzer.publishAsync('hearth-demo/living_room_lamp/availability', 'online', { qos: 1, retain: true });
    await fuzzer.publishAsync('hearth-demo/living_room_lamp/state', 'OFF', { qos: 1, retain: true });
    await waitFor(
      'the lamp state after the fuzz',
      () => {
        const s = home.hearth.bridge.cache.get('living_room_lamp.lamp');
        return s?.value === 'off' && s.available === true;
      },
      10_000,
    );

    assert.ok(home.hearth.bridge.connection.connected, 'still connected');
    assert.ok(malformed.length > STATE_MESSAGES / 10, `garbage was noticed (${malformed.length} skipped payloads)`);
    for (const m of malformed) {
      assert.ok(PAYLOAD_REASONS.has(m.err.reason), `skip reason ${m.err.reason} for ${m.topic}`);
      assert.ok(m.err.message.length > 0, `skip message for ${m.topic}`);
    }
    const byReason: Record<string, number> = {};
    for (const m of malformed) byReason[m.err.reason] = (byReason[m.err.reason] ?? 0) + 1;
    t.diagnostic(`skipped payloads by reason: ${JSON.stringify(byReason)}`);
    assert.ok(Object.keys(byReason).length >= 3, `several kinds of garbage: ${JSON.stringify(byReason)}`);
    // The logged lines are rate-limited per topic, and each names the topic and the reason.
    for (const line of home.logs.find(/^skipped a payload/)) {
      assert.ok(typeof line.topic === 'string' && PAYLOAD_REASONS.has(String(line.reason)), JSON.stringify(line));
    }
    assert.deepEqual(
      home.logs.lines
        .filter((l) => l.level >= 50)
        .slice(errorsBefore)
        .map((l) => l.msg),
      [],
      'no error logged',
    );
    // The bridge published nothing: no command, no wildcard.
    assert.deepEqual(own.slice(ownBefore), [], 'the bridge published nothing');
    const fromBroker = home.seen.slice(seenBefore);
    assert.ok(!fromBroker.some((m) => commandTopics.has(m.topic)), 'no command reached a device');
    assert.ok(
      fromBroker.every((m) => isPublishableTopic(m.topic)),
      'no wildcard topic on the broker',
    );
    assert.deepEqual(rejections, [], 'no unhandled rejection');

    // Still mirroring, still acting: put every availability back, then a real call.
    for (const t of topics.filter((x) => x.endsWith('/availability'))) await fuzzer.publishAsync(t, 'online', { qos: 1, retain: true });
    await waitFor('the lamp online', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.available === true);
    const res = await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
    assert.match(res.text!, /^confirmed/, res.text);
  });

  it(`${DISCOVERY_MESSAGES} random and mutated discovery messages (HA, Zigbee2MQTT, Homie): survives, no unexpected publish`, async (t) => {
    const fz = new Fuzz(SEED ^ 0x0d15c0);
    const seeds = discoverySeeds();
    const commandTopicsBefore = new Set(home.hearth.bridge.registry.entities().flatMap(commandTopicsOf));
    const seenBefore = home.seen.length;
    const ownBefore = own.length;
    const prefixes = ['homeassistant', 'zigbee2mqtt', 'homie', 'homie/5'];
    let sent = 0;
    for (let i = 0; i < DISCOVERY_MESSAGES; i++) {
      const base = fz.pick(seeds);
      let topic = base.topic;
      if (fz.bool(0.3)) {
        // A hostile topic under a discovery prefix.
        const parts = topic.split('/');
        parts[fz.int(1, Math.max(1, parts.length - 1))] = fz.nastyString().slice(0, 80);
        topic = parts.join('/');
      } else if (fz.bool(0.1)) {
        topic = `${fz.pick(prefixes)}/${fz.chars(fz.int(1, 12), 'abc_/$')}/${fz.pick(['config', '$homie', 'devices', 'state', '$state', '$properties'])}`;
      }
      if (!publishable(topic)) continue;
      const payload = fz.payload([base.payload]);
      await fuzzer.publishAsync(topic, payload, { qos: 1, retain: fz.bool(0.2) });
      sent++;
    }
    assert.ok(sent > DISCOVERY_MESSAGES * 0.7, `most messages were publishable (${sent})`);
    // A marker after the flood: handled means everything before it was too.
    await fuzzer.publishAsync('hearth-demo/living_room_lamp/state', 'OFF', { qos: 1, retain: true });
    await fuzzer.publishAsync('hearth-demo/living_room_lamp/state', 'ON', { qos: 1, retain: true });
    await waitFor('the lamp on after the discovery fuzz', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on', 10_000);

    // Zigbee2MQTT discovery asks silent devices for their state 1.5 s after it finds them: let that happen too.
    await sleep(2500);
    assert.ok(home.hearth.bridge.connection.connected, 'still connected');
    assert.deepEqual(rejections, [], 'no unhandled rejection');
    // Whatever discovery made of it, the device set stays sane: exact topics only, valid unique tool names.
    const entities = home.hearth.bridge.registry.entities();
    t.diagnostic(
      `${ADAPTERS.length} discovery adapters; ${entities.length - 11} entities discovered from the fuzz; the bridge published ${own.length - ownBefore} messages`,
    );
    for (const e of entities) {
      for (const t of [...stateTopicsOf(e), ...commandTopicsOf(e), ...(e.availability?.sources.map((s) => s.topic) ?? [])]) {
        assert.ok(!/[#+\u0000]/.test(t) && t.length > 0, `entity ${e.id} has an exact topic, not ${JSON.stringify(t.slice(0, 80))}`);
      }
    }
    const names = home.hearth.tools.all().map((t) => t.name);
    assert.equal(new Set(names).size, names.length, 'tool names are unique');
    for (const n of names)
      assert.ok(
        isValidToolName(n) || ['get_state', 'get_history', 'get_audit', 'explain_policy', 'find_entities', 'get_camera_image'].includes(n),
        `tool name ${JSON.stringify(n)}`,
      );
    // The bridge itself published only discovery housekeeping (the HA birth message, Zigbee2MQTT bridge requests and
    // `<device>/get` state reads), never a wildcard or a device command.
    const mine = own.slice(ownBefore);
    for (const t of mine) {
      assert.ok(isPublishableTopic(t), `no wildcard: ${JSON.stringify(t)}`);
      assert.ok(
        /^homeassistant\/status$|^zigbee2mqtt\/bridge\/request\/|^zigbee2mqtt\/.+\/get$/.test(t),
        `unexpected publish by the bridge to ${JSON.stringify(t)}`,
      );
    }
    const fromBroker = home.seen.slice(seenBefore);
    assert.ok(!fromBroker.some((m) => commandTopicsBefore.has(m.topic)), 'no command reached a device');
    assert.ok(
      fromBroker.every((m) => isPublishableTopic(m.topic)),
      'no wildcard topic on the broker',
    );
    // Still acting after it all.
    const res = await home.hearth.tools.call('living_room_lamp', { action: 'turn_off' }, OWNER);
    assert.match(res.text!, /^confirmed/, res.text);
    if (!ADAPTERS.length) assert.equal(entities.length, 11, 'no discovery adapter is registered yet: the demo home only');
  });
});
