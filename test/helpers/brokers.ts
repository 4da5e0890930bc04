// Test helpers: throwaway MQTT brokers (in-process aedes, or a spawned
// mosquitto) bound to 127.0.0.1 on a free port, with stop() and restart().
//
// restart() keeps retained messages for both kinds, like a persistent broker:
// - mosquitto runs with `persistence true` in a private temp dir; it writes its
//   database on a clean (SIGTERM) shutdown and reloads it on the next start.
// - aedes keeps the same broker instance (and its in-memory persistence) and
//   only closes/re-opens the TCP listener, dropping every client socket.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Aedes } from 'aedes';
import { findBin, HOST, launchMosquitto, terminate, trackTempDir, tryConnect } from './mosquitto-process.js';

/** aedes and mosquitto here; the clustered brokers in nats-cluster.ts and rabbitmq.ts. */
export type BrokerKind = 'aedes' | 'mosquitto' | 'nats' | 'rabbitmq';

export interface TestBroker {
  url: string;
  port: number;
  kind: BrokerKind;
  /** The in-process broker (aedes only): a test sets its hooks (authorizeSubscribe, ...) to play a slow or refusing broker. */
  aedes?: Aedes;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

export interface StartBrokerOptions {
  port?: number;
  /** mosquitto only: more lines for mosquitto.conf (acl_file, password_file, ...). */
  config?: string[];
}

const START_TIMEOUT_MS = 5_000;

/** Bind 127.0.0.1:0, read the port the OS picked, close, return it. */
export async function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('freePort: could not read the bound address'));
        return;
      }
      const { port } = addr;
      srv.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

export async function startMosquitto(opts: StartBrokerOptions = {}): Promise<TestBroker> {
  const bin = findBin('mosquitto', process.env.MOSQUITTO_BIN);
  if (!bin) throw new Error('mosquitto not found: install it (apt-get install -y mosquitto)');

  const port = opts.port ?? (await freePort());
  const dir = mkdtempSync(path.join(tmpdir(), 'hearth-mosquitto-'));
  const cleanupDir = trackTempDir(dir);

  const confFile = path.join(dir, 'mosquitto.conf');
  const lines = [
    `listener ${port} ${HOST}`,
    'allow_anonymous true',
    // Persistence so restart() keeps retained messages: mosquitto saves the db
    // on SIGTERM and loads it on start. The trailing slash is required.
    'persistence true',
    `persistence_location ${dir}${path.sep}`,
    'persistence_file mosquitto.db',
    'autosave_interval 1',
    'log_dest stderr',
    'log_type error',
    'log_type warning',
    'log_type notice',
    'log_type information',
  ];
  // Started as root, mosquitto drops privileges to the `mosquitto` user and
  // then cannot write its db into our 0700 root-owned temp dir.
  if (typeof process.getuid === 'function' && process.getuid() === 0) lines.push('user root');
  lines.push(...(opts.config ?? []));
  writeFileSync(confFile, `${lines.join('\n')}\n`);

  let child: ChildProcess | undefined;
  let stopped = false;

  const spawnAndWait = async (): Promise<void> => {
    // Something else already answering on the port would fool the TCP probe.
    if (await tryConnect(port)) throw new Error(`mosquitto: port ${HOST}:${port} is already in use`);
    child = (await launchMosquitto(bin, confFile, [port], START_TIMEOUT_MS)).proc;
  };

  try {
    await spawnAndWait();
  } catch (err) {
    if (child) await terminate(child);
    cleanupDir();
    throw err;
  }

  return {
    url: `mqtt://${HOST}:${port}`,
    port,
    kind: 'mosquitto',
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (child) await terminate(child);
      cleanupDir();
    },
    async restart(): Promise<void> {
      if (stopped) throw new Error('mosquitto broker already stopped');
      if (child) await terminate(child);
      await spawnAndWait();
    },
  };
}

// ---------------------------------------------------------------------------
// aedes (in-process)
// ---------------------------------------------------------------------------

function listen(server: net.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(port, HOST, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** Stop accepting, destroy open sockets, resolve once the server is closed. */
function closeServer(server: net.Server, dropClients: () => void): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      dropClients();
      resolve();
      return;
    }
    // close() first so no new socket sneaks in, then destroy the open ones
    // (close() only calls back once every connection has ended).
    server.close(() => resolve());
    dropClients();
  });
}

export async function startAedes(opts: StartBrokerOptions = {}): Promise<TestBroker> {
  const broker = await Aedes.createBroker();
  const sockets = new Set<net.Socket>();
  let stopped = false;

  const makeServer = (): net.Server => {
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      broker.handle(socket);
    });
    return server;
  };

  const dropClients = (): void => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };

  let server = makeServer();
  let port: number;
  try {
    await listen(server, opts.port ?? 0);
    const addr = server.address();
    if (addr === null || typeof addr === 'string') throw new Error('aedes: could not read the bound address');
    port = addr.port;
  } catch (err) {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    throw err;
  }

  return {
    url: `mqtt://${HOST}:${port}`,
    port,
    kind: 'aedes',
    aedes: broker,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      await closeServer(server, dropClients);
      await new Promise<void>((resolve) => broker.close(() => resolve()));
    },
    async restart(): Promise<void> {
      if (stopped) throw new Error('aedes broker already stopped');
      // Same broker instance => retained messages (in-memory persistence)
      // survive; clients see their connection drop and must reconnect.
      await closeServer(server, dropClients);
      server = makeServer();
      await listen(server, port);
    },
  };
}

/**
 * The topics a client SUBSCRIBEs to at an in-process aedes broker from now on, in the order they come: each topic of
 * each SUBSCRIBE packet, a topic subscribed again counted again. What a test counts to see that a topic was
 * subscribed again, or that none was. `stop()` ends the count.
 */
export function subscribesAt(broker: TestBroker, clientId: string): { topics: string[]; stop(): void } {
  const aedes = broker.aedes;
  if (!aedes) throw new Error(`SUBSCRIBEs are counted at the in-process aedes, not at ${broker.kind}`);
  const topics: string[] = [];
  const onSubscribe = (subscriptions: Array<{ topic: string }>, client: { id: string } | null) => {
    if (client?.id === clientId) for (const s of subscriptions) topics.push(s.topic);
  };
  aedes.on('subscribe', onSubscribe);
  return { topics, stop: () => aedes.off('subscribe', onSubscribe) };
}

export const brokerKinds: Array<{ kind: BrokerKind; start: (opts?: StartBrokerOptions) => Promise<TestBroker> }> = [
  { kind: 'aedes', start: startAedes },
  { kind: 'mosquitto', start: startMosquitto },
];
