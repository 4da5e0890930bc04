// A throwaway NATS cluster for tests: three nats-server nodes on free loopback ports, routed to each other,
// each with JetStream (file store in a private temp dir) and an MQTT 3.1.1 listener. Each node runs in a process
// group of its own, killed with the test file. killNode(i) is a node's death (SIGKILL); startNode(i) brings it
// back on the same ports and store. Retained messages live in JetStream, replicated over the cluster.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, type TestBroker } from './brokers.js';
import { type BrokerProcess, spawnBroker, waitAccepting } from './cluster-process.js';
import { findBin, HOST, trackTempDir } from './mosquitto-process.js';

export interface ClusterNode {
  name: string;
  mqttPort: number;
  url: string;
  alive(): boolean;
}

/** A broker of several nodes. `url` is the first node; Hearth is given `nodeList()`. */
export interface TestCluster extends TestBroker {
  nodes: ClusterNode[];
  /** Every node's URL, comma-separated (Hearth's `mqtt.url`), beginning with node `first`. */
  nodeList(first?: number): string;
  /** The node whose MQTT port is `port` (which node a client is on). */
  nodeIndexOfPort(port: number): number;
  /** SIGKILL the node: its clients see the connection drop. */
  killNode(i: number): Promise<void>;
  /** Start a killed node again on the same ports and store. */
  startNode(i: number): Promise<void>;
  /** The tail of what every node printed (for failure messages). */
  logs(): string;
}

export interface BrokerUser {
  username: string;
  password: string;
  /** MQTT topic filters this user may publish to / subscribe to. */
  publish: string[];
  subscribe: string[];
}

export interface StartClusterOptions {
  nodes?: number;
  /** With users, no anonymous client is let in. */
  users?: BrokerUser[];
}

// JetStream's first start (stream creation, a meta leader over three nodes) takes a few seconds on 2 cores.
const START_TIMEOUT_MS = 30_000;

/** An MQTT topic filter as a NATS subject: levels become tokens, + is *, # is >. */
export function natsSubject(filter: string): string {
  return filter
    .split('/')
    .map((level) => (level === '+' ? '*' : level === '#' ? '>' : level))
    .join('.');
}

function authorization(users: BrokerUser[]): string[] {
  const list = users.map((u) => {
    const pub = u.publish.map((f) => JSON.stringify(natsSubject(f))).join(', ');
    // NATS 2.9 delivers a QoS 1 subscription through a JetStream consumer on $MQTT.sub.<id>: the user must be
    // allowed to subscribe there too, or every QoS 1 SUBSCRIBE fails.
    // An MQTT `a/#` also matches `a` itself: NATS subscribes to both `a.>` and `a`, and needs both allowed.
    const subjects = u.subscribe.flatMap((f) => (f.endsWith('/#') ? [natsSubject(f), natsSubject(f.slice(0, -2))] : [natsSubject(f)]));
    const sub = [...subjects, '$MQTT.sub.>'].map((f) => JSON.stringify(f)).join(', ');
    return `    { user: ${JSON.stringify(u.username)}, password: ${JSON.stringify(u.password)}, permissions: { publish: { allow: [${pub}] }, subscribe: { allow: [${sub}] } } }`;
  });
  return ['authorization {', '  users: [', list.join(',\n'), '  ]', '}'];
}

export async function startNatsCluster(opts: StartClusterOptions = {}): Promise<TestCluster> {
  const bin = findBin('nats-server', process.env.NATS_SERVER_BIN);
  if (!bin) throw new Error('nats-server not found: install it (apt-get install -y nats-server)');
  const count = opts.nodes ?? 3;
  const dir = mkdtempSync(path.join(tmpdir(), 'hearth-nats-'));
  const cleanupDir = trackTempDir(dir);
  const ports: Array<{ client: number; mqtt: number; route: number }> = [];
  for (let i = 0; i < count; i++) ports.push({ client: await freePort(), mqtt: await freePort(), route: await freePort() });
  const routes = ports.map((p) => `nats-route://${HOST}:${p.route}`).join(', ');
  const files = ports.map((p, i) => {
    const file = path.join(dir, `n${i}.conf`);
    const store = path.join(dir, `js${i}`);
    mkdirSync(store);
    const lines = [
      `server_name: n${i}`,
      `listen: ${HOST}:${p.client}`,
      `jetstream { store_dir: ${JSON.stringify(store)} }`,
      `mqtt { listen: ${HOST}:${p.mqtt} }`,
      `cluster { name: hearth, listen: ${HOST}:${p.route}, routes: [${routes}] }`,
      ...(opts.users?.length ? authorization(opts.users) : []),
    ];
    writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  });
  const procs: Array<BrokerProcess | undefined> = files.map(() => undefined);
  const probeAuth = opts.users?.[0] ? { username: opts.users[0].username, password: opts.users[0].password } : {};
  const spawnNode = (i: number) => {
    procs[i] = spawnBroker(`nats-server n${i}`, bin, ['-c', files[i]]);
    return procs[i]!;
  };
  const logs = () => procs.map((p, i) => `--- n${i}\n${p?.log().slice(-3000) ?? '(not started)'}`).join('\n');
  let stopped = false;
  const stopAll = async () => {
    await Promise.all(procs.map((p) => p?.stop()));
  };
  const startAll = async () => {
    const started = files.map((_, i) => spawnNode(i));
    await waitAccepting(
      `nats-server cluster (${count} nodes)`,
      started,
      ports.map((p) => p.mqtt),
      START_TIMEOUT_MS,
      probeAuth,
    );
  };
  try {
    await startAll();
  } catch (err) {
    await stopAll();
    cleanupDir();
    throw err;
  }
  const nodes: ClusterNode[] = ports.map((p, i) => ({
    name: `n${i}`,
    mqttPort: p.mqtt,
    url: `mqtt://${HOST}:${p.mqtt}`,
    alive: () => procs[i]?.alive() ?? false,
  }));
  return {
    kind: 'nats',
    url: nodes[0].url,
    port: nodes[0].mqttPort,
    nodes,
    nodeList: (first = 0) => [...nodes.slice(first), ...nodes.slice(0, first)].map((n) => n.url).join(','),
    nodeIndexOfPort: (port) => nodes.findIndex((n) => n.mqttPort === port),
    logs,
    async killNode(i) {
      await procs[i]?.kill();
    },
    async startNode(i) {
      if (procs[i]?.alive()) return;
      await waitAccepting(`nats-server n${i}`, [spawnNode(i)], [ports[i].mqtt], START_TIMEOUT_MS, probeAuth);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
      cleanupDir();
    },
    async restart() {
      if (stopped) throw new Error('nats cluster already stopped');
      await stopAll();
      await startAll();
    },
  };
}
