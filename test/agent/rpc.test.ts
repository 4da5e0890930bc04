// The Jan kit's runtime protocol, both ends: the jan engine (client) drives a
// real second process, the built `hearth agent rpc`, whose builtin engine talks
// to a fake OpenAI-format model. Host tools defined here run here: the model's
// call travels model -> rpc server -> item/tool_request -> this process ->
// tool/respond -> the model's next request. Needs the built dist
// (`npx tsc -p tsconfig.json`).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RpcError } from '../../src/agent/rpc/jsonrpc.js';
import { findJanBin, JanEngine, resultToRespond, type JanSession } from '../../src/agent/rpc/jan-engine.js';
import { NoActiveTurnError, NotPendingError, TurnActiveError, type AgentEvent } from '../../src/agent/types.js';
import type { HostTool, Principal, ToolCall } from '../../src/tools/types.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { HEARTH } from '../helpers/cli.js';
import { startOpenAIServer, textChunks, toolCallChunks, type OpenAIServer } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';
import { drain, of } from '../helpers/turns.js';
import { agentRpcArgs, openAiModel, type RpcProcess, startRpcProcess } from '../helpers/agent-rpc.js';

const TESTER: Principal = { id: 'chat:rpc-tester', roles: ['owner'] };
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const dir = mkdtempSync(join(tmpdir(), 'hearth-rpc-'));
const devices = join(dir, 'devices');
mkdirSync(devices);

async function rejectsWith<T>(p: Promise<T>, check: (err: unknown) => void): Promise<void> {
  try {
    await p;
  } catch (err) {
    check(err);
    return;
  }
  assert.fail('expected a rejection');
}

describe('hearth agent rpc driven by the jan engine', { timeout: 120_000 }, () => {
  let broker: TestBroker;
  let model: OpenAIServer;
  let engine: JanEngine;
  const rpcArgs = () =>
    agentRpcArgs({
      mqttUrl: broker.url,
      devices,
      db: join(dir, 'hearth.db'),
      settings: { ...openAiModel(model.url), 'agent.maxRounds': '4', 'agent.timeoutMs': '10000' },
    });

  const echoCalls: Array<{ args: Record<string, unknown>; call: ToolCall }> = [];
  const echoTool: HostTool = {
    name: 'echo_tool',
    description: 'Echo the text back.',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
    capability: 'read',
    handler: (args, call) => {
      echoCalls.push({ args, call });
      return { text: `echo: ${String(args.text)}`, details: { secret: 'never-to-the-model' } };
    },
  };
  const snapTool: HostTool = {
    name: 'snap_tool',
    description: 'Take a picture.',
    parameters: { type: 'object', properties: {} },
    capability: 'read',
    handler: () => ({
      text: 'one frame',
      images: [{ url: `data:image/png;base64,${PNG_1PX}`, mimeType: 'image/png', bytes: Buffer.from(PNG_1PX, 'base64').length }],
    }),
  };
  let pressed = 0;
  const pressTool: HostTool = {
    name: 'press_tool',
    description: 'Press the button.',
    parameters: { type: 'object', properties: {} },
    capability: 'actuator',
    handler: () => {
      pressed++;
      return 'pressed';
    },
  };
  const waitState = { called: false, aborted: false, requestId: '' };
  const waitTool: HostTool = {
    name: 'wait_tool',
    description: 'Waits until cancelled.',
    parameters: { type: 'object', properties: {} },
    capability: 'read',
    handler: (_args, call) => {
      waitState.called = true;
      waitState.requestId = call.requestId;
      return new Promise((resolve) => {
        call.signal.addEventListener('abort', () => {
          waitState.aborted = true;
          resolve('too late: this answer must never be sent');
        });
      });
    },
  };

  before(async () => {
    assert.ok(existsSync(HEARTH), `build first: ${HEARTH} is missing (npx tsc -p tsconfig.json)`);
    broker = await startAedes();
    model = await startOpenAIServer();
    engine = await JanEngine.start({
      bin: process.execPath,
      args: rpcArgs(),
      env: { HEARTH_LOG_PRETTY: 'false', HEARTH_PRINCIPAL: 'cli:rpc-owner' },
      cwd: dir,
    });
  });
  after(async () => {
    await engine?.close({ force: true });
    await model?.close();
    await broker?.stop();
  });

  it('does the handshake and takes the limits from input_content_parts', () => {
    assert.equal(engine.protocolVersion, 1);
    assert.equal(engine.serverInfo.name, 'hearth');
    assert.equal(typeof engine.serverInfo.version, 'string');
    assert.deepEqual(engine.capabilities, { session: true, turn: true });
    assert.deepEqual(engine.limits, {
      mime_types: ['image/png', 'image/jpeg', 'image/gif', 'image/webp'],
      max_image_bytes: 5 * 1024 * 1024,
      max_message_image_bytes: 10 * 1024 * 1024,
      max_images: 8,
    });
    assert.equal(engine.maxLineBytes, 16 * 1024 * 1024);
    assert.equal(engine.maxEchoBytes, 4096);
    assert.equal(typeof engine.pid, 'number');
  });

  it('session/start returns the host__ names and the function specs (the home tools plus the client tools)', async () => {
    const session = await engine.createSession({ tools: [echoTool], permissions: 'host', principal: TESTER, ephemeral: true });
    assert.ok(session.tools.includes('host__echo_tool'), session.tools.join(','));
    assert.ok(session.tools.includes('host__get_state'), 'the home tools come along');
    const spec = session.toolSpecs.find((s) => s.function.name === 'host__echo_tool');
    assert.deepEqual(spec, { type: 'function', function: { name: 'host__echo_tool', description: 'Echo the text back.', parameters: echoTool.parameters } });
    const again = await session.getTools();
    assert.deepEqual(again.tools, session.tools);
    session.setTools([echoTool, snapTool]);
    await waitFor('the new tool set', () => session.tools.includes('host__snap_tool'));
    assert.ok(session.toolSpecs.some((s) => s.function.name === 'host__snap_tool'));
    await session.close();
  });

  it('a turn with a tool call round-trips: the handler runs here and its result reaches the model', async () => {
    model.setScript([toolCallChunks([{ id: 'c1', name: 'host__echo_tool', arguments: { text: 'hi' } }]), textChunks('It said hi.')]);
    const before = model.requests.length;
    const session = await engine.createSession({ tools: [echoTool], permissions: 'host', principal: TESTER, systemPrompt: 'You are a test.' });
    const seen: string[] = [];
    session.on('event', (e) => seen.push(e.type));
    const turn = await session.prompt('echo hi');
    const { events, result } = await drain(turn);
    assert.deepEqual(result, { stopReason: 'completed' });
    const request = of(events, 'tool_request')[0];
    assert.ok(request, events.map((e) => e.type).join(','));
    assert.equal(request.tool_name, 'echo_tool');
    assert.deepEqual(request.args, { text: 'hi' });
    assert.equal(request.run_id, null);
    assert.equal(of(events, 'tool_request').length, 1, 'one tool_request per call');
    assert.equal(of(events, 'tool_result')[0].content, 'echo: hi');
    assert.equal(
      of(events, 'token')
        .map((e) => e.text)
        .join(''),
      'It said hi.',
    );
    assert.equal(of(events, 'done').length, 1);
    assert.deepEqual(
      seen,
      events.map((e) => e.type),
      'session listeners see the same events',
    );

    const last = echoCalls.at(-1)!;
    assert.deepEqual(last.args, { text: 'hi' });
    assert.equal(last.call.requestId, request.request_id);
    assert.equal(last.call.session, session.id);
    assert.equal(last.call.runId, null);
    assert.deepEqual(last.call.principal, TESTER);

    const [first, second] = model.requests.slice(before);
    assert.equal(first.body.messages[0].content, 'You are a test.');
    const toolMsg = second.body.messages.find((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMsg.tool_call_id, 'c1');
    assert.equal(toolMsg.content, 'echo: hi');
    assert.ok(!second.rawBody.includes('never-to-the-model'), 'details never reach the model');
    assert.deepEqual(of(events, 'tool_details')[0]?.details, { secret: 'never-to-the-model' });
    await session.close();
  });

  it('an image result travels as a data URL part and reaches the model in the next user message', async () => {
    model.setScript([toolCallChunks([{ id: 'p1', name: 'host__snap_tool', arguments: {} }]), textChunks('A dot.')]);
    const before = model.requests.length;
    const session = await engine.createSession({ tools: [snapTool], permissions: 'host', principal: TESTER, ephemeral: true });
    const { result } = await drain(await session.prompt('take a picture'));
    assert.equal(result.stopReason, 'completed');
    const second = model.requests[before + 1];
    const toolMsg = second.body.messages.find((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMsg.content, 'one frame');
    const user = second.body.messages.at(-1);
    assert.equal(user.role, 'user');
    assert.ok(
      user.content.some(
        (p: { type: string; image_url?: { url: string } }) => p.type === 'image_url' && p.image_url!.url === `data:image/png;base64,${PNG_1PX}`,
      ),
      JSON.stringify(user.content).slice(0, 300),
    );
    await session.close();
  });

  it('a permission_request is answered with respondPermission(allow_once)', async () => {
    model.setScript([toolCallChunks([{ id: 'b1', name: 'host__press_tool', arguments: {} }]), textChunks('Pressed.')]);
    const session = await engine.createSession({ tools: [pressTool], permissions: 'jan', principal: TESTER, ephemeral: true });
    const turn = await session.prompt('press it');
    const events: AgentEvent[] = [];
    let asked: Extract<AgentEvent, { type: 'permission_request' }> | undefined;
    for await (const e of turn) {
      events.push(e);
      if (e.type === 'permission_request') {
        asked = e;
        assert.equal(pressed, 0, 'nothing runs before the answer');
        session.respondPermission(e.request_id, 'allow_once');
        assert.throws(() => session.respondPermission(e.request_id, 'allow_once'), NotPendingError);
      }
    }
    assert.deepEqual(await turn.result(), { stopReason: 'completed' });
    assert.ok(asked, events.map((e) => e.type).join(','));
    assert.equal(asked.tool_name, 'host__press_tool');
    assert.equal(asked.capability, 'actuator');
    assert.equal(pressed, 1);
    assert.equal(of(events, 'tool_result')[0].content, 'pressed');
    await session.close();
  });

  it('interrupt settles the turn as interrupted; the pending call is cancelled and its signal aborts', async () => {
    model.setScript([toolCallChunks([{ id: 'w1', name: 'host__wait_tool', arguments: {} }]), textChunks('never')]);
    const session = await engine.createSession({ tools: [waitTool], permissions: 'host', principal: TESTER, ephemeral: true });
    const turn = await session.prompt('wait');
    await waitFor('the wait tool to be called', () => waitState.called, 10_000);
    assert.equal(waitState.aborted, false);
    turn.interrupt();
    const { events, result } = await drain(turn);
    assert.equal(result.stopReason, 'interrupted');
    assert.equal(waitState.aborted, true, 'the handler saw its signal abort');
    const cancelled = of(events, 'tool_request_cancelled');
    assert.equal(cancelled.length, 1);
    assert.equal(cancelled[0].request_id, waitState.requestId);
    assert.equal(cancelled[0].reason, 'interrupted');
    await session.close();
  });

  it('a second turn while one runs is refused: -32001 turn_active, retryable, as TurnActiveError', async () => {
    model.setScript([{ hang: true }, textChunks('later')]);
    const before = model.requests.length;
    const session = await engine.createSession({ tools: [], permissions: 'host', principal: TESTER, ephemeral: true });
    const turn = await session.prompt('first');
    await model.waitForRequests(before + 1, 10_000);
    await rejectsWith(session.prompt('second'), (err) => {
      assert.ok(err instanceof TurnActiveError, String(err));
      assert.equal(err.retryable, true);
    });
    // The wire itself: the code and data.
    await rejectsWith(engine.request('turn/start', { sessionId: session.id, input: 'third' }), (err) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, -32001);
      assert.deepEqual(err.data, { kind: 'turn_active', retryable: true });
    });
    turn.interrupt();
    assert.equal((await drain(turn)).result.stopReason, 'interrupted');
    // Retry after the turn: accepted.
    const next = await session.prompt('again');
    assert.equal((await drain(next)).result.stopReason, 'completed');
    await session.close();
  });

  it('malformed tools are rejected with -32602 invalid_tools and the reason', async () => {
    const base = { description: '', parameters: { type: 'object', properties: {} }, capability: 'read' as const, handler: () => '' };
    const cases: Array<[HostTool[], RegExp]> = [
      [[{ ...base, name: 'bad name' }], /bad name.*A-Z a-z 0-9/],
      [[{ ...base, name: 'a__b' }], /must not contain "__"/],
      [[{ ...base, name: 'x'.repeat(59) }], /1 to 58/],
      [
        [
          { ...base, name: 'twice' },
          { ...base, name: 'twice' },
        ],
        /declared twice/,
      ],
      [[{ ...base, name: 'get_state' }], /taken by one of this home's tools/],
      [[{ ...base, name: 'arr', parameters: { type: 'array' } }], /must describe an object/],
      [[{ ...base, name: 'cap', capability: 'write' as never }], /capability/],
    ];
    for (const [tools, reason] of cases) {
      await rejectsWith(engine.createSession({ tools, principal: TESTER, ephemeral: true }), (err) => {
        assert.ok(err instanceof RpcError, String(err));
        assert.equal(err.code, -32602);
        assert.equal(err.kind, 'invalid_tools');
        assert.match(String((err.data as { reason: string }).reason), reason);
      });
    }
    await rejectsWith(engine.request('session/start', { cwd: dir, tools: [{ name: 'ok', extra: 1 }] }), (err) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.kind, 'invalid_tools');
      assert.match(err.message, /unknown field "extra"/);
    });
    await rejectsWith(engine.request('session/start', { cwd: dir, nonsense: true }), (err) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, -32602);
      assert.match(err.message, /unknown parameter "nonsense"/);
    });
  });

  it('the jan engine has the kit verbs: model/set, steer, fork, reset, list, resume and archive', async () => {
    const holder: { session?: JanSession } = {};
    const steerTool: HostTool = {
      name: 'steer_tool',
      description: 'Steers the turn it is called in.',
      parameters: { type: 'object', properties: {} },
      capability: 'read',
      // The kit's steer() from inside a handler: the guidance joins the turn's next request.
      handler: async () => {
        await holder.session!.steer('Be brief.');
        return 'steered';
      },
    };
    const userTexts = (i: number) =>
      model.requests[i].body.messages.filter((m: { role: string }) => m.role === 'user').map((m: { content: string }) => m.content);
    model.setScript([
      toolCallChunks([{ id: 's1', name: 'host__steer_tool', arguments: {} }]),
      textChunks('Brief.'),
      textChunks('Forked.'),
      textChunks('Fresh.'),
    ]);
    const session = await engine.createSession({ tools: [steerTool], permissions: 'host', principal: TESTER, builtins: false, systemPrompt: 'S' });
    holder.session = session;
    assert.deepEqual(session.tools, ['host__steer_tool'], 'builtins:false: no home tools');
    assert.equal(await session.setModel('steer-model'), 'steer-model');
    assert.equal(session.model, 'steer-model');
    const first = model.requests.length;
    assert.deepEqual((await drain(await session.prompt('go'))).result, { stopReason: 'completed' });
    assert.equal(model.requests[first].body.model, 'steer-model');
    assert.deepEqual(userTexts(first + 1), ['go', 'Be brief.']);
    await rejectsWith(session.steer('late'), (err) => assert.ok(err instanceof NoActiveTurnError, String(err)));

    const fork = await engine.forkSession(session);
    assert.notEqual(fork.id, session.id);
    assert.deepEqual(fork.tools, ['host__steer_tool']);
    assert.equal(fork.turns, 1);
    const forked = model.requests.length;
    assert.equal((await drain(await fork.prompt('in the fork'))).result.stopReason, 'completed');
    assert.deepEqual(userTexts(forked), ['go', 'Be brief.', 'in the fork']);

    await session.reset();
    assert.equal(session.turns, 0);
    const fresh = model.requests.length;
    assert.equal((await drain(await session.prompt('fresh'))).result.stopReason, 'completed');
    assert.deepEqual(userTexts(fresh), ['fresh']);

    const listed = await engine.listSessions();
    assert.equal(listed.find((s) => s.id === session.id)?.turns, 1);
    assert.equal(listed.find((s) => s.id === fork.id)?.turns, 2);
    const reopened = await engine.resumeSession(fork.id, { tools: [steerTool], principal: TESTER });
    assert.equal(reopened?.id, fork.id);
    assert.deepEqual(reopened?.tools, ['host__steer_tool']);
    assert.equal(await engine.resumeSession('no-such-session'), undefined);

    await session.archive();
    assert.ok(!(await engine.listSessions()).some((s) => s.id === session.id), 'an archived session leaves the list');
    await assert.rejects(session.prompt('again'), /archived/);
    await rejectsWith(engine.request('turn/start', { sessionId: session.id, input: 'again' }), (err) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.kind, 'archived_session');
    });
    await reopened?.close();
  });

  it('close() closes stdin and the runtime exits on its own', async () => {
    const other = await JanEngine.start({ bin: process.execPath, args: rpcArgs().map((a) => (a.endsWith('hearth.db') ? join(dir, 'other.db') : a)), cwd: dir });
    try {
      const session = await other.createSession({ tools: [echoTool], principal: TESTER, ephemeral: true });
      assert.ok(session.tools.includes('host__echo_tool'));
      const started = Date.now();
      await other.close();
      assert.ok(Date.now() - started < 5000, 'exited before the kill deadline');
      const { code, signal } = await other.exited;
      assert.equal(signal, null);
      assert.equal(code, 0);
      assert.equal(other.alive, false);
      await assert.rejects(other.createSession({}), /closed/);
    } finally {
      await other.close({ force: true });
    }
  });

  it('the runtime exiting mid-turn settles the turn with an error and a clear message', async () => {
    model.setScript([{ hang: true }]);
    const before = model.requests.length;
    const session: JanSession = await engine.createSession({ tools: [], permissions: 'host', principal: TESTER, ephemeral: true });
    const turn = await session.prompt('hang');
    await model.waitForRequests(before + 1, 10_000);
    engine.child.kill('SIGKILL');
    const { events, result } = await drain(turn);
    assert.equal(result.stopReason, 'error');
    assert.match(result.error ?? '', /exited unexpectedly \(signal SIGKILL\)/);
    assert.equal(of(events, 'error')[0]?.code, 'runtime_exited');
    await assert.rejects(session.prompt('again'), /exited unexpectedly/);
    await assert.rejects(engine.createSession({}), /exited unexpectedly/);
  });
});

// ---------------------------------------------------------------- raw protocol

describe('hearth agent rpc at the raw protocol level', { timeout: 120_000 }, () => {
  let broker: TestBroker;
  let model: OpenAIServer;
  let c: RpcProcess;

  before(async () => {
    assert.ok(existsSync(HEARTH), `build first: ${HEARTH} is missing`);
    broker = await startAedes();
    model = await startOpenAIServer();
    c = startRpcProcess(agentRpcArgs({ mqttUrl: broker.url, devices, db: join(dir, 'raw.db'), settings: openAiModel(model.url) }), {
      cwd: dir,
      protocolOnly: true,
      waitMs: 15_000,
    });
  });
  after(async () => {
    c?.kill();
    await model?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses calls before initialize (-32002), answers parse errors (-32700) and unknown methods (-32601)', async () => {
    c.send({ jsonrpc: '2.0', id: 1, method: 'session/list', params: {} });
    const early = await c.wait('the -32002 answer', (m) => m.id === 1);
    assert.equal(early.error.code, -32002);
    c.send({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: 1, clientInfo: { name: 'raw', version: '0' } } });
    const init = await c.wait('initialize', (m) => m.id === 2);
    assert.equal(init.result.protocolVersion, 1);
    assert.equal(init.result.input_content_parts.max_line_bytes, 16 * 1024 * 1024);
    // Still not ready until the initialized notification.
    c.send({ jsonrpc: '2.0', id: 3, method: 'session/list', params: {} });
    assert.equal((await c.wait('-32002 before initialized', (m) => m.id === 3)).error.code, -32002);
    c.send({ jsonrpc: '2.0', method: 'initialized' });
    c.send({ jsonrpc: '2.0', id: 4, method: 'session/list', params: {} });
    assert.deepEqual((await c.wait('session/list', (m) => m.id === 4)).result, { sessions: [] });
    await c.writeRaw('{this is not json\n');
    const parse = await c.wait('the parse error', (m) => m.id === null && m.error?.code === -32700);
    assert.match(parse.error.message, /parse error/);
    c.send({ jsonrpc: '2.0', id: 5, method: 'no/such/method', params: {} });
    assert.equal((await c.wait('-32601', (m) => m.id === 5)).error.code, -32601);
  });

  it('a second tool/respond for the same request is refused with not_pending; the turn completes', async () => {
    model.setScript([toolCallChunks([{ id: 'r1', name: 'host__echo_tool', arguments: { text: 'raw' } }]), textChunks('done')]);
    c.send({
      jsonrpc: '2.0',
      id: 10,
      method: 'session/start',
      params: {
        cwd: dir,
        permissions: 'host',
        ephemeral: true,
        tools: [{ name: 'echo_tool', description: 'echo', parameters: { type: 'object', properties: { text: { type: 'string' } } }, capability: 'read' }],
      },
    });
    const started = await c.wait('session/start', (m) => m.id === 10);
    const sessionId = started.result.sessionId as string;
    assert.ok(started.result.tools.includes('host__echo_tool'));
    c.send({ jsonrpc: '2.0', id: 11, method: 'turn/start', params: { sessionId, input: 'echo raw' } });
    const turnStart = await c.wait('turn/start', (m) => m.id === 11);
    const turnId = turnStart.result.turnId as string;
    const answerAt = c.lines.indexOf(turnStart);
    const firstItem = c.lines.findIndex((m) => m.method?.startsWith('item/') && m.params.turnId === turnId);
    assert.ok(firstItem === -1 || firstItem > answerAt, 'the answer to turn/start comes before the turn events');
    const req = await c.wait('item/tool_request', (m) => m.method === 'item/tool_request');
    assert.equal(req.params.sessionId, sessionId);
    assert.equal(req.params.turnId, turnId);
    assert.equal(req.params.event.type, 'tool_request');
    assert.equal(req.params.event.tool_name, 'echo_tool');
    assert.deepEqual(req.params.event.args, { text: 'raw' });
    const requestId = req.params.event.request_id as string;
    c.send({ jsonrpc: '2.0', id: 12, method: 'tool/respond', params: { requestId, content: 'echo: raw', details: { where: 'client' } } });
    assert.deepEqual((await c.wait('tool/respond', (m) => m.id === 12)).result, {});
    c.send({ jsonrpc: '2.0', id: 13, method: 'tool/respond', params: { requestId, content: 'again' } });
    const again = await c.wait('second tool/respond', (m) => m.id === 13);
    assert.equal(again.error.code, -32602);
    assert.equal(again.error.data.kind, 'not_pending');
    const done = await c.wait('turn/completed', (m) => m.method === 'turn/completed' && m.params.turnId === turnId);
    assert.equal(done.params.stopReason, 'completed');
    assert.equal(done.params.sessionId, sessionId);
    const result = c.lines.find((m) => m.method === 'item/tool_result' && m.params.turnId === turnId);
    assert.equal(result?.params.event.content, 'echo: raw');
    assert.equal(c.lines.filter((m) => m.method === 'item/tool_request').length, 1);
    // The model got the client's answer.
    const toolMsg = model.requests.at(-1)!.body.messages.find((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMsg.content, 'echo: raw');
    // permission/respond for nothing pending.
    c.send({ jsonrpc: '2.0', id: 14, method: 'permission/respond', params: { requestId: 'nope', decision: 'allow_once' } });
    assert.equal((await c.wait('permission/respond', (m) => m.id === 14)).error.data.kind, 'not_pending');
  });

  it('a line over max_line_bytes is skipped with an error, and the server goes on', async () => {
    const big = Buffer.alloc(16 * 1024 * 1024 + 100, 0x78);
    await c.writeRaw(big);
    await c.writeRaw('\n');
    const tooLong = await c.wait('the line_too_long error', (m) => m.id === null && m.error?.data?.kind === 'line_too_long', 30_000);
    assert.equal(tooLong.error.code, -32600);
    c.send({ jsonrpc: '2.0', id: 20, method: 'session/list', params: {} });
    const list = await c.wait('session/list after the long line', (m) => m.id === 20);
    assert.equal(list.result.sessions.length, 1);
    assert.equal(list.result.sessions[0].turns, 1);
  });

  it('closing stdin ends the process cleanly', async () => {
    const exited = new Promise<number | null>((resolve) => c.child.once('exit', (code) => resolve(code)));
    c.child.stdin.end();
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timeout'), 15_000)))]);
    clearTimeout(timer);
    assert.equal(code, 0, c.stderr().slice(-2000));
  });
});

describe('jan engine helpers', () => {
  it('findJanBin: JAN_BIN when it exists, else jan on PATH, else undefined', () => {
    const bin = mkdtempSync(join(tmpdir(), 'hearth-janbin-'));
    try {
      const jan = join(bin, 'jan');
      writeFileSync(jan, '#!/bin/sh\n');
      chmodSync(jan, 0o755);
      const other = join(bin, 'my-jan');
      writeFileSync(other, '#!/bin/sh\n');
      chmodSync(other, 0o755);
      assert.equal(findJanBin({ PATH: bin }), jan);
      assert.equal(findJanBin({ PATH: bin, JAN_BIN: other }), other);
      assert.equal(findJanBin({ PATH: bin, JAN_BIN: join(bin, 'missing') }), jan);
      assert.equal(findJanBin({ PATH: join(bin, 'nowhere') }), undefined);
      assert.equal(findJanBin({}), undefined);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('resultToRespond maps results as the kit client does', () => {
    assert.deepEqual(resultToRespond('plain'), { content: 'plain', isError: false });
    assert.deepEqual(resultToRespond({ error: 'no such lamp' }), { content: 'no such lamp', isError: true });
    assert.deepEqual(resultToRespond({ text: 'bad', isError: true, details: { a: 1 } }), { content: 'bad', isError: true, details: { a: 1 } });
    assert.deepEqual(resultToRespond({ text: 'x', details: [1, 2] as never }), { content: 'x', isError: false, details: { value: [1, 2] } });
    const url = `data:image/png;base64,${PNG_1PX}`;
    assert.deepEqual(resultToRespond({ text: 'pic', images: [{ url, mimeType: 'image/png', bytes: 70 }] }), {
      content: [
        { type: 'text', text: 'pic' },
        { type: 'image_url', image_url: { url } },
      ],
      isError: false,
    });
    const tooBig = resultToRespond({ text: 'pic', images: [{ url, mimeType: 'image/png', bytes: 6 * 1024 * 1024 }] });
    assert.match(tooBig.content as string, /1 image\(s\) left out/);
  });
});
