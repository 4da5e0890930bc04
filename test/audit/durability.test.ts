// audit.durability grouped on real SQLite files: rows go to the write-ahead
// log at once, one fsync on the thread pool covers every commit made while it
// runs, the digest only vouches for fsynced rows, and a failed fsync turns
// every later commit back into a synchronous=FULL one.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { readDigest } from '../../src/audit/chain.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import type { WalSyncOptions } from '../../src/db/wal-sync.js';
import { logSink } from '../helpers/log-sink.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { auditEntry, tempDatabases } from './support.js';

const { root, open } = tempDatabases('hearth-audit-durability-');

let n = 0;
function grouped(walSync?: WalSyncOptions) {
  const dir = join(root, `db${++n}`);
  const path = join(dir, 'hearth.db');
  const db = openDatabase(path);
  open.push(db);
  const sink = logSink('debug');
  const digestFile = join(dir, 'audit.digest.json');
  const flushes: number[] = [];
  const counting: WalSyncOptions = {
    datasync: async (h: FileHandle) => {
      flushes.push(Date.now());
      await (walSync?.datasync ? walSync.datasync(h) : h.datasync());
    },
  };
  const audit = new SqliteAuditLog(db, { log: sink.log, digestFile, durability: 'grouped', walSync: counting });
  return { path, db, audit, sink, digestFile, flushes };
}

const entry = auditEntry;

/** A real fdatasync that waits for release(). */
function held() {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  return {
    release: () => release(),
    datasync: async (h: FileHandle) => {
      await gate;
      return h.datasync();
    },
  };
}

describe('audit.durability grouped', () => {
  it('commits to the write-ahead log at once and shares one fsync between the commits made while one runs', async () => {
    const { path, db, audit, flushes } = grouped();
    assert.equal(audit.durability, 'grouped');
    assert.equal(db.pragma('synchronous', { simple: true }), 1, 'NORMAL: the commit itself does not wait for the disk');
    const ids = [audit.begin(entry()), audit.begin(entry()), audit.begin(entry())];
    // Another connection (another process would do the same) sees the rows before any fsync finished.
    const reader = new Database(path, { readonly: true });
    open.push(reader);
    assert.equal((reader.prepare('SELECT count(*) AS n FROM audit').get() as { n: number }).n, 3);
    await audit.durable();
    assert.ok(flushes.length >= 1 && flushes.length <= 2, `three commits in one tick take one or two fsyncs, not ${flushes.length}`);
    for (const id of ids) audit.finish(id, { outcome: 'confirmed', latencyMs: 1 });
    await audit.durable();
    audit.flushDigest();
    assert.equal(audit.verify().ok, true);
  });

  it('falls back to full on a database without a write-ahead log', () => {
    const db = openDatabase(':memory:');
    open.push(db);
    const audit = new SqliteAuditLog(db, { durability: 'grouped' });
    assert.equal(audit.durability, 'full');
    assert.equal(db.pragma('synchronous', { simple: true }), 2);
  });

  it('the digest vouches only for rows whose fsync is done', async () => {
    const gate = held();
    const { audit, digestFile } = grouped({ datasync: gate.datasync });
    audit.record(entry(), { outcome: 'confirmed', latencyMs: 1 });
    await sleep(400); // past the digest's 200 ms schedule
    assert.equal(existsSync(digestFile), false, 'no digest for a row not yet on disk');
    gate.release();
    const d = await waitFor('the digest', () => existsSync(digestFile) && readDigest(digestFile));
    assert.equal(d.count, 1);
    assert.equal(audit.verify().ok, true);
  });

  it('a failed fsync is logged and every later commit waits for the disk again', async () => {
    const { db, audit, sink } = grouped({
      datasync: async () => {
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      },
    });
    audit.begin(entry());
    await assert.rejects(audit.durable(), /EIO/);
    assert.equal(audit.durability, 'full');
    assert.equal(db.pragma('synchronous', { simple: true }), 2);
    const line = sink.find(/fsync of the write-ahead log failed/)[0];
    assert.ok(line, 'an error line says the fsync failed');
    assert.equal(line.level, 50);
    // Commits go on, each with its own fsync; nothing waits on the broken group fsync any more.
    audit.record(entry(), { outcome: 'confirmed', latencyMs: 1 });
    await audit.durable();
    assert.equal(audit.tail(5).length, 2);
  });

  it('close() puts every row on disk and writes the digest', async () => {
    const { audit, digestFile, flushes } = grouped();
    const id = audit.begin(entry());
    // The outcome off the caller's path: still queued when close() comes, and committed by it.
    audit.finishLater(id, { outcome: 'confirmed', latencyMs: 1 });
    await audit.close();
    assert.ok(flushes.length >= 1);
    assert.equal(readDigest(digestFile).lastId, id + 1, 'the digest vouches for the outcome entry too');
    assert.equal(audit.get(id)!.outcome, 'confirmed');
  });
});
