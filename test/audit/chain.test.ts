// Tamper evidence: verify() names the first broken entry after edits, deletions
// and reordering made through another connection; the id sequence and the
// digest file catch a cut-off tail.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { canonicalJson, computeDigest, entryHash, GENESIS_HASH, HASHED_COLUMNS, readDigest, verify, writeDigest } from '../../src/audit/chain.js';
import type { DbAuditEntry } from '../../src/audit/row.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import type { AuditEntry } from '../../src/audit/types.js';
import { openDatabase } from '../../src/db/database.js';
import { tempDatabases } from './support.js';

const { root, open } = tempDatabases('hearth-audit-chain-');

let rid = 0;
function entry(i: number): AuditEntry {
  return {
    requestId: `req-${++rid}`,
    principal: i % 2 ? 'voice:kitchen' : 'chat:alice',
    session: null,
    runId: i % 3 ? null : `run-${i}`,
    tool: 'front_door',
    entityId: 'front_door.lock',
    action: i % 2 ? 'unlock' : 'lock',
    args: { code: i, note: `call ${i}` },
    decision: 'allow',
    ruleId: i,
    reason: `rule ${i}`,
  };
}

let n = 0;
/**
 * A log of `calls` calls and a raw connection to tamper with. Odd calls are begun and finished (two
 * entries: the call, then its outcome), even ones recorded denied at once (one entry); the call at
 * `pendingAt` is only begun. build(6) holds entries 1..9: calls 1(1, outcome 2), 2(3), 3(4, outcome 5),
 * 4(6), 5(7, outcome 8), 6(9).
 */
function build(calls = 6, options: { digest?: boolean; pendingAt?: number } = {}) {
  const dir = join(root, `db${++n}`);
  const path = join(dir, 'hearth.db');
  const db = openDatabase(path);
  open.push(db);
  const digestFile = options.digest ? join(dir, 'audit.digest.json') : undefined;
  const audit = new SqliteAuditLog(db, { digestFile });
  for (let i = 1; i <= calls; i++) {
    if (i === options.pendingAt) audit.begin(entry(i));
    else if (i % 2) audit.finish(audit.begin(entry(i)), { outcome: 'confirmed', latencyMs: 100 + i, echo: `{"state":"${i}"}` });
    else audit.record(entry(i), { outcome: 'denied', error: 'denied by rule' });
  }
  // The store writes the digest at most every 200 ms; write it now.
  audit.flushDigest();
  const raw = new Database(path);
  open.push(raw);
  return { db, raw, audit, path, digestFile };
}

const entries = (raw: Database.Database) =>
  raw.prepare('SELECT id, prev_hash, hash FROM audit_entry ORDER BY id').all() as Array<{ id: number; prev_hash: string; hash: string }>;

describe('audit chain', () => {
  it('canonical JSON sorts keys at every depth, without whitespace', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: undefined }], c: 'x' }, u: undefined }), '{"a":{"c":"x","d":[3,{"z":1}]},"b":1}');
    assert.equal(canonicalJson([undefined, NaN, new Date(0)]), '[null,null,"1970-01-01T00:00:00.000Z"]');
  });

  it("an entry's hash is sha256 of prev_hash and the canonical JSON of every hashed column (null when absent)", () => {
    const e = {
      ...Object.fromEntries(HASHED_COLUMNS.map((c) => [c, null])),
      id: 9,
      at: '2026-12-03T02:00:00.000Z',
      v: 2,
      kind: 'outcome',
      call_id: 8,
      reason: 'quotes " and \\ and \u2028 and é',
      latency_ms: 12.5,
      rule_id: -0,
      echo: undefined,
    } as unknown as DbAuditEntry;
    const fields = Object.fromEntries(HASHED_COLUMNS.map((c) => [c, e[c] ?? null]));
    assert.equal(
      entryHash('ab', e),
      createHash('sha256')
        .update(`ab${canonicalJson(fields)}`)
        .digest('hex'),
    );
  });

  it('verifies a clean chain (finished, recorded and pending calls)', () => {
    const { db, raw, audit } = build(7, { pendingAt: 4 });
    const v = verify(db);
    assert.deepEqual(v, { ok: true, rows: 11, calls: 7, pending: 1, lastId: 11 });
    const all = entries(raw);
    assert.equal(all[0].prev_hash, GENESIS_HASH);
    for (let i = 1; i < all.length; i++) assert.equal(all[i].prev_hash, all[i - 1].hash);
    // Readers see one row per call, with its outcome folded in.
    assert.deepEqual(
      audit.list({ limit: 100 }).map((r) => [r.id, r.outcome]),
      [
        [1, 'confirmed'],
        [3, 'denied'],
        [4, 'confirmed'],
        [6, 'pending'],
        [7, 'confirmed'],
        [9, 'denied'],
        [10, 'confirmed'],
      ],
    );
    assert.equal(audit.get(4)!.doneHash, all[4].hash, "a finished call's doneHash is its outcome entry's hash");
  });

  it('an empty log verifies', () => {
    const { db } = build(0);
    assert.deepEqual(verify(db), { ok: true, rows: 0, calls: 0, pending: 0, lastId: 0 });
  });

  it('names the entry whose args were edited', () => {
    const { raw, db } = build();
    raw.prepare(`UPDATE audit_entry SET args = '{"code":9999,"note":"call 3"}' WHERE id = 4`).run();
    const v = verify(db);
    assert.equal(v.ok, false);
    assert.equal(v.rows, 9);
    assert.equal(v.firstBroken?.id, 4);
    assert.equal(v.firstBroken?.kind, 'content');
    assert.match(v.firstBroken!.reason, /row 4: hash does not match its stored fields/);
  });

  it('names the first of several edited entries', () => {
    const { raw, db } = build();
    raw.prepare(`UPDATE audit_entry SET principal = 'cli:mallory' WHERE id = 6`).run();
    raw.prepare(`UPDATE audit_entry SET outcome = 'failed' WHERE id = 2`).run();
    assert.deepEqual(verify(db).firstBroken?.id, 2);
  });

  for (const [what, sql] of [
    ['outcome', `UPDATE audit_entry SET outcome = 'failed' WHERE id = 5`],
    ['error', `UPDATE audit_entry SET error = 'nothing to see' WHERE id = 5`],
    ['echo', `UPDATE audit_entry SET echo = '{"state":"locked"}' WHERE id = 5`],
    ['latency', `UPDATE audit_entry SET latency_ms = 1 WHERE id = 5`],
    ['call it belongs to', `UPDATE audit_entry SET call_id = 1 WHERE id = 5`],
    ['outcome time', `UPDATE audit_entry SET at = '2020-01-01T00:00:00.000Z' WHERE id = 5`],
  ] as const) {
    it(`names the outcome entry whose ${what} was edited`, () => {
      const { raw, db } = build();
      raw.prepare(sql).run();
      const v = verify(db);
      assert.equal(v.ok, false);
      assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [5, 'content']);
    });
  }

  it('a finished call made pending again (its outcome entry deleted) is a gap', () => {
    const { raw, db, audit } = build();
    raw.prepare('DELETE FROM audit_entry WHERE id = 5').run();
    assert.equal(audit.get(4)!.outcome, 'pending');
    assert.deepEqual([verify(db).firstBroken?.id, verify(db).firstBroken?.kind], [5, 'deleted']);
  });

  it('names the hash that was edited to match edited content (the next entry no longer links)', () => {
    const { raw, db } = build();
    raw.prepare(`UPDATE audit_entry SET hash = '${'a'.repeat(64)}' WHERE id = 4`).run();
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [4, 'content']);
  });

  it('names a deleted middle entry', () => {
    const { raw, db } = build();
    raw.prepare('DELETE FROM audit_entry WHERE id = 3').run();
    const v = verify(db);
    assert.equal(v.ok, false);
    assert.equal(v.rows, 8);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [3, 'deleted']);
    assert.match(v.firstBroken!.reason, /row 3 is missing: row 4 follows row 2/);
  });

  it('names a deleted first entry', () => {
    const { raw, db } = build();
    raw.prepare('DELETE FROM audit_entry WHERE id = 1').run();
    assert.deepEqual(verify(db).firstBroken?.id, 1);
  });

  it('names a deleted middle entry even when the entries after it were renumbered', () => {
    const { raw, db } = build();
    raw.transaction(() => {
      raw.prepare('DELETE FROM audit_entry WHERE id = 3').run();
      for (let id = 4; id <= 9; id++) raw.prepare('UPDATE audit_entry SET id = ? WHERE id = ?').run(id - 1, id);
    })();
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [3, 'linkage']);
  });

  it('names reordered entries', () => {
    const { raw, db } = build();
    raw.transaction(() => {
      raw.prepare('UPDATE audit_entry SET id = 100 WHERE id = 3').run();
      raw.prepare('UPDATE audit_entry SET id = 3 WHERE id = 4').run();
      raw.prepare('UPDATE audit_entry SET id = 4 WHERE id = 100').run();
    })();
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [3, 'linkage']);
  });

  it('a deleted tail: the id sequence shows it; with the sequence lowered too, only the digest does', () => {
    const { raw, db, digestFile } = build(6, { digest: true });
    // The store numbers its digests (seq); the rest is the table's digest.
    assert.deepEqual(readDigest(digestFile!), { ...computeDigest(db), at: readDigest(digestFile!).at, seq: readDigest(digestFile!).seq });
    assert.equal(readDigest(digestFile!).count, 9);
    assert.equal(verify(db, { digestFile }).ok, true);

    raw.prepare('DELETE FROM audit_entry WHERE id >= 8').run();
    let v = verify(db);
    assert.deepEqual([v.ok, v.firstBroken?.id, v.firstBroken?.kind], [false, 8, 'truncated']);
    assert.match(v.firstBroken!.reason, /the log ends at row 7, but its id sequence is at 9: rows 8\.\.9 were cut off the tail/);

    raw.prepare("UPDATE sqlite_sequence SET seq = 7 WHERE name = 'audit_entry'").run();
    assert.equal(verify(db).ok, true, 'without the digest a cut tail whose sequence was lowered too is invisible');
    v = verify(db, { digestFile });
    assert.equal(v.ok, false);
    assert.equal(v.rows, 7);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [8, 'truncated']);
    assert.match(v.firstBroken!.reason, /digest .* vouches for 9 rows up to id 9/);
  });

  it('a deleted tail entry leaves a gap once the log goes on (ids are not reused)', () => {
    const { raw, db, audit } = build(6);
    raw.prepare('DELETE FROM audit_entry WHERE id = 9').run();
    const id = audit.record(entry(7), { outcome: 'denied' });
    assert.equal(id, 10);
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [9, 'deleted']);
  });

  it('an outcome for a call that is not awaiting one is refused', () => {
    const { audit } = build(2);
    assert.throws(() => audit.finish(1, { outcome: 'failed' }), { code: 'AUDIT_NOT_PENDING' });
    assert.throws(() => audit.followUp(1, { outcome: 'confirmed' }), { code: 'AUDIT_NOT_PENDING' });
    assert.throws(() => audit.finish(2, { outcome: 'failed' }), { code: 'AUDIT_NOT_FOUND' }, 'entry 2 is an outcome, not a call');
  });

  it('a rewritten chain differs from the digest', () => {
    const { raw, db, digestFile } = build(4, { digest: true });
    // Rewrite the last entry's hash "consistently" (a forger recomputing the tail): the digest still holds the old one.
    const d = readDigest(digestFile!);
    writeFileSync(digestFile!, JSON.stringify({ ...d, lastHash: 'b'.repeat(64) }));
    const v = verify(db, { digestFile });
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [6, 'digest']);
    raw.close();
  });

  it('a missing or malformed digest is reported', () => {
    const { db, digestFile } = build(2, { digest: true });
    rmSync(digestFile!);
    assert.deepEqual(verify(db, { digestFile }).firstBroken?.kind, 'digest');
    writeFileSync(digestFile!, '{"count": "x"}');
    assert.match(verify(db, { digestFile }).firstBroken!.reason, /not an audit digest/);
  });

  it('entries written after the digest are fine; the digest is replaced atomically', () => {
    const { db, audit, digestFile } = build(3, { digest: true });
    audit.begin(entry(4)); // pending: no digest write
    assert.equal(readDigest(digestFile!).lastId, 5);
    assert.equal(verify(db, { digestFile }).ok, true);
    audit.record(entry(5), { outcome: 'denied' });
    assert.equal(readDigest(digestFile!).lastId, 5, 'the digest lags by at most 200 ms');
    audit.flushDigest();
    assert.deepEqual([readDigest(digestFile!).count, readDigest(digestFile!).lastId], [7, 7]);
    assert.deepEqual(
      readdirSync(dirname(digestFile!)).filter((f) => f.includes('digest')),
      ['audit.digest.json'],
      'no temporary file left',
    );
    // The standalone writer agrees with the store's incremental count.
    const other = join(dirname(digestFile!), 'other.json');
    const { seq: _numbered, ...stored } = readDigest(digestFile!);
    assert.deepEqual({ ...writeDigest(db, other), at: '' }, { ...stored, at: '' });
  });
});
