// The Jan kit's runtime protocol as PROTOCOL.md writes it, driven the way a
// kit client drives a runtime: the built `hearth agent rpc` as a child process
// (its own process group, killed when the test ends however it ends), JSON-RPC
// lines on its stdin/stdout, a fake OpenAI-compatible model on the wire and a
// real SQLite file, so a session outlives the process that started it.
// Needs the built dist (`npx tsc -p tsconfig.json`).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { HEARTH, runHearth } from '../helpers/cli.js';
import { startOpenAIServer, textChunks, toolCallChunks, type OpenAIServer, type RecordedRequest } from '../helpers/openai-server.js';
import { sleep } from '../helpers/wait.js';
import { agentRpcArgs, openAiModel, type RpcProcess, startRpcProcess } from '../helpers/agent-rpc.js';

type Msg = Record<string, any>;

const dir = mkdtempSync(join(tmpdir(), 'hearth-rpc-protocol-'));
const devices = join(dir, 'devices');
mkdirSync(devices);

const CLOCK = {
  name: 'get_time',
  description: 'Read the current UTC time from this machine.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
  capability: 'read',
};

// ------------------------------------------------------------------ a runtime on stdio

class Runtime {
  private nextId = 1;
  readonly lines: Msg[];
  readonly exited: Promise<number | null>;

  constructor(readonly proc: RpcProcess) {
    this.lines = proc.lines;
    this.exited = proc.exited;
  }

  static async start(db: string, broker: TestBroker, model: OpenAIServer, principal = 'cli:rpc-owner'): Promise<Runtime> {
    const settings = { ...openAiModel(model.url, 'test-model'), 'agent.maxRounds': '4', 'agent.timeoutMs': '10000' };
    const rt = new Runtime(
      startRpcProcess(agentRpcArgs({ mqttUrl: broker.url, devices, db, settings }), { cwd: dir, env: { HEARTH_PRINCIPAL: principal }, protocolOnly: true }),
    );
    const init = await rt.call('initialize', { protocolVersion: 1, clientInfo: { name: 'rpc-protocol-test', version: '1' } });
    assert.equal(init.protocolVersion, 1);
    rt.notify('initialized');
    return rt;
  }

  send(msg: Msg): void {
    this.proc.send(msg);
  }

  notify(method: string, params?: unknown): void {
    this.send({ jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) });
  }

  /** The whole answer line of a request. */
  async ask(method: string, params: unknown): Promise<Msg> {
    const id = this.nextId++;
    this.send({ jsonrpc: '2.0', id, method, params });
    return this.wait(`the answer to ${method} #${id}`, (m) => m.id === id && ('result' in m || 'error' in m));
  }

  /** The result of a request; fails the test on an error answer. */
  async call(method: string, params: unknown): Promise<any> {
    const answer = await this.ask(method, params);
    assert.ok(!answer.error, `${method} failed: ${JSON.stringify(answer.error)}`);
    return answer.result;
  }

  /** The error of a request that must fail. */
  async refused(method: string, params: unknown): Promise<{ code: number; message: string; data?: any }> {
    const answer = await this.ask(method, params);
    assert.ok(answer.error, `${method} should have been refused; got ${JSON.stringify(answer.result)}`);
    return answer.error;
  }

  wait(what: string, probe: (m: Msg) => boolean, timeoutMs = 20_000): Promise<Msg> {
    return this.proc.wait(what, probe, timeoutMs);
  }

  completed(turnId: string): Promise<Msg> {
    return this.wait(`turn/completed of ${turnId}`, (m) => m.method === 'turn/completed' && m.params.turnId === turnId);
  }

  /** A turn from start to turn/completed. */
  async turn(sessionId: string, input: string): Promise<{ turnId: string; completed: Msg }> {
    const { turnId } = await this.call('turn/start', { sessionId, input });
    return { turnId, completed: await this.completed(turnId) };
  }

  tokens(turnId: string): string {
    return this.lines
      .filter((m) => m.method === 'item/token' && m.params.turnId === turnId)
      .map((m) => m.params.event.text)
      .join('');
  }

  /** Close stdin and wait for a clean exit (the group is killed if it does not come). */
  async stop(): Promise<number | null> {
    this.proc.child.stdin.end();
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([this.exited, new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 15_000)))]);
    clearTimeout(timer);
    if (code === 'timeout') {
      this.proc.kill();
      assert.fail(`hearth agent rpc did not exit after its stdin closed\nstderr: ${this.proc.stderr().slice(-1500)}`);
    }
    return code;
  }

  kill(): void {
    this.proc.kill();
  }
}

// ------------------------------------------------------------------ the model's side

function lastUserText(body: any): string {
  const users = (body?.messages ?? []).filter((m: Msg) => m.role === 'user' && typeof m.content === 'string');
  return users.at(-1)?.content ?? '';
}

function toolNames(request: RecordedRequest): string[] {
  return (request.body.tools ?? []).map((t: Msg) => t.function.name).sort();
}

function userTexts(request: RecordedRequest): string[] {
  return request.body.messages.filter((m: Msg) => m.role === 'user').map((m: Msg) => m.content);
}

describe('hearth agent rpc speaks the kit protocol (PROTOCOL.md)', { timeout: 180_000 }, () => {
  let broker: TestBroker;
  let model: OpenAIServer;
  const runtimes: Runtime[] = [];
  const db = join(dir, 'sessions.db');
  const start = async (file = db, principal?: string) => {
    const rt = await Runtime.start(file, broker, model, principal);
    runtimes.push(rt);
    return rt;
  };
  /** Everything the model answers: "Heard: <the last user text>". */
  const parrot = (body: any) => textChunks(`Heard: ${lastUserText(body)}`);

  before(async () => {
    assert.ok(existsSync(HEARTH), `build first: ${HEARTH} is missing (npx tsc -p tsconfig.json)`);
    broker = await startAedes();
    model = await startOpenAIServer({ script: parrot });
  });
  after(async () => {
    for (const rt of runtimes) rt.kill();
    await Promise.all(runtimes.map((rt) => rt.exited));
    await model?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('builtins:false advertises exactly the declared tools, to the client and to the model; the default brings the home tools', async () => {
    model.setScript(parrot);
    const rt = await start(join(dir, 'builtins.db'));
    const bare = await rt.call('session/start', { cwd: dir, ephemeral: true, builtins: false, tools: [CLOCK] });
    assert.deepEqual(bare.tools, ['host__get_time']);
    assert.deepEqual(bare.toolSpecs, [
      { type: 'function', function: { name: 'host__get_time', description: CLOCK.description, parameters: CLOCK.parameters } },
    ]);
    assert.deepEqual((await rt.call('session/tools/get', { sessionId: bare.sessionId })).tools, ['host__get_time']);
    const before = model.requests.length;
    await rt.turn(bare.sessionId, 'what time is it?');
    assert.deepEqual(toolNames(model.requests[before]), ['host__get_time'], 'the model is offered nothing else');
    // A declared name that is one of the home's tools is the client's own when builtins are off.
    const own = await rt.call('session/start', { cwd: dir, ephemeral: true, builtins: false, tools: [{ ...CLOCK, name: 'get_state' }] });
    assert.deepEqual(own.tools, ['host__get_state']);

    const full = await rt.call('session/start', { cwd: dir, ephemeral: true, tools: [CLOCK] });
    assert.ok(full.tools.includes('host__get_time'));
    assert.ok(full.tools.includes('host__get_state'), `the home tools come with builtins: ${full.tools.join(',')}`);
    // Replacing the tools keeps the session's choice.
    const set = await rt.call('session/tools/set', { sessionId: bare.sessionId, tools: [CLOCK, { ...CLOCK, name: 'get_date' }] });
    assert.deepEqual(set.tools.sort(), ['host__get_date', 'host__get_time']);
    assert.equal(await rt.stop(), 0);
  });

  it('a device that appears reaches the builtins sessions only; a builtins:false session keeps exactly its tools', async () => {
    model.setScript(parrot);
    const file = join(dir, 'devices.db');
    // Actuators are denied unless a rule allows them: allow this principal the switches.
    const allowed = await runHearth([
      'policy',
      'allow',
      'cli:rpc-owner',
      '--kind',
      'switch',
      '--db',
      file,
      '--mqtt-url',
      broker.url,
      '--no-demo',
      '--devices',
      devices,
    ]);
    assert.equal(allowed.code, 0, allowed.stderr);
    const rt = await start(file);
    const full = await rt.call('session/start', { cwd: dir, ephemeral: true, tools: [CLOCK] });
    const bare = await rt.call('session/start', { cwd: dir, ephemeral: true, builtins: false, tools: [CLOCK] });
    const client = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    try {
      await client.publishAsync(
        'homeassistant/switch/rpc_porch/config',
        JSON.stringify({ name: 'Porch light', command_topic: 'rpc-test/porch/set', state_topic: 'rpc-test/porch/state', unique_id: 'rpc_porch_switch' }),
        { qos: 1, retain: true },
      );
      // Ask until the new set is there (the session takes it between turns, as soon as it is announced).
      let grown: string[] = full.tools;
      const deadline = Date.now() + 20_000;
      while (grown.length <= full.tools.length) {
        assert.ok(Date.now() < deadline, `timed out waiting for the porch light among the home tools: ${grown.join(',')}`);
        await sleep(50);
        grown = (await rt.call('session/tools/get', { sessionId: full.sessionId })).tools;
      }
      assert.ok(
        grown.some((n) => /porch/.test(n)),
        grown.join(','),
      );
      assert.deepEqual((await rt.call('session/tools/get', { sessionId: bare.sessionId })).tools, ['host__get_time']);
      const before = model.requests.length;
      await rt.turn(bare.sessionId, 'anything new?');
      assert.deepEqual(toolNames(model.requests[before]), ['host__get_time']);
    } finally {
      await client.publishAsync('homeassistant/switch/rpc_porch/config', '', { qos: 1, retain: true });
      await client.endAsync();
    }
    assert.equal(await rt.stop(), 0);
  });

  it('turn/steer lands in the next provider request of the running turn', async () => {
    model.setScript([toolCallChunks([{ id: 't1', name: 'host__get_time', arguments: {} }]), textChunks('Il est midi.')]);
    const rt = await start(join(dir, 'steer.db'));
    const { sessionId } = await rt.call('session/start', { cwd: dir, ephemeral: true, builtins: false, permissions: 'host', tools: [CLOCK] });
    const noTurn = await rt.refused('turn/steer', { sessionId, input: 'too early' });
    assert.equal(noTurn.code, -32602);
    assert.equal(noTurn.data.kind, 'no_active_turn');
    assert.match(noTurn.message, /no turn is running/);

    const before = model.requests.length;
    const { turnId } = await rt.call('turn/start', { sessionId, input: 'what time is it?' });
    const request = await rt.wait('the tool request', (m) => m.method === 'item/tool_request' && m.params.turnId === turnId);
    // The kit's steer() from inside a tool handler, before the handler answers.
    const steered = await rt.call('turn/steer', { sessionId, input: 'Answer in French.' });
    assert.equal(steered.turnId, turnId);
    const bad = await rt.refused('turn/steer', { sessionId, input: 42 });
    assert.equal(bad.code, -32602);
    assert.match(bad.message, /input must be a non-empty string/);
    await rt.call('tool/respond', { requestId: request.params.event.request_id, content: '12:00' });
    const completed = await rt.completed(turnId);
    assert.equal(completed.params.stopReason, 'completed');
    const [first, second] = model.requests.slice(before);
    assert.ok(!first.rawBody.includes('Answer in French.'), 'the first request was sent before the steer');
    assert.ok(second, 'a second request was made');
    assert.deepEqual(userTexts(second), ['what time is it?', 'Answer in French.']);
    const messages = second.body.messages;
    assert.equal(messages.at(-1).content, 'Answer in French.', 'the steer follows the tool result');
    assert.equal(messages.at(-2).role, 'tool');
    assert.equal(rt.tokens(turnId), 'Il est midi.');
    assert.equal(await rt.stop(), 0);
  });

  it('a saved session is listed and resumed after the process restarts, with its history, tools and model', async () => {
    model.setScript(parrot);
    const first = await start();
    const started = await first.call('session/start', { cwd: dir, builtins: false, tools: [CLOCK], systemPrompt: 'You are a test.' });
    const sessionId = started.sessionId as string;
    await first.turn(sessionId, 'my name is Ada');
    assert.deepEqual(await first.call('session/model/set', { sessionId, model: 'other-model' }), { sessionId, model: 'other-model' });
    const listed = (await first.call('session/list', {})).sessions.find((s: Msg) => s.id === sessionId);
    assert.equal(listed.turns, 1);
    assert.equal(listed.sessionId, undefined, 'entries carry id, as the kit reads them');
    assert.equal(await first.stop(), 0);

    const second = await start();
    const saved = (await second.call('session/list', {})).sessions.find((s: Msg) => s.id === sessionId);
    assert.ok(saved, 'the saved session is listed before it is resumed');
    assert.equal(saved.turns, 1);
    const resumed = await second.call('session/resume', { sessionId });
    assert.equal(resumed.sessionId, sessionId);
    assert.equal(resumed.model, 'other-model');
    assert.equal(resumed.turns, 1);
    assert.deepEqual(resumed.tools, ['host__get_time'], 'the declared tools and builtins:false came back');
    const before = model.requests.length;
    const { completed, turnId } = await second.turn(sessionId, 'what is my name?');
    assert.equal(completed.params.stopReason, 'completed');
    assert.equal(second.tokens(turnId), 'Heard: what is my name?');
    const request = model.requests[before];
    assert.equal(request.body.model, 'other-model');
    assert.deepEqual(
      request.body.messages.map((m: Msg) => [m.role, m.content]),
      [
        ['system', 'You are a test.'],
        ['user', 'my name is Ada'],
        ['assistant', 'Heard: my name is Ada'],
        ['user', 'what is my name?'],
      ],
    );
    assert.deepEqual(toolNames(request), ['host__get_time']);
    // A resumed session asks this client for its tools.
    model.setScript([toolCallChunks([{ id: 'r1', name: 'host__get_time', arguments: {} }]), textChunks('Noon.')]);
    const again = await second.call('turn/start', { sessionId, input: 'time?' });
    const ask = await second.wait('the tool request of the resumed session', (m) => m.method === 'item/tool_request' && m.params.turnId === again.turnId);
    assert.equal(ask.params.sessionId, sessionId);
    assert.equal(ask.params.event.tool_name, 'get_time');
    await second.call('tool/respond', { requestId: ask.params.event.request_id, content: '12:00' });
    assert.equal((await second.completed(again.turnId)).params.stopReason, 'completed');
    assert.equal((await second.call('session/list', {})).sessions.find((s: Msg) => s.id === sessionId).turns, 3);
    assert.equal(await second.stop(), 0);
  });

  it("another principal's saved session is unknown: not listed, not resumable", async () => {
    model.setScript(parrot);
    const owner = await start(join(dir, 'principals.db'), 'cli:alice');
    const { sessionId } = await owner.call('session/start', { cwd: dir, tools: [] });
    await owner.turn(sessionId, 'private words');
    assert.equal(await owner.stop(), 0);
    const other = await start(join(dir, 'principals.db'), 'cli:mallory');
    assert.deepEqual((await other.call('session/list', {})).sessions, []);
    const refused = await other.refused('session/resume', { sessionId });
    assert.equal(refused.code, -32602);
    assert.equal(refused.data.kind, 'unknown_session');
    assert.match(refused.message, /unknown session/i);
    assert.equal(await other.stop(), 0);
  });

  it('an ephemeral session is not saved: after a restart it is unknown', async () => {
    model.setScript(parrot);
    const file = join(dir, 'ephemeral.db');
    const first = await start(file);
    const { sessionId } = await first.call('session/start', { cwd: dir, ephemeral: true, tools: [] });
    await first.turn(sessionId, 'gone soon');
    assert.equal((await first.call('session/list', {})).sessions.find((s: Msg) => s.id === sessionId).turns, 1);
    assert.equal(await first.stop(), 0);
    const second = await start(file);
    assert.deepEqual((await second.call('session/list', {})).sessions, []);
    assert.match((await second.refused('session/resume', { sessionId })).message, /unknown session/i);
    assert.equal(await second.stop(), 0);
  });

  it('session/fork copies history and tools into a new session; the two go their own ways', async () => {
    model.setScript(parrot);
    const rt = await start(join(dir, 'fork.db'));
    const source = await rt.call('session/start', { cwd: dir, builtins: false, tools: [CLOCK] });
    await rt.turn(source.sessionId, 'remember 42');
    const fork = await rt.call('session/fork', { sessionId: source.sessionId });
    assert.notEqual(fork.sessionId, source.sessionId);
    assert.deepEqual(fork.tools, ['host__get_time']);
    assert.equal(fork.turns, 1);
    let before = model.requests.length;
    await rt.turn(fork.sessionId, 'fork question');
    assert.deepEqual(userTexts(model.requests[before]), ['remember 42', 'fork question']);
    before = model.requests.length;
    await rt.turn(source.sessionId, 'source question');
    assert.deepEqual(userTexts(model.requests[before]), ['remember 42', 'source question'], 'the fork did not write into its source');
    const ids = (await rt.call('session/list', {})).sessions.map((s: Msg) => s.id);
    assert.ok(ids.includes(source.sessionId) && ids.includes(fork.sessionId));
    // The fork is saved too: reopened after a restart with its own thread.
    assert.equal(await rt.stop(), 0);
    const later = await start(join(dir, 'fork.db'));
    const resumed = await later.call('session/resume', { sessionId: fork.sessionId });
    assert.deepEqual(resumed.tools, ['host__get_time']);
    before = model.requests.length;
    await later.turn(fork.sessionId, 'third');
    assert.deepEqual(userTexts(model.requests[before]), ['remember 42', 'fork question', 'third']);
    assert.equal(await later.stop(), 0);
  });

  it('session/reset forgets the conversation and keeps the tools; not while a turn runs', async () => {
    model.setScript(parrot);
    const rt = await start(join(dir, 'reset.db'));
    const { sessionId } = await rt.call('session/start', { cwd: dir, builtins: false, tools: [CLOCK], systemPrompt: 'S' });
    await rt.turn(sessionId, 'old words');
    assert.deepEqual(await rt.call('session/reset', { sessionId }), { sessionId, turns: 0 });
    assert.deepEqual((await rt.call('session/tools/get', { sessionId })).tools, ['host__get_time']);
    assert.equal((await rt.call('session/list', {})).sessions.find((s: Msg) => s.id === sessionId).turns, 0);
    const before = model.requests.length;
    await rt.turn(sessionId, 'fresh start');
    assert.deepEqual(
      model.requests[before].body.messages.map((m: Msg) => m.content),
      ['S', 'fresh start'],
    );
    assert.deepEqual(toolNames(model.requests[before]), ['host__get_time']);

    model.setScript([{ hang: true }]);
    const hanging = model.requests.length;
    const { turnId } = await rt.call('turn/start', { sessionId, input: 'hang' });
    await model.waitForRequests(hanging + 1, 15_000);
    const busy = await rt.refused('session/reset', { sessionId });
    assert.equal(busy.code, -32001);
    assert.deepEqual(busy.data, { kind: 'turn_active', retryable: true });
    await rt.call('turn/interrupt', { sessionId });
    assert.equal((await rt.completed(turnId)).params.stopReason, 'interrupted');
    // The reset also holds across a restart.
    await rt.call('session/reset', { sessionId });
    assert.equal(await rt.stop(), 0);
    model.setScript(parrot);
    const later = await start(join(dir, 'reset.db'));
    assert.equal((await later.call('session/resume', { sessionId })).turns, 0);
    const after = model.requests.length;
    await later.turn(sessionId, 'after restart');
    assert.deepEqual(
      model.requests[after].body.messages.map((m: Msg) => m.content),
      ['S', 'after restart'],
    );
    assert.equal(await later.stop(), 0);
  });

  it('session/archive stops the running turn, drops the session from the lists and refuses new turns, also after a restart', async () => {
    model.setScript([{ hang: true }]);
    const file = join(dir, 'archive.db');
    const rt = await start(file);
    const { sessionId } = await rt.call('session/start', { cwd: dir, tools: [] });
    const kept = await rt.call('session/start', { cwd: dir, tools: [] });
    const before = model.requests.length;
    const { turnId } = await rt.call('turn/start', { sessionId, input: 'hang on' });
    await model.waitForRequests(before + 1, 15_000);
    assert.deepEqual(await rt.call('session/archive', { sessionId }), { sessionId, archived: true });
    assert.equal((await rt.completed(turnId)).params.stopReason, 'interrupted');
    const ids = (await rt.call('session/list', {})).sessions.map((s: Msg) => s.id);
    assert.ok(!ids.includes(sessionId), 'an archived session is not listed');
    assert.ok(ids.includes(kept.sessionId));
    const refused = await rt.refused('turn/start', { sessionId, input: 'again?' });
    assert.equal(refused.code, -32602);
    assert.equal(refused.data.kind, 'archived_session');
    assert.match(refused.message, /archived/);
    assert.equal((await rt.refused('session/resume', { sessionId })).data.kind, 'archived_session');
    // Archiving twice is harmless.
    assert.deepEqual(await rt.call('session/archive', { sessionId }), { sessionId, archived: true });
    assert.equal(await rt.stop(), 0);

    model.setScript(parrot);
    const later = await start(file);
    const after = (await later.call('session/list', {})).sessions.map((s: Msg) => s.id);
    assert.deepEqual(after, [kept.sessionId]);
    const gone = await later.refused('session/resume', { sessionId });
    assert.equal(gone.data.kind, 'archived_session');
    assert.match(gone.message, /archived/);
    assert.equal(await later.stop(), 0);
  });

  it('session/model/set switches the model between turns; a running turn keeps its own', async () => {
    model.setScript(parrot);
    const rt = await start(join(dir, 'model.db'));
    const { sessionId, model: first } = await rt.call('session/start', { cwd: dir, ephemeral: true, tools: [] });
    assert.equal(first, 'test-model');
    let before = model.requests.length;
    await rt.turn(sessionId, 'one');
    assert.equal(model.requests[before].body.model, 'test-model');
    assert.deepEqual(await rt.call('session/model/set', { sessionId, model: 'bigger-model' }), { sessionId, model: 'bigger-model' });
    before = model.requests.length;
    await rt.turn(sessionId, 'two');
    assert.equal(model.requests[before].body.model, 'bigger-model');

    // Set during a turn: its next request keeps the turn's model; the next turn takes the new one.
    model.setScript([toolCallChunks([{ id: 'm1', name: 'host__get_time', arguments: {} }]), textChunks('Noon.'), textChunks('later')]);
    await rt.call('session/tools/set', { sessionId, tools: [CLOCK] });
    before = model.requests.length;
    const { turnId } = await rt.call('turn/start', { sessionId, input: 'time?' });
    const ask = await rt.wait('the tool request', (m) => m.method === 'item/tool_request' && m.params.turnId === turnId);
    await rt.call('session/model/set', { sessionId, model: 'third-model' });
    await rt.call('tool/respond', { requestId: ask.params.event.request_id, content: '12:00' });
    await rt.completed(turnId);
    assert.deepEqual(
      model.requests.slice(before).map((r) => r.body.model),
      ['bigger-model', 'bigger-model'],
    );
    before = model.requests.length;
    await rt.turn(sessionId, 'three');
    assert.equal(model.requests[before].body.model, 'third-model');

    for (const params of [{ sessionId }, { sessionId, model: '' }, { sessionId, model: 7 }]) {
      const bad = await rt.refused('session/model/set', params);
      assert.equal(bad.code, -32602);
      assert.match(bad.message, /model/);
    }
    assert.equal(await rt.stop(), 0);
  });

  it("two sessions running at once never see each other's events", async () => {
    // Each answer names the session's own words; a tool call goes to the session that owns the tool.
    model.setScript((body) => {
      const text = lastUserText(body);
      const toolDone = body.messages.at(-1).role === 'tool';
      if (text === 'beta' && !toolDone) return toolCallChunks([{ id: 'b1', name: 'host__get_time', arguments: {} }]);
      return textChunks(`${text} answer`, { pieceSize: 2 });
    });
    const rt = await start(join(dir, 'two.db'));
    const a = await rt.call('session/start', { cwd: dir, ephemeral: true, builtins: false, tools: [] });
    const b = await rt.call('session/start', { cwd: dir, ephemeral: true, builtins: false, permissions: 'host', tools: [CLOCK] });
    const [ta, tb] = await Promise.all([
      rt.call('turn/start', { sessionId: a.sessionId, input: 'alpha' }),
      rt.call('turn/start', { sessionId: b.sessionId, input: 'beta' }),
    ]);
    const ask = await rt.wait('beta tool request', (m) => m.method === 'item/tool_request');
    assert.equal(ask.params.sessionId, b.sessionId);
    assert.equal(ask.params.turnId, tb.turnId);
    await rt.call('tool/respond', { requestId: ask.params.event.request_id, content: '12:00' });
    await Promise.all([rt.completed(ta.turnId), rt.completed(tb.turnId)]);
    const events = rt.lines.filter((m) => m.method?.startsWith('item/') || m.method === 'turn/completed');
    for (const m of events) {
      const own = m.params.sessionId === a.sessionId ? ta.turnId : m.params.sessionId === b.sessionId ? tb.turnId : undefined;
      assert.equal(m.params.turnId, own, `${m.method} of ${m.params.sessionId} carries its own session's turn`);
    }
    assert.equal(rt.tokens(ta.turnId), 'alpha answer');
    assert.equal(rt.tokens(tb.turnId), 'beta answer');
    assert.ok(!events.some((m) => m.params.sessionId === a.sessionId && m.method === 'item/tool_result'), 'alpha saw no tool result');
    assert.equal(await rt.stop(), 0);
  });

  it('every new method refuses bad input: missing sessionId, unknown session, unknown parameters', async () => {
    model.setScript(parrot);
    const rt = await start(join(dir, 'bad.db'));
    const { sessionId } = await rt.call('session/start', { cwd: dir, ephemeral: true, tools: [] });
    const methods: Array<[string, Record<string, unknown>]> = [
      ['session/resume', {}],
      ['session/fork', {}],
      ['session/archive', {}],
      ['session/reset', {}],
      ['session/model/set', { model: 'm' }],
      ['turn/steer', { input: 'go left' }],
    ];
    for (const [method, extra] of methods) {
      const missing = await rt.refused(method, { ...extra });
      assert.equal(missing.code, -32602, method);
      assert.match(missing.message, /sessionId is required/, method);
      const unknown = await rt.refused(method, { ...extra, sessionId: 'no-such-session' });
      assert.equal(unknown.code, -32602, method);
      assert.equal(unknown.data.kind, 'unknown_session', method);
      assert.match(unknown.message, /unknown session/i, method);
      assert.match(unknown.message, /no-such-session/, method);
      const extraParam = await rt.refused(method, { ...extra, sessionId, bogus: 1 });
      assert.equal(extraParam.code, -32602, method);
      assert.match(extraParam.message, /unknown parameter "bogus"/, method);
    }
    for (const method of ['turn/start', 'session/tools/get', 'turn/interrupt']) {
      assert.match((await rt.refused(method, { sessionId: 'nope', ...(method === 'turn/start' ? { input: 'x' } : {}) })).message, /unknown session/i, method);
    }
    assert.equal(await rt.stop(), 0);
  });
});
