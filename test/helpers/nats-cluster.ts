// A throwaway NATS cluster for tests: three nats-server nodes on free loopback ports, routed to each other,
// each with JetStream (file store in a private temp dir) and an MQTT 3.1.1 listener. Each node runs in a process
// group of its own, killed with the test file. killNode(i) is a node's death (SIGKILL); startNode(i) brings it
// back on the same ports and store. Retained messages live in JetStream, replicated over the cluster.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestBroker } from './brokers.js';
import { type BrokerProcess, clusterPort, spawnBroker, waitAccepting, withFreshPorts } from './cluster-process.js';
import { findBin, HOST, trackTempDir } from './mosquitto-process.js';
import { waitFor } from './wait.js';

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
  /**
   * Messages the live nodes hold to deliver later (NATS: JetStream consumers' pending and unacknowledged messages;
   * RabbitMQ: messages in queues): 0 means nothing sent so far can still arrive.
   */
  heldForLater(): Promise<number>;
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
  let ports: Array<{ client: number; mqtt: number; route: number; monitor: number }> = [];
  let files: string[] = [];
  /** Fresh ports and the config files that name them (each try of the first start). */
  const configure = async (attempt: number) => {
    ports = [];
    for (let i = 0; i < count; i++)
      ports.push({ client: await clusterPort(), mqtt: await clusterPort(), route: await clusterPort(), monitor: await clusterPort() });
    const routes = ports.map((p) => `nats-route://${HOST}:${p.route}`).join(', ');
    files = ports.map((p, i) => {
      const file = path.join(dir, `n${i}.conf`);
      const store = path.join(dir, `js${i}-${attempt}`);
      mkdirSync(store, { recursive: true });
      const lines = [
        `server_name: n${i}`,
        `listen: ${HOST}:${p.client}`,
        // The monitoring endpoint: a test asks a node what JetStream still holds (jetStreamPending).
        `http: ${HOST}:${p.monitor}`,
        `jetstream { store_dir: ${JSON.stringify(store)} }`,
        `mqtt { listen: ${HOST}:${p.mqtt} }`,
        `cluster { name: hearth, listen: ${HOST}:${p.route}, routes: [${routes}] }`,
        ...(opts.users?.length ? authorization(opts.users) : []),
      ];
      writeFileSync(file, `${lines.join('\n')}\n`);
      return file;
    });
  };
  const procs: Array<BrokerProcess | undefined> = Array.from({ length: count }, () => undefined);
  const probeAuth = opts.users?.[0] ? { username: opts.users[0].username, password: opts.users[0].password } : {};
  const spawnNode = (i: number) => {
    procs[i] = spawnBroker(`nats-server n${i}`, bin, ['-c', files[i]!]);
    return procs[i]!;
  };
  const logs = () => procs.map((p, i) => `--- n${i}\n${p?.log().slice(-3000) ?? '(not started)'}`).join('\n');
  let stopped = false;
  const stopAll = async () => {
    await Promise.all(procs.map((p) => p?.stop()));
  };
  const startAll = async () => {
    const started = files.map((_, i) => spawnNode(i));
    try {
      await waitAccepting(
        `nats-server cluster (${count} nodes)`,
        started,
        ports.map((p) => p.mqtt),
        START_TIMEOUT_MS,
        probeAuth,
      );
    } catch (err) {
      // One node that could not bind leaves the others running on their ports: stop them before a retry.
      await stopAll();
      throw err;
    }
    await retainedLoaded();
  };
  /**
   * A (re)started node lets MQTT clients in once it has loaded the retained messages from JetStream, or after 4 s
   * without them ("Timing out waiting to load"), and then serves what it has loaded so far: an older retained
   * message, or none. Wait, bounded, until every live node's retained-messages consumer has delivered everything.
   */
  const retainedLoaded = () =>
    waitFor(
      'every node of the nats-server cluster to load its retained messages',
      async () => {
        const live = ports.filter((_, i) => procs[i]?.alive());
        let bound = 0;
        for (const p of live) {
          const state = await retainedConsumers(p.monitor, `n${ports.indexOf(p)}`).catch(() => undefined);
          if (!state || state.pending) return false;
          bound += state.bound;
        }
        return bound >= live.length;
      },
      START_TIMEOUT_MS / 4,
    ).catch((err: Error) => {
      err.message += `\n${logs()}`;
      throw err;
    });
  try {
    await withFreshPorts('nats-server cluster', async (attempt) => {
      await configure(attempt);
      await startAll();
    });
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
    async heldForLater() {
      let held = 0;
      for (const [i, p] of ports.entries()) {
        if (!procs[i]?.alive()) continue;
        held += await jetStreamHeld(p.monitor, `n${i}`);
      }
      return held;
    },
    async killNode(i) {
      await procs[i]?.kill();
    },
    async startNode(i) {
      if (procs[i]?.alive()) return;
      await waitAccepting(`nats-server n${i}`, [spawnNode(i)], [ports[i].mqtt], START_TIMEOUT_MS, probeAuth);
      await retainedLoaded();
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

interface JszConsumer {
  name?: string;
  num_ack_pending?: number;
  num_pending?: number;
  cluster?: { leader?: string };
  /** A push consumer whose delivery subject has a subscriber (its node is up and listening). */
  push_bound?: boolean;
}
interface Jsz {
  account_details?: Array<{ stream_detail?: Array<{ name: string; consumer_detail?: JszConsumer[] }> }>;
}

/** NATS keeps QoS 1 MQTT messages in this stream, delivered to each QoS 1 subscription by a consumer of its own. */
const MESSAGES_STREAM = '$MQTT_msgs';

/**
 * What the consumers of MQTT subscriptions node `name` leads still have to deliver to a client (its monitoring
 * endpoint, /jsz, which does not say the node's own name: nats-server 2.9 has no server_name there). The retained
 * messages' and sessions' streams deliver to the nodes themselves, never to a client: not counted.
 */
async function jetStreamHeld(monitorPort: number, name: string): Promise<number> {
  const res = await fetch(`http://${HOST}:${monitorPort}/jsz?accounts=true&streams=true&consumers=true`, { signal: AbortSignal.timeout(5000) });
  const jsz = (await res.json()) as Jsz;
  let held = 0;
  for (const account of jsz.account_details ?? []) {
    for (const stream of account.stream_detail ?? []) {
      if (stream.name !== MESSAGES_STREAM) continue;
      for (const c of stream.consumer_detail ?? []) {
        // Each replica reports the consumer; its leader's count is the one that is delivered.
        if (c.cluster?.leader && c.cluster.leader !== name) continue;
        held += (c.num_ack_pending ?? 0) + (c.num_pending ?? 0);
      }
    }
  }
  return held;
}

/** NATS keeps retained MQTT messages in this stream; each node reads them through a durable consumer of its own. */
const RETAINED_STREAM = '$MQTT_rmsgs';

/**
 * The retained-messages consumers one node leads: how many have their node listening, and how many messages those
 * have still to deliver (a node that has not read them all would serve an older retained message, or none).
 */
async function retainedConsumers(monitorPort: number, name: string): Promise<{ bound: number; pending: number }> {
  const res = await fetch(`http://${HOST}:${monitorPort}/jsz?accounts=true&streams=true&consumers=true`, { signal: AbortSignal.timeout(5000) });
  const jsz = (await res.json()) as Jsz;
  let bound = 0;
  let pending = 0;
  for (const account of jsz.account_details ?? []) {
    for (const stream of account.stream_detail ?? []) {
      if (stream.name !== RETAINED_STREAM) continue;
      for (const c of stream.consumer_detail ?? []) {
        // Each replica reports the consumer; its leader's view is current. A killed node's consumer is not bound.
        if (c.cluster?.leader && c.cluster.leader !== name) continue;
        if (!c.push_bound) continue;
        bound++;
        pending += c.num_pending ?? 0;
      }
    }
  }
  return { bound, pending };
}
