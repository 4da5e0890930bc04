// Issue 27: the audit could be extended by whoever can write the file. An appended, validly chained entry (a
// made-up "confirmed unlock by mcp:fam") verified with digest and key, a daemon started on that file signed over
// it, and an older signed digest put back with the log cut to match verified too (the digest was 0644).
// Now: verify names entries past the last signed digest as not vouched for; a starting Hearth refuses to sign
// over them until an owner accepts them; digests are numbered, the highest number kept beside the key, so a
// rollback is seen; digest, sequence and key files are 0600. A real SQLite file and the real CLI.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readDigest } from '../../src/audit/chain.js';
import { loadAuditKey } from '../../src/audit/key.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { runHearth } from '../helpers/cli.js';
import { auditEntry } from '../audit/support.js';
import { logSink } from '../helpers/log-sink.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-vouch-'));
const dbPath = join(dir, 'hearth.db');
const digestFile = join(dir, 'digest', 'audit.digest');
const keyFile = join(dir, 'keys', 'audit.key');
const config = join(dir, 'hearth.yaml');
writeFileSync(config, `database:\n  path: ${dbPath}\naudit:\n  digestFile: ${digestFile}\n  keyFile: ${keyFile}\n`);
after(() => rmSync(dir, { recursive: true, force: true }));

const entry = auditEntry;

/** A Hearth's audit log: signed digests, numbered beside the key. Runs `body`, then closes (writing its last digest). */
function asHearth<T>(body: (audit: SqliteAuditLog, logs: ReturnType<typeof logSink>) => T): T {
  const db = openDatabase(dbPath);
  const logs = logSink('debug');
  const audit = new SqliteAuditLog(db, {
    log: logs.log,
    digestFile,
    key: loadAuditKey(keyFile, { create: true }).key,
    sequenceFile: `${keyFile}.seq`,
  });
  try {
    return body(audit, logs);
  } finally {
    audit.flushDigest();
    db.close();
  }
}

/** Whoever can write the file but has no key: appends through a store of its own, chained like any entry. */
function asIntruder(body: (audit: SqliteAuditLog) => void): void {
  const db = openDatabase(dbPath);
  try {
    body(new SqliteAuditLog(db, {}));
  } finally {
    db.close();
  }
}

const cli = (...args: string[]) => runHearth([...args, '--config', config], { cwd: dir });

describe('security: only what a Hearth signed is vouched for', () => {
  it('a Hearth writes numbered, signed digests; digest, sequence and key are 0600', () => {
    asHearth((audit) => {
      audit.record(entry(), { outcome: 'confirmed' });
      audit.record(entry(), { outcome: 'confirmed' });
    });
    const d = readDigest(digestFile);
    assert.ok(d.mac && (d.seq ?? 0) >= 1, JSON.stringify(d));
    assert.equal(Number(readFileSync(`${keyFile}.seq`, 'utf8')), d.seq);
    for (const f of [digestFile, `${keyFile}.seq`, keyFile]) assert.equal(statSync(f).mode & 0o777, 0o600, f);
  });

  it('an appended "confirmed unlock by mcp:fam" verifies as a chain but is named as not vouched for', async () => {
    const signed = readDigest(digestFile).lastId;
    asIntruder((audit) =>
      audit.record(entry({ principal: 'mcp:fam', tool: 'front_door_lock', entityId: 'front_door.lock', action: 'unlock', args: { action: 'unlock' } }), {
        outcome: 'confirmed',
      }),
    );
    // Issue 40: not vouched for is no clean bill: verify exits 1 and says so.
    const r = await cli('audit', 'verify');
    assert.equal(r.code, 1, r.stdout);
    assert.doesNotMatch(r.stdout + r.stderr, /chain verified/);
    assert.match(r.stderr, new RegExp(`after the signed digest \\(ids ${signed + 1}\\.\\.\\d+\\) (is|are) NOT vouched for`));
    const json = JSON.parse((await cli('audit', 'verify', '--json')).stdout) as { unvouched?: { from: number } };
    assert.equal(json.unvouched?.from, signed + 1);
    const shown = await cli('audit', 'show', String(signed + 1));
    assert.match(shown.stderr, /not vouched for by a signed digest/);
  });

  it('a starting Hearth refuses to sign over them and says so; an owner accepts them; signing resumes', async () => {
    const before = readDigest(digestFile);
    asHearth((audit, logs) => {
      assert.equal(logs.find(/come after the last signed digest/).length, 1, 'said once, at start');
      audit.record(entry(), { outcome: 'confirmed' });
      audit.flushDigest();
      assert.equal(readDigest(digestFile).lastId, before.lastId, 'no digest signed over the unvouched entries');
    });
    const accepted = await cli('audit', 'accept');
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stdout, /vouched for \d+ entries up to id \d+: digest #\d+ written/);
    const verified = await cli('audit', 'verify');
    assert.doesNotMatch(verified.stdout, /NOT vouched/);
    asHearth((audit, logs) => {
      assert.equal(logs.find(/come after the last signed digest/).length, 0);
      audit.record(entry(), { outcome: 'confirmed' });
    });
    assert.ok(readDigest(digestFile).lastId > before.lastId);
  });

  it('an older signed digest put back, with the log cut to match, is seen as a rollback', async () => {
    const old = join(dir, 'old.digest');
    copyFileSync(digestFile, old);
    const oldDigest = readDigest(old);
    asHearth((audit) => audit.record(entry(), { outcome: 'confirmed' }));
    // The attacker: the log cut back to the old digest (the id sequence too), the old digest put back.
    const db = openDatabase(dbPath);
    try {
      db.prepare('DELETE FROM audit_entry WHERE id > ?').run(oldDigest.lastId);
      db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'audit_entry'").run(oldDigest.lastId);
    } finally {
      db.close();
    }
    copyFileSync(old, digestFile);
    const r = await cli('audit', 'verify');
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /an older digest was put back \(a rollback/);
  });

  it('a digest file written 0644 by an older Hearth is made 0600 at start', () => {
    chmodSync(digestFile, 0o644);
    asHearth(() => undefined);
    assert.equal(statSync(digestFile).mode & 0o777, 0o600);
  });
});
