// WalSync on a real WAL database file: fsyncs run off the main thread, and
// every caller that asks while one runs shares the next one (group commit).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { WalSync } from '../../src/db/wal-sync.js';
import { waitFor } from '../helpers/wait.js';

const root = mkdtempSync(join(tmpdir(), 'hearth-wal-sync-'));
const dbs: Database.Database[] = [];
after(() => {
  for (const db of dbs) db.close();
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
function walDb(): { path: string; write: () => void } {
  const path = join(root, `w${++n}.db`);
  const db = new Database(path);
  dbs.push(db);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (x TEXT)');
  const insert = db.prepare('INSERT INTO t VALUES (?)');
  return { path, write: () => insert.run('row') };
}

/** The real fdatasync, held back until release(): the test decides when a flush ends. */
function gatedDatasync() {
  const started: number[] = [];
  let releaseAll: () => void = () => undefined;
  let gate = new Promise<void>((r) => (releaseAll = r));
  return {
    started,
    release() {
      releaseAll();
      gate = new Promise<void>((r) => (releaseAll = r));
    },
    datasync: async (h: FileHandle) => {
      started.push(Date.now());
      await gate;
      await h.datasync();
    },
  };
}

describe('WalSync', () => {
  it('fsyncs the write-ahead log and resolves', async () => {
    const { path, write } = walDb();
    write();
    const ws = new WalSync(path);
    assert.equal(ws.walPath, `${path}-wal`);
    await ws.sync();
    assert.equal(ws.flushes, 1);
    await ws.close();
  });

  it('callers that ask while an fsync runs share the next one', async () => {
    const { path, write } = walDb();
    const gated = gatedDatasync();
    const ws = new WalSync(path, { datasync: gated.datasync });
    write();
    const first = ws.sync();
    const order: string[] = [];
    void first.then(() => order.push('first'));
    // Ten commits while the first fsync runs: it may have started before them, so they need another one; one is enough.
    const later: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      write();
      later.push(ws.sync());
    }
    assert.ok(
      later.every((p) => p === later[0]),
      'one shared promise for every caller that waited',
    );
    void later[0]!.then(() => order.push('later'));
    // Released only once it has started: on a busy machine opening the WAL can take a while.
    await waitFor('the first fsync started', () => gated.started.length >= 1);
    assert.equal(gated.started.length, 1, 'the second fsync waits for the first');
    gated.release();
    await first;
    await waitFor('the second fsync to start', () => gated.started.length === 2);
    assert.deepEqual(order, ['first'], 'the later callers are not told before their own fsync');
    gated.release();
    await Promise.all(later);
    assert.deepEqual(order, ['first', 'later']);
    assert.equal(ws.flushes, 2);
    await ws.close();
  });

  it('a failed fsync rejects the callers that waited for it, and the next sync() tries again', async () => {
    const { path, write } = walDb();
    let fail = true;
    const ws = new WalSync(path, {
      datasync: async (h) => {
        if (fail) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
        await h.datasync();
      },
    });
    write();
    await assert.rejects(ws.sync(), /EIO/);
    fail = false;
    await ws.sync();
    assert.equal(ws.flushes, 1);
    await ws.close();
  });

  it('close() waits for the fsync asked for, and later calls are refused', async () => {
    const { path, write } = walDb();
    const gated = gatedDatasync();
    const ws = new WalSync(path, { datasync: gated.datasync });
    write();
    let synced = false;
    void ws.sync().then(() => (synced = true));
    const closed = ws.close();
    await waitFor('the fsync started', () => gated.started.length === 1);
    assert.equal(synced, false, 'close() is still waiting for it');
    gated.release();
    await closed;
    assert.equal(synced, true);
    await assert.rejects(ws.sync(), /closed/);
  });
});
