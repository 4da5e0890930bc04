// hearth-tool and hearth-tool-result: a tool the flow implements, called by an
// agent (a scripted OpenAI-compatible model), through validation, policy and
// audit; with timeout, interruption and late answers.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { startOpenAIServer, textChunks, toolCallChunks, type OpenAIServer } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';
import { bridgeDef, collect, load, nextMessage, node, unload, waitForStatus } from './support.js';

let broker: TestBroker;
let home: TestHome;
let model: OpenAIServer;

before(async () => {
  broker = await startAedes();
  home = await startHome(broker, { travelMs: 200 });
  model = await startOpenAIServer();
  home.hearth.policy.add({
    subject: 'role:owner',
    targetType: 'tool',
    target: 'announce',
    action: 'actuate',
    effect: 'allow',
    note: 'test: owners may announce',
  });
});
after(async () => {
  await model?.close();
  await home?.close();
  await broker?.stop();
});
afterEach(async () => {
  await unload();
});

const ANNOUNCE = {
  type: 'object',
  properties: { text: { type: 'string', minLength: 1 }, volume: { type: 'integer', minimum: 0, maximum: 10, default: 5 } },
  required: ['text'],
  additionalProperties: false,
};

function flow(tool: Record<string, unknown> = {}) {
  return [
    bridgeDef(home, { provider: 'openai', baseUrl: model.url, model: 'test-model' }),
    { id: 's1', type: 'hearth-session', z: 'f1', bridge: 'bridge', principal: 'chat:tester', roles: 'owner', ask: 'never', wires: [['answer'], ['events']] },
    { id: 'answer', type: 'helper', z: 'f1' },
    { id: 'events', type: 'helper', z: 'f1' },
    {
      id: 't1',
      type: 'hearth-tool',
      z: 'f1',
      bridge: 'bridge',
      toolName: 'announce',
      description: 'Say a sentence on the house speakers.',
      parameters: JSON.stringify(ANNOUNCE),
      capability: 'actuator',
      timeout: 2,
      wires: [['calls'], ['cancels']],
      ...tool,
    },
    { id: 'calls', type: 'helper', z: 'f1' },
    { id: 'cancels', type: 'helper', z: 'f1' },
    { id: 'tr', type: 'hearth-tool-result', z: 'f1' },
    { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1' },
  ];
}

async function bridgeHearth() {
  return node('bridge').controller.ready();
}

describe('hearth-tool', () => {
  it('the agent calls the flow tool: arguments out, the flow answers through hearth-tool-result, the row is confirmed', async () => {
    model.setScript([toolCallChunks([{ id: 'c1', name: 'host__announce', arguments: { text: 'dinner is ready' } }]), textChunks('I announced it.')]);
    const first = model.requests.length;
    await load(flow(), { bridge: { apiKey: 'sk-flow' } });
    await waitForStatus('t1', (s) => s.fill === 'green' && /announce ready/.test(s.text ?? ''));
    const call = nextMessage('calls');
    const answer = nextMessage('answer');
    node('s1').receive({ payload: 'tell everyone dinner is ready' });
    const msg = await call;
    // Validated, with the schema's default filled in.
    assert.deepEqual(msg.payload, { text: 'dinner is ready', volume: 5 });
    assert.equal(msg.topic, 'announce');
    assert.equal(msg.toolCall.name, 'announce');
    assert.equal(msg.toolCall.principal, 'chat:tester');
    assert.equal(typeof msg.toolCall.id, 'string');
    await waitForStatus('t1', (s) => s.fill === 'blue' && /1 running/.test(s.text ?? ''));
    node('tr').receive({ ...msg, payload: 'spoken on 2 speakers' });
    const out = await answer;
    assert.equal(out.payload, 'I announced it.');
    const call0 = out.result.toolCalls[0];
    assert.equal(call0.name, 'announce');
    assert.equal(call0.result, 'spoken on 2 speakers');
    assert.equal(call0.isError, false);
    const row = home.hearth.audit.get(call0.auditId)!;
    assert.equal(row.tool, 'announce');
    assert.equal(row.outcome, 'confirmed');
    assert.equal(row.principal, 'chat:tester');
    assert.equal(row.decision, 'allow');
    assert.deepEqual(row.args, { text: 'dinner is ready', volume: 5 });
    assert.match(row.reason, /tool of flow:t1/);
    // The model was offered the tool, and got the flow's text back.
    const offered = model.requests[first].body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.ok(offered.includes('host__announce'), offered.join(','));
    assert.equal(model.requests[first].headers.authorization, 'Bearer sk-flow');
    const toolMsg = model.requests[first + 1].body.messages.find((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMsg.content, 'spoken on 2 speakers');
  });

  it('refuses bad arguments and calls the policy denies, each with an audit row, without running the flow', async () => {
    await load(flow());
    await waitForStatus('t1', (s) => /ready/.test(s.text ?? ''));
    const calls = collect('calls');
    const hearth = await bridgeHearth();
    const owner = { id: 'chat:tester', roles: ['owner'] };
    const bad = await hearth.tools.call('announce', { text: 'hi', loud: true }, owner);
    assert.equal(bad.isError, true);
    assert.match(bad.text, /invalid arguments: .*loud/);
    assert.equal(home.hearth.audit.get(bad.details.auditId)!.outcome, 'failed');
    const stranger = await hearth.tools.call('announce', { text: 'hi' }, { id: 'chat:guest', roles: [] });
    assert.equal(stranger.isError, true);
    assert.match(stranger.text, /not allowed: .*actuators are denied/);
    const row = home.hearth.audit.get(stranger.details.auditId)!;
    assert.equal(row.outcome, 'denied');
    assert.equal(row.principal, 'chat:guest');
    assert.equal(calls.length, 0, 'the flow never saw them');
    // Sessions of principals that may never use the tool are not offered it.
    const agent = await hearth.agent();
    const guest = await agent.open({ principal: { id: 'chat:guest', roles: [] }, permissions: 'host', ephemeral: true });
    assert.ok(!guest.tools.includes('host__announce'));
    const ownerSession = await agent.open({ principal: owner, permissions: 'host', ephemeral: true });
    assert.ok(ownerSession.tools.includes('host__announce'));
    await agent.close(guest.id);
    await agent.close(ownerSession.id);
  });

  it('a flow that does not answer in time: the call is withdrawn (second output), the row is unconfirmed, a late answer is caught', async () => {
    model.setScript([toolCallChunks([{ id: 'c2', name: 'host__announce', arguments: { text: 'late' } }]), textChunks('It may not have worked.')]);
    await load(flow({ timeout: 1 }));
    await waitForStatus('t1', (s) => /ready/.test(s.text ?? ''));
    const call = nextMessage('calls');
    const cancelled = nextMessage('cancels', 5000);
    const answer = nextMessage('answer', 10_000);
    node('s1').receive({ payload: 'announce late' });
    const msg = await call;
    const c = await cancelled;
    assert.equal(c.payload.reason, 'timeout');
    assert.equal(c.payload.id, msg.toolCall.id);
    const out = await answer;
    assert.match(out.result.toolCalls[0].result, /^unconfirmed: announce did not answer within 1000 ms/);
    assert.equal(home.hearth.audit.get(out.result.toolCalls[0].auditId)!.outcome, 'unconfirmed');
    const caught = nextMessage('caught');
    node('tr').receive({ ...msg, payload: 'too late' });
    assert.match((await caught).error.message, /no tool call .* is waiting/);
    const caught2 = nextMessage('caught');
    node('tr').receive({ payload: 'no call at all' });
    assert.match((await caught2).error.message, /msg.toolCall.id is missing/);
  });

  it('msg.interrupt stops the turn while the flow works: the call is withdrawn as interrupted', async () => {
    model.setScript([toolCallChunks([{ id: 'c3', name: 'host__announce', arguments: { text: 'long one' } }]), textChunks('never sent')]);
    await load(flow({ timeout: 30 }));
    await waitForStatus('t1', (s) => /ready/.test(s.text ?? ''));
    const call = nextMessage('calls');
    const cancelled = nextMessage('cancels', 5000);
    const answer = nextMessage('answer', 10_000);
    node('s1').receive({ payload: 'announce a long one', topic: 'x' });
    await call;
    await waitForStatus('s1', (s) => /thinking/.test(s.text ?? ''));
    node('s1').receive({ interrupt: true, topic: 'x' });
    assert.equal((await cancelled).payload.reason, 'interrupted');
    const out = await answer;
    assert.equal(out.result.stopReason, 'interrupted');
    await waitFor(
      'row interrupted',
      () => home.hearth.audit.list({ principal: 'chat:tester', order: 'desc', limit: 1 })[0]?.outcome === 'interrupted' || undefined,
      5000,
    );
    await waitForStatus('s1', (s) => /interrupted/.test(s.text ?? ''));
  });

  it('a bad definition is reported at deploy; a name a device tool has is refused', async () => {
    await load([
      ...flow({ toolName: 'bad__name' }),
      {
        id: 't2',
        type: 'hearth-tool',
        z: 'f1',
        bridge: 'bridge',
        toolName: 'living_room_lamp',
        description: 'clash',
        parameters: '{"type":"object"}',
        capability: 'read',
        timeout: 5,
        wires: [[], []],
      },
      {
        id: 't3',
        type: 'hearth-tool',
        z: 'f1',
        bridge: 'bridge',
        toolName: 'weather',
        description: 'x',
        parameters: '{"type":"array"}',
        capability: 'read',
        timeout: 5,
        wires: [[], []],
      },
    ]);
    await waitForStatus('t1', (s) => s.fill === 'red' && /tool name "bad__name"/.test(s.text ?? ''));
    await waitForStatus('t2', (s) => s.fill === 'red' && /already named living_room_lamp/.test(s.text ?? ''));
    await waitForStatus('t3', (s) => s.fill === 'red' && /must be a JSON Schema/.test(s.text ?? ''));
  });

  it('closing the node removes the tool from the bridge', async () => {
    await load(flow());
    await waitForStatus('t1', (s) => /ready/.test(s.text ?? ''));
    const hearth = await bridgeHearth();
    assert.ok(hearth.tools.get('announce'));
    await node('t1').close();
    assert.equal(hearth.tools.get('announce'), undefined);
  });
});
