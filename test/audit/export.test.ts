// Export as JSON lines and CSV: awkward values round-trip, `since` filters,
// paging yields every row once.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { exportAudit, csvField } from '../../src/audit/export.js';
import { AUDIT_COLUMNS, type StoredAuditRow } from '../../src/audit/row.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import type { AuditEntry } from '../../src/audit/types.js';
import { openDatabase } from '../../src/db/database.js';
import { tempDatabases } from './support.js';

const { root, open } = tempDatabases('hearth-audit-export-');

/** A strict RFC 4180 parser: records of fields, quoted fields may hold commas, quotes and newlines. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (c === '"') {
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"') {
      assert.equal(field, '', `a quote inside an unquoted field at ${i}`);
      quoted = true;
    } else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += c;
    i++;
  }
  assert.equal(quoted, false, 'unterminated quoted field');
  if (field !== '' || record.length) {
    record.push(field);
    records.push(record);
  }
  return records;
}

const NASTY = 'line one, with "quotes"\nline two,\r\n  "and" a trailing space ';

let t = Date.parse('2025-06-01T08:00:00.000Z');
function setup() {
  const db = openDatabase(join(root, `db-${t}`, 'hearth.db'));
  open.push(db);
  const audit = new SqliteAuditLog(db, { now: () => new Date((t += 1000)) });
  let rid = 0;
  const entry = (over: Partial<AuditEntry> = {}): AuditEntry => ({
    requestId: `req-${++rid}`,
    principal: 'chat:alice',
    session: null,
    runId: null,
    tool: 'garage_door',
    entityId: 'garage.door',
    action: 'open',
    args: { position: 100 },
    decision: 'confirm',
    ruleId: 7,
    reason: 'rule 7 asks a person first',
    ...over,
  });
  return { db, audit, entry };
}

describe('audit export', () => {
  it('quotes CSV fields only when needed', () => {
    assert.equal(csvField('plain'), 'plain');
    assert.equal(csvField(null), '');
    assert.equal(csvField(42), '42');
    assert.equal(csvField('a,b'), '"a,b"');
    assert.equal(csvField('say "hi"'), '"say ""hi"""');
    assert.equal(csvField('two\nlines'), '"two\nlines"');
    assert.equal(csvField(' padded'), '" padded"');
  });

  it('JSON lines and CSV round-trip commas, quotes and newlines', () => {
    const { audit, entry } = setup();
    const a = audit.record(entry({ reason: NASTY, args: { note: NASTY, n: 1 } }), { outcome: 'failed', error: NASTY, latencyMs: 7 });
    const b = audit.begin(entry({ entityId: null, session: 'sess,1' }));
    const rows = [audit.get(a)!, audit.get(b)!];

    const jsonl = [...audit.export('jsonl')];
    assert.equal(jsonl.length, 2);
    for (const line of jsonl) assert.ok(!line.includes('\n'), 'one line per row');
    const parsed = jsonl.map((l) => JSON.parse(l) as StoredAuditRow);
    assert.deepEqual(parsed, rows);
    assert.equal(parsed[0].reason, NASTY);
    assert.deepEqual(parsed[0].args, { n: 1, note: NASTY });

    const csv = [...audit.export('csv')];
    assert.equal(csv.length, 3, 'header and two records');
    const records = parseCsv(csv.join('\n'));
    assert.deepEqual(records[0], [...AUDIT_COLUMNS]);
    assert.equal(records.length, 3);
    const first = Object.fromEntries(AUDIT_COLUMNS.map((c, i) => [c, records[1][i]]));
    assert.equal(first.reason, NASTY);
    assert.equal(first.error, NASTY);
    assert.deepEqual(JSON.parse(first.args), { n: 1, note: NASTY });
    assert.equal(first.id, String(a));
    assert.equal(first.latency_ms, '7');
    assert.equal(first.hash, rows[0].hash);
    assert.equal(first.done_hash, rows[0].doneHash);
    const second = Object.fromEntries(AUDIT_COLUMNS.map((c, i) => [c, records[2][i]]));
    assert.equal(second.session, 'sess,1');
    assert.equal(second.entity_id, '', 'null is an empty field');
    assert.equal(second.outcome, 'pending');
  });

  it('since filters, and paging yields every row once', () => {
    const { audit, entry, db } = setup();
    const ids: number[] = [];
    for (let i = 0; i < 7; i++) ids.push(audit.record(entry(), { outcome: 'confirmed' }));
    const since = audit.get(ids[4])!.at;
    assert.deepEqual(
      [...audit.export('jsonl', { since })].map((l) => (JSON.parse(l) as StoredAuditRow).id),
      ids.slice(4),
    );
    assert.deepEqual(
      [...audit.export('jsonl', { pageSize: 2 })].map((l) => (JSON.parse(l) as StoredAuditRow).id),
      ids,
    );
    assert.deepEqual([...exportAudit(db, 'csv', { since: new Date(since), pageSize: 3 })].length, 1 + 3);
    assert.throws(() => audit.export('xml' as never), /unknown export format/);
    assert.throws(() => audit.export('csv', { since: 'yesterday-ish' }), /not a time/);
  });

  it('a paused export does not block audit writes', () => {
    const { audit, entry } = setup();
    for (let i = 0; i < 5; i++) audit.record(entry(), { outcome: 'confirmed' });
    const it = audit.export('jsonl', { pageSize: 2 });
    assert.equal(it.next().done, false);
    audit.record(entry(), { outcome: 'denied' });
    const rest = [...it];
    assert.equal(rest.length, 5, 'the row written meanwhile is included');
  });
});
