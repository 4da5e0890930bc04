// A forged rename must not open the lock's command topic on Hearth's own broker. Before, a forged bridge/devices
// renaming the front door lock made Hearth forget its command topic, and the embedded broker's gate with it: any
// client on the broker could then publish UNLOCK where the real lock (still so named in Zigbee2MQTT) listens, with
// no policy decision and no audit row. Now the lock keeps its topic while the move waits for an owner, and the
// broker keeps refusing. A real `hearth start` (its embedded aedes, a real SQLite file) and `hearth devices`.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MqttClient } from 'mqtt';
import { publishKept, tryConnect } from '../helpers/broker-clients.js';
import { freePort } from '../helpers/brokers.js';
import { runHearth, type Spawned, startHearthDaemon } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'z2m');
const LIST: Array<{ friendly_name: string }> = JSON.parse(readFileSync(join(FIXTURES, 'bridge-devices.json'), 'utf8'));
const LOCK_SET = 'zigbee2mqtt/Front door lock/set';

describe("security: a forged rename leaves the lock's command topic gated on the embedded broker", () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-forged-rename-broker-'));
  const db = join(dir, 'hearth.db');
  let daemon: Spawned | undefined;
  let url = '';
  const clients: MqttClient[] = [];
  /** What the lock (Zigbee2MQTT) heard on its command topic, and the marker after it. */
  const heard: string[] = [];

  const connect = async () => {
    const { client, refused } = await tryConnect(url);
    assert.ok(client, refused);
    clients.push(client);
    return client;
  };

  before(async () => {
    const port = await freePort();
    ({ hearth: daemon } = await startHearthDaemon(db, port, dir));
    url = `mqtt://127.0.0.1:${port}`;
    const zigbee = await connect();
    zigbee.on('message', (topic, payload) => heard.push(`${topic} ${payload.toString()}`));
    await zigbee.subscribeAsync([LOCK_SET, 'zigbee2mqtt/marker'], { qos: 1 });
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(LIST), { qos: 1, retain: true });
    // Gated once the daemon has the lock: a probe's LOCK (harmless) is refused from then on.
    await waitFor('the daemon to gate the lock', async () => !(await publishKept(await connect(), LOCK_SET, '{"state":"LOCK"}')), 15_000);
  });
  after(async () => {
    for (const c of clients) c.end(true);
    await daemon?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('after a forged list renames the lock, an outside UNLOCK on its topic is refused and never reaches it', async () => {
    const forger = await connect();
    const forged = LIST.map((d) => (d.friendly_name === 'Front door lock' ? { ...d, friendly_name: 'Porch' } : d));
    await forger.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(forged), { qos: 1, retain: true });
    // `hearth devices` (through the daemon) says the move waits, naming what to run if it was a real rename.
    await waitFor(
      'the move waiting',
      async () => (await runHearth(['devices', '--db', db], { cwd: dir })).stdout.includes('front_door_lock was moved by its source'),
      20_000,
    );
    const before = heard.length;
    assert.equal(await publishKept(await connect(), LOCK_SET, '{"state":"UNLOCK"}'), false, 'the broker refused the command');
    // A publish the broker allows, after the refused one: once the lock hears it, it would have heard the UNLOCK.
    assert.equal(await publishKept(await connect(), 'zigbee2mqtt/marker', 'after'), true);
    await waitFor('the marker', () => heard.includes('zigbee2mqtt/marker after'), 10_000);
    assert.deepEqual(
      heard.slice(before).filter((h) => h.startsWith(LOCK_SET)),
      [],
      'the lock heard no command',
    );
  });

  it('`hearth devices confirm-move` moves the lock only to the topic the owner was shown; the gate follows it', async () => {
    const PORCH_SET = 'zigbee2mqtt/Porch/set';
    // A topic the owner was not shown: nothing moves, and the CLI says where the device is going now.
    const wrong = await runHearth(['devices', 'confirm-move', 'front_door_lock', '--to', 'zigbee2mqtt/Elsewhere/set', '--db', db], { cwd: dir });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /front_door_lock is being moved to zigbee2mqtt\/Porch\/set now, not to zigbee2mqtt\/Elsewhere\/set/);
    assert.equal(await publishKept(await connect(), LOCK_SET, '{"state":"LOCK"}'), false, 'still gated on its old topic');
    // The owner did rename it (say): confirmed, the lock takes the new topic and lets go of the old one.
    const done = await runHearth(['devices', 'confirm-move', 'front_door_lock', '--to', PORCH_SET, '--db', db], { cwd: dir });
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /^front_door_lock\.lock: moved from zigbee2mqtt\/Front door lock\/set to zigbee2mqtt\/Porch\/set$/m);
    await waitFor('the gate on the new topic', async () => !(await publishKept(await connect(), PORCH_SET, '{"state":"LOCK"}')), 15_000);
    assert.equal(await publishKept(await connect(), LOCK_SET, '{"state":"LOCK"}'), true, 'the old topic is no device of Hearth now');
    const listed = await runHearth(['devices', '--db', db], { cwd: dir });
    assert.doesNotMatch(listed.stdout, /was moved by its source/);
  });
});
