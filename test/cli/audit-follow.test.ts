// `hearth audit tail -f` keeps every row it prints later in the header's columns, however long
// a later row's principal, tool or entity is: the columns were sized when the header was printed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { auditEntry } from '../audit/support.js';
import { spawnHearth } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-follow-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const COLUMNS = ['TIME', 'ID', 'PRINCIPAL', 'TOOL', 'ENTITY', 'ACTION', 'DECISION', 'OUTCOME', 'LATENCY', 'ERROR'];

it('a followed row with long cells starts each column where the header does, cut with …', async () => {
  const path = join(dir, 'h.db');
  const db = openDatabase(path);
  const audit = new SqliteAuditLog(db);
  audit.record(auditEntry(), { outcome: 'confirmed', latencyMs: 40 });

  const follow = spawnHearth(['audit', 'tail', '-f', '-n', '1', '--db', path], { cwd: dir });
  try {
    await follow.waitForOutput(/^TIME +ID/m, 10_000);
    const principal = `chat:${'someone-with-a-long-name'.repeat(3)}`;
    const tool = `hallway_${'ceiling_'.repeat(6)}light`;
    const entity = `hallway.${'ceiling_'.repeat(6)}light`;
    audit.record(auditEntry({ principal, tool, entityId: entity, action: 'turn_on', decision: 'deny', ruleId: 12 }), {
      outcome: 'denied',
      error: 'denied by rule 12',
    });
    await follow.waitForOutput(/denied by rule 12/, 10_000);

    const lines = follow.stdout().split('\n');
    const header = lines.find((l) => l.startsWith('TIME'))!;
    const row = lines.find((l) => l.includes('denied by rule 12'))!;
    const starts = COLUMNS.map((c) => header.indexOf(c));
    assert.ok(
      starts.every((s, i) => i === 0 || s > starts[i - 1]),
      header,
    );
    // Every column of the row begins at the header's offset: two spaces before it, a cell from it on.
    for (const [i, start] of starts.entries()) {
      if (i > 0) assert.equal(row.slice(start - 2, start), '  ', `before ${COLUMNS[i]} in\n${header}\n${row}`);
      assert.notEqual(row[start], ' ', `${COLUMNS[i]} in\n${header}\n${row}`);
    }
    const cell = (name: string) => row.slice(starts[COLUMNS.indexOf(name)], starts[COLUMNS.indexOf(name) + 1]).trimEnd();
    // The long cells are cut to their column, keeping their beginning.
    for (const [name, full] of [
      ['PRINCIPAL', principal],
      ['TOOL', tool],
      ['ENTITY', entity],
    ]) {
      const shown = cell(name);
      assert.ok(shown.endsWith('…') && shown.length > 5 && full.startsWith(shown.slice(0, -1)), `${name}: ${shown}`);
    }
    assert.equal(cell('ACTION'), 'turn_on');
    assert.equal(cell('DECISION'), 'deny #12');
    assert.equal(cell('OUTCOME'), 'denied');
    assert.equal(row.slice(starts[COLUMNS.indexOf('ERROR')]), 'denied by rule 12');
  } finally {
    assert.equal(await follow.stop('SIGINT'), 0);
    db.close();
  }
});
