// Issue 40: the gate forgot across a restart. The embedded broker keeps no retained messages and the gate knew
// only the command topics of entities seen since start: after a restart, before a discovered lock re-announced,
// an anonymous client published UNLOCK on its command topic and the lock heard it, with no row. The database
// remembers discovered entities and now their command topics: they are gated from the first second. A real
// `hearth start`, stopped and started again on the same database and port.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MqttClient } from 'mqtt';
import { publishKept, tryConnect } from '../helpers/broker-clients.js';
import { freePort } from '../helpers/brokers.js';
import { type Spawned, spawnHearth } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const CONFIG_TOPIC = 'homeassistant/lock/garden_gate/config';
const GATE_SET = 'garden/gate/set';
const GATE_STATE = 'garden/gate/state';
const GATE_CONFIG = {
  name: 'Garden gate',
  unique_id: 'garden_gate_lock_01',
  command_topic: GATE_SET,
  state_topic: GATE_STATE,
  device: { identifiers: ['garden_gate_01'], name: 'Garden gate', manufacturer: 'Nuki' },
};

describe("security: a remembered lock's command topic is gated from the first second after a restart", () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-remembered-topics-'));
  const dbPath = join(dir, 'hearth.db');
  let port = 0;
  let daemon: Spawned | undefined;
  const clients: MqttClient[] = [];

  const start = async () => {
    daemon = spawnHearth(['start', '--broker-port', String(port), '--db', dbPath, '--set', 'http.port=0', '--log-level', 'warn'], { cwd: dir });
    await daemon.waitForOutput('Press Ctrl+C to stop.', 30_000);
  };
  const connect = async () => {
    const { client, refused } = await tryConnect(`mqtt://127.0.0.1:${port}`);
    assert.ok(client, refused);
    clients.push(client);
    return client;
  };

  before(async () => {
    port = await freePort();
    await start();
    // The lock announces itself; the first daemon admits it (an outside command on its topic is then refused).
    const lock = await connect();
    await lock.publishAsync(CONFIG_TOPIC, JSON.stringify(GATE_CONFIG), { qos: 1 });
    await lock.publishAsync(GATE_STATE, 'LOCKED', { qos: 1 });
    await waitFor(
      'the first daemon to gate the lock',
      async () => {
        const probe = await connect();
        return !(await publishKept(probe, GATE_SET, 'LOCK'));
      },
      15_000,
    );
    await daemon!.stop();
    for (const c of clients.splice(0)) c.end(true);
  });
  after(async () => {
    for (const c of clients) c.end(true);
    await daemon?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('right after the restart, before the lock re-announces, an anonymous UNLOCK is refused and never reaches the lock', async () => {
    await start();
    const lock = await connect();
    const heard: string[] = [];
    lock.on('message', (topic, payload) => heard.push(`${topic} ${payload.toString()}`));
    await lock.subscribeAsync([GATE_SET, 'garden/marker'], { qos: 1 });

    const attacker = await connect();
    assert.equal(await publishKept(attacker, GATE_SET, 'UNLOCK'), false, 'the broker refused the command');
    // A publish the broker allows, after the refused one: once the lock hears it, it would have heard the UNLOCK.
    const other = await connect();
    assert.equal(await publishKept(other, 'garden/marker', 'after'), true);
    await waitFor('the marker', () => heard.includes('garden/marker after'), 10_000);
    assert.deepEqual(
      heard.filter((h) => h.startsWith(GATE_SET)),
      [],
      'the lock heard no command',
    );
    // A sub-topic of the lock's command topic is the lock's too (Zigbee2MQTT takes `<cmd>/state` as a command).
    const deeper = await connect();
    assert.equal(await publishKept(deeper, `${GATE_SET}/state`, 'UNLOCK'), false);
  });
});
