// A full database (SQLITE_FULL) while calls come in: no actuator command
// goes out without its audit row, refusals still say why, and once there is
// room again calls work and the chain verifies. (A read-only or locked
// database before a call is covered in test/policy/through-pipeline.test.ts;
// here it turns read-only between the pending row and its completion.)
//
// "Full" is made with PRAGMA max_page_count on the bridge's own connection,
// after filling the file to that size: the same SQLITE_FULL error a full
// disk gives, without filling a disk.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OWNER } from '../helpers/home.js';
import { useHome } from '../helpers/use-home.js';

describe('audit write failure: a full database', () => {
  const home = useHome({ travelMs: 50 });
  let maxPages = 0;

  const fill = () => {
    const db = home.hearth.db;
    maxPages = db.pragma('max_page_count', { simple: true }) as number;
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 8}`);
    db.exec('CREATE TABLE IF NOT EXISTS filler (x BLOB)');
    // Big blobs, then smaller and smaller ones, until not even a few bytes fit anywhere.
    for (const size of [2000, 500, 100, 20, 1]) {
      const insert = db.prepare(`INSERT INTO filler (x) VALUES (zeroblob(${size}))`);
      for (let i = 0; ; i++) {
        assert.ok(i < 100_000, 'the database never filled up');
        try {
          insert.run();
        } catch (err) {
          assert.equal((err as { code?: string }).code, 'SQLITE_FULL');
          break;
        }
      }
    }
    // The audit table's own last page may still hold a row or two: fill it with real (chained) rows.
    for (let i = 0; ; i++) {
      assert.ok(i < 1000, 'the audit table never filled up');
      try {
        home.hearth.audit.record(
          {
            requestId: `filler-${Date.now()}-${i}`,
            principal: 'test:filler',
            session: null,
            runId: null,
            tool: 'filler',
            entityId: null,
            action: 'read',
            args: {},
            decision: 'none',
            ruleId: null,
            reason: 'filling the database',
          },
          { outcome: 'failed', error: 'filler row' },
        );
      } catch (err) {
        assert.match(String((err as Error).message), /full/i);
        break;
      }
    }
  };
  const unfill = () => {
    home.hearth.db.pragma(`max_page_count = ${maxPages}`);
    home.hearth.db.exec('DROP TABLE IF EXISTS filler');
  };

  it('an allowed actuator call is refused with the reason, and nothing is published', async () => {
    const sent = home.commands().length;
    fill();
    const rows = home.hearth.audit.tail(1)[0]?.id ?? 0;
    try {
      const res = await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
      assert.equal(res.isError, true);
      assert.match(res.text!, /^refused: the audit log cannot be written \(.*full.*\); nothing was sent$/i);
      // Refusals that would only be recorded still answer, with their own reason.
      const guest = await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, { id: 'chat:guest', roles: ['guest'] });
      assert.match(guest.text!, /^not allowed: /);
      const bad = await home.hearth.tools.call('kitchen_light', { action: 'turn_on', brightness: 9999 }, OWNER);
      assert.match(bad.text!, /^invalid arguments: /);
      // A call that needs an approval is held (or, if not even the request fits, fails): never sent.
      const held = await home.hearth.tools.call('garage_door', { action: 'open' }, OWNER);
      assert.equal(held.isError, true);
      assert.match(held.text!, /^needs approval: |full/i);
      // Reads need no write.
      assert.match((await home.hearth.tools.call('living_room_temperature', {}, OWNER)).text!, /°C/);
      await home.caughtUp();
      assert.equal(home.commands().length, sent, 'nothing published');
      assert.equal(home.hearth.audit.tail(1)[0]?.id ?? 0, rows, 'no row could be written');
      const [refusal] = home.logs.find(/audit unavailable; call refused/);
      assert.ok(refusal, 'the refusal is logged');
      // With the error itself (pino's serializer): its type, message and where it was thrown.
      const err = refusal.err as { type?: string; message?: string; stack?: string };
      assert.ok(err.type && err.type !== 'Object', `err is ${JSON.stringify(refusal.err)}`);
      assert.match(err.message ?? '', /full/i);
      assert.match(err.stack ?? '', /\n +at /);
    } finally {
      unfill();
    }
  });

  it('with room again, calls work and the chain verifies', async () => {
    const res = await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
    assert.match(res.text!, /^confirmed: /);
    assert.equal(home.hearth.audit.tail(1)[0]!.outcome, 'confirmed');
    assert.equal(home.hearth.audit.verify().ok, true);
  });

  it('unwritable between the pending row and its completion: the command went out, the row stays pending for the next start', async () => {
    // (The outcome is an entry appended after the call's: a read-only file refuses it.)
    const audit = home.hearth.audit;
    const begin = audit.begin.bind(audit);
    const beginDurable = audit.beginDurable.bind(audit);
    audit.begin = (entry) => {
      const id = begin(entry);
      home.hearth.db.pragma('query_only = ON');
      return id;
    };
    // The pipeline's path: the pending row is durable, then the file turns read-only.
    audit.beginDurable = async (entry) => {
      const id = await beginDurable(entry);
      home.hearth.db.pragma('query_only = ON');
      return id;
    };
    try {
      const res = await home.hearth.tools.call('living_room_lamp', { action: 'turn_off' }, OWNER);
      assert.match(res.text!, /^confirmed: /, 'the device did it, and the result says so');
      assert.equal(audit.tail(1)[0]!.outcome, 'pending', 'the completion could not be written');
      assert.ok(home.logs.find(/the outcome of a call could not be appended; it stays pending/).length >= 1);
    } finally {
      audit.begin = begin;
      audit.beginDurable = beginDurable;
      home.hearth.db.pragma('query_only = OFF');
    }
    // What the next start does with it (older than its timeout): interrupted, and the chain still verifies.
    const marked = home.hearth.sweepPending(Date.now() + 60_000);
    assert.equal(marked, 1);
    assert.equal(audit.tail(1)[0]!.outcome, 'interrupted');
    assert.equal(audit.verify().ok, true);
  });
});
