// Issue 30: run from another folder, a command did not find the running daemon (it looked for ./hearth.db),
// opened a stray database there and, given the broker port, switched the real lamp: the row was in the stray
// file, the daemon's audit had none. Now the daemon says where it runs (a runtime directory of this user's
// running daemons), a command with no database named finds it from any folder, and a process on another
// database refuses to command a broker a daemon serves, naming that daemon's database. A real `hearth start`.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { freePort } from '../helpers/brokers.js';
import { runHearth, type Spawned, startHearthDaemon } from '../helpers/cli.js';

describe('one home, one audit, from any folder', () => {
  const root = mkdtempSync(join(tmpdir(), 'hearth-any-folder-'));
  const home = join(root, 'home');
  const elsewhere = join(root, 'elsewhere');
  const db = join(home, 'hearth.db');
  let daemon: Spawned | undefined;
  let port = 0;

  before(async () => {
    mkdirSync(home);
    mkdirSync(elsewhere);
    port = await freePort();
    ({ hearth: daemon } = await startHearthDaemon(db, port, home));
  });
  after(async () => {
    await daemon?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  const rows = () => {
    const d = new Database(db, { readonly: true });
    try {
      return d.prepare("SELECT tool, action, outcome FROM audit WHERE tool = 'living_room_lamp'").all();
    } finally {
      d.close();
    }
  };

  it("a call from another folder, no database named, is the daemon's: its audit has the row, no stray hearth.db appears", async () => {
    const r = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--verbose'], { cwd: elsewhere });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^confirmed/m);
    assert.match(r.stderr, /using the running daemon/);
    assert.equal(existsSync(join(elsewhere, 'hearth.db')), false, 'no stray database');
    assert.deepEqual(rows(), [{ tool: 'living_room_lamp', action: 'turn_on', outcome: 'confirmed' }]);
    // The banner's broker port picks the same daemon.
    const again = await runHearth(['call', 'living_room_lamp', '{"action":"turn_off"}', '--broker-port', String(port)], { cwd: elsewhere });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(rows().length, 2);
  });

  it('a command on another database refuses to command the broker the daemon serves, in one line naming its database', async () => {
    const stray = join(elsewhere, 'stray.db');
    const r = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--db', stray, '--broker-port', String(port)], { cwd: elsewhere });
    assert.equal(r.code, 2, r.stdout);
    assert.match(r.stderr, new RegExp(`served by the Hearth daemon for ${db.replace(/[/.]/g, '\\$&')}.*--db ${db.replace(/[/.]/g, '\\$&')}.*nothing was sent`));
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.equal(rows().length, 2, 'nothing reached the audit');
  });

  it("another user (who cannot see this user's runtime directory) is stopped by the status the daemon left on the broker", async () => {
    const stray = join(elsewhere, 'other-user.db');
    const other = { HEARTH_RUNTIME_DIR: join(root, 'other-user-runtime') };
    const r = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--db', stray, '--broker-port', String(port)], {
      cwd: elsewhere,
      env: other,
    });
    assert.equal(r.code, 2, r.stdout);
    assert.match(r.stderr, new RegExp(`served by the Hearth daemon for ${db.replace(/[/.]/g, '\\$&')} on \\S+ \\(pid \\d+\\).*nothing was sent`));
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.equal(rows().length, 2, "nothing reached the daemon's audit");
    const strayRows = new Database(stray, { readonly: true });
    try {
      assert.deepEqual(strayRows.prepare('SELECT tool, outcome FROM audit').all(), [], 'and nothing was recorded as sent in the stray one');
    } finally {
      strayRows.close();
    }
  });

  it('the status is retained JSON naming the database, the control socket and the page, and only Hearth may publish it', async () => {
    const mqtt = await import('mqtt');
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0 });
    try {
      const got = new Promise<{ payload: Buffer; retain: boolean }>((resolve) =>
        client.on('message', (topic, payload, packet) => topic === 'hearth/status' && resolve({ payload, retain: packet.retain })),
      );
      await client.subscribeAsync('hearth/status');
      const status = await got;
      assert.equal(status.retain, true);
      const s = JSON.parse(status.payload.toString()) as { state: string; database: string; control: string; http: string };
      assert.equal(s.state, 'online');
      assert.equal(s.database, db);
      assert.equal(s.control, `${db}.sock`);
      assert.match(s.http, /^http:\/\/127\.0\.0\.1:\d+/);
      // A device client saying "offline" to let a stray process through: the broker refuses and disconnects it.
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      client.publish('hearth/status', JSON.stringify({ ...s, state: 'offline' }), { retain: true, qos: 1 });
      await closed;
    } finally {
      client.end(true);
    }
    const again = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0 });
    try {
      const got = new Promise<Buffer>((resolve) => again.on('message', (topic, payload) => topic === 'hearth/status' && resolve(payload)));
      await again.subscribeAsync('hearth/status');
      assert.equal((JSON.parse((await got).toString()) as { state: string }).state, 'online', 'the status is unchanged');
    } finally {
      again.end(true);
    }
  });
});
