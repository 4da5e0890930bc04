// Migration 0014: a pending call's commit writes the log alone (its only key is the append order); the index
// readers look calls up by (request id, principal, entity, time) follows after the caller has its result. Until
// then the calls after the index are still found, a reused request id is still refused, and an index lost or
// behind (a power cut, another process) catches up from the log.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AuditError } from '../../src/audit/errors.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { entryHash, verify } from '../../src/audit/chain.js';
import { openDatabase } from '../../src/db/database.js';
import { waitFor } from '../helpers/wait.js';
import { auditEntry, tempDatabases } from './support.js';

const { root, open } = tempDatabases('hearth-audit-index-');
let n = 0;
function fresh() {
  const path = join(root, `db${++n}.db`);
  const db = openDatabase(path);
  open.push(db);
  return { db, path, audit: new SqliteAuditLog(db, {}) };
}

const indexed = (db: ReturnType<typeof openDatabase>) => (db.prepare('SELECT count(*) AS n FROM audit_call_index').get() as { n: number }).n;
/** The entries after the index: the log's tail every reader scans. */
const afterIndex = (db: ReturnType<typeof openDatabase>) =>
  (db.prepare('SELECT count(*) AS n FROM audit_entry WHERE id > (SELECT coalesce(max(id), 0) FROM audit_call_index)').get() as { n: number }).n;

describe('the audit call index (migration 0014)', () => {
  it('a pending row is committed into the log alone, yet found by request id, principal, entity and time at once', async () => {
    const { db, audit } = fresh();
    const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_entry' AND sql IS NOT NULL").all() as Array<{
      name: string;
    }>;
    assert.deepEqual(
      indexes.map((i) => i.name),
      ['audit_entry_outcome_of'],
      'the log has no index a call entry is written to (the outcome fold index holds outcome entries only)',
    );
    const id = await audit.beginDurable(auditEntry({ requestId: 'r-tail', principal: 'chat:bob', entityId: 'hall.light' }));
    assert.equal(indexed(db), 0, 'the index has not followed yet: the caller did not wait for it');
    assert.equal(audit.byRequestId('r-tail')?.id, id);
    assert.deepEqual(
      audit.list({ principal: 'chat:bob' }).map((r) => r.id),
      [id],
    );
    assert.deepEqual(
      audit.list({ entityId: 'hall.light', since: new Date(Date.now() - 60_000) }).map((r) => r.id),
      [id],
    );
    audit.finishLater(id, { outcome: 'confirmed', latencyMs: 3, echo: null });
    audit.flushOutcomes();
    assert.equal(indexed(db), 0, "the outcome's commit, which the caller waits for, leaves the index to a pause in the calls");
    assert.equal(audit.byRequestId('r-tail')?.outcome, 'confirmed');
    assert.throws(
      () => audit.begin(auditEntry({ requestId: 'r-tail' })),
      (err: unknown) => err instanceof AuditError && err.code === 'AUDIT_DUPLICATE',
      'a reused request id is refused before the index has it',
    );
    await waitFor('the index to follow the log once the calls pause', () => indexed(db) === 1);
    assert.equal(audit.list({ principal: 'chat:bob' }).length, 1, 'each call once, indexed or not');
    assert.throws(
      () => audit.begin(auditEntry({ requestId: 'r-tail' })),
      (err: unknown) => err instanceof AuditError && err.code === 'AUDIT_DUPLICATE',
    );
    await audit.close();
  });

  it('calls that never pause still leave readers a short tail: an outcome commit copies it once it is long', async () => {
    const { db, audit } = fresh();
    let longest = 0;
    for (let i = 0; i < 400; i++) {
      const id = await audit.beginDurable(auditEntry({ requestId: `busy-${i}` }));
      audit.finishLater(id, { outcome: 'confirmed', latencyMs: 1, echo: null });
      audit.flushOutcomes();
      longest = Math.max(longest, afterIndex(db));
    }
    assert.ok(indexed(db) >= 256, `the index followed while the calls went on (${indexed(db)} of 400 calls indexed)`);
    assert.ok(longest <= 258, `the log's tail after the index stayed short (${longest} entries at most)`);
    assert.equal(audit.byRequestId('busy-399')?.outcome, 'confirmed');
    assert.equal(audit.byRequestId('busy-0')?.outcome, 'confirmed');
    await audit.close();
    assert.equal(indexed(db), 400, 'closing the store brings the index up to the log');
  });

  it("another process's entries after the index are copied after this process's next outcome commit: the tail readers scan stays short", async () => {
    const { db, path, audit: a } = fresh();
    const otherDb = openDatabase(path);
    open.push(otherDb);
    const b = new SqliteAuditLog(otherDb, {});
    a.finish(a.begin(auditEntry({ requestId: 'mine-1' })), { outcome: 'confirmed', latencyMs: 2, echo: null });
    // `hearth approvals deny` on the same database, while the daemon's calls go on (synchronous from here: no
    // pause in the calls, so neither store's idle copy runs before the assertions).
    b.record(auditEntry({ requestId: 'theirs-1', principal: 'cli:owner', decision: 'deny', reason: 'denied by the owner' }), { outcome: 'denied' });
    a.finish(a.begin(auditEntry({ requestId: 'mine-2' })), { outcome: 'confirmed', latencyMs: 2, echo: null });
    assert.equal(indexed(db), 3, 'the outcome after another writer appended brought every call into the index');
    assert.equal(afterIndex(db), 1, "only the outcome just appended is left after the index (this process's own again)");
    assert.deepEqual(
      a.list({ principal: 'cli:owner' }).map((r) => r.requestId),
      ['theirs-1'],
    );
    assert.throws(
      () => a.begin(auditEntry({ requestId: 'theirs-1' })),
      (err: unknown) => err instanceof AuditError && err.code === 'AUDIT_DUPLICATE',
    );
    await a.close();
    await b.close();
  });

  it("a disk too full for the index's copy still takes the outcome after which the copy was due", async () => {
    const { db, audit } = fresh();
    // Calls that never paused: the tail after the index is long, so the next outcome's commit copies it.
    const ids: number[] = [];
    for (let i = 0; i < 300; i++) ids.push(audit.begin(auditEntry({ requestId: `full-${i}` })));
    // Room for a few more pages (an outcome entry), not for 300 calls in the index's five b-trees: SQLITE_FULL, as a
    // nearly full disk gives it.
    const maxPages = db.pragma('max_page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 4}`);
    try {
      audit.finish(ids[0]!, { outcome: 'confirmed', latencyMs: 4, echo: null });
      assert.equal(audit.get(ids[0]!)?.outcome, 'confirmed', 'the outcome is in the log; only the derived index waits');
      assert.equal(indexed(db), 0);
      assert.equal(audit.byRequestId('full-299')?.outcome, 'pending', 'the calls after the index are still found');
      assert.throws(
        () => audit.begin(auditEntry({ requestId: 'full-7' })),
        (err: unknown) => err instanceof AuditError && err.code === 'AUDIT_DUPLICATE',
      );
    } finally {
      db.pragma(`max_page_count = ${maxPages}`);
    }
    await audit.close();
    assert.equal(indexed(db), 300, 'with room again the index caught up');
    assert.equal(verify(db).ok, true);
  });

  it('a next start on a disk too full for the index still marks the calls left pending interrupted', async () => {
    const { db, path, audit } = fresh();
    const done: number[] = [];
    for (let i = 0; i < 300; i++) done.push(audit.begin(auditEntry({ requestId: `start-${i}` })));
    for (const id of done.slice(2)) audit.finish(id, { outcome: 'confirmed', latencyMs: 3, echo: null });
    await audit.close();
    // The index is derived and not fsynced: a power cut can leave it far behind the log.
    db.prepare('DELETE FROM audit_call_index').run();
    db.exec('VACUUM'); // its pages given back: the copy cannot reuse them
    const reopened = openDatabase(path);
    open.push(reopened);
    // Room for the two interrupted outcomes, not for 300 calls in the index's five b-trees.
    const maxPages = reopened.pragma('max_page_count', { simple: true }) as number;
    reopened.pragma(`max_page_count = ${(reopened.pragma('page_count', { simple: true }) as number) + 4}`);
    try {
      // The next start, a minute later (its clock: the calls are older than its cutoff however fast the test runs).
      const again = new SqliteAuditLog(reopened, { now: () => new Date(Date.now() + 60_000) });
      assert.equal(indexed(reopened), 0, 'no room for the copy at start');
      assert.equal(again.markInterrupted(0), 2, 'the calls left pending are marked interrupted all the same');
      assert.deepEqual(
        done.slice(0, 3).map((id) => again.get(id)?.outcome),
        ['interrupted', 'interrupted', 'confirmed'],
      );
      assert.equal(again.byRequestId('start-299')?.outcome, 'confirmed', 'readers find the calls after the index');
      reopened.pragma(`max_page_count = ${maxPages}`);
      // With room again, the index follows the log (as it does when the calls pause).
      again.indexCalls();
      assert.equal(indexed(reopened), 300, 'with room again the index caught up');
      await again.close();
    } finally {
      reopened.pragma(`max_page_count = ${maxPages}`);
    }
    assert.equal(verify(reopened).ok, true);
  });

  it('a request id another process appended after the index is refused too (the tail is read, not guessed)', async () => {
    const { path, audit: a } = fresh();
    const otherDb = openDatabase(path);
    open.push(otherDb);
    const b = new SqliteAuditLog(otherDb, {});
    const dup = (fn: () => unknown) => assert.throws(fn, (err: unknown) => err instanceof AuditError && err.code === 'AUDIT_DUPLICATE');
    const first = a.begin(auditEntry({ requestId: 'shared-1' }));
    dup(() => b.begin(auditEntry({ requestId: 'shared-1' })));
    const second = b.begin(auditEntry({ requestId: 'shared-2' }));
    dup(() => a.begin(auditEntry({ requestId: 'shared-2' })));
    assert.equal(a.byRequestId('shared-2')?.id, second);
    assert.equal(b.byRequestId('shared-1')?.id, first);
    await a.close();
    await b.close();
  });

  it('a group of pending rows refuses request ids taken in the index, after it, by another process, or earlier in the group', async () => {
    const { path, audit } = fresh();
    const otherDb = openDatabase(path);
    open.push(otherDb);
    const other = new SqliteAuditLog(otherDb, {});
    const indexedId = await audit.beginDurable(auditEntry({ requestId: 'g-indexed' }));
    audit.finishLater(indexedId, { outcome: 'confirmed', latencyMs: 1, echo: null });
    audit.flushOutcomes();
    await audit.beginDurable(auditEntry({ requestId: 'g-tail' }));
    const group = (ids: string[]) => Promise.allSettled(ids.map((requestId) => audit.beginDurable(auditEntry({ requestId }))));
    const refused = (r: PromiseSettledResult<number>) => r.status === 'rejected' && (r.reason as AuditError).code === 'AUDIT_DUPLICATE';
    const first = await group(['g-new-1', 'g-indexed', 'g-tail', 'g-new-2', 'g-new-1']);
    assert.deepEqual(first.map(refused), [false, true, true, false, true]);
    // Another process appends after the index: this process's list no longer answers for the tail; the log does.
    other.begin(auditEntry({ requestId: 'g-other' }));
    const second = await group(['g-new-3', 'g-other', 'g-new-4']);
    assert.deepEqual(second.map(refused), [false, true, false]);
    assert.equal(verify(otherDb).ok, true);
    await audit.close();
    await other.close();
  });

  it('a call another process finished meanwhile takes no second outcome: what this process knows of its own pending calls gives way to the log', async () => {
    const { path, audit: a } = fresh();
    const otherDb = openDatabase(path);
    open.push(otherDb);
    // A daemon starting a minute later: its clock, not the time the test takes, puts the calls before its cutoff
    // (in the same millisecond as the calls, `markInterrupted(0)` found none).
    const b = new SqliteAuditLog(otherDb, { now: () => new Date(Date.now() + 60_000) });
    const notPending = (fn: () => unknown) => assert.throws(fn, (err: unknown) => err instanceof AuditError && err.code === 'AUDIT_NOT_PENDING');
    // This process's own calls, pending: their outcomes are appended without reading them back.
    const ids = await Promise.all(['p-1', 'p-2', 'p-3'].map((requestId) => a.beginDurable(auditEntry({ requestId }))));
    a.finish(ids[0]!, { outcome: 'confirmed', latencyMs: 2, echo: null });
    // Another process (a daemon starting on the same database) marks what is still pending interrupted.
    assert.equal(b.markInterrupted(0), 2);
    notPending(() => a.finish(ids[1]!, { outcome: 'confirmed', latencyMs: 2, echo: null }));
    a.finishLater(ids[2]!, { outcome: 'confirmed', latencyMs: 2, echo: null });
    a.flushOutcomes();
    assert.equal(a.byRequestId('p-2')?.outcome, 'interrupted');
    assert.equal(a.byRequestId('p-3')?.outcome, 'interrupted', 'the late outcome was refused, not appended as a second one');
    const outcomes = otherDb.prepare("SELECT call_id AS id, count(*) AS n FROM audit_entry WHERE kind = 'outcome' GROUP BY call_id").all() as Array<{
      id: number;
      n: number;
    }>;
    assert.deepEqual(
      outcomes.map((o) => o.n),
      [1, 1, 1],
      'one outcome entry per call',
    );
    // And this process's calls begun after that are its own again: the same answers either way.
    const later = await a.beginDurable(auditEntry({ requestId: 'p-4' }));
    a.finish(later, { outcome: 'failed', latencyMs: 1, echo: null, error: 'no echo' });
    notPending(() => a.finish(later, { outcome: 'confirmed', latencyMs: 1, echo: null }));
    assert.equal(a.byRequestId('p-4')?.outcome, 'failed');
    assert.equal(verify(otherDb).ok, true);
    await a.close();
    await b.close();
  });

  it("a grouped call's members are found by their request id's prefix, indexed or not, and only by it", async () => {
    const { audit } = fresh();
    assert.equal(audit.anyRequestStartingWith('grp-1#'), false);
    const id = await audit.beginDurable(auditEntry({ requestId: 'grp-1#kitchen.light' }));
    assert.equal(audit.anyRequestStartingWith('grp-1#'), true, 'after the index');
    assert.equal(audit.anyRequestStartingWith('grp-10#'), false);
    assert.equal(audit.anyRequestStartingWith('grp-#'), false);
    audit.finishLater(id, { outcome: 'confirmed', latencyMs: 1, echo: null });
    audit.flushOutcomes();
    assert.equal(audit.anyRequestStartingWith('grp-1#'), true, 'in the index');
    assert.equal(audit.anyRequestStartingWith('grp-1$'), false);
    assert.equal(audit.anyRequestStartingWith('grp-'), true);
    await audit.close();
  });

  it('an index that lost its tail (or was never written) catches up from the log at the next start; verify is untouched', async () => {
    const { db, path, audit } = fresh();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(audit.begin(auditEntry({ principal: `chat:p${i % 2}` })));
    audit.record(auditEntry({ principal: 'chat:p0', decision: 'deny', reason: 'no' }), { outcome: 'denied' });
    await audit.close();
    db.exec('DELETE FROM audit_call_index WHERE id > 2');
    assert.equal(audit.list({ principal: 'chat:p0' }).length, 4, 'the entries after the index are read from the log');
    const reopened = openDatabase(path);
    open.push(reopened);
    // The next start, a minute later (its clock: the calls are older than its cutoff however fast the test runs).
    const again = new SqliteAuditLog(reopened, { now: () => new Date(Date.now() + 60_000) });
    assert.equal(indexed(db), 6, 'the next start copied what was missing');
    assert.equal(again.list({ principal: 'chat:p1' }).length, 2);
    assert.equal(again.markInterrupted(0), 5, 'the pending calls of the earlier run are marked interrupted');
    assert.equal(verify(db).ok, true);
    await again.close();
  });

  it('migration 0014 moves a log written before it: its calls are indexed, ids and the id high-water mark kept', async () => {
    const path = join(root, `db${++n}.db`);
    const before = openDatabase(path, { upTo: 13 });
    // Three entries written at the schema before 0014 (two calls, an outcome), chained; then the tail cut.
    const none = {
      v: 2,
      call_id: null,
      request_id: null,
      principal: null,
      session: null,
      run_id: null,
      tool: null,
      entity_id: null,
      action: null,
      args: null,
      decision: null,
      rule_id: null,
      reason: null,
      outcome: null,
      error: null,
      latency_ms: null,
      echo: null,
      completed_at: null,
      done_hash: null,
    };
    const call = (id: number, requestId: string, principal: string) => ({
      ...none,
      id,
      at: `2026-06-01T12:00:0${id}.000Z`,
      kind: 'call',
      request_id: requestId,
      principal,
      tool: 'lamp',
      entity_id: 'a.lamp',
      action: 'turn_on',
      args: '{}',
      decision: 'allow',
      reason: 'ok',
      outcome: 'pending',
    });
    const entries = [
      call(1, 'old-1', 'chat:old'),
      call(2, 'old-2', 'chat:other'),
      { ...none, id: 3, at: '2026-06-01T12:00:03.000Z', kind: 'outcome', call_id: 1, outcome: 'confirmed' },
    ];
    const insert = before.prepare(
      `INSERT INTO audit_entry (${[...Object.keys(entries[0]!), 'prev_hash', 'hash'].join(', ')}) VALUES (${[...Object.keys(entries[0]!), 'prev_hash', 'hash'].map((k) => `@${k}`).join(', ')})`,
    );
    let prev = '0'.repeat(64);
    for (const e of entries) {
      const hash = entryHash(prev, e as never);
      insert.run({ ...e, prev_hash: prev, hash });
      prev = hash;
    }
    before.exec('DELETE FROM audit_entry WHERE id = 3');
    before.close();
    const after = openDatabase(path);
    open.push(after);
    assert.deepEqual(after.prepare('SELECT id, request_id FROM audit_call_index ORDER BY id').all(), [
      { id: 1, request_id: 'old-1' },
      { id: 2, request_id: 'old-2' },
    ]);
    const audit = new SqliteAuditLog(after, {});
    assert.deepEqual(
      audit.list({ principal: 'chat:old' }).map((r) => r.id),
      [1],
    );
    assert.throws(
      () => audit.begin(auditEntry({ requestId: 'old-2' })),
      (err: unknown) => err instanceof AuditError && err.code === 'AUDIT_DUPLICATE',
    );
    assert.equal(audit.begin(auditEntry({ requestId: 'new-1' })), 4, 'a new entry is numbered after the cut one (the high-water mark survived)');
    await audit.close();
  });
});
