// The audit store on real SQLite files: begin/finish/record, idempotency,
// interrupted calls, fail-closed writes, queries, group commit.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { AuditError } from '../../src/audit/errors.js';
import type { StoredAuditRow } from '../../src/audit/row.js';
import { INTERRUPTED_ERROR, SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { auditEntry, tempDatabases } from './support.js';
import { logSink } from '../helpers/log-sink.js';

const { root, open } = tempDatabases('hearth-audit-store-');

let n = 0;
function fresh(options: { now?: () => Date; digest?: boolean } = {}) {
  const dir = join(root, `db${++n}`);
  const path = join(dir, 'hearth.db');
  const db = openDatabase(path);
  open.push(db);
  const sink = logSink('debug');
  const digestFile = options.digest ? join(dir, 'audit.digest.json') : undefined;
  const audit = new SqliteAuditLog(db, { log: sink.log, now: options.now, digestFile });
  return { dir, path, db, audit, sink, digestFile };
}

const entry = auditEntry;

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AuditError, `expected an AuditError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected a throw');
}

describe('SqliteAuditLog', () => {
  it('begin writes a pending row, finish completes it, with an event and a log line', () => {
    const { audit, sink, db } = fresh();
    const events: StoredAuditRow[] = [];
    audit.on('row', (r) => events.push(r));

    const id = audit.begin(entry({ requestId: 'r-begin', args: { brightness: 80, color: { r: 1, b: 2 } } }));
    const pending = audit.get(id)!;
    assert.equal(pending.outcome, 'pending');
    assert.equal(pending.requestId, 'r-begin');
    assert.deepEqual(pending.args, { brightness: 80, color: { b: 2, r: 1 } });
    assert.equal(pending.prevHash, '0'.repeat(64));
    assert.match(pending.hash, /^[0-9a-f]{64}$/);
    assert.equal(pending.doneHash, null);
    assert.equal(pending.completedAt, null);
    assert.match(pending.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(events.length, 0, 'no event for a pending row');
    // Stored canonically.
    assert.equal((db.prepare('SELECT args FROM audit WHERE id = ?').get(id) as { args: string }).args, '{"brightness":80,"color":{"b":2,"r":1}}');

    audit.finish(id, { outcome: 'confirmed', latencyMs: 42, echo: '{"state":"ON"}' });
    const done = audit.get(id)!;
    assert.equal(done.outcome, 'confirmed');
    assert.equal(done.latencyMs, 42);
    assert.equal(done.echo, '{"state":"ON"}');
    assert.equal(done.error, null);
    assert.match(done.doneHash!, /^[0-9a-f]{64}$/);
    assert.ok(done.completedAt! >= done.at);
    assert.equal(done.hash, pending.hash, 'completion does not touch the insert hash');

    assert.equal(events.length, 1);
    assert.deepEqual(events[0], done);
    const lines = sink.lines.filter((l) => l.audit === id && l.level === 30);
    assert.equal(lines.length, 1);
    assert.equal(lines[0].principal, 'chat:alice');
    assert.equal(lines[0].tool, 'living_room_lamp');
    assert.equal(lines[0].entity, 'living_room.lamp');
    assert.equal(lines[0].outcome, 'confirmed');
    assert.equal(lines[0].latencyMs, 42);

    assert.equal(
      codeOf(() => audit.finish(id, { outcome: 'failed' })),
      'AUDIT_NOT_PENDING',
    );
    assert.equal(
      codeOf(() => audit.finish(9999, { outcome: 'failed' })),
      'AUDIT_NOT_FOUND',
    );
    assert.equal(
      codeOf(() => audit.finish(id, { outcome: 'pending' as never })),
      'AUDIT_BAD_ENTRY',
    );
    assert.equal(audit.verify().ok, true);
  });

  it('record writes a finished row at once', () => {
    const { audit } = fresh();
    const events: StoredAuditRow[] = [];
    audit.on('row', (r) => events.push(r));
    const id = audit.record(entry({ decision: 'deny', ruleId: null, reason: 'default: deny' }), { outcome: 'denied', error: 'not allowed' });
    const r = audit.get(id)!;
    assert.equal(r.outcome, 'denied');
    assert.equal(r.error, 'not allowed');
    assert.equal(r.ruleId, null);
    assert.equal(r.latencyMs, null);
    assert.equal(r.completedAt, r.at);
    assert.ok(r.doneHash);
    assert.deepEqual(events, [r]);
    assert.equal(audit.verify().ok, true);
  });

  it('one row per request id: byRequestId finds it, a second begin is refused', () => {
    const { audit, db } = fresh();
    const id = audit.begin(entry({ requestId: 'same' }));
    assert.equal(audit.byRequestId('same')?.id, id);
    assert.equal(audit.byRequestId('other'), undefined);
    let caught: AuditError | undefined;
    try {
      audit.begin(entry({ requestId: 'same' }));
    } catch (err) {
      caught = err as AuditError;
    }
    assert.equal(caught?.code, 'AUDIT_DUPLICATE');
    assert.equal(caught?.existingId, id);
    assert.equal(
      codeOf(() => audit.record(entry({ requestId: 'same' }), { outcome: 'denied' })),
      'AUDIT_DUPLICATE',
    );
    assert.equal((db.prepare('SELECT count(*) AS n FROM audit_entry').get() as { n: number }).n, 1);
    // The refused attempts left no trace in the chain: the outcome is the next entry, then the next call.
    audit.finish(id, { outcome: 'confirmed' });
    assert.equal(audit.record(entry(), { outcome: 'failed', error: 'no broker' }), id + 2);
    assert.equal(audit.verify().ok, true);
  });

  it('markInterrupted completes old pending rows only', () => {
    let t = Date.parse('2025-01-01T12:00:00.000Z');
    const { audit } = fresh({ now: () => new Date(t) });
    const events: StoredAuditRow[] = [];
    audit.on('row', (r) => events.push(r));
    const old = audit.begin(entry());
    const finished = audit.begin(entry());
    audit.finish(finished, { outcome: 'confirmed', latencyMs: 5 });
    t += 60_000;
    const recent = audit.begin(entry());
    t += 10_000;
    assert.equal(audit.markInterrupted(30_000), 1);
    assert.equal(audit.get(old)!.outcome, 'interrupted');
    assert.equal(audit.get(old)!.error, INTERRUPTED_ERROR);
    assert.equal(audit.get(old)!.completedAt, '2025-01-01T12:01:10.000Z');
    assert.equal(audit.get(recent)!.outcome, 'pending');
    assert.equal(audit.get(finished)!.outcome, 'confirmed');
    assert.deepEqual(
      events.map((e) => [e.id, e.outcome]),
      [
        [finished, 'confirmed'],
        [old, 'interrupted'],
      ],
    );
    assert.equal(audit.markInterrupted(0), 1);
    assert.equal(audit.get(recent)!.outcome, 'interrupted');
    assert.equal(audit.markInterrupted(0), 0);
    assert.equal(
      codeOf(() => audit.finish(old, { outcome: 'confirmed' })),
      'AUDIT_NOT_PENDING',
    );
    const v = audit.verify();
    // Three calls and three outcome entries.
    assert.deepEqual([v.ok, v.rows, v.pending], [true, 6, 0]);
  });

  it('fails closed on a read-only connection (AUDIT_UNAVAILABLE)', () => {
    const { audit, path } = fresh();
    const first = audit.begin(entry());

    const ro = new Database(path, { readonly: true });
    open.push(ro);
    const roAudit = new SqliteAuditLog(ro);
    let caught: AuditError | undefined;
    try {
      roAudit.begin(entry());
    } catch (err) {
      caught = err as AuditError;
    }
    assert.ok(caught instanceof AuditError);
    assert.equal(caught.code, 'AUDIT_UNAVAILABLE');
    assert.equal(caught.sqliteCode, 'SQLITE_READONLY');
    assert.match(caught.message, /^audit log unavailable: .*readonly/);
    assert.equal(
      codeOf(() => roAudit.record(entry(), { outcome: 'denied' })),
      'AUDIT_UNAVAILABLE',
    );
    assert.equal(
      codeOf(() => roAudit.finish(first, { outcome: 'confirmed' })),
      'AUDIT_UNAVAILABLE',
    );
    // Reading still works.
    assert.equal(roAudit.get(first)?.outcome, 'pending');

    const q = new Database(path);
    open.push(q);
    q.pragma('query_only = ON');
    const qAudit = new SqliteAuditLog(q);
    assert.equal(
      codeOf(() => qAudit.begin(entry())),
      'AUDIT_UNAVAILABLE',
    );

    const closed = new Database(path);
    const closedAudit = new SqliteAuditLog(closed);
    closed.close();
    assert.equal(
      codeOf(() => closedAudit.begin(entry())),
      'AUDIT_UNAVAILABLE',
    );

    assert.equal(audit.tail(10).length, 1, 'nothing was written');
  });

  it('fails closed while another connection holds the write lock (SQLITE_BUSY)', () => {
    const { audit, path } = fresh();
    const other = new Database(path);
    open.push(other);
    other.pragma('busy_timeout = 0');
    const db2 = new Database(path);
    open.push(db2);
    db2.pragma('busy_timeout = 0');
    const a2 = new SqliteAuditLog(db2);
    other.prepare('BEGIN IMMEDIATE').run();
    try {
      let caught: AuditError | undefined;
      try {
        a2.begin(entry());
      } catch (err) {
        caught = err as AuditError;
      }
      assert.equal(caught?.code, 'AUDIT_UNAVAILABLE');
      assert.equal(caught?.sqliteCode, 'SQLITE_BUSY');
    } finally {
      other.prepare('ROLLBACK').run();
    }
    a2.begin(entry());
    assert.equal(audit.tail(5).length, 1);
  });

  it('rejects entries it cannot store (AUDIT_BAD_ENTRY)', () => {
    const { audit } = fresh();
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    assert.equal(
      codeOf(() => audit.begin(entry({ args: circular }))),
      'AUDIT_BAD_ENTRY',
    );
    assert.equal(
      codeOf(() => audit.begin(entry({ args: { n: 10n } }))),
      'AUDIT_BAD_ENTRY',
    );
    assert.equal(
      codeOf(() => audit.begin(entry({ requestId: '' }))),
      'AUDIT_BAD_ENTRY',
    );
    assert.equal(
      codeOf(() => audit.begin(entry({ principal: 5 as never }))),
      'AUDIT_BAD_ENTRY',
    );
    assert.equal(audit.tail(5).length, 0);
  });

  it('on a WAL database, fsyncs the write-ahead log itself before a write returns (synchronous=FULL semantics, group commit possible)', () => {
    const { db, audit } = fresh();
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(db.pragma('synchronous', { simple: true }), 1, 'NORMAL: the store does the fsync');
    const before = audit.fsyncs;
    audit.begin(entry());
    assert.equal(audit.fsyncs, before + 1, 'one fsync before begin() returned');
  });

  it('finishLater: outcomes leave the path of the caller and are committed together on the next turn, or once no command travels; a read commits them first', async () => {
    const { audit, path } = fresh();
    const events: StoredAuditRow[] = [];
    audit.on('row', (r) => events.push(r));
    const a = audit.begin(entry());
    const b = audit.begin(entry());
    audit.finishLater(a, { outcome: 'confirmed', latencyMs: 3 });
    audit.finishLater(b, { outcome: 'unconfirmed', error: 'no matching state within 3 s' });
    // Another process sees both calls pending until the commit: what a crash now would leave.
    const other = new Database(path, { readonly: true });
    open.push(other);
    const outcomes = () => (other.prepare('SELECT outcome FROM audit ORDER BY id').all() as Array<{ outcome: string }>).map((r) => r.outcome);
    assert.deepEqual(outcomes(), ['pending', 'pending']);
    assert.equal(events.length, 0);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(outcomes(), ['confirmed', 'unconfirmed']);
    assert.deepEqual(
      events.map((e) => [e.id, e.outcome]),
      [
        [a, 'confirmed'],
        [b, 'unconfirmed'],
      ],
    );
    // Reads in this process see their own writes at once.
    const c = audit.begin(entry());
    audit.finishLater(c, { outcome: 'confirmed' });
    assert.equal(audit.get(c)!.outcome, 'confirmed');
    // A follow-up to the unconfirmed call: one more entry, nothing edited.
    audit.followUp(b, { outcome: 'confirmed', error: 'confirmed late, after 9 s' });
    assert.deepEqual([audit.get(b)!.outcome, audit.get(b)!.error], ['confirmed', 'confirmed late, after 9 s']);
    assert.equal(
      codeOf(() => audit.followUp(b, { outcome: 'confirmed' })),
      'AUDIT_NOT_PENDING',
    );
    assert.equal(
      codeOf(() => audit.followUp(c, { outcome: 'confirmed' })),
      'AUDIT_NOT_PENDING',
    );
    const v = audit.verify();
    assert.deepEqual([v.ok, v.rows, v.pending], [true, 7, 0]);

    // While another call's command travels (its pending row granted, no outcome yet), an outcome waits: its
    // commit would delay that call's echo. It goes once no command travels.
    const travelling = await audit.beginDurable(entry());
    const d = audit.begin(entry());
    audit.finishLater(d, { outcome: 'confirmed' });
    await new Promise((resolve) => setImmediate(resolve));
    const outcomeOf = (id: number) => (other.prepare('SELECT outcome FROM audit WHERE id = ?').get(id) as { outcome: string }).outcome;
    assert.equal(outcomeOf(d), 'pending', 'not written while a command travels');
    const written = new Promise((resolve) => audit.on('row', (r) => r.id === d && resolve(undefined)));
    audit.finishLater(travelling, { outcome: 'confirmed' });
    await written;
    assert.deepEqual([outcomeOf(d), outcomeOf(travelling)], ['confirmed', 'confirmed']);
  });

  it('continues the chain across a restart', () => {
    const { audit, path, db } = fresh();
    audit.record(entry(), { outcome: 'confirmed', latencyMs: 1 });
    const pending = audit.begin(entry());
    db.close();
    const db2 = openDatabase(path);
    open.push(db2);
    // The next start, a minute later: its clock, not the time the test takes, puts the pending call before its cutoff.
    const audit2 = new SqliteAuditLog(db2, { now: () => new Date(Date.now() + 60_000) });
    assert.equal(audit2.markInterrupted(0), 1);
    assert.equal(audit2.get(pending)!.outcome, 'interrupted');
    audit2.record(entry(), { outcome: 'denied' });
    const v = audit2.verify();
    // Entries: the recorded call, the pending one, its interrupted outcome, the denied call.
    assert.deepEqual([v.ok, v.rows, v.lastId], [true, 4, 4]);
  });

  it('stores what it hashes: odd text verifies', () => {
    const { audit } = fresh();
    const id = audit.record(entry({ reason: 'lone \uD800 surrogate, NUL \u0000 and ünïcødé 🔒', args: { ключ: '\uDC00', z: [1, null, 'x'] } }), {
      outcome: 'failed',
      error: 'e\r\n"quoted"',
      echo: '\uD83D',
      latencyMs: 12.6,
    });
    const r = audit.get(id)!;
    assert.equal(r.reason, 'lone \uFFFD surrogate, NUL \u0000 and ünïcødé 🔒');
    assert.equal(r.echo, '\uFFFD');
    assert.equal(r.latencyMs, 13);
    assert.equal(audit.verify().ok, true);
  });

  it('tail, get and list with filters and paging', () => {
    let t = Date.parse('2025-03-01T00:00:00.000Z');
    const { audit } = fresh({ now: () => new Date((t += 1000)) });
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) {
      const principal = i % 2 ? 'voice:kitchen' : 'chat:alice';
      const entityId = i % 3 ? 'front_door.lock' : 'hall.light';
      ids.push(audit.record(entry({ principal, entityId }), { outcome: i === 4 ? 'denied' : 'confirmed' }));
    }
    assert.deepEqual(
      audit.tail(3).map((r) => r.id),
      ids.slice(-3),
    );
    assert.equal(audit.tail(0).length, 0);
    assert.equal(audit.get(ids[2])?.id, ids[2]);
    assert.equal(audit.get(12345), undefined);

    assert.deepEqual(
      audit.list({ principal: 'voice:kitchen' }).map((r) => r.id),
      [ids[1], ids[3], ids[5], ids[7], ids[9]],
    );
    assert.deepEqual(
      audit.list({ entityId: 'hall.light' }).map((r) => r.id),
      [ids[0], ids[3], ids[6], ids[9]],
    );
    assert.deepEqual(
      audit.list({ outcome: 'denied' }).map((r) => r.id),
      [ids[4]],
    );
    assert.deepEqual(
      audit.list({ principal: 'chat:alice', entityId: 'front_door.lock' }).map((r) => r.id),
      [ids[2], ids[4], ids[8]],
    );
    const at = audit.get(ids[3])!.at;
    const until = audit.get(ids[6])!.at;
    assert.deepEqual(
      audit.list({ since: at, until: new Date(until) }).map((r) => r.id),
      [ids[3], ids[4], ids[5]],
    );
    // Paging forward and backward.
    const p1 = audit.list({ limit: 4 });
    const p2 = audit.list({ limit: 4, afterId: p1[p1.length - 1].id });
    assert.deepEqual(
      [...p1, ...p2].map((r) => r.id),
      ids.slice(0, 8),
    );
    assert.deepEqual(
      audit.list({ order: 'desc', limit: 2, beforeId: ids[5] }).map((r) => r.id),
      [ids[4], ids[3]],
    );
  });

  it('group() commits several writes at once, events after the commit; a throw rolls all back', () => {
    const { audit } = fresh();
    const events: number[] = [];
    audit.on('row', (r) => events.push(r.id));
    const a = audit.begin(entry());
    const b = audit.begin(entry());
    audit.group(() => {
      audit.finish(a, { outcome: 'confirmed' });
      audit.finish(b, { outcome: 'unconfirmed' });
      assert.deepEqual(events, [], 'no event before the commit');
    });
    assert.deepEqual(events, [a, b]);

    assert.throws(
      () =>
        audit.group(() => {
          audit.record(entry(), { outcome: 'denied' });
          throw new Error('boom');
        }),
      /boom/,
    );
    assert.deepEqual(events, [a, b]);
    assert.equal(audit.tail(10).length, 2);
    audit.record(entry(), { outcome: 'denied' });
    assert.equal(audit.verify().ok, true);
  });

  it('a throwing row listener does not fail the write', () => {
    const { audit, sink } = fresh();
    audit.on('row', () => {
      throw new Error('listener broke');
    });
    const id = audit.record(entry(), { outcome: 'confirmed' });
    assert.equal(audit.get(id)?.outcome, 'confirmed');
    assert.equal(sink.find(/row listener threw/).length, 1);
  });

  it('opens with the real migrations directory', () => {
    const db = openDatabase(join(root, 'real', 'hearth.db'));
    open.push(db);
    const audit = new SqliteAuditLog(db);
    audit.record(entry(), { outcome: 'denied' });
    assert.equal(audit.verify().ok, true);
  });
});
