// The clustered brokers the broker tests also run on (issue 34): a 3-node NATS cluster (MQTT on JetStream)
// and a RabbitMQ node with its MQTT plugin. Both speak MQTT 3.1.1 only. A test that cannot start one fails
// with the reason (the binary missing, the process exiting, no CONNACK in time); it never skips.
import type { BrokerKind, StartBrokerOptions, TestBroker } from './brokers.js';
import { startNatsCluster, type TestCluster } from './nats-cluster.js';
import { startRabbitMq } from './rabbitmq.js';

export const clusterKinds: Array<{ kind: BrokerKind; start: (opts?: StartBrokerOptions) => Promise<TestCluster> }> = [
  { kind: 'nats', start: () => startNatsCluster() },
  { kind: 'rabbitmq', start: () => startRabbitMq() },
];

/** Whether the broker has more than one node. */
export function isCluster(broker: TestBroker): broker is TestCluster {
  const cluster = broker as Partial<TestCluster>;
  return Boolean(cluster.nodeList && cluster.nodes && cluster.nodes.length > 1);
}

/** Where Hearth connects on this broker: every node of a cluster, beginning with a node the devices are not on. */
export function hearthUrl(broker: TestBroker): string {
  return isCluster(broker) ? broker.nodeList(1) : broker.url;
}

/** A node other than the one Hearth starts on (the last), where a watcher sees what crossed the cluster. */
export function otherNodeUrl(broker: TestBroker): string {
  const cluster = broker as Partial<TestCluster>;
  return cluster.nodes && cluster.nodes.length > 1 ? cluster.nodes[cluster.nodes.length - 1]!.url : broker.url;
}
