// The Jan kit's runtime protocol (v1), served over any Engine: what
// `jan cli agent rpc` speaks on stdin/stdout, so a kit client can drive
// Hearth's agent as if it were the Jan runtime.
//
// - Handshake: `initialize` (answered), then the `initialized` notification;
//   any other request before that gets -32002.
// - The client's declared tools become host tools whose handler asks the
//   client: `item/tool_request` out, `tool/respond` back. When the call is
//   withdrawn (interrupt, abort, client gone) the client gets
//   `item/tool_request_cancelled` and the answer is no longer taken.
// - Every event of a turn goes out as `item/<type> {sessionId, turnId, event}`,
//   then `turn/completed {sessionId, turnId, stopReason, error?}`. The answer
//   to `turn/start` is written before the first event of its turn.
// - The engine's own `tool_request` / `tool_request_cancelled` events are not
//   forwarded: for the client's tools the handler sends them (exactly once),
//   and the other tools (the home's) run here, not in the client.
// - Sessions: `builtins` (default true) brings the home's tools (the
//   principal's `host__*` tools); false advertises exactly the client's.
//   A non-ephemeral session is saved by the engine with the client's tool
//   declarations, so `session/resume` reopens it (after a restart too) with
//   its thread and tools; `session/fork` copies thread and tools into a new
//   session; `session/reset` forgets the thread, keeps the tools;
//   `session/archive` stops its turn, drops it from `session/list` and refuses
//   new turns; `session/model/set` switches the model from the next turn;
//   `turn/steer` puts guidance in the running turn's next model request.
//   A session this connection did not start or resume is an "unknown session"
//   (-32602, data.kind unknown_session), whoever else may have it.
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { silentLogger, type Logger } from '../../log.js';
import type { Capability, HostTool, ImagePart, Principal, ToolCall, ToolResultObject } from '../../tools/types.js';
import { createAjv } from '../../util/ajv.js';
import type { FunctionSpec } from '../provider.js';
import {
  ArchivedSessionError,
  NoActiveTurnError,
  NotPendingError,
  TurnActiveError,
  type AgentEvent,
  type AgentSession,
  type Engine,
  type PermissionDecision,
  type Permissions,
  type Turn,
} from '../types.js';
import { ErrorCodes, JsonRpcPeer, MAX_ECHO_BYTES, MAX_LINE_BYTES, PROTOCOL_VERSION, Reply, RpcError, echo, invalidParams } from './jsonrpc.js';
import { errorOf } from '../../util/error.js';

export interface RpcServerOptions {
  engine: Engine;
  input: Readable;
  output: Writable;
  /** serverInfo.version. */
  version: string;
  /** serverInfo.name. Default `hearth`. */
  name?: string;
  /** Who every session acts for. Default: the engine's default. */
  principal?: Principal;
  /**
   * Tools every session gets besides the client's own (Hearth: the home's
   * tools this principal may use). Called at session start and on refresh.
   */
  baseTools?: (principal: Principal | undefined) => HostTool[];
  maxLineBytes?: number;
  log?: Logger;
}

/** A tool entry as the client declares it in `session/start` / `session/tools/set`. */
export interface ToolDeclaration {
  name: string;
  description: string;
  parameters: Record<string, unknown> | null;
  capability: Capability | null;
}

interface ServedTurn {
  id: string;
  turn: Turn;
  interruptRequested: boolean;
}

interface Served {
  id: string;
  session: AgentSession;
  /** The client's tools as declared, and as host tools that ask the client. */
  declarations: ToolDeclaration[];
  clientTools: HostTool[];
  /** The home's tools come along (the kit's `builtins`). */
  builtins: boolean;
  /** Archived on this connection: kept only to say so. */
  archived: boolean;
  turn?: ServedTurn;
  /** The turn the engine's latest event belonged to (for tool requests made before `turn/start` answered). */
  lastTurnId?: string;
  /** While `turn/start` is being answered, notifications wait here. */
  held: Array<[string, unknown]> | null;
  starting: boolean;
  staleBase: boolean;
  listener: (event: AgentEvent, turnId: string) => void;
}

interface ToolWait {
  sessionId: string;
  settle: (result: ToolResultObject) => void;
}

const TOOL_NAME_RE = /^[A-Za-z0-9_-]{1,58}$/;
const DECISIONS: PermissionDecision[] = ['allow_once', 'allow_always', 'deny'];
/** What this server keeps with a saved session (SessionOptions.hostState), to reopen it with the same tools. */
interface RpcHostState {
  tools: ToolDeclaration[];
  builtins: boolean;
}
const schemaAjv = createAjv();

type Params = Record<string, unknown>;

function objectParams(method: string, params: unknown, allowed: string[], required: string[] = []): Params {
  if (params === undefined || params === null) params = {};
  if (typeof params !== 'object' || Array.isArray(params)) throw invalidParams(`${method}: params must be an object`);
  const p = params as Params;
  for (const key of Object.keys(p)) {
    if (!allowed.includes(key))
      throw invalidParams(`${method}: unknown parameter ${JSON.stringify(echo(key, 64))}; known: ${allowed.join(', ')}`, 'invalid_params', {
        param: echo(key, 64),
      });
  }
  for (const key of required) {
    if (p[key] === undefined) throw invalidParams(`${method}: ${key} is required`, 'invalid_params', { param: key });
  }
  return p;
}

function optionalType(method: string, p: Params, key: string, type: 'string' | 'boolean', nullable = false): void {
  const v = p[key];
  if (v === undefined || (nullable && v === null)) return;
  if (typeof v !== type) throw invalidParams(`${method}: ${key} must be a ${type}${nullable ? ' or null' : ''}`, 'invalid_params', { param: key });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
}

/** Check the client's tool list by the kit's rules; the reason names the entry and the rule. */
export function parseToolDeclarations(raw: unknown, taken: Set<string> = new Set()): ToolDeclaration[] {
  const bad = (reason: string) => invalidParams(`invalid tools: ${reason}`, 'invalid_tools', { reason });
  if (!Array.isArray(raw)) throw bad('tools must be an array');
  const seen = new Set<string>();
  return raw.map((entry, i) => {
    const where = `tools[${i}]`;
    if (!isPlainObject(entry)) throw bad(`${where} must be an object`);
    for (const key of Object.keys(entry)) {
      if (!['name', 'description', 'parameters', 'capability'].includes(key)) throw bad(`${where}: unknown field ${JSON.stringify(echo(key, 64))}`);
    }
    const { name, description, parameters, capability } = entry;
    if (typeof name !== 'string') throw bad(`${where}.name must be a string`);
    const label = `${where} (${JSON.stringify(echo(name, 80))})`;
    if (!TOOL_NAME_RE.test(name)) throw bad(`${label}: a name is 1 to 58 of A-Z a-z 0-9 _ -`);
    if (name.includes('__')) throw bad(`${label}: a name must not contain "__"`);
    if (seen.has(name)) throw bad(`${label}: the name is declared twice`);
    if (taken.has(name)) throw bad(`${label}: the name is taken by one of this home's tools`);
    seen.add(name);
    if (description !== undefined && typeof description !== 'string') throw bad(`${label}.description must be a string`);
    if (parameters !== undefined && parameters !== null) {
      if (!isPlainObject(parameters)) throw bad(`${label}.parameters must be a JSON Schema object or null`);
      if (parameters.type !== undefined && parameters.type !== 'object') throw bad(`${label}.parameters must describe an object (type "object")`);
      try {
        schemaAjv.compile(parameters);
      } catch (err) {
        throw bad(`${label}.parameters is not a usable JSON Schema: ${echo((err as Error).message, 300)}`);
      }
    }
    if (capability !== undefined && capability !== null && capability !== 'read' && capability !== 'actuator') {
      throw bad(`${label}.capability must be "read", "actuator" or null`);
    }
    return {
      name,
      description: description ?? '',
      parameters: (parameters as Record<string, unknown> | null | undefined) ?? null,
      capability: (capability as Capability | null | undefined) ?? null,
    };
  });
}

const DATA_URL_RE = /^data:([A-Za-z0-9.+-]+\/[A-Za-z0-9.+-]+)(?:;[^,;]*)*;base64,/;
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/** `tool/respond` content (a string, or OpenAI content parts) into a handler result. */
export function contentToResult(content: unknown, isError: boolean, details: Record<string, unknown> | null): ToolResultObject {
  const result: ToolResultObject = { isError };
  if (details) result.details = details;
  if (typeof content === 'string') {
    result.text = content;
    return result;
  }
  if (!Array.isArray(content)) throw invalidParams('tool/respond: content must be a string or an array of content parts', 'invalid_content');
  const texts: string[] = [];
  const images: ImagePart[] = [];
  content.forEach((part, i) => {
    if (!isPlainObject(part)) throw invalidParams(`tool/respond: content[${i}] must be an object`, 'invalid_content');
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw invalidParams(`tool/respond: content[${i}].text must be a string`, 'invalid_content');
      texts.push(part.text);
      return;
    }
    if (part.type === 'image_url') {
      const iu = part.image_url;
      const url = typeof iu === 'string' ? iu : isPlainObject(iu) && typeof iu.url === 'string' ? iu.url : undefined;
      if (!url) throw invalidParams(`tool/respond: content[${i}].image_url.url must be a string`, 'invalid_content');
      const m = DATA_URL_RE.exec(url);
      if (!m) throw invalidParams(`tool/respond: content[${i}]: an image must be a base64 data URL (data:<mime>;base64,...)`, 'invalid_content');
      const b64 = url.slice(m[0].length);
      if (!BASE64_RE.test(b64)) throw invalidParams(`tool/respond: content[${i}]: the image is not valid base64`, 'invalid_content');
      images.push({ url, mimeType: m[1].toLowerCase(), bytes: Buffer.byteLength(b64, 'base64') });
      return;
    }
    throw invalidParams(`tool/respond: content[${i}].type must be "text" or "image_url"`, 'invalid_content');
  });
  result.text = texts.join('\n');
  if (images.length) result.images = images;
  return result;
}

/** Tools of a session: the base (home) tools the client did not shadow, then the client's. */
function combine(base: HostTool[], client: HostTool[]): HostTool[] {
  const names = new Set(client.map((t) => t.name));
  return [...base.filter((t) => !names.has(t.name)), ...client];
}

export class RpcServer {
  readonly peer: JsonRpcPeer;
  /** Resolves once the client is gone and every session here is closed. */
  readonly closed: Promise<void>;
  private state: 'new' | 'initializing' | 'ready' = 'new';
  private readonly sessions = new Map<string, Served>();
  private readonly toolWaits = new Map<string, ToolWait>();
  private readonly permissionOwners = new Map<string, string>();
  private readonly log: Logger;
  private closing = false;
  clientInfo?: { name?: string; version?: string };

  constructor(private readonly o: RpcServerOptions) {
    this.log = o.log ?? silentLogger;
    this.peer = new JsonRpcPeer({
      input: o.input,
      output: o.output,
      maxLineBytes: o.maxLineBytes ?? MAX_LINE_BYTES,
      log: this.log,
      onRequest: (method, params) => this.handle(method, params),
      onNotification: (method) => {
        if (method === 'initialized') {
          if (this.state === 'initializing') this.state = 'ready';
          return;
        }
        this.log.debug({ method }, 'rpc: notification ignored');
      },
    });
    this.closed = this.peer.closed.then(() => this.shutdown());
  }

  /** Stop serving (e.g. on SIGTERM): running turns are interrupted, sessions closed. */
  async close(): Promise<void> {
    this.peer.close('the server is shutting down');
    await this.closed;
  }

  /** The base tools changed (devices came or went): sessions take the new set between turns. */
  refreshBaseTools(): void {
    for (const served of this.sessions.values()) {
      if (served.archived || !served.builtins) continue;
      if (served.turn) served.staleBase = true;
      else this.applyTools(served);
    }
  }

  private applyTools(served: Served): void {
    served.staleBase = false;
    served.session.setTools(combine(served.builtins ? this.baseTools() : [], served.clientTools));
  }

  // ---------------------------------------------------------------- dispatch

  private handle(method: string, params: unknown): unknown {
    if (method === 'initialize') return this.initialize(params);
    if (this.state !== 'ready') {
      throw new RpcError(
        ErrorCodes.NOT_INITIALIZED,
        `not initialized: send initialize and then the initialized notification before ${JSON.stringify(echo(method, 64))}`,
        {
          kind: 'not_initialized',
        },
      );
    }
    switch (method) {
      case 'session/start':
        return this.sessionStart(params);
      case 'session/list':
        objectParams(method, params, []);
        return this.sessionList();
      case 'session/resume':
        return this.sessionResume(params);
      case 'session/fork':
        return this.sessionFork(params);
      case 'session/archive':
        return this.sessionArchive(params);
      case 'session/reset':
        return this.sessionReset(params);
      case 'session/model/set':
        return this.modelSet(params);
      case 'turn/steer':
        return this.turnSteer(params);
      case 'session/tools/get': {
        const served = this.served(method, objectParams(method, params, ['sessionId'], ['sessionId']));
        return { tools: served.session.tools, toolSpecs: served.session.toolSpecs };
      }
      case 'session/tools/set':
        return this.toolsSet(params);
      case 'turn/start':
        return this.turnStart(params);
      case 'turn/interrupt': {
        const served = this.served(method, objectParams(method, params, ['sessionId'], ['sessionId']), { archived: true });
        const active = served.turn;
        if (active) {
          active.interruptRequested = true;
          active.turn.interrupt();
        }
        return { interrupted: !!active, ...(active ? { turnId: active.id } : {}) };
      }
      case 'permission/respond':
        return this.permissionRespond(params);
      case 'tool/respond':
        return this.toolRespond(params);
      default:
        throw new RpcError(ErrorCodes.METHOD_NOT_FOUND, `unknown method ${JSON.stringify(echo(method, 128))}`);
    }
  }

  private initialize(params: unknown): unknown {
    if (this.state !== 'new') throw new RpcError(ErrorCodes.INVALID_REQUEST, 'initialize was already sent on this connection');
    const p = objectParams('initialize', params, ['protocolVersion', 'clientInfo', 'capabilities'], ['protocolVersion']);
    if (p.protocolVersion !== PROTOCOL_VERSION) {
      throw invalidParams(
        `initialize: protocolVersion ${JSON.stringify(echo(JSON.stringify(p.protocolVersion) ?? '', 64))} is not supported; this server speaks ${PROTOCOL_VERSION}`,
        'unsupported_protocol_version',
        {
          supported: [PROTOCOL_VERSION],
        },
      );
    }
    if (p.clientInfo !== undefined && !isPlainObject(p.clientInfo)) throw invalidParams('initialize: clientInfo must be an object');
    if (p.capabilities !== undefined && p.capabilities !== null && !isPlainObject(p.capabilities))
      throw invalidParams('initialize: capabilities must be an object');
    this.clientInfo = p.clientInfo as RpcServer['clientInfo'];
    this.state = 'initializing';
    const limits = this.o.engine.limits;
    return {
      protocolVersion: PROTOCOL_VERSION,
      serverInfo: { name: this.o.name ?? 'hearth', version: this.o.version, engine: this.o.engine.name },
      capabilities: { session: true, turn: true },
      input_content_parts: {
        mime_types: [...limits.mime_types],
        max_image_bytes: limits.max_image_bytes,
        max_message_image_bytes: limits.max_message_image_bytes,
        max_images: limits.max_images,
        max_line_bytes: this.o.maxLineBytes ?? MAX_LINE_BYTES,
        max_echo_bytes: MAX_ECHO_BYTES,
      },
    };
  }

  /** The session a request names; an archived one only when the method allows it. */
  private served(method: string, p: Params, allow: { archived?: boolean } = {}): Served {
    const id = sessionIdOf(method, p);
    const served = this.sessions.get(id);
    if (!served) throw unknownSession(method, id);
    if (served.archived && !allow.archived) throw archivedSession(method, id);
    return served;
  }

  private baseTools(): HostTool[] {
    return this.o.baseTools?.(this.o.principal) ?? [];
  }

  // ---------------------------------------------------------------- sessions

  private async sessionStart(params: unknown): Promise<unknown> {
    const method = 'session/start';
    const p = objectParams(method, params, ['cwd', 'model', 'ephemeral', 'tools', 'builtins', 'subagents', 'systemPrompt', 'permissions'], ['cwd']);
    if (typeof p.cwd !== 'string' || !p.cwd) throw invalidParams(`${method}: cwd must be a non-empty string`, 'invalid_params', { param: 'cwd' });
    optionalType(method, p, 'model', 'string', true);
    optionalType(method, p, 'ephemeral', 'boolean');
    optionalType(method, p, 'builtins', 'boolean');
    optionalType(method, p, 'subagents', 'boolean', true);
    optionalType(method, p, 'systemPrompt', 'string', true);
    if (p.permissions !== undefined && p.permissions !== 'jan' && p.permissions !== 'host') {
      throw invalidParams(`${method}: permissions must be "jan" or "host"`, 'invalid_params', { param: 'permissions' });
    }
    const builtins = (p.builtins as boolean | undefined) ?? true;
    // Without builtins the session has exactly the client's tools: none of the home's.
    const base = builtins ? this.baseTools() : [];
    const declared = parseToolDeclarations(p.tools ?? [], new Set(base.map((t) => t.name)));
    const holder: { served?: Served } = {};
    const clientTools = declared.map((d) => this.clientTool(d, holder));
    const hostState: RpcHostState = { tools: declared, builtins };
    const session = await this.o.engine.createSession({
      tools: combine(base, clientTools),
      hostState,
      permissions: (p.permissions as Permissions | undefined) ?? 'jan',
      ...(typeof p.systemPrompt === 'string' ? { systemPrompt: p.systemPrompt } : {}),
      ephemeral: (p.ephemeral as boolean | undefined) ?? false,
      builtins,
      subagents: (p.subagents as boolean | null | undefined) ?? builtins,
      ...(typeof p.model === 'string' ? { model: p.model } : {}),
      ...(this.o.principal ? { principal: this.o.principal } : {}),
    });
    const served = await this.adopt(session, declared, builtins, holder, clientTools);
    this.log.info({ session: session.id, tools: session.tools.length, client: declared.length, builtins }, 'rpc: session started');
    return { sessionId: session.id, model: session.model, tools: session.tools, toolSpecs: session.toolSpecs as FunctionSpec[], turns: served.session.turns };
  }

  /** Serve an engine session on this connection (its client tools ask this client). */
  private async adopt(
    session: AgentSession,
    declared: ToolDeclaration[],
    builtins: boolean,
    holder: { served?: Served } = {},
    clientTools = declared.map((d) => this.clientTool(d, holder)),
  ): Promise<Served> {
    if (this.closing) {
      await session.close();
      throw new RpcError(ErrorCodes.INTERNAL_ERROR, 'the server is shutting down');
    }
    const served: Served = {
      id: session.id,
      session,
      declarations: declared,
      clientTools,
      builtins,
      archived: false,
      held: null,
      starting: false,
      staleBase: false,
      listener: (event, turnId) => this.onEngineEvent(served, event, turnId),
    };
    holder.served = served;
    session.on('event', served.listener);
    this.sessions.set(session.id, served);
    return served;
  }

  private described(served: Served): Record<string, unknown> {
    const s = served.session;
    return { sessionId: s.id, model: s.model, tools: s.tools, toolSpecs: s.toolSpecs as FunctionSpec[], turns: s.turns };
  }

  /** The sessions here (open on this connection) and this principal's saved ones, each with its id and number of turns. */
  private async sessionList(): Promise<unknown> {
    const open = [...this.sessions.values()].filter((s) => !s.archived);
    const sessions: Array<Record<string, unknown>> = open.map((s) => ({ id: s.id, model: s.session.model, turns: s.session.turns, running: !!s.turn }));
    const here = new Set(this.sessions.keys());
    for (const saved of await this.o.engine.listSessions(this.o.principal)) {
      if (here.has(saved.id)) continue;
      sessions.push({ id: saved.id, model: saved.model, turns: saved.turns, running: false, ...(saved.updatedAt ? { updatedAt: saved.updatedAt } : {}) });
    }
    return { sessions };
  }

  /** Reopen a saved session (after a restart too): its thread, options and the tools the client declared. */
  private async sessionResume(params: unknown): Promise<unknown> {
    const method = 'session/resume';
    const p = objectParams(method, params, ['sessionId'], ['sessionId']);
    const id = sessionIdOf(method, p);
    const here = this.sessions.get(id);
    if (here) {
      if (here.archived) throw archivedSession(method, id);
      return this.described(here);
    }
    let session: AgentSession | undefined;
    try {
      session = await this.o.engine.resumeSession(id, { ...(this.o.principal ? { principal: this.o.principal } : {}), tools: [] });
    } catch (err) {
      if (err instanceof ArchivedSessionError) throw archivedSession(method, id);
      throw err;
    }
    if (!session) throw unknownSession(method, id);
    // A session opened meanwhile by a concurrent resume keeps the first.
    const raced = this.sessions.get(id);
    if (raced) {
      await session.close();
      return this.described(raced);
    }
    const state = this.readHostState(session);
    const served = await this.adopt(session, state.tools, state.builtins);
    this.applyTools(served);
    this.log.info({ session: id, turns: session.turns }, 'rpc: session resumed');
    return this.described(served);
  }

  /** The tools and builtins a saved session was opened with (a state this server cannot read: none of the client's, with the home's). */
  private readHostState(session: AgentSession): RpcHostState {
    const raw = session.hostState as Partial<RpcHostState> | undefined | null;
    const builtins = typeof raw?.builtins === 'boolean' ? raw.builtins : true;
    try {
      const taken = new Set((builtins ? this.baseTools() : []).map((t) => t.name));
      return { tools: raw?.tools === undefined ? [] : parseToolDeclarations(raw.tools, taken), builtins };
    } catch (err) {
      this.log.warn({ session: session.id, err }, 'rpc: the saved tools of a session are not usable; it is reopened without them');
      return { tools: [], builtins };
    }
  }

  /** A new session with a copy of the thread, options and tools of another. */
  private async sessionFork(params: unknown): Promise<unknown> {
    const method = 'session/fork';
    const source = this.served(method, objectParams(method, params, ['sessionId'], ['sessionId']));
    const hostState: RpcHostState = { tools: source.declarations, builtins: source.builtins };
    const session = await this.o.engine.forkSession(source.session, { ...(this.o.principal ? { principal: this.o.principal } : {}), tools: [], hostState });
    const served = await this.adopt(session, source.declarations, source.builtins);
    this.applyTools(served);
    this.log.info({ session: session.id, from: source.id }, 'rpc: session forked');
    return this.described(served);
  }

  /** Drop a session for good: a running turn is stopped; it leaves the lists and takes no new turns. */
  private async sessionArchive(params: unknown): Promise<unknown> {
    const method = 'session/archive';
    const served = this.served(method, objectParams(method, params, ['sessionId'], ['sessionId']), { archived: true });
    if (!served.archived) {
      served.archived = true;
      if (served.turn) served.turn.interruptRequested = true;
      await served.session.archive();
      this.log.info({ session: served.id }, 'rpc: session archived');
    }
    return { sessionId: served.id, archived: true };
  }

  /** Forget the conversation; the tools and options stay. Not while a turn runs. */
  private async sessionReset(params: unknown): Promise<unknown> {
    const method = 'session/reset';
    const served = this.served(method, objectParams(method, params, ['sessionId'], ['sessionId']));
    if (served.turn || served.starting) throw turnActive();
    try {
      await served.session.reset();
    } catch (err) {
      if (err instanceof TurnActiveError) throw turnActive();
      throw err;
    }
    return { sessionId: served.id, turns: served.session.turns };
  }

  /** The model of the session's next turns (a running turn keeps its own). */
  private async modelSet(params: unknown): Promise<unknown> {
    const method = 'session/model/set';
    const p = objectParams(method, params, ['sessionId', 'model'], ['sessionId', 'model']);
    const served = this.served(method, p);
    if (typeof p.model !== 'string' || !p.model.trim())
      throw invalidParams(`${method}: model must be a non-empty string`, 'invalid_params', { param: 'model' });
    const model = await served.session.setModel(p.model.trim());
    return { sessionId: served.id, model };
  }

  /** Guidance for the model's next request within the running turn. */
  private async turnSteer(params: unknown): Promise<unknown> {
    const method = 'turn/steer';
    const p = objectParams(method, params, ['sessionId', 'input'], ['sessionId', 'input']);
    const served = this.served(method, p);
    if (typeof p.input !== 'string' || !p.input.trim())
      throw invalidParams(`${method}: input must be a non-empty string`, 'invalid_params', { param: 'input' });
    const active = served.turn;
    if (!active) throw noActiveTurn(method);
    try {
      await served.session.steer(p.input);
    } catch (err) {
      if (err instanceof NoActiveTurnError) throw noActiveTurn(method);
      throw err;
    }
    return { sessionId: served.id, turnId: active.id };
  }

  private toolsSet(params: unknown): unknown {
    const method = 'session/tools/set';
    const p = objectParams(method, params, ['sessionId', 'tools'], ['sessionId', 'tools']);
    const served = this.served(method, p);
    const declared = parseToolDeclarations(p.tools, new Set((served.builtins ? this.baseTools() : []).map((t) => t.name)));
    served.declarations = declared;
    served.clientTools = declared.map((d) => this.clientTool(d, { served }));
    served.session.setHostState({ tools: declared, builtins: served.builtins } satisfies RpcHostState);
    this.applyTools(served);
    return { tools: served.session.tools, toolSpecs: served.session.toolSpecs };
  }

  /** A client's tool as a host tool: its handler asks the client and waits for `tool/respond`. */
  private clientTool(d: ToolDeclaration, holder: { served?: Served }): HostTool {
    return {
      name: d.name,
      description: d.description,
      parameters: d.parameters ?? { type: 'object', properties: {} },
      // The kit's "absent" capability (opaque: prompted, sequential) has no
      // HostTool spelling; engines read a missing capability as null.
      capability: (d.capability ?? undefined) as Capability,
      handler: (args, call) => {
        const served = holder.served;
        if (!served) throw new Error('the session is not ready yet');
        return this.askClient(served, d.name, args, call);
      },
    };
  }

  private askClient(served: Served, toolName: string, args: Record<string, unknown>, call: ToolCall): Promise<ToolResultObject> {
    if (!this.peer.isOpen || this.closing) return Promise.reject(new Error('the client is gone'));
    if (call.signal.aborted) return Promise.reject(new Error('cancelled before it was asked'));
    let requestId = call.requestId || randomUUID();
    if (this.toolWaits.has(requestId)) requestId = randomUUID();
    const turnId = served.turn?.id ?? served.lastTurnId ?? '';
    return new Promise<ToolResultObject>((resolve, reject) => {
      const onAbort = () => {
        if (!this.toolWaits.delete(requestId)) return;
        const reason = this.closing || !this.peer.isOpen ? 'client_gone' : served.turn?.interruptRequested ? 'interrupted' : 'aborted';
        this.notifySession(served, 'item/tool_request_cancelled', {
          sessionId: served.id,
          turnId,
          event: { type: 'tool_request_cancelled', request_id: requestId, reason },
        });
        const r: unknown = call.signal.reason;
        reject(r instanceof Error ? r : new Error(`cancelled (${reason})`));
      };
      call.signal.addEventListener('abort', onAbort, { once: true });
      this.toolWaits.set(requestId, {
        sessionId: served.id,
        settle: (result) => {
          call.signal.removeEventListener('abort', onAbort);
          resolve(result);
        },
      });
      this.notifySession(served, 'item/tool_request', {
        sessionId: served.id,
        turnId,
        event: { type: 'tool_request', request_id: requestId, tool_name: toolName, args, run_id: call.runId ?? null },
      });
    });
  }

  private toolRespond(params: unknown): unknown {
    const method = 'tool/respond';
    const p = objectParams(method, params, ['requestId', 'content', 'isError', 'details'], ['requestId', 'content']);
    if (typeof p.requestId !== 'string') throw invalidParams(`${method}: requestId must be a string`, 'invalid_params', { param: 'requestId' });
    optionalType(method, p, 'isError', 'boolean');
    if (p.details !== undefined && p.details !== null && !isPlainObject(p.details)) {
      throw invalidParams(`${method}: details must be an object or null`, 'invalid_params', { param: 'details' });
    }
    const wait = this.toolWaits.get(p.requestId);
    if (!wait) {
      throw invalidParams(`${method}: request ${JSON.stringify(echo(p.requestId, 128))} is not pending (answered, cancelled, or never asked)`, 'not_pending', {
        requestId: echo(p.requestId, 128),
      });
    }
    const result = contentToResult(p.content, (p.isError as boolean | undefined) ?? false, (p.details as Record<string, unknown> | null | undefined) ?? null);
    this.toolWaits.delete(p.requestId);
    wait.settle(result);
    return {};
  }

  private permissionRespond(params: unknown): unknown {
    const method = 'permission/respond';
    const p = objectParams(method, params, ['requestId', 'decision'], ['requestId', 'decision']);
    if (typeof p.requestId !== 'string') throw invalidParams(`${method}: requestId must be a string`, 'invalid_params', { param: 'requestId' });
    if (!DECISIONS.includes(p.decision as PermissionDecision)) {
      throw invalidParams(`${method}: decision must be one of ${DECISIONS.join(', ')}`, 'invalid_params', { param: 'decision' });
    }
    const notPending = () =>
      invalidParams(`${method}: permission request ${JSON.stringify(echo(p.requestId as string, 128))} is not pending`, 'not_pending', {
        requestId: echo(p.requestId as string, 128),
      });
    const owner = this.permissionOwners.get(p.requestId);
    const served = owner ? this.sessions.get(owner) : undefined;
    if (!served) throw notPending();
    try {
      served.session.respondPermission(p.requestId, p.decision as PermissionDecision);
    } catch (err) {
      if (err instanceof NotPendingError) {
        this.permissionOwners.delete(p.requestId);
        throw notPending();
      }
      throw err;
    }
    this.permissionOwners.delete(p.requestId);
    return {};
  }

  // ---------------------------------------------------------------- turns

  private async turnStart(params: unknown): Promise<unknown> {
    const method = 'turn/start';
    const p = objectParams(method, params, ['sessionId', 'input'], ['sessionId', 'input']);
    const served = this.served(method, p);
    const input = inputText(p.input);
    if (served.turn || served.starting) throw turnActive();
    // Events the engine emits while starting wait until the answer is written.
    served.held = [];
    served.starting = true;
    let turn: Turn;
    try {
      turn = await served.session.prompt(input);
    } catch (err) {
      this.release(served);
      if (err instanceof TurnActiveError) throw turnActive();
      if (err instanceof ArchivedSessionError) throw archivedSession(method, served.id);
      throw err;
    } finally {
      served.starting = false;
    }
    const active: ServedTurn = { id: turn.id, turn, interruptRequested: false };
    served.turn = active;
    void turn.result().then(
      (r) => this.turnEnded(served, active, r.stopReason, r.error),
      (err: unknown) => this.turnEnded(served, active, 'error', err instanceof Error ? err.message : String(err)),
    );
    return new Reply({ turnId: turn.id }, () => this.release(served));
  }

  private turnEnded(served: Served, active: ServedTurn, stopReason: string, error?: string): void {
    if (served.turn === active) served.turn = undefined;
    for (const [id, owner] of this.permissionOwners) if (owner === served.id) this.permissionOwners.delete(id);
    this.notifySession(served, 'turn/completed', { sessionId: served.id, turnId: active.id, stopReason, ...(error !== undefined ? { error } : {}) });
    if (served.staleBase && this.sessions.has(served.id)) this.applyTools(served);
  }

  private onEngineEvent(served: Served, event: AgentEvent, turnId: string): void {
    served.lastTurnId = turnId;
    // The handler of a client tool sends these itself; the home's tools are no business of the client.
    if (event.type === 'tool_request' || event.type === 'tool_request_cancelled') return;
    if (event.type === 'permission_request') this.permissionOwners.set(event.request_id, served.id);
    this.notifySession(served, `item/${event.type}`, { sessionId: served.id, turnId, event });
  }

  private notifySession(served: Served, method: string, params: unknown): void {
    if (served.held) served.held.push([method, params]);
    else this.peer.notify(method, params);
  }

  private release(served: Served): void {
    const held = served.held;
    served.held = null;
    for (const [method, params] of held ?? []) this.peer.notify(method, params);
  }

  // ---------------------------------------------------------------- shutdown

  private async shutdown(): Promise<void> {
    this.closing = true;
    const all = [...this.sessions.values()];
    for (const served of all) served.turn?.turn.interrupt();
    // Anything still waiting for the client will never be answered.
    for (const [id, wait] of this.toolWaits) {
      this.toolWaits.delete(id);
      wait.settle({ text: 'the client went away before answering', isError: true });
    }
    await Promise.all(
      all.map(async (served) => {
        try {
          await served.session.close();
        } catch (err) {
          this.log.warn({ session: served.id, err: errorOf(err) }, 'rpc: closing a session failed');
        }
        served.session.off('event', served.listener);
        this.sessions.delete(served.id);
      }),
    );
    this.log.info({ sessions: all.length }, 'rpc: client gone; sessions closed');
  }
}

function sessionIdOf(method: string, p: Params): string {
  if (typeof p.sessionId !== 'string' || !p.sessionId)
    throw invalidParams(`${method}: sessionId must be a non-empty string`, 'invalid_params', { param: 'sessionId' });
  return p.sessionId;
}

function unknownSession(method: string, id: string): RpcError {
  return invalidParams(`${method}: unknown session ${JSON.stringify(echo(id, 128))} (start it, or resume a saved one, on this connection)`, 'unknown_session', {
    sessionId: echo(id, 128),
  });
}

function archivedSession(method: string, id: string): RpcError {
  return invalidParams(`${method}: session ${JSON.stringify(echo(id, 128))} is archived: it takes no new turns (start a new session)`, 'archived_session', {
    sessionId: echo(id, 128),
  });
}

function noActiveTurn(method: string): RpcError {
  return invalidParams(`${method}: no turn is running in this session; a steer goes to the running turn (send turn/start)`, 'no_active_turn');
}

function turnActive(): RpcError {
  return new RpcError(ErrorCodes.TURN_ACTIVE, 'a turn is already running in this session; wait for turn/completed or send turn/interrupt', {
    kind: 'turn_active',
    retryable: true,
  });
}

/** `turn/start` input: a string, or text content parts (this engine takes text only). */
function inputText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (Array.isArray(input)) {
    const texts: string[] = [];
    input.forEach((part, i) => {
      if (isPlainObject(part) && part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
      else if (isPlainObject(part) && part.type === 'image_url')
        throw invalidParams(`turn/start: input[${i}]: this engine takes text input only`, 'unsupported_input');
      else throw invalidParams(`turn/start: input[${i}] must be a text part`, 'invalid_params', { param: 'input' });
    });
    return texts.join('\n');
  }
  throw invalidParams('turn/start: input must be a string', 'invalid_params', { param: 'input' });
}
