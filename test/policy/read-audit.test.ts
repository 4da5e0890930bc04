// Issue 42: who may read the audit through the agent ("who unlocked the front door today?"). A policy action
// of its own, `read_audit`, that decides no device call: owners always may; anyone else only through an allow
// rule that names it literally (a `*` rule never grants it), and a deny rule refuses; it is validated as the
// approve action is (alone, never confirm, never rate-limited).
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SqlitePolicy } from '../../src/policy/engine.js';
import { PolicyRuleError } from '../../src/policy/rules.js';
import { req, tempDb, type TempDb } from './helpers.js';

let t: TempDb;
let policy: SqlitePolicy;
beforeEach(() => {
  t = tempDb();
  policy = new SqlitePolicy(t.db);
});
afterEach(() => t.close());

const anyTarget = { targetType: 'any' as const, target: '*' };

describe('policy: read_audit', () => {
  it('owners may read the audit; nobody else by default, nor through a rule that allows everything', () => {
    assert.equal(policy.mayReadAudit({ id: 'http:owner-phone', roles: ['owner'] }), true);
    assert.equal(policy.mayReadAudit({ id: 'chat:guest', roles: ['guest'] }), false);
    policy.add({ subject: 'role:guest', ...anyTarget, action: '*', effect: 'allow' });
    assert.equal(policy.mayReadAudit({ id: 'chat:guest', roles: ['guest'] }), false, 'a glob is not read_audit');
  });

  it('an allow rule naming read_audit lets its subject; a deny rule before it refuses', () => {
    policy.add({ subject: 'role:adult', ...anyTarget, action: 'read_audit', effect: 'allow' });
    assert.equal(policy.mayReadAudit({ id: 'chat:anna', roles: ['adult'] }), true);
    assert.equal(policy.mayReadAudit({ id: 'chat:kid', roles: ['child'] }), false);
    policy.add({ subject: 'chat:anna', ...anyTarget, action: 'read_audit', effect: 'deny', priority: 10 });
    assert.equal(policy.mayReadAudit({ id: 'chat:anna', roles: ['adult'] }), false);
  });

  it('decides no device call, and is never combined, held or rate-limited', () => {
    policy.add({ subject: 'role:adult', ...anyTarget, action: 'read_audit', effect: 'allow' });
    const call = policy.decide(req({ roles: ['adult'], action: 'turn_on', capability: 'actuator' }));
    assert.equal(call.effect, 'deny', 'reading the audit allows no action');
    assert.throws(() => policy.add({ subject: '*', ...anyTarget, action: 'read_audit|read', effect: 'allow' }), PolicyRuleError);
    assert.throws(() => policy.add({ subject: '*', ...anyTarget, action: 'read_audit', effect: 'confirm' }), PolicyRuleError);
    assert.throws(() => policy.add({ subject: '*', ...anyTarget, action: 'read_audit', effect: 'allow', maxCalls: 3, perSeconds: 60 }), PolicyRuleError);
    assert.throws(() => policy.add({ subject: '*', ...anyTarget, action: 'read_audits', effect: 'allow' }), /read_audit/);
  });
});
