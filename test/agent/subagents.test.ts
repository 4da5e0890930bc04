// Subagents of the builtin engine against a server speaking the OpenAI
// streaming format, with the real demo home (aedes, simulator, SQLite) behind
// the tools: children run in parallel with their own prompt and the parent's
// host tools only, their calls carry their run id (audit rows too), their
// results come back to the parent as runtime notices, and stopping a child or
// the parent's turn cancels the child's pending call.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BuiltinEngine } from '../../src/agent/builtin-engine.js';
import type { AgentEvent, Turn } from '../../src/agent/types.js';
import type { HostTool, Principal, ToolCall } from '../../src/tools/types.js';
import { OWNER } from '../helpers/home.js';
import { textChunks, toolCallChunks, type RecordedRequest } from '../helpers/openai-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { drain, of } from '../helpers/turns.js';
import { useEngineHome, testProvider } from '../helpers/engine-home.js';
import { neverAnswers } from './helpers.js';

const drainLong = (turn: Turn, timeoutMs = 20_000) => drain(turn, timeoutMs);

const PARENT_PROMPT = 'You are a test home.';
const CHILD_PROMPT = /^You are "[^"]*", a subagent of Hearth/;
const SUBAGENT_TOOLS = ['dispatch_subagent', 'list_subagents', 'message_subagent', 'stop_subagent'];

type Msg = { role: string; content: unknown; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>; tool_call_id?: string };

const isChild = (body: { messages: Msg[] }) => CHILD_PROMPT.test(String(body.messages[0].content));
const last = (body: { messages: Msg[] }) => body.messages[body.messages.length - 1];
const notices = (body: { messages: Msg[] }) =>
  body.messages.filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('[runtime notice]')).map((m) => m.content as string);
const toolMessages = (body: { messages: Msg[] }) => body.messages.filter((m) => m.role === 'tool');
const toolNames = (r: RecordedRequest) => ((r.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
/** The run id a dispatch_subagent result names. */
const runIdIn = (text: string) => /run_id (run_[0-9a-f]+)/.exec(text)?.[1];

describe('subagents of the builtin engine', { timeout: 120_000 }, () => {
  const { home, model: server, engine, sessions } = useEngineHome({ systemPrompt: PARENT_PROMPT, timeoutMs: 10_000 });
  const provider = () => testProvider(server.url, 10_000);

  it('a parent dispatches two children that read two sensors in parallel; its final request carries both results', async () => {
    let firstRounds = 0;
    let releaseBarrier!: () => void;
    const barrier = new Promise<void>((resolve) => (releaseBarrier = resolve));
    let bothWaiting = false;
    server.setScript(async (body) => {
      if (isChild(body)) {
        const m = last(body);
        if (m.role === 'user') {
          // Neither child is answered before both have asked: they run at the same time.
          if (++firstRounds === 2) {
            bothWaiting = true;
            releaseBarrier();
          }
          await Promise.race([barrier, sleep(5000)]);
          const tool = /humidity/.test(String(m.content)) ? 'host__living_room_humidity' : 'host__living_room_temperature';
          return toolCallChunks([{ id: `c-${tool}`, name: tool, arguments: {} }]);
        }
        return textChunks(`Reading: ${String(m.content).split('\n')[0]}`);
      }
      if (!toolMessages(body).length) {
        return toolCallChunks([
          { id: 'd1', name: 'dispatch_subagent', arguments: { task: 'Read the living room temperature and report it.', name: 'temperature' } },
          { id: 'd2', name: 'dispatch_subagent', arguments: { task: 'Read the living room humidity and report it.', name: 'humidity' } },
        ]);
      }
      return textChunks(notices(body).length < 2 ? 'Checking both sensors now.' : 'Both sensors are read.');
    });
    const before = server.requests.length;
    const session = await sessions.open({ principal: OWNER, permissions: 'host', ephemeral: true });
    const { events, result } = await drainLong(await session.prompt('how warm and how humid is the living room?'));
    assert.deepEqual(result, { stopReason: 'completed' });
    assert.ok(bothWaiting, 'both children asked the model before either was answered');

    const started = of(events, 'subagent_start');
    assert.deepEqual(started.map((e) => e.name).sort(), ['humidity', 'temperature']);
    const ends = of(events, 'subagent_end');
    assert.equal(ends.length, 2);
    assert.ok(
      ends.every((e) => e.error === undefined),
      JSON.stringify(ends),
    );
    assert.deepEqual(new Set(ends.map((e) => e.run_id)), new Set(started.map((e) => e.run_id)));
    // The children's calls come unwrapped, with their run ids; the rest of their events wrapped.
    const requests = of(events, 'tool_request');
    assert.deepEqual(new Set(requests.map((e) => e.run_id)), new Set(started.map((e) => e.run_id)));
    assert.ok(of(events, 'subagent').some((e) => e.event.type === 'tool_result'));
    assert.equal(of(events, 'done').length, 1, 'one done: the parent’s');
    assert.equal(of(events, 'notice').length, 2);

    const sent = server.requests.slice(before);
    const parent = sent.filter((r) => !isChild(r.body));
    const children = sent.filter((r) => isChild(r.body));
    assert.equal(children.length, 4, 'two rounds per child');
    // The parent is offered the subagent tools, unprefixed; a child gets exactly the parent's host tools.
    for (const name of SUBAGENT_TOOLS) assert.ok(toolNames(parent[0]).includes(name), name);
    assert.ok(!toolNames(parent[0]).some((n) => n.startsWith('host__') && SUBAGENT_TOOLS.includes(n.slice(6))));
    for (const c of children) assert.deepEqual(toolNames(c), session.tools);
    // A child has its own prompt and messages: not the parent's prompt, not the parent's conversation.
    assert.ok(children.every((c) => c.body.messages[0].content !== PARENT_PROMPT));
    assert.ok(children.every((c) => !c.rawBody.includes('how warm and how humid')));
    const final = parent[parent.length - 1].body;
    const got = notices(final);
    assert.equal(got.length, 2);
    assert.ok(
      got.some((n) => /subagent "temperature" \(run_[0-9a-f]+\) finished: Reading: .*Living room temperature/.test(n)),
      got.join('\n'),
    );
    assert.ok(
      got.some((n) => /subagent "humidity" \(run_[0-9a-f]+\) finished: Reading: .*Living room humidity/.test(n)),
      got.join('\n'),
    );
    assert.equal(
      of(events, 'token')
        .map((e) => e.text)
        .join('')
        .endsWith('Both sensors are read.'),
      true,
    );
  });

  it('run ids reach the audit rows; in "jan" mode a child asks permission on the parent turn', async () => {
    server.setScript((body) => {
      if (isChild(body)) {
        return last(body).role === 'user'
          ? toolCallChunks([{ id: 'k1', name: 'host__kitchen_light', arguments: { action: 'turn_on', brightness_pct: 50 } }])
          : textChunks('The kitchen light is on.');
      }
      if (!toolMessages(body).length) {
        return toolCallChunks([
          { id: 'l1', name: 'host__living_room_lamp', arguments: { action: 'turn_off' } },
          { id: 'd1', name: 'dispatch_subagent', arguments: { task: 'Turn on the kitchen light at 50% brightness.', name: 'kitchen' } },
        ]);
      }
      return textChunks(notices(body).length ? 'Lamp off, kitchen on.' : 'Working on it.');
    });
    const session = await sessions.open({ principal: OWNER, permissions: 'jan', ephemeral: true });
    const turn = await session.prompt('lamp off and kitchen light on');
    const events: AgentEvent[] = [];
    const asked: Array<Extract<AgentEvent, { type: 'permission_request' }>> = [];
    for await (const e of turn) {
      events.push(e);
      if (e.type === 'permission_request') {
        asked.push(e);
        session.respondPermission(e.request_id, 'allow_once');
      }
    }
    assert.deepEqual(await turn.result(), { stopReason: 'completed' });
    assert.deepEqual(asked.map((a) => a.tool_name).sort(), ['host__kitchen_light', 'host__living_room_lamp']);
    const runId = of(events, 'subagent_start')[0].run_id;
    const rows = home.hearth.audit.tail(5);
    const kitchen = rows.filter((r) => r.tool === 'kitchen_light').at(-1)!;
    const lamp = rows.filter((r) => r.tool === 'living_room_lamp').at(-1)!;
    assert.equal(kitchen.runId, runId, 'the child’s call carries its run id');
    assert.equal(kitchen.session, session.id);
    assert.equal(kitchen.principal, OWNER.id, 'the child acts for the parent’s principal');
    assert.equal(kitchen.outcome, 'confirmed');
    assert.equal(lamp.runId, null, 'the parent’s own call has none');
    assert.equal(home.sim.state('kitchen_light.light').value, 'on');
    const request = of(events, 'tool_request').find((e) => e.tool_name === 'kitchen_light')!;
    assert.equal(request.run_id, runId);
  });

  it('a child cannot call a tool the parent does not have, and acts with the parent’s principal', async () => {
    const guest: Principal = { id: 'chat:sub-guest', roles: ['subguest'] };
    home.hearth.policy.add({ subject: 'role:subguest', targetType: 'any', target: '*', action: 'actuate', effect: 'deny', priority: 1000 });
    const seen: ToolCall[] = [];
    const whoami: HostTool = {
      name: 'whoami',
      description: 'Say who is asking.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      capability: 'read',
      handler: (_args, call) => {
        seen.push(call);
        return `you are ${call.principal.id}`;
      },
    };
    server.setScript((body) => {
      if (isChild(body)) {
        if (last(body).role === 'user') {
          return toolCallChunks([
            { id: 'x1', name: 'host__living_room_lamp', arguments: { action: 'turn_on' } },
            { id: 'x2', name: 'dispatch_subagent', arguments: { task: 'grandchild' } },
            { id: 'x3', name: 'host__whoami', arguments: {} },
          ]);
        }
        return textChunks(
          toolMessages(body)
            .map((m) => String(m.content).split(';')[0])
            .join(' | '),
        );
      }
      if (!toolMessages(body).length) return toolCallChunks([{ id: 'd1', name: 'dispatch_subagent', arguments: { task: 'Turn on the living room lamp.' } }]);
      return textChunks(notices(body).length ? 'It could not.' : 'Asked a helper.');
    });
    const session = await engine.createSession({
      tools: [...home.hearth.tools.forPrincipal(guest), whoami],
      principal: guest,
      permissions: 'host',
      ephemeral: true,
    });
    assert.ok(!session.tools.includes('host__living_room_lamp'), 'the guest has no lamp tool');
    const sent = home.commands().length;
    const before = server.requests.length;
    const { events, result } = await drainLong(await session.prompt('turn on the lamp'));
    assert.equal(result.stopReason, 'completed');
    const childResults = of(events, 'subagent')
      .map((e) => e.event)
      .filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result');
    assert.match(childResults.find((r) => r.id === 'x1')!.content, /^unknown tool "host__living_room_lamp"/);
    assert.equal(childResults.find((r) => r.id === 'x1')!.is_error, true);
    assert.match(childResults.find((r) => r.id === 'x2')!.content, /^unknown tool "dispatch_subagent"/, 'no grandchildren');
    assert.equal(home.commands().length, sent, 'nothing was sent to any device');
    assert.equal(of(events, 'subagent_start').length, 1);
    const child = server.requests.slice(before).find((r) => isChild(r.body))!;
    assert.ok(!toolNames(child).includes('host__living_room_lamp'));
    assert.ok(!toolNames(child).some((n) => SUBAGENT_TOOLS.includes(n)));
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0].principal, guest);
    assert.equal(seen[0].session, session.id);
    assert.equal(seen[0].runId, of(events, 'subagent_start')[0].run_id);
  });

  it('stop_subagent aborts a child’s pending call; the stop is the result, not a notice', async () => {
    const { tool: slow, seen } = neverAnswers('slow_scan', 'Scans until cancelled.');
    let runId: string | undefined;
    server.setScript(async (body) => {
      if (isChild(body)) return toolCallChunks([{ id: 's1', name: 'host__slow_scan', arguments: {} }]);
      const tools = toolMessages(body);
      if (!tools.length) return toolCallChunks([{ id: 'd1', name: 'dispatch_subagent', arguments: { task: 'Scan slowly.', name: 'scanner' } }]);
      if (tools.length === 1) {
        runId = runIdIn(String(tools[0].content));
        await waitFor('the child’s call', () => seen.signal);
        return toolCallChunks([{ id: 'st1', name: 'stop_subagent', arguments: { run_id: runId } }]);
      }
      return textChunks('Stopped the scan.');
    });
    const session = await engine.createSession({ tools: [slow], permissions: 'host', ephemeral: true });
    const before = server.requests.length;
    const { events, result } = await drainLong(await session.prompt('scan, then stop'));
    assert.deepEqual(result, { stopReason: 'completed' });
    assert.ok(runId);
    assert.equal(seen.signal!.aborted, true, 'the handler saw its signal abort');
    const cancelled = of(events, 'tool_request_cancelled');
    assert.deepEqual(
      cancelled.map((c) => c.request_id),
      [seen.requestId],
    );
    assert.deepEqual(of(events, 'subagent_end'), [{ type: 'subagent_end', run_id: runId, name: 'scanner', error: 'stopped' }]);
    const stopResult = of(events, 'tool_result').find((r) => r.id === 'st1')!;
    assert.match(stopResult.content, /^stopped subagent "scanner"/);
    const final = server.requests.at(-1)!.body;
    assert.equal(notices(final).length, 0);
    assert.equal(server.requests.slice(before).filter((r) => !isChild(r.body)).length, 3);
    assert.equal(session.subagentRuns()[0].status, 'stopped');
  });

  it('interrupting the parent turn stops its children and aborts their pending calls', async () => {
    const { tool: slow, seen } = neverAnswers('slow_scan', 'Scans until cancelled.');
    server.setScript((body) => {
      if (isChild(body)) return toolCallChunks([{ id: 's1', name: 'host__slow_scan', arguments: {} }]);
      if (!toolMessages(body).length) return toolCallChunks([{ id: 'd1', name: 'dispatch_subagent', arguments: { task: 'Scan slowly.' } }]);
      return textChunks('Waiting for the scan.');
    });
    const session = await engine.createSession({ tools: [slow], permissions: 'host', ephemeral: true });
    const turn = await session.prompt('scan');
    const done = drainLong(turn);
    await waitFor('the child’s call', () => seen.signal);
    turn.interrupt();
    const { events, result } = await done;
    assert.equal(result.stopReason, 'interrupted');
    assert.equal(seen.signal!.aborted, true);
    assert.equal(of(events, 'tool_request_cancelled').length, 1);
    assert.equal(of(events, 'subagent_end')[0]?.error, 'stopped');
    assert.ok(session.subagentRuns().every((r) => !r.active));
  });

  it('subagents follow builtins: off with builtins:false, unless subagents:true', async () => {
    const seen: string[][] = [];
    server.setScript((_body, _i, request) => {
      seen.push(toolNames(request));
      return textChunks('ok');
    });
    for (const opts of [{ builtins: false }, { builtins: false, subagents: true }, { subagents: false }, {}]) {
      const session = await engine.createSession({ tools: [], ephemeral: true, ...opts });
      await drainLong(await session.prompt('hi'));
      assert.deepEqual(session.tools, [], 'tools lists the host tools only');
    }
    assert.deepEqual(seen, [[], SUBAGENT_TOOLS, [], SUBAGENT_TOOLS]);
  });

  it('at most maxConcurrent children run; more are queued, steered with message_subagent, listed', async () => {
    const small = await BuiltinEngine.start({ provider: provider(), maxRounds: 6, subagents: { maxConcurrent: 1 }, defaultSystemPrompt: () => PARENT_PROMPT });
    try {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let gateCalls = 0;
      const hold: HostTool = {
        name: 'hold',
        description: 'Waits for the test.',
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        capability: 'read',
        handler: async () => {
          gateCalls++;
          await gate;
          return 'held';
        },
      };
      let listed = '';
      server.setScript(async (body) => {
        if (isChild(body)) {
          if (last(body).role === 'user' && !toolMessages(body).length) return toolCallChunks([{ id: 'h', name: 'host__hold', arguments: {} }]);
          const steer = body.messages.find((m: Msg) => typeof m.content === 'string' && m.content.startsWith('[message from the main assistant]'));
          return textChunks(`done${steer ? ` (${String(steer.content).slice(34)})` : ''}`);
        }
        const tools = toolMessages(body);
        if (!tools.length) {
          return toolCallChunks([
            { id: 'd1', name: 'dispatch_subagent', arguments: { task: 'first', name: 'one' } },
            { id: 'd2', name: 'dispatch_subagent', arguments: { task: 'second', name: 'two' } },
          ]);
        }
        if (tools.length === 2) {
          const first = runIdIn(String(tools[0].content))!;
          await waitFor('the first child holding', () => gateCalls === 1);
          return toolCallChunks([
            { id: 'm1', name: 'message_subagent', arguments: { run_id: first, message: 'say banana' } },
            { id: 'ls', name: 'list_subagents', arguments: {} },
          ]);
        }
        if (tools.length === 4 && !notices(body).length) {
          listed = String(tools[3].content);
          release();
          return textChunks('Waiting.');
        }
        return textChunks(notices(body).length === 2 ? 'Both done.' : 'One done.');
      });
      const session = await small.createSession({ tools: [hold], permissions: 'host', ephemeral: true });
      const { events, result } = await drainLong(await session.prompt('two jobs'));
      assert.deepEqual(result, { stopReason: 'completed' });
      const queued = of(events, 'subagent_queued');
      assert.equal(queued.length, 1);
      assert.equal(queued[0].name, 'two');
      assert.equal(queued[0].waiting, 1);
      const order = events.filter((e) => e.type === 'subagent_start' || e.type === 'subagent_end').map((e) => `${e.type}:${(e as { name: string }).name}`);
      assert.deepEqual(order, ['subagent_start:one', 'subagent_end:one', 'subagent_start:two', 'subagent_end:two'], 'the second starts when the first ends');
      assert.match(listed, /"one": running/);
      assert.match(listed, /"two": queued/);
      const final = server.requests.at(-1)!.body;
      assert.ok(
        notices(final).some((n) => /"one" .* finished: done \(say banana\)/.test(n)),
        notices(final).join('\n'),
      );
    } finally {
      await small.close();
    }
  });

  it('a child that outlives its turn’s wait reports with the next prompt', async () => {
    const quick = await BuiltinEngine.start({ provider: provider(), maxRounds: 4, subagents: { waitMs: 100 }, defaultSystemPrompt: () => PARENT_PROMPT });
    try {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const hold: HostTool = {
        name: 'hold',
        description: 'Waits for the test.',
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        capability: 'read',
        handler: async () => {
          await gate;
          return 'held long';
        },
      };
      server.setScript((body) => {
        if (isChild(body))
          return toolMessages(body).length ? textChunks('slow job finished') : toolCallChunks([{ id: 'h', name: 'host__hold', arguments: {} }]);
        if (!toolMessages(body).length && last(body).content === 'start a slow job') {
          return toolCallChunks([{ id: 'd1', name: 'dispatch_subagent', arguments: { task: 'slow', name: 'slow' } }]);
        }
        return textChunks(notices(body).length ? 'The slow job finished.' : 'Started.');
      });
      const session = await quick.createSession({ tools: [hold], permissions: 'host', ephemeral: true });
      const outside: AgentEvent[] = [];
      session.on('event', (e) => outside.push(e));
      const first = await drainLong(await session.prompt('start a slow job'));
      assert.equal(first.result.stopReason, 'completed');
      assert.match(of(first.events, 'notice').at(-1)!.text, /1 subagent\(s\) still running/);
      assert.equal(of(first.events, 'subagent_end').length, 0);
      release();
      await waitFor('the child to end', () => outside.some((e) => e.type === 'subagent_end'));
      const before = server.requests.length;
      const second = await drainLong(await session.prompt('anything new?'));
      assert.equal(second.result.stopReason, 'completed');
      const sent = server.requests[before].body;
      const n = notices(sent);
      assert.equal(n.length, 1);
      assert.match(n[0], /subagent "slow" \(run_[0-9a-f]+\) finished: slow job finished/);
      // The notice comes before the person's message.
      const idx = sent.messages.findIndex((m: Msg) => m.content === n[0]);
      assert.equal(sent.messages[idx + 1].content, 'anything new?');
      assert.equal(of(second.events, 'notice')[0].text, n[0]);
    } finally {
      await quick.close();
    }
  });
});
