// The clustered test brokers themselves: each starts, keeps a retained message and serves it on every node,
// a killed node drops its clients and comes back, and stop() leaves no process behind.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { clusterKinds } from './cluster-brokers.js';
import type { TestCluster } from './nats-cluster.js';
import { waitFor } from './wait.js';

async function retainedOn(url: string, topic: string): Promise<string> {
  const client = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 0 });
  try {
    const got = new Promise<string>((resolve) => client.on('message', (t, p, packet) => t === topic && packet.retain && resolve(p.toString())));
    await client.subscribeAsync(topic, { qos: 1 });
    return await got;
  } finally {
    await client.endAsync(true);
  }
}

for (const { kind, start } of clusterKinds) {
  describe(`${kind} test broker`, () => {
    let broker: TestCluster | undefined;
    const clients: MqttClient[] = [];
    after(async () => {
      await Promise.allSettled(clients.map((c) => c.endAsync(true)));
      await broker?.stop();
    });

    it('serves a retained message on every node, drops the clients of a killed node, and brings it back', async () => {
      broker = await start();
      assert.equal(broker.kind, kind);
      const topic = `hearth/test/${kind}/state`;
      const publisher = await mqtt.connectAsync(broker.url, { protocolVersion: 4, reconnectPeriod: 100 });
      clients.push(publisher);
      await publisher.publishAsync(topic, 'ON', { qos: 1, retain: true });
      for (const node of broker.nodes) assert.equal(await retainedOn(node.url, topic), 'ON', `retained on ${node.name}`);

      const last = broker.nodes.length - 1;
      const onLast = await mqtt.connectAsync(broker.nodes[last].url, { protocolVersion: 4, reconnectPeriod: 100 });
      clients.push(onLast);
      const closed = new Promise<void>((resolve) => onLast.once('close', () => resolve()));
      await broker.killNode(last);
      await closed;
      assert.equal(broker.nodes[last].alive(), false);
      await broker.startNode(last);
      await waitFor('the client back on the restarted node', () => onLast.connected, 30_000);
      assert.equal(await retainedOn(broker.nodes[last].url, topic), 'ON', 'retained after the node came back');
    });
  });
}
