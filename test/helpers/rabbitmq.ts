// A throwaway RabbitMQ node with its MQTT plugin for tests, run unprivileged-style from a private temp dir:
// its own node name, cookie (HOME), mnesia and log folders, config and enabled-plugins file, on free loopback
// ports. The Debian wrapper in /usr/sbin would switch to the `rabbitmq` user and its system folders, so the
// script under /usr/lib/rabbitmq/bin is run directly. Erlang's port mapper (epmd) is started by us, in the
// foreground on a port of its own, so that no `epmd -daemon` outlives the test; the node runs in a process
// group of its own (processes.ts). Users and topic permissions (the ACL) are loaded from a definitions file
// at boot, so no rabbitmqctl round trip is needed.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './brokers.js';
import { type BrokerProcess, spawnBroker, waitAccepting } from './cluster-process.js';
import { findBin, HOST, sleep, trackTempDir, tryConnect } from './mosquitto-process.js';
import type { BrokerUser, TestCluster } from './nats-cluster.js';

// ~8 s on an idle 2-core machine, ~17 s on a busy one.
const START_TIMEOUT_MS = 90_000;
const RABBIT_SCRIPT = '/usr/lib/rabbitmq/bin/rabbitmq-server';

export interface StartRabbitOptions {
  /** With users, anonymous MQTT clients are refused. */
  users?: BrokerUser[];
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

function findErlangEpmd(): string | undefined {
  return findBin('epmd');
}

export async function startRabbitMq(opts: StartRabbitOptions = {}): Promise<TestCluster> {
  if (!existsSync(RABBIT_SCRIPT) && !findBin('rabbitmq-server')) {
    throw new Error('rabbitmq-server not found: install it (apt-get install -y rabbitmq-server)');
  }
  const script = existsSync(RABBIT_SCRIPT) ? RABBIT_SCRIPT : findBin('rabbitmq-server')!;
  const epmdBin = findErlangEpmd();
  if (!epmdBin) throw new Error('epmd (Erlang) not found: install rabbitmq-server (apt-get install -y rabbitmq-server)');

  const dir = mkdtempSync(path.join(tmpdir(), 'hearth-rabbitmq-'));
  const cleanupDir = trackTempDir(dir);
  const home = path.join(dir, 'home');
  for (const d of ['home', 'mnesia', 'log']) mkdirSync(path.join(dir, d));
  writeFileSync(path.join(home, '.erlang.cookie'), randomBytes(16).toString('hex'), { mode: 0o400 });
  writeFileSync(path.join(dir, 'enabled_plugins'), '[rabbitmq_mqtt].\n');
  const [epmdPort, amqpPort, distPort, mqttPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const lines = [
    `listeners.tcp.default = ${HOST}:${amqpPort}`,
    `mqtt.listeners.tcp.default = ${HOST}:${mqttPort}`,
    'loopback_users = none',
    'log.console = true',
    'log.console.level = info',
  ];
  if (opts.users?.length) {
    const file = path.join(dir, 'definitions.json');
    writeFileSync(file, JSON.stringify(definitions(opts.users)));
    lines.push(`load_definitions = ${file}`, 'mqtt.allow_anonymous = false');
  } else {
    lines.push('mqtt.allow_anonymous = true', 'mqtt.default_user = guest', 'mqtt.default_pass = guest');
  }
  writeFileSync(path.join(dir, 'rabbitmq.conf'), `${lines.join('\n')}\n`);
  const nodeName = `hearth${process.pid}x${randomBytes(3).toString('hex')}@localhost`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    ERL_EPMD_PORT: String(epmdPort),
    RABBITMQ_NODENAME: nodeName,
    RABBITMQ_NODE_IP_ADDRESS: HOST,
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_FEATURE_FLAGS_FILE: path.join(dir, 'feature_flags'),
    RABBITMQ_PID_FILE: path.join(dir, 'rabbitmq.pid'),
    RABBITMQ_LOGS: '-',
  };
  const probeAuth = opts.users?.[0] ? { username: opts.users[0].username, password: opts.users[0].password } : {};

  let epmd: BrokerProcess | undefined;
  let node: BrokerProcess | undefined;
  let stopped = false;
  const startEpmd = async () => {
    epmd = spawnBroker('epmd', epmdBin, ['-port', String(epmdPort)], { cwd: dir, env });
    const deadline = Date.now() + 5000;
    while (!(await tryConnect(epmdPort))) {
      if (!epmd.alive() || Date.now() > deadline) throw new Error(`epmd did not listen on ${HOST}:${epmdPort}:\n${epmd.log()}`);
      await sleep(50);
    }
  };
  const startNode = async () => {
    node = spawnBroker('rabbitmq-server', script, [], { cwd: dir, env });
    await waitAccepting(`rabbitmq-server ${nodeName}`, [node], [mqttPort], START_TIMEOUT_MS, probeAuth);
  };
  try {
    await startEpmd();
    await startNode();
  } catch (err) {
    await node?.kill();
    await epmd?.kill();
    cleanupDir();
    throw err;
  }
  const url = `mqtt://${HOST}:${mqttPort}`;
  return {
    kind: 'rabbitmq',
    url,
    port: mqttPort,
    nodes: [{ name: nodeName, mqttPort, url, alive: () => node?.alive() ?? false }],
    nodeList: () => url,
    nodeIndexOfPort: (port) => (port === mqttPort ? 0 : -1),
    logs: () => node?.log().slice(-4000) ?? '',
    async killNode() {
      await node?.kill();
    },
    async startNode() {
      if (!node?.alive()) await startNode();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await node?.stop();
      await epmd?.kill();
      cleanupDir();
    },
    async restart() {
      if (stopped) throw new Error('rabbitmq already stopped');
      await node?.stop();
      await startNode();
    },
  };
}
