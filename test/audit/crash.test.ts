// SIGKILL of the process running an actuator call: the next start marks the row interrupted and the chain verifies.
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
import { spawnHearth } from '../helpers/cli.js';
import { sleep, waitFor } from '../helpers/wait.js';

const root = mkdtempSync(join(tmpdir(), 'hearth-crash-'));
after(() => rmSync(root, { recursive: true, force: true }));

for (const durability of ['full', 'grouped'] as const) {
  it(`a call killed mid-wait leaves a pending row that the next start marks interrupted; the chain verifies (audit.durability ${durability})`, async () => {
    const dir = join(root, durability);
    const env = { HEARTH_AUDIT_DURABILITY: durability };
    // The demo devices without their simulator: nothing will ever answer the garage, and it gives up after 2 s.
    const devices = copyDemoDevices(dir, (text) => text.replace(/confirm_timeout_ms: \d+/, 'confirm_timeout_ms: 2000'));
    const dbPath = join(dir, 'h.db');
    const db = openDatabase(dbPath);
    new SqlitePolicy(db).add({ subject: 'role:owner', targetType: 'kind', target: 'cover', action: 'close', effect: 'allow' });
    const audit = new SqliteAuditLog(db);
    const port = await freePort();
    const args = ['--no-demo', '--devices', devices, '--broker-port', String(port), '--db', dbPath, '--set', 'http.port=0'];

    const bridge = spawnHearth(['start', ...args], { cwd: dir, env });
    try {
      await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
      // --standalone: the call runs in this process (not in the daemon), so killing it kills the call.
      const caller = spawnHearth(
        ['call', 'garage_door', '{"action":"close"}', '--standalone', '--mqtt-url', `mqtt://127.0.0.1:${port}`, ...args.slice(0, 3), '--db', dbPath],
        { cwd: dir, env },
      );
      const row = await waitFor('a pending audit row', () => audit.tail(5).find((r) => r.tool === 'garage_door' && r.outcome === 'pending'), 15_000);
      caller.child.kill('SIGKILL');
      await caller.exited;
      assert.equal(audit.get(row.id)!.outcome, 'pending', 'the killed call never completed its row');
    } finally {
      await bridge.stop();
    }

    // Older than its device's confirmation timeout (2 s here) plus a second of grace: the next start knows the call is dead.
    await sleep(3300);
    const again = spawnHearth(['start', ...args], { cwd: dir, env });
    try {
      await again.waitForOutput('Press Ctrl+C to stop.', 20_000);
      assert.match(again.stdout(), /audit: \d+ rows, 1 marked interrupted, chain verified/);
    } finally {
      await again.stop();
    }
    const last = audit.tail(1)[0];
    assert.equal(last.outcome, 'interrupted');
    assert.equal(audit.verify().ok, true);
    db.close();
  });
}
