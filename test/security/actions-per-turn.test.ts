// Issue 40: a model could actuate without limit in one turn: one answer with 1,000 tool calls had all 1,000
// actuations executed. A turn makes at most agent.max_actions_per_turn actions; past it the rest are refused with a
// result the model reads, each audited as refused, and the turn says so (a notice, and the answer for a person).
// The demo home (aedes, simulator, SQLite file) behind the OpenAI-compatible door on a real HTTP server, driven by
// the `openai` npm client, with a fake model on the wire that answers 1,000 tool calls.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { JanEngine } from '../../src/agent/rpc/jan-engine.js';
import type { HostTool } from '../../src/tools/types.js';
import { agentRpcArgs, openAiModel } from '../helpers/agent-rpc.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { useHttpHome } from '../helpers/http-home.js';
import { chatClient } from '../helpers/openai-client.js';
import { type OpenAIServer, startOpenAIServer, textChunks, toolCallChunks } from '../helpers/openai-server.js';
import { drain, of } from '../helpers/turns.js';
import { agentOnModel, useModel } from '../helpers/use-model.js';

const CALLS = 1000;
const BOUND = 25;

describe('security: a turn has a bound on actions', () => {
  const model = useModel();
  const home = useHttpHome({
    settings: () => agentOnModel(model.url),
    tokens: { owner: { name: 'owner-phone', principal: 'http:owner', roles: ['owner'] } },
  });

  it(`a model answering ${CALLS} tool calls gets ${BOUND} actions run; the rest are refused, audited, read by the model, and said`, async () => {
    const calls = Array.from({ length: CALLS }, (_, i) => ({ name: 'host__living_room_lamp', arguments: { action: i % 2 ? 'turn_off' : 'turn_on' } }));
    // A fresh connection for the second request: the thousand calls keep this process busy past the server's keep-alive.
    model.setScript([
      { chunks: toolCallChunks(calls, { pieceSize: 1000 }), split: false, headers: { 'content-type': 'text/event-stream', connection: 'close' } },
      textChunks('Done, I switched the lamp.'),
    ]);
    const lastId = home.hearth.audit.list({ order: 'desc', limit: 1 })[0]?.id ?? 0;
    const sentBefore = home.commands().length;

    const client = chatClient(home.server.url, home.secret('owner'));
    // A thousand audited refusals (one durable row each) take a while on a busy machine: wait for them, bounded.
    const answer = await client.chat.completions.create(
      { model: 'hearth', messages: [{ role: 'user', content: 'play with the living room lamp' }] },
      { timeout: 180_000 },
    );

    const text = answer.choices[0].message.content ?? '';
    assert.match(text, /^Done, I switched the lamp\. I stopped there: one request may make at most 25 actions, so 975 more were not done\.$/);
    const ext = (answer.choices[0].message as unknown as { hearth: any }).hearth;
    assert.equal(ext.tool_calls.length, CALLS);
    assert.deepEqual(ext.notices, [
      'This turn reached its bound of 25 actions (agent.max_actions_per_turn): further actions in it are refused and nothing is sent for them.',
    ]);
    const refused = ext.tool_calls.filter((c: any) => /^not done: this turn already made 25 actions/.test(c.result));
    assert.equal(refused.length, CALLS - BOUND);
    assert.deepEqual(
      ext.tool_calls.slice(0, BOUND).map((c: any) => c.result.split(':')[0]),
      Array(BOUND).fill('confirmed'),
    );

    // The model read each refusal.
    const toolMessages = model.requests[1].body.messages.filter((m: any) => m.role === 'tool');
    assert.equal(toolMessages.length, CALLS);
    assert.match(toolMessages[BOUND].content, /^not done: this turn already made 25 actions, the most one turn may make \(agent\.max_actions_per_turn\)/);

    // The audit: 25 actions made, 975 refused (with the reason), nothing more.
    const rows = home.hearth.audit.list({ principal: 'http:owner', afterId: lastId, limit: 10_000 });
    assert.equal(rows.length, CALLS);
    const made = rows.filter((r) => r.decision === 'allow');
    const denied = rows.filter((r) => r.outcome === 'denied');
    assert.equal(made.length, BOUND);
    assert.ok(made.every((r) => r.outcome === 'confirmed'));
    assert.equal(denied.length, CALLS - BOUND);
    assert.ok(denied.every((r) => /agent\.max_actions_per_turn/.test(r.reason)));
    // What reached the lamp: the 25 actions only.
    assert.equal(home.commands().slice(sentBefore).length, BOUND);
  });
});

// The jan engine counts the same way: it drives a real runtime (the built `hearth agent rpc`, whose own bound is set
// high here so that only the engine's is reached), which a fake model makes call an actuator ten times in one turn.
describe('security: the jan engine holds a turn to the same bound', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-bound-jan-'));
  mkdirSync(join(dir, 'devices'));
  let broker: TestBroker;
  let model: OpenAIServer;
  let engine: JanEngine;
  let pressed = 0;
  const press: HostTool = {
    name: 'press_tool',
    description: 'Press the button.',
    parameters: { type: 'object', properties: {} },
    capability: 'actuator',
    handler: () => {
      pressed++;
      return 'pressed';
    },
  };

  before(async () => {
    broker = await startAedes();
    model = await startOpenAIServer();
    const args = agentRpcArgs({
      mqttUrl: broker.url,
      devices: join(dir, 'devices'),
      db: join(dir, 'hearth.db'),
      settings: { ...openAiModel(model.url), 'agent.maxActionsPerTurn': '1000' },
    });
    engine = await JanEngine.start({ bin: process.execPath, args, cwd: dir, maxActionsPerTurn: 3 });
  });
  after(async () => {
    await engine?.close({ force: true });
    await model?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('of ten presses in one turn three are made; the rest are refused to the model, and the turn says so', async () => {
    model.setScript([toolCallChunks(Array.from({ length: 10 }, () => ({ name: 'host__press_tool', arguments: {} }))), textChunks('Pressed.')]);
    const session = await engine.createSession({
      tools: [press],
      permissions: 'host',
      principal: { id: 'chat:bound-tester', roles: ['owner'] },
      ephemeral: true,
    });
    const { events, result } = await drain(await session.prompt('press it ten times'));
    assert.equal(result.stopReason, 'completed', JSON.stringify(result));
    assert.equal(pressed, 3);
    assert.deepEqual(
      of(events, 'notice').map((e) => e.text),
      ['This turn reached its bound of 3 actions (agent.max_actions_per_turn): further actions in it are refused and nothing is sent for them.'],
    );
    const refusals = model.requests[1].body.messages.filter((m: any) => m.role === 'tool' && /^not done: this turn already made 3 actions/.test(m.content));
    assert.equal(refusals.length, 7);
    await session.close();
  });
});
