// Running the real `hearth` command (the built dist/, as `npm start` does).
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signalGroup, spawnInGroup } from './processes.js';

// Daemons announce themselves in a runtime directory (src/daemon/running.ts): each test file gets its own, so a
// command run without --db finds this file's daemon, never another file's or the user's.
// Under the run's own directory when there is one (test/run.mjs removes it), else a temporary one.
process.env.HEARTH_RUNTIME_DIR = process.env.HEARTH_TEST_GROUPS_DIR
  ? join(process.env.HEARTH_TEST_GROUPS_DIR, `runtime-${process.pid}`)
  : mkdtempSync(join(tmpdir(), 'hearth-runtime-'));

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const HEARTH = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface Spawned {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout contains the text. */
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function spawnHearth(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; stdin?: string } = {}): Spawned {
  const child = spawnInGroup(process.execPath, [HEARTH, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, HEARTH_LOG_PRETTY: 'false', ...options.env },
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput(text, timeoutMs = 60_000) {
      const has = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
      return new Promise((resolve, reject) => {
        if (has()) return resolve();
        const timer = setTimeout(() => reject(new Error(`no ${text} on stdout within ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`)), timeoutMs);
        const check = () => {
          if (has()) {
            clearTimeout(timer);
            child.stdout!.off('data', check);
            resolve();
          }
        };
        child.stdout!.on('data', check);
        void exited.then((code) => {
          if (!has()) {
            clearTimeout(timer);
            reject(new Error(`hearth exited (${code}) before printing ${text}\nstdout: ${out}\nstderr: ${err}`));
          }
        });
      });
    },
    async stop(signal = 'SIGTERM') {
      signalGroup(child, signal);
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 5000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Run a command to completion (with `stdin` as its input, else none). */
export async function runHearth(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; stdin?: string } = {}) {
  const p = spawnHearth(args, options);
  const timer = setTimeout(() => signalGroup(p.child, 'SIGKILL'), options.timeoutMs ?? 120_000);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** `hearth start` on this database and broker port with its HTTP API on a free port: the daemon a Node-RED bridge connects to. */
export async function startHearthDaemon(dbPath: string, brokerPort: number, cwd: string): Promise<{ hearth: Spawned; httpUrl: string }> {
  const hearth = spawnHearth(['start', '--broker-port', String(brokerPort), '--db', dbPath, '--set', 'http.port=0', '--log-level', 'warn'], { cwd });
  await hearth.waitForOutput('Press Ctrl+C to stop.', 30_000);
  return { hearth, httpUrl: /http\s+(http:\/\/\S+)/.exec(hearth.stdout())![1].replace(/\/$/, '') };
}
