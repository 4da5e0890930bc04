import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';

import mqtt, { type IPublishPacket, type MqttClient } from 'mqtt';

import { brokerKinds, freePort, type TestBroker } from './brokers.js';

const STEP_TIMEOUT_MS = 5_000;

/** Race a promise against a timer; the timer never outlives the race. */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function nextEvent(client: MqttClient, event: 'connect' | 'close'): Promise<void> {
  return new Promise((resolve) => client.once(event, () => resolve()));
}

function connect(url: string, clientId: string): Promise<MqttClient> {
  const client = mqtt.connect(url, {
    protocolVersion: 4,
    clientId,
    reconnectPeriod: 100,
    connectTimeout: 2_000,
  });
  const connected = new Promise<MqttClient>((resolve, reject) => {
    client.once('connect', () => resolve(client));
    client.once('error', reject);
  });
  return within(STEP_TIMEOUT_MS, `${clientId} to connect to ${url}`, connected).catch((err: unknown) => {
    client.end(true);
    throw err;
  });
}

/** True if we can bind the port ourselves, i.e. nobody is listening on it. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

describe('freePort', () => {
  it('returns a bindable port', async () => {
    const port = await freePort();
    assert.ok(Number.isInteger(port) && port > 0 && port < 65536);
    assert.equal(await portIsFree(port), true);
  });
});

for (const { kind, start } of brokerKinds) {
  describe(`${kind} test broker`, () => {
    const clients: MqttClient[] = [];
    let broker: TestBroker | undefined;

    after(async () => {
      await Promise.allSettled(clients.map((c) => within(2_000, 'client end', c.endAsync(true))));
      await broker?.stop();
    });

    it('keeps retained messages across restart, clients reconnect, stop frees the port', async () => {
      broker = await start();
      assert.equal(broker.kind, kind);
      assert.equal(broker.url, `mqtt://127.0.0.1:${broker.port}`);

      const suffix = Math.random().toString(16).slice(2, 8);
      const topic = `hearth/test/${kind}/${suffix}/state`;
      const payload = JSON.stringify({ on: true, at: suffix });

      const publisher = await connect(broker.url, `pub-${kind}-${suffix}`);
      clients.push(publisher);
      await within(STEP_TIMEOUT_MS, 'retained publish ack', publisher.publishAsync(topic, payload, { qos: 1, retain: true }));

      // Restart: the publisher must see its connection drop and come back.
      const closed = nextEvent(publisher, 'close');
      const reconnected = nextEvent(publisher, 'connect');
      await within(STEP_TIMEOUT_MS, `${kind} restart`, broker.restart());
      await within(STEP_TIMEOUT_MS, 'publisher to see the disconnect', closed);
      await within(STEP_TIMEOUT_MS, 'publisher to reconnect', reconnected);
      assert.equal(publisher.connected, true);

      // A brand-new client subscribing after the restart gets the retained message.
      const subscriber = await connect(broker.url, `sub-${kind}-${suffix}`);
      clients.push(subscriber);
      const retained = new Promise<{ topic: string; payload: string; packet: IPublishPacket }>((resolve) => {
        subscriber.on('message', (tpc, buf, packet) => {
          if (tpc === topic) resolve({ topic: tpc, payload: buf.toString('utf8'), packet });
        });
      });
      await within(STEP_TIMEOUT_MS, 'subscribe ack', subscriber.subscribeAsync(topic, { qos: 1 }));
      const msg = await within(STEP_TIMEOUT_MS, 'retained message after restart', retained);
      assert.equal(msg.payload, payload);
      assert.equal(msg.packet.retain, true);

      // The reconnected publisher works normally after the restart.
      const live = new Promise<string>((resolve) => {
        subscriber.on('message', (tpc, buf, packet) => {
          if (tpc === topic && !packet.retain) resolve(buf.toString('utf8'));
        });
      });
      await within(STEP_TIMEOUT_MS, 'live publish ack', publisher.publishAsync(topic, 'live', { qos: 1 }));
      assert.equal(await within(STEP_TIMEOUT_MS, 'live message', live), 'live');

      // Stop: clients first (so nothing reconnects), then the broker; the port is free again.
      await Promise.all(clients.splice(0).map((c) => within(2_000, 'client end', c.endAsync())));
      const port = broker.port;
      await within(STEP_TIMEOUT_MS, `${kind} stop`, broker.stop());
      broker = undefined;
      assert.equal(await portIsFree(port), true, `port ${port} should be free after stop()`);
    });
  });
}
