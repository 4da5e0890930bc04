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
import { IMAGE_LIMITS, type Principal } from '../tools/types.js';
import { BuiltinSession } from './builtin-session.js';
import { HistoryStore } from './history.js';
import { MemoryStore, memorySection } from './memory.js';
import type { Provider } from './provider.js';
import { DEFAULT_SUBAGENT_LIMITS, type SubagentLimits } from './subagents.js';
import type { Engine, EngineLimits, SessionOptions } from './types.js';

export interface BuiltinEngineOptions {
  provider: Provider;
  /** Conversation threads are kept here (unless a session is ephemeral). */
  db?: Db;
  /** The system prompt a session gets when it brings none. */
  defaultSystemPrompt?: () => string;
  /** Tool-call rounds per turn before the turn stops with an error. */
  maxRounds?: number;
  log?: Logger;
  /** Project memory (needs `db`). Default true. */
  memory?: boolean;
  /** Limits of subagents (concurrency, per turn, how long a turn waits for them). */
  subagents?: Partial<SubagentLimits>;
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
    this.memory = options.db && options.memory !== false ? new MemoryStore(options.db) : undefined;
  }

  static async start(options: BuiltinEngineOptions): Promise<BuiltinEngine> {
    return new BuiltinEngine(options);
  }

  get provider(): Provider {
    return this.options.provider;
  }

  async createSession(opts: SessionOptions = {}): Promise<BuiltinSession> {
    const provider = this.options.provider;
    const principal = opts.principal ?? DEFAULT_PRINCIPAL;
    let id = opts.id ?? randomUUID();
    let messages = [] as ReturnType<HistoryStore['load']>;
    let systemPrompt = opts.systemPrompt ?? this.options.defaultSystemPrompt?.() ?? 'You control a home through the tools you are given.';
    let ownPrompt = opts.systemPrompt === undefined;
    const model = opts.model ?? provider.defaultModel;
    if (opts.id && this.history && !opts.ephemeral) {
      const saved = this.history.get(opts.id);
      if (saved) {
        if (saved.principal !== principal.id) throw new Error(`session ${opts.id} belongs to another principal`);
        messages = this.history.load(opts.id);
        if (opts.systemPrompt === undefined && saved.systemPrompt !== null) {
          systemPrompt = saved.systemPrompt;
          ownPrompt = false;
        }
      }
    }
    if (!opts.ephemeral && this.history) this.history.create(id, principal.id, model, opts.systemPrompt ?? null);
    if (opts.ephemeral && !opts.id) id = `ephemeral-${id}`;
    const memory = opts.ephemeral ? undefined : this.memory;
    const sessionId = id;
    const recall =
      memory && ownPrompt ? (query: string) => memorySection(memory.recall(principal.id, { query, excludeSession: sessionId })) : undefined;
    const subagents = opts.subagents ?? opts.builtins ?? true;
    const session = new BuiltinSession({
      id,
      provider,
      model,
      principal,
      area: opts.area,
      tools: opts.tools ?? [],
      permissions: opts.permissions ?? 'jan',
      systemPrompt,
      ephemeral: opts.ephemeral ?? false,
      history: this.history,
      messages,
      maxRounds: this.options.maxRounds ?? 8,
      limits: this.limits,
      log: (this.options.log ?? silentLogger).child({ session: id }),
      ...(subagents ? { subagents: { ...DEFAULT_SUBAGENT_LIMITS, ...this.options.subagents } } : {}),
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
