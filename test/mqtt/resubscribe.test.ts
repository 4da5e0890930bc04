// MqttConnection.resubscribe: a topic held is SUBSCRIBEd again, for the broker to send its retained message again;
// one whose SUBSCRIBE has not gone out yet (not connected, waiting for a later turn, waiting for its UNSUBSCRIBE's
// answer) is not, and is not said to be: its retained message comes once, when that SUBSCRIBE goes. A real broker
// (aedes in-process), counting the SUBSCRIBEs it gets from Hearth's client.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { MqttConnection } from '../../src/mqtt/connection.js';
import { startAedes, subscribesAt, type TestBroker } from '../helpers/brokers.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

let broker: TestBroker;
let device: MqttClient;
const connections: MqttConnection[] = [];

before(async () => {
  broker = await startAedes();
  device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  await device.publishAsync('tele/kitchen/SENSOR', JSON.stringify({ AM2301: { Temperature: 23.4 } }), { retain: true, qos: 1 });
});
after(async () => {
  for (const c of connections) await c.close();
  await device?.endAsync(true).catch(() => undefined);
  await broker?.stop();
});

function open(): { connection: MqttConnection; retained: string[] } {
  const connection = new MqttConnection({ url: broker.url, protocolVersion: 4 }, logSink('error').log);
  connections.push(connection);
  const retained: string[] = [];
  connection.on('message', (topic, _payload, isRetained) => {
    if (isRetained) retained.push(topic);
  });
  return { connection, retained };
}

describe('MqttConnection.resubscribe', () => {
  it('a topic held: SUBSCRIBEd again, and the retained message comes again; one not held: nothing', async () => {
    const { connection, retained } = open();
    connection.subscribe(['tele/kitchen/SENSOR']);
    await connection.waitConnected(5000);
    await connection.whenSubscribed(['tele/kitchen/SENSOR'], 5000);
    await waitFor('the retained report', () => retained.length === 1);
    const subs = subscribesAt(broker, connection.client.options.clientId!);
    try {
      assert.deepEqual(connection.resubscribe(['tele/kitchen/SENSOR', 'tele/hall/SENSOR']), ['tele/kitchen/SENSOR']);
      await waitFor('the retained report again', () => retained.length === 2);
      assert.deepEqual(subs.topics, ['tele/kitchen/SENSOR']);
    } finally {
      subs.stop();
    }
  });

  it('not connected: nothing is sent, and none is said to be', () => {
    const { connection } = open();
    connection.subscribe(['tele/kitchen/SENSOR']);
    // Before the CONNACK: the connection subscribes to every topic when it comes.
    assert.equal(connection.client.connected, false);
    assert.deepEqual(connection.resubscribe(['tele/kitchen/SENSOR']), []);
  });

  it('a topic whose SUBSCRIBE waits for a later turn is not sent again', async () => {
    const { connection } = open();
    await connection.waitConnected(5000);
    // More topics than go at once: they wait for the next turns.
    const many = Array.from({ length: 600 }, (_, i) => `tele/plug_${i}/SENSOR`);
    connection.subscribe(many);
    assert.deepEqual(connection.resubscribe([many[0]!, many[599]!]), []);
    await connection.whenSubscribed(many, 5000);
    assert.deepEqual(connection.resubscribe([many[599]!]), [many[599]!], 'once it went out, it is');
  });

  it('a topic dropped and subscribed again, its UNSUBSCRIBE not answered yet, is not sent again', async () => {
    const { connection, retained } = open();
    connection.subscribe(['tele/kitchen/SENSOR']);
    await connection.waitConnected(5000);
    await connection.whenSubscribed(['tele/kitchen/SENSOR'], 5000);
    await waitFor('the retained report', () => retained.length === 1);
    connection.unsubscribe(['tele/kitchen/SENSOR']);
    connection.subscribe(['tele/kitchen/SENSOR']);
    assert.deepEqual(connection.resubscribe(['tele/kitchen/SENSOR']), []);
    // Its SUBSCRIBE goes when the broker has answered: the retained message comes then, once.
    await connection.whenSubscribed(['tele/kitchen/SENSOR'], 5000);
    await waitFor('the retained report with the new subscription', () => retained.length === 2);
  });
});
