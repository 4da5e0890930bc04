// What the clustered-broker helpers share: spawn a broker process in a process group of its own (killed with the
// test file, see processes.ts), keep the tail of what it prints for failure messages, and wait until an MQTT
// client is really accepted (a listening port is not enough: NATS refuses MQTT until JetStream is ready,
// RabbitMQ until its MQTT plugin has started).
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import mqtt from 'mqtt';
import { HOST, sleep, terminate } from './mosquitto-process.js';
import { signalGroup, spawnInGroup } from './processes.js';

const MAX_LOG_CHARS = 64 * 1024;

export interface BrokerProcess {
  proc: ChildProcess;
  /** What it printed so far (the last 64 KiB). */
  log(): string;
  /** Whether it is still running. */
  alive(): boolean;
  /** SIGTERM to its group, SIGKILL after a grace period; resolves once it is gone. */
  stop(): Promise<void>;
  /** SIGKILL to its group at once: a node's death. */
  kill(): Promise<void>;
}

export function spawnBroker(name: string, bin: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): BrokerProcess {
  let log = '';
  let spawnError: Error | undefined;
  const proc = spawnInGroup(bin, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const append = (chunk: Buffer): void => {
    log += chunk.toString('utf8');
    if (log.length > MAX_LOG_CHARS) log = log.slice(-MAX_LOG_CHARS);
  };
  proc.stdout?.on('data', append);
  proc.stderr?.on('data', append);
  proc.once('error', (err) => {
    spawnError = err;
    log += `\n${name} failed to spawn (${bin}): ${err.message}\n`;
  });
  // A forgotten stop() must not keep the test process alive; the group is still killed at exit.
  proc.unref();
  (proc.stdout as net.Socket | null)?.unref?.();
  (proc.stderr as net.Socket | null)?.unref?.();
  const alive = () => !spawnError && proc.exitCode === null && proc.signalCode === null;
  return {
    proc,
    log: () => log,
    alive,
    async stop() {
      if (!alive()) return;
      // Waiting for its exit must keep the event loop alive.
      proc.ref();
      await terminate(proc);
      signalGroup(proc, 'SIGKILL');
    },
    async kill() {
      if (!alive()) return;
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.ref();
      signalGroup(proc, 'SIGKILL');
      await exited;
    },
  };
}

/** One MQTT 3.1.1 CONNECT; resolves true once the broker accepted it (CONNACK 0). */
export async function mqttAccepts(port: number, auth: { username?: string; password?: string } = {}, timeoutMs = 3000): Promise<boolean> {
  const client = mqtt.connect(`mqtt://${HOST}:${port}`, {
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: timeoutMs,
    clientId: `probe-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
    ...auth,
  });
  const ok = await new Promise<boolean>((resolve) => {
    client.once('connect', () => resolve(true));
    client.once('error', () => resolve(false));
    client.once('close', () => resolve(false));
  });
  await client.endAsync(true).catch(() => undefined);
  return ok;
}

/** Wait until every process runs and an MQTT client is accepted on every port, or throw naming why not. */
export async function waitAccepting(
  what: string,
  procs: BrokerProcess[],
  ports: number[],
  timeoutMs: number,
  auth: { username?: string; password?: string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(ports);
  for (;;) {
    const dead = procs.find((p) => !p.alive());
    if (dead) throw new Error(`${what} exited during startup (code ${dead.proc.exitCode}, signal ${dead.proc.signalCode}):\n${dead.log().slice(-4000)}`);
    for (const port of [...pending]) if (await mqttAccepts(port, auth)) pending.delete(port);
    if (!pending.size) return;
    if (Date.now() >= deadline) {
      throw new Error(
        `${what} did not accept MQTT on ${HOST}:${[...pending].join(', ')} within ${timeoutMs} ms:\n${procs.map((p) => p.log().slice(-2000)).join('\n---\n')}`,
      );
    }
    await sleep(200);
  }
}

/** Below Linux's ephemeral range (32768-60999): no outgoing connection is given one of these as its own port. */
const CLUSTER_PORTS = { from: 10_000, to: 20_000 };

/**
 * A free loopback port for a broker node, outside the ephemeral range: a killed node is started again on the same
 * ports, and in the ephemeral range a test's outgoing connection could have taken one meanwhile. Free when picked
 * (bound and released); a start that still finds one taken is retried on fresh ports (withFreshPorts).
 */
export async function clusterPort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = CLUSTER_PORTS.from + Math.floor(Math.random() * (CLUSTER_PORTS.to - CLUSTER_PORTS.from));
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, HOST, () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port between ${CLUSTER_PORTS.from} and ${CLUSTER_PORTS.to} on ${HOST} after 50 tries`);
}

/** How many times a start is tried with fresh ports when one of them was taken meanwhile. */
const PORT_ATTEMPTS = 5;

/** A start that failed because a port it was given was taken between picking it and binding it. */
export function isPortTaken(err: unknown): boolean {
  return /address already in use|eaddrinuse/i.test(String((err as Error)?.message ?? err));
}

/**
 * Run `start` (which picks its own ports) again with fresh ports when a port was taken between picking it and
 * the broker binding it (another test, or an outgoing connection's ephemeral port, got there first): bounded,
 * any other failure is thrown at once.
 */
export async function withFreshPorts<T>(what: string, start: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(attempt);
    } catch (err) {
      if (!isPortTaken(err) || attempt >= PORT_ATTEMPTS) {
        if (isPortTaken(err)) (err as Error).message = `${what}: a port was taken on each of ${attempt} tries:\n${(err as Error).message}`;
        throw err;
      }
    }
  }
}
