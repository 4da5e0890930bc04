// A real Node-RED runtime for the tests of this package as users run it: a user directory with the package
// npm-installed into it, and node-red started on a free loopback port in a process group of its own (so it dies
// with the test run), stopped with SIGTERM (SIGKILL after 5 s) when the test is done.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { freePort } from './brokers.js';
import { ROOT } from './cli.js';
import { npmInstallFolder } from './npm-install.js';
import { signalGroup, spawnInGroup } from './processes.js';
import { waitFor } from './wait.js';

const NODE_RED = join(createRequire(import.meta.url).resolve('node-red/package.json'), '..', 'red.js');

/** A Node-RED user directory in `userDir` with this package npm-installed into it (`npm install <folder>`). */
export function installIntoUserDir(userDir: string): void {
  mkdirSync(userDir, { recursive: true });
  writeFileSync(join(userDir, 'package.json'), JSON.stringify({ name: 'node-red-project', private: true, version: '0.0.1' }, null, 2));
  npmInstallFolder(ROOT, userDir);
}

export interface NodeRedRuntime {
  child: ChildProcess;
  port: number;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** What it printed so far, stdout and stderr. */
  log(): string;
  stop(): Promise<void>;
}

export interface NodeRedOptions {
  /** Where its settings file goes (the test's folder). */
  dir: string;
  userDir: string;
  credentialSecret: string;
  /** More lines of the settings object (such as an adminAuth), as JavaScript. */
  settings?: string;
}

/** Starts node-red on `userDir`; resolves once it has started its flows and answers HTTP (60 s at the most). */
export async function startNodeRed(options: NodeRedOptions): Promise<NodeRedRuntime> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const settings = join(options.dir, 'settings.cjs');
  writeFileSync(
    settings,
    `module.exports = {
  uiHost: '127.0.0.1',
  uiPort: ${port},
  flowFile: 'flows.json',
  credentialSecret: ${JSON.stringify(options.credentialSecret)},
${options.settings ?? ''}  telemetry: { enabled: false },
  diagnostics: { enabled: false },
  editorTheme: { tours: false, projects: { enabled: false } },
  logging: { console: { level: 'info', metrics: false, audit: false } },
};
`,
  );
  const child = spawnInGroup(process.execPath, [NODE_RED, '-u', options.userDir, '-p', String(port), '-s', settings], {
    cwd: options.dir,
    env: { ...process.env, NODE_RED_DISABLE_TELEMETRY: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (d) => (log += d));
  child.stderr!.on('data', (d) => (log += d));
  const runtime: NodeRedRuntime = {
    child,
    port,
    url,
    log: () => log,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      signalGroup(child, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  try {
    await waitFor(
      'node-red started',
      async () => {
        if (child.exitCode !== null) throw new Error(`node-red exited (${child.exitCode})`);
        // The login endpoint answers with or without adminAuth.
        const r = await fetch(`${url}/auth/login`, { signal: AbortSignal.timeout(1000) }).catch(() => undefined);
        return r?.ok && /Started flows|Starting flows/.test(log);
      },
      15_000,
    );
  } catch (err) {
    await runtime.stop();
    throw new Error(`${(err as Error).message}\n${log}`, { cause: err });
  }
  return runtime;
}
