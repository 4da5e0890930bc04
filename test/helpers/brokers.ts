// Test helpers: throwaway MQTT brokers (in-process aedes, or a spawned
// mosquitto) bound to 127.0.0.1 on a free port, with stop() and restart().
//
// restart() keeps retained messages for both kinds, like a persistent broker:
// - mosquitto runs with `persistence true` in a private temp dir; it writes its
//   database on a clean (SIGTERM) shutdown and reloads it on the next start.
// - aedes keeps the same broker instance (and its in-memory persistence) and
//   only closes/re-opens the TCP listener, dropping every client socket.

import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Aedes } from 'aedes';

export type BrokerKind = 'aedes' | 'mosquitto';

export interface TestBroker {
  url: string;
  port: number;
  kind: BrokerKind;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

export interface StartBrokerOptions {
  port?: number;
}

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 5_000;
const STOP_GRACE_MS = 3_000;
const MAX_LOG_CHARS = 64 * 1024;

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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One TCP connect attempt; resolves true if something accepted it. */
function tryConnect(port: number, timeoutMs = 250): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: HOST, port });
    const done = (ok: boolean): void => {
      sock.removeAllListeners();
      sock.on('error', () => {});
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

// ---------------------------------------------------------------------------
// Process-exit safety net for spawned mosquitto children
// ---------------------------------------------------------------------------

const liveChildren = new Set<ChildProcess>();
const liveTempDirs = new Set<string>();
let exitHooksInstalled = false;

function killAllSync(): void {
  for (const child of liveChildren) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  liveChildren.clear();
  for (const dir of liveTempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
  liveTempDirs.clear();
}

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  // 'exit' covers normal exit, process.exit() and uncaught exceptions.
  process.on('exit', killAllSync);
  // Signals (e.g. the node:test runner killing a timed-out file with SIGTERM)
  // do not emit 'exit'. Clean up, then re-raise so the default behaviour (die
  // by that signal) still happens unless somebody else handles it.
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAllSync();
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}

// ---------------------------------------------------------------------------
// mosquitto
// ---------------------------------------------------------------------------

function findMosquitto(): string | undefined {
  const fromEnv = process.env.MOSQUITTO_BIN;
  const dirs = [
    ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean),
    // Debian installs it in sbin, which is often not on a non-root PATH.
    '/usr/sbin',
    '/usr/local/sbin',
    '/opt/homebrew/sbin',
  ];
  const candidates = [...(fromEnv ? [fromEnv] : []), ...dirs.map((d) => path.join(d, 'mosquitto'))];
  for (const file of candidates) {
    try {
      accessSync(file, fsConstants.X_OK);
      return file;
    } catch {
      // try next
    }
  }
  return undefined;
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = waitForExit(child);
  child.kill('SIGTERM');
  // This timer is ref'd on purpose: it keeps the event loop alive while we
  // wait for the (unref'd) child to exit.
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), STOP_GRACE_MS);
  });
  try {
    if ((await Promise.race([exited, timedOut])) === 'timeout') {
      child.kill('SIGKILL');
      await exited;
    }
  } finally {
    clearTimeout(timer);
  }
}

export async function startMosquitto(opts: StartBrokerOptions = {}): Promise<TestBroker> {
  const bin = findMosquitto();
  if (!bin) throw new Error('mosquitto not found: install it (apt-get install -y mosquitto)');

  const port = opts.port ?? (await freePort());
  const dir = mkdtempSync(path.join(tmpdir(), 'hearth-mosquitto-'));
  liveTempDirs.add(dir);
  installExitHooks();

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
  writeFileSync(confFile, lines.join('\n') + '\n');

  let child: ChildProcess | undefined;
  let stopped = false;
  let log = '';

  const spawnAndWait = async (): Promise<void> => {
    // Something else already answering on the port would fool the TCP probe.
    if (await tryConnect(port)) {
      throw new Error(`mosquitto: port ${HOST}:${port} is already in use`);
    }
    log = '';
    const proc = spawn(bin, ['-c', confFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    liveChildren.add(proc);
    const append = (chunk: Buffer): void => {
      log += chunk.toString('utf8');
      if (log.length > MAX_LOG_CHARS) log = log.slice(-MAX_LOG_CHARS);
    };
    proc.stdout?.on('data', append);
    proc.stderr?.on('data', append);
    let spawnError: Error | undefined;
    proc.once('error', (err) => {
      spawnError = err;
    });
    proc.once('exit', () => liveChildren.delete(proc));
    // A forgotten stop() must not keep the test process alive; the exit hook
    // still kills the child.
    proc.unref();
    (proc.stdout as net.Socket | null)?.unref?.();
    (proc.stderr as net.Socket | null)?.unref?.();

    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (spawnError) {
        throw new Error(`mosquitto failed to spawn (${bin}): ${spawnError.message}`);
      }
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(
          `mosquitto exited during startup (code ${proc.exitCode}, signal ${proc.signalCode}) on port ${port}:\n${log}`,
        );
      }
      // mosquitto logs "mosquitto version X running" once its listeners are
      // bound; requiring it as well as a TCP accept rules out talking to some
      // other process that grabbed the port.
      if (/mosquitto version \S+ running/.test(log) && (await tryConnect(port))) return;
      if (Date.now() >= deadline) {
        await terminate(proc);
        throw new Error(`mosquitto did not accept connections on ${HOST}:${port} within ${START_TIMEOUT_MS} ms:\n${log}`);
      }
      await sleep(50);
    }
  };

  const cleanupDir = (): void => {
    rmSync(dir, { recursive: true, force: true });
    liveTempDirs.delete(dir);
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

export const brokerKinds: Array<{ kind: BrokerKind; start: (opts?: StartBrokerOptions) => Promise<TestBroker> }> = [
  { kind: 'aedes', start: startAedes },
  { kind: 'mosquitto', start: startMosquitto },
];
