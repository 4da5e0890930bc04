// The audit key signs the digest file. A forger with write access to the
// database and the digest's folder can rewrite a row and recompute every hash
// and the digest; without the key the digest's signature gives it away.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { computeDigest, entryHash, GENESIS_HASH, readDigest, writeDigestFile } from '../../src/audit/chain.js';
import { loadAuditKey } from '../../src/audit/key.js';
import type { DbAuditEntry } from '../../src/audit/row.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { runHearth } from '../helpers/cli.js';
import { auditEntry, tempDatabases } from './support.js';

const { root, open } = tempDatabases('hearth-audit-key-');

let n = 0;
function keyedLog(rows = 4) {
  const dir = join(root, `k${++n}`);
  const path = join(dir, 'hearth.db');
  const keyFile = join(dir, 'secret', 'audit.key');
  const digestFile = join(dir, 'elsewhere', 'audit.digest.json');
  const { key, created } = loadAuditKey(keyFile, { create: true });
  const db = openDatabase(path);
  open.push(db);
  const audit = new SqliteAuditLog(db, { digestFile, key });
  for (let i = 1; i <= rows; i++) audit.finish(audit.begin(auditEntry({ args: { step: i } })), { outcome: 'confirmed', latencyMs: i });
  audit.flushDigest();
  return { dir, path, db, audit, key, created, keyFile, digestFile };
}

/** What a forger with the database can do: change the second call's arguments and recompute every hash after it. */
function rewriteChain(path: string): void {
  const raw = new Database(path);
  try {
    const rows = raw.prepare('SELECT * FROM audit_entry ORDER BY id').all() as DbAuditEntry[];
    let prev = GENESIS_HASH;
    const update = raw.prepare('UPDATE audit_entry SET args = ?, prev_hash = ?, hash = ? WHERE id = ?');
    for (const r of rows) {
      const args = r.id === 3 ? '{"step":99}' : r.args;
      const hash = entryHash(prev, { ...r, args });
      update.run(args, prev, hash, r.id);
      prev = hash;
    }
  } finally {
    raw.close();
  }
}

describe('the audit key', () => {
  it('is made on first use, readable by its owner only, and read back the same', () => {
    const { keyFile, key, created } = keyedLog(0);
    assert.equal(created, true);
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    const again = loadAuditKey(keyFile, { create: true });
    assert.equal(again.created, false);
    assert.ok(again.key.equals(key));
    writeFileSync(keyFile, 'not a key\n');
    assert.throws(() => loadAuditKey(keyFile), /audit\.key_file: .*audit\.key must hold 64 hex characters/);
  });

  it('signs the digest, and verify accepts the signed digest', () => {
    const { audit, digestFile } = keyedLog();
    assert.match(readDigest(digestFile).mac!, /^[0-9a-f]{64}$/);
    assert.equal(audit.verify().ok, true);
  });

  it('a home stopped before its first call verifies: the digest of the empty log vouches for no rows', async () => {
    const { audit, digestFile, path, keyFile } = keyedLog(0);
    assert.equal(readDigest(digestFile).count, 0);
    assert.equal(audit.verify().ok, true);
    const r = await runHearth(['audit', 'verify', '--db', path, '--set', `audit.digest_file=${digestFile}`, '--set', `audit.key_file=${keyFile}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^chain verified: 0 entries/);
  });

  it('catches a rewritten chain that comes with a recomputed, unsigned or wrongly signed digest', () => {
    const { path, db, audit, digestFile, key } = keyedLog();
    rewriteChain(path);
    writeDigestFile(digestFile, computeDigest(db));
    // Without the key the forgery passes: the chain and the digest agree.
    assert.equal(new SqliteAuditLog(db, { digestFile, durability: 'connection' }).verify().ok, true);
    const unsigned = audit.verify({ key });
    assert.equal(unsigned.ok, false);
    assert.equal(unsigned.firstBroken?.kind, 'digest');
    assert.match(unsigned.firstBroken!.reason, /is not signed, but there is an audit key/);
    writeDigestFile(digestFile, computeDigest(db), randomBytes(32));
    assert.match(audit.verify({ key }).firstBroken!.reason, /carries a signature the audit key did not make/);
  });

  it('`hearth audit verify` uses audit.keyFile and says the digest is signed; exit 1 on a forgery', async () => {
    const { dir, path, db, digestFile, keyFile } = keyedLog(3);
    const args = ['audit', 'verify', '--db', path, '--set', `audit.digestFile=${digestFile}`, '--set', `audit.keyFile=${keyFile}`];
    const good = await runHearth(args, { cwd: dir });
    assert.equal(good.code, 0, good.stderr);
    // Three calls, each with its outcome entry.
    assert.match(
      good.stdout,
      /chain verified: 6 entries \(3 calls, as `hearth audit tail` lists them, and their outcomes\), ids 1\.\.6; digest .* matches \(6 rows up to id 6, .*signed with the audit key\)/,
    );
    rewriteChain(path);
    writeDigestFile(digestFile, computeDigest(db));
    const forged = await runHearth(args, { cwd: dir });
    assert.equal(forged.code, 1);
    assert.match(forged.stderr, /audit chain BROKEN at the digest \(digest\): digest file .* is not signed, but there is an audit key/);
  });
});
