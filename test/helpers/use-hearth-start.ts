// `hearth start` (the built dist) for a test file, as a user runs it: the embedded broker and the HTTP API on
// free ports, a database in the test's folder; ready once it printed its banner, stopped after the tests.
import { join } from 'node:path';
import { after, before } from 'node:test';
import { freePort } from './brokers.js';
import { spawnHearth, type Spawned } from './cli.js';
import { late } from './late.js';
import { started } from './use-home.js';

export interface StartedHearth {
  /** The `hearth start` process. */
  bridge: Spawned;
  brokerPort: number;
  httpPort: number;
  /** Its database file, in the folder the test gave. */
  db: string;
}

/** `hearth start --broker-port <free> --db <dir>/h.db --set http.port=<free> ...args`, run in `dir` (with `env` added to the environment). */
export function useHearthStart(dir: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): StartedHearth {
  let running: StartedHearth | undefined;
  before(async () => {
    const db = join(dir, 'h.db');
    const brokerPort = await freePort();
    const httpPort = await freePort();
    const bridge = spawnHearth(['start', '--broker-port', String(brokerPort), '--db', db, '--set', `http.port=${httpPort}`, ...args], { cwd: dir, env });
    running = { bridge, brokerPort, httpPort, db };
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    await running?.bridge.stop();
  });
  return late(() => started(running, 'hearth start'));
}
