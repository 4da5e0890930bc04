// Approvals for confirm rules against a real SQLite file: bound to one exact
// call, single use, expiring.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { APPROVAL_DENIED_ACTION, SqliteApprovals, argsHash, canonicalJson, type Approval } from '../../src/policy/approvals.js';
import { tempDb, type TempDb } from './helpers.js';
import { waitFor } from '../helpers/wait.js';

let t: TempDb;
let clock: number;
let approvals: SqliteApprovals;

const call: { principal: string; tool: string; args: Record<string, unknown> } = {
  principal: 'chat:alice',
  tool: 'front_door_lock',
  args: { action: 'unlock', options: { b: 2, a: 1 } },
};
const ask = (over: Partial<typeof call> = {}) => approvals.request({ ...call, ...over, reason: 'rule #3 requires confirmation' });

beforeEach(() => {
  t = tempDb();
  clock = Date.UTC(2024, 0, 1, 12);
  approvals = new SqliteApprovals(t.db, { now: () => clock });
});
afterEach(() => t.close());

describe('canonical JSON', () => {
  it('sorts keys at every level', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, u: undefined }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    assert.equal(argsHash({ x: 1, y: 2 }), argsHash({ y: 2, x: 1 }));
    assert.notEqual(argsHash({ x: 1 }), argsHash({ x: '1' }));
    assert.match(argsHash({}), /^[0-9a-f]{64}$/);
  });
});

describe('a refusal is an audit row', () => {
  it('deny writes one denied row naming who refused and the held call; a grant or a late deny writes none', async () => {
    const audit = new SqliteAuditLog(t.db);
    try {
      const audited = new SqliteApprovals(t.db, { now: () => clock, audit });
      const held = audited.request({ ...call, entityId: 'front_door.lock', reason: 'rule #3 requires confirmation' });
      const other = audited.request({ ...call, args: { action: 'lock' }, entityId: 'front_door.lock', reason: 'rule #9' });
      assert.equal(audited.grant(other.id, 'http:olivia'), true);
      assert.equal(audit.list({}).length, 0, 'a grant is not a row of its own (the call that uses it is)');
      assert.equal(audited.deny(held.id, 'cli:olivia'), true);
      const rows = audit.list({});
      assert.equal(rows.length, 1);
      const [row] = rows;
      assert.deepEqual(
        [row.principal, row.tool, row.entityId, row.action, row.args, row.decision, row.outcome],
        ['cli:olivia', 'front_door_lock', 'front_door.lock', APPROVAL_DENIED_ACTION, call.args, 'deny', 'denied'],
      );
      assert.match(row.reason, new RegExp(`^cli:olivia refused approval ${held.id}, asked by chat:alice \\(rule #3 requires confirmation\\)$`));
      assert.equal(audited.deny(held.id, 'cli:olivia'), false);
      assert.equal(audit.list({}).length, 1, 'a deny that changes nothing writes nothing');
      assert.equal(audit.verify().ok, true);
    } finally {
      await audit.close();
    }
  });
});

describe('approvals', () => {
  it('request is idempotent while pending, and emits requested once', () => {
    const seen: Approval[] = [];
    approvals.on('requested', (a) => seen.push(a));
    const first = ask();
    const again = ask({ args: { options: { a: 1, b: 2 }, action: 'unlock' } });
    assert.equal(again.id, first.id);
    assert.equal(first.expiresAt, clock + 5 * 60_000);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].status, 'pending');
    assert.deepEqual(seen[0].args, call.args);
    assert.notEqual(ask({ args: { action: 'lock' } }).id, first.id, 'other args, other approval');
    assert.notEqual(ask({ principal: 'chat:bob' }).id, first.id, 'other principal, other approval');
    assert.deepEqual(
      approvals.list({ status: 'pending' }).map((a) => a.status),
      ['pending', 'pending', 'pending'],
    );
    // Once expired, a new request gets a new id.
    clock += 5 * 60_000;
    const later = ask();
    assert.notEqual(later.id, first.id);
    assert.equal(approvals.get(first.id)!.status, 'expired');
  });

  it('grant, then consume exactly once', () => {
    const decided: Approval[] = [];
    approvals.on('decided', (a) => decided.push(a));
    const { id } = ask();
    assert.equal(approvals.consume(call), null, 'pending is not consumable');
    assert.equal(approvals.grant(id, 'cli:olivia'), true);
    assert.equal(approvals.grant(id, 'cli:olivia'), false, 'only pending can be granted');
    assert.equal(approvals.deny(id, 'cli:olivia'), false);
    assert.equal(decided.length, 1);
    assert.deepEqual([decided[0].status, decided[0].decidedBy, decided[0].decidedAt], ['granted', 'cli:olivia', clock]);
    assert.equal(approvals.consume({ ...call, args: { action: 'unlock' } }), null, 'different args');
    assert.equal(approvals.consume({ ...call, principal: 'chat:bob' }), null, 'different principal');
    assert.equal(approvals.consume({ ...call, tool: 'back_door_lock' }), null, 'different tool');
    assert.equal(approvals.consume({ ...call, args: { options: { a: 1, b: 2 }, action: 'unlock' } }), id, 'same args in another key order');
    assert.equal(approvals.consume(call), null, 'single use');
    const a = approvals.get(id)!;
    assert.equal(a.status, 'used');
    assert.equal(a.usedAt, clock);
    // After use, the same call needs a new approval.
    assert.notEqual(ask().id, id);
  });

  it('expired approvals cannot be granted or consumed', () => {
    const { id } = ask();
    clock += 5 * 60_000 + 1;
    assert.equal(approvals.grant(id, 'cli:olivia'), false);
    assert.equal(approvals.get(id)!.status, 'expired');

    const second = ask();
    clock += 60_000;
    assert.equal(approvals.grant(second.id, 'cli:olivia'), true);
    // A grant stays usable for the grant TTL from the moment of granting.
    clock += 5 * 60_000 - 1;
    assert.equal(approvals.get(second.id)!.status, 'granted');
    clock += 1;
    assert.equal(approvals.consume(call), null);
    assert.equal(approvals.get(second.id)!.status, 'expired');
  });

  it('a denied approval is not consumable', () => {
    const { id } = ask();
    assert.equal(approvals.deny(id, 'voice:kitchen'), true);
    assert.equal(approvals.consume(call), null);
    assert.equal(approvals.get(id)!.status, 'denied');
    assert.equal(approvals.grant(id, 'cli:olivia'), false);
    assert.equal(approvals.grant('nope', 'cli:olivia'), false);
    assert.equal(approvals.get('nope'), undefined);
  });

  it('configurable TTL, and a second connection sees and uses the same approvals', () => {
    const short = new SqliteApprovals(t.db, { ttlMs: 1000, now: () => clock });
    const { id, expiresAt } = short.request({ ...call, reason: 'x' });
    assert.equal(expiresAt, clock + 1000);
    const cli = new SqliteApprovals(t.open(), { now: () => clock });
    assert.equal(cli.list({ status: 'pending' })[0].id, id);
    assert.equal(cli.grant(id, 'cli:olivia'), true);
    assert.equal(approvals.consume(call), id);
    assert.equal(cli.consume(call), null);
    assert.throws(() => new SqliteApprovals(t.db, { ttlMs: 0 }), RangeError);
  });
});

describe('approvals from another process', () => {
  it('are raised here as requested and decided events, once each', async () => {
    // Two connections to one file, as `hearth start` and `hearth call` / `hearth approve` are.
    const here = new SqliteApprovals(t.db);
    const there = new SqliteApprovals(t.open());
    const events: string[] = [];
    here.on('requested', (a) => events.push(`requested ${a.id} ${a.status}`));
    here.on('decided', (a) => events.push(`decided ${a.id} ${a.status} by ${a.decidedBy}`));
    const stop = here.watchOtherProcesses(20);
    try {
      const { id } = there.request({ ...call, reason: 'rule #3 requires confirmation' });
      await waitFor('the request here', () => events.length === 1);
      assert.deepEqual(events, [`requested ${id} pending`]);
      assert.equal(there.grant(id, 'cli:bob'), true);
      await waitFor('the decision here', () => events.length === 2);
      assert.deepEqual(events[1], `decided ${id} granted by cli:bob`);
      // This process's own approvals are raised once, by the call itself.
      const mine = here.request({ ...call, tool: 'garage_door', reason: 'rule #4' });
      there.request({ ...call, tool: 'gate', reason: 'rule #5' }); // a commit elsewhere makes the watcher look again
      await waitFor('the gate request', () => events.length === 4);
      assert.equal(events.filter((e) => e.includes(mine.id)).length, 1);
    } finally {
      stop();
    }
  });
});
