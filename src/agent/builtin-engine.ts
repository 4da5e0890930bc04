// The builtin engine: sessions over a Provider (an OpenAI-compatible model,
// or the offline intent model), with the kit's session surface.
//
// Session options, as the kit has them: `systemPrompt` replaces the engine's
// own prompt byte for byte (nothing is added to it: no recalled memory);
// without it the session gets `defaultSystemPrompt()` (the home's areas and
// kinds of device) plus, for a non-ephemeral session, a short section of what
// this principal's earlier sessions answered (project memory, chosen with the
// first prompt's words). A non-ephemeral session keeps its thread and saves
// each completed turn's answer to memory; `ephemeral` does neither (and
// recalls nothing). `subagents` (default: `builtins`, default true) offers the
// subagent tools.
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/database.js';
import { silentLogger, type Logger } from '../log.js';
import { IMAGE_LIMITS, type HostTool, type Principal } from '../tools/types.js';
import { BuiltinSession, type BuiltinSessionOptions } from './builtin-session.js';
import { HistoryStore } from './history.js';
import { MemoryStore, memorySection } from './memory.js';
import type { ChatMessage, Provider } from './provider.js';
import { DEFAULT_SUBAGENT_LIMITS, type SubagentLimits } from './subagents.js';
import { speakerAreaLine } from './system-prompt.js';
import { DEFAULT_MAX_ACTIONS_PER_TURN } from './turn-actuations.js';
import {
  ArchivedSessionError,
  type AgentSession,
  type Engine,
  type EngineLimits,
  type Permissions,
  type ReopenOptions,
  type SessionInfo,
  type SessionOptions,
} from './types.js';

export interface BuiltinEngineOptions {
  provider: Provider;
  /** Conversation threads are kept here (unless a session is ephemeral). */
  db?: Db;
  /** The system prompt a session gets when it brings none (made for its principal: only what it may read). */
  defaultSystemPrompt?: (principal: Principal) => string;
  /** Tool-call rounds per turn before the turn stops with an error. */
  maxRounds?: number;
  /** Actions one turn may make; past it the rest are refused (agent.max_actions_per_turn; turn-actuations.ts). */
  maxActionsPerTurn?: number;
  log?: Logger;
  /** Project memory (needs `db`). Default true. */
  memory?: boolean;
  /** Limits of subagents (concurrency, per turn, how long a turn waits for them). */
  subagents?: Partial<SubagentLimits>;
  /** What the policy would decide for a call now (for one request's all-or-none); see BuiltinSessionOptions.decide. */
  decide?: BuiltinSessionOptions['decide'];
  /** What a principal may read (told to a provider that knows the home itself); see BuiltinSessionOptions.mayRead. */
  mayRead?: BuiltinSessionOptions['mayRead'];
  /** Host tool calls refused before their handler are recorded here; see BuiltinSessionOptions.refuse. */
  refuse?: BuiltinSessionOptions['refuse'];
}

export const DEFAULT_PRINCIPAL: Principal = { id: 'agent:local', roles: [] };

export class BuiltinEngine implements Engine {
  readonly name = 'builtin';
  readonly limits: EngineLimits = {
    mime_types: [...IMAGE_LIMITS.mimeTypes],
    max_image_bytes: IMAGE_LIMITS.maxImageBytes,
    max_message_image_bytes: IMAGE_LIMITS.maxMessageImageBytes,
    max_images: IMAGE_LIMITS.maxImages,
  };
  private readonly history?: HistoryStore;
  readonly memory?: MemoryStore;
  private readonly sessions = new Map<string, BuiltinSession>();

  private constructor(private readonly options: BuiltinEngineOptions) {
    this.history = options.db ? new HistoryStore(options.db) : undefined;
    this.history?.expireOld();
    this.memory = options.db && options.memory !== false ? new MemoryStore(options.db) : undefined;
  }

  static async start(options: BuiltinEngineOptions): Promise<BuiltinEngine> {
    return new BuiltinEngine(options);
  }

  get provider(): Provider {
    return this.options.provider;
  }

  examples(session: AgentSession): string[] {
    const mayRead = this.options.mayRead;
    return this.options.provider.examples?.(session.tools, mayRead ? (id) => mayRead(session.principal, id) : undefined) ?? [];
  }

  async createSession(opts: SessionOptions = {}): Promise<BuiltinSession> {
    // The session's area is its principal's too, so every tool call (policy from_area, audit) carries it.
    const area = opts.area ?? opts.principal?.area;
    const principal = area ? { ...(opts.principal ?? DEFAULT_PRINCIPAL), area } : (opts.principal ?? DEFAULT_PRINCIPAL);
    let id = opts.id ?? randomUUID();
    let messages: ChatMessage[] = [];
    let turns = 0;
    let given = opts.systemPrompt;
    const model = opts.model ?? this.options.provider.defaultModel;
    // An id that is or was another principal's stays theirs, whether this session is ephemeral or not.
    const live = opts.id ? this.sessions.get(opts.id) : undefined;
    if (opts.id && live && live.principal.id !== principal.id) throw new Error(`session ${opts.id} belongs to another principal`);
    if (opts.id && this.history && this.history.claim(opts.id, principal.id) !== principal.id)
      throw new Error(`session ${opts.id} belongs to another principal`);
    if (opts.id && this.history && !opts.ephemeral) {
      const saved = this.history.get(opts.id);
      if (saved) {
        if (saved.principal !== principal.id) throw new Error(`session ${opts.id} belongs to another principal`);
        if (saved.archivedAt) throw new ArchivedSessionError(opts.id);
        messages = this.history.load(opts.id);
        turns = saved.turns;
        given ??= saved.systemPrompt ?? undefined;
      }
    }
    const builtins = opts.builtins ?? true;
    const subagents = opts.subagents ?? builtins;
    const permissions = opts.permissions ?? 'jan';
    if (!opts.ephemeral && this.history) {
      this.history.create({
        id,
        principal: principal.id,
        model,
        systemPrompt: given ?? null,
        options: { permissions, builtins, subagents },
        ...(opts.hostState !== undefined ? { hostState: opts.hostState } : {}),
      });
    }
    if (opts.ephemeral && !opts.id) id = `ephemeral-${id}`;
    return this.build({
      id,
      principal,
      model,
      given,
      messages,
      turns,
      permissions,
      subagents,
      ephemeral: opts.ephemeral ?? false,
      tools: opts.tools ?? [],
      hostState: opts.hostState,
      area,
    });
  }

  async listSessions(principal: Principal = DEFAULT_PRINCIPAL): Promise<SessionInfo[]> {
    return (this.history?.forPrincipal(principal.id, 200) ?? []).map((r) => ({ id: r.id, model: r.model, turns: r.turns, updatedAt: r.updatedAt }));
  }

  async resumeSession(id: string, options: ReopenOptions = {}): Promise<BuiltinSession | undefined> {
    const principal = options.principal ?? DEFAULT_PRINCIPAL;
    const saved = this.history?.get(id);
    // Another principal's session is as unknown as a missing one.
    if (!saved || saved.principal !== principal.id) return undefined;
    if (saved.archivedAt) throw new ArchivedSessionError(id);
    const subagents = saved.options.subagents ?? saved.options.builtins ?? true;
    return this.build({
      id,
      principal,
      model: saved.model,
      given: saved.systemPrompt ?? undefined,
      messages: this.history!.load(id),
      turns: saved.turns,
      permissions: saved.options.permissions ?? 'jan',
      subagents,
      ephemeral: false,
      tools: options.tools ?? [],
      area: options.area,
      hostState: saved.hostState ?? undefined,
      ...(principal.area ? { area: principal.area } : {}),
    });
  }

  async forkSession(source: AgentSession, options: ReopenOptions = {}): Promise<BuiltinSession> {
    if (!(source instanceof BuiltinSession)) throw new Error(`session ${source.id} is not a session of the builtin engine`);
    const from = source;
    const principal = options.principal ?? from.principal;
    const ephemeral = from.ephemeral;
    const id = ephemeral ? `ephemeral-${randomUUID()}` : randomUUID();
    const hostState = options.hostState !== undefined ? options.hostState : from.hostState;
    // The thread as of its last finished turn (a running turn's messages join the thread when it ends).
    const messages = [...from.messages];
    const given = from.givenSystemPrompt;
    if (!ephemeral && this.history) {
      this.history.create({
        id,
        principal: principal.id,
        model: from.model,
        systemPrompt: given ?? null,
        options: { permissions: from.permissions, subagents: from.hasSubagents },
        ...(hostState !== undefined ? { hostState } : {}),
        forkedFrom: from.id,
        turns: from.turns,
        messages,
      });
    }
    return this.build({
      id,
      principal,
      model: from.model,
      given,
      messages,
      turns: from.turns,
      permissions: from.permissions,
      subagents: from.hasSubagents,
      ephemeral,
      tools: options.tools ?? [],
      area: options.area,
      hostState,
    });
  }

  private build(s: {
    id: string;
    principal: Principal;
    model: string;
    /** The opener's system prompt; undefined: the engine's own (with recalled memory). */
    given: string | undefined;
    messages: ChatMessage[];
    turns: number;
    permissions: Permissions;
    subagents: boolean;
    ephemeral: boolean;
    tools: HostTool[];
    hostState: unknown;
    area?: string;
  }): BuiltinSession {
    const memory = s.ephemeral ? undefined : this.memory;
    const { id, principal } = s;
    const recall = memory && s.given === undefined ? (query: string) => memorySection(memory.recall(principal.id, { query, excludeSession: id })) : undefined;
    const session = new BuiltinSession({
      id,
      provider: this.options.provider,
      model: s.model,
      principal,
      area: s.area,
      tools: s.tools,
      permissions: s.permissions,
      // An LLM learns where the person speaks from in the engine's own prompt (a given prompt is sent byte for byte).
      systemPrompt:
        s.given ??
        [
          this.options.defaultSystemPrompt?.(s.principal) ?? 'You control a home through the tools you are given.',
          ...(s.area ? [speakerAreaLine(s.area)] : []),
        ].join('\n'),
      ...(s.area ? { area: s.area } : {}),
      ...(s.given !== undefined ? { givenSystemPrompt: s.given } : {}),
      ephemeral: s.ephemeral,
      history: this.history,
      messages: s.messages,
      turns: s.turns,
      ...(s.hostState !== undefined && s.hostState !== null ? { hostState: s.hostState } : {}),
      maxRounds: this.options.maxRounds ?? 8,
      maxActionsPerTurn: this.options.maxActionsPerTurn ?? DEFAULT_MAX_ACTIONS_PER_TURN,
      ...(this.options.decide ? { decide: this.options.decide } : {}),
      ...(this.options.mayRead ? { mayRead: this.options.mayRead } : {}),
      ...(this.options.refuse ? { refuse: this.options.refuse } : {}),
      limits: this.limits,
      log: (this.options.log ?? silentLogger).child({ session: id }),
      ...(s.subagents ? { subagents: { ...DEFAULT_SUBAGENT_LIMITS, ...this.options.subagents } } : {}),
      ...(memory ? { memory } : {}),
      ...(recall ? { recall } : {}),
    });
    this.sessions.set(id, session);
    return session;
  }

  session(id: string): BuiltinSession | undefined {
    return this.sessions.get(id);
  }

  async closeSession(id: string): Promise<void> {
    const s = this.sessions.get(id);
    this.sessions.delete(id);
    await s?.close();
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => s.close()));
    this.sessions.clear();
  }
}
