// The OpenAI-compatible chat-completions provider: Jan Desktop (the default,
// http://127.0.0.1:1337/v1), Ollama (:11434/v1), llama.cpp's llama-server,
// LM Studio (:1234/v1), or anything else that speaks `POST /chat/completions`
// with `stream: true`.
//
// One round = one streamed request. Bytes go through the SSE parser, JSON
// chunks through the tool-call accumulator; the round ends with exactly one
// `done` event or a ProviderError. Nothing here can wait forever: the request
// and every read of the body are bounded by `timeoutMs` of silence, and the
// caller's AbortSignal cancels the request at once.

import type { ChatMessage, ContentPart, Provider, ProviderEvent, ProviderRequest, ToolCallRequest, Usage } from '../provider.js';
import { ProviderError } from '../provider.js';
import { silentLogger, type Logger } from '../../log.js';
import { SseParser, type SseEvent } from './sse.js';
import { ToolCallAccumulator } from './tool-call-accumulator.js';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:1337/v1';
export const DEFAULT_TIMEOUT_MS = 120_000;

/** Error codes a ProviderError from this provider carries. */
export type OpenAIProviderErrorCode =
  | 'unreachable' // connection refused / DNS / network before any response
  | 'http_error' // the server answered with a non-2xx status (see `status`)
  | 'timeout' // no byte for `timeoutMs`
  | 'aborted' // the request's AbortSignal fired
  | 'empty_response' // 2xx but not a single chunk of data
  | 'stream_error' // the server reported an error inside the stream
  | 'bad_config'; // an unusable base URL

export interface OpenAIProviderOptions {
  /** Up to and including `/v1`. Default: Jan Desktop's `http://127.0.0.1:1337/v1`. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer <key>` when set (Jan Desktop requires one). */
  apiKey?: string;
  /** The model used when a request names none. */
  model: string;
  /** Does the model take images? Default true. When false, image parts are replaced by a note. */
  vision?: boolean;
  /** Longest silence (no response, no byte of body) before a `timeout` error. Default 120 s. */
  timeoutMs?: number;
  log?: Logger;
  /** Shown in logs and by the engine. Default `openai`. */
  name?: string;
  /** Extra request headers (e.g. for a proxy). */
  headers?: Record<string, string>;
}

const ERROR_BODY_LIMIT = 64 * 1024;
const SNIFF_LIMIT = 1024 * 1024;

export class OpenAIProvider implements Provider {
  readonly name: string;
  readonly defaultModel: string;
  readonly vision: boolean;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  private readonly endpoint: string;
  private readonly apiKey?: string;
  private readonly extraHeaders: Record<string, string>;
  private readonly log: Logger;

  constructor(options: OpenAIProviderOptions) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.endpoint = /\/chat\/completions$/.test(this.baseUrl) ? this.baseUrl : `${this.baseUrl}/chat/completions`;
    try {
      const u = new URL(this.endpoint);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      throw new ProviderError(`invalid provider base URL ${JSON.stringify(options.baseUrl)}`, 'bad_config');
    }
    this.apiKey = options.apiKey || undefined;
    this.defaultModel = options.model;
    this.vision = options.vision ?? true;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.log = options.log ?? silentLogger;
    this.name = options.name ?? 'openai';
    this.extraHeaders = { ...(options.headers ?? {}) };
  }

  /** The request body this provider sends for `request` (exported for tests and debugging). */
  requestBody(request: Pick<ProviderRequest, 'model' | 'messages' | 'tools'>): Record<string, unknown> {
    const body: Record<string, unknown> = {
      model: request.model || this.defaultModel,
      messages: toWireMessages(request.messages, this.vision),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (request.tools.length) body.tools = request.tools;
    return body;
  }

  async *stream(request: ProviderRequest): AsyncGenerator<ProviderEvent, void, undefined> {
    const signal = request.signal;
    if (signal?.aborted) throw abortedError();

    const controller = new AbortController();
    let why: 'timeout' | 'aborted' | undefined;
    const onAbort = () => {
      why ??= 'aborted';
      controller.abort();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        why ??= 'timeout';
        controller.abort();
      }, this.timeoutMs);
    };
    const disarm = () => clearTimeout(timer);
    const interrupted = (): ProviderError | undefined =>
      why === 'aborted'
        ? abortedError()
        : why === 'timeout'
          ? new ProviderError(`no answer from ${this.endpoint} for ${this.timeoutMs} ms`, 'timeout')
          : undefined;

    const body = this.requestBody(request);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/event-stream, application/json',
      ...this.extraHeaders,
    };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;

    const started = Date.now();
    this.log.debug(
      { provider: this.name, url: this.endpoint, model: body.model, messages: request.messages.length, tools: request.tools.length },
      'provider request',
    );

    let finished = false;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    try {
      arm();
      let res: Response;
      try {
        res = await fetch(this.endpoint, { method: 'POST', headers, body: JSON.stringify(body), signal: controller.signal });
      } catch (err) {
        throw interrupted() ?? this.connectError(err);
      }

      if (!res.ok) {
        const text = await readLimited(res, ERROR_BODY_LIMIT, arm, disarm).catch(() => '');
        const ie = interrupted();
        if (ie) throw ie;
        throw this.httpError(res.status, res.statusText, text);
      }

      const contentType = (res.headers.get('content-type') ?? '').toLowerCase();
      const jsonBody = contentType.includes('json') && !contentType.includes('event-stream');
      const round = new Round(this.log);
      const parser = new SseParser();
      let sniff = ''; // raw text kept until the first SSE event, in case the body is plain JSON after all
      let sniffing = !jsonBody;
      const decoder = new TextDecoder();
      let whole = '';
      let sawDone = false;
      let terminated = false;

      if (!res.body) throw new ProviderError(`${this.endpoint} answered ${res.status} with no body`, 'empty_response', res.status);
      reader = res.body.getReader();

      read: for (;;) {
        const ie = interrupted();
        if (ie) throw ie;
        let chunk: Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']>>;
        arm();
        try {
          chunk = await reader.read();
        } catch (err) {
          const ie2 = interrupted();
          if (ie2) throw ie2;
          // The connection died mid-body ("terminated"): treat as the end of the stream.
          terminated = true;
          this.log.warn({ provider: this.name, err: errorText(err) }, 'provider stream ended abruptly');
          break;
        } finally {
          disarm();
        }
        if (chunk.done) break;
        if (jsonBody) {
          whole += decoder.decode(chunk.value, { stream: true });
          if (whole.length > 64 * SNIFF_LIMIT) throw new ProviderError('provider answer too large', 'stream_error');
          continue;
        }
        if (sniffing) {
          sniff += decoder.decode(chunk.value, { stream: true });
          if (sniff.length > SNIFF_LIMIT) sniffing = false;
        }
        const events = parser.push(chunk.value);
        if (events.length) sniffing = false;
        for (const ev of events) {
          if (isDone(ev)) {
            sawDone = true;
            break read;
          }
          for (const out of round.event(ev)) yield out;
        }
      }

      if (jsonBody) {
        whole += decoder.decode();
        for (const out of round.wholeJson(whole)) yield out;
      } else if (!sawDone) {
        const events = parser.end();
        let handled = false;
        for (const ev of events) {
          if (isDone(ev)) {
            sawDone = true;
            break;
          }
          handled = true;
          for (const out of round.event(ev)) yield out;
        }
        // A server that ignored `stream: true` and sent plain JSON without saying so.
        if (!handled && round.chunks === 0 && sniffing && sniff.trim().startsWith('{')) {
          sniff += decoder.decode();
          for (const out of round.wholeJson(sniff)) yield out;
        }
      }

      if (round.chunks === 0) {
        throw new ProviderError(
          `${this.endpoint} answered ${res.status} but sent no data${terminated ? ' before closing the connection' : ''}`,
          'empty_response',
          res.status,
        );
      }
      if (!sawDone && !jsonBody) this.log.debug({ provider: this.name }, 'provider stream ended without [DONE]');

      const done = round.done();
      this.log.debug(
        {
          provider: this.name,
          ms: Date.now() - started,
          finishReason: done.finishReason,
          toolCalls: done.toolCalls.length,
          usage: done.usage,
        },
        'provider round done',
      );
      finished = true;
      yield done;
    } finally {
      disarm();
      signal?.removeEventListener('abort', onAbort);
      // Release the connection: the consumer stopped early, an error was
      // thrown, or the server kept the stream open after [DONE].
      if (reader) reader.cancel().catch(() => {});
      if (!finished) controller.abort();
    }
  }

  private connectError(err: unknown): ProviderError {
    const code = causeCode(err);
    const detail = code ?? errorText(err);
    if (/bad port/i.test(detail)) {
      // fetch refuses some ports outright (the WHATWG "bad ports" list).
      return new ProviderError(`cannot use ${this.baseUrl}: fetch does not allow that port; pick another one`, 'bad_config');
    }
    return new ProviderError(
      `cannot reach the model server at ${this.baseUrl} (${detail}): is Jan Desktop / Ollama (or llama-server, LM Studio) running there?`,
      'unreachable',
    );
  }

  private httpError(status: number, statusText: string, text: string): ProviderError {
    let message = errorMessageFromBody(text) || statusText || 'no message';
    if ((status === 401 || status === 403) && !this.apiKey) message += ' (no API key is configured; Jan Desktop requires one)';
    return new ProviderError(`provider answered ${status}: ${message}`, 'http_error', status);
  }
}

/** The state of one streamed round: text, reasoning, tool calls, usage, finish reason. */
class Round {
  chunks = 0;
  private readonly acc = new ToolCallAccumulator();
  private finishReason: string | undefined;
  private usage: Usage | undefined;

  constructor(private readonly log: Logger) {}

  /** One SSE event -> provider events. */
  event(ev: SseEvent): ProviderEvent[] {
    if (ev.event === 'error') throw streamError(parseJson(ev.data) ?? ev.data);
    const data = ev.data.trim();
    if (!data) return [];
    const obj = parseJson(data);
    if (!obj || typeof obj !== 'object') {
      this.log.warn({ data: data.slice(0, 200) }, 'provider sent a chunk that is not JSON; ignored');
      return [];
    }
    return this.chunk(obj as Record<string, unknown>, 'delta');
  }

  /** A non-streamed `chat.completion` body (a server that ignored `stream: true`). */
  wholeJson(text: string): ProviderEvent[] {
    const obj = parseJson(text.trim());
    if (!obj || typeof obj !== 'object') return [];
    return this.chunk(obj as Record<string, unknown>, 'message');
  }

  private chunk(obj: Record<string, unknown>, kind: 'delta' | 'message'): ProviderEvent[] {
    if (obj.error) throw streamError(obj.error);
    this.chunks++;
    const out: ProviderEvent[] = [];
    if (obj.usage && typeof obj.usage === 'object') this.usage = normaliseUsage(obj.usage as Record<string, unknown>) ?? this.usage;
    const choices = Array.isArray(obj.choices) ? obj.choices : [];
    for (const choice of choices as Record<string, unknown>[]) {
      if (!choice || typeof choice !== 'object') continue;
      if (typeof choice.index === 'number' && choice.index !== 0) continue; // n = 1
      const delta = (choice[kind] ?? choice.delta ?? choice.message) as Record<string, unknown> | undefined;
      if (delta && typeof delta === 'object') {
        const reasoning = nonEmpty(delta.reasoning_content) ?? nonEmpty(delta.reasoning);
        if (reasoning) out.push({ type: 'reasoning', text: reasoning });
        const content = nonEmpty(delta.content);
        if (content) out.push({ type: 'token', text: content });
        if (Array.isArray(delta.tool_calls)) {
          const list = kind === 'message' ? (delta.tool_calls as Record<string, unknown>[]).map((tc, i) => ({ index: i, ...tc })) : delta.tool_calls;
          out.push(...this.acc.pushAll(list));
        } else if (delta.function_call && typeof delta.function_call === 'object') {
          // The legacy single-function field.
          out.push(...this.acc.push({ index: 0, function: delta.function_call as { name?: string } }));
        }
      }
      if (typeof choice.finish_reason === 'string' && choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    return out;
  }

  done(): Extract<ProviderEvent, { type: 'done' }> {
    const toolCalls: ToolCallRequest[] = this.acc.finish();
    const unnamed = this.acc.unnamed();
    if (unnamed.length) this.log.warn({ unnamed }, 'provider sent tool call fragments without a name; dropped');
    // Not trusted: some servers say `stop` with tool calls, some say nothing.
    let finishReason = this.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop');
    if (toolCalls.length && finishReason === 'stop') finishReason = 'tool_calls';
    const done: Extract<ProviderEvent, { type: 'done' }> = { type: 'done', finishReason, toolCalls };
    if (this.usage) done.usage = this.usage;
    return done;
  }
}

/** Messages as the chat-completions API wants them. */
export function toWireMessages(messages: ChatMessage[], vision = true): Record<string, unknown>[] {
  return messages.map((m) => {
    switch (m.role) {
      case 'assistant': {
        const out: Record<string, unknown> = { role: 'assistant', content: m.content };
        if (m.tool_calls?.length) {
          out.tool_calls = m.tool_calls.map((tc) => ({
            id: tc.id,
            type: 'function',
            function: { name: tc.name, arguments: tc.arguments.trim() === '' ? '{}' : tc.arguments },
          }));
        } else if (m.content === null) {
          out.content = '';
        }
        return out;
      }
      case 'user':
        if (typeof m.content !== 'string' && !vision) return { role: 'user', content: textOnly(m.content) };
        return { role: 'user', content: m.content };
      case 'tool':
        return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
      case 'system':
        return { role: 'system', content: m.content };
      default:
        return m as unknown as Record<string, unknown>;
    }
  });
}

function textOnly(parts: ContentPart[]): string {
  const texts: string[] = [];
  let images = 0;
  for (const p of parts) {
    if (p.type === 'text') texts.push(p.text);
    else images++;
  }
  if (images) texts.push(`[${images === 1 ? 'an image was' : `${images} images were`} omitted: this model does not take images]`);
  return texts.join('\n');
}

/** The provider's own words from an error body: `{error:{message}}`, `{error:"…"}`, `{message}`, `{detail}`, or the text. */
export function errorMessageFromBody(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return '';
  const obj = parseJson(trimmed);
  if (obj && typeof obj === 'object') {
    const msg = messageOf(obj);
    if (msg) return clip(msg);
  }
  // HTML error pages: keep the text, not the markup.
  const plain = trimmed.startsWith('<')
    ? trimmed
        .replace(/<[^>]*>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim()
    : trimmed;
  return clip(plain);
}

function messageOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!value || typeof value !== 'object') return undefined;
  const o = value as Record<string, unknown>;
  if (o.error !== undefined) {
    const inner = messageOf(o.error);
    if (inner) return inner;
  }
  if (typeof o.message === 'string' && o.message) return o.message;
  if (typeof o.detail === 'string' && o.detail) return o.detail;
  if (Array.isArray(o.detail)) {
    const parts = o.detail
      .map((d) => messageOf(d) ?? (d && typeof d === 'object' ? (d as { msg?: unknown }).msg : undefined))
      .filter((x): x is string => typeof x === 'string');
    if (parts.length) return parts.join('; ');
  }
  if (typeof o.msg === 'string' && o.msg) return o.msg;
  return undefined;
}

function streamError(value: unknown): ProviderError {
  const msg = messageOf(value) ?? (typeof value === 'string' ? value : JSON.stringify(value));
  const status = value && typeof value === 'object' ? (value as { code?: unknown }).code : undefined;
  return new ProviderError(`provider reported an error mid-stream: ${clip(msg)}`, 'stream_error', typeof status === 'number' ? status : undefined);
}

function normaliseUsage(u: Record<string, unknown>): Usage | undefined {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const prompt = num(u.prompt_tokens);
  const completion = num(u.completion_tokens);
  if (prompt === undefined && completion === undefined && num(u.total_tokens) === undefined) return undefined;
  const usage: Usage = {
    prompt_tokens: prompt ?? 0,
    completion_tokens: completion ?? 0,
    total_tokens: num(u.total_tokens) ?? (prompt ?? 0) + (completion ?? 0),
  };
  const details = u.prompt_tokens_details;
  const cached = details && typeof details === 'object' ? num((details as Record<string, unknown>).cached_tokens) : num(u.cached_tokens);
  if (cached !== undefined) usage.cached_tokens = cached;
  return usage;
}

function isDone(ev: SseEvent): boolean {
  return ev.data.trim() === '[DONE]';
}

function nonEmpty(v: unknown): string | undefined {
  return typeof v === 'string' && v.length ? v : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function clip(s: string, max = 500): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

function abortedError(): ProviderError {
  return new ProviderError('the model request was aborted', 'aborted');
}

function causeCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const o = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof o.code === 'string' && o.code) return o.code;
    if (Array.isArray(o.errors) && o.errors.length) {
      const inner = causeCode(o.errors[0]);
      if (inner) return inner;
    }
    e = o.cause;
  }
  return undefined;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}

/** Read at most `limit` characters of a body, each read bounded by the idle timer. */
async function readLimited(res: Response, limit: number, arm: () => void, disarm: () => void): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      arm();
      const { done, value } = await reader.read();
      disarm();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (text.length >= limit) break;
    }
    text += decoder.decode();
  } finally {
    disarm();
    reader.cancel().catch(() => {});
  }
  return text.slice(0, limit);
}
