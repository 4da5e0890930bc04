// Running a mosquitto child for tests: find the binary, spawn it in the
// foreground, wait until it says it runs AND every port accepts (so another
// process that grabbed a port cannot fool us), stop it, and never leave one
// behind (a crashed test, SIGTERM from the runner) together with its temp dir.
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawnInGroup } from './processes.js';

export const HOST = '127.0.0.1';
const STOP_GRACE_MS = 3_000;
const MAX_LOG_CHARS = 64 * 1024;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One TCP connect attempt; resolves true if something accepted it. */
export function tryConnect(port: number, timeoutMs = 250): Promise<boolean> {
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

/** An executable by name on PATH or in the sbin folders Debian uses (often not on PATH). */
export function findBin(name: string, envOverride?: string): string | undefined {
  const dirs = [
    ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean),
    '/usr/sbin',
    '/usr/local/sbin',
    '/usr/bin',
    '/opt/homebrew/sbin',
    '/opt/homebrew/bin',
  ];
  const candidates = [...(envOverride ? [envOverride] : []), ...dirs.map((d) => path.join(d, name))];
  for (const file of candidates) {
    try {
      accessSync(file, fsConstants.X_OK);
      return file;
    } catch {
      // try the next one
    }
  }
  return undefined;
}

// ------------------------------------------------------------ exit safety net

const liveChildren = new Set<ChildProcess>();
const liveDirs = new Set<string>();
let hooked = false;

function killAllSync(): void {
  for (const child of liveChildren) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  liveChildren.clear();
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
  liveDirs.clear();
}

function installExitHooks(): void {
  if (hooked) return;
  hooked = true;
  // 'exit' covers normal exit, process.exit() and uncaught exceptions.
  process.on('exit', killAllSync);
  // Signals (the test runner killing a timed-out file) do not emit 'exit': clean up, then re-raise.
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAllSync();
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}

/** Remove this temp dir when the test process ends, whatever way; returns its remover. */
export function trackTempDir(dir: string): () => void {
  installExitHooks();
  liveDirs.add(dir);
  return () => {
    rmSync(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
  };
}

/** SIGTERM, then SIGKILL after a grace period; resolves once the child is gone. */
export async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  // Ref'd on purpose: it keeps the event loop alive while the (unref'd) child exits.
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

/** mosquitto exited while starting (a port taken between choosing and binding it, a bad config). */
export class MosquittoExited extends Error {}

export interface RunningMosquitto {
  proc: ChildProcess;
  /** What it printed so far (for failure messages). */
  log(): string;
}

/** Spawn `bin -c confFile` and wait until it runs and accepts on every port. */
export async function launchMosquitto(bin: string, confFile: string, ports: number[], timeoutMs: number): Promise<RunningMosquitto> {
  installExitHooks();
  let log = '';
  const proc = spawnInGroup(bin, ['-c', confFile], { stdio: ['ignore', 'pipe', 'pipe'] });
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
  // A forgotten stop() must not keep the test process alive; the exit hook still kills the child.
  proc.unref();
  (proc.stdout as net.Socket | null)?.unref?.();
  (proc.stderr as net.Socket | null)?.unref?.();

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (spawnError) throw new Error(`mosquitto failed to spawn (${bin}): ${spawnError.message}`);
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new MosquittoExited(`mosquitto exited during startup (code ${proc.exitCode}, signal ${proc.signalCode}) on ports ${ports.join(', ')}:\n${log}`);
    }
    // "mosquitto version X running" comes once its listeners are bound.
    if (/mosquitto version \S+ running/.test(log) && (await Promise.all(ports.map((p) => tryConnect(p)))).every(Boolean)) {
      return { proc, log: () => log };
    }
    if (Date.now() >= deadline) {
      await terminate(proc);
      throw new Error(`mosquitto did not accept connections on ${HOST}:${ports.join(', ')} within ${timeoutMs} ms:\n${log}`);
    }
    await sleep(50);
  }
}
