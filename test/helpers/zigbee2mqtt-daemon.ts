// `hearth start` on the fixture Zigbee2MQTT home, as a user runs it: mosquitto, a simulated Zigbee2MQTT publishing
// test/fixtures/homes/zigbee2mqtt-home.json (or the home given), the daemon with a database in a folder of its own and the HTTP API on a
// free port, and two tokens made with `hearth token create` (an owner's and a guest's). Started before the file's
// tests, stopped after them; `restart()` stops the daemon and starts it again on the same database.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { freePort, startMosquitto, type TestBroker } from './brokers.js';
import { runHearth, spawnHearth, type Spawned } from './cli.js';
import { SimulatedZigbee2mqtt, type Z2mHomeFixture } from './simulated-zigbee2mqtt.js';
import { started } from './use-home.js';

export interface Zigbee2mqttDaemon {
  /** The daemon's working folder (its database is `h.db` in it). */
  dir: string;
  db: string;
  broker: TestBroker;
  sim: SimulatedZigbee2mqtt;
  /** The running `hearth start`. */
  daemon: Spawned;
  /** Its HTTP API, `http://127.0.0.1:<port>`. */
  base: string;
  /** An owner's token and a guest's. */
  owner: string;
  guest: string;
  /** The flags every command of the test gives: this home's database and broker, no demo, per-entity tools. */
  common(): string[];
  /** Stops the daemon and starts it again (a new HTTP port: `base` follows). */
  restart(): Promise<void>;
  /** Runs `fn` after the file's tests, before the daemon stops (the last registered first). */
  cleanup(fn: () => unknown): void;
}

export function useZigbee2mqttDaemon(name: string, home?: Z2mHomeFixture): Zigbee2mqttDaemon {
  const dir = mkdtempSync(join(tmpdir(), `hearth-${name}-`));
  const db = join(dir, 'h.db');
  const cleanups: Array<() => unknown> = [];
  let broker: TestBroker | undefined;
  let sim: SimulatedZigbee2mqtt | undefined;
  let daemon: Spawned | undefined;
  let base: string | undefined;
  const tokens: Record<'owner' | 'guest', string | undefined> = { owner: undefined, guest: undefined };
  // Per-entity tools: each entity's tool by its name (a home this size is grouped by default).
  const common = () => ['--db', db, '--mqtt-url', started(broker, 'the broker').url, '--no-demo', '--set', 'tools.shape=per-entity'];
  const start = async () => {
    const httpPort = await freePort();
    daemon = spawnHearth(['start', ...common(), '--set', `http.port=${httpPort}`, '--log-level', 'warn'], { cwd: dir });
    await daemon.waitForOutput('Press Ctrl+C to stop.', 30_000);
    base = `http://127.0.0.1:${httpPort}`;
  };
  before(async () => {
    broker = await startMosquitto();
    sim = await SimulatedZigbee2mqtt.start(broker.url, home);
    await start();
    for (const [token, role] of [
      ['setup', 'owner'],
      ['visitor', 'guest'],
    ] as const) {
      const r = await runHearth(['token', 'create', token, '--role', role, '--db', db, '--json'], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      tokens[role] = JSON.parse(r.stdout).secret;
    }
  });
  after(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
    await daemon?.stop();
    await sim?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    db,
    common,
    cleanup: (fn) => void cleanups.push(fn),
    async restart() {
      await started(daemon, 'hearth start').stop();
      daemon = undefined;
      await start();
    },
    get broker() {
      return started(broker, 'the broker');
    },
    get sim() {
      return started(sim, 'the simulated Zigbee2MQTT');
    },
    get daemon() {
      return started(daemon, 'hearth start');
    },
    get base() {
      return started(base, "hearth start's HTTP API");
    },
    get owner() {
      return started(tokens.owner, "the owner's token");
    },
    get guest() {
      return started(tokens.guest, "the guest's token");
    },
  };
}
