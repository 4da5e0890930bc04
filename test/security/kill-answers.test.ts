// Issue 40 (low): after kill -9 under 50 concurrent calls, a caller had been answered `confirmed` while the audit
// said `interrupted`: the answer went out before the outcome's commit (outcomes are committed off the caller's
// path). A caller is answered only what the audit holds: whenever the process dies, every answer a caller got is
// the outcome its audit row has. A real `hearth start` (demo home, simulator, embedded broker), real HTTP calls,
// a real SIGKILL, the real SQLite file read afterwards.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { runHearth } from '../helpers/cli.js';
import { useHearthStart } from '../helpers/use-hearth-start.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-kill-answers-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const hearth = useHearthStart(dir);

describe('security: a caller is answered only what the audit holds, even when Hearth is killed', () => {
  it('50 concurrent calls, kill -9 at the first confirmed answer: every answer matches its audit row', async () => {
    const created = await runHearth(['token', 'create', 'phone', '--role', 'owner', '--db', hearth.db], { cwd: dir });
    const secret = /hearth_[A-Za-z0-9_-]+/.exec(created.stdout)?.[0];
    assert.ok(secret, created.stdout + created.stderr);

    const answers: Array<{ text: string; auditId?: number }> = [];
    let killed = false;
    // Two lights, so one's command travels while the other's outcome waits to be committed.
    const calls = Array.from({ length: 50 }, (_, i) => {
      const tool = i % 2 ? 'living_room_lamp' : 'kitchen_light';
      const action = i % 4 < 2 ? 'turn_on' : 'turn_off';
      return fetch(`http://127.0.0.1:${hearth.httpPort}/api/tools/${tool}/call`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ args: { action } }),
        signal: AbortSignal.timeout(60_000),
      })
        .then(async (res) => {
          const body = (await res.json()) as { text: string; details?: { auditId?: number } };
          answers.push({ text: body.text, ...(body.details?.auditId ? { auditId: body.details.auditId } : {}) });
          if (!killed && body.text.startsWith('confirmed')) {
            killed = true;
            hearth.bridge.child.kill('SIGKILL');
          }
        })
        .catch(() => undefined); // cut off by the kill: no answer, nothing to hold the audit to
    });
    await Promise.all(calls);
    await hearth.bridge.exited;
    assert.ok(killed, `no call was confirmed before the kill: ${JSON.stringify(answers.slice(0, 3))}`);

    const db = openDatabase(hearth.db);
    try {
      const audit = new SqliteAuditLog(db, { durability: 'connection' });
      const answered = answers.filter((a) => a.auditId !== undefined);
      assert.ok(answered.some((a) => a.text.startsWith('confirmed')));
      for (const a of answered) {
        const row = audit.get(a.auditId!);
        // What the caller was told is the first word of the answer: `confirmed: ...`, `unconfirmed: ...`.
        assert.equal(row?.outcome, /^\w+/.exec(a.text)?.[0], `audit #${a.auditId}: answered "${a.text.slice(0, 60)}", the audit holds ${row?.outcome}`);
      }
    } finally {
      db.close();
    }
  });
});
