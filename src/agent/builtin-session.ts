// A session of the builtin engine: the model loop of one conversation.
// Per turn: ask the model, run the tool calls it makes through their
// handlers (the host tools, so Hearth's pipeline), feed results back, until
// the model answers without tools, the round limit is hit, or the turn is
// interrupted. Images from tools go in the next user message, never `details`.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { ValidateFunction } from 'ajv';
import type { Logger } from '../log.js';
import { normalizeResult } from '../tools/tool-set.js';
import type { HostTool, Principal, ToolCall, ToolResultObject } from '../tools/types.js';
import { createAjv, schemaProblems } from '../util/ajv.js';
import type { HistoryStore } from './history.js';
import { ProviderError, type ChatMessage, type ContentPart, type FunctionSpec, type Provider, type ToolCallRequest } from './provider.js';
import { TurnHandle } from './turn.js';
import {
  NotPendingError,
  TurnActiveError,
  type AgentEvent,
  type AgentSession,
  type EngineLimits,
  type PermissionDecision,
  type Permissions,
} from './types.js';

export const HOST_PREFIX = 'host__';

const ajv = createAjv({ useDefaults: false });
const validators = new WeakMap<object, ValidateFunction>();

function validatorFor(tool: HostTool): ValidateFunction {
  let v = validators.get(tool.parameters);
  if (!v) {
    v = ajv.compile(tool.parameters ?? { type: 'object' });
    validators.set(tool.parameters, v);
  }
  return v;
}

export function toolSpecsOf(tools: HostTool[]): FunctionSpec[] {
  return tools.map((t) => ({
    type: 'function',
    function: { name: `${HOST_PREFIX}${t.name}`, description: t.description, parameters: t.parameters ?? { type: 'object', properties: {} } },
  }));
}

export interface BuiltinSessionOptions {
  id: string;
  provider: Provider;
  model: string;
  principal: Principal;
  tools: HostTool[];
  permissions: Permissions;
  systemPrompt: string;
  ephemeral: boolean;
  history?: HistoryStore;
  messages: ChatMessage[];
  maxRounds: number;
  limits: EngineLimits;
  log: Logger;
}

interface PendingPermission {
  resolve: (decision: PermissionDecision) => void;
  toolName: string;
}

export class BuiltinSession extends EventEmitter<{ event: [AgentEvent, string] }> implements AgentSession {
  readonly id: string;
  readonly principal: Principal;
  private toolList: HostTool[];
  private specs: FunctionSpec[];
  private active?: TurnHandle;
  private readonly thread: ChatMessage[];
  private readonly permissionWaits = new Map<string, PendingPermission>();
  private readonly alwaysAllowed = new Set<string>();
  private closed = false;

  constructor(private readonly o: BuiltinSessionOptions) {
    super();
    this.id = o.id;
    this.principal = o.principal;
    this.toolList = o.tools;
    this.specs = toolSpecsOf(o.tools);
    this.thread = [...o.messages];
  }

  get model(): string {
    return this.o.model;
  }

  get tools(): string[] {
    return this.specs.map((s) => s.function.name);
  }

  get toolSpecs(): FunctionSpec[] {
    return this.specs;
  }

  /** The conversation so far (system prompt excluded). */
  get messages(): readonly ChatMessage[] {
    return this.thread;
  }

  get busy(): boolean {
    return !!this.active && !this.active.done;
  }

  setTools(tools: HostTool[]): void {
    // Between turns only: a running turn keeps the set it started with.
    this.toolList = tools;
    this.specs = toolSpecsOf(tools);
  }

  async prompt(text: string): Promise<TurnHandle> {
    if (this.closed) throw new Error('the session is closed');
    if (this.busy) throw new TurnActiveError();
    const turn = new TurnHandle((event, turnId) => this.emit('event', event, turnId));
    this.active = turn;
    void this.run(turn, text);
    return turn;
  }

  respondPermission(requestId: string, decision: PermissionDecision): void {
    const wait = this.permissionWaits.get(requestId);
    if (!wait) throw new NotPendingError(requestId);
    this.permissionWaits.delete(requestId);
    if (decision === 'allow_always') this.alwaysAllowed.add(wait.toolName);
    wait.resolve(decision);
  }

  /** Requests waiting for a person (for front doors that list them). */
  pendingPermissions(): string[] {
    return [...this.permissionWaits.keys()];
  }

  async close(): Promise<void> {
    this.closed = true;
    this.active?.interrupt();
    await this.active?.result();
  }

  // ------------------------------------------------------------------ the loop

  private async run(turn: TurnHandle, text: string): Promise<void> {
    const added: ChatMessage[] = [{ role: 'user', content: text }];
    const tools = this.toolList;
    const specs = this.specs;
    const byName = new Map(tools.map((t) => [`${HOST_PREFIX}${t.name}`, t]));
    let result: { stopReason: 'completed' | 'interrupted' | 'error'; error?: string };
    try {
      result = await this.loop(turn, added, byName, specs);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.o.log.error({ err: message, session: this.id }, 'turn failed');
      turn.emit({ type: 'error', code: 'internal', message });
      result = { stopReason: 'error', error: message };
    }
    // The thread keeps what happened, also on interrupt or error, so the next turn has the context.
    this.thread.push(...added);
    if (!this.o.ephemeral && this.o.history) {
      try {
        this.o.history.append(this.id, this.o.model, added);
      } catch (err) {
        this.o.log.error({ err: (err as Error).message, session: this.id }, 'could not save the conversation');
      }
    }
    for (const [id, wait] of this.permissionWaits) {
      this.permissionWaits.delete(id);
      wait.resolve('deny');
    }
    turn.finish(result);
  }

  private async loop(
    turn: TurnHandle,
    added: ChatMessage[],
    byName: Map<string, HostTool>,
    specs: FunctionSpec[],
  ): Promise<{ stopReason: 'completed' | 'interrupted' | 'error'; error?: string }> {
    const signal = turn.signal;
    const interrupted = () => ({ stopReason: 'interrupted' as const });
    for (let round = 1; round <= this.o.maxRounds; round++) {
      if (signal.aborted) return interrupted();
      turn.emit({ type: 'step', index: round, max: this.o.maxRounds });
      const messages: ChatMessage[] = [{ role: 'system', content: this.o.systemPrompt }, ...this.thread, ...added];
      let text = '';
      let done: { finishReason: string; toolCalls: ToolCallRequest[] } | undefined;
      try {
        for await (const ev of this.o.provider.stream({ model: this.o.model, messages, tools: specs, signal })) {
          if (signal.aborted) break;
          switch (ev.type) {
            case 'token':
              text += ev.text;
              turn.emit({ type: 'token', text: ev.text });
              break;
            case 'reasoning':
              turn.emit({ type: 'reasoning', text: ev.text });
              break;
            case 'tool_call_started':
              turn.emit({ type: 'tool_call_started', id: ev.id, name: ev.name });
              break;
            case 'tool_call_args_delta':
              turn.emit({ type: 'tool_call_args_delta', id: ev.id, delta: ev.delta });
              break;
            case 'done':
              done = ev;
              if (ev.usage) turn.emit({ type: 'turn_usage', usage: ev.usage });
              break;
          }
        }
      } catch (err) {
        if (signal.aborted) return interrupted();
        const code = err instanceof ProviderError ? err.code : 'provider_error';
        const message = err instanceof Error ? err.message : String(err);
        turn.emit({ type: 'error', code, message });
        return { stopReason: 'error', error: message };
      }
      if (signal.aborted) {
        if (text) added.push({ role: 'assistant', content: text });
        return interrupted();
      }
      if (!done) {
        turn.emit({ type: 'error', code: 'provider_error', message: 'the model stream ended without finishing' });
        return { stopReason: 'error', error: 'the model stream ended without finishing' };
      }
      const calls = done.toolCalls;
      added.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) });
      if (!calls.length) {
        turn.emit({ type: 'done', stop_reason: done.finishReason });
        return { stopReason: 'completed' };
      }
      const images = await this.runCalls(turn, calls, byName);
      for (const c of calls) {
        const r = images.results.get(c.id)!;
        added.push({ role: 'tool', tool_call_id: c.id, content: r });
      }
      if (images.parts.length) added.push({ role: 'user', content: images.parts });
      if (signal.aborted) return interrupted();
    }
    const message = `stopped after ${this.o.maxRounds} rounds of tool calls without an answer`;
    turn.emit({ type: 'error', code: 'max_rounds', message });
    return { stopReason: 'error', error: message };
  }

  /** Run one round's calls: consecutive reads together, actuators one at a time, results in call order. */
  private async runCalls(turn: TurnHandle, calls: ToolCallRequest[], byName: Map<string, HostTool>) {
    const results = new Map<string, string>();
    const parts: ContentPart[] = [];
    let imageBytes = 0;
    let imageCount = 0;
    const addImages = (call: ToolCallRequest, result: ToolResultObject): string => {
      if (!result.images?.length) return '';
      if (!this.o.provider.vision) return ' (An image was returned, but this model does not take images.)';
      const label: ContentPart = { type: 'text', text: `Image(s) returned by ${call.name} (call ${call.id}):` };
      const fitting = result.images.filter((img) => {
        if (!this.o.limits.mime_types.includes(img.mimeType) || img.bytes > this.o.limits.max_image_bytes) return false;
        if (imageCount + 1 > this.o.limits.max_images || imageBytes + img.bytes > this.o.limits.max_message_image_bytes) return false;
        imageCount++;
        imageBytes += img.bytes;
        return true;
      });
      if (fitting.length) parts.push(label, ...fitting.map((img) => ({ type: 'image_url' as const, image_url: { url: img.url } })));
      const dropped = result.images.length - fitting.length;
      return dropped ? ` (${dropped} image(s) left out: over the image limits.)` : '';
    };

    const runOne = async (call: ToolCallRequest): Promise<void> => {
      const outcome = await this.callTool(turn, call, byName);
      const extra = addImages(call, outcome);
      const content = (outcome.text ?? (outcome.isError ? 'failed' : '')) + extra;
      results.set(call.id, content);
      turn.emit({ type: 'tool_result', id: call.id, content, is_error: !!outcome.isError });
      if (outcome.details && typeof outcome.details === 'object') turn.emit({ type: 'tool_details', id: call.id, details: outcome.details });
    };

    let reads: ToolCallRequest[] = [];
    const flushReads = async () => {
      await Promise.all(reads.map(runOne));
      reads = [];
    };
    for (const call of calls) {
      const tool = byName.get(call.name);
      if (tool?.capability === 'read') {
        reads.push(call);
        continue;
      }
      await flushReads();
      await runOne(call);
    }
    await flushReads();
    return { results, parts };
  }

  private async callTool(turn: TurnHandle, call: ToolCallRequest, byName: Map<string, HostTool>): Promise<ToolResultObject> {
    let args: Record<string, unknown> | null = null;
    try {
      const parsed = JSON.parse(call.arguments.trim() === '' ? '{}' : call.arguments) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      args = null;
    }
    turn.emit({ type: 'tool_call', id: call.id, name: call.name, args });
    const tool = byName.get(call.name);
    if (!tool) {
      return { text: `unknown tool ${JSON.stringify(call.name.slice(0, 80))}; the tools are: ${[...byName.keys()].join(', ')}`, isError: true };
    }
    if (!args) return { text: `the arguments were not a JSON object: ${JSON.stringify(call.arguments.slice(0, 200))}`, isError: true };
    // The engine checks shape before the handler, as the kit does.
    const validate = validatorFor(tool);
    if (!validate(args)) {
      const problems = schemaProblems(validate.errors, args).map((p) => `${p.path === '(top level)' ? 'arguments' : `"${p.path}"`} ${p.message}`);
      return { text: `invalid arguments: ${problems.join('; ')}`, isError: true };
    }
    if (turn.signal.aborted) return { text: 'interrupted before it started', isError: true };

    const requestId = randomUUID();
    let approvalId: string | undefined;
    if (tool.capability !== 'read' && this.o.permissions === 'jan' && !this.alwaysAllowed.has(tool.name)) {
      const decision = await this.askPermission(turn, requestId, tool, args);
      if (decision === 'deny') return { text: 'not done: the person denied permission for this action', isError: true };
      if (decision === 'interrupted') return { text: 'interrupted while waiting for permission', isError: true };
      // Only an explicit answer for this very call approves a confirm rule; allow_always just stops the asking.
      approvalId = `session ${this.id} permission ${requestId} (${decision})`;
    }

    const callAbort = new AbortController();
    const onTurnAbort = () => callAbort.abort(turn.signal.reason);
    turn.signal.addEventListener('abort', onTurnAbort, { once: true });
    turn.emit({ type: 'tool_request', request_id: requestId, tool_name: tool.name, args, run_id: null });
    const ctx: ToolCall = {
      requestId,
      toolName: tool.name,
      runId: null,
      session: this.id,
      signal: callAbort.signal,
      principal: this.principal,
      ...(approvalId ? { approvalId } : {}),
    };
    try {
      const raw = await Promise.race([
        Promise.resolve().then(() => tool.handler(args!, ctx)),
        new Promise<never>((_, reject) => {
          if (callAbort.signal.aborted) reject(new Error('interrupted'));
          callAbort.signal.addEventListener('abort', () => reject(new Error('interrupted')), { once: true });
        }),
      ]);
      return normalizeResult(raw);
    } catch (err) {
      if (callAbort.signal.aborted) {
        turn.emit({ type: 'tool_request_cancelled', request_id: requestId, reason: 'interrupted' });
        return { text: 'interrupted: the call was cancelled; an action already under way is not undone', isError: true };
      }
      return { text: `failed: ${err instanceof Error ? err.message : String(err)}`, isError: true };
    } finally {
      turn.signal.removeEventListener('abort', onTurnAbort);
    }
  }

  private askPermission(turn: TurnHandle, requestId: string, tool: HostTool, args: Record<string, unknown>): Promise<PermissionDecision | 'interrupted'> {
    return new Promise((resolve) => {
      const onAbort = () => {
        this.permissionWaits.delete(requestId);
        resolve('interrupted');
      };
      turn.signal.addEventListener('abort', onAbort, { once: true });
      this.permissionWaits.set(requestId, {
        toolName: tool.name,
        resolve: (d) => {
          turn.signal.removeEventListener('abort', onAbort);
          resolve(d);
        },
      });
      turn.emit({
        type: 'permission_request',
        request_id: requestId,
        tool_name: `${HOST_PREFIX}${tool.name}`,
        capability: tool.capability ?? null,
        prompt_kind: 'tool',
        offers_always: true,
        args,
      });
    });
  }
}
