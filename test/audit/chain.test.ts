// Tamper evidence: verify() names the first broken row after edits, deletions
// and reordering made through another connection, and the digest file catches
// a cut-off tail.
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { canonicalJson, computeDigest, GENESIS_HASH, readDigest, verify, writeDigest } from '../../src/audit/chain.js';
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
/** A log of `rows` rows (a mix of finished, recorded and, at `pendingAt`, pending) and a raw connection to tamper with. */
function build(rows = 6, options: { digest?: boolean; pendingAt?: number } = {}) {
  const dir = join(root, `db${++n}`);
  const path = join(dir, 'hearth.db');
  const db = openDatabase(path);
  open.push(db);
  const digestFile = options.digest ? join(dir, 'audit.digest.json') : undefined;
  const audit = new SqliteAuditLog(db, { digestFile });
  for (let i = 1; i <= rows; i++) {
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

describe('audit chain', () => {
  it('canonical JSON sorts keys at every depth, without whitespace', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: undefined }], c: 'x' }, u: undefined }), '{"a":{"c":"x","d":[3,{"z":1}]},"b":1}');
    assert.equal(canonicalJson([undefined, NaN, new Date(0)]), '[null,null,"1970-01-01T00:00:00.000Z"]');
  });

  it('verifies a clean chain (finished, recorded and pending rows)', () => {
    const { db, audit } = build(7, { pendingAt: 4 });
    const v = verify(db);
    assert.deepEqual(v, { ok: true, rows: 7, pending: 1, lastId: 7 });
    assert.equal(audit.get(1)!.prevHash, GENESIS_HASH);
    for (let id = 2; id <= 7; id++) assert.equal(audit.get(id)!.prevHash, audit.get(id - 1)!.hash);
  });

  it('an empty log verifies', () => {
    const { db } = build(0);
    assert.deepEqual(verify(db), { ok: true, rows: 0, pending: 0, lastId: 0 });
  });

  it('names the row whose args were edited', () => {
    const { raw, db } = build();
    raw.prepare(`UPDATE audit SET args = '{"code":9999,"note":"call 3"}' WHERE id = 3`).run();
    const v = verify(db);
    assert.equal(v.ok, false);
    assert.equal(v.rows, 6);
    assert.equal(v.firstBroken?.id, 3);
    assert.equal(v.firstBroken?.kind, 'content');
    assert.match(v.firstBroken!.reason, /row 3: hash does not match/);
  });

  it('names the first of several edited rows', () => {
    const { raw, db } = build();
    raw.prepare(`UPDATE audit SET principal = 'cli:mallory' WHERE id = 5`).run();
    raw.prepare(`UPDATE audit SET outcome = 'failed' WHERE id = 2`).run();
    assert.deepEqual(verify(db).firstBroken?.id, 2);
  });

  for (const [what, sql] of [
    ['outcome', `UPDATE audit SET outcome = 'failed' WHERE id = 3`],
    ['error', `UPDATE audit SET error = 'nothing to see' WHERE id = 3`],
    ['echo', `UPDATE audit SET echo = '{"state":"locked"}' WHERE id = 3`],
    ['latency', `UPDATE audit SET latency_ms = 1 WHERE id = 3`],
    ['a finished row made pending', `UPDATE audit SET outcome = 'pending' WHERE id = 3`],
  ] as const) {
    it(`names the row whose ${what} was edited`, () => {
      const { raw, db } = build();
      raw.prepare(sql).run();
      const v = verify(db);
      assert.equal(v.ok, false);
      assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [3, 'outcome']);
    });
  }

  it('names the hash that was edited to match edited content (the next row no longer links)', () => {
    const { raw, db } = build();
    raw.prepare(`UPDATE audit SET hash = '${'a'.repeat(64)}' WHERE id = 4`).run();
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [4, 'content']);
  });

  it('names a deleted middle row', () => {
    const { raw, db } = build();
    raw.prepare('DELETE FROM audit WHERE id = 3').run();
    const v = verify(db);
    assert.equal(v.ok, false);
    assert.equal(v.rows, 5);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [3, 'deleted']);
    assert.match(v.firstBroken!.reason, /row 3 is missing: row 4 follows row 2/);
  });

  it('names a deleted first row', () => {
    const { raw, db } = build();
    raw.prepare('DELETE FROM audit WHERE id = 1').run();
    assert.deepEqual(verify(db).firstBroken?.id, 1);
  });

  it('names a deleted middle row even when the rows after it were renumbered', () => {
    const { raw, db } = build();
    raw.transaction(() => {
      raw.prepare('DELETE FROM audit WHERE id = 3').run();
      for (let id = 4; id <= 6; id++) raw.prepare('UPDATE audit SET id = ? WHERE id = ?').run(id - 1, id);
    })();
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [3, 'linkage']);
  });

  it('names reordered rows', () => {
    const { raw, db } = build();
    raw.transaction(() => {
      raw.prepare('UPDATE audit SET id = 100 WHERE id = 3').run();
      raw.prepare('UPDATE audit SET id = 3 WHERE id = 4').run();
      raw.prepare('UPDATE audit SET id = 4 WHERE id = 100').run();
    })();
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [3, 'linkage']);
  });

  it('a deleted tail row: clean without a digest, truncation with one', () => {
    const { raw, db, digestFile } = build(6, { digest: true });
    assert.deepEqual(readDigest(digestFile!), { ...computeDigest(db), at: readDigest(digestFile!).at });
    assert.equal(readDigest(digestFile!).count, 6);
    assert.equal(verify(db, { digestFile }).ok, true);

    raw.prepare('DELETE FROM audit WHERE id >= 5').run();
    assert.equal(verify(db).ok, true, 'without the digest a cut tail is invisible');
    const v = verify(db, { digestFile });
    assert.equal(v.ok, false);
    assert.equal(v.rows, 4);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [5, 'truncated']);
    assert.match(v.firstBroken!.reason, /digest .* vouches for 6 rows up to id 6/);
  });

  it('a deleted tail row leaves a gap once the log goes on (ids are not reused)', () => {
    const { raw, db, audit } = build(6);
    raw.prepare('DELETE FROM audit WHERE id = 6').run();
    const id = audit.record(entry(7), { outcome: 'denied' });
    assert.equal(id, 7);
    const v = verify(db);
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [6, 'deleted']);
  });

  it('a rewritten chain differs from the digest', () => {
    const { raw, db, digestFile } = build(4, { digest: true });
    // Rewrite row 4's hash "consistently" (a forger recomputing the tail): the digest still holds the old one.
    const d = readDigest(digestFile!);
    writeFileSync(digestFile!, JSON.stringify({ ...d, lastHash: 'b'.repeat(64) }));
    const v = verify(db, { digestFile });
    assert.deepEqual([v.firstBroken?.id, v.firstBroken?.kind], [4, 'digest']);
    raw.close();
  });

  it('a missing or malformed digest is reported', () => {
    const { db, digestFile } = build(2, { digest: true });
    rmSync(digestFile!);
    assert.deepEqual(verify(db, { digestFile }).firstBroken?.kind, 'digest');
    writeFileSync(digestFile!, '{"count": "x"}');
    assert.match(verify(db, { digestFile }).firstBroken!.reason, /not an audit digest/);
  });

  it('rows written after the digest are fine; the digest is replaced atomically', () => {
    const { db, audit, digestFile } = build(3, { digest: true });
    audit.begin(entry(4)); // pending: no digest write
    assert.equal(readDigest(digestFile!).lastId, 3);
    assert.equal(verify(db, { digestFile }).ok, true);
    audit.record(entry(5), { outcome: 'denied' });
    assert.equal(readDigest(digestFile!).lastId, 3, 'the digest lags by at most 200 ms');
    audit.flushDigest();
    assert.deepEqual([readDigest(digestFile!).count, readDigest(digestFile!).lastId], [5, 5]);
    assert.deepEqual(readdirSync(dirname(digestFile!)).filter((f) => f.includes('digest')), ['audit.digest.json'], 'no temporary file left');
    // The standalone writer agrees with the store's incremental count.
    const other = join(dirname(digestFile!), 'other.json');
    assert.deepEqual({ ...writeDigest(db, other), at: '' }, { ...readDigest(digestFile!), at: '' });
  });
});
