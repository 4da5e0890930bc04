// The builtin engine against a server speaking the OpenAI streaming format,
// with the real demo home (aedes, simulator, SQLite) behind its tools.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BuiltinEngine } from '../../src/agent/builtin-engine.js';
import { IntentProvider } from '../../src/agent/providers/intent/index.js';
import type { AgentEvent, Turn } from '../../src/agent/types.js';
import { OWNER } from '../helpers/home.js';
import { textChunks, toolCallChunks } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';
import { useEngineHome } from '../helpers/engine-home.js';
import { neverAnswers } from './helpers.js';

async function drain(turn: Turn): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const e of turn) events.push(e);
  return events;
}

describe('builtin engine with an OpenAI-compatible model', () => {
  const { home, model: server, engine, sessions } = useEngineHome({ systemPrompt: 'You are a test home.', timeoutMs: 5000 });

  it('streams tokens, runs a tool through the pipeline, and sends the result back without details', async () => {
    server.setScript([toolCallChunks([{ id: 'c1', name: 'host__living_room_lamp', arguments: { action: 'turn_on' } }]), textChunks('The lamp is on.')]);
    const before = server.requests.length;
    const session = await sessions.open({ principal: OWNER, permissions: 'host' });
    const turn = await session.prompt('turn on the living room lamp');
    const events = await drain(turn);
    assert.deepEqual(await turn.result(), { stopReason: 'completed' });
    const types = events.map((e) => e.type);
    for (const t of ['step', 'tool_call_started', 'tool_call', 'tool_request', 'tool_result', 'tool_details', 'token', 'done'])
      assert.ok(types.includes(t as never), t);
    const result = events.find((e) => e.type === 'tool_result') as Extract<AgentEvent, { type: 'tool_result' }>;
    assert.match(result.content, /^confirmed: "Living room lamp"/);
    assert.equal(
      events
        .filter((e) => e.type === 'token')
        .map((e) => (e as { text: string }).text)
        .join(''),
      'The lamp is on.',
    );
    assert.equal(home.sim.state('living_room_lamp.lamp').value, 'on');

    const [first, second] = server.requests.slice(before);
    assert.equal(first.headers.authorization, 'Bearer sk-test');
    assert.ok(first.body.tools.some((t: { function: { name: string } }) => t.function.name === 'host__living_room_lamp'));
    assert.equal(first.body.messages[0].content, 'You are a test home.');
    const toolMsg = second.body.messages.find((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMsg.tool_call_id, 'c1');
    assert.match(toolMsg.content, /^confirmed/);
    assert.ok(!second.rawBody.includes('auditId'), 'details never reach the model');
    // The audit row names the session.
    const row = home.hearth.audit.tail(1)[0];
    assert.equal(row.session, session.id);
    assert.equal(row.principal, OWNER.id);
  });

  it('puts a camera image in the next user message, with the text on the tool message', async () => {
    server.setScript([toolCallChunks([{ id: 'cam', name: 'host__front_door_camera', arguments: {} }]), textChunks('A red door.')]);
    const before = server.requests.length;
    const session = await sessions.open({ principal: OWNER, permissions: 'host' });
    const turn = await session.prompt('what does the front door camera see');
    await drain(turn);
    const second = server.requests[before + 1].body;
    const toolIdx = second.messages.findIndex((m: { role: string }) => m.role === 'tool');
    assert.match(second.messages[toolIdx].content, /^Latest frame from the camera/);
    assert.ok(!second.messages[toolIdx].content.includes('base64'));
    const next = second.messages[toolIdx + 1];
    assert.equal(next.role, 'user');
    assert.equal(next.content[0].type, 'text');
    assert.match(next.content[0].text, /host__front_door_camera/);
    assert.equal(next.content[1].type, 'image_url');
    assert.match(next.content[1].image_url.url, /^data:image\/jpeg;base64,\/9j\//);
  });

  it('asks permission for actuators by default; allow runs it, deny does not', async () => {
    server.setScript([toolCallChunks([{ id: 'k', name: 'host__kitchen_light', arguments: { action: 'turn_on', brightness_pct: 80 } }]), textChunks('ok')]);
    const session = await sessions.open({ principal: OWNER });
    const sent = home.commands().length;
    const turn = await session.prompt('kitchen bright');
    const events: AgentEvent[] = [];
    for await (const e of turn) {
      events.push(e);
      if (e.type === 'permission_request') {
        assert.equal(e.tool_name, 'host__kitchen_light');
        assert.equal(e.capability, 'actuator');
        assert.deepEqual(e.args, { action: 'turn_on', brightness_pct: 80 });
        assert.equal(home.commands().length, sent, 'nothing sent before the answer');
        session.respondPermission(e.request_id, 'allow_once');
      }
    }
    assert.match((events.find((e) => e.type === 'tool_result') as { content: string }).content, /^confirmed: .*brightness 80% \(203 of 254\)/);

    server.setScript([toolCallChunks([{ id: 'k2', name: 'host__kitchen_light', arguments: { action: 'turn_off' } }]), textChunks('not done')]);
    const turn2 = await session.prompt('kitchen off');
    const events2: AgentEvent[] = [];
    for await (const e of turn2) {
      events2.push(e);
      if (e.type === 'permission_request') session.respondPermission(e.request_id, 'deny');
    }
    const r2 = events2.find((e) => e.type === 'tool_result') as { content: string; is_error: boolean };
    assert.equal(r2.is_error, true);
    assert.match(r2.content, /denied permission/);
    assert.equal(home.sim.state('kitchen_light.light').value, 'on', 'the light stayed on');
    assert.throws(() => session.respondPermission('nope', 'allow_once'), /no pending request nope/);
  });

  it('a confirm rule becomes the permission request in a default session; under host it waits for an approval', async () => {
    server.setScript(() => toolCallChunks([{ name: 'host__garage_door', arguments: { action: 'open' } }]));
    const hostSession = await sessions.open({ principal: OWNER, permissions: 'host' });
    server.setScript([toolCallChunks([{ id: 'g1', name: 'host__garage_door', arguments: { action: 'open' } }]), textChunks('needs approval')]);
    const held = await drain(await hostSession.prompt('open the garage'));
    assert.match((held.find((e) => e.type === 'tool_result') as { content: string }).content, /^needs approval: .*Approval [0-9a-f]+ is waiting/);

    server.setScript([toolCallChunks([{ id: 'g2', name: 'host__garage_door', arguments: { action: 'open' } }]), textChunks('open')]);
    const session = await sessions.open({ principal: OWNER });
    const turn = await session.prompt('open the garage');
    const events: AgentEvent[] = [];
    for await (const e of turn) {
      events.push(e);
      if (e.type === 'permission_request') session.respondPermission(e.request_id, 'allow_once');
    }
    assert.match((events.find((e) => e.type === 'tool_result') as { content: string }).content, /^confirmed: "Garage door" .*open/);
    const row = home.hearth.audit.tail(1)[0];
    assert.equal(row.decision, 'confirm');
    assert.match(row.reason, /approved: session .* permission/);
  });

  it('interrupt settles once, cancels the pending call, and aborts its signal', async () => {
    const { tool: slow, seen } = neverAnswers('slow_read', 'waits forever');
    server.setScript([toolCallChunks([{ id: 's', name: 'host__slow_read', arguments: {} }])]);
    const session = await engine.createSession({ tools: [slow], permissions: 'host', ephemeral: true });
    const turn = await session.prompt('wait');
    const events: AgentEvent[] = [];
    const reading = (async () => {
      for await (const e of turn) events.push(e);
    })();
    await waitFor('the call is pending', () => seen.signal);
    await assert.rejects(session.prompt('again'), (err: Error & { code: string; retryable: boolean }) => err.code === 'turn_active' && err.retryable);
    turn.interrupt();
    turn.interrupt();
    assert.deepEqual(await turn.result(), { stopReason: 'interrupted' });
    await reading;
    assert.equal(seen.signal!.aborted, true);
    assert.ok(events.some((e) => e.type === 'tool_request_cancelled' && e.reason === 'interrupted'));
    // A new turn can start.
    server.setScript([textChunks('hi')]);
    const next = await session.prompt('hello');
    assert.deepEqual(await next.result(), { stopReason: 'completed' });
  });

  it('a provider error is a clear error stop, not a hang; rounds are bounded', async () => {
    server.setScript([{ status: 500, body: { error: { message: 'model crashed' } } }]);
    const session = await engine.createSession({ tools: [], ephemeral: true });
    const turn = await session.prompt('hi');
    const events = await drain(turn);
    const result = await turn.result();
    assert.equal(result.stopReason, 'error');
    assert.match(result.error!, /500.*model crashed/);
    assert.ok(events.some((e) => e.type === 'error' && /model crashed/.test(e.message)));

    server.setScript(() => toolCallChunks([{ name: 'host__get_state', arguments: {} }]));
    const looping = await sessions.open({ principal: OWNER, permissions: 'host', ephemeral: true });
    const t2 = await looping.prompt('loop');
    await drain(t2);
    const r2 = await t2.result();
    assert.equal(r2.stopReason, 'error');
    assert.match(r2.error!, /stopped after 4 rounds/);
  });

  it('bad arguments from the model are a failed result the model can read; the turn goes on', async () => {
    server.setScript([
      toolCallChunks([
        { id: 'a', name: 'host__kitchen_light', arguments: '{"action": "turn_on", "brightness": "max"' },
        { id: 'b', name: 'host__toaster', arguments: {} },
        { id: 'c', name: 'host__thermostat', arguments: { action: 'set_temperature', temperature: 99 } },
      ]),
      textChunks('sorry'),
    ]);
    const before = server.requests.length;
    const session = await sessions.open({ principal: OWNER, permissions: 'host', ephemeral: true });
    const turn = await session.prompt('do things');
    const events = await drain(turn);
    assert.equal((await turn.result()).stopReason, 'completed');
    const results = events.filter((e) => e.type === 'tool_result') as Array<{ id: string; content: string; is_error: boolean }>;
    assert.deepEqual(
      results.map((r) => [r.id, r.is_error]),
      [
        ['a', true],
        ['b', true],
        ['c', true],
      ],
    );
    assert.match(results[0].content, /not a JSON object/);
    assert.match(results[1].content, /unknown tool "host__toaster"/);
    assert.match(results[2].content, /"temperature" must be <= 30/);
    const msgs = server.requests[before + 1].body.messages.filter((m: { role: string }) => m.role === 'tool');
    assert.equal(msgs.length, 3);
  });

  it('keeps the thread in SQLite and resumes it; an ephemeral session saves nothing', async () => {
    server.setScript([textChunks('Nice to meet you, Ada.')]);
    const s1 = await engine.createSession({ tools: [], principal: OWNER });
    await (await s1.prompt('my name is Ada')).result();
    server.setScript([textChunks('Ada.')]);
    const before = server.requests.length;
    const resumed = await engine.createSession({ tools: [], principal: OWNER, id: s1.id });
    await (await resumed.prompt('what is my name?')).result();
    const sent = server.requests[before].body.messages.map((m: { content: string }) => m.content);
    assert.ok(sent.includes('my name is Ada'));
    assert.ok(sent.includes('Nice to meet you, Ada.'));

    server.setScript([textChunks('ok')]);
    const eph = await engine.createSession({ tools: [], principal: OWNER, ephemeral: true });
    await (await eph.prompt('secret')).result();
    const count = home.hearth.db.prepare("select count(*) n from session_messages where message like '%secret%'").get() as { n: number };
    assert.equal(count.n, 0);
  });

  it('a session sees only the tools its principal may use, and new tools between turns', async () => {
    const guest = { id: 'chat:guest', roles: ['guest'] };
    home.hearth.policy.add({ subject: 'role:guest', targetType: 'any', target: '*', action: 'actuate', effect: 'deny', priority: 1000 });
    const session = await sessions.open({ principal: guest, ephemeral: true });
    assert.ok(session.tools.every((t) => !['host__living_room_lamp', 'host__garage_door'].includes(t)));
    assert.ok(session.tools.includes('host__get_state'));
    const { parseDeviceFile } = await import('../../src/devices/loader.js');
    const extra = parseDeviceFile(
      'x.yaml',
      'devices:\n  - id: attic\n    entities:\n      temp: { kind: sensor, name: Attic temperature, state_topic: attic/t }\n',
    );
    assert.ok('devices' in extra);
    home.hearth.bridge.registry.setSource('test-engine', 5, extra.devices);
    assert.ok(session.tools.includes('host__attic_temperature'));
    home.hearth.bridge.registry.setSource('test-engine', 5, []);
  });

  it('a question never actuates: a model that turns "is the lamp off?" into turn_off is held, and says so', async () => {
    const session = await sessions.open({ principal: OWNER, permissions: 'host' });
    server.setScript([toolCallChunks([{ id: 'q0', name: 'host__living_room_lamp', arguments: { action: 'turn_on' } }]), textChunks('On.')]);
    await drain(await session.prompt('turn on the living room lamp'));
    await waitFor('the lamp is on', () => home.sim.state('living_room_lamp.lamp').value === 'on');

    server.setScript([toolCallChunks([{ id: 'q1', name: 'host__living_room_lamp', arguments: { action: 'turn_off' } }]), textChunks('It is on.')]);
    const events = await drain(await session.prompt('Is the living room lamp off?'));
    const result = events.find((e) => e.type === 'tool_result') as Extract<AgentEvent, { type: 'tool_result' }>;
    assert.match(result.content, /^not done: held for confirmation: the person asked a question/);
    assert.ok(!events.some((e) => e.type === 'tool_request'), 'the actuator was never called');
    assert.equal(home.sim.state('living_room_lamp.lamp').value, 'on');
    // The refused attempt is on the audit log, as a refusal.
    const row = home.hearth.audit.tail(1)[0];
    assert.equal(row.session, session.id);
    assert.match(JSON.stringify(row), /asked a question/);

    // Said as a command, the same call goes through.
    server.setScript([toolCallChunks([{ id: 'q2', name: 'host__living_room_lamp', arguments: { action: 'turn_off' } }]), textChunks('Off.')]);
    await drain(await session.prompt('turn off the living room lamp'));
    await waitFor('the lamp is off', () => home.sim.state('living_room_lamp.lamp').value === 'off');
  });

  it('a session may speak from an area: the offline model reads "in here" as that area, and asks without one', async () => {
    const intent = await BuiltinEngine.start({
      provider: new IntentProvider({ entities: () => home.hearth.bridge.registry.entities(), tools: () => home.hearth.tools.all() }),
      db: home.hearth.db,
      maxRounds: 4,
    });
    try {
      const kitchen = await intent.createSession({
        tools: home.hearth.tools.forPrincipal(OWNER),
        principal: OWNER,
        permissions: 'host',
        ephemeral: true,
        area: 'Kitchen',
      });
      const events = await drain(await kitchen.prompt('turn off the lights in here'));
      const call = events.find((e) => e.type === 'tool_call') as Extract<AgentEvent, { type: 'tool_call' }>;
      assert.equal(call.name, 'host__kitchen_light');
      await waitFor('the kitchen light is off', () => home.sim.state('kitchen_light.light').value === 'off');
      const nowhere = await intent.createSession({ tools: home.hearth.tools.forPrincipal(OWNER), principal: OWNER, permissions: 'host', ephemeral: true });
      const asked = await drain(await nowhere.prompt('turn off the lights in here'));
      assert.ok(!asked.some((e) => e.type === 'tool_call'));
      assert.match(
        asked
          .filter((e) => e.type === 'token')
          .map((e) => (e as { text: string }).text)
          .join(''),
        /^Which area do you mean\?/,
      );
    } finally {
      await intent.close();
    }
  });
});
