// Agent sessions over HTTP. A session belongs to the principal that opened
// it, and its id is that principal's name for it: each principal names its
// sessions in a namespace of its own (sessions.ts), so a guest's session named
// "kitchen" neither blocks nor reaches the owner's "kitchen", and another
// principal's session is not found. A prompt answers as an event stream (one SSE event per AgentEvent, then
// `result`), or, with ?stream=false or Accept: application/json, as one JSON
// answer once the turn is over (text in, text out: voice satellites).
import { randomUUID } from 'node:crypto';
import { scopedSessionId, type SessionManager } from '../agent/sessions.js';
import { NotPendingError, TurnActiveError, type AgentSession, type Permissions, type Turn } from '../agent/types.js';
import type { Principal } from '../tools/types.js';
import { oneOf, onlyFields, optionalBoolean, optionalString, requiredString } from './body.js';
import { badField, HttpError, notFound } from './errors.js';
import { Reply, type ApiContext, type ApiRequest, type Route } from './route.js';
import { TurnSummary } from '../agent/turn-summary.js';

const SESSION_ID_RE = /^[A-Za-z0-9_.:-]{1,128}$/;
const MAX_PROMPT = 32_000;
const MAX_SYSTEM_PROMPT = 100_000;

interface SessionInfo {
  /** The id the client knows it by (its name, or the one made for it). */
  name: string;
  permissions: Permissions;
  ephemeral: boolean;
  createdAt: string;
}

export class SessionsApi {
  private readonly info = new Map<string, SessionInfo>();
  private readonly turns = new Map<string, Turn>();

  constructor(private readonly ctx: ApiContext) {}

  private async agent(): Promise<SessionManager> {
    try {
      return await this.ctx.hearth.agent();
    } catch (err) {
      throw new HttpError(503, 'agent_unavailable', `the agent could not start: ${(err as Error).message}`);
    }
  }

  /** The principal's session it calls `id`, or 404 (another principal's session of that name is another session). */
  private async session(id: string, principal: Principal): Promise<AgentSession> {
    const session = (await this.agent()).get(scopedSessionId('http', principal.id, id));
    if (!session || session.principal.id !== principal.id) {
      throw notFound(`no session ${id}: open one with POST /api/sessions (to resume a saved one, pass its id there)`);
    }
    return session;
  }

  private describe(session: AgentSession) {
    const info = this.info.get(session.id);
    return {
      id: info?.name ?? session.id,
      model: session.model,
      tools: session.tools,
      permissions: info?.permissions ?? null,
      ephemeral: info?.ephemeral ?? null,
      createdAt: info?.createdAt ?? null,
      busy: this.turns.has(session.id),
    };
  }

  /** Interrupt every turn still running (server stop). */
  interruptAll(): void {
    for (const turn of this.turns.values()) turn.interrupt();
  }

  routes(): Route[] {
    return [
      { method: 'GET', path: '/api/sessions', handler: (r) => this.list(r) },
      { method: 'POST', path: '/api/sessions', handler: (r) => this.open(r) },
      { method: 'GET', path: '/api/sessions/:id', handler: async (r) => this.describe(await this.session(r.params.id, r.principal)) },
      { method: 'DELETE', path: '/api/sessions/:id', handler: (r) => this.close(r) },
      { method: 'POST', path: '/api/sessions/:id/prompt', handler: (r) => this.prompt(r) },
      { method: 'POST', path: '/api/sessions/:id/interrupt', handler: (r) => this.interrupt(r) },
      { method: 'POST', path: '/api/sessions/:id/permissions/:requestId', handler: (r) => this.permission(r) },
    ];
  }

  private async list({ principal }: ApiRequest) {
    const agent = await this.agent();
    // This principal's sessions of this door (another door's are not addressed here).
    return agent
      .all()
      .filter((s) => s.principal.id === principal.id && this.info.has(s.id))
      .map((s) => this.describe(s));
  }

  private async open({ principal, body }: ApiRequest) {
    const input = await body();
    onlyFields(input, ['permissions', 'ephemeral', 'systemPrompt', 'id']);
    // An HTTP client answers approvals through /api/approvals, so by default the session does not ask.
    const permissions = oneOf(input, 'permissions', ['jan', 'host'] as const) ?? 'host';
    const ephemeral = optionalBoolean(input, 'ephemeral') ?? false;
    const systemPrompt = optionalString(input, 'systemPrompt', { min: 1, max: MAX_SYSTEM_PROMPT });
    // The client's name for it (one is made when it gives none), in this principal's namespace.
    const name = optionalString(input, 'id', { pattern: SESSION_ID_RE, hint: 'a session id has 1 to 128 letters, digits, _ . : -' }) ?? randomUUID();
    const agent = await this.agent();
    const session = await agent.open({
      principal,
      permissions,
      ephemeral,
      ...(systemPrompt !== undefined ? { systemPrompt } : {}),
      id: scopedSessionId('http', principal.id, name),
      namespace: 'http',
    });
    if (!this.info.has(session.id)) this.info.set(session.id, { name, permissions, ephemeral, createdAt: new Date().toISOString() });
    const info = this.info.get(session.id)!;
    return new Reply(201, { id: name, model: session.model, tools: session.tools, permissions: info.permissions });
  }

  private async close({ params, principal }: ApiRequest) {
    const session = await this.session(params.id, principal);
    await (await this.agent()).close(session.id);
    this.info.delete(session.id);
    this.turns.delete(session.id);
    return { id: params.id, closed: true };
  }

  private wantsJson({ query, req }: ApiRequest): boolean {
    const stream = query.get('stream');
    if (stream !== null) {
      if (['false', '0', 'no'].includes(stream)) return true;
      if (['true', '1', 'yes', ''].includes(stream)) return false;
      throw badField('stream', `must be true or false, got ${JSON.stringify(stream)}`);
    }
    const accept = String(req.headers.accept ?? '').toLowerCase();
    return accept.includes('application/json') && !accept.includes('text/event-stream');
  }

  private async prompt(r: ApiRequest) {
    const { params, principal, query, res, token } = r;
    const asJson = this.wantsJson(r);
    const withEvents = ['true', '1', 'yes'].includes(query.get('events') ?? '');
    const input = await r.body();
    onlyFields(input, ['text']);
    const text = requiredString(input, 'text', { max: MAX_PROMPT });
    const session = await this.session(params.id, principal);
    const agent = await this.agent();
    let turn: Turn;
    try {
      turn = await agent.prompt(session, text);
    } catch (err) {
      if (err instanceof TurnActiveError || (err as { code?: string }).code === 'turn_active') {
        throw new HttpError(409, 'turn_active', (err as Error).message, { retryable: true });
      }
      throw err;
    }
    this.turns.set(session.id, turn);
    const settled = turn.result().finally(() => {
      if (this.turns.get(session.id) === turn) this.turns.delete(session.id);
    });
    // The client went away mid-turn: nobody is listening, so stop the turn.
    res.on('close', () => {
      if (!res.writableFinished) turn.interrupt();
    });
    const summary = new TurnSummary(withEvents);

    if (asJson) {
      for await (const event of turn) summary.add(event);
      const result = await settled;
      return { text: summary.text, ...summary.result(result), ...(withEvents ? { events: summary.events } : {}) };
    }

    // Not counted against the token's event-stream cap, but ended (and so the turn) if the token is revoked.
    const stream = this.ctx.sse.open(res, { principal: principal.id, token, counted: false });
    for await (const event of turn) {
      summary.add(event);
      stream.send(event.type, event);
    }
    const result = await settled;
    stream.send('result', summary.result(result));
    stream.end();
    return undefined;
  }

  private async interrupt({ params, principal }: ApiRequest) {
    const session = await this.session(params.id, principal);
    const turn = this.turns.get(session.id);
    turn?.interrupt();
    return { id: params.id, interrupted: !!turn };
  }

  private async permission({ params, principal, body }: ApiRequest) {
    const input = await body();
    onlyFields(input, ['decision']);
    const decision = oneOf(input, 'decision', ['allow_once', 'allow_always', 'deny'] as const, true);
    const session = await this.session(params.id, principal);
    try {
      // The answer is this principal's: it approves a confirm rule only if this principal may grant approvals.
      session.respondPermission(params.requestId, decision, principal);
    } catch (err) {
      if (err instanceof NotPendingError || (err as { code?: string }).code === 'not_pending') {
        throw new HttpError(404, 'not_pending', `no pending permission request ${params.requestId} in session ${params.id}`);
      }
      throw err;
    }
    return { id: params.id, requestId: params.requestId, decision };
  }
}
