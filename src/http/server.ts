// Hearth's HTTP API on node:http: start/stop, routing, the Origin and token
// checks every request passes, and errors as `{error: {code, message}}`.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Hearth } from '../hearth.js';
import { silentLogger, type Logger } from '../log.js';
import type { Principal } from '../tools/types.js';
import { approvalRoutes } from './api-approvals.js';
import { auditRoutes } from './api-audit.js';
import { controlRoutes } from './api-controls.js';
import { historyRoutes } from './api-history.js';
import { deviceRoutes } from './api-devices.js';
import { eventRoutes } from './api-events.js';
import { flowToolRoutes } from './api-flow-tools.js';
import { frameRoutes } from './api-frames.js';
import { openAiErrorBody, openAiRoutes } from './api-openai.js';
import { policyRoutes } from './api-policy.js';
import { policyEditRoutes } from './api-policy-edit.js';
import { homeRoutes } from './api-home.js';
import { toolRoutes } from './api-tools.js';
import { SessionsApi } from './api-sessions.js';
import { ANONYMOUS, Authenticator, checkAuthSetting, checkOrigin } from './auth.js';
import { BODY_LIMIT, readJsonObject } from './body.js';
import { HttpError, notFound } from './errors.js';
import { oauthEndpointsFor, type OAuthEndpoints } from './oauth/endpoints.js';
import { pageRoutes } from './page.js';
import { Reply, sendJson, type ApiContext, type Route } from './route.js';
import { SseHub } from './sse.js';
import type { FlowToolProviders } from '../tools/flow-tool-providers.js';
import { errorOf } from '../util/error.js';

export interface HttpServerOptions {
  hearth: Hearth;
  host?: string;
  /** 0: any free port (see `port` on the result). */
  port?: number;
  /** false: no tokens, everyone is http:local (an owner); loopback hosts only. */
  auth?: boolean;
  log?: Logger;
  bodyLimit?: number;
  /** Other handlers under a path of their own (e.g. MCP at /mcp), behind the same Origin and token checks. */
  mounts?: Mount[];
}

/** A handler served under `path` (and below it), given the authenticated principal and its token's name. */
export interface Mount {
  path: string;
  handle(req: IncomingMessage, res: ServerResponse, principal: Principal, token?: string): Promise<void> | void;
  /** Called when the server stops. */
  close?(): Promise<void> | void;
}

/** The port is taken, or the address cannot be bound. */
export class HttpStartError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'HttpStartError';
  }
}

interface Compiled extends Route {
  regex: RegExp;
  names: string[];
}

function compile(route: Route): Compiled {
  const names: string[] = [];
  const pattern = route.path
    .split('/')
    .map((seg) => {
      if (seg.startsWith(':')) {
        names.push(seg.slice(1));
        return '([^/]+)';
      }
      return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { ...route, regex: new RegExp(`^${pattern}/?$`), names };
}

export class HttpServer {
  private readonly routes: Compiled[];
  private readonly auth: Authenticator;
  private readonly sse: SseHub;
  private readonly sessions: SessionsApi;
  private readonly flowTools: FlowToolProviders;
  private readonly log: Logger;
  private readonly bodyLimit: number;
  private readonly mounts: Mount[];
  private readonly oauth: OAuthEndpoints;
  private closing?: Promise<void>;
  readonly host: string;
  port = 0;

  private constructor(
    readonly hearth: Hearth,
    private readonly server: Server,
    options: HttpServerOptions,
  ) {
    this.host = options.host ?? '127.0.0.1';
    this.log = options.log ?? silentLogger;
    this.bodyLimit = options.bodyLimit ?? BODY_LIMIT;
    this.mounts = options.mounts ?? [];
    this.auth = new Authenticator(hearth, options.auth ?? true);
    const events = hearth.bridge.config.http.events;
    this.sse = new SseHub({
      maxBufferedBytes: events.maxBufferedBytes,
      maxStreamsPerToken: events.maxStreamsPerToken,
      tokenActive: (name) => hearth.tokens.isActive(name),
      log: this.log.child({ part: 'events' }),
    });
    hearth.tokens.on('revoked', this.onRevoked);
    const ctx: ApiContext = { hearth, log: this.log, sse: this.sse };
    this.sessions = new SessionsApi(ctx);
    this.oauth = oauthEndpointsFor(hearth, this.log.child({ part: 'oauth' }));
    const flowTools = flowToolRoutes(ctx);
    this.flowTools = flowTools.providers;
    this.routes = [
      ...deviceRoutes(ctx),
      ...this.sessions.routes(),
      ...approvalRoutes(ctx),
      ...eventRoutes(ctx),
      ...frameRoutes(ctx),
      ...auditRoutes(ctx),
      ...policyRoutes(ctx),
      ...openAiRoutes(ctx),
      ...policyEditRoutes(ctx),
      ...homeRoutes(ctx),
      ...historyRoutes(ctx),
      ...controlRoutes(ctx),
      ...toolRoutes(ctx),
      ...flowTools.routes,
      ...pageRoutes(ctx),
      ...this.oauth.routes(),
    ].map(compile);
  }

  /** Check the settings, bind, and serve. */
  static async start(options: HttpServerOptions): Promise<HttpServer> {
    const host = options.host ?? '127.0.0.1';
    checkAuthSetting(host, options.auth ?? true);
    const server = createServer();
    const http = new HttpServer(options.hearth, server, options);
    server.on('request', (req, res) => void http.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        const where = `${host}:${options.port ?? 8080}`;
        if (err.code === 'EADDRINUSE')
          reject(
            new HttpStartError(
              `the HTTP port ${where} is already in use: pick another with --http-port 8081 (or http.port in hearth.yaml, HEARTH_HTTP_PORT)`,
              err.code,
            ),
          );
        else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
          reject(new HttpStartError(`cannot listen on ${where}: no such local address (check http.host)`, err.code));
        else if (err.code === 'EACCES') reject(new HttpStartError(`not allowed to listen on ${where}: pick a port above 1023 (http.port)`, err.code));
        else reject(err);
      };
      server.once('error', onError);
      server.listen(options.port ?? 8080, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    http.port = (server.address() as AddressInfo).port;
    server.on('error', (err) => http.log.error({ err }, 'HTTP server error'));
    http.log.info({ url: http.url, auth: http.auth.enabled }, 'HTTP API listening');
    return http;
  }

  get url(): string {
    return `http://${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  /** A token revoked in this process: its open streams end now. */
  private readonly onRevoked = (name: string) => this.sse.closeToken(name);

  /** Open event streams, the most bytes waiting for one, slow clients dropped (for tests and status). */
  eventStreams(): { open: number; maxBuffered: number; dropped: number } {
    return this.sse.stats();
  }

  get authEnabled(): boolean {
    return this.auth.enabled;
  }

  /** Stop listening, end event streams, interrupt turns still streaming. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      this.sessions.interruptAll();
      this.hearth.tokens.off('revoked', this.onRevoked);
      this.sse.closeAll();
      // Their streams are gone: their tools go with them, their waiting calls fail.
      this.flowTools.closeAll();
      await Promise.all(this.mounts.map(async (m) => m.close?.())).catch((err: unknown) =>
        this.log.warn({ err: errorOf(err) }, 'closing a mounted handler failed'),
      );
      this.server.closeIdleConnections();
      const force = setTimeout(() => this.server.closeAllConnections(), 2000);
      force.unref();
      await closed;
      clearTimeout(force);
    })();
    return this.closing;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    let principal: Principal | undefined;
    let token: string | undefined;
    let path = (req.url ?? '/').split('?')[0];
    try {
      let url: URL;
      try {
        url = new URL(req.url ?? '/', 'http://localhost');
      } catch {
        throw new HttpError(400, 'bad_request', 'the request target is not a valid URL path');
      }
      path = url.pathname;
      // OAuth metadata, token and registration: for clients of any origin (no ambient credentials ride on them).
      if (this.oauth.servesOpen(path, req.method)) {
        await this.oauth.handleOpen(req, res, path);
        return;
      }
      checkOrigin(req, this.auth.enabled, this.hearth.bridge.config.http.trustedOrigins);
      const mount = this.mounts.find((m) => path === m.path || path.startsWith(`${m.path}/`));
      if (mount) {
        // MCP takes the access tokens of its OAuth sign-in too (and its 401 says where to sign in).
        ({ principal, token } =
          mount.path === this.hearth.bridge.config.http.mcpPath
            ? this.oauth.authenticateMcp(req, () => this.auth.authenticate(req))
            : this.auth.authenticate(req));
        await mount.handle(req, res, principal, token);
        return;
      }
      const candidates = this.routes.filter((r) => r.regex.test(path));
      const open = candidates.length > 0 && candidates.every((r) => r.auth === false);
      // An open route (health) still learns who asks when a token comes along (or auth is off).
      const guarded = path.startsWith('/api/') || path.startsWith('/v1/');
      if (guarded && (!open || req.headers.authorization !== undefined || !this.auth.enabled)) ({ principal, token } = this.auth.authenticate(req));
      if (!candidates.length)
        throw notFound(`no such endpoint: ${req.method} ${path}${path.startsWith('/api/') ? '' : ' (the API lives under /api/, e.g. GET /api/health)'}`);
      const route = candidates.find((r) => r.method === req.method);
      if (!route) {
        const allow = [...new Set(candidates.map((r) => r.method))].join(', ');
        throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${path}; use ${allow}`, {}, { allow });
      }
      const m = route.regex.exec(path)!;
      const params: Record<string, string> = {};
      route.names.forEach((name, i) => {
        try {
          params[name] = decodeURIComponent(m[i + 1]);
        } catch {
          throw new HttpError(400, 'bad_request', `the path segment ${JSON.stringify(m[i + 1])} is not valid URI encoding`);
        }
      });
      let body: Promise<Record<string, unknown>> | undefined;
      const result = await route.handler({
        req,
        res,
        params,
        query: url.searchParams,
        principal: principal ?? ANONYMOUS,
        token,
        body: () => (body ??= readJsonObject(req, this.bodyLimit)),
      });
      if (res.headersSent || res.destroyed) return;
      if (result instanceof Reply) sendJson(res, result.status, result.body);
      else sendJson(res, 200, result ?? { ok: true });
    } catch (err) {
      this.fail(req, res, err);
    } finally {
      const log = res.statusCode >= 500 ? 'warn' : 'debug';
      this.log[log]({ method: req.method, path, status: res.statusCode, ms: Math.round(performance.now() - started), principal: principal?.id }, 'http');
    }
  }

  private fail(req: IncomingMessage, res: ServerResponse, err: unknown): void {
    const known = err instanceof HttpError ? err : undefined;
    if (!known) this.log.error({ err: errorOf(err), method: req.method, path: req.url }, 'HTTP handler failed');
    if (res.headersSent || res.destroyed) {
      // Mid-stream, or the client is gone: nothing better than ending it.
      res.end();
      return;
    }
    // Do not leave an unread upload behind (a 413 mid-stream, an early 401).
    if (!req.readableEnded) req.resume();
    const error = known ?? new HttpError(500, 'internal', `internal error: ${err instanceof Error ? err.message : String(err)}`);
    // The OpenAI-compatible endpoint answers errors as OpenAI clients read them.
    const openAi = (req.url ?? '').startsWith('/v1/');
    sendJson(res, error.status, openAi ? openAiErrorBody(error) : error.toJSON(), error.headers);
  }
}

/** Start the HTTP API (see HttpServer.start). */
export function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  return HttpServer.start(options);
}
