// The state cache against real brokers: aedes in-process and a mosquitto process.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Device } from '../../src/devices/model.js';
import { StateCache } from '../../src/devices/state-cache.js';
import { stateJson } from '../../src/present/state.js';
import { stateText } from '../../src/tools/state-text.js';
import { MqttConnection } from '../../src/mqtt/connection.js';
import { drawCameraFrame } from '../../src/simulator/camera-frame.js';
import { brokerKinds, subscribesAt, type TestBroker } from '../helpers/brokers.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const HOME = `
devices:
  - id: plug
    name: Desk plug
    area: Office
    availability: t/plug/availability
    entities:
      relay: { kind: switch, state_topic: t/plug/state, command_topic: t/plug/set }
  - id: env
    name: Office sensor
    area: Office
    availability:
      sources:
        - t/env/availability
        - { topic: t/env/bridge, path: state }
      mode: all
    entities:
      temperature: { kind: sensor, unit: °C, state_topic: t/env, value_path: temperature }
      humidity: { kind: sensor, unit: '%', state_topic: t/env, value_path: "values['rel humidity']" }
      motion: { kind: binary_sensor, state_topic: t/env, value_path: occupancy }
  - id: gate
    name: Gate
    availability: { sources: [t/gate/a, t/gate/b], mode: any }
    entities:
      cover:
        kind: cover
        state_topic: t/gate/state
        attributes: { position: { topic: t/gate/position } }
        command_topic: t/gate/set
  - id: cam
    name: Porch camera
    entities:
      raw: { kind: camera, state_topic: t/cam/raw }
      b64: { kind: camera, state_topic: t/cam/b64, image_encoding: b64 }
`;

function home(text = HOME): Device[] {
  const parsed = parseDeviceFile('test-home.yaml', text);
  assert.ok('devices' in parsed, JSON.stringify(parsed));
  return parsed.devices;
}

function connectRaw(url: string): Promise<MqttClient> {
  const client = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 100 });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`raw client could not connect to ${url}`)), 5000);
    client.once('connect', () => {
      clearTimeout(timer);
      resolve(client);
    });
  });
}

for (const { kind, start } of brokerKinds) {
  describe(`state cache on ${kind}`, () => {
    let broker: TestBroker;
    let pub: MqttClient;
    const closers: Array<() => Promise<unknown>> = [];

    function bridgeSide(level = 'debug') {
      const sink = logSink(level);
      const connection = new MqttConnection({ url: broker.url, reconnectMinMs: 100, reconnectMaxMs: 400 }, sink.log);
      const cache = new StateCache(connection, sink.log);
      cache.setDevices(home());
      closers.push(async () => {
        cache.close();
        await connection.close();
      });
      return { connection, cache, sink };
    }

    const publish = (topic: string, payload: string | Buffer, retain = true) => pub.publishAsync(topic, payload, { qos: 1, retain });

    before(async () => {
      broker = await start();
      pub = await connectRaw(broker.url);
    });
    after(async () => {
      for (const close of closers) await close();
      await pub.endAsync(true);
      await broker.stop();
    });

    it('mirrors plain and JSON values, attributes, the time they came and availability', async () => {
      const { connection, cache } = bridgeSide();
      await connection.waitConnected(5000);
      await waitFor('subscriptions', () => connection.subscriptions.size >= 9);
      // Every message below is retained: one that comes before the broker has the subscription arrives with it.
      const t0 = Date.now();
      await publish('t/plug/availability', 'online');
      await publish('t/plug/state', 'ON');
      await publish('t/env', JSON.stringify({ temperature: 21.5, values: { 'rel humidity': '44' }, occupancy: true }));
      await publish('t/gate/state', 'opening');
      await publish('t/gate/position', '40');
      const plug = await waitFor('plug on', () => cache.get('plug.relay')?.value === 'on' && cache.get('plug.relay'));
      assert.equal(plug.available, true);
      assert.ok(plug.updatedAt! >= t0 - 5 && plug.updatedAt! <= Date.now());
      await waitFor('env values', () => cache.get('env.motion')?.value === 'on');
      assert.equal(cache.get('env.temperature')!.value, 21.5);
      assert.equal(cache.get('env.humidity')!.value, 44);
      await waitFor('gate position', () => cache.get('gate.cover')?.attributes.position === 40);
      assert.equal(cache.get('gate.cover')!.value, 'opening');

      // A partial JSON update leaves the other entities on the topic as they were.
      await publish('t/env', JSON.stringify({ temperature: 22 }));
      await waitFor('temperature 22', () => cache.get('env.temperature')?.value === 22);
      assert.equal(cache.get('env.humidity')!.value, 44);

      await publish('t/plug/availability', 'offline');
      await waitFor('plug offline', () => cache.get('plug.relay')?.available === false);
    });

    it('combines availability sources by mode: all needs every source, any needs one', async () => {
      const { connection, cache } = bridgeSide();
      await connection.waitConnected(5000);
      await publish('t/env/availability', 'online');
      await publish('t/env/bridge', JSON.stringify({ state: 'offline' }));
      await publish('t/gate/a', 'offline');
      await publish('t/gate/b', 'online');
      await waitFor('env unavailable (one source offline)', () => cache.get('env.temperature')?.available === false);
      await waitFor('gate available (one source online)', () => cache.get('gate.cover')?.available === true);
      await publish('t/env/bridge', JSON.stringify({ state: 'online' }));
      await waitFor('env available', () => cache.get('env.temperature')?.available === true);
      await publish('t/gate/b', 'offline');
      await waitFor('gate unavailable', () => cache.get('gate.cover')?.available === false);
    });

    it('keeps the latest camera frame with its type read from the bytes; raw and base64', async () => {
      const { connection, cache } = bridgeSide();
      await connection.waitConnected(5000);
      // The frames are not retained: subscribed once the first test's retained state arrives.
      await waitFor('retained temperature', () => cache.get('env.temperature')?.value !== undefined);
      const jpeg = await drawCameraFrame(new Date('2026-12-02T10:00:00Z'));
      await publish('t/cam/raw', jpeg, false);
      const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
      await publish('t/cam/b64', png.toString('base64'), false);
      const raw = await waitFor('raw frame', () => cache.get('cam.raw')?.frame);
      assert.equal(raw.contentType, 'image/jpeg');
      assert.ok(raw.bytes.equals(jpeg));
      const b64 = await waitFor('b64 frame', () => cache.get('cam.b64')?.frame);
      assert.equal(b64.contentType, 'image/png');
      assert.ok(b64.bytes.equals(png));
    });

    it('logs and skips malformed payloads, once per topic per minute, and keeps the old state', async () => {
      const { connection, cache, sink } = bridgeSide('warn');
      await connection.waitConnected(5000);
      // Let the retained state of earlier tests arrive first: a broker may deliver it after a live message.
      await waitFor('retained temperature', () => cache.get('env.temperature')?.value !== undefined);
      await publish('t/env', JSON.stringify({ temperature: 19 }));
      await waitFor('temperature 19', () => cache.get('env.temperature')?.value === 19);
      let malformed = 0;
      cache.on('malformed', () => malformed++);

      await publish('t/env', 'not json at all', false);
      await publish('t/env', Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x9c]), false);
      await publish('t/plug/state', 'MAYBE', false);
      await publish('t/cam/raw', Buffer.from('definitely not a picture'), false);
      await publish('t/cam/raw', Buffer.alloc(5 * 1024 * 1024 + 10, 0xff), false);
      await publish('t/plug/availability', 'sleeping', false);
      // Three entities share t/env: one bad message is three reports but one log line.
      await waitFor('all malformed reports', () => malformed >= 3 * 2 + 4 && malformed, 10_000);
      assert.equal(cache.get('env.temperature')!.value, 19, 'old value kept');
      assert.equal(cache.get('plug.relay')!.value !== 'maybe', true);

      const lines = sink.find(/^skipped a payload/);
      const topics = lines.map((l) => l.topic).sort();
      assert.deepEqual(topics, ['t/cam/raw', 't/env', 't/plug/availability', 't/plug/state']);
      const env = lines.find((l) => l.topic === 't/env')!;
      assert.equal(env.reason, 'not_json');
      assert.match(env.msg, /payload is not JSON: "not json at all"/);
      assert.match(lines.find((l) => l.topic === 't/plug/state')!.msg, /"MAYBE" is not one of ON, OFF/);
      assert.match(lines.find((l) => l.topic === 't/cam/raw')!.msg, /not a PNG, JPEG, GIF or WebP image/);

      // Still alive and still mirroring.
      await publish('t/env', JSON.stringify({ temperature: 20 }));
      await waitFor('temperature 20 after garbage', () => cache.get('env.temperature')?.value === 20);
    });

    it('restores state from retained messages after a restart of the bridge side', async () => {
      await publish('t/plug/state', 'OFF');
      await publish('t/plug/availability', 'online');
      await publish('t/gate/position', '75');
      const { cache } = bridgeSide();
      await waitFor('retained plug state', () => cache.get('plug.relay')?.value === 'off');
      assert.equal(cache.get('plug.relay')!.available, true);
      await waitFor('retained position', () => cache.get('gate.cover')?.attributes.position === 75);
    });

    it('says a retained value is of unknown age until the device reports live', async () => {
      await publish('t/plug/state', 'OFF');
      await publish('t/plug/availability', 'online');
      const { connection, cache } = bridgeSide();
      const plug = await waitFor('retained plug state', () => cache.get('plug.relay')?.value === 'off' && cache.get('plug.relay'));
      assert.equal(plug.retained, true);
      const entity = cache.entity('plug.relay')!;
      assert.match(stateText(entity, plug), /: off; reported before Hearth subscribed \(kept by the broker; age unknown\); online\.$/);
      assert.equal(stateJson(entity, plug).ageMs, null);
      await waitFor('subscriptions', () => connection.subscriptions.size >= 9);
      await publish('t/plug/state', 'ON', false);
      await waitFor('live plug state', () => cache.get('plug.relay')?.value === 'on');
      assert.equal(cache.get('plug.relay')!.retained, false);
      assert.match(stateText(entity, cache.get('plug.relay')), /: on; updated (just now|\d+ ms ago|1 s ago); online\.$/);
    });

    it('reads the retained state again for a reading a device file read again changes, on the same topic; its other readers keep what they have', async () => {
      // The broker keeps the first report; the live one after it (not retained) is newer than the broker's copy.
      await publish('t/env', JSON.stringify({ temperature: 21.5, probe: { temperature: 19.5 }, values: { 'rel humidity': '44' }, occupancy: true }));
      const { connection, cache } = bridgeSide();
      await waitFor('the retained report', () => cache.get('env.humidity')?.value === 44 && cache.get('env.temperature')?.value === 21.5);
      await publish('t/env', JSON.stringify({ temperature: 21.7, probe: { temperature: 19.6 }, values: { 'rel humidity': '47' }, occupancy: false }), false);
      await waitFor('the live report', () => cache.get('env.humidity')?.value === 47 && cache.get('env.motion')?.value === 'off');
      assert.equal(cache.get('env.temperature')!.value, 21.7);
      const subscribes = broker.aedes ? subscribesAt(broker, connection.client.options.clientId!) : undefined;
      closers.push(async () => subscribes?.stop());
      const changes: string[] = [];
      cache.on('change', (_state, entity) => changes.push(entity.id));

      // The file now reads the temperature from the probe: the same topic, another path.
      cache.setDevices(home(HOME.replace('value_path: temperature }', 'value_path: probe.temperature }')));
      assert.equal(cache.get('env.temperature')!.value, undefined, 'a value read the old way is not shown meanwhile');
      const probe = await waitFor('the probe, from the retained copy', () => cache.get('env.temperature')?.value === 19.5 && cache.get('env.temperature'));
      assert.equal(probe.retained, true, "the broker's copy: of unknown age");
      assert.equal(cache.get('env.humidity')!.value, 47, 'the humidity does not go back to the older retained copy');
      assert.equal(cache.get('env.motion')!.value, 'off');
      assert.deepEqual(changes, ['env.temperature', 'env.temperature'], 'unknown, then the probe; nothing for the others');
      if (subscribes) assert.deepEqual(subscribes.topics, ['t/env'], 'its topic subscribed again, once');
    });

    it('subscribes nothing again for a device file read again unchanged; an edit, the topic of what it changed only', async () => {
      await publish('t/env', JSON.stringify({ temperature: 20.5, values: { 'rel humidity': '41' }, occupancy: true, presence: false }));
      await publish('t/plug/state', 'ON');
      const { connection, cache } = bridgeSide();
      const watched = ['env.temperature', 'env.humidity', 'env.motion', 'plug.relay'];
      const values = () => watched.map((id) => cache.get(id)?.value);
      await waitFor('the retained states', () => values().join() === '20.5,41,on,on');
      const subscribes = broker.aedes ? subscribesAt(broker, connection.client.options.clientId!) : undefined;
      closers.push(async () => subscribes?.stop());
      const changes: string[] = [];
      cache.on('change', (_state, entity) => {
        if (watched.includes(entity.id)) changes.push(entity.id);
      });

      // Read again as it was (every object new, every reading the same), then with the motion read from `presence`.
      cache.setDevices(home());
      assert.deepEqual(values(), [20.5, 41, 'on', 'on']);
      cache.setDevices(home(HOME.replace('value_path: occupancy }', 'value_path: presence }')));
      await waitFor('the motion read from presence', () => cache.get('env.motion')?.value === 'off');
      assert.deepEqual(values(), [20.5, 41, 'off', 'on']);
      assert.deepEqual(changes, ['env.motion', 'env.motion']);
      if (subscribes) assert.deepEqual(subscribes.topics, ['t/env'], 'nothing for the unchanged file; t/env once for the edit');
    });

    it('rides out a broker restart: reconnects, resubscribes and rebuilds from retained messages', async () => {
      const { connection, cache, sink } = bridgeSide('info');
      await connection.waitConnected(5000);
      await publish('t/plug/state', 'ON');
      await waitFor('plug on', () => cache.get('plug.relay')?.value === 'on');
      const states: string[] = [];
      connection.on('state', (s) => states.push(s));

      await broker.restart();
      await waitFor('reconnected', () => states.includes('reconnecting') && states.at(-1) === 'connected' && states, 10_000);
      // A fresh client publishes what changed while the bridge was away.
      const other = await connectRaw(broker.url);
      closers.push(() => other.endAsync(true));
      await other.publishAsync('t/plug/state', 'OFF', { qos: 1, retain: true });
      await waitFor('state after restart', () => cache.get('plug.relay')?.value === 'off', 5000);
      assert.ok(sink.find(/MQTT connection lost/).length >= 1, 'the outage is logged');
      assert.ok(sink.find(/MQTT connected/).length >= 2, 'the reconnection is logged');
    });

    it('fails a publish at once while the broker is down, and never sends it later', async () => {
      const { connection } = bridgeSide('error');
      await connection.waitConnected(5000);
      const seen: string[] = [];
      const watcher = await connectRaw(broker.url);
      closers.push(() => watcher.endAsync(true));
      await watcher.subscribeAsync('t/plug/set', { qos: 1 });
      let marked = false;
      watcher.on('message', (t, p) => {
        if (t === 't/plug/set') seen.push(p.toString());
        else marked = true;
      });

      await broker.stop();
      await waitFor('bridge sees the outage', () => !connection.connected);
      // Refused while the broker is still down (it starts again only after): the publish does not wait for it.
      await assert.rejects(connection.publish('t/plug/set', 'ON', { qos: 1 }), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'BROKER_DOWN');
        return true;
      });
      broker = await start({ port: broker.port });
      await connection.waitConnected(10_000);
      await watcher.subscribeAsync(['t/plug/set', 't/plug/marker'], { qos: 1 });
      // A marker the bridge publishes after reconnecting arrives after anything it still had to send.
      await connection.publish('t/plug/marker', 'after', { qos: 1 });
      await waitFor('the marker', () => marked);
      assert.deepEqual(seen, [], 'nothing published after reconnect');
    });
  });
}
