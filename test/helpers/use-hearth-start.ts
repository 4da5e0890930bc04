// `hearth start` (the built dist) for a test file, as a user runs it: the embedded broker and the HTTP API on
// free ports, a database in the test's folder; ready once it printed its banner, stopped after the tests.
import { join } from 'node:path';
import { after, before } from 'node:test';
import { freePort } from './brokers.js';
import { spawnHearth, type Spawned } from './cli.js';
import { started } from './use-home.js';

export interface StartedHearth {
  /** The `hearth start` process. */
  bridge: Spawned;
  brokerPort: number;
  httpPort: number;
  /** Its database file, in the folder the test gave. */
  db: string;
}

/** `hearth start --broker-port <free> --db <dir>/h.db --set http.port=<free> ...args`, run in `dir`. */
export function useHearthStart(dir: string, args: string[] = []): StartedHearth {
  let bridge: Spawned | undefined;
  let brokerPort: number | undefined;
  let httpPort: number | undefined;
  const db = join(dir, 'h.db');
  before(async () => {
    brokerPort = await freePort();
    httpPort = await freePort();
    bridge = spawnHearth(['start', '--broker-port', String(brokerPort), '--db', db, '--set', `http.port=${httpPort}`, ...args], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    await bridge?.stop();
  });
  return {
    get bridge() {
      return started(bridge, 'hearth start');
    },
    get brokerPort() {
      return started(brokerPort, 'hearth start');
    },
    get httpPort() {
      return started(httpPort, 'hearth start');
    },
    db,
  };
}
