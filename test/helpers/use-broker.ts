// A test file's broker with one plain MQTT client on it, started before the file's tests and stopped after them,
// for tests that open homes of their own on it.
import { after, before } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { startAedes, type TestBroker } from './brokers.js';
import { late } from './late.js';
import { started } from './use-home.js';

export interface BrokerInTest {
  broker: TestBroker;
  /** A plain MQTT client (MQTT 3.1.1), closed before the broker stops. */
  client: MqttClient;
}

export function useBroker(start: () => Promise<TestBroker> = startAedes): BrokerInTest {
  let broker: TestBroker | undefined;
  let running: BrokerInTest | undefined;
  before(async () => {
    broker = await start();
    running = { broker, client: await mqtt.connectAsync(broker.url, { protocolVersion: 4 }) };
  });
  after(async () => {
    await running?.client.endAsync(true);
    await broker?.stop();
  });
  return late(() => started(running, 'the broker'));
}
