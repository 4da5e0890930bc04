// An actuator flow tool took the policy's action from whatever `action` the
// caller sent. The policy judges action "read" as a read, and with no rule
// a read is allowed: a stranger who may actuate nothing sent
// {"text": "...", "action": "read"} to a tool whose schema did not forbid
// extra fields, and the flow acted. Now an actuator is never judged as a
// read, and `action` counts only when the tool's schema declares it. The
// daemon's provider path, on a real home (aedes, SQLite audit, the policy engine).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Principal } from '../../src/tools/types.js';
import { flowOnHome } from '../helpers/flow-provider.js';

const STRANGER: Principal = { id: 'chat:stranger', roles: [] };
const GUEST: Principal = { id: 'chat:guest', roles: [] };

describe('an actuator flow tool is never judged as a read', () => {
  const fx = flowOnHome(
    [
      {
        name: 'announce',
        description: 'Say a sentence on the speakers.',
        // No additionalProperties: false, as many hand-written schemas.
        parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        capability: 'actuator',
      },
      {
        name: 'garage',
        description: 'Open or close the garage.',
        parameters: { type: 'object', properties: { action: { enum: ['open', 'close', 'read'] } }, required: ['action'] },
        capability: 'actuator',
      },
    ],
    () => ({ text: 'said it' }),
    'flow:speaker',
  );
  before(() => {
    // The guest may close the garage, nothing else.
    fx.home.hearth.policy.add({ subject: GUEST.id, targetType: 'tool', target: 'garage', action: 'close', effect: 'allow' });
  });

  it('refuses a stranger sending action "read" to an actuator, and the flow is not asked', async () => {
    const result = await fx.home.hearth.tools.call('announce', { text: 'the door is open', action: 'read' }, STRANGER, { requestId: 'say-read' });
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /^not allowed/);
    assert.deepEqual(fx.calls, []);
    assert.equal(fx.home.hearth.audit.byRequestId('say-read')?.outcome, 'denied');
  });

  it('does not take an undeclared action from the caller', async () => {
    const result = await fx.home.hearth.tools.call('announce', { text: 'hello', action: 'close' }, GUEST, { requestId: 'say-close' });
    assert.equal(result.isError, true, result.text);
    assert.equal(fx.home.hearth.audit.byRequestId('say-close')?.action, 'actuate');
    assert.deepEqual(fx.calls, []);
  });

  it('judges a declared action, and "read" on an actuator as an actuation', async () => {
    const read = await fx.home.hearth.tools.call('garage', { action: 'read' }, STRANGER, { requestId: 'garage-read' });
    assert.equal(read.isError, true, read.text);
    assert.deepEqual(fx.calls, []);
    const close = await fx.home.hearth.tools.call('garage', { action: 'close' }, GUEST, { requestId: 'garage-close' });
    assert.equal(close.text, 'said it');
    assert.deepEqual(fx.calls, [{ action: 'close' }]);
  });
});
