// MqttConnection over every transport a real home broker offers, against ONE
// mosquitto with four listeners (see test/helpers/mosquitto-config.ts):
// password-protected MQTT, WebSockets, TLS (throwaway CA) and mutual TLS.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import type { IPublishPacket } from 'mqtt';

import { MqttConnection, MqttError, redact, type ConnectionOptions } from '../../src/mqtt/connection.js';
import { logSink, type LogLine } from '../helpers/log-sink.js';
import { startMultiListenerMosquitto, type MultiListenerMosquitto } from '../helpers/mosquitto-config.js';
import { sleep, waitFor } from '../helpers/wait.js';

const CONNECT_MS = 5_000;
/** How long a connection that must fail is given before waitConnected gives up. */
const REFUSE_MS = 1_500;
const WRONG_PASSWORD = 'Wr0ng-pa55word!';

let broker: MultiListenerMosquitto;
const open: MqttConnection[] = [];
let seq = 0;

interface Opened {
  conn: MqttConnection;
  lines: LogLine[];
  /** Every log line as one string, to look for leaked secrets. */
  text(): string;
}

function connect(options: ConnectionOptions): Opened {
  const sink = logSink('debug');
  const conn = new MqttConnection({ clientId: `hearth-transport-${process.pid}-${++seq}`, reconnectMinMs: 100, reconnectMaxMs: 400, ...options }, sink.log);
  open.push(conn);
  return { conn, lines: sink.lines, text: () => sink.lines.map((l) => JSON.stringify(l)).join('\n') };
}

async function connected(options: ConnectionOptions): Promise<Opened> {
  const o = connect(options);
  await o.conn.waitConnected(CONNECT_MS).catch((err: Error) => {
    throw new Error(`${err.message}\n--- mosquitto log ---\n${broker.log().slice(-4000)}`);
  });
  return o;
}

/** waitConnected must reject; returns the error. */
async function refused(o: Opened): Promise<MqttError> {
  const err = await o.conn.waitConnected(REFUSE_MS).then(
    () => assert.fail(`connected to ${o.conn.options.url} but should have been refused`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof MqttError, `expected an MqttError, got ${String(err)}`);
  assert.equal(err.code, 'BROKER_DOWN');
  assert.equal(o.conn.connected, false);
  return err;
}

/** Subscribe, prove the subscription is live with a retained message, then round-trip a live publish. */
async function roundTrip(pub: MqttConnection, sub: MqttConnection, topic: string): Promise<void> {
  const got: Array<{ payload: string; retained: boolean }> = [];
  sub.on('message', (t, payload, retained) => {
    if (t === topic) got.push({ payload: payload.toString(), retained });
  });
  await pub.publish(topic, 'retained', { qos: 1, retain: true });
  sub.subscribe([topic]);
  await waitFor(`retained message on ${topic}`, () => got.find((m) => m.payload === 'retained'));
  await pub.publish(topic, 'live', { qos: 1 });
  const live = await waitFor(`live message on ${topic}`, () => got.find((m) => m.payload === 'live'));
  assert.equal(live.retained, false);
  // Leave no retained message behind for other tests.
  await pub.publish(topic, '', { qos: 1, retain: true });
}

before(async () => {
  broker = await startMultiListenerMosquitto();
});

after(async () => {
  await Promise.allSettled(open.map((c) => c.close()));
  await broker?.stop();
});

describe('MqttConnection over mosquitto transports', { timeout: 60_000 }, () => {
  describe('mqtt:// with a password file', () => {
    it('connects with username/password and round-trips a publish', async () => {
      const a = await connected({ url: broker.urls.mqtt, username: broker.username, password: broker.password });
      assert.equal(a.conn.state, 'connected');
      const b = await connected({ url: broker.urls.mqtt, username: broker.username, password: broker.password });
      await roundTrip(a.conn, b.conn, 'hearth/test/plain');
      assert.ok(!a.text().includes(broker.password), 'password in a log line');
    });

    it('a wrong password fails: the error names the broker and the refusal, the log hides the password', async () => {
      const o = connect({ url: broker.urls.mqtt, username: broker.username, password: WRONG_PASSWORD });
      const err = await refused(o);
      assert.ok(err.message.includes(broker.urls.mqtt), `URL missing from: ${err.message}`);
      assert.match(err.message, /Not authorized|Bad username or password/i);
      const logged = o.lines.filter((l) => l.msg === 'MQTT error');
      assert.equal(logged.length, 1, `one MQTT error line expected:\n${o.text()}`);
      assert.match((logged[0].err as { message: string }).message, /Not authorized|Bad username or password/i);
      assert.equal(logged[0].url, broker.urls.mqtt);
      assert.ok(!o.text().includes(WRONG_PASSWORD), `password in the log:\n${o.text()}`);
      assert.ok(!err.message.includes(WRONG_PASSWORD));
    });

    it('no credentials at all are refused (allow_anonymous false)', async () => {
      const err = await refused(connect({ url: broker.urls.mqtt }));
      assert.match(err.message, /Not authorized|Bad username or password/i);
    });

    it('credentials inside the URL work, and neither logs nor errors show them', async () => {
      const port = broker.ports.mqtt;
      const good = await connected({ url: `mqtt://${broker.username}:${broker.password}@127.0.0.1:${port}` });
      const hello = good.lines.find((l) => l.msg === 'MQTT connected');
      assert.equal(hello?.url, `mqtt://***@127.0.0.1:${port}`);
      assert.ok(!good.text().includes(broker.password), `password in the log:\n${good.text()}`);

      const bad = connect({ url: `mqtt://${broker.username}:${WRONG_PASSWORD}@127.0.0.1:${port}` });
      const err = await refused(bad);
      assert.ok(err.message.includes(`mqtt://***@127.0.0.1:${port}`), err.message);
      assert.ok(!err.message.includes(WRONG_PASSWORD), err.message);
      assert.ok(!bad.text().includes(WRONG_PASSWORD), `password in the log:\n${bad.text()}`);
      assert.ok(bad.lines.some((l) => l.msg === 'MQTT error'));
    });
  });

  describe('ws://', () => {
    it('connects over WebSockets and round-trips a publish to a subscriber', async () => {
      const pub = await connected({ url: broker.urls.ws });
      const sub = await connected({ url: broker.urls.ws });
      await roundTrip(pub.conn, sub.conn, 'hearth/test/ws');
      // mqtt.js asks for /mqtt when the URL has no path; mosquitto takes any path.
      const explicit = await connected({ url: `${broker.urls.ws}/mqtt` });
      assert.equal(explicit.conn.state, 'connected');
    });

    it('WebSockets and plain MQTT clients see each other', async () => {
      const ws = await connected({ url: broker.urls.ws });
      const tcp = await connected({ url: broker.urls.mqtt, username: broker.username, password: broker.password });
      await roundTrip(tcp.conn, ws.conn, 'hearth/test/ws-from-tcp');
    });
  });

  describe('mqtts:// (server certificate from a throwaway CA)', () => {
    it('connects with `ca` and round-trips a publish', async () => {
      const a = await connected({ url: broker.urls.tls, ca: broker.pki.ca });
      const b = await connected({ url: broker.urls.tls, ca: broker.pki.ca });
      await roundTrip(a.conn, b.conn, 'hearth/test/tls');
    });

    it('without `ca` fails with a clear certificate error', async () => {
      const o = connect({ url: broker.urls.tls });
      const err = await refused(o);
      const certProblem = /self[- ]signed certificate|unable to get local issuer certificate|unable to verify/i;
      assert.ok(err.message.includes(broker.urls.tls), err.message);
      assert.match(err.message, certProblem);
      const logged = o.lines.filter((l) => l.msg === 'MQTT error');
      assert.ok(logged.length >= 1, o.text());
      assert.match((logged[0].err as { message: string }).message, certProblem);
    });

    it('connects without `ca` when rejectUnauthorized is false', async () => {
      const o = await connected({ url: broker.urls.tls, rejectUnauthorized: false });
      await o.conn.publish('hearth/test/tls-insecure', 'x', { qos: 1 });
    });
  });

  describe('mqtts:// with require_certificate (mutual TLS)', () => {
    it('connects with a client cert and key from the same CA', async () => {
      const o = await connected({ url: broker.urls.mtls, ca: broker.pki.ca, cert: broker.pki.clientCert, key: broker.pki.clientKey });
      await o.conn.publish('hearth/test/mtls', 'x', { qos: 1 });
    });

    it('is refused without a client certificate', async () => {
      const o = connect({ url: broker.urls.mtls, ca: broker.pki.ca });
      const err = await refused(o);
      // TLS 1.3: the handshake "completes" on the client, then the server's
      // alert arrives; older stacks see a reset instead.
      assert.match(err.message, /certificate required|handshake failure|ECONNRESET|EPIPE|socket hang up/i);
      assert.ok(
        o.lines.some((l) => l.msg === 'MQTT error'),
        o.text(),
      );
    });
  });

  describe('MQTT 5 against mosquitto', () => {
    const v5 = (): ConnectionOptions => ({
      url: broker.urls.mqtt,
      username: broker.username,
      password: broker.password,
      protocolVersion: 5,
    });

    it('connects, and a publish with expirySeconds reaches a subscriber with its expiry', async () => {
      const pub = await connected(v5());
      const sub = await connected(v5());
      assert.equal(pub.conn.client.options.protocolVersion, 5);
      const topic = 'hearth/test/v5/expiry';
      const got: IPublishPacket[] = [];
      sub.conn.client.on('message', (t, _p, packet) => {
        if (t === topic) got.push(packet);
      });
      // A retained marker proves the subscription is in place before the real publish.
      await pub.conn.publish(topic, 'ready', { qos: 1, retain: true });
      sub.conn.subscribe([topic]);
      await waitFor('retained marker', () => got.find((p) => p.payload.toString() === 'ready'));
      await pub.conn.publish(topic, 'on', { qos: 1, expirySeconds: 60 });
      const packet = await waitFor('the expiring message', () => got.find((p) => p.payload.toString() === 'on'));
      const expiry = packet.properties?.messageExpiryInterval;
      assert.ok(typeof expiry === 'number' && expiry > 0 && expiry <= 60, `messageExpiryInterval ${expiry}`);
      await pub.conn.publish(topic, '', { qos: 1, retain: true });
    });

    it('the broker drops a message whose expiry has passed', async () => {
      const pub = await connected(v5());
      const base = 'hearth/test/v5/expired';
      await pub.conn.publish(`${base}/short`, 'stale', { qos: 1, retain: true, expirySeconds: 1 });
      await pub.conn.publish(`${base}/kept`, 'fresh', { qos: 1, retain: true });
      await sleep(2_200);
      const sub = await connected(v5());
      const got = new Map<string, string>();
      sub.conn.on('message', (t, payload) => got.set(t, payload.toString()));
      // The expired one's filter first: the broker answers filters in order, so the one kept arrives after it would.
      sub.conn.subscribe([`${base}/short`, `${base}/kept`]);
      await waitFor('the retained message without expiry', () => got.get(`${base}/kept`));
      assert.equal(got.has(`${base}/short`), false, 'expired retained message was delivered');
      await pub.conn.publish(`${base}/kept`, '', { qos: 1, retain: true });
      await pub.conn.publish(`${base}/short`, '', { qos: 1, retain: true });
    });

    it('with MQTT 3.1.1 expirySeconds is ignored and the publish still goes through', async () => {
      const pub = await connected({ url: broker.urls.mqtt, username: broker.username, password: broker.password });
      const sub = await connected(v5());
      const topic = 'hearth/test/v4/expiry';
      const got: IPublishPacket[] = [];
      sub.conn.client.on('message', (t, _p, packet) => {
        if (t === topic) got.push(packet);
      });
      await pub.conn.publish(topic, 'ready', { qos: 1, retain: true });
      sub.conn.subscribe([topic]);
      await waitFor('retained marker', () => got.find((p) => p.payload.toString() === 'ready'));
      await pub.conn.publish(topic, 'on', { qos: 1, expirySeconds: 60 });
      const packet = await waitFor('the message', () => got.find((p) => p.payload.toString() === 'on'));
      assert.equal(packet.properties?.messageExpiryInterval, undefined);
      await pub.conn.publish(topic, '', { qos: 1, retain: true });
    });

    it('a wrong password is refused with the MQTT 5 reason', async () => {
      const o = connect({ ...v5(), password: WRONG_PASSWORD });
      const err = await refused(o);
      // mosquitto 2.0 answers 0x87 "Not authorized" (not 0x86 "Bad User Name or Password").
      assert.match(err.message, /Not authorized|Bad user ?name or password/i);
      assert.ok(!o.text().includes(WRONG_PASSWORD));
    });
  });
});

describe('redact()', () => {
  it('keeps credentials out of broker URLs', () => {
    assert.equal(redact('mqtt://user:pass@host'), 'mqtt://***@host');
    assert.equal(redact('mqtt://user:pass@host:1883'), 'mqtt://***@host:1883');
    assert.equal(redact('mqtts://user@broker.lan:8883'), 'mqtts://***@broker.lan:8883');
    assert.equal(redact('ws://u:p@127.0.0.1:9001/mqtt'), 'ws://***@127.0.0.1:9001/mqtt');
    assert.equal(redact('mqtt://127.0.0.1:1883'), 'mqtt://127.0.0.1:1883');
    assert.equal(redact('ws://host:9001/mqtt?token=a@b'), 'ws://host:9001/mqtt?token=a@b');
  });

  it('hides all of a password that contains a raw "@" (MQTT.js accepts one)', () => {
    const out = redact('mqtt://user:p@ss@host:1883');
    assert.equal(out, 'mqtt://***@host:1883');
    assert.ok(!out.includes('ss@'));
  });
});
