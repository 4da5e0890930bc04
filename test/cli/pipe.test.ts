// A command whose reader goes away (`hearth audit tail | head -1`) stops
// quietly with exit 0, without a stack trace.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { auditEntry } from '../audit/support.js';
import { spawnHearth } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-pipe-'));
after(() => rmSync(dir, { recursive: true, force: true }));

it('`hearth audit tail` into a closed pipe exits 0 and says nothing', async () => {
  const path = join(dir, 'h.db');
  const db = openDatabase(path);
  const audit = new SqliteAuditLog(db);
  for (let i = 0; i < 500; i++) audit.record(auditEntry(), { outcome: 'denied', error: 'x'.repeat(200) });
  db.close();
  const p = spawnHearth(['audit', 'tail', '-n', '500', '--db', path], { cwd: dir });
  // The reader is gone before the command writes anything.
  p.child.stdout!.destroy();
  const code = await p.exited;
  assert.equal(code, 0);
  assert.doesNotMatch(p.stderr(), /EPIPE|Error/);
});
