// A flow tool's schema may give `action` a default. The policy judged the
// call by the action the caller sent (none: "actuate"), and only then were
// the schema's defaults filled in, so a guest who may not `unlock` sent {}
// and the flow was asked to unlock. The action is now read from the
// arguments as the flow will get them. The daemon's provider path, on a real
// home (aedes, SQLite audit, the policy engine).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Principal } from '../../src/tools/types.js';
import { flowOnHome } from '../helpers/flow-provider.js';

const GUEST: Principal = { id: 'chat:guest', roles: [] };

describe("a flow tool's default action is judged by the policy", () => {
  const fx = flowOnHome(
    [
      {
        name: 'garden_gate',
        description: 'Lock or unlock the garden gate.',
        parameters: { type: 'object', properties: { action: { enum: ['lock', 'unlock'], default: 'unlock' } }, additionalProperties: false },
        capability: 'actuator',
      },
    ],
    (args) => ({ text: `done: ${String(args.action)}` }),
    'flow:door',
  );
  before(() => {
    fx.home.hearth.policy.add({ subject: GUEST.id, targetType: 'tool', target: 'garden_gate', action: '*', effect: 'allow' });
    fx.home.hearth.policy.add({ subject: GUEST.id, targetType: 'tool', target: 'garden_gate', action: 'unlock', effect: 'deny', priority: 10 });
  });

  it('refuses a call whose default is the denied action, and the flow is not asked', async () => {
    const result = await fx.home.hearth.tools.call('garden_gate', {}, GUEST, { requestId: 'gate-default' });
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /^not allowed/);
    assert.deepEqual(fx.calls, []);
    const row = fx.home.hearth.audit.byRequestId('gate-default')!;
    assert.equal(row.outcome, 'denied');
    assert.equal(row.action, 'unlock');
  });

  it('still lets the allowed action through', async () => {
    const result = await fx.home.hearth.tools.call('garden_gate', { action: 'lock' }, GUEST, { requestId: 'gate-lock' });
    assert.equal(result.text, 'done: lock');
    assert.deepEqual(fx.calls, [{ action: 'lock' }]);
  });
});
