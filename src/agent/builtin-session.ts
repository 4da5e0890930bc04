// A session of the builtin engine: the model loop of one conversation.
// Per turn: ask the model, run the tool calls it makes through their
// handlers (the host tools, so Hearth's pipeline), feed results back, until
// the model answers without tools, the round limit is hit, or the turn is
// interrupted. Images from tools go in the next user message, never `details`.
//
// Subagents (see subagents.ts) run the same loop with their own prompt and
// messages, over the dispatching turn's host tools, in the background. Their
// events reach the parent's stream: tool_request, tool_request_cancelled and
// permission_request as they are (with the child's run_id), everything else
// wrapped in `subagent` events; `done`/`error` become `subagent_end`. Where:
// the session's running turn if there is one (so its respondPermission answers
// a child's permission_request), else the session's listeners under the
// dispatching turn's id (and a child's actuator is then refused permission:
// nobody is there to ask).
//
// A finished child's result becomes a runtime notice, a user message
// `[runtime notice] subagent "<name>" (<run_id>) finished: <result>`:
//   - while a turn runs, it is added before that turn's next model round;
//   - when the model answers while children this turn dispatched still run,
//     the turn waits for them (at most the session's subagent waitMs, less if
//     interrupted) and then gives the model one more round with the notices,
//     so "dispatch two children, then answer" completes in one turn;
//   - a notice that arrives when no turn runs (a child outlived its turn's
//     wait) is queued and added at the start of the next prompt, before the
//     person's message.
// Interrupting a turn stops every running and queued child of the session and
// aborts their pending calls; closing the session does too.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { ValidateFunction } from 'ajv';
import type { Logger } from '../log.js';
import { argumentBoundsProblem } from '../tools/argument-bounds.js';
import { normalizeResult } from '../tools/tool-set.js';
import type { HostTool, Principal, ToolCall, ToolResultObject } from '../tools/types.js';
import { createAjv, schemaProblems } from '../util/ajv.js';
import type { HistoryStore } from './history.js';
import type { MemoryStore } from './memory.js';
import { isQuestion } from './providers/intent/question.js';
import { ProviderError, type ChatMessage, type ContentPart, type FunctionSpec, type Provider, type ProviderRequest, type ToolCallRequest } from './provider.js';
import { type ChildRun, isSubagentTool, Subagents, subagentSystemPrompt, type ChildOutcome, type SubagentLimits } from './subagents.js';
import { TurnActuations } from './turn-actuations.js';
import { TurnHandle } from './turn.js';
import {
  ArchivedSessionError,
  NoActiveTurnError,
  NotPendingError,
  TurnActiveError,
  type AgentEvent,
  type AgentSession,
  type EngineLimits,
  type PermissionDecision,
  type Permissions,
  type RefuseCall,
  type StopReason,
} from './types.js';
import { errorOf } from '../util/error.js';

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
  /** Sent as the system message byte for byte (with recalled memory after it only when `recall` is set). */
  systemPrompt: string;
  ephemeral: boolean;
  history?: HistoryStore;
  messages: ChatMessage[];
  maxRounds: number;
  /** Actions one turn may make (agent.max_actions_per_turn; turn-actuations.ts). */
  maxActionsPerTurn?: number;
  limits: EngineLimits;
  log: Logger;
  /** The subagent tools are offered, with these limits; undefined: not offered. */
  subagents?: SubagentLimits;
  /** Completed turns' answers are kept here (never for an ephemeral session). */
  memory?: MemoryStore;
  /** The area the session speaks from ("in here"). */
  area?: string;
  /** The memory section for the engine's own prompt, chosen with the first prompt's words ('' for none). */
  recall?: (query: string) => string;
  /** What the opener gave as the system prompt (undefined: the engine's own, `systemPrompt`). */
  givenSystemPrompt?: string;
  /** Turns already taken (a resumed or forked session). */
  turns?: number;
  /** The front door's state, kept with the session. */
  hostState?: unknown;
  /** What the policy would decide for a call now, counting an approval already granted for it (no side effects). */
  decide?: (tool: string, args: Record<string, unknown>, principal: Principal) => { effect: string; reason: string } | undefined;
  /** Whether the principal may read this entity (a model that knows the home itself is told; see ProviderRequest.context). */
  mayRead?: (principal: Principal, entityId: string) => boolean;
  /**
   * A host tool call refused before its handler (unknown or not offered, arguments no JSON object or not fitting
   * the schema): recorded as every door records it (ToolSet.refuse); the result is what the model reads.
   */
  refuse?: RefuseCall;
}

interface PendingPermission {
  /** 'unavailable': the turn it was asked on ended unanswered (a child's request). */
  resolve: (decision: PermissionDecision | 'unavailable', by?: Principal) => void;
  toolName: string;
  runId: string | null;
}

type LoopResult = { stopReason: StopReason; error?: string };

/** One model loop: a parent turn, or a subagent's run. */
interface LoopRun {
  /** null for the parent turn, else the child's run id (on every call and tool_request). */
  runId: string | null;
  /** The model of every request of this run (fixed when it starts). */
  model: string;
  signal: AbortSignal;
  emit(event: AgentEvent): void;
  system: string;
  /** Earlier turns (the parent's thread; nothing for a child). */
  history: readonly ChatMessage[];
  /** This turn's messages so far. */
  added: ChatMessage[];
  byName: Map<string, HostTool>;
  /** Everything offered to the model. */
  specs: FunctionSpec[];
  /** The subagent tools, on a parent turn of a session that has them. */
  subagents?: { manager: Subagents; turnId: string; tools: HostTool[] };
  /** The person's message was a question: actuator calls are held, whatever the model makes of it. */
  question?: boolean;
  /** Calls held back because another action of the same request did not go through (call id -> why). */
  heldBack: Map<string, string>;
  /** The actions of the turn so far, against its bound (a child's count toward the turn that dispatched it). */
  actuations: TurnActuations;
  beforeRound?(): void;
  /** The model answered without tools: true for another round. */
  afterAnswer?(): Promise<boolean>;
}

/** The last thing the model said in these messages (the answer), or ''. */
export function lastAnswer(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant' && typeof m.content === 'string' && m.content.trim()) return m.content;
  }
  return '';
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
  private readonly children?: Subagents;
  /** Runtime notices not yet in the conversation. */
  private readonly notices: string[] = [];
  /** Guidance for the running turn's next model request (turn/steer). */
  private readonly steers: string[] = [];
  private resolvedPrompt?: string;
  /** The running turns' action counts, by turn id (its children count toward it). */
  private readonly turnActuations = new Map<string, TurnActuations>();
  private currentModel: string;
  private turnCount: number;
  private archived = false;
  private hostStateValue: unknown;

  constructor(private readonly o: BuiltinSessionOptions) {
    super();
    this.id = o.id;
    this.principal = o.principal;
    this.toolList = o.tools;
    this.specs = toolSpecsOf(o.tools);
    this.thread = [...o.messages];
    this.currentModel = o.model;
    this.turnCount = o.turns ?? 0;
    this.hostStateValue = o.hostState;
    if (o.subagents) {
      this.children = new Subagents(
        {
          runChild: (run) => this.runChild(run),
          emit: (event, turnId) => this.emitOutside(event, turnId),
          notice: (text) => this.notices.push(text),
        },
        o.subagents,
      );
    }
  }

  get model(): string {
    return this.currentModel;
  }

  get turns(): number {
    return this.turnCount;
  }

  get hostState(): unknown {
    return this.hostStateValue;
  }

  setHostState(state: unknown): void {
    this.hostStateValue = state;
    if (!this.o.ephemeral) this.o.history?.setHostState(this.id, state);
  }

  get ephemeral(): boolean {
    return this.o.ephemeral;
  }

  get isArchived(): boolean {
    return this.archived;
  }

  /** The options a fork or a resume reopens it with. */
  get permissions(): Permissions {
    return this.o.permissions;
  }

  get hasSubagents(): boolean {
    return !!this.o.subagents;
  }

  /** The system prompt its opener gave (undefined: the engine's own). */
  get givenSystemPrompt(): string | undefined {
    return this.o.givenSystemPrompt;
  }

  /** The host tools, as advertised (`host__<name>`). The subagent tools are not host tools: see builtinToolSpecs. */
  get tools(): string[] {
    return this.specs.map((s) => s.function.name);
  }

  get toolSpecs(): FunctionSpec[] {
    return this.specs;
  }

  /** The engine's own tools sent beside the host tools (the subagent tools, unprefixed), or none. */
  get builtinToolSpecs(): FunctionSpec[] {
    return this.children ? this.children.specs : [];
  }

  /** The system prompt as sent: fixed at the first prompt, when recalled memory (if any) is added. */
  get systemPrompt(): string {
    return this.resolvedPrompt ?? this.o.systemPrompt;
  }

  /** The conversation so far (system prompt excluded). */
  get messages(): readonly ChatMessage[] {
    return this.thread;
  }

  get busy(): boolean {
    return !!this.active && !this.active.done;
  }

  /** This session's subagent runs (queued, running and recently ended), oldest first. */
  subagentRuns(): ChildRun[] {
    return this.children?.list() ?? [];
  }

  setTools(tools: HostTool[]): void {
    // Between turns only: a running turn (and its children) keep the set it started with.
    this.toolList = tools;
    this.specs = toolSpecsOf(tools);
  }

  async prompt(text: string): Promise<TurnHandle> {
    if (this.archived) throw new ArchivedSessionError(this.id);
    if (this.closed) throw new Error('the session is closed');
    if (this.busy) throw new TurnActiveError();
    const turn = new TurnHandle((event, turnId) => this.emit('event', event, turnId));
    this.active = turn;
    this.turnCount++;
    void this.run(turn, text);
    return turn;
  }

  async steer(text: string): Promise<void> {
    if (this.archived) throw new ArchivedSessionError(this.id);
    if (!this.busy) throw new NoActiveTurnError();
    this.steers.push(text);
  }

  async setModel(model: string): Promise<string> {
    if (this.archived) throw new ArchivedSessionError(this.id);
    this.currentModel = model;
    if (!this.o.ephemeral) this.o.history?.setModel(this.id, model);
    return model;
  }

  async reset(): Promise<void> {
    if (this.archived) throw new ArchivedSessionError(this.id);
    if (this.busy) throw new TurnActiveError();
    this.thread.length = 0;
    this.notices.length = 0;
    this.turnCount = 0;
    // The next first prompt chooses the recalled memory again.
    this.resolvedPrompt = undefined;
    if (!this.o.ephemeral) this.o.history?.clear(this.id);
  }

  async archive(): Promise<void> {
    if (this.archived) return;
    this.archived = true;
    if (!this.o.ephemeral) this.o.history?.archive(this.id);
    await this.close();
  }

  respondPermission(requestId: string, decision: PermissionDecision, by?: Principal): void {
    const wait = this.permissionWaits.get(requestId);
    if (!wait) throw new NotPendingError(requestId);
    this.permissionWaits.delete(requestId);
    if (decision === 'allow_always') this.alwaysAllowed.add(wait.toolName);
    wait.resolve(decision, by);
  }

  /** Requests waiting for a person (for front doors that list them). */
  pendingPermissions(): string[] {
    return [...this.permissionWaits.keys()];
  }

  async close(): Promise<void> {
    this.closed = true;
    this.active?.interrupt();
    this.children?.stopAll('the session was closed');
    await this.active?.result();
    if (this.children) await this.children.waitFor(this.children.list(), Date.now() + 5000);
  }

  // ------------------------------------------------------------------ the parent turn

  private systemPromptFor(firstPrompt: string): string {
    if (this.resolvedPrompt === undefined) {
      let section = '';
      if (this.o.recall) {
        try {
          section = this.o.recall(firstPrompt);
        } catch (err) {
          this.o.log.warn({ err: errorOf(err), session: this.id }, 'could not recall memory');
        }
      }
      this.resolvedPrompt = section ? `${this.o.systemPrompt}\n\n${section}` : this.o.systemPrompt;
    }
    return this.resolvedPrompt;
  }

  /** Move queued runtime notices into the conversation (and say so on the turn). */
  private drainNotices(turn: TurnHandle, added: ChatMessage[]): void {
    while (this.notices.length) {
      const text = this.notices.shift()!;
      added.push({ role: 'user', content: text });
      turn.emit({ type: 'notice', text });
    }
  }

  private async run(turn: TurnHandle, text: string): Promise<void> {
    const added: ChatMessage[] = [];
    // Children that ended after the last turn: their notices come before the person's message.
    this.drainNotices(turn, added);
    added.push({ role: 'user', content: text });
    const tools = this.toolList;
    const specs = this.specs;
    const byName = new Map(tools.map((t) => [`${HOST_PREFIX}${t.name}`, t]));
    const children = this.children;
    const stopChildren = () => children?.stopAll();
    turn.signal.addEventListener('abort', stopChildren, { once: true });
    let deadline: number | undefined;
    const actuations = new TurnActuations(this.o.maxActionsPerTurn);
    this.turnActuations.set(turn.id, actuations);
    const ctx: LoopRun = {
      runId: null,
      actuations,
      model: this.currentModel,
      signal: turn.signal,
      emit: (event) => turn.emit(event),
      system: this.systemPromptFor(text),
      question: isQuestion(text),
      heldBack: new Map(),
      history: this.thread,
      added,
      byName,
      specs: children ? [...specs, ...children.specs] : specs,
      ...(children ? { subagents: { manager: children, turnId: turn.id, tools } } : {}),
      beforeRound: () => {
        this.drainNotices(turn, added);
        while (this.steers.length) added.push({ role: 'user', content: this.steers.shift()! });
      },
      afterAnswer: async () => {
        // A steer that came while the model answered: one more round to take it.
        if (this.steers.length) return true;
        // The model answered: if children this turn dispatched are still at work, wait for them
        // (bounded), then give the model one more round with their notices.
        if (!children?.dispatchedBy(turn.id)) return false;
        const mine = children.activeFor(turn.id);
        if (mine.length) {
          deadline ??= Date.now() + children.limits.waitMs;
          await children.waitFor(mine, deadline, turn.signal);
          if (turn.signal.aborted) return false;
        }
        if (this.notices.length) return true;
        const still = children.activeFor(turn.id).length;
        if (still) {
          turn.emit({
            type: 'notice',
            text: `${still} subagent(s) still running; their results will be added to this conversation when they finish, before the next answer`,
          });
        }
        return false;
      },
    };
    let result: LoopResult;
    try {
      result = await this.loop(ctx);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.o.log.error({ err: message, session: this.id }, 'turn failed');
      turn.emit({ type: 'error', code: 'internal', message });
      result = { stopReason: 'error', error: message };
    }
    turn.signal.removeEventListener('abort', stopChildren);
    this.turnActuations.delete(turn.id);
    if (turn.signal.aborted && children) {
      // Stopping the turn stops the children; let them say so on this turn, briefly.
      const stopped = children.stopAll();
      await children.waitFor(stopped.length ? stopped : children.list(), Date.now() + 2000);
    }
    if (this.steers.length) {
      this.o.log.info({ session: this.id, dropped: this.steers.length }, 'steers came after the last request of their turn; dropped');
      this.steers.length = 0;
    }
    // The thread keeps what happened, also on interrupt or error, so the next turn has the context.
    this.thread.push(...added);
    if (!this.o.ephemeral && this.o.history) {
      try {
        this.o.history.append(this.id, ctx.model, added);
      } catch (err) {
        this.o.log.error({ err: errorOf(err), session: this.id }, 'could not save the conversation');
      }
    }
    if (result.stopReason === 'completed' && !this.o.ephemeral && this.o.memory) {
      const answer = lastAnswer(added);
      try {
        if (answer) this.o.memory.save(this.principal.id, this.id, text, answer);
      } catch (err) {
        this.o.log.error({ err: errorOf(err), session: this.id }, 'could not save to memory');
      }
    }
    // Unanswered requests end with the turn they were asked on: the parent's own are denied
    // (its calls are over anyway); a child that outlived the turn is told nobody answered.
    for (const [id, wait] of this.permissionWaits) {
      this.permissionWaits.delete(id);
      wait.resolve(wait.runId === null ? 'deny' : 'unavailable');
    }
    turn.finish(result);
  }

  // ------------------------------------------------------------------ children

  /** An event about a child: on the running turn when there is one, else to the session's listeners. */
  private emitOutside(event: AgentEvent, turnId: string): void {
    const turn = this.active;
    if (turn && !turn.done) {
      turn.emit(event);
      return;
    }
    try {
      this.emit('event', event, turnId);
    } catch (err) {
      // A listener's failure is not the child's (as on a turn).
      this.o.log.warn({ err: errorOf(err), session: this.id }, 'a session listener failed');
    }
  }

  private emitChild(run: ChildRun, event: AgentEvent): void {
    // Its end is subagent_end (sent by Subagents), never the parent's done or error.
    if (event.type === 'done' || event.type === 'error') return;
    if (event.type === 'tool_request' || event.type === 'tool_request_cancelled' || event.type === 'permission_request') {
      this.emitOutside(event, run.turnId);
      return;
    }
    this.emitOutside({ type: 'subagent', run_id: run.runId, name: run.name, event }, run.turnId);
  }

  private async runChild(run: ChildRun): Promise<ChildOutcome> {
    const added: ChatMessage[] = [{ role: 'user', content: run.task }];
    const ctx: LoopRun = {
      runId: run.runId,
      model: this.currentModel,
      heldBack: new Map(),
      // Counted with the turn that dispatched it while that turn runs; a child that outlives it has a bound of its own.
      actuations: this.turnActuations.get(run.turnId) ?? new TurnActuations(this.o.maxActionsPerTurn),
      signal: run.signal,
      emit: (event) => this.emitChild(run, event),
      system: subagentSystemPrompt(run.name, run.task),
      history: [],
      added,
      byName: new Map(run.tools.map((t) => [`${HOST_PREFIX}${t.name}`, t])),
      specs: toolSpecsOf(run.tools),
      beforeRound: () => {
        while (run.inbox.length) added.push({ role: 'user', content: `[message from the main assistant] ${run.inbox.shift()}` });
      },
      // A message that came while it answered: one more round to read it.
      afterAnswer: async () => run.inbox.length > 0,
    };
    try {
      const result = await this.loop(ctx);
      return { ...result, answer: lastAnswer(added) };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.o.log.error({ err: message, session: this.id, run: run.runId }, 'subagent failed');
      return { stopReason: 'error', error: message };
    }
  }

  /** What a provider is told of the speaker: its area, and what its principal may read. */
  private providerContext(): NonNullable<ProviderRequest['context']> {
    const mayRead = this.o.mayRead;
    // Decided once per entity per round (a model may ask for every entity of the home several times).
    const known = new Map<string, boolean>();
    const readable = (entityId: string) => known.get(entityId) ?? known.set(entityId, !!mayRead?.(this.principal, entityId)).get(entityId)!;
    return { ...(this.o.area ? { area: this.o.area } : {}), ...(mayRead ? { readable } : {}) };
  }

  // ------------------------------------------------------------------ the loop

  private async loop(run: LoopRun): Promise<LoopResult> {
    const signal = run.signal;
    const interrupted = () => ({ stopReason: 'interrupted' as const });
    let toolRounds = 0;
    for (let round = 1; ; round++) {
      if (signal.aborted) return interrupted();
      run.beforeRound?.();
      run.emit({ type: 'step', index: round, max: this.o.maxRounds });
      const messages: ChatMessage[] = [{ role: 'system', content: run.system }, ...run.history, ...run.added];
      let text = '';
      let done: { finishReason: string; toolCalls: ToolCallRequest[]; together?: boolean } | undefined;
      try {
        for await (const ev of this.o.provider.stream({
          model: run.model,
          messages,
          tools: run.specs,
          signal,
          ...(this.o.area || this.o.mayRead ? { context: this.providerContext() } : {}),
        })) {
          if (signal.aborted) break;
          switch (ev.type) {
            case 'token':
              text += ev.text;
              run.emit({ type: 'token', text: ev.text });
              break;
            case 'reasoning':
              run.emit({ type: 'reasoning', text: ev.text });
              break;
            case 'tool_call_started':
              run.emit({ type: 'tool_call_started', id: ev.id, name: ev.name });
              break;
            case 'tool_call_args_delta':
              run.emit({ type: 'tool_call_args_delta', id: ev.id, delta: ev.delta });
              break;
            case 'done':
              done = ev;
              if (ev.usage) run.emit({ type: 'turn_usage', usage: ev.usage });
              break;
          }
        }
      } catch (err) {
        if (signal.aborted) return interrupted();
        const code = err instanceof ProviderError ? err.code : 'provider_error';
        const message = err instanceof Error ? err.message : String(err);
        run.emit({ type: 'error', code, message });
        return { stopReason: 'error', error: message };
      }
      if (signal.aborted) {
        if (text) run.added.push({ role: 'assistant', content: text });
        return interrupted();
      }
      if (!done) {
        run.emit({ type: 'error', code: 'provider_error', message: 'the model stream ended without finishing' });
        return { stopReason: 'error', error: 'the model stream ended without finishing' };
      }
      const calls = done.toolCalls;
      run.added.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) });
      if (!calls.length) {
        // Notice rounds (children's results) do not count against the tool-round limit.
        if (run.afterAnswer && (await run.afterAnswer())) continue;
        if (signal.aborted) return interrupted();
        run.emit({ type: 'done', stop_reason: done.finishReason });
        return { stopReason: 'completed' };
      }
      const images = await this.runCalls(run, calls, !!done.together);
      for (const c of calls) {
        const r = images.results.get(c.id)!;
        run.added.push({ role: 'tool', tool_call_id: c.id, content: r });
      }
      if (images.parts.length) run.added.push({ role: 'user', content: images.parts });
      if (signal.aborted) return interrupted();
      if (++toolRounds >= this.o.maxRounds) {
        const message = `stopped after ${this.o.maxRounds} rounds of tool calls without an answer`;
        run.emit({ type: 'error', code: 'max_rounds', message });
        return { stopReason: 'error', error: message };
      }
    }
  }

  /**
   * Run one round's calls: consecutive reads together, everything else one at a time, results in call order.
   * `together` (one request of a person): the actions are all made or none. A call the policy would refuse or
   * hold goes first; the others follow only if every one of those went through, else they are held back (each
   * refusal audited) and the answer says which held them.
   */
  private async runCalls(run: LoopRun, calls: ToolCallRequest[], together = false) {
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
      const outcome = await this.callTool(run, call);
      const extra = addImages(call, outcome);
      const content = (outcome.text ?? (outcome.isError ? 'failed' : '')) + extra;
      results.set(call.id, content);
      run.emit({ type: 'tool_result', id: call.id, content, is_error: !!outcome.isError });
      if (outcome.details && typeof outcome.details === 'object') run.emit({ type: 'tool_details', id: call.id, details: outcome.details });
    };

    const actions = calls.filter((c) => run.byName.get(c.name)?.capability === 'actuator');
    if (together && this.o.decide && actions.length > 1) {
      const argsOf = (c: ToolCallRequest) => {
        try {
          return JSON.parse(c.arguments || '{}') as Record<string, unknown>;
        } catch {
          return {};
        }
      };
      const doubtful = actions.filter((c) => this.o.decide!(run.byName.get(c.name)!.name, argsOf(c), this.principal)?.effect !== 'allow');
      if (doubtful.length) {
        for (const c of doubtful) await runOne(c);
        const stopped = doubtful.filter((c) => !results.get(c.id)?.startsWith('confirmed'));
        if (stopped.length) {
          const names = stopped.map((c) => c.name.replace(/^host__/, '')).join(', ');
          for (const c of actions) {
            if (!doubtful.includes(c))
              run.heldBack.set(
                c.id,
                `held back with the rest of one request: ${names} did not go through (not allowed, or waiting for approval), and these were asked for together`,
              );
          }
        }
        calls = calls.filter((c) => !doubtful.includes(c));
      }
    }
    let reads: ToolCallRequest[] = [];
    const flushReads = async () => {
      await Promise.all(reads.map(runOne));
      reads = [];
    };
    for (const call of calls) {
      const tool = run.byName.get(call.name);
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

  private async callTool(run: LoopRun, call: ToolCallRequest): Promise<ToolResultObject> {
    let args: Record<string, unknown> | null = null;
    try {
      const parsed = JSON.parse(call.arguments.trim() === '' ? '{}' : call.arguments) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
    } catch {
      args = null;
    }
    run.emit({ type: 'tool_call', id: call.id, name: call.name, args });
    const notObject = () => ({ text: `the arguments were not a JSON object: ${JSON.stringify(call.arguments.slice(0, 200))}`, isError: true });
    // The subagent tools are the engine's own, not host tools: no prefix, no permission, no pipeline.
    if (run.subagents && isSubagentTool(call.name)) {
      if (!args) return notObject();
      const { manager, turnId, tools } = run.subagents;
      return manager.call(call.name, args, { turnId, tools, signal: run.signal });
    }
    // Refused before a handler: audited as at every door (a tool not offered to this principal is unknown here).
    const refuse = (text: string) =>
      this.o.refuse?.(call.name, args ?? call.arguments, this.principal, { requestId: randomUUID(), runId: run.runId, session: this.id }, text) ?? {
        text,
        isError: true,
      };
    const tool = run.byName.get(call.name);
    if (!tool) {
      const names = [...run.byName.keys(), ...(run.subagents ? run.subagents.manager.specs.map((s) => s.function.name) : [])];
      return refuse(`unknown tool ${JSON.stringify(call.name.slice(0, 80))}; the tools are: ${names.join(', ')}`);
    }
    if (!args) return refuse(notObject().text);
    // The engine checks shape before the handler, as the kit does; arguments over the bounds
    // (thousands of levels deep) go straight to the handler, which refuses and audits them.
    const validate = validatorFor(tool);
    if (!argumentBoundsProblem(args) && !validate(args)) {
      const problems = schemaProblems(validate.errors, args).map((p) => `${p.path === '(top level)' ? 'arguments' : `"${p.path}"`} ${p.message}`);
      return refuse(`invalid arguments: ${problems.join('; ')}`);
    }
    if (run.signal.aborted) return { text: 'interrupted before it started', isError: true };

    const requestId = randomUUID();
    // One request's other actions did not go through: this one is held back too (all or none).
    const heldBack = run.heldBack.get(call.id);
    if (heldBack && tool.capability !== 'read') {
      if (tool.recordsRefusals) {
        const ctx: ToolCall = {
          requestId,
          toolName: tool.name,
          runId: run.runId,
          session: this.id,
          signal: run.signal,
          principal: this.principal,
          refused: heldBack,
        };
        await Promise.resolve(tool.handler(args, ctx)).catch(() => undefined);
      }
      return { text: `not done: ${heldBack}; nothing was sent.`, isError: true };
    }
    // "Is the light on?" is answered by reading: a model that turns it into turn_on is held here.
    if (run.question && tool.capability !== 'read') {
      const refused = 'the person asked a question, and a question is answered by reading, not by changing anything';
      if (tool.recordsRefusals) {
        const ctx: ToolCall = { requestId, toolName: tool.name, runId: run.runId, session: this.id, signal: run.signal, principal: this.principal, refused };
        await Promise.resolve(tool.handler(args, ctx)).catch(() => undefined);
      }
      return { text: `not done: held for confirmation: ${refused}. Answer the question; if the person wants this done, they will ask for it.`, isError: true };
    }
    // Past the turn's bound on actions: refused (and recorded by a tool that audits), nothing sent; the turn says so once.
    const over = tool.capability !== 'read' ? run.actuations.take() : undefined;
    if (over) {
      const notice = run.actuations.noticeOnFirstRefusal();
      if (notice) run.emit({ type: 'notice', text: notice });
      if (tool.recordsRefusals) {
        const ctx: ToolCall = {
          requestId,
          toolName: tool.name,
          runId: run.runId,
          session: this.id,
          signal: run.signal,
          principal: this.principal,
          refused: over,
        };
        await Promise.resolve(tool.handler(args, ctx)).catch(() => undefined);
      }
      return { text: `not done: ${over}; nothing was sent.`, isError: true };
    }
    let approvalId: string | undefined;
    let approvedBy: Principal | undefined;
    if (tool.capability !== 'read' && this.o.permissions === 'jan' && !this.alwaysAllowed.has(tool.name)) {
      const { decision, by } = await this.askPermission(run, requestId, tool, args);
      if (decision === 'interrupted') return { text: 'interrupted while waiting for permission', isError: true };
      if (decision === 'deny' || decision === 'unavailable') {
        const refused =
          decision === 'deny'
            ? 'a person denied permission for this action when asked'
            : "this needed a person's permission, and nobody answered before the main turn ended";
        // Audited tools record the refused attempt (and do nothing else); the answer is the same either way.
        if (tool.recordsRefusals) {
          const ctx: ToolCall = { requestId, toolName: tool.name, runId: run.runId, session: this.id, signal: run.signal, principal: this.principal, refused };
          await Promise.resolve(tool.handler(args, ctx)).catch(() => undefined);
        }
        return { text: decision === 'deny' ? 'not done: the person denied permission for this action' : `not done: ${refused}`, isError: true };
      }
      // Only an explicit answer for this very call can approve a confirm rule (allow_always just stops
      // the asking), and only when who answered may grant approvals: the pipeline asks the policy.
      approvalId = `session ${this.id} permission ${requestId} (${decision})`;
      approvedBy = by;
    }

    const callAbort = new AbortController();
    const onRunAbort = () => callAbort.abort(run.signal.reason);
    run.signal.addEventListener('abort', onRunAbort, { once: true });
    run.emit({ type: 'tool_request', request_id: requestId, tool_name: tool.name, args, run_id: run.runId });
    const ctx: ToolCall = {
      requestId,
      toolName: tool.name,
      runId: run.runId,
      session: this.id,
      signal: callAbort.signal,
      principal: this.principal,
      ...(approvalId ? { approvalId } : {}),
      ...(approvedBy ? { approvedBy } : {}),
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
        run.emit({ type: 'tool_request_cancelled', request_id: requestId, reason: 'interrupted' });
        return { text: 'interrupted: the call was cancelled; an action already under way is not undone', isError: true };
      }
      return { text: `failed: ${err instanceof Error ? err.message : String(err)}`, isError: true };
    } finally {
      run.signal.removeEventListener('abort', onRunAbort);
    }
  }

  private askPermission(
    run: LoopRun,
    requestId: string,
    tool: HostTool,
    args: Record<string, unknown>,
  ): Promise<{ decision: PermissionDecision | 'interrupted' | 'unavailable'; by?: Principal }> {
    // A child asks on the parent's running turn; when none runs, nobody can answer.
    if (run.runId !== null && !this.busy) return Promise.resolve({ decision: 'unavailable' });
    return new Promise((resolve) => {
      const onAbort = () => {
        this.permissionWaits.delete(requestId);
        resolve({ decision: 'interrupted' });
      };
      run.signal.addEventListener('abort', onAbort, { once: true });
      this.permissionWaits.set(requestId, {
        toolName: tool.name,
        runId: run.runId,
        resolve: (d, by) => {
          run.signal.removeEventListener('abort', onAbort);
          resolve({ decision: d, ...(by ? { by } : {}) });
        },
      });
      run.emit({
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
