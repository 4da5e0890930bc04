// Issue 27: the embedded broker was open. Any local program could publish UNLOCK on the lock's command topic
// and the door opened with no policy decision and no audit row. The broker is Hearth's own: only Hearth's
// clients (the daemon, and Hearth processes on the same database) publish on command topics; devices connect
// anonymously on loopback or with the owner's accounts, and the broker refuses to listen on a reachable
// address without them. A real `hearth start` (real aedes, real SQLite file) and in-process bridges.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mqtt, { type MqttClient } from 'mqtt';
import { Bridge } from '../../src/bridge.js';
import { loadConfig } from '../../src/config/load.js';
import { publishKept, tryConnect } from '../helpers/broker-clients.js';
import { freePort } from '../helpers/brokers.js';
import { runHearth, type Spawned, startHearthDaemon } from '../helpers/cli.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const LOCK_SET = 'hearth-demo/front_door/lock/set';
const LOCK_STATE = 'hearth-demo/front_door/lock';
const MOTION = 'hearth-demo/hallway_motion';

describe('security: the embedded broker lets only Hearth command a device', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-broker-gate-'));
  const dbPath = join(dir, 'hearth.db');
  let daemon: Spawned | undefined;
  let url = '';
  const lockStates: string[] = [];
  /** Every message the watcher got on the lock's command topic and the motion sensor's, in order. */
  const watched: string[] = [];
  let watcher: MqttClient | undefined;

  before(async () => {
    const port = await freePort();
    ({ hearth: daemon } = await startHearthDaemon(dbPath, port, dir));
    url = `mqtt://127.0.0.1:${port}`;
    watcher = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 0 });
    watcher.on('message', (topic, payload) => {
      if (topic === LOCK_STATE) lockStates.push(payload.toString());
      else watched.push(`${topic} ${payload.toString()}`);
    });
    await watcher.subscribeAsync([LOCK_STATE, LOCK_SET, MOTION], { qos: 1 });
    await waitFor('the lock reports its state', () => lockStates.length > 0, 10_000);
  });
  after(async () => {
    await watcher?.endAsync(true).catch(() => undefined);
    await daemon?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an outside client publishing UNLOCK on the lock's command topic is disconnected; the lock stays locked; the audit has no row", async () => {
    assert.equal(lockStates.at(-1), 'LOCKED');
    const { client } = await tryConnect(url, {});
    assert.ok(client, 'an anonymous client on loopback may connect (devices do)');
    assert.equal(await publishKept(client, LOCK_SET, 'UNLOCK'), false, 'the broker refused the command');
    client.end(true);
    // A device's own report still goes through, and it comes after the refused command: once the watcher has the
    // report, it would have had the command (the lock listens where the watcher does).
    const device = (await tryConnect(url, {})).client!;
    assert.equal(await publishKept(device, MOTION, JSON.stringify({ occupancy: true })), true);
    await device.endAsync(true);
    await waitFor("the motion sensor's report at the watcher", () => watched.some((m) => m.startsWith(`${MOTION} `)));
    assert.deepEqual(
      watched.filter((m) => m.startsWith(`${LOCK_SET} `)),
      [],
      'nothing reached the lock on its command topic',
    );
    assert.ok(!lockStates.includes('UNLOCKED'), `the lock never unlocked: ${lockStates.join(', ')}`);
    const db = new Database(dbPath, { readonly: true });
    try {
      assert.equal((db.prepare("SELECT count(*) AS n FROM audit WHERE tool = 'front_door_lock'").get() as { n: number }).n, 0);
    } finally {
      db.close();
    }
  });

  it("Hearth's own credential sits beside the database, 0600; a wrong password for Hearth's user is refused", async () => {
    assert.equal(statSync(`${dbPath}.broker`).mode & 0o777, 0o600);
    const { refused } = await tryConnect(url, { username: 'hearth', password: 'guessed-password' });
    assert.match(refused ?? '', /Bad username or password|Not authorized/i);
  });

  it('a command through Hearth still reaches the lock, decided and audited', async () => {
    const r = await runHearth(['call', 'front_door_lock', '{"action":"lock"}', '--db', dbPath], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const db = new Database(dbPath, { readonly: true });
    try {
      const rows = db.prepare("SELECT outcome FROM audit WHERE tool = 'front_door_lock'").all() as Array<{ outcome: string }>;
      assert.deepEqual(
        rows.map((x) => x.outcome),
        ['confirmed'],
      );
    } finally {
      db.close();
    }
  });
});

describe('security: the embedded broker off loopback, and device accounts', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function bridgeWith(settings: Record<string, unknown>): Promise<Bridge> {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-broker-accounts-'));
    dirs.push(dir);
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: { 'mqtt.embedded.port': '0', 'database.path': join(dir, 'hearth.db'), 'devices.paths': [], demo: false, ...settings } as never,
    });
    return Bridge.start({ config, log: logSink('warn').log, embedBroker: true, connectWaitMs: 5000 });
  }

  it('refuses to listen on a reachable address without accounts, naming the field', async () => {
    await assert.rejects(bridgeWith({ 'mqtt.embedded.host': '0.0.0.0' }), /mqtt\.embedded\.accounts/);
    await assert.rejects(bridgeWith({ 'mqtt.embedded.host': '0.0.0.0', 'mqtt.embedded.allowAnonymous': 'true' }), /mqtt\.embedded\.allowAnonymous/);
  });

  it('with accounts and no anonymous clients: a stranger is refused, an account connects and is held to its topics', async () => {
    const bridge = await bridgeWith({
      'mqtt.embedded.allowAnonymous': 'false',
      'mqtt.embedded.accounts': JSON.stringify([{ username: 'plug', password: 'plug-secret-123', publish: ['plugs/#'], clientIds: ['plug-1'] }]),
    });
    try {
      const url = bridge.broker!.url;
      assert.equal(bridge.connection.state, 'connected', "Hearth's own client is in");
      assert.match((await tryConnect(url, {})).refused ?? '', /Not authorized/i);
      assert.match((await tryConnect(url, { username: 'plug', password: 'wrong-secret-123', clientId: 'plug-1' })).refused ?? '', /Bad username or password/i);
      assert.match((await tryConnect(url, { username: 'plug', password: 'plug-secret-123', clientId: 'other' })).refused ?? '', /Not authorized/i);
      const plug = (await tryConnect(url, { username: 'plug', password: 'plug-secret-123', clientId: 'plug-1' })).client!;
      assert.equal(await publishKept(plug, 'plugs/one/state', 'ON'), true);
      assert.equal(await publishKept(plug, 'locks/front/set', 'UNLOCK'), false, 'outside its publish patterns');
      plug.end(true);
    } finally {
      await bridge.close();
    }
  });
});
