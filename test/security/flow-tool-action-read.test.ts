// An actuator flow tool took the policy's action from whatever `action` the
// caller sent. The policy judges action "read" as a read, and with no rule
// a read is allowed: a stranger who may actuate nothing sent
// {"text": "...", "action": "read"} to a tool whose schema did not forbid
// extra fields, and the flow acted. Now an actuator is never judged as a
// read, and `action` counts only when the tool's schema declares it. The
// daemon's provider path, on a real home (aedes, SQLite audit, the policy engine).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { checkDefinitions, FlowToolProviders, type ProviderEvent } from '../../src/tools/flow-tool-providers.js';
import type { Principal } from '../../src/tools/types.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';

const STRANGER: Principal = { id: 'chat:stranger', roles: [] };
const GUEST: Principal = { id: 'chat:guest', roles: [] };

describe('an actuator flow tool is never judged as a read', () => {
  let broker: TestBroker;
  let home: TestHome;
  let providers: FlowToolProviders;
  const calls: Array<Record<string, unknown>> = [];
  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    providers = new FlowToolProviders(
      home.hearth.tools.external,
      { policy: home.hearth.policy, audit: home.hearth.audit, approvals: home.hearth.approvals, log: pino({ level: 'silent' }) },
      (name) => home.hearth.tools.isDeviceTool(name),
      pino({ level: 'silent' }),
    );
    const holder = { principal: 'http:node-red' };
    const answerer = (e: ProviderEvent) => {
      if (e.event === 'call') {
        calls.push(e.data.args);
        queueMicrotask(() => providers.answer(holder, e.data.id, { text: 'said it' }));
      }
      return true;
    };
    providers.register(
      holder,
      'flow:speaker',
      checkDefinitions([
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
      ]),
      answerer,
    );
    // The guest may close the garage, nothing else.
    home.hearth.policy.add({ subject: GUEST.id, targetType: 'tool', target: 'garage', action: 'close', effect: 'allow' });
  });
  after(async () => {
    providers?.closeAll();
    await home?.close();
    await broker?.stop();
  });

  it('refuses a stranger sending action "read" to an actuator, and the flow is not asked', async () => {
    const result = await home.hearth.tools.call('announce', { text: 'the door is open', action: 'read' }, STRANGER, { requestId: 'say-read' });
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /^not allowed/);
    assert.deepEqual(calls, []);
    assert.equal(home.hearth.audit.byRequestId('say-read')?.outcome, 'denied');
  });

  it('does not take an undeclared action from the caller', async () => {
    const result = await home.hearth.tools.call('announce', { text: 'hello', action: 'close' }, GUEST, { requestId: 'say-close' });
    assert.equal(result.isError, true, result.text);
    assert.equal(home.hearth.audit.byRequestId('say-close')?.action, 'actuate');
    assert.deepEqual(calls, []);
  });

  it('judges a declared action, and "read" on an actuator as an actuation', async () => {
    const read = await home.hearth.tools.call('garage', { action: 'read' }, STRANGER, { requestId: 'garage-read' });
    assert.equal(read.isError, true, read.text);
    assert.deepEqual(calls, []);
    const close = await home.hearth.tools.call('garage', { action: 'close' }, GUEST, { requestId: 'garage-close' });
    assert.equal(close.text, 'said it');
    assert.deepEqual(calls, [{ action: 'close' }]);
  });
});
