// A throwaway RabbitMQ node with its MQTT plugin for tests, run unprivileged-style from a private temp dir:
// its own node name, cookie (HOME), mnesia and log folders, config and enabled-plugins file, on free loopback
// ports. The Debian wrapper in /usr/sbin would switch to the `rabbitmq` user and its system folders, so the
// script under /usr/lib/rabbitmq/bin is run directly. Erlang's port mapper (epmd) is started by us, in the
// foreground on a port of its own, so that no `epmd -daemon` outlives the test; the node runs in a process
// group of its own (processes.ts). Users and topic permissions (the ACL) are loaded from a definitions file
// at boot, so no rabbitmqctl round trip is needed.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrokerProcess, clusterPort, spawnBroker, waitAccepting, withFreshPorts } from './cluster-process.js';
import { findBin, HOST, sleep, trackTempDir, tryConnect } from './mosquitto-process.js';
import type { BrokerUser, ClusterNode, TestCluster } from './nats-cluster.js';

// ~8 s on an idle 2-core machine, ~17 s on a busy one.
const START_TIMEOUT_MS = 90_000;
/** A killed node of a cluster takes 60-120 s to accept MQTT again on 2 cores (more on a busy machine). */
const RESTART_TIMEOUT_MS = 240_000;
const RABBIT_SCRIPT = '/usr/lib/rabbitmq/bin/rabbitmq-server';
const RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl';
/** One rabbitmqctl command (joining a node takes ~3 s; more on a busy machine). */
const CTL_TIMEOUT_MS = 120_000;

export interface StartRabbitOptions {
  /** With users, anonymous MQTT clients are refused. */
  users?: BrokerUser[];
  /** Nodes of the cluster (default 1): node 0 starts first, each other joins it. */
  nodes?: number;
}

/** An MQTT topic filter as a regular expression over RabbitMQ's routing keys (levels joined by dots). */
export function rabbitTopicRegex(filters: string[]): string {
  const one = (filter: string) =>
    filter
      .split('/')
      .map((level) => (level === '+' ? '[^.]*' : level === '#' ? '.*' : level.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('\\.');
  return filters.length ? `^(${filters.map(one).join('|')})$` : '^$';
}

/** rabbit_password_hashing_sha256: base64(salt ++ sha256(salt ++ password)). */
function passwordHash(password: string): string {
  const salt = randomBytes(4);
  return Buffer.concat([
    salt,
    createHash('sha256')
      .update(Buffer.concat([salt, Buffer.from(password, 'utf8')]))
      .digest(),
  ]).toString('base64');
}

function definitions(users: BrokerUser[]): unknown {
  return {
    vhosts: [{ name: '/' }],
    users: users.map((u) => ({ name: u.username, password_hash: passwordHash(u.password), hashing_algorithm: 'rabbit_password_hashing_sha256', tags: [] })),
    // The MQTT plugin declares a queue per client and binds it to amq.topic: resource permissions stay open,
    // the ACL is in the topic permissions (checked on every publish and subscribe).
    permissions: users.map((u) => ({ user: u.username, vhost: '/', configure: '.*', write: '.*', read: '.*' })),
    topic_permissions: users.map((u) => ({
      user: u.username,
      vhost: '/',
      exchange: 'amq.topic',
      write: rabbitTopicRegex(u.publish),
      read: rabbitTopicRegex(u.subscribe),
    })),
  };
}

/** A RabbitMQ test broker, with rabbitmqctl against one of its nodes (what an operator's command does to it). */
export interface RabbitCluster extends TestCluster {
  /** rabbitmqctl against node `node` (default 0), bounded; resolves with what it printed, throws with it. */
  rabbitmqctl(args: string[], node?: number): Promise<string>;
}

function findErlangEpmd(): string | undefined {
  return findBin('epmd');
}

export async function startRabbitMq(opts: StartRabbitOptions = {}): Promise<RabbitCluster> {
  if (!existsSync(RABBIT_SCRIPT) && !findBin('rabbitmq-server')) {
    throw new Error('rabbitmq-server not found: install it (apt-get install -y rabbitmq-server)');
  }
  const script = existsSync(RABBIT_SCRIPT) ? RABBIT_SCRIPT : findBin('rabbitmq-server')!;
  const ctl = existsSync(RABBITMQCTL) ? RABBITMQCTL : findBin('rabbitmqctl');
  const epmdBin = findErlangEpmd();
  if (!epmdBin) throw new Error('epmd (Erlang) not found: install rabbitmq-server (apt-get install -y rabbitmq-server)');
  const count = opts.nodes ?? 1;
  if (count > 1 && !ctl) throw new Error('rabbitmqctl not found: install rabbitmq-server (apt-get install -y rabbitmq-server)');

  const dir = mkdtempSync(path.join(tmpdir(), 'hearth-rabbitmq-'));
  const cleanupDir = trackTempDir(dir);
  // One cookie for every node (they must share it to form a cluster), each node's HOME holding a copy.
  const cookie = randomBytes(16).toString('hex');
  writeFileSync(path.join(dir, 'enabled_plugins'), '[rabbitmq_mqtt].\n');
  let definitionsFile: string | undefined;
  if (opts.users?.length) {
    definitionsFile = path.join(dir, 'definitions.json');
    writeFileSync(definitionsFile, JSON.stringify(definitions(opts.users)));
  }
  const tag = `${process.pid}x${randomBytes(3).toString('hex')}`;
  interface NodeSetup {
    name: string;
    mqttPort: number;
    env: NodeJS.ProcessEnv;
  }
  let epmdPort = 0;
  let setups: NodeSetup[] = [];
  /** Fresh ports, and each node's folders, config and environment naming them (each try of the first start). */
  const configure = async (attempt: number) => {
    epmdPort = await clusterPort();
    setups = [];
    for (let i = 0; i < count; i++) {
      const [amqpPort, distPort, mqttPort, ctlPort] = [await clusterPort(), await clusterPort(), await clusterPort(), await clusterPort()];
      const nodeDir = path.join(dir, `n${i}-${attempt}`);
      const home = path.join(nodeDir, 'home');
      for (const d of ['home', 'mnesia', 'log']) mkdirSync(path.join(nodeDir, d), { recursive: true });
      writeFileSync(path.join(home, '.erlang.cookie'), cookie, { mode: 0o400 });
      const lines = [
        `listeners.tcp.default = ${HOST}:${amqpPort}`,
        `mqtt.listeners.tcp.default = ${HOST}:${mqttPort}`,
        'loopback_users = none',
        'log.console = true',
        'log.console.level = info',
      ];
      if (definitionsFile) lines.push(`load_definitions = ${definitionsFile}`, 'mqtt.allow_anonymous = false');
      else lines.push('mqtt.allow_anonymous = true', 'mqtt.default_user = guest', 'mqtt.default_pass = guest');
      writeFileSync(path.join(nodeDir, 'rabbitmq.conf'), `${lines.join('\n')}\n`);
      const name = `hearth${tag}n${i}@localhost`;
      setups.push({
        name,
        mqttPort,
        env: {
          ...process.env,
          HOME: home,
          ERL_EPMD_PORT: String(epmdPort),
          RABBITMQ_NODENAME: name,
          RABBITMQ_NODE_IP_ADDRESS: HOST,
          RABBITMQ_NODE_PORT: String(amqpPort),
          RABBITMQ_DIST_PORT: String(distPort),
          // rabbitmqctl's own distribution port: one we picked, not dist+10000 (which may be taken).
          RABBITMQ_CTL_DIST_PORT_MIN: String(ctlPort),
          RABBITMQ_CTL_DIST_PORT_MAX: String(ctlPort),
          RABBITMQ_MNESIA_BASE: path.join(nodeDir, 'mnesia'),
          RABBITMQ_LOG_BASE: path.join(nodeDir, 'log'),
          RABBITMQ_CONFIG_FILE: path.join(nodeDir, 'rabbitmq'),
          RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
          RABBITMQ_FEATURE_FLAGS_FILE: path.join(nodeDir, 'feature_flags'),
          RABBITMQ_PID_FILE: path.join(nodeDir, 'rabbitmq.pid'),
          RABBITMQ_LOGS: '-',
        },
      });
    }
  };
  const probeAuth = opts.users?.[0] ? { username: opts.users[0].username, password: opts.users[0].password } : {};

  let epmd: BrokerProcess | undefined;
  const procs: Array<BrokerProcess | undefined> = Array.from({ length: count }, () => undefined);
  let stopped = false;
  const startEpmd = async () => {
    epmd = spawnBroker('epmd', epmdBin, ['-port', String(epmdPort)], { cwd: dir, env: setups[0]!.env });
    const deadline = Date.now() + 5000;
    while (!(await tryConnect(epmdPort))) {
      if (!epmd.alive() || Date.now() > deadline) throw new Error(`epmd did not listen on ${HOST}:${epmdPort}:\n${epmd.log()}`);
      await sleep(50);
    }
  };
  const startNode = async (i: number, timeoutMs = START_TIMEOUT_MS) => {
    const node = spawnBroker(`rabbitmq-server ${setups[i]!.name}`, script, [], { cwd: dir, env: setups[i]!.env });
    procs[i] = node;
    await waitAccepting(`rabbitmq-server ${setups[i]!.name}`, [node], [setups[i]!.mqttPort], timeoutMs, probeAuth);
  };
  /** rabbitmqctl against node i, bounded; resolves with what it printed, throws with it. */
  const rabbitmqctl = (i: number, args: string[]) =>
    new Promise<string>((resolve, reject) => {
      if (!ctl) throw new Error('rabbitmqctl not found: install rabbitmq-server (apt-get install -y rabbitmq-server)');
      execFile(ctl, ['-n', setups[i]!.name, ...args], { env: setups[i]!.env, timeout: CTL_TIMEOUT_MS }, (err, stdout, stderr) =>
        err ? reject(new Error(`rabbitmqctl -n ${setups[i]!.name} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`)) : resolve(stdout),
      );
    });
  const stopAll = async () => {
    await Promise.all(procs.map((p) => p?.stop()));
    await epmd?.kill();
  };
  try {
    await withFreshPorts('rabbitmq-server', async (attempt) => {
      await configure(attempt);
      try {
        await startEpmd();
        await startNode(0);
        // Each further node starts on its own, then joins node 0 (its MQTT listener is up again after start_app).
        for (let i = 1; i < count; i++) {
          await startNode(i);
          await rabbitmqctl(i, ['stop_app']);
          await rabbitmqctl(i, ['join_cluster', setups[0]!.name]);
          await rabbitmqctl(i, ['start_app']);
          await waitAccepting(`rabbitmq-server ${setups[i]!.name} (joined)`, [procs[i]!], [setups[i]!.mqttPort], START_TIMEOUT_MS, probeAuth);
        }
      } catch (err) {
        await Promise.all(procs.map((p) => p?.kill()));
        await epmd?.kill();
        throw err;
      }
    });
  } catch (err) {
    cleanupDir();
    throw err;
  }
  const nodes: ClusterNode[] = setups.map((n, i) => ({
    name: n.name,
    mqttPort: n.mqttPort,
    url: `mqtt://${HOST}:${n.mqttPort}`,
    alive: () => procs[i]?.alive() ?? false,
  }));
  return {
    kind: 'rabbitmq',
    url: nodes[0]!.url,
    port: nodes[0]!.mqttPort,
    nodes,
    nodeList: (first = 0) => [...nodes.slice(first), ...nodes.slice(0, first)].map((n) => n.url).join(','),
    nodeIndexOfPort: (port) => nodes.findIndex((n) => n.mqttPort === port),
    rabbitmqctl: (args, node = 0) => rabbitmqctl(node, args),
    logs: () => procs.map((p, i) => `--- ${setups[i]!.name}\n${p?.log().slice(-4000) ?? '(not started)'}`).join('\n'),
    async heldForLater() {
      // Any live node lists every queue of the cluster whose home node is up.
      const live = procs.findIndex((p) => p?.alive());
      if (live < 0) return 0;
      const out = await rabbitmqctl(live, ['list_queues', '--quiet', '--no-table-headers', 'name', 'messages']);
      return out
        .split('\n')
        .map((line) => Number(line.trim().split(/\s+/)[1] ?? 0))
        .reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
    },
    async killNode(i = 0) {
      await procs[i]?.kill();
    },
    async startNode(i = 0) {
      if (!procs[i]?.alive()) await startNode(i, RESTART_TIMEOUT_MS);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
      cleanupDir();
    },
    async restart() {
      if (stopped) throw new Error('rabbitmq already stopped');
      // The last node to stop is the first to start: node 0 last down, first up.
      for (let i = count - 1; i >= 0; i--) await procs[i]?.stop();
      for (let i = 0; i < count; i++) await startNode(i);
    },
  };
}
