// The `jan` engine: an Engine that drives a process speaking the Jan kit's
// runtime protocol v1 (`jan cli agent rpc`, or `hearth agent rpc`) over its
// stdin/stdout. Written from the protocol description (PROTOCOL.md), sharing
// no code with the kit.
//
// The runtime runs the model loop; the host tools stay here: a tool call
// arrives as `item/tool_request`, its handler runs in this process with a
// ToolCall carrying the session's principal, and the result goes back as
// `tool/respond`. A withdrawn call (`item/tool_request_cancelled`) has its
// signal aborted and is never answered.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { silentLogger, type Logger } from '../../log.js';
import { IMAGE_LIMITS, type HostTool, type Principal, type ToolCall, type ToolResult } from '../../tools/types.js';
import { DEFAULT_PRINCIPAL } from '../builtin-engine.js';
import type { ContentPart, FunctionSpec } from '../provider.js';
import {
  ArchivedSessionError,
  NoActiveTurnError,
  NotPendingError,
  TurnActiveError,
  type AgentEvent,
  type AgentSession,
  type Engine,
  type EngineLimits,
  type PermissionDecision,
  type RefuseCall,
  type ReopenOptions,
  type SessionInfo,
  type SessionOptions,
  type StopReason,
  type Turn,
  type TurnResult,
} from '../types.js';
import { DEFAULT_MAX_ACTIONS_PER_TURN, TurnActuations } from '../turn-actuations.js';
import { ErrorCodes, JsonRpcPeer, MAX_LINE_BYTES, PROTOCOL_VERSION, RpcError } from './jsonrpc.js';
import { errorOf } from '../../util/error.js';

export interface JanEngineOptions {
  /** The runtime's executable (`jan`, or `node` with args naming a script). */
  bin: string;
  /** Default `['cli', 'agent', 'rpc']`. */
  args?: string[];
  /** Added to this process's environment for the child. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  log?: Logger;
  clientInfo?: { name: string; version: string };
  /** Longest wait for the handshake. Default 30 s. */
  startTimeoutMs?: number;
  /** How long close() waits for the child to exit after closing its stdin. Default 5 s. */
  closeTimeoutMs?: number;
  /** Actions one turn may make (agent.max_actions_per_turn; turn-actuations.ts). */
  maxActionsPerTurn?: number;
  /** Host tool calls refused before their handler (a tool the session was not given) are recorded here, as at every door. */
  refuse?: RefuseCall;
}

export interface JanSessionOptions extends SessionOptions {
  /** The session's working directory on the runtime's side. Default: this process's. */
  cwd?: string;
}

interface InitializeResult {
  protocolVersion: number;
  serverInfo?: { name?: string; version?: string; [k: string]: unknown };
  capabilities?: Record<string, unknown>;
  input_content_parts?: Partial<EngineLimits> & { max_line_bytes?: number; max_echo_bytes?: number };
}

interface SessionStartResult {
  sessionId: string;
  model: string;
  tools: string[];
  toolSpecs: FunctionSpec[];
}

/** Wire events an AgentEvent can carry; others (subagent wrappers, provenance, ...) are logged and dropped. */
const KNOWN_EVENTS = new Set([
  'token',
  'reasoning',
  'step',
  'tool_call_started',
  'tool_call_args_delta',
  'tool_call',
  'tool_request',
  'tool_request_cancelled',
  'tool_result',
  'tool_details',
  'permission_request',
  'notice',
  'turn_usage',
  'subagent_start',
  'subagent_queued',
  'subagent',
  'subagent_end',
  'done',
  'error',
]);
const STOP_REASONS = new Set<StopReason>(['completed', 'interrupted', 'error']);
const TAIL_BYTES = 4096;

/**
 * The runtime to use: `JAN_BIN` when it names an executable, else `jan` on
 * PATH; undefined when there is neither.
 */
export function findJanBin(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env.JAN_BIN?.trim();
  if (explicit) {
    const found = explicit.includes('/') || explicit.includes(path.sep) ? (isExecutable(explicit) ? path.resolve(explicit) : undefined) : onPath(explicit, env);
    if (found) return found;
  }
  return onPath('jan', env);
}

function isExecutable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, process.platform === 'win32' ? fsConstants.F_OK : fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  const dirs = (env.PATH ?? env.Path ?? '').split(path.delimiter).filter(Boolean);
  const exts = process.platform === 'win32' ? ['', ...(env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';')] : [''];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

export interface ToolRespondParams {
  content: string | ContentPart[];
  isError: boolean;
  details?: Record<string, unknown>;
}

/**
 * A handler's result as `tool/respond` params, mapped as the kit's client
 * does: a string is the content; `{error}` / `{isError: true}` is an error;
 * `text` and `images` become content parts (images as data URLs, within the
 * runtime's limits: the rest are named in the text); `details` is kept when a
 * plain object, else wrapped as `{value}`.
 */
export function resultToRespond(raw: ToolResult | unknown, limits: EngineLimits = defaultLimits()): ToolRespondParams {
  if (typeof raw === 'string') return { content: raw, isError: false };
  if (!isPlainObject(raw)) return { content: raw === undefined || raw === null ? '' : String(raw), isError: false };
  const r = raw as Record<string, unknown>;
  const hasError = r.error !== undefined && r.error !== null && r.error !== false;
  const isError = r.isError === true || hasError;
  let text = typeof r.text === 'string' ? r.text : hasError ? (typeof r.error === 'string' ? r.error : JSON.stringify(r.error)) : '';
  const parts: ContentPart[] = [];
  if (Array.isArray(r.images) && r.images.length) {
    let count = 0;
    let total = 0;
    let dropped = 0;
    for (const img of r.images as Array<{ url?: unknown; mimeType?: unknown; bytes?: unknown }>) {
      const url = typeof img?.url === 'string' ? img.url : '';
      const mime = typeof img?.mimeType === 'string' ? img.mimeType : (/^data:([^;,]+)/.exec(url)?.[1] ?? '');
      const bytes = typeof img?.bytes === 'number' ? img.bytes : Buffer.byteLength(url.slice(url.indexOf(',') + 1), 'base64');
      const fits =
        url.startsWith('data:') &&
        url.includes(';base64,') &&
        limits.mime_types.includes(mime) &&
        bytes <= limits.max_image_bytes &&
        count + 1 <= limits.max_images &&
        total + bytes <= limits.max_message_image_bytes;
      if (!fits) {
        dropped++;
        continue;
      }
      count++;
      total += bytes;
      parts.push({ type: 'image_url', image_url: { url } });
    }
    if (dropped) text += `${text ? ' ' : ''}(${dropped} image(s) left out: over the runtime's image limits.)`;
  }
  const out: ToolRespondParams = {
    content: parts.length ? [...(text ? [{ type: 'text' as const, text }] : []), ...parts] : text,
    isError,
  };
  if (r.details !== undefined && r.details !== null) out.details = isPlainObject(r.details) ? r.details : { value: r.details };
  return out;
}

function defaultLimits(): EngineLimits {
  return {
    mime_types: [...IMAGE_LIMITS.mimeTypes],
    max_image_bytes: IMAGE_LIMITS.maxImageBytes,
    max_message_image_bytes: IMAGE_LIMITS.maxMessageImageBytes,
    max_images: IMAGE_LIMITS.maxImages,
  };
}

/** The runtime's refusals about a session, as the engine-neutral errors where there is one. */
function asSessionError(err: unknown, sessionId: string): unknown {
  if (!(err instanceof RpcError)) return err;
  if (err.kind === 'turn_active' || err.code === ErrorCodes.TURN_ACTIVE) return new TurnActiveError();
  if (err.kind === 'no_active_turn') return new NoActiveTurnError();
  if (err.kind === 'archived_session') return new ArchivedSessionError(sessionId);
  return err;
}

function toolDeclarations(tools: HostTool[]) {
  return tools.map((t) => ({ name: t.name, description: t.description ?? '', parameters: t.parameters ?? null, capability: t.capability ?? null }));
}

// ------------------------------------------------------------------ the engine

export class JanEngine implements Engine {
  readonly name = 'jan';
  protocolVersion = PROTOCOL_VERSION;
  serverInfo: { name?: string; version?: string; [k: string]: unknown } = {};
  capabilities: Record<string, unknown> = {};
  limits: EngineLimits = defaultLimits();
  /** See JanEngineOptions.refuse. */
  get refuse(): RefuseCall | undefined {
    return this.o.refuse;
  }
  /** The runtime's line limit; longer messages are not sent. */
  maxLineBytes = MAX_LINE_BYTES;
  maxEchoBytes = 4096;
  readonly peer: JsonRpcPeer;
  /** Resolves when the child has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly sessions = new Map<string, JanSession>();
  private readonly log: Logger;
  private stderrTail = '';
  private closing = false;
  private goneMessage?: string;

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    private readonly o: JanEngineOptions,
  ) {
    this.log = o.log ?? silentLogger;
    this.peer = new JsonRpcPeer({
      input: child.stdout,
      output: child.stdin,
      log: this.log,
      // Be generous with what the runtime sends (events can carry whole messages); its own limit is for what it takes.
      maxLineBytes: 4 * MAX_LINE_BYTES,
      onNotification: (method, params) => this.onNotification(method, params),
    });
    child.stderr.setEncoding('utf8');
    let partial = '';
    child.stderr.on('data', (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-TAIL_BYTES);
      partial += text;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      if (partial.length > TAIL_BYTES) partial = partial.slice(-TAIL_BYTES);
      for (const line of lines) if (line.trim()) this.log.debug({ stderr: line.slice(0, 2000) }, 'jan runtime');
    });
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        // Take the last lines the child wrote before calling it gone (bounded: a grandchild may hold the pipe).
        let timer: NodeJS.Timeout | undefined;
        const drained = new Promise<void>((done) => {
          if (child.stdout.readableEnded || child.stdout.destroyed) return done();
          child.stdout.once('close', () => done());
          timer = setTimeout(done, 500);
        });
        void drained.then(() => {
          clearTimeout(timer);
          this.onExit(code, signal);
          resolve({ code, signal });
        });
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Spawn the runtime and do the handshake (protocol version 1). */
  static async start(options: JanEngineOptions): Promise<JanEngine> {
    const log = options.log ?? silentLogger;
    const args = options.args ?? ['cli', 'agent', 'rpc'];
    const child = spawn(options.bin, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => reject(new Error(`could not start the jan runtime ${JSON.stringify(options.bin)}: ${err.message}`)));
    });
    child.on('error', (err) => log.warn({ err }, 'jan runtime process error'));
    try {
      await spawned;
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    const engine = new JanEngine(child, options);
    try {
      await engine.handshake(options.startTimeoutMs ?? 30_000);
    } catch (err) {
      await engine.close({ force: true });
      throw err;
    }
    log.info({ pid: child.pid, server: engine.serverInfo }, 'jan runtime ready');
    return engine;
  }

  private async handshake(timeoutMs: number): Promise<void> {
    const exitedEarly = this.exited.then(({ code, signal }) => {
      throw new Error(`the jan runtime exited during the handshake (${signal ?? `code ${code}`})${this.tail()}`);
    });
    const result = await Promise.race([
      this.peer.request<InitializeResult>(
        'initialize',
        { protocolVersion: PROTOCOL_VERSION, clientInfo: this.o.clientInfo ?? { name: 'hearth', version: '0' }, capabilities: {} },
        { timeoutMs },
      ),
      exitedEarly,
    ]).catch((err: unknown) => {
      if (err instanceof RpcError) throw new Error(`the jan runtime refused initialize: ${err.message}`);
      throw err instanceof Error && !err.message.includes('stderr') ? new Error(`${err.message}${this.tail()}`) : err;
    });
    if (!isPlainObject(result) || result.protocolVersion !== PROTOCOL_VERSION) {
      throw new Error(
        `the jan runtime speaks protocol version ${JSON.stringify((result as InitializeResult | undefined)?.protocolVersion)}; Hearth speaks ${PROTOCOL_VERSION}`,
      );
    }
    this.protocolVersion = result.protocolVersion;
    this.serverInfo = isPlainObject(result.serverInfo) ? result.serverInfo : {};
    this.capabilities = isPlainObject(result.capabilities) ? result.capabilities : {};
    const parts = isPlainObject(result.input_content_parts) ? result.input_content_parts : {};
    const num = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback);
    const base = defaultLimits();
    this.limits = {
      mime_types: Array.isArray(parts.mime_types) ? parts.mime_types.filter((m): m is string => typeof m === 'string') : base.mime_types,
      max_image_bytes: num(parts.max_image_bytes, base.max_image_bytes),
      max_message_image_bytes: num(parts.max_message_image_bytes, base.max_message_image_bytes),
      max_images: num(parts.max_images, base.max_images),
    };
    this.maxLineBytes = num(parts.max_line_bytes, MAX_LINE_BYTES);
    this.maxEchoBytes = num(parts.max_echo_bytes, 4096);
    this.peer.maxOutgoingLineBytes = this.maxLineBytes;
    this.peer.notify('initialized');
  }

  private tail(): string {
    const t = this.stderrTail.trim();
    return t ? `; last stderr: ${t.slice(-1000)}` : '';
  }

  /** Is the runtime still there? */
  get alive(): boolean {
    return !this.goneMessage;
  }

  async createSession(options: JanSessionOptions = {}): Promise<JanSession> {
    this.assertAlive();
    const tools = options.tools ?? [];
    if (options.id) {
      // Resume (the runtime keeps the thread), then hand it this side's tools.
      const resumed = await this.resumeSession(options.id, options);
      if (!resumed) throw new Error(`the jan runtime has no session ${JSON.stringify(options.id)} to resume`);
      return resumed;
    }
    const params: Record<string, unknown> = {
      cwd: options.cwd ?? process.cwd(),
      tools: toolDeclarations(tools),
      permissions: options.permissions ?? 'jan',
      ephemeral: options.ephemeral ?? false,
      builtins: options.builtins ?? true,
    };
    if (options.systemPrompt !== undefined) params.systemPrompt = options.systemPrompt;
    if (options.subagents !== undefined) params.subagents = options.subagents;
    if (options.model !== undefined) params.model = options.model;
    const started = await this.request<SessionStartResult>('session/start', params);
    if (!isPlainObject(started) || typeof started.sessionId !== 'string') throw new Error('the jan runtime answered session/start without a sessionId');
    return this.adopt(started, tools, options.principal, options.model);
  }

  /** The runtime's sessions (`session/list`), each with its id and number of turns. */
  async listSessions(): Promise<SessionInfo[]> {
    const r = await this.request<{ sessions?: unknown }>('session/list', {});
    const entries = isPlainObject(r) && Array.isArray(r.sessions) ? r.sessions : [];
    return entries.filter(isPlainObject).flatMap((e) => {
      const id = typeof e.id === 'string' ? e.id : typeof e.sessionId === 'string' ? e.sessionId : undefined;
      if (!id) return [];
      return [{ id, model: typeof e.model === 'string' ? e.model : '', turns: typeof e.turns === 'number' ? e.turns : 0 }];
    });
  }

  /** Reopen a session of the runtime (`session/resume`) and hand it this side's tools; undefined when the runtime knows no such session. */
  async resumeSession(id: string, options: ReopenOptions = {}): Promise<JanSession | undefined> {
    let resumed: Partial<SessionStartResult> & { turns?: unknown };
    try {
      resumed = await this.request('session/resume', { sessionId: id });
    } catch (err) {
      if (err instanceof RpcError && err.kind === 'unknown_session') return undefined;
      throw asSessionError(err, id);
    }
    const tools = options.tools ?? [];
    this.sessions.get(id)?.runtimeGone('the session was reopened', true);
    const set = await this.request<Partial<SessionStartResult>>('session/tools/set', { sessionId: id, tools: toolDeclarations(tools) });
    return this.adopt(
      {
        sessionId: typeof resumed?.sessionId === 'string' ? resumed.sessionId : id,
        model: typeof resumed?.model === 'string' ? resumed.model : '',
        tools: Array.isArray(set?.tools) ? set.tools : [],
        toolSpecs: Array.isArray(set?.toolSpecs) ? set.toolSpecs : [],
      },
      tools,
      options.principal,
      undefined,
      typeof resumed?.turns === 'number' ? resumed.turns : 0,
    );
  }

  /** A new session of the runtime with a copy of the source's thread (`session/fork`), given this side's tools (default: the source's). */
  async forkSession(source: AgentSession, options: ReopenOptions = {}): Promise<JanSession> {
    let forked: SessionStartResult & { turns?: unknown };
    try {
      forked = await this.request('session/fork', { sessionId: source.id });
    } catch (err) {
      throw asSessionError(err, source.id);
    }
    if (!isPlainObject(forked) || typeof forked.sessionId !== 'string') throw new Error('the jan runtime answered session/fork without a sessionId');
    const tools = options.tools ?? (source instanceof JanSession ? source.hostToolList : []);
    const set = await this.request<Partial<SessionStartResult>>('session/tools/set', { sessionId: forked.sessionId, tools: toolDeclarations(tools) });
    return this.adopt(
      { ...forked, tools: Array.isArray(set?.tools) ? set.tools : forked.tools, toolSpecs: Array.isArray(set?.toolSpecs) ? set.toolSpecs : forked.toolSpecs },
      tools,
      options.principal ?? source.principal,
      source.model,
      typeof forked.turns === 'number' ? forked.turns : source.turns,
    );
  }

  private adopt(started: SessionStartResult, tools: HostTool[], principal: Principal | undefined, model: string | undefined, turns = 0): JanSession {
    const session = new JanSession(this, this.peer, {
      id: started.sessionId,
      model: typeof started.model === 'string' ? started.model : (model ?? ''),
      principal: principal ?? DEFAULT_PRINCIPAL,
      tools,
      names: Array.isArray(started.tools) ? started.tools : tools.map((t) => `host__${t.name}`),
      specs: Array.isArray(started.toolSpecs) ? started.toolSpecs : [],
      turns,
      log: this.log.child({ session: started.sessionId }),
      maxActionsPerTurn: this.o.maxActionsPerTurn ?? DEFAULT_MAX_ACTIONS_PER_TURN,
    });
    this.sessions.set(session.id, session);
    return session;
  }

  /** Send a request to the runtime (an RpcError carries its code and data). */
  request<T>(method: string, params?: unknown): Promise<T> {
    this.assertAlive();
    return this.peer.request<T>(method, params);
  }

  private assertAlive(): void {
    if (this.goneMessage) throw new Error(this.goneMessage);
  }

  /** @internal */
  forget(session: JanSession): void {
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
  }

  private onNotification(method: string, params: unknown): void {
    if (!isPlainObject(params)) return;
    const session = typeof params.sessionId === 'string' ? this.sessions.get(params.sessionId) : undefined;
    if (!session) {
      this.log.debug({ method }, 'jan: notification for no session of ours');
      return;
    }
    const turnId = typeof params.turnId === 'string' ? params.turnId : '';
    if (method === 'turn/completed') {
      const stop = STOP_REASONS.has(params.stopReason as StopReason) ? (params.stopReason as StopReason) : 'error';
      session.onCompleted(turnId, { stopReason: stop, ...(typeof params.error === 'string' ? { error: params.error } : {}) });
      return;
    }
    if (method.startsWith('item/')) {
      const event = params.event;
      if (!isPlainObject(event) || typeof event.type !== 'string') return;
      if (!KNOWN_EVENTS.has(event.type)) {
        this.log.debug({ type: event.type }, 'jan: event type not carried to Hearth');
        return;
      }
      session.onItem(turnId, event as unknown as AgentEvent);
      return;
    }
    this.log.debug({ method }, 'jan: notification ignored');
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    const how = signal ? `signal ${signal}` : `code ${code}`;
    this.goneMessage = this.closing ? 'the jan engine was closed' : `the jan runtime exited unexpectedly (${how})${this.tail()}`;
    if (!this.closing) this.log.error({ code, signal }, 'jan runtime exited');
    this.peer.close(this.goneMessage);
    for (const s of this.sessions.values()) s.runtimeGone(this.goneMessage, this.closing);
    this.sessions.clear();
  }

  /** Close stdin, wait (5 s by default) for the runtime to exit, then kill it. `force` kills at once. */
  async close(options: { force?: boolean } = {}): Promise<void> {
    this.closing = true;
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (options.force) {
      child.kill('SIGKILL');
      await this.exited;
      return;
    }
    child.stdin.end();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.exited.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), this.o.closeTimeoutMs ?? 5000))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.log.warn({ pid: child.pid }, 'jan runtime did not exit after its stdin closed; killing it');
      child.kill('SIGTERM');
      const killTimer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await this.exited;
      clearTimeout(killTimer);
    }
  }
}

// ------------------------------------------------------------------ turns

class RemoteTurn implements Turn {
  private readonly buffer: AgentEvent[] = [];
  private waiters: Array<() => void> = [];
  private settled?: TurnResult;
  private readonly resultPromise: Promise<TurnResult>;
  private resolveResult!: (r: TurnResult) => void;
  /** Requests of this turn whose handler runs here. */
  readonly calls = new Map<string, AbortController>();
  readonly tools: Map<string, HostTool>;

  constructor(
    readonly id: string,
    private readonly session: JanSession,
    tools: Map<string, HostTool>,
    /** The actions this turn has made, against its bound. */
    readonly actuations: TurnActuations,
  ) {
    this.tools = tools;
    this.resultPromise = new Promise((resolve) => (this.resolveResult = resolve));
  }

  get done(): boolean {
    return this.settled !== undefined;
  }

  push(event: AgentEvent): void {
    if (this.settled) return;
    this.buffer.push(event);
    this.wake();
  }

  finish(result: TurnResult): void {
    if (this.settled) return;
    this.settled = result;
    for (const c of this.calls.values()) c.abort(new Error('the turn ended'));
    this.calls.clear();
    this.resolveResult(result);
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  result(): Promise<TurnResult> {
    return this.resultPromise;
  }

  interrupt(): void {
    if (this.settled) return;
    this.session.interruptTurn(this);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    let i = 0;
    for (;;) {
      while (i < this.buffer.length) yield this.buffer[i++];
      if (this.settled) return;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

// ------------------------------------------------------------------ sessions

interface JanSessionInit {
  id: string;
  model: string;
  principal: Principal;
  tools: HostTool[];
  names: string[];
  specs: FunctionSpec[];
  turns: number;
  log: Logger;
  maxActionsPerTurn: number;
}

export class JanSession extends EventEmitter<{ event: [AgentEvent, string] }> implements AgentSession {
  readonly id: string;
  readonly principal: Principal;
  model: string;
  tools: string[];
  toolSpecs: FunctionSpec[];
  private hostTools: Map<string, HostTool>;
  private readonly running = new Map<string, RemoteTurn>();
  private turnCount: number;
  private active?: RemoteTurn;
  private starting = false;
  /** Events for a turn whose `turn/start` answer has not arrived yet. */
  private early = new Map<string, { events: AgentEvent[]; completed?: TurnResult }>();
  private readonly permissions = new Set<string>();
  private closed?: string;
  private readonly log: Logger;
  private readonly maxActionsPerTurn: number;

  constructor(
    private readonly engine: JanEngine,
    private readonly peer: JsonRpcPeer,
    init: JanSessionInit,
  ) {
    super();
    this.id = init.id;
    this.model = init.model;
    this.principal = init.principal;
    this.tools = init.names;
    this.toolSpecs = init.specs;
    this.hostTools = new Map(init.tools.map((t) => [t.name, t]));
    this.turnCount = init.turns;
    this.log = init.log;
    this.maxActionsPerTurn = init.maxActionsPerTurn;
  }

  get turns(): number {
    return this.turnCount;
  }

  /** The front door's state, kept here only (the runtime keeps its own sessions). */
  hostState?: unknown;

  setHostState(state: unknown): void {
    this.hostState = state;
  }

  /** @internal this side's host tools (a fork takes them along). */
  get hostToolList(): HostTool[] {
    return [...this.hostTools.values()];
  }

  get busy(): boolean {
    return this.starting || (!!this.active && !this.active.done);
  }

  async prompt(text: string): Promise<Turn> {
    if (this.closed) throw new Error(this.closed);
    // Whether a turn still runs is the runtime's to say (-32001); only a start already on its way is refused here.
    if (this.starting) throw new TurnActiveError();
    this.starting = true;
    this.early.clear();
    let turnId: string;
    try {
      const r = await this.peer.request<{ turnId?: unknown }>('turn/start', { sessionId: this.id, input: text });
      if (!isPlainObject(r) || typeof r.turnId !== 'string') throw new Error('the jan runtime answered turn/start without a turnId');
      turnId = r.turnId;
    } catch (err) {
      this.early.clear();
      if (err instanceof RpcError && err.code === ErrorCodes.TURN_ACTIVE) throw new TurnActiveError();
      throw err;
    } finally {
      this.starting = false;
    }
    this.turnCount++;
    const turn = new RemoteTurn(turnId, this, new Map(this.hostTools), new TurnActuations(this.maxActionsPerTurn));
    this.running.set(turnId, turn);
    this.active = turn;
    const early = this.early.get(turnId);
    this.early.clear();
    for (const event of early?.events ?? []) this.deliver(turn, event);
    if (early?.completed) this.complete(turn, early.completed);
    else if (this.closed) this.gone(turn, this.closed, false);
    return turn;
  }

  /** @internal an `item/*` notification. */
  onItem(turnId: string, event: AgentEvent): void {
    const turn = this.running.get(turnId);
    if (turn) {
      this.deliver(turn, event);
      return;
    }
    if (this.starting) {
      const slot = this.early.get(turnId) ?? { events: [] };
      if (slot.events.length < 10_000) slot.events.push(event);
      this.early.set(turnId, slot);
      return;
    }
    this.log.debug({ turnId, type: event.type }, 'jan: event for an unknown turn');
  }

  /** @internal `turn/completed`. */
  onCompleted(turnId: string, result: TurnResult): void {
    const turn = this.running.get(turnId);
    if (turn) return this.complete(turn, result);
    if (this.starting) {
      const slot = this.early.get(turnId) ?? { events: [] };
      slot.completed = result;
      this.early.set(turnId, slot);
    }
  }

  private deliver(turn: RemoteTurn, event: AgentEvent): void {
    if (turn.done) return;
    turn.push(event);
    try {
      this.emit('event', event, turn.id);
    } catch (err) {
      this.log.warn({ err: errorOf(err) }, 'jan: an event listener failed');
    }
    switch (event.type) {
      case 'tool_request':
        void this.runTool(turn, event);
        break;
      case 'tool_request_cancelled': {
        const c = turn.calls.get(event.request_id);
        turn.calls.delete(event.request_id);
        c?.abort(new Error(`cancelled: ${event.reason}`));
        break;
      }
      case 'permission_request':
        this.permissions.add(event.request_id);
        break;
    }
  }

  private complete(turn: RemoteTurn, result: TurnResult): void {
    this.running.delete(turn.id);
    if (this.active === turn) this.active = undefined;
    this.permissions.clear();
    turn.finish(result);
  }

  private async runTool(turn: RemoteTurn, event: Extract<AgentEvent, { type: 'tool_request' }>): Promise<void> {
    const requestId = event.request_id;
    const tool = turn.tools.get(event.tool_name) ?? this.hostTools.get(event.tool_name);
    const controller = new AbortController();
    turn.calls.set(requestId, controller);
    let answer: ToolRespondParams;
    const over = tool && tool.capability !== 'read' ? turn.actuations.take() : undefined;
    if (!tool) {
      const text = `unknown tool ${JSON.stringify(String(event.tool_name).slice(0, 80))}: this client declared no such tool`;
      // Audited as at every door (ToolSet.refuse): a tool this session was not given may still be an actuator's name.
      this.engine.refuse?.(String(event.tool_name), event.args, this.principal, { requestId, runId: event.run_id ?? null, session: this.id }, text);
      answer = { content: text, isError: true };
    } else if (over) {
      // Past the turn's bound: refused (and recorded by a tool that audits), nothing sent; the turn says so once.
      const notice = turn.actuations.noticeOnFirstRefusal();
      if (notice) this.deliver(turn, { type: 'notice', text: notice });
      if (tool.recordsRefusals) {
        const call: ToolCall = {
          requestId,
          toolName: tool.name,
          runId: event.run_id ?? null,
          session: this.id,
          signal: controller.signal,
          principal: this.principal,
          refused: over,
        };
        await Promise.resolve(tool.handler(isPlainObject(event.args) ? event.args : {}, call)).catch(() => undefined);
      }
      answer = { content: `not done: ${over}; nothing was sent.`, isError: true };
    } else {
      const call: ToolCall = {
        requestId,
        toolName: tool.name,
        runId: event.run_id ?? null,
        session: this.id,
        signal: controller.signal,
        principal: this.principal,
      };
      try {
        const raw = await tool.handler(isPlainObject(event.args) ? event.args : {}, call);
        answer = resultToRespond(raw, this.engine.limits);
      } catch (err) {
        answer = { content: `failed: ${err instanceof Error ? err.message : String(err)}`, isError: true };
      }
    }
    // Withdrawn (or the turn is over): never answered.
    if (controller.signal.aborted || turn.calls.get(requestId) !== controller) return;
    turn.calls.delete(requestId);
    try {
      await this.peer.request('tool/respond', { requestId, ...answer });
    } catch (err) {
      if (err instanceof RpcError && err.kind === 'line_too_long') {
        await this.peer
          .request('tool/respond', { requestId, content: 'the result was too large to send to the runtime', isError: true })
          .catch((e: unknown) => this.log.warn({ err: errorOf(e) }, 'jan: tool/respond failed'));
      } else if (err instanceof RpcError && err.kind === 'not_pending') {
        this.log.debug({ requestId }, 'jan: the runtime no longer waited for this answer');
      } else {
        this.log.warn({ requestId, err: errorOf(err) }, 'jan: tool/respond failed');
      }
    }
  }

  /** @internal */
  interruptTurn(turn: RemoteTurn): void {
    if (this.closed || this.active !== turn) return;
    this.peer.request('turn/interrupt', { sessionId: this.id }).catch((err: unknown) => this.log.warn({ err: errorOf(err) }, 'jan: turn/interrupt failed'));
  }

  respondPermission(requestId: string, decision: PermissionDecision): void {
    if (!this.permissions.has(requestId)) throw new NotPendingError(requestId);
    this.permissions.delete(requestId);
    this.peer.request('permission/respond', { requestId, decision }).catch((err: unknown) => {
      if (err instanceof RpcError && err.kind === 'not_pending') this.log.debug({ requestId }, 'jan: permission no longer pending');
      else this.log.warn({ requestId, err: errorOf(err) }, 'jan: permission/respond failed');
    });
  }

  /** Replace the host tools (the runtime takes them between turns). */
  setTools(tools: HostTool[]): void {
    this.hostTools = new Map(tools.map((t) => [t.name, t]));
    if (this.closed) return;
    this.peer
      .request<Partial<SessionStartResult>>('session/tools/set', { sessionId: this.id, tools: toolDeclarations(tools) })
      .then((r) => {
        if (Array.isArray(r?.tools)) this.tools = r.tools;
        if (Array.isArray(r?.toolSpecs)) this.toolSpecs = r.toolSpecs;
      })
      .catch((err: unknown) => this.log.error({ err: errorOf(err) }, 'jan: session/tools/set failed'));
  }

  /** Guidance for the model's next request within the running turn (`turn/steer`). */
  async steer(text: string): Promise<void> {
    if (this.closed) throw new Error(this.closed);
    try {
      await this.peer.request('turn/steer', { sessionId: this.id, input: text });
    } catch (err) {
      throw asSessionError(err, this.id);
    }
  }

  /** Switch the model from the next turn on (`session/model/set`); answers the model now in use. */
  async setModel(model: string): Promise<string> {
    if (this.closed) throw new Error(this.closed);
    let r: { model?: unknown };
    try {
      r = await this.peer.request<{ model?: unknown }>('session/model/set', { sessionId: this.id, model });
    } catch (err) {
      throw asSessionError(err, this.id);
    }
    this.model = isPlainObject(r) && typeof r.model === 'string' ? r.model : model;
    return this.model;
  }

  /** Forget the conversation, keep the tools (`session/reset`). */
  async reset(): Promise<void> {
    if (this.closed) throw new Error(this.closed);
    try {
      await this.peer.request('session/reset', { sessionId: this.id });
    } catch (err) {
      throw asSessionError(err, this.id);
    }
    this.turnCount = 0;
  }

  /** Drop the session for good (`session/archive`): it leaves the lists and takes no new turns. */
  async archive(): Promise<void> {
    if (this.closed) throw new Error(this.closed);
    await this.peer.request('session/archive', { sessionId: this.id });
    for (const turn of this.running.values()) this.gone(turn, 'the session was archived', true);
    this.closed = `session ${JSON.stringify(this.id)} is archived: it takes no new turns`;
    this.engine.forget(this);
  }

  /** The tools as the runtime has them (`session/tools/get`). */
  async getTools(): Promise<{ tools: string[]; toolSpecs: FunctionSpec[] }> {
    const r = await this.peer.request<{ tools: string[]; toolSpecs: FunctionSpec[] }>('session/tools/get', { sessionId: this.id });
    this.tools = r.tools;
    this.toolSpecs = r.toolSpecs;
    return r;
  }

  async close(): Promise<void> {
    const active = this.active;
    if (active && !active.done && !this.closed) {
      active.interrupt();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([active.result(), new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
      clearTimeout(timer);
      if (!active.done) this.gone(active, 'the session was closed', true);
    }
    this.closed ??= 'the session is closed';
    this.engine.forget(this);
  }

  /** @internal the runtime is gone: settle what runs. */
  runtimeGone(message: string, deliberate: boolean): void {
    this.closed = message;
    for (const turn of this.running.values()) this.gone(turn, message, deliberate);
    this.running.clear();
    this.active = undefined;
    this.permissions.clear();
  }

  private gone(turn: RemoteTurn, message: string, deliberate: boolean): void {
    if (turn.done) return;
    if (!deliberate) this.deliver(turn, { type: 'error', code: 'runtime_exited', message });
    this.running.delete(turn.id);
    if (this.active === turn) this.active = undefined;
    turn.finish(deliberate ? { stopReason: 'interrupted', error: message } : { stopReason: 'error', error: message });
  }
}
