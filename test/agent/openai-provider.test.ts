import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ProviderEvent, ProviderRequest, ToolCallRequest } from '../../src/agent/provider.js';
import { ProviderError } from '../../src/agent/provider.js';
import { OpenAIProvider, errorMessageFromBody, toWireMessages } from '../../src/agent/providers/openai.js';
import { SseParser } from '../../src/agent/providers/sse.js';
import { ToolCallAccumulator, type ToolCallEvent } from '../../src/agent/providers/tool-call-accumulator.js';
import { logSink } from '../helpers/log-sink.js';
import { chunk, startOpenAIServer, textChunks, toolCallChunks, usageChunk, type OpenAIServer } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURES = new URL('../fixtures/openai/', import.meta.url);

interface Collected {
  events: ProviderEvent[];
  text: string;
  reasoning: string;
  done: Extract<ProviderEvent, { type: 'done' }>;
}

function request(overrides: Partial<ProviderRequest> = {}): ProviderRequest {
  return {
    model: 'test-model',
    messages: [{ role: 'user', content: 'turn on the lamp' }],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function collect(provider: OpenAIProvider, req: ProviderRequest = request()): Promise<Collected> {
  const events: ProviderEvent[] = [];
  for await (const ev of provider.stream(req)) events.push(ev);
  const dones = events.filter((e) => e.type === 'done');
  assert.equal(dones.length, 1, 'exactly one done event');
  assert.equal(events.at(-1)?.type, 'done', 'done is last');
  return {
    events,
    text: events.map((e) => (e.type === 'token' ? e.text : '')).join(''),
    reasoning: events.map((e) => (e.type === 'reasoning' ? e.text : '')).join(''),
    done: dones[0] as Collected['done'],
  };
}

async function expectProviderError(p: Promise<unknown>, code: string): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected ProviderError, got ${String(err)}`);
    assert.equal(err.code, code, `code of: ${err.message}`);
    return err;
  }
  assert.fail(`expected a ProviderError ${code}`);
}

/** Stream events agree with the final tool calls: started ids/names, arg deltas concatenate to the arguments. */
function checkEventConsistency(events: ProviderEvent[], toolCalls: ToolCallRequest[]): void {
  const started = events.filter((e) => e.type === 'tool_call_started');
  assert.deepEqual(
    started.map((e) => [e.id, e.name]),
    toolCalls.map((c) => [c.id, c.name]),
  );
  assert.equal(new Set(toolCalls.map((c) => c.id)).size, toolCalls.length, 'ids are unique');
  for (const call of toolCalls) {
    const startAt = events.findIndex((e) => e.type === 'tool_call_started' && e.id === call.id);
    const deltas = events.filter((e, i) => e.type === 'tool_call_args_delta' && e.id === call.id && assert.ok(i > startAt, 'delta after start') === undefined);
    const joined = deltas.map((d) => (d.type === 'tool_call_args_delta' ? d.delta : '')).join('');
    assert.equal(joined.trim() === '' ? '{}' : joined, call.arguments);
  }
}

async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function drive(acc: ToolCallAccumulator, deltas: object[]): ToolCallEvent[] {
  return deltas.flatMap((d) => acc.push(d));
}

// ---------------------------------------------------------------------------

describe('ToolCallAccumulator', () => {
  it('standard OpenAI: id+name first, then argument fragments by index', () => {
    const acc = new ToolCallAccumulator();
    const events = drive(acc, [
      { index: 0, id: 'a', type: 'function', function: { name: 'x', arguments: '' } },
      { index: 1, id: 'b', type: 'function', function: { name: 'y', arguments: '' } },
      { index: 0, function: { arguments: '{"k":' } },
      { index: 1, function: { arguments: '{}' } },
      { index: 0, function: { arguments: '1}' } },
    ]);
    assert.deepEqual(acc.finish(), [
      { id: 'a', name: 'x', arguments: '{"k":1}' },
      { id: 'b', name: 'y', arguments: '{}' },
    ]);
    assert.deepEqual(events, [
      { type: 'tool_call_started', id: 'a', name: 'x' },
      { type: 'tool_call_started', id: 'b', name: 'y' },
      { type: 'tool_call_args_delta', id: 'a', delta: '{"k":' },
      { type: 'tool_call_args_delta', id: 'b', delta: '{}' },
      { type: 'tool_call_args_delta', id: 'a', delta: '1}' },
    ]);
  });

  it('Ollama: a new id at an occupied index opens a new slot', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [
      { index: 0, id: 'call_1', function: { name: 'x', arguments: '{"a":1}' } },
      { index: 0, id: 'call_2', function: { name: 'x', arguments: '{"a":2}' } },
      { index: 0, id: 'call_3', function: { name: 'y', arguments: '{}' } },
    ]);
    assert.deepEqual(
      acc.finish().map((c) => [c.id, c.name, c.arguments]),
      [
        ['call_1', 'x', '{"a":1}'],
        ['call_2', 'x', '{"a":2}'],
        ['call_3', 'y', '{}'],
      ],
    );
  });

  it('the same id repeated on every fragment is the same call (even at another index)', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [
      { index: 0, id: 'p', function: { name: 'x', arguments: '{"a"' } },
      { index: 0, id: 'p', function: { name: 'x', arguments: ':1' } },
      { id: 'p', function: { name: '', arguments: '}' } },
    ]);
    assert.deepEqual(acc.finish(), [{ id: 'p', name: 'x', arguments: '{"a":1}' }]);
  });

  it('LM Studio: name "" and id "" on continuations never overwrite or split; a missing id is invented', () => {
    const acc = new ToolCallAccumulator();
    const events = drive(acc, [
      { index: 0, id: '', type: 'function', function: { name: 'x', arguments: '' } },
      { index: 0, id: '', type: 'function', function: { name: '', arguments: '{"t":' } },
      { index: 0, id: '', type: 'function', function: { name: '', arguments: '2}' } },
      { index: 1, id: '', type: 'function', function: { name: 'y', arguments: '{}' } },
    ]);
    assert.deepEqual(acc.finish(), [
      { id: 'call_0', name: 'x', arguments: '{"t":2}' },
      { id: 'call_1', name: 'y', arguments: '{}' },
    ]);
    assert.equal(events.filter((e) => e.type === 'tool_call_started').length, 2);
    // finish() is repeatable and stable
    assert.deepEqual(
      acc.finish().map((c) => c.id),
      ['call_0', 'call_1'],
    );
  });

  it('missing index is 0 with the same id rules', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [
      { id: 'a', function: { name: 'x', arguments: '{"n":' } },
      { function: { arguments: '1}' } },
      { id: 'b', function: { name: 'y', arguments: '{"n":2}' } },
    ]);
    assert.deepEqual(acc.finish(), [
      { id: 'a', name: 'x', arguments: '{"n":1}' },
      { id: 'b', name: 'y', arguments: '{"n":2}' },
    ]);
  });

  it('arguments "" / absent / whitespace become "{}"; object arguments are serialised', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [
      { index: 0, id: 'a', function: { name: 'x', arguments: '' } },
      { index: 1, id: 'b', function: { name: 'y' } },
      { index: 2, id: 'c', function: { name: 'z', arguments: ' \n' } },
      { index: 3, id: 'd', function: { name: 'w', arguments: { room: 'hall', level: 3 } } },
    ]);
    assert.deepEqual(
      acc.finish().map((c) => c.arguments),
      ['{}', '{}', '{}', '{"room":"hall","level":3}'],
    );
  });

  it('argument fragments before the name are held and flushed after tool_call_started', () => {
    const acc = new ToolCallAccumulator();
    const events = drive(acc, [
      { index: 0, function: { arguments: '{"a":' } },
      { index: 0, id: 'late', function: { name: 'x', arguments: '1}' } },
    ]);
    assert.deepEqual(events, [
      { type: 'tool_call_started', id: 'late', name: 'x' },
      { type: 'tool_call_args_delta', id: 'late', delta: '{"a":1}' },
    ]);
    assert.deepEqual(acc.finish(), [{ id: 'late', name: 'x', arguments: '{"a":1}' }]);
  });

  it('an id arriving after the call started keeps the announced id', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [
      { index: 0, function: { name: 'x', arguments: '{"a"' } },
      { index: 0, id: 'real', function: { arguments: ':1}' } },
    ]);
    assert.deepEqual(acc.finish(), [{ id: 'call_0', name: 'x', arguments: '{"a":1}' }]);
  });

  it('invented ids never clash with server ids', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [
      { index: 0, id: 'call_0', function: { name: 'x', arguments: '{}' } },
      { index: 1, function: { name: 'y', arguments: '{}' } },
      { index: 2, id: 'call_0', function: { arguments: '' } },
    ]);
    const ids = acc.finish().map((c) => c.id);
    assert.deepEqual(ids, ['call_0', 'call_1']);
  });

  it('without ids, a second whole call at the same index is a new call, a repeated name is not', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [
      { index: 0, function: { name: 'x', arguments: '{"a":' } },
      { index: 0, function: { name: 'x', arguments: '1}' } }, // name repeated by a proxy: same call
      { index: 0, function: { name: 'y', arguments: '{"b":2}' } }, // different name after complete args: new call
      { index: 0, function: { name: 'y', arguments: '{"b":3}' } }, // same name, complete args again: new call
    ]);
    assert.deepEqual(
      acc.finish().map((c) => [c.id, c.name, c.arguments]),
      [
        ['call_0', 'x', '{"a":1}'],
        ['call_1', 'y', '{"b":2}'],
        ['call_2', 'y', '{"b":3}'],
      ],
    );
  });

  it('slots that never get a name are dropped from finish() and reported', () => {
    const acc = new ToolCallAccumulator();
    drive(acc, [{ index: 0, function: { arguments: '{"a":1}' } }]);
    assert.deepEqual(acc.finish(), []);
    assert.deepEqual(acc.unnamed(), [{ index: 0, id: '', arguments: '{"a":1}' }]);
  });

  it('pushAll ignores junk', () => {
    const acc = new ToolCallAccumulator();
    assert.deepEqual(acc.pushAll(null), []);
    assert.deepEqual(acc.pushAll([null, 3, 'x']), []);
    assert.equal(acc.size, 0);
  });
});

// ---------------------------------------------------------------------------

describe('SseParser', () => {
  const enc = new TextEncoder();

  it('parses LF, CRLF and lone CR; ignores comments; strips one optional space', () => {
    const p = new SseParser();
    const events = [...p.push(': keepalive\r\n\r\ndata: {"a":1}\r\n\r\n'), ...p.push('data:{"b":2}\n\n'), ...p.push('data: {"c":3}\r\r'), ...p.end()];
    assert.deepEqual(
      events.map((e) => e.data),
      ['{"a":1}', '{"b":2}', '{"c":3}'],
    );
  });

  it('reassembles events split at every byte, including inside multi-byte characters and CRLF', () => {
    const text = 'data: {"content":"Küche 💡 ok"}\r\n\r\ndata: [DONE]\r\n\r\n';
    const bytes = enc.encode(text);
    const p = new SseParser();
    const events = [];
    for (let i = 0; i < bytes.length; i++) events.push(...p.push(bytes.subarray(i, i + 1)));
    events.push(...p.end());
    assert.deepEqual(
      events.map((e) => e.data),
      ['{"content":"Küche 💡 ok"}', '[DONE]'],
    );
  });

  it('joins multi-line data per the spec, but splits JSON events sent without blank lines', () => {
    const p = new SseParser();
    assert.deepEqual(
      p.push('data: {"a":\ndata: 1}\n\n').map((e) => e.data),
      ['{"a":\n1}'],
    );
    const q = new SseParser();
    const got = [...q.push('data: {"a":1}\ndata: {"b":2}\ndata: [DONE]\n'), ...q.end()];
    assert.deepEqual(
      got.map((e) => e.data),
      ['{"a":1}', '{"b":2}', '[DONE]'],
    );
  });

  it('reports event: error and llama.cpp error: lines as error events; flushes on end()', () => {
    const p = new SseParser();
    const got = [...p.push('event: error\ndata: {"message":"boom"}\n\nerror: {"code":500,"message":"kaput"}\n\ndata: {"x":1}'), ...p.end()];
    assert.deepEqual(got, [
      { event: 'error', data: '{"message":"boom"}' },
      { event: 'error', data: '{"code":500,"message":"kaput"}' },
      { event: 'message', data: '{"x":1}' },
    ]);
  });
});

// ---------------------------------------------------------------------------

describe('OpenAIProvider', () => {
  let server: OpenAIServer;
  before(async () => {
    server = await startOpenAIServer();
  });
  after(async () => {
    await server.close();
  });

  const provider = (extra: Partial<ConstructorParameters<typeof OpenAIProvider>[0]> = {}) =>
    new OpenAIProvider({ baseUrl: server.url, model: 'test-model', timeoutMs: 5000, ...extra });

  describe('recorded provider streams (test/fixtures/openai)', () => {
    const files = readdirSync(FIXTURES)
      .filter((f) => f.endsWith('.json'))
      .sort();
    it('has the fixtures', () => {
      for (const name of [
        'ollama-parallel.json',
        'llamacpp.json',
        'lmstudio.json',
        'proxy-repeated-id.json',
        'openai-parallel.json',
        'no-finish-reason.json',
        'empty-arguments.json',
        'text-and-reasoning.json',
      ])
        assert.ok(files.includes(name), name);
    });
    for (const file of files) {
      it(file, async () => {
        const fixture = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8'));
        for (const split of [1, 5, 64, false]) {
          server.setScript(() => ({ chunks: fixture.chunks, done: fixture.sendDone !== false, split }));
          const got = await collect(provider());
          const { expect } = fixture;
          assert.equal(got.text, expect.text, `${file} text (split ${split})`);
          if (expect.reasoning !== undefined) assert.equal(got.reasoning, expect.reasoning);
          if (expect.finishReason !== undefined) assert.equal(got.done.finishReason, expect.finishReason);
          if (expect.usage !== undefined) assert.deepEqual(got.done.usage, expect.usage);
          assert.deepEqual(
            got.done.toolCalls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) })),
            expect.toolCalls.map((c: { name: string; arguments: unknown }) => ({ name: c.name, arguments: c.arguments })),
            `${file} tool calls (split ${split})`,
          );
          expect.toolCalls.forEach((c: { id?: string; rawArguments?: string }, i: number) => {
            if (c.id !== undefined) assert.equal(got.done.toolCalls[i].id, c.id);
            if (c.rawArguments !== undefined) assert.equal(got.done.toolCalls[i].arguments, c.rawArguments);
          });
          checkEventConsistency(got.events, got.done.toolCalls);
        }
      });
    }
  });

  it('sends model, messages, stream, stream_options; omits empty tools; no auth header without a key', async () => {
    server.setScript(() => textChunks('ok'));
    const before = server.requests.length;
    await collect(provider(), request({ model: '' }));
    const sent = server.requests[before];
    assert.equal(sent.path, '/v1/chat/completions');
    assert.deepEqual(sent.body, {
      model: 'test-model',
      messages: [{ role: 'user', content: 'turn on the lamp' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(sent.headers.authorization, undefined);
    assert.equal(sent.headers['content-type'], 'application/json');
  });

  it('sends tools and assistant tool calls in the wire format, and the Bearer key', async () => {
    server.setScript(() => textChunks('done'));
    const before = server.requests.length;
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'host__lamp_set', description: 'Set the lamp', parameters: { type: 'object', properties: {} } },
      },
    ];
    await collect(
      provider({ apiKey: 'sk-jan-123' }),
      request({
        model: 'qwen3:8b',
        tools,
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'on' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', name: 'host__lamp_set', arguments: '' }] },
          { role: 'tool', tool_call_id: 'call_0', content: 'confirmed' },
        ],
      }),
    );
    const sent = server.requests[before];
    assert.equal(sent.headers.authorization, 'Bearer sk-jan-123');
    assert.equal(sent.body.model, 'qwen3:8b');
    assert.deepEqual(sent.body.tools, tools);
    assert.deepEqual(sent.body.messages[2], {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'host__lamp_set', arguments: '{}' } }],
    });
    assert.deepEqual(sent.body.messages[3], { role: 'tool', tool_call_id: 'call_0', content: 'confirmed' });
  });

  it('replaces image parts with a note when the model has no vision', () => {
    const content = [
      { type: 'text' as const, text: 'camera result' },
      { type: 'image_url' as const, image_url: { url: 'data:image/jpeg;base64,AAAA' } },
    ];
    const msgs = [{ role: 'user' as const, content }];
    assert.deepEqual(toWireMessages(msgs, true)[0].content, content);
    const text = toWireMessages(msgs, false)[0].content as string;
    assert.match(text, /^camera result\n\[an image was omitted/);
  });

  it('an HTTP 401 becomes ProviderError with status and the provider message', async () => {
    server.setScript(() => ({ status: 401, body: { error: { message: 'invalid api key', type: 'invalid_request_error' } } }));
    const err = await expectProviderError(collect(provider({ apiKey: 'wrong' })), 'http_error');
    assert.equal(err.status, 401);
    assert.equal(err.message, 'provider answered 401: invalid api key');
  });

  it('error bodies: text, {error:"…"}, {detail}, HTML; missing key hint on 401', async () => {
    server.setScript(() => ({ status: 404, body: { error: 'model "nope" not found, try pulling it first' } }));
    let err = await expectProviderError(collect(provider()), 'http_error');
    assert.equal(err.message, 'provider answered 404: model "nope" not found, try pulling it first');
    server.setScript(() => ({ status: 500, body: 'upstream exploded' }));
    err = await expectProviderError(collect(provider()), 'http_error');
    assert.equal(err.message, 'provider answered 500: upstream exploded');
    assert.equal(err.status, 500);
    server.setScript(() => ({ status: 401, body: { error: { message: 'Unauthorized' } } }));
    err = await expectProviderError(collect(provider()), 'http_error');
    assert.match(err.message, /^provider answered 401: Unauthorized \(no API key is configured/);
    assert.equal(errorMessageFromBody('{"detail":[{"msg":"field required"}]}'), 'field required');
    assert.equal(errorMessageFromBody('<html><body><h1>502 Bad Gateway</h1></body></html>'), '502 Bad Gateway');
  });

  it('a closed port is `unreachable` at once (not a `timeout` after waiting), naming the URL', async () => {
    const port = await closedPort();
    // A silence bound far past the test's own: had the provider waited for an answer, the test would time out.
    const p = new OpenAIProvider({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', timeoutMs: 3_600_000 });
    const err = await expectProviderError(collect(p), 'unreachable');
    assert.match(err.message, new RegExp(`http://127\\.0\\.0\\.1:${port}/v1`));
    assert.match(err.message, /Jan Desktop \/ Ollama/);
  });

  it('a server that never answers is a `timeout`', async () => {
    server.setScript(() => ({ hang: true }));
    const t0 = Date.now();
    const err = await expectProviderError(collect(provider({ timeoutMs: 300 })), 'timeout');
    assert.ok(Date.now() - t0 < 3000);
    assert.match(err.message, /300 ms/);
  });

  it('a stream that goes silent mid-way is a `timeout`', async () => {
    server.setScript(() => ({ chunks: textChunks('partial answer', { finishReason: null }), hang: true, done: false }));
    const tokens: string[] = [];
    const t0 = Date.now();
    await expectProviderError(
      (async () => {
        for await (const ev of provider({ timeoutMs: 300 }).stream(request())) if (ev.type === 'token') tokens.push(ev.text);
      })(),
      'timeout',
    );
    assert.equal(tokens.join(''), 'partial answer');
    assert.ok(Date.now() - t0 < 3000);
  });

  it('aborting mid-stream ends promptly and releases the connection', async () => {
    server.setScript(() => ({ chunks: textChunks('first words', { finishReason: null }), hang: true, done: false }));
    const closedBefore = server.closedConnections;
    const ac = new AbortController();
    const tokens: string[] = [];
    let abortedAt = 0;
    const err = await expectProviderError(
      (async () => {
        for await (const ev of provider({ timeoutMs: 60_000 }).stream(request({ signal: ac.signal }))) {
          if (ev.type === 'token') {
            tokens.push(ev.text);
            if (tokens.join('') === 'first words') {
              abortedAt = Date.now();
              setTimeout(() => ac.abort(), 20);
            }
          }
        }
      })(),
      'aborted',
    );
    assert.ok(Date.now() - abortedAt < 1000, 'ended promptly');
    assert.match(err.message, /aborted/);
    await waitFor('server sees the connection closed', () => server.closedConnections > closedBefore, 3000);
  });

  it('an already aborted signal throws `aborted` without a request', async () => {
    const before = server.requests.length;
    const ac = new AbortController();
    ac.abort();
    await expectProviderError(collect(provider(), request({ signal: ac.signal })), 'aborted');
    assert.equal(server.requests.length, before);
  });

  it('aborting while waiting for the response headers ends promptly', async () => {
    server.setScript(() => ({ hang: true }));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const t0 = Date.now();
    await expectProviderError(collect(provider({ timeoutMs: 60_000 }), request({ signal: ac.signal })), 'aborted');
    assert.ok(Date.now() - t0 < 2000);
  });

  it('a consumer that stops early releases the connection', async () => {
    server.setScript(() => ({ chunks: textChunks('one two three', { finishReason: null }), hang: true, done: false }));
    const closedBefore = server.closedConnections;
    for await (const ev of provider().stream(request())) {
      if (ev.type === 'token') break;
    }
    await waitFor('connection closed after break', () => server.closedConnections > closedBefore, 3000);
  });

  it('survives byte-by-byte delivery, CRLF, keepalive comments and multi-byte text', async () => {
    const text = 'Grüße aus der Küche 💡 — alles an. 客厅灯 ok';
    server.setScript(() => ({ chunks: textChunks(text, { pieceSize: 3 }), split: 1, crlf: true, comments: true }));
    const got = await collect(provider());
    assert.equal(got.text, text);
    assert.equal(got.done.finishReason, 'stop');
  });

  it('passes usage through in done (with cached tokens)', async () => {
    server.setScript(() => textChunks('hi', { usage: { prompt_tokens: 120, completion_tokens: 3, cached_tokens: 100 } }));
    const got = await collect(provider());
    assert.deepEqual(got.done.usage, { prompt_tokens: 120, completion_tokens: 3, total_tokens: 123, cached_tokens: 100 });
  });

  it('no usage -> done without usage', async () => {
    server.setScript(() => textChunks('hi'));
    const got = await collect(provider());
    assert.equal(got.done.usage, undefined);
  });

  it('standard tool-call chunks from the builder round-trip, with text first', async () => {
    server.setScript(() =>
      toolCallChunks([{ name: 'host__lamp_set', arguments: { state: 'ON', brightness: 40 } }, { name: 'host__list_devices' }], {
        text: 'On it.',
        usage: { prompt_tokens: 10, completion_tokens: 5 },
      }),
    );
    const got = await collect(provider());
    assert.equal(got.text, 'On it.');
    assert.equal(got.done.finishReason, 'tool_calls');
    assert.deepEqual(got.done.toolCalls, [
      { id: 'call_test_0', name: 'host__lamp_set', arguments: '{"state":"ON","brightness":40}' },
      { id: 'call_test_1', name: 'host__list_devices', arguments: '{}' },
    ]);
    checkEventConsistency(got.events, got.done.toolCalls);
  });

  it('a stream with no data at all is `empty_response`', async () => {
    server.setScript(() => ({ chunks: [], done: true }));
    await expectProviderError(collect(provider()), 'empty_response');
    server.setScript(() => ({ chunks: [], done: false }));
    await expectProviderError(collect(provider()), 'empty_response');
    server.setScript(() => ({ chunks: [], raw: ': ping\n\n: ping\n\n', done: false }));
    await expectProviderError(collect(provider()), 'empty_response');
  });

  it('a stream that ends without [DONE] and finish_reason still ends cleanly', async () => {
    server.setScript(() => ({ chunks: textChunks('cut short', { finishReason: null }), done: false }));
    const got = await collect(provider());
    assert.equal(got.text, 'cut short');
    assert.equal(got.done.finishReason, 'stop');
  });

  it('a connection cut mid-stream ends cleanly with what arrived; cut before any data is `empty_response`', async () => {
    server.setScript(() => ({
      chunks: toolCallChunks([{ name: 'host__lamp_set', arguments: { state: 'ON' } }], { finishReason: null }),
      done: false,
      destroy: true,
    }));
    const sink = logSink('warn');
    const got = await collect(provider({ log: sink.log }));
    assert.equal(sink.find(/ended abruptly/).length, 1, 'the cut was seen as a cut');
    assert.deepEqual(
      got.done.toolCalls.map((c) => [c.name, c.arguments]),
      [['host__lamp_set', '{"state":"ON"}']],
    );
    assert.equal(got.done.finishReason, 'tool_calls');
    server.setScript(() => ({ chunks: [], done: false, destroy: true }));
    await expectProviderError(collect(provider()), 'empty_response');
  });

  it('an error inside the stream is `stream_error`', async () => {
    server.setScript(() => ({
      chunks: [...textChunks('par', { finishReason: null }), { error: { message: 'context length exceeded', code: 400 } }],
      done: false,
    }));
    const err = await expectProviderError(collect(provider()), 'stream_error');
    assert.match(err.message, /context length exceeded/);
    server.setScript(() => ({ chunks: [], raw: 'error: {"code":500,"message":"llama.cpp failed","type":"server_error"}\n\n', done: false }));
    const err2 = await expectProviderError(collect(provider()), 'stream_error');
    assert.match(err2.message, /llama\.cpp failed/);
  });

  it('a server that ignores stream:true and answers plain JSON still works', async () => {
    server.setScript(() => ({
      json: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: 'Turning it on.',
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'host__lamp_set', arguments: '{"state":"ON"}' } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 7, completion_tokens: 9, total_tokens: 16 },
      },
    }));
    const got = await collect(provider());
    assert.equal(got.text, 'Turning it on.');
    assert.deepEqual(got.done.toolCalls, [{ id: 'c1', name: 'host__lamp_set', arguments: '{"state":"ON"}' }]);
    assert.deepEqual(got.done.usage, { prompt_tokens: 7, completion_tokens: 9, total_tokens: 16 });
  });

  it('non-JSON data lines are skipped with a warning', async () => {
    const sink = logSink('warn');
    server.setScript(() => ({ chunks: [chunk({ content: 'a' })], raw: 'data: not json\n\n', done: true }));
    const got = await collect(provider({ log: sink.log }));
    assert.equal(got.text, 'a');
    assert.equal(sink.find(/not JSON/).length, 1);
  });

  it('the script can be a function of the request body and index', async () => {
    const s = await startOpenAIServer({
      script: (body, index) => textChunks(`#${index} ${body.messages.at(-1).content}`),
    });
    try {
      const p = new OpenAIProvider({ baseUrl: s.url, model: 'm' });
      assert.equal((await collect(p, request({ messages: [{ role: 'user', content: 'a' }] }))).text, '#0 a');
      assert.equal((await collect(p, request({ messages: [{ role: 'user', content: 'b' }] }))).text, '#1 b');
      assert.equal(s.requests.length, 2);
      // a list script past its end answers 500
      s.setScript([]);
      const err = await expectProviderError(collect(p), 'http_error');
      assert.match(err.message, /script has no response/);
    } finally {
      await s.close();
    }
  });

  it('usage-only chunk helper and defaults', () => {
    const p = new OpenAIProvider({ model: 'm' });
    assert.equal(p.baseUrl, 'http://127.0.0.1:1337/v1');
    assert.equal(p.vision, true);
    assert.equal(p.defaultModel, 'm');
    assert.equal(p.timeoutMs, 120_000);
    assert.deepEqual(usageChunk({ prompt_tokens: 1, completion_tokens: 2 }).usage, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    assert.throws(
      () => new OpenAIProvider({ model: 'm', baseUrl: 'not a url' }),
      (e: unknown) => e instanceof ProviderError && e.code === 'bad_config',
    );
  });
});
