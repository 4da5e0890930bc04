// MCP over Streamable HTTP, to mount at `/mcp` in Hearth's HTTP server.
// Every request carries a principal the caller authenticated (bearer token);
// each MCP session belongs to the principal that opened it, and a request
// with another principal's session id is refused. Sessions end on DELETE,
// when the server closes, or after they sit idle with no open stream.
//
//   const mcp = new McpHttpHandler({ hearth, log });
//   if (path === '/mcp') return mcp.handle(req, res, principalOf(req));
//
// `mcpHttpListener` is the same with the Origin and token checks of the HTTP
// API in front, as a plain node:http listener (tests, or a server of its own).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Hearth } from '../hearth.js';
import { Authenticator, checkOrigin } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { Principal } from '../tools/types.js';
import { errorOf } from '../util/error.js';
import { HearthMcpSession } from './server.js';
import { jsonDepth, MAX_BODY_DEPTH } from '../util/bounded-json.js';

export const MCP_HTTP_PATH = '/mcp';

/** The session is opened at `/mcp?setup=1` (or `?setup`): the home's setup tools are offered too. */
function wantsSetup(req: IncomingMessage): boolean {
  const value = new URL(req.url ?? '/', 'http://localhost').searchParams.get('setup');
  return value !== null && value !== '0' && value !== 'false';
}
const SESSION_HEADER = 'mcp-session-id';

export interface McpHttpOptions {
  hearth: Hearth;
  log?: Logger;
  /** Largest POST body read (default 4 MiB). */
  bodyLimit?: number;
  /** A session with no request and no open stream for this long is closed (default 30 min). */
  idleMs?: number;
  /** Sessions one principal may hold; opening one more closes its least recently used (default 16). */
  maxSessionsPerPrincipal?: number;
  /** Throttle for sensor resource updates (tests). */
  sensorUpdateMs?: number;
}

interface Entry {
  id?: string;
  transport: StreamableHTTPServerTransport;
  mcp: HearthMcpSession;
  principal: Principal;
  /** The bearer token the session was opened with (none when auth is off): its revocation ends the session. */
  token?: string;
  lastSeen: number;
  /** Responses still streaming (the GET notification stream, SSE replies). */
  open: number;
}

class McpHttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export class McpHttpHandler {
  private readonly sessions = new Map<string, Entry>();
  private readonly hearth: Hearth;
  private readonly log: Logger;
  private readonly bodyLimit: number;
  private readonly idleMs: number;
  private readonly maxPerPrincipal: number;
  private readonly sensorUpdateMs?: number;
  private readonly sweeper: NodeJS.Timeout;
  private tokenTimer?: NodeJS.Timeout;
  private closing?: Promise<void>;

  constructor(options: McpHttpOptions) {
    this.hearth = options.hearth;
    this.log = options.log ?? silentLogger;
    this.bodyLimit = options.bodyLimit ?? 4 * 1024 * 1024;
    this.idleMs = options.idleMs ?? 30 * 60_000;
    this.maxPerPrincipal = options.maxSessionsPerPrincipal ?? 16;
    this.sensorUpdateMs = options.sensorUpdateMs;
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1000, this.idleMs / 2)));
    this.sweeper.unref();
    this.hearth.tokens.on('revoked', this.onRevoked);
  }

  /** A token revoked in this process: its sessions (and their open streams) end now. */
  private readonly onRevoked = (name: string) => this.closeToken(name);

  private closeToken(name: string): void {
    for (const entry of [...this.sessions.values()]) {
      if (entry.token !== name) continue;
      this.log.info({ session: entry.id?.slice(0, 12), principal: entry.principal.id, token: name }, 'MCP session closed: its token was revoked');
      void entry.transport.close();
    }
  }

  /** Revoked by another process (the CLI): checked every second while a session with a token is open. */
  private checkTokens(): void {
    const tokens = new Set([...this.sessions.values()].map((e) => e.token).filter((t): t is string => t !== undefined));
    if (!tokens.size && this.tokenTimer) {
      clearInterval(this.tokenTimer);
      this.tokenTimer = undefined;
    }
    for (const name of tokens) {
      try {
        if (!this.hearth.tokens.isActive(name)) this.closeToken(name);
      } catch (err) {
        this.log.warn({ err, token: name }, 'could not check an MCP session token; the session stays open');
      }
    }
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /**
   * Serve one request to the MCP endpoint for an authenticated principal.
   * Never throws: problems are answered as JSON-RPC errors with an HTTP status.
   */
  async handle(req: IncomingMessage, res: ServerResponse, principal: Principal, token?: string): Promise<void> {
    try {
      if (this.closing) throw new McpHttpFailure(503, -32000, 'Hearth is shutting down');
      const method = req.method ?? 'GET';
      if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
        throw new McpHttpFailure(405, -32000, `${method} is not allowed on the MCP endpoint; use POST, GET or DELETE`, { allow: 'POST, GET, DELETE' });
      }
      const body = method === 'POST' ? await this.readBody(req) : undefined;
      const header = req.headers[SESSION_HEADER];
      const sessionId = Array.isArray(header) ? header[0] : header;
      if (sessionId) {
        const entry = this.sessions.get(sessionId);
        if (!entry) throw new McpHttpFailure(404, -32001, 'Session not found: it ended or Hearth restarted; initialize a new session');
        if (entry.principal.id !== principal.id) {
          throw new McpHttpFailure(403, -32000, `this MCP session belongs to another principal, not ${principal.id}`);
        }
        entry.principal = principal; // roles as of this request
        entry.lastSeen = Date.now();
        await this.serve(entry, req, res, body);
        return;
      }
      if (method !== 'POST' || !isInitialize(body)) {
        throw new McpHttpFailure(400, -32000, `Bad Request: no ${SESSION_HEADER} header; the first request must be initialize`);
      }
      await this.open(req, res, principal, body, token);
    } catch (err) {
      this.fail(res, err);
    }
  }

  private async open(req: IncomingMessage, res: ServerResponse, principal: Principal, body: unknown, token?: string): Promise<void> {
    this.makeRoomFor(principal.id);
    // eslint-disable-next-line prefer-const
    let entry: Entry;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        entry.id = id;
        this.sessions.set(id, entry);
      },
    });
    const mcp = new HearthMcpSession({
      hearth: this.hearth,
      principal: () => entry.principal,
      log: this.log,
      session: () => (entry.id ? `mcp:${entry.id.slice(0, 12)}` : null),
      sensorUpdateMs: this.sensorUpdateMs,
      // `/mcp?setup=1`, as `hearth mcp --setup`: offer the tools that arrange the home to a principal who may.
      setup: wantsSetup(req),
    });
    entry = { transport, mcp, principal, token, lastSeen: Date.now(), open: 0 };
    if (token !== undefined && !this.tokenTimer) {
      this.tokenTimer = setInterval(() => this.checkTokens(), 1000);
      this.tokenTimer.unref();
    }
    mcp.server.onclose = () => {
      if (entry.id && this.sessions.get(entry.id) === entry) this.sessions.delete(entry.id);
      void mcp.close();
      this.log.debug({ session: entry.id?.slice(0, 12), principal: entry.principal.id }, 'MCP session closed');
    };
    await mcp.server.connect(transport);
    await this.serve(entry, req, res, body);
    if (!entry.id)
      await mcp.close(); // initialize was refused: nothing to keep
    else this.log.info({ session: entry.id.slice(0, 12), principal: principal.id }, 'MCP session opened');
  }

  private async serve(entry: Entry, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    entry.open++;
    let counted = true;
    res.once('close', () => {
      if (counted) entry.open--;
      counted = false;
      entry.lastSeen = Date.now();
    });
    await entry.transport.handleRequest(req, res, body);
  }

  /** Keep each principal under its session cap: the least recently used one goes. */
  private makeRoomFor(principalId: string): void {
    const mine = [...this.sessions.values()].filter((e) => e.principal.id === principalId).sort((a, b) => a.lastSeen - b.lastSeen);
    while (mine.length >= this.maxPerPrincipal) {
      const oldest = mine.shift()!;
      this.log.info({ principal: principalId, session: oldest.id?.slice(0, 12) }, 'MCP session closed: too many sessions for this principal');
      void oldest.transport.close();
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const entry of this.sessions.values()) {
      if (entry.open === 0 && now - entry.lastSeen > this.idleMs) {
        this.log.debug({ session: entry.id?.slice(0, 12) }, 'MCP session closed: idle');
        void entry.transport.close();
      }
    }
  }

  private readBody(req: IncomingMessage): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > this.bodyLimit) {
        req.resume();
        reject(new McpHttpFailure(413, -32000, `the request body is larger than ${this.bodyLimit} bytes`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let failed = false;
      req.on('data', (chunk: Buffer) => {
        if (failed) return;
        size += chunk.length;
        if (size > this.bodyLimit) {
          failed = true;
          reject(new McpHttpFailure(413, -32000, `the request body is larger than ${this.bodyLimit} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      req.on('error', (err) => {
        if (!failed) reject(err);
        failed = true;
      });
      req.on('end', () => {
        if (failed) return;
        const text = Buffer.concat(chunks).toString('utf8');
        if (jsonDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
          reject(new McpHttpFailure(400, -32700, `Parse error: the body nests deeper than ${MAX_BODY_DEPTH} levels`));
          return;
        }
        try {
          resolve(JSON.parse(text) as unknown);
        } catch (err) {
          reject(new McpHttpFailure(400, -32700, `Parse error: the body is not JSON (${(err as Error).message})`));
        }
      });
    });
  }

  private fail(res: ServerResponse, err: unknown): void {
    const known = err instanceof McpHttpFailure ? err : undefined;
    if (!known) this.log.error({ err: errorOf(err) }, 'MCP HTTP request failed');
    if (res.headersSent) {
      res.end();
      return;
    }
    const status = known?.status ?? 500;
    const message = known?.message ?? `internal error: ${err instanceof Error ? err.message : String(err)}`;
    sendRpcError(res, status, known?.code ?? -32603, message, known?.headers);
  }

  /** End every session (their open streams too). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweeper);
      if (this.tokenTimer) clearInterval(this.tokenTimer);
      this.hearth.tokens.off('revoked', this.onRevoked);
      const entries = [...this.sessions.values()];
      this.sessions.clear();
      await Promise.all(entries.map((e) => e.transport.close().catch(() => undefined)));
      await Promise.all(entries.map((e) => e.mcp.close()));
    })();
    return this.closing;
  }
}

function isInitialize(body: unknown): boolean {
  if (Array.isArray(body)) return body.some((m) => isInitializeRequest(m as JSONRPCMessage));
  return isInitializeRequest(body);
}

function sendRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

// ------------------------------------------------------------------ one handler per Hearth

const handlers = new WeakMap<Hearth, McpHttpHandler>();

/** The MCP handler of this Hearth (made on first use), for servers that mount one endpoint. */
export function mcpHttpHandlerFor(hearth: Hearth, log?: Logger): McpHttpHandler {
  let handler = handlers.get(hearth);
  if (!handler) handlers.set(hearth, (handler = new McpHttpHandler({ hearth, log })));
  return handler;
}

/** Serve one MCP request for an authenticated principal (see McpHttpHandler.handle). */
export function handleMcpHttp(req: IncomingMessage, res: ServerResponse, ctx: { hearth: Hearth; principal: Principal; log?: Logger }): Promise<void> {
  return mcpHttpHandlerFor(ctx.hearth, ctx.log).handle(req, res, ctx.principal);
}

/** Close the MCP sessions of this Hearth (on server stop). */
export async function closeMcpHttp(hearth: Hearth): Promise<void> {
  const handler = handlers.get(hearth);
  handlers.delete(hearth);
  await handler?.close();
}

// ------------------------------------------------------------------ standalone

export interface McpHttpListenerOptions extends McpHttpOptions {
  /** Require a bearer token (default true); false makes every caller http:local, an owner. */
  auth?: boolean;
  path?: string;
  /** Use this handler (default: a new one). */
  handler?: McpHttpHandler;
}

export type McpHttpListener = ((req: IncomingMessage, res: ServerResponse) => void) & { handler: McpHttpHandler };

/**
 * A node:http request listener serving only the MCP endpoint, with the HTTP
 * API's Origin check (a browser page from another origin gets 403) and bearer
 * tokens (`hearth token create`; none or a bad one gets 401).
 */
export function mcpHttpListener(options: McpHttpListenerOptions): McpHttpListener {
  const handler = options.handler ?? new McpHttpHandler(options);
  const auth = new Authenticator(options.hearth, options.auth ?? true);
  const path = options.path ?? MCP_HTTP_PATH;
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      checkOrigin(req, auth.enabled, options.hearth.bridge.config.http.trustedOrigins);
      if (url.pathname !== path && url.pathname !== `${path}/`)
        throw new HttpError(404, 'not_found', `no such endpoint: ${url.pathname}; MCP is served at ${path}`);
      const { principal, token } = auth.authenticate(req);
      void handler.handle(req, res, principal, token);
    } catch (err) {
      if (!req.readableEnded) req.resume();
      if (err instanceof HttpError) {
        const body = JSON.stringify(err.toJSON());
        res.writeHead(err.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...err.headers });
        res.end(body);
      } else {
        sendRpcError(res, 500, -32603, `internal error: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };
  return Object.assign(listener, { handler });
}
