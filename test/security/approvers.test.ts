// Who may grant approvals (finding 3 of issue 15): owners, or a subject an
// `allow ... approve` rule names for the call's target. Being allowed to act
// (even `*`) is not being allowed to approve. The check is the policy's, and
// every in-band answer goes through it. Real SQLite file, real demo home.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PolicyRuleError } from '../../src/policy/rules.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

describe('security: approvers', () => {
  const home = useHome({ travelMs: 50 });

  const lock = { tool: 'front_door_lock', entityId: 'front_door.lock', kind: 'lock', area: 'Entrance' };
  const garage = { tool: 'garage_door', entityId: 'garage_door.door', kind: 'cover', deviceClass: 'garage' };

  it('owners approve; acting on everything does not make an approver; an approve rule names approvers for its targets only', () => {
    const policy = home.hearth.policy;
    policy.add({ subject: 'role:family', targetType: 'any', action: '*', effect: 'allow', note: 'test: family may do anything' });
    assert.equal(policy.mayApprove({ id: 'chat:o', roles: ['owner'] }, lock), true);
    assert.equal(policy.mayApprove({ id: 'chat:kid', roles: ['family'] }, lock), false);
    policy.setRoles('chat:parent', ['adult']);
    policy.add({ subject: 'role:adult', targetType: 'kind', target: 'lock', action: 'approve', effect: 'allow' });
    assert.equal(policy.mayApprove({ id: 'chat:parent', roles: [] }, lock), true, 'stored roles count');
    assert.equal(policy.mayApprove({ id: 'chat:parent', roles: [] }, garage), false);
    assert.deepEqual(policy.approversFor(lock), ['role:owner', 'role:adult']);
    // An approve rule decides no call, not even a flow tool's call whose action argument is `approve`.
    policy.add({ subject: 'role:adult', targetType: 'tool', target: 'announce', action: 'approve', effect: 'allow' });
    const call = {
      principal: { id: 'chat:parent', roles: [] },
      tool: 'announce',
      capability: 'actuator' as const,
      action: 'approve',
      args: { action: 'approve' },
    };
    assert.equal(policy.decide(call).effect, 'deny');
    assert.throws(() => policy.add({ subject: 'role:adult', targetType: 'any', action: 'approve|unlock', effect: 'allow' }), PolicyRuleError);
    assert.throws(() => policy.add({ subject: 'role:adult', targetType: 'any', action: 'approve', effect: 'confirm' }), PolicyRuleError);
  });

  it("an approver's in-band yes unlocks for someone else; a non-approver's does not", async () => {
    const kid = { id: 'chat:kid', roles: ['family'] };
    const refused = await home.hearth.tools.call('front_door_lock', { action: 'unlock' }, kid, { approvalId: 'kid said yes', approvedBy: kid });
    assert.equal(refused.isError, true);
    assert.match(refused.text!, /chat:kid may not approve this call \(approvers: role:owner, role:adult\)/);
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
    const ok = await home.hearth.tools.call('front_door_lock', { action: 'unlock' }, kid, {
      approvalId: 'asked the parent',
      approvedBy: { id: 'chat:parent', roles: [] },
    });
    assert.match(ok.text!, /^confirmed/, ok.text);
    await waitFor('unlocked', () => home.hearth.bridge.cache.get('front_door.lock')?.value === 'unlocked');
    assert.match(home.hearth.audit.list({ entityId: 'front_door.lock', order: 'desc', limit: 1 })[0].reason, /approved: asked the parent by chat:parent/);
  });
});
