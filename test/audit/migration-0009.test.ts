// Migration 0009: rows written before the audit became append-only keep
// verifying under their old hashes, and the first writer seals them, so that
// an edit of their outcome (with done_hash recomputed, which their own hashes
// cannot show) breaks the chain from then on. The id high-water mark survives
// the table's rebuild.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { doneHash, GENESIS_HASH, rowHash, verify } from '../../src/audit/chain.js';
import type { DbAuditRow } from '../../src/audit/row.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { tempDatabases } from './support.js';

const { root, open } = tempDatabases('hearth-audit-0009-');
let n = 0;

/** A database at the schema before 0009 with `rows` rows written the old way (row 2 left pending), and the tail row deleted when asked. */
function oldDatabase(rows: number, options: { cutTail?: boolean } = {}): string {
  const path = join(root, `old${++n}.db`);
  const db = openDatabase(path, { upTo: 8 });
  let prev = GENESIS_HASH;
  const insert = db.prepare(`INSERT INTO audit (id, at, request_id, principal, session, run_id, tool, entity_id, action, args, decision, rule_id, reason,
    outcome, error, latency_ms, echo, completed_at, prev_hash, hash, done_hash) VALUES (@id, @at, @request_id, @principal, @session, @run_id, @tool,
    @entity_id, @action, @args, @decision, @rule_id, @reason, @outcome, @error, @latency_ms, @echo, @completed_at, @prev_hash, @hash, @done_hash)`);
  for (let id = 1; id <= rows; id++) {
    const at = `2026-01-01T00:00:0${id}.000Z`;
    const fields = {
      id,
      at,
      request_id: `old-${id}`,
      principal: 'chat:alice',
      session: null,
      run_id: null,
      tool: 'front_door_lock',
      entity_id: 'front_door.lock',
      action: 'unlock',
      args: '{}',
      decision: 'allow',
      rule_id: null,
      reason: 'owner',
    };
    const hash = rowHash(prev, fields);
    const completion = id === 2 ? null : { outcome: 'confirmed', error: null, latency_ms: 40, echo: '{"value":"unlocked"}', completed_at: at };
    const row: DbAuditRow = {
      ...fields,
      ...(completion ?? { outcome: 'pending', error: null, latency_ms: null, echo: null, completed_at: null }),
      prev_hash: prev,
      hash,
      done_hash: completion ? doneHash(hash, completion) : null,
    };
    insert.run(row);
    prev = hash;
  }
  if (options.cutTail) db.prepare('DELETE FROM audit WHERE id = ?').run(rows);
  db.close();
  return path;
}

describe('migration 0009 (append-only audit)', () => {
  it('old rows keep verifying and reading; a reader does not seal, the first writer does', () => {
    const path = oldDatabase(3);
    const db = openDatabase(path);
    open.push(db);
    const reader = new SqliteAuditLog(db, { durability: 'connection' });
    assert.deepEqual(verify(db), { ok: true, rows: 3, calls: 3, pending: 1, lastId: 3 });
    assert.deepEqual(
      reader.list().map((r) => [r.id, r.outcome]),
      [
        [1, 'confirmed'],
        [2, 'pending'],
        [3, 'confirmed'],
      ],
    );

    const writer = new SqliteAuditLog(db);
    const seal = db.prepare("SELECT * FROM audit_entry WHERE kind = 'seal'").all() as Array<{ id: number; call_id: number; args: string }>;
    assert.equal(seal.length, 1);
    assert.deepEqual([seal[0].id, seal[0].call_id, JSON.parse(seal[0].args).count], [4, 3, 3]);
    new SqliteAuditLog(db); // a second writer does not seal again
    assert.equal((db.prepare("SELECT count(*) AS n FROM audit_entry WHERE kind = 'seal'").get() as { n: number }).n, 1);
    // The old pending call takes its outcome as a new entry; new calls follow.
    assert.equal(writer.markInterrupted(0), 1);
    writer.record(
      {
        requestId: 'new-1',
        principal: 'chat:bob',
        session: null,
        runId: null,
        tool: 'x',
        entityId: null,
        action: 'turn_on',
        args: {},
        decision: 'deny',
        ruleId: null,
        reason: 'no',
      },
      { outcome: 'denied' },
    );
    assert.deepEqual(
      writer.list().map((r) => [r.id, r.outcome]),
      [
        [1, 'confirmed'],
        [2, 'interrupted'],
        [3, 'confirmed'],
        [6, 'denied'],
      ],
    );
    assert.deepEqual(verify(db), { ok: true, rows: 6, calls: 4, pending: 0, lastId: 6 });
  });

  it('an old row whose outcome is edited after the seal (done_hash recomputed) breaks the chain', () => {
    const path = oldDatabase(3);
    const db = openDatabase(path);
    open.push(db);
    new SqliteAuditLog(db);
    assert.equal(verify(db).ok, true);
    const raw = new Database(path);
    open.push(raw);
    const r = raw.prepare('SELECT * FROM audit_entry WHERE id = 3').get() as DbAuditRow;
    const forged = { ...r, outcome: 'failed', error: 'jammed' };
    raw.prepare('UPDATE audit_entry SET outcome = ?, error = ?, done_hash = ? WHERE id = 3').run('failed', 'jammed', doneHash(r.hash, forged));
    const v = verify(db);
    assert.equal(v.ok, false);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [4, 'outcome']);
    assert.match(v.firstBroken!.reason, /rows 1\.\.3 \(written before migration 0009\) do not match their seal in row 4/);
  });

  it('a tail row deleted before the migration still shows: the id sequence is carried over', () => {
    const path = oldDatabase(3, { cutTail: true });
    const db = openDatabase(path);
    open.push(db);
    const v = verify(db);
    assert.deepEqual([v.ok, v.firstBroken?.kind, v.firstBroken?.id], [false, 'truncated', 3]);
    // And a writer numbers past it.
    const audit = new SqliteAuditLog(db);
    assert.equal((db.prepare("SELECT id FROM audit_entry WHERE kind = 'seal'").get() as { id: number }).id, 4);
    assert.equal(audit.verify().firstBroken?.kind, 'deleted');
  });
});
