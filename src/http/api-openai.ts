// An OpenAI-compatible endpoint, so chat apps (Open WebUI, Jan Desktop, Home
// Assistant's OpenAI-compatible conversation integrations) use Hearth's agent
// as their "model":
//   GET  /v1/models             the one model, `hearth` (`created`: when this
//                               Hearth started)
//   POST /v1/chat/completions   the last user message is a turn of a Hearth
//                               session, answered as a chat.completion (or,
//                               with stream: true, chat.completion.chunk SSE
//                               ending with `data: [DONE]`)
//   /v1/responses               not served: answered 404 in the API's error
//                               shape, naming /v1/chat/completions
// The bearer token is a Hearth token, as for /api. `model` is required, as in
// the API. The conversation is keyed by the `X-Hearth-Conversation` header,
// else the OpenAI `user` field; without either, each request is a fresh
// ephemeral session. Only the last user message is read: the session keeps
// the thread itself. Tool calls stay inside Hearth: the client gets the answer
// for a person (spoken.ts), and in the extension member `hearth` (on the
// message, or on the last chunk) the tool calls, audit and approval ids.
// `max_tokens` (or `max_completion_tokens`) and `stop` cut the answer's words
// (finish_reason "length" / "stop"), never the turn. A second message while a
// conversation's turn runs is 409 (with `x-should-retry: false`, so OpenAI's
// clients do not send it again) and leaves that turn alone. Options Hearth
// cannot honour (openai-options.ts) are a 400 naming them. Errors are
// OpenAI-shaped: `{error: {message, type, param, code}}`.
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Conversations, type ConversationAnswer } from '../agent/conversations.js';
import type { AgentEvent } from '../agent/types.js';
import { hearthVersion } from '../util/version.js';
import { HttpError } from './errors.js';
import { AnswerLimit, limitAnswer, tokensOf } from './openai-limits.js';
import { refusedOption } from './openai-options.js';
import type { ApiContext, ApiRequest, Route } from './route.js';

export const OPENAI_MODEL = 'hearth';
const MAX_MESSAGES = 1000;
const MAX_USER_TEXT = 32_000;
const MAX_KEY = 200;
const KEY_RE = /^[\x21-\x7e][\x20-\x7e]*$/;
const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];
const HEARTBEAT_MS = 15_000;
/** The API takes at most 4 stop sequences. */
const MAX_STOPS = 4;
const MAX_STOP_LENGTH = 200;
const DONE = '[DONE]';

/** OpenAI's clients retry a 409 (and 408, 429, 5xx) unless the answer says not to; a turn is no request to repeat blindly. */
const DO_NOT_RETRY = { 'x-should-retry': 'false' };

/** An OpenAI-shaped 4xx/5xx. */
export function openAiError(
  status: number,
  message: string,
  param: string | null = null,
  code: string | null = null,
  type?: string,
  headers: Record<string, string> = {},
): HttpError {
  const kind =
    type ??
    (status === 401
      ? 'authentication_error'
      : status === 403
        ? 'permission_error'
        : status === 404
          ? 'not_found_error'
          : status >= 500
            ? 'server_error'
            : 'invalid_request_error');
  return new HttpError(status, code ?? kind, message, { type: kind, param }, headers);
}

/** Any HttpError as OpenAI clients read errors (the server's own 401/413/415 too). */
export function openAiErrorBody(err: HttpError): { error: { message: string; type: string; param: string | null; code: string | null } } {
  const extra = err.extra as { type?: unknown; param?: unknown; field?: unknown };
  const type =
    typeof extra.type === 'string'
      ? extra.type
      : err.status === 401
        ? 'authentication_error'
        : err.status === 403
          ? 'permission_error'
          : err.status === 404
            ? 'not_found_error'
            : err.status >= 500
              ? 'server_error'
              : 'invalid_request_error';
  const param = typeof extra.param === 'string' ? extra.param : typeof extra.field === 'string' ? extra.field : null;
  return { error: { message: err.message, type, param, code: err.code } };
}

const show = (v: unknown): string => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 59)}…` : s;
};

const bad = (param: string, message: string) => openAiError(400, `${param}: ${message}`, param);

/** The text of a message's content: a string, or the text parts of a list. */
function contentText(content: unknown, param: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad(param, `must be a string or a list of content parts, got ${show(content)}`);
  const texts: string[] = [];
  content.forEach((part, i) => {
    if (!part || typeof part !== 'object' || Array.isArray(part)) throw bad(`${param}[${i}]`, `must be a content part object, got ${show(part)}`);
    const p = part as Record<string, unknown>;
    if (typeof p.type !== 'string') throw bad(`${param}[${i}].type`, 'is required (text, image_url, ...)');
    if (p.type === 'text') {
      if (typeof p.text !== 'string') throw bad(`${param}[${i}].text`, `must be a string, got ${show(p.text)}`);
      texts.push(p.text);
    }
    // Other parts (images, audio) are not Hearth's to read here: a camera is asked through its tool.
  });
  return texts.join('\n');
}

interface ChatRequest {
  text: string;
  stream: boolean;
  includeUsage: boolean;
  model: string;
  user?: string;
  maxTokens?: number;
  stop: string[];
}

/** `max_tokens` or its newer name `max_completion_tokens`: a whole number of at least 1. */
function maxTokensOf(body: Record<string, unknown>): number | undefined {
  let found: number | undefined;
  for (const param of ['max_completion_tokens', 'max_tokens']) {
    const v = body[param];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw bad(param, `must be a whole number of tokens, at least 1, got ${show(v)}`);
    found = found === undefined ? v : Math.min(found, v);
  }
  return found;
}

function stopsOf(body: Record<string, unknown>): string[] {
  const stop = body.stop;
  if (stop === undefined || stop === null) return [];
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list)) throw bad('stop', `must be a string or a list of up to ${MAX_STOPS} strings, got ${show(stop)}`);
  if (list.length > MAX_STOPS) throw bad('stop', `has ${list.length} sequences; at most ${MAX_STOPS}`);
  return list.map((s, i) => {
    if (typeof s !== 'string' || s === '' || s.length > MAX_STOP_LENGTH)
      throw bad(`stop[${i}]`, `must be a non-empty string of at most ${MAX_STOP_LENGTH} characters, got ${show(s)}`);
    return s;
  });
}

/** Check the body; a 400 names the parameter at fault, as OpenAI does. */
export function parseChatRequest(body: Record<string, unknown>): ChatRequest {
  const model = body.model;
  if (model === undefined || model === null) throw bad('model', `is required: you must provide a model parameter ("${OPENAI_MODEL}", see GET /v1/models)`);
  if (typeof model !== 'string' || model === '') throw bad('model', `must be a model name (${OPENAI_MODEL}), got ${show(model)}`);
  if (model !== OPENAI_MODEL)
    throw openAiError(404, `The model ${show(model)} does not exist: Hearth serves one model, "${OPENAI_MODEL}" (GET /v1/models)`, 'model', 'model_not_found');
  const messages = body.messages;
  if (messages === undefined || messages === null) throw bad('messages', 'is required: a list of {role, content} with at least one user message');
  if (!Array.isArray(messages)) throw bad('messages', `must be a list of {role, content}, got ${show(messages)}`);
  if (!messages.length) throw bad('messages', 'must not be empty: send at least one user message');
  if (messages.length > MAX_MESSAGES) throw bad('messages', `has ${messages.length} messages; at most ${MAX_MESSAGES}`);
  let last: string | undefined;
  messages.forEach((m, i) => {
    if (!m || typeof m !== 'object' || Array.isArray(m)) throw bad(`messages[${i}]`, `must be an object {role, content}, got ${show(m)}`);
    const msg = m as Record<string, unknown>;
    if (typeof msg.role !== 'string' || !ROLES.includes(msg.role))
      throw bad(`messages[${i}].role`, `must be one of ${ROLES.join(', ')}, got ${show(msg.role)}`);
    const text = contentText(msg.content, `messages[${i}].content`);
    if (msg.role === 'user') last = text;
  });
  if (last === undefined) throw bad('messages', 'has no user message: the last user message is what Hearth answers');
  if (last.trim() === '') throw bad('messages', 'the last user message has no text');
  if (last.length > MAX_USER_TEXT) throw bad('messages', `the last user message is ${last.length} characters; at most ${MAX_USER_TEXT}`);
  const stream = body.stream ?? false;
  if (typeof stream !== 'boolean') throw bad('stream', `must be true or false, got ${show(stream)}`);
  const options = body.stream_options;
  let includeUsage = false;
  if (options !== undefined && options !== null) {
    if (typeof options !== 'object' || Array.isArray(options)) throw bad('stream_options', `must be an object, got ${show(options)}`);
    includeUsage = (options as Record<string, unknown>).include_usage === true;
  }
  const n = body.n;
  if (n !== undefined && n !== null && n !== 1) throw bad('n', `Hearth gives one answer per turn: n must be 1, got ${show(n)}`);
  const refused = refusedOption(body);
  if (refused) throw bad(refused.param, `${refused.why}; got ${show(refused.value)}`);
  const user = body.user;
  if (user !== undefined && user !== null && (typeof user !== 'string' || user.length > MAX_KEY || !KEY_RE.test(user))) {
    throw bad('user', `must be a conversation key of 1 to ${MAX_KEY} printable ASCII characters, got ${show(user)}`);
  }
  const maxTokens = maxTokensOf(body);
  const stop = stopsOf(body);
  return { text: last, stream, includeUsage, model, ...(typeof user === 'string' ? { user } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}), stop };
}

function conversationKey(r: ApiRequest, chat: ChatRequest): string | undefined {
  const header = r.req.headers['x-hearth-conversation'];
  if (Array.isArray(header)) throw bad('X-Hearth-Conversation', 'was sent more than once');
  if (header !== undefined) {
    if (header.length > MAX_KEY || !KEY_RE.test(header)) throw bad('X-Hearth-Conversation', `must be 1 to ${MAX_KEY} printable ASCII characters`);
    return header;
  }
  return chat.user;
}

/** The extension member: what the turn did inside Hearth. */
function hearthMember(answer: ConversationAnswer, principalArea: string | undefined) {
  return {
    session: answer.ephemeral ? null : answer.sessionId,
    area: principalArea ?? null,
    stop_reason: answer.result.stopReason,
    ...(answer.result.error !== undefined ? { error: answer.result.error } : {}),
    tool_calls: answer.summary.toolCalls.map((c) => ({
      id: c.id,
      name: c.name,
      arguments: c.args,
      result: c.result ?? null,
      is_error: c.isError ?? false,
      audit_id: c.auditId ?? null,
      approval_id: c.approvalId ?? null,
    })),
    audit_ids: answer.summary.auditIds,
    approval_ids: answer.summary.approvalIds,
    // What the engine said of the turn itself (a bound on actions reached).
    ...(answer.summary.notices.length ? { notices: answer.summary.notices } : {}),
  };
}

function usage(text: string, prompt: string) {
  // Rough counts (about 4 characters a token): the offline model has no tokenizer.
  const prompt_tokens = tokensOf(prompt);
  const completion_tokens = tokensOf(text);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** What answers: this Hearth's version (clients log it beside the answer). */
export function systemFingerprint(): string {
  return `hearth-${hearthVersion()}`;
}

export function openAiRoutes(ctx: ApiContext): Route[] {
  const conversations = new Conversations(ctx.hearth);
  // The model `hearth` is this running Hearth: it came to be when it started.
  const startedAt = Math.floor(Date.now() / 1000);

  const models = () => ({
    object: 'list',
    data: [{ id: OPENAI_MODEL, object: 'model', created: startedAt, owned_by: 'hearth' }],
  });

  const notServed = (r: ApiRequest) => {
    throw openAiError(
      404,
      `Hearth does not serve the Responses API (${r.req.method} ${r.req.url?.split('?')[0]}); send the conversation to POST /v1/chat/completions`,
      null,
      'unsupported_endpoint',
      'invalid_request_error',
    );
  };

  async function completions(r: ApiRequest): Promise<unknown> {
    const chat = parseChatRequest(await r.body());
    const key = conversationKey(r, chat);
    const id = `chatcmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const abort = new AbortController();
    // The client went away mid-turn: nobody is listening, so stop the turn.
    r.res.on('close', () => {
      if (!r.res.writableFinished) abort.abort();
    });
    const run = async (onText?: (text: string) => void, onEvent?: (event: AgentEvent) => void): Promise<ConversationAnswer> => {
      try {
        return await conversations.turn({
          principal: r.principal,
          ...(key !== undefined ? { key } : {}),
          text: chat.text,
          signal: abort.signal,
          ...(onText ? { onText } : {}),
          ...(onEvent ? { onEvent } : {}),
        });
      } catch (err) {
        const code = (err as { code?: string }).code;
        // The same message again would only meet the same running turn: tell OpenAI's clients not to retry it.
        if (code === 'turn_active')
          throw openAiError(409, 'a turn of this conversation is still running: wait for its answer', null, 'conversation_busy', undefined, DO_NOT_RETRY);
        if (code === 'archived_session') throw openAiError(409, (err as Error).message, null, 'conversation_archived', undefined, DO_NOT_RETRY);
        if (/belongs to another principal/.test((err as Error).message))
          throw openAiError(403, 'this conversation belongs to another principal', null, 'conversation_forbidden');
        throw err;
      }
    };

    if (!chat.stream) {
      const answer = await run();
      if (answer.result.stopReason === 'error' && !answer.summary.text) {
        // Not to be sent again by a client on its own: the failed turn may have switched things before it failed.
        throw openAiError(502, `the agent's turn failed: ${answer.result.error ?? 'unknown error'}`, null, 'turn_failed', undefined, DO_NOT_RETRY);
      }
      const hearth = hearthMember(answer, r.principal.area);
      const said = limitAnswer(answer.text, chat.maxTokens, chat.stop);
      return {
        id,
        object: 'chat.completion',
        created,
        model: chat.model,
        system_fingerprint: systemFingerprint(),
        choices: [{ index: 0, message: { role: 'assistant', content: said.text, refusal: null, hearth }, logprobs: null, finish_reason: said.finishReason }],
        usage: usage(said.text, chat.text),
        hearth,
      };
    }

    const res: ServerResponse = r.res;
    let started = false;
    const write = (data: unknown) => {
      if (res.destroyed || res.writableEnded) return;
      // The end marker is the bare word, not JSON.
      res.write(`data: ${data === DONE ? DONE : JSON.stringify(data)}\n\n`);
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: chat.model,
      system_fingerprint: systemFingerprint(),
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...extra,
    });
    // Headers go out with the first event, so an error before the turn starts (busy, bad session) is still a plain 4xx.
    const start = () => {
      if (started) return;
      started = true;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.socket?.setNoDelay(true);
      write(chunk({ role: 'assistant', content: '' }));
    };
    const heartbeat = setInterval(() => {
      if (started && !res.destroyed && !res.writableEnded) res.write(': keep-alive\n\n');
    }, HEARTBEAT_MS);
    heartbeat.unref();
    const limit = new AnswerLimit(chat.maxTokens, chat.stop);
    let said = '';
    const say = (text: string) => {
      if (!text) return;
      said += text;
      write(chunk({ content: text }));
    };
    try {
      const answer = await run(
        (text) => say(limit.push(text)),
        // The turn has begun: headers (and heartbeats) go out now.
        () => start(),
      );
      start();
      say(limit.end());
      const hearth = hearthMember(answer, r.principal.area);
      write(chunk({}, limit.finishReason, { hearth }));
      if (chat.includeUsage)
        write({
          id,
          object: 'chat.completion.chunk',
          created,
          model: chat.model,
          system_fingerprint: systemFingerprint(),
          choices: [],
          usage: usage(said, chat.text),
        });
      write(DONE);
      res.end();
    } catch (err) {
      if (!started) throw err;
      // Mid-stream: say what went wrong in the stream, then end it properly.
      ctx.log.error({ err }, 'an OpenAI-compatible streamed turn failed');
      const message = err instanceof Error ? err.message : String(err);
      write({ error: { message: `the agent's turn failed: ${message}`, type: 'server_error', param: null, code: 'turn_failed' } });
      write(DONE);
      res.end();
    } finally {
      clearInterval(heartbeat);
    }
    return undefined;
  }

  return [
    { method: 'GET', path: '/v1/models', handler: models },
    {
      method: 'GET',
      path: '/v1/models/:id',
      handler: ({ params }) => {
        if (params.id !== OPENAI_MODEL)
          throw openAiError(404, `The model ${show(params.id)} does not exist: Hearth serves one model, "${OPENAI_MODEL}"`, 'model', 'model_not_found');
        return models().data[0];
      },
    },
    { method: 'POST', path: '/v1/chat/completions', handler: completions },
    { method: 'POST', path: '/v1/responses', handler: notServed },
    { method: 'GET', path: '/v1/responses/:id', handler: notServed },
    { method: 'DELETE', path: '/v1/responses/:id', handler: notServed },
  ];
}
