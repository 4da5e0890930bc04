// A scripted OpenAI-compatible chat-completions server for tests: a real
// node:http server on 127.0.0.1:<random port> that answers
// `POST <anything>/chat/completions` from a script and records every request.
//
//   const server = await startOpenAIServer({ script: [textChunks('Hello'), { status: 401, body: {...} }] });
//   const provider = new OpenAIProvider({ baseUrl: server.url, model: 'm' });
//   ... server.requests[0].body.messages ...
//   await server.close();
//
// A script is a list (one response per request, in order; past its end the
// server answers 500) or a function `(body, index, request) => response`.
// A response is one of:
//   - an array of chunk objects: streamed as SSE `data:` lines, cut into small
//     random pieces written separately (to exercise buffering), then `[DONE]`;
//   - `{ chunks, done?, hang?, raw?, crlf?, split?, delayMs?, comments? }` for
//     control: `done: false` omits `[DONE]`; `hang: true` keeps the connection
//     open after writing (until the client goes away or close()); `destroy:
//     true` cuts the connection after writing; `raw` is
//     SSE text written as is after the chunks;
//   - `{ status, body?, headers? }`: a plain (error) answer; an object body is
//     sent as JSON;
//   - `{ hang: true }` alone: accept the request and never answer at all;
//   - `{ json }`: a non-streamed 200 `application/json` answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StreamResponse {
  chunks?: unknown[];
  /** Send `data: [DONE]` at the end. Default true. */
  done?: boolean;
  /** After writing, keep the response open. */
  hang?: boolean;
  /** After writing, destroy the socket (an abrupt end, not a clean chunked end). */
  destroy?: boolean;
  /** SSE text appended as is (after chunks, before [DONE]). */
  raw?: string;
  /** Use CRLF line endings. */
  crlf?: boolean;
  /** Random splitting of the byte stream into separate writes. Default true; a number = max piece size. */
  split?: boolean | number;
  /** Pause between writes (ms). Default 0 (one event-loop turn). */
  delayMs?: number;
  /** Interleave `: keepalive` comment lines. */
  comments?: boolean;
  /** Response headers (content-type defaults to text/event-stream). */
  headers?: Record<string, string>;
}

export interface ErrorResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface HangResponse {
  hang: true;
}

export interface JsonResponse {
  json: unknown;
}

export type ScriptedResponse = unknown[] | StreamResponse | ErrorResponse | HangResponse | JsonResponse;

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body (undefined when not JSON). */
  body: any;
  rawBody: string;
}

export type ScriptFn = (body: any, index: number, request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>;

export interface OpenAIServerOptions {
  script?: ScriptedResponse[] | ScriptFn;
  /** Seed for the random splits (deterministic runs). */
  seed?: number;
  /** Served at GET <prefix>/models. Default ['test-model']. */
  models?: string[];
}

export interface OpenAIServer {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:54321/v1`. */
  url: string;
  port: number;
  /** Requests to `/chat/completions`, in arrival order. */
  requests: RecordedRequest[];
  /** Replace the script: a list is answered from its first entry on; a function still sees the running request index. */
  setScript(script: ScriptedResponse[] | ScriptFn): void;
  /** Resolves when `n` chat requests have arrived. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Connections closed by the client (or server) so far, to check that aborts release sockets. */
  readonly closedConnections: number;
  close(): Promise<void>;
}

export async function startOpenAIServer(options: OpenAIServerOptions = {}): Promise<OpenAIServer> {
  let script: ScriptedResponse[] | ScriptFn = options.script ?? [];
  let scriptStart = 0;
  const models = options.models ?? ['test-model'];
  const random = mulberry32(options.seed ?? 0x5eed);
  const requests: RecordedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  let closedConnections = 0;
  let closing = false;

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(parts).toString('utf8')).catch((err) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `test server: ${String(err)}` } }));
        } else res.destroy();
      });
    });
  });
  server.on('connection', (socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      closedConnections++;
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    const path = req.url ?? '/';
    if (req.method === 'GET' && /\/models\/?$/.test(path)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model', owned_by: 'test' })) }));
      return;
    }
    if (req.method !== 'POST' || !/\/chat\/completions\/?$/.test(path)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route for ${req.method} ${path}` } }));
      return;
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const recorded: RecordedRequest = { method: req.method, path, headers: req.headers, body, rawBody: raw };
    const index = requests.length;
    requests.push(recorded);
    const response =
      typeof script === 'function'
        ? await script(body, index, recorded)
        : (script[index - scriptStart] ?? { status: 500, body: { error: { message: `test server: script has no response #${index - scriptStart}` } } });
    await respond(res, response);
  }

  async function respond(res: http.ServerResponse, response: ScriptedResponse): Promise<void> {
    if (Array.isArray(response)) return stream(res, { chunks: response });
    const r = response as Record<string, unknown>;
    if (typeof r.status === 'number') {
      const e = response as ErrorResponse;
      const isText = typeof e.body === 'string';
      res.writeHead(e.status, { 'content-type': isText ? 'text/plain' : 'application/json', ...(e.headers ?? {}) });
      res.end(e.body === undefined ? '' : isText ? (e.body as string) : JSON.stringify(e.body));
      return;
    }
    if ('json' in r) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(r.json));
      return;
    }
    if (r.hang === true && r.chunks === undefined && r.raw === undefined) return; // never answer
    return stream(res, response as StreamResponse);
  }

  async function stream(res: http.ServerResponse, s: StreamResponse): Promise<void> {
    const nl = s.crlf ? '\r\n' : '\n';
    let text = '';
    for (const chunk of s.chunks ?? []) {
      if (s.comments) text += `: keepalive${nl}${nl}`;
      text += `data: ${JSON.stringify(chunk)}${nl}${nl}`;
    }
    if (s.raw) text += s.raw;
    if (s.done !== false) text += `data: [DONE]${nl}${nl}`;

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...(s.headers ?? {}) });
    res.flushHeaders();
    const bytes = Buffer.from(text, 'utf8');
    const maxPiece = s.split === false ? bytes.length || 1 : typeof s.split === 'number' ? Math.max(1, s.split) : 48;
    let at = 0;
    while (at < bytes.length) {
      if (res.destroyed || closing) return;
      const size = s.split === false ? bytes.length : 1 + Math.floor(random() * maxPiece);
      const piece = bytes.subarray(at, at + size);
      at += piece.length;
      await new Promise<void>((resolve) => res.write(piece, () => resolve()));
      await new Promise<void>((resolve) => (s.delayMs ? setTimeout(resolve, s.delayMs) : setImmediate(resolve)));
    }
    if (s.hang) return; // left open; close() or the client ends it
    if (s.destroy) {
      res.socket?.destroy();
      return;
    }
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    setScript(next) {
      script = next;
      scriptStart = requests.length;
    },
    async waitForRequests(n, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < n) {
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${n} requests (got ${requests.length})`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    get closedConnections() {
      return closedConnections;
    },
    async close() {
      closing = true;
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---- chunk builders -------------------------------------------------------

export interface ChunkOptions {
  id?: string;
  model?: string;
  created?: number;
}

/** One `chat.completion.chunk` with a single choice. */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null, options: ChunkOptions = {}): Record<string, unknown> {
  return {
    id: options.id ?? 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: options.created ?? 1_700_000_000,
    model: options.model ?? 'test-model',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

/** The final usage-only chunk sent with `stream_options.include_usage`. */
export function usageChunk(
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens?: number; cached_tokens?: number },
  options: ChunkOptions = {},
) {
  const u: Record<string, unknown> = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens,
  };
  if (usage.cached_tokens !== undefined) u.prompt_tokens_details = { cached_tokens: usage.cached_tokens };
  return {
    id: options.id ?? 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: options.created ?? 1_700_000_000,
    model: options.model ?? 'test-model',
    choices: [],
    usage: u,
  };
}

export interface TextChunksOptions extends ChunkOptions {
  /** Characters per content delta. Default: word by word. */
  pieceSize?: number;
  /** Default 'stop'; null sends no finishing chunk. */
  finishReason?: string | null;
  /** Adds a usage chunk at the end. */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens?: number; cached_tokens?: number };
  /** Reasoning text streamed (as `reasoning_content`) before the answer. */
  reasoning?: string;
}

/** A plain streamed answer: role chunk, content pieces, finish chunk (and usage). */
export function textChunks(text: string, options: TextChunksOptions = {}): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [chunk({ role: 'assistant', content: '' }, null, options)];
  if (options.reasoning) for (const piece of pieces(options.reasoning, options.pieceSize)) out.push(chunk({ reasoning_content: piece }, null, options));
  for (const piece of pieces(text, options.pieceSize)) out.push(chunk({ content: piece }, null, options));
  const finish = options.finishReason === undefined ? 'stop' : options.finishReason;
  if (finish !== null) out.push(chunk({}, finish, options));
  if (options.usage) out.push(usageChunk(options.usage, options));
  return out;
}

export interface ToolCallSpec {
  id?: string;
  name: string;
  /** A string is sent as is; anything else is JSON-encoded. */
  arguments?: unknown;
}

export interface ToolCallChunksOptions extends ChunkOptions {
  /** Characters per arguments fragment. Default 7. */
  pieceSize?: number;
  /** Default 'tool_calls'; null sends none. */
  finishReason?: string | null;
  /** Text content streamed before the calls. */
  text?: string;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens?: number; cached_tokens?: number };
}

/** Standard OpenAI-style streamed tool calls: per call, id+name first, then argument fragments. */
export function toolCallChunks(calls: ToolCallSpec[], options: ToolCallChunksOptions = {}): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [chunk({ role: 'assistant', content: null }, null, options)];
  if (options.text) for (const piece of pieces(options.text)) out.push(chunk({ content: piece }, null, options));
  calls.forEach((call, index) => {
    const id = call.id ?? `call_test_${index}`;
    out.push(chunk({ tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }] }, null, options));
    const args = call.arguments === undefined ? '' : typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    for (let i = 0; i < args.length; i += options.pieceSize ?? 7) {
      out.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(i, i + (options.pieceSize ?? 7)) } }] }, null, options));
    }
  });
  const finish = options.finishReason === undefined ? 'tool_calls' : options.finishReason;
  if (finish !== null) out.push(chunk({}, finish, options));
  if (options.usage) out.push(usageChunk(options.usage, options));
  return out;
}

function pieces(text: string, size?: number): string[] {
  if (!text) return [];
  if (size && size > 0) {
    const chars = Array.from(text); // do not cut surrogate pairs
    const out: string[] = [];
    for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
    return out;
  }
  return text.match(/\s*\S+|\s+$/g) ?? [text];
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
