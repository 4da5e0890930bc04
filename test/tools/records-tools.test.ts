// Issue 42: the audit and the policy as read tools every door gets (get_audit, explain_policy). The audit is
// read only by a principal the policy lets read it (owners; a read_audit rule for others): a guest is neither
// offered get_audit nor answered by it. Answers name principals as people and outcomes in words. Neither tool
// actuates or writes an audit row. A real Hearth on a real SQLite file and broker (aedes).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';

const owner = { id: 'http:owner', roles: ['owner'] };
const guest = { id: 'http:guest', roles: ['guest'] };

describe('tools: get_audit and explain_policy', () => {
  const home = useHttpHome({ tokens: OWNER_AND_GUEST, shape: 'grouped' });
  const rowCount = () => home.hearth.audit.list({ limit: 10_000 }).length;
  let rowsBefore = 0;

  before(() => {
    const audit = home.hearth.audit;
    const entry = (principal: string, entityId: string, action: string, decision = 'allow') => ({
      requestId: `seed-${principal}-${entityId}-${action}-${Math.random()}`,
      principal,
      session: null,
      runId: null,
      tool: 'control_locks',
      entityId,
      action,
      args: { entity: entityId, action },
      decision,
      ruleId: null,
      reason: 'test',
    });
    audit.record(entry('chat:anna', 'front_door.lock', 'unlock'), { outcome: 'confirmed' });
    audit.record(entry('voice:kitchen', 'front_door.lock', 'unlock', 'confirm'), { outcome: 'denied' });
    audit.record(entry('http:guest', 'garage_door.door', 'open'), { outcome: 'unconfirmed' });
    rowsBefore = rowCount();
  });

  it('an owner is offered get_audit and reads who unlocked the front door, by name, with outcomes in words', async () => {
    assert.ok(home.hearth.tools.forPrincipal(owner).some((t) => t.name === 'get_audit'));
    const r = await home.hearth.tools.call('get_audit', { entity: 'front_door.lock', action: 'unlock', since: '-24h' }, owner);
    assert.ok(!r.isError, r.text);
    assert.match(r.text!, /2 calls, newest first/);
    assert.match(r.text!, /anna \(chat\): unlock "Front door lock" \(front_door\.lock\): done and confirmed/);
    assert.match(r.text!, /kitchen \(voice satellite\): unlock .*: held for approval/);
    assert.doesNotMatch(r.text!, /garage/i, 'only the entity asked about');
    const garage = await home.hearth.tools.call('get_audit', { entity: 'garage_door.door', principal: 'guest' }, owner);
    assert.match(garage.text!, /guest \(token\): open "Garage door" \(garage_door\.door\): sent but not confirmed/);
    assert.equal(rowCount(), rowsBefore, 'reading the audit writes no row');
  });

  it('a guest is not offered get_audit, and calling it anyway is refused plainly', async () => {
    assert.ok(!home.hearth.tools.forPrincipal(guest).some((t) => t.name === 'get_audit'));
    const r = await home.hearth.tools.call('get_audit', {}, guest);
    assert.equal(r.isError, true);
    assert.match(r.text ?? r.error ?? '', /only someone allowed to read the audit can ask that; ask an owner/);
    assert.doesNotMatch(r.text ?? '', /anna/);
  });

  it('bad input is a failed result naming what was wrong, and writes nothing', async () => {
    const since = await home.hearth.tools.call('get_audit', { since: 'last tuesday' }, owner);
    assert.equal(since.isError, true);
    assert.match(since.text!, /^invalid arguments: .*since/);
    const unknown = await home.hearth.tools.call('get_audit', { entity: 'no_such.thing' }, owner);
    assert.match(unknown.text!, /unknown entity "no_such\.thing"/);
    const noAction = await home.hearth.tools.call('explain_policy', { entity: 'front_door.lock' }, owner);
    assert.equal(noAction.isError, true);
    assert.match(noAction.text ?? noAction.error ?? '', /action/);
    const nobody = await home.hearth.tools.call('explain_policy', { entity: 'front_door.lock', action: 'unlock', for: 'zed' }, owner);
    assert.match(nobody.text!, /unknown principal "zed"/);
    const tooLong = await home.hearth.tools.call('get_audit', { principal: 'x'.repeat(500) }, owner);
    assert.equal(tooLong.isError, true);
    assert.equal(rowCount(), rowsBefore, 'a refused read writes no row');
  });

  it('a read_audit rule lets a named principal read it', async () => {
    home.hearth.policy.add({ subject: 'http:guest', targetType: 'any', target: '*', action: 'read_audit', effect: 'allow', note: 'test' });
    try {
      const r = await home.hearth.tools.call('get_audit', { action: 'unlock' }, guest);
      assert.ok(!r.isError, r.text);
      assert.match(r.text!, /anna \(chat\)/);
    } finally {
      for (const rule of home.hearth.policy.list()) if (rule.note === 'test') home.hearth.policy.remove(rule.id);
    }
  });

  it('explain_policy says what the policy decides and why, for the caller; for others only to an owner', async () => {
    const mine = await home.hearth.tools.call('explain_policy', { entity: 'front_door.lock', action: 'unlock' }, guest);
    assert.ok(!mine.isError, mine.text);
    assert.match(mine.text!, /^Policy for unlock on "Front door lock" \(front_door\.lock\), now:\n- guest \(token\): not allowed: /);
    // A refusal asked about oneself says what would allow it: to anyone but an owner, to ask an owner (issue 41).
    assert.match(mine.text!, /Ask an owner of this home to allow it \(hearth policy allow http:guest --entity front_door\.lock --action unlock\)/);
    const rule = home.hearth.policy.add({
      subject: 'role:owner',
      targetType: 'entity',
      target: 'front_door.lock',
      action: 'unlock',
      effect: 'deny',
      priority: 50,
      note: 'test',
    });
    try {
      const ownerDenied = await home.hearth.tools.call('explain_policy', { entity: 'front_door.lock', action: 'unlock' }, owner);
      assert.match(ownerDenied.text!, new RegExp(`not allowed: .*To change it: hearth policy remove ${rule.id}, or a rule of higher priority`));
    } finally {
      home.hearth.policy.remove(rule.id);
    }
    const others = await home.hearth.tools.call('explain_policy', { entity: 'front_door.lock', action: 'unlock', for: 'owner' }, guest);
    assert.equal(others.isError, true);
    assert.match(others.text!, /only an owner can ask what the policy decides for someone else/);
    home.hearth.policy.setRoles('chat:anna', ['adult']);
    const anna = await home.hearth.tools.call('explain_policy', { entity: 'front_door.lock', action: 'unlock', for: 'anna' }, owner);
    assert.match(anna.text!, /- anna \(chat\): not allowed: /);
    const everyone = await home.hearth.tools.call('explain_policy', { entity: 'garage_door.door', action: 'open', for: '*' }, owner);
    assert.match(everyone.text!, /anna \(chat\)/);
    assert.equal(rowCount(), rowsBefore, 'explaining writes no row and sends nothing');
  });

  it('a range holding more calls than it reads says so, and how to narrow it', async () => {
    for (let i = 0; i < 201; i++)
      home.hearth.audit.record(
        {
          requestId: `many-${i}`,
          principal: 'chat:anna',
          session: null,
          runId: null,
          tool: 'control_switches',
          entityId: 'living_room_lamp.lamp',
          action: 'turn_on',
          args: { entity: 'living_room_lamp.lamp', action: 'turn_on' },
          decision: 'allow',
          ruleId: null,
          reason: 'test',
        },
        { outcome: 'confirmed' },
      );
    const r = await home.hearth.tools.call('get_audit', {}, owner);
    assert.match(r.text!, /: 200 calls, newest first/);
    assert.match(r.text!, /\(180 more not shown\)\n\(only the newest 200 calls of the range were read; narrow the range or name an entity for the rest\)$/);
  });
});
