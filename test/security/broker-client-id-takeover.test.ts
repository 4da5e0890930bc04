// Issue 40: `$SYS/+/new/subscribes` on the embedded broker showed Hearth's client id to any anonymous client,
// and an anonymous client reconnecting with that id in a loop kicked Hearth off its own broker (7 of 10 calls
// `not_sent`). Devices may not read `$` topics, and no client but Hearth's may connect with a client id Hearth
// uses: the attempt is refused and logged, and Hearth stays connected. A real `hearth start` (aedes, SQLite).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mqtt from 'mqtt';
import { grantedQos } from '../helpers/broker-clients.js';
import { freePort } from '../helpers/brokers.js';
import { runHearth, type Spawned, spawnHearth } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

describe("security: no client but Hearth's takes Hearth's client id on the embedded broker", () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-client-id-'));
  const dbPath = join(dir, 'hearth.db');
  let daemon: Spawned | undefined;
  let url = '';
  let hearthId = '';

  before(async () => {
    const port = await freePort();
    // At info, the daemon's log names the client id it connected with (as an owner reads it in a broker's log).
    daemon = spawnHearth(['start', '--broker-port', String(port), '--db', dbPath, '--set', 'http.port=0', '--log-level', 'info'], { cwd: dir });
    await daemon.waitForOutput('Press Ctrl+C to stop.', 30_000);
    url = `mqtt://127.0.0.1:${port}`;
    const connected = daemon
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"MQTT connected"'))
      .map((l) => JSON.parse(l) as { clientId?: string; part?: string });
    hearthId = connected.find((l) => l.part === 'mqtt' && l.clientId)?.clientId ?? '';
    assert.ok(hearthId, `the daemon logged its client id:\n${daemon.stderr()}`);
  });
  after(async () => {
    await daemon?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an anonymous client may not subscribe to $SYS (which names every client id)', async () => {
    const client = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 0 });
    try {
      for (const filter of ['$SYS/#', '$SYS/+/new/subscribes', '$SYS/+/new/clients']) {
        assert.equal(await grantedQos(client, filter), 128, `${filter} is refused`);
      }
    } finally {
      await client.endAsync(true);
    }
  });

  it("an anonymous client reconnecting with Hearth's id in a loop is refused each time; every call meanwhile is confirmed", async () => {
    let stop = false;
    const attempts: string[] = [];
    const attack = (async () => {
      while (!stop) {
        try {
          const c = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 0, clientId: hearthId, connectTimeout: 5000 });
          attempts.push('connected');
          await c.endAsync(true);
        } catch (err) {
          attempts.push((err as Error).message);
        }
      }
    })();
    const codes: Array<number | null> = [];
    try {
      await waitFor('the attack to begin', () => attempts.length > 0, 10_000);
      for (let i = 0; i < 5; i++) {
        const r = await runHearth(['call', 'front_door_lock', '{"action":"lock"}', '--db', dbPath], { cwd: dir });
        codes.push(r.code);
        assert.equal(r.code, 0, `call ${i + 1}: ${r.stdout}\n${r.stderr}`);
      }
    } finally {
      stop = true;
      await attack;
    }
    assert.ok(attempts.length >= 5, `the takeover was tried while the calls ran (${attempts.length} times)`);
    assert.deepEqual(
      attempts.filter((a) => !/Identifier rejected/i.test(a)),
      [],
      'every takeover was refused',
    );
    const db = new Database(dbPath, { readonly: true });
    try {
      const rows = db.prepare("SELECT outcome FROM audit WHERE tool = 'front_door_lock'").all() as Array<{ outcome: string }>;
      assert.deepEqual(
        rows.map((r) => r.outcome),
        ['confirmed', 'confirmed', 'confirmed', 'confirmed', 'confirmed'],
      );
    } finally {
      db.close();
    }
    assert.match(daemon!.stderr(), /broker refused a connection: client id \S+ is Hearth's/, 'the takeover is logged');
  });
});
