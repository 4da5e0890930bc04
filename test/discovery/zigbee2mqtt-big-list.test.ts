// A big Zigbee2MQTT bridge/devices list reaching a running Hearth is worked out over many turns of the event loop
// (conversion slices, the hand-over, the registry's stages), so that calls and messages go on meanwhile. What a
// user would notice if that went wrong: a state message lost or put on the wrong device while the list arrives, a
// home seen half renamed, or a device that a newer list removed coming back when the older list's work ends.
// Real broker (aedes), real Hearth, sensors of a real zigbee-herdsman-converters model (a renamed plug is a move,
// which waits whole for an owner's confirmation: test/security/forged-rename-names.test.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { CONVERT_SLICE, type Zigbee2mqttAdapter } from '../../src/devices/discovery/zigbee2mqtt/adapter.js';
import type { Z2mDevice } from '../../src/devices/discovery/zigbee2mqtt/types.js';
import type { Entity } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

/** Long enough to be converted in slices and handed over in turns. */
const SENSORS = CONVERT_SLICE * 2 + 10;
const ieee = (i: number) => `0x00124b00${i.toString(16).padStart(8, '0')}`;
// Ids are made from the name a device is first seen with (`Sensor 7`), and kept through every rename.
const deviceOf = (i: number) => `sensor_${i}`;
const humidityOf = (i: number) => `${deviceOf(i)}.humidity`;
const temperatureOf = (i: number) => `${deviceOf(i)}.temperature`;
const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('a big Zigbee2MQTT list arriving at a running Hearth', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let pub: MqttClient;
  let sensor: Z2mDevice;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-z2m-big-'));
  const logs = logSink('info');
  const list = (name: (i: number) => string, skip = new Set<number>()) =>
    Array.from({ length: SENSORS }, (_, i) => i)
      .filter((i) => !skip.has(i))
      .map((i) => ({ ...sensor, ieee_address: ieee(i), friendly_name: name(i) }));
  const adapter = () => hearth.bridge.adapters.find((a) => a.name === 'zigbee2mqtt') as Zigbee2mqttAdapter;
  const registry = () => hearth.bridge.registry;

  before(async () => {
    sensor = await z2mEntry('WSDCGQ11LM', ieee(0), 'Sensor 0');
    broker = await startAedes();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await pub.publishAsync('zigbee2mqtt/bridge/state', JSON.stringify({ state: 'online' }), { retain: true, qos: 1 });
    await pub.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(list((i) => `Sensor ${i}`)), { retain: true, qos: 1 });
    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.homeassistant.enabled': false, 'discovery.homie.enabled': false });
    await waitFor('the sensors', () => registry().device(deviceOf(SENSORS - 1))?.name === `Sensor ${SENSORS - 1}`, 10_000);
  });

  after(async () => {
    await pub?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('puts every state message on the device the registry has for its topic, never half renamed, and loses none', async () => {
    const cache = hearth.bridge.cache;
    // Whatever turn a message lands in, it changes the entity the registry has now, by that entity's own state topic.
    let topic = '';
    const onMessage = (t: string) => (topic = t);
    hearth.bridge.connection.prependListener('message', onMessage);
    const misrouted: string[] = [];
    const onChange = (_state: unknown, entity: Entity) => {
      const now = registry().entity(entity.id);
      const its = [now?.stateTopic, ...(now?.availability?.sources.map((s) => s.topic) ?? [])];
      if (now !== entity || !its.includes(topic)) misrouted.push(`${entity.id} from ${topic} (registry: ${now?.stateTopic})`);
    };
    cache.on('change', onChange);
    try {
      // Each turn while the renamed list is worked out: the registry shows one whole home or the other, the
      // cache agrees with it, and a message on a sensor's topic as the registry has it reaches that sensor.
      let turns = 0;
      let renamedAt = -1;
      let halves = 0;
      let notReached = 0;
      const arrived = new Promise<void>((resolve) => {
        const onList = (t: string) => {
          if (t !== 'zigbee2mqtt/bridge/devices') return;
          hearth.bridge.connection.off('message', onList);
          resolve();
        };
        hearth.bridge.connection.prependListener('message', onList);
      });
      // Real messages on the old topics all through the arrival, and after it.
      let stop = false;
      let sent = 0;
      const stream = (async () => {
        while (!stop) {
          const i = sent++ % SENSORS;
          await pub.publishAsync(`zigbee2mqtt/Sensor ${i}`, JSON.stringify({ humidity: 40, temperature: sent }), { qos: 0 });
          await nextTurn();
        }
      })();
      await pub.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(list((i) => `Hall sensor ${i}`)), { retain: true, qos: 1 });
      await arrived;
      for (; renamedAt < 0 || turns < renamedAt + 3; turns++) {
        const names = registry()
          .devices()
          .map((d) => d.name);
        const hall = names.filter((n) => n.startsWith('Hall sensor ')).length;
        if (hall !== 0 && hall !== SENSORS) halves++;
        if (hall === SENSORS && renamedAt < 0) renamedAt = turns;
        const k = turns % SENSORS;
        const entity = registry().entity(temperatureOf(k))!;
        assert.equal(cache.entity(temperatureOf(k)), entity, `turn ${turns}: the cache and the registry disagree on ${temperatureOf(k)}`);
        const before = cache.get(temperatureOf(k))?.value;
        topic = entity.stateTopic!;
        cache.handle(entity.stateTopic!, Buffer.from(JSON.stringify({ temperature: 100_000 + turns })));
        if (cache.get(temperatureOf(k))?.value === before) notReached++;
        await nextTurn();
        assert.ok(turns < 10_000, 'the renamed list never came in');
      }
      stop = true;
      await stream;
      assert.ok(renamedAt > 3, `the list was worked out over ${renamedAt} turns: not spread at all`);
      assert.equal(halves, 0, 'a turn saw the home half renamed');
      assert.equal(notReached, 0, "a message on a sensor's topic did not reach it");

      // After the swap: the new topics are live and every message on them arrives; the old ones feed nothing.
      await pub.publishAsync(`zigbee2mqtt/Hall sensor ${SENSORS - 1}`, JSON.stringify({ humidity: 41, temperature: 7 }), { retain: true, qos: 1 });
      await waitFor('the renamed topics live', () => cache.get(temperatureOf(SENSORS - 1))?.value === 7, 10_000);
      for (let i = 0; i < 40; i++) await pub.publishAsync(`zigbee2mqtt/Sensor ${i}`, JSON.stringify({ temperature: -1 }), { qos: 0 });
      for (let i = 0; i < 40; i++) await pub.publishAsync(`zigbee2mqtt/Hall sensor ${i}`, JSON.stringify({ temperature: 5000 + i }), { qos: 0 });
      await waitFor('every message on the renamed topics', () =>
        Array.from({ length: 40 }, (_, i) => cache.get(temperatureOf(i))?.value === 5000 + i).every(Boolean),
      );
      assert.deepEqual(misrouted, []);
    } finally {
      hearth.bridge.connection.off('message', onMessage);
      cache.off('change', onChange);
    }
  });

  it('a device a newer list removed does not come back when the older list is done, whichever turn the newer one lands in', async () => {
    const gone = 7;
    let round = 0;
    // The newer list lands at each turn of the older one's work (converting, handing over, each registry stage).
    for (let at = 0; at < 14; at++) {
      for (const newer of ['long', 'short'] as const) {
        round++;
        const older = list((i) => `R${round} sensor ${i}`);
        const kept =
          newer === 'long'
            ? list((i) => `R${round} new ${i}`, new Set([gone]))
            : list((i) => `R${round} new ${i}`)
                .slice(0, 3)
                .filter((d) => d.ieee_address !== ieee(gone));
        const seen: string[] = [];
        let listening = false;
        const onChanged = () => {
          if (listening && registry().device(deviceOf(gone))) seen.push(`round ${round} (${newer}, turn ${at}): ${registry().device(deviceOf(gone))!.name}`);
        };
        registry().on('changed', onChanged);
        try {
          adapter().handle('zigbee2mqtt/bridge/devices', Buffer.from(JSON.stringify(older)));
          for (let t = 0; t < at; t++) await nextTurn();
          listening = true;
          adapter().handle('zigbee2mqtt/bridge/devices', Buffer.from(JSON.stringify(kept)));
          await waitFor(`round ${round}: the newer list`, () => registry().device(deviceOf(1))?.name === kept[1]!.friendly_name);
          // Long after every turn the older list could still have taken.
          for (let t = 0; t < 40; t++) await nextTurn();
          assert.equal(registry().device(deviceOf(gone)), undefined, `round ${round}: sensor ${gone} came back`);
          assert.equal(registry().devices().length, kept.length, `round ${round}: the registry has the newer list`);
          assert.equal(registry().entity(humidityOf(gone)), undefined);
          assert.equal(hearth.bridge.cache.entity(humidityOf(gone)), undefined, `round ${round}: the cache still routes sensor ${gone}`);
          assert.deepEqual(seen, []);
        } finally {
          registry().off('changed', onChanged);
        }
      }
    }
  });

  it('the same list again while the first is still worked out comes in all the same', async () => {
    // Zigbee2MQTT republishes an unchanged bridge/devices on many events: the second copy must not be taken for
    // what the registry already has while the first is stopped for it.
    for (let at = 0; at < 14; at++) {
      const same = list((i) => `Same ${at} sensor ${i}`);
      adapter().handle('zigbee2mqtt/bridge/devices', Buffer.from(JSON.stringify(same)));
      for (let t = 0; t < at; t++) await nextTurn();
      adapter().handle('zigbee2mqtt/bridge/devices', Buffer.from(JSON.stringify(same)));
      await waitFor(`turn ${at}: the list`, () => registry().device(deviceOf(SENSORS - 1))?.name === `Same ${at} sensor ${SENSORS - 1}`);
      assert.equal(registry().devices().length, SENSORS);
      assert.match(hearth.bridge.cache.entity(temperatureOf(SENSORS - 1))?.name ?? '', new RegExp(`^Same ${at} sensor ${SENSORS - 1}\\b`));
    }
  });
});
