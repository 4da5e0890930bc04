// A flow tool's schema may give `action` a default. The policy judged the
// call by the action the caller sent (none: "actuate"), and only then were
// the schema's defaults filled in, so a guest who may not `unlock` sent {}
// and the flow was asked to unlock. The action is now read from the
// arguments as the flow will get them. The daemon's provider path, on a real
// home (aedes, SQLite audit, the policy engine).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { checkDefinitions, FlowToolProviders, type ProviderEvent } from '../../src/tools/flow-tool-providers.js';
import type { Principal } from '../../src/tools/types.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';

const GUEST: Principal = { id: 'chat:guest', roles: [] };

describe("a flow tool's default action is judged by the policy", () => {
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
        queueMicrotask(() => providers.answer(holder, e.data.id, { text: `done: ${String(e.data.args.action)}` }));
      }
      return true;
    };
    providers.register(
      holder,
      'flow:door',
      checkDefinitions([
        {
          name: 'garden_gate',
          description: 'Lock or unlock the garden gate.',
          parameters: { type: 'object', properties: { action: { enum: ['lock', 'unlock'], default: 'unlock' } }, additionalProperties: false },
          capability: 'actuator',
        },
      ]),
      answerer,
    );
    home.hearth.policy.add({ subject: GUEST.id, targetType: 'tool', target: 'garden_gate', action: '*', effect: 'allow' });
    home.hearth.policy.add({ subject: GUEST.id, targetType: 'tool', target: 'garden_gate', action: 'unlock', effect: 'deny', priority: 10 });
  });
  after(async () => {
    providers?.closeAll();
    await home?.close();
    await broker?.stop();
  });

  it('refuses a call whose default is the denied action, and the flow is not asked', async () => {
    const result = await home.hearth.tools.call('garden_gate', {}, GUEST, { requestId: 'gate-default' });
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /^not allowed/);
    assert.deepEqual(calls, []);
    const row = home.hearth.audit.byRequestId('gate-default')!;
    assert.equal(row.outcome, 'denied');
    assert.equal(row.action, 'unlock');
  });

  it('still lets the allowed action through', async () => {
    const result = await home.hearth.tools.call('garden_gate', { action: 'lock' }, GUEST, { requestId: 'gate-lock' });
    assert.equal(result.text, 'done: lock');
    assert.deepEqual(calls, [{ action: 'lock' }]);
  });
});
