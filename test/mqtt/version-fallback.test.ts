// MQTT 5 on a broker that speaks 3.1.1 only (#34): NATS answers "unacceptable protocol version", RabbitMQ 3.10
// closes the socket without a CONNACK. Either way Hearth goes on with 3.1.1 and says so once. A broker that does
// answer a v5 CONNECT, even with a refusal (a bad password), is not taken for a 3.1.1-only one.
// (Against real NATS and RabbitMQ: test/cluster/on-cluster.test.ts.)
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { MqttConnection } from '../../src/mqtt/connection.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

/** A fake broker: `answer(level)` gives the bytes to send back to a CONNECT of that protocol level, or null to close. */
async function fakeBroker(answer: (level: number) => Buffer | null): Promise<{ url: string; connects: number[]; close(): Promise<void> }> {
  const connects: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('data', (data) => {
      // CONNECT: 0x10, a one-byte remaining length, then 00 04 "MQTT" and the protocol level.
      const level = data[8]!;
      connects.push(level);
      const reply = answer(level);
      if (reply) socket.write(reply);
      else socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    connects,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const CONNACK_311_OK = Buffer.from([0x20, 2, 0, 0]);
const CONNACK_5_NOT_AUTHORIZED = Buffer.from([0x20, 3, 0, 0x87, 0]);

describe('MQTT 5 falling back to 3.1.1', () => {
  const open: Array<{ close(): Promise<void> }> = [];
  after(async () => {
    for (const o of open) await o.close();
  });

  it('a broker that closes the socket on a v5 CONNECT: 3.1.1, and one warning', async () => {
    const broker = await fakeBroker((level) => (level === 5 ? null : CONNACK_311_OK));
    open.push(broker);
    const logs = logSink('debug');
    const connection = new MqttConnection({ url: broker.url, protocolVersion: 5, reconnectMinMs: 50, reconnectMaxMs: 100 }, logs.log);
    open.push(connection);
    await waitFor('connected', () => connection.connected, 5000);
    assert.equal(connection.protocolVersion, 4);
    assert.deepEqual(broker.connects.slice(-1), [4]);
    assert.equal(logs.find(/speaks MQTT 3\.1\.1 only/).length, 1);
  });

  it('a broker that answers a v5 CONNECT with a refusal stays on 5, without the warning', async () => {
    const broker = await fakeBroker(() => CONNACK_5_NOT_AUTHORIZED);
    open.push(broker);
    const logs = logSink('debug');
    const connection = new MqttConnection({ url: broker.url, protocolVersion: 5, reconnectMinMs: 50, reconnectMaxMs: 100 }, logs.log);
    open.push(connection);
    await waitFor('three refused connects', () => broker.connects.length >= 3, 5000);
    // A fourth: whatever it made of the third refusal, it has decided by its next try.
    await waitFor('a fourth connect', () => broker.connects.length >= 4, 5000);
    assert.equal(connection.protocolVersion, 5);
    assert.ok(broker.connects.every((level) => level === 5));
    assert.equal(logs.find(/speaks MQTT 3\.1\.1 only/).length, 0);
  });
});
