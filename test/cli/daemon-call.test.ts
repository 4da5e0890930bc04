// A `hearth call` that the daemon runs outlives its client: killed while it waits
// for the device, the call still finishes in the daemon and its audit row gets an
// outcome (nothing is left pending for a later start to guess about).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { SqlitePolicy } from '../../src/policy/engine.js';
import { copyDemoDevices } from '../helpers/demo-devices.js';
import { freePort } from '../helpers/brokers.js';
import { spawnGroup, startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-daemon-call-'));
after(() => rmSync(dir, { recursive: true, force: true }));

it('a client killed mid-call: the daemon finishes the call and its audit row', async () => {
  // The demo devices without their simulator: nothing answers the garage, which gives up after 2 s.
  const devices = copyDemoDevices(dir, (text) => text.replace(/confirm_timeout_ms: \d+/, 'confirm_timeout_ms: 2000'));
  const dbPath = join(dir, 'h.db');
  const db = openDatabase(dbPath);
  new SqlitePolicy(db).add({ subject: 'role:owner', targetType: 'kind', target: 'cover', action: 'close', effect: 'allow' });
  const audit = new SqliteAuditLog(db);
  const daemon = await startDaemon(['--no-demo', '--devices', devices, '--broker-port', String(await freePort()), '--db', dbPath, '--http-port', '0'], {
    cwd: dir,
  });
  try {
    const caller = spawnGroup(['call', 'garage_door', '{"action":"close"}', '--db', dbPath, '--verbose'], { cwd: dir });
    const row = await waitFor('a pending audit row', () => audit.tail(5).find((r) => r.tool === 'garage_door' && r.outcome === 'pending'), 15_000);
    await caller.waitFor('using the running daemon', 'stderr');
    caller.child.kill('SIGKILL');
    await caller.exited;
    const done = await waitFor(
      'the row finished by the daemon',
      () => {
        const r = audit.get(row.id);
        return r && r.outcome !== 'pending' ? r : undefined;
      },
      30_000,
    );
    assert.equal(done.outcome, 'unconfirmed');
    assert.equal(audit.verify().ok, true);
  } finally {
    await daemon.stop();
    db.close();
  }
});
