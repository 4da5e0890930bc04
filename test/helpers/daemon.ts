// Processes a daemon test starts: each `hearth` runs in its own process group
// (processes.ts), killed when the test ends, however it ends.
import type { ChildProcess } from 'node:child_process';
import { HEARTH, ROOT } from './cli.js';
import { signalGroup, spawnInGroup } from './processes.js';

const killGroup = (child: ChildProcess, signal: NodeJS.Signals) => signalGroup(child, signal);

export interface GroupProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** Resolves when stdout (or stderr) has the text; rejects when the process ends first or after timeoutMs. */
  waitFor(text: string | RegExp, where?: 'stdout' | 'stderr', timeoutMs?: number): Promise<void>;
  /** SIGTERM to the group, SIGKILL to the group if it lingers. */
  stop(): Promise<number | null>;
}

export function spawnGroup(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; stdin?: string | 'pipe'; nodeArgs?: string[]; script?: string } = {},
): GroupProcess {
  // `script`: another copy of the CLI (an installed package's) instead of this checkout's dist/.
  const child = spawnInGroup(process.execPath, [...(options.nodeArgs ?? []), options.script ?? HEARTH, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, HEARTH_LOG_PRETTY: 'false', ...options.env },
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (typeof options.stdin === 'string' && options.stdin !== 'pipe') child.stdin!.end(options.stdin);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      resolve(code);
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(text, where = 'stdout', timeoutMs = 30_000) {
      const stream = where === 'stdout' ? child.stdout! : child.stderr!;
      const has = () => {
        const s = where === 'stdout' ? out : err;
        return typeof text === 'string' ? s.includes(text) : text.test(s);
      };
      return new Promise((resolve, reject) => {
        if (has()) return resolve();
        const timer = setTimeout(() => reject(new Error(`no ${text} on ${where} within ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`)), timeoutMs);
        const check = () => {
          if (!has()) return;
          clearTimeout(timer);
          stream.off('data', check);
          resolve();
        };
        stream.on('data', check);
        void exited.then((code) => {
          if (has()) return;
          clearTimeout(timer);
          reject(new Error(`hearth exited (${code}) before printing ${text}\nstdout: ${out}\nstderr: ${err}`));
        });
      });
    },
    async stop() {
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Run a command to completion in its own group (killed after timeoutMs). */
export async function runGroup(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; nodeArgs?: string[]; script?: string } = {},
) {
  const p = spawnGroup(args, options);
  const timer = setTimeout(() => killGroup(p.child, 'SIGKILL'), options.timeoutMs ?? 60_000);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** `hearth start` in its own group, ready when it printed its banner. */
export async function startDaemon(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; script?: string } = {}): Promise<GroupProcess> {
  const daemon = spawnGroup(['start', ...args], options);
  try {
    await daemon.waitFor('Press Ctrl+C to stop.', 'stdout', 60_000);
  } catch (err) {
    await daemon.stop();
    throw err;
  }
  return daemon;
}
