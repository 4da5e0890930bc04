// Agent sessions for Hearth's front doors (chat, HTTP, Node-RED, voice): each
// gets the tool set its principal may use, and the new set between turns
// whenever devices change (the kit's setTools).
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { ToolSet } from '../tools/tool-set.js';
import type { Principal } from '../tools/types.js';
import type { AgentEvent, AgentSession, Engine, SessionOptions } from './types.js';

/**
 * Namespaces of session ids that one door alone opens, each id derived from a principal and the name it gave
 * (scopedSessionId), so no principal can claim or block another principal's session by choosing its name, and an
 * id chosen through another door (Node-RED, the CLI) can never land in them.
 */
export const SESSION_NAMESPACES = {
  /** The keyed conversations of the OpenAI-compatible and Wyoming doors (conversations.ts). */
  conversation: 'conv-',
  /** The sessions of the HTTP API (/api/sessions), named by their client. */
  http: 'api-',
} as const;

export type SessionNamespace = keyof typeof SESSION_NAMESPACES;

export const CONVERSATION_ID_PREFIX = SESSION_NAMESPACES.conversation;

/**
 * The session id of the session `principalId` calls `name` in a door's namespace: stable, and never another
 * principal's. An HTTP session's reads as its principal and name (`api-http:anna/kitchen`: audit rows name it so;
 * a name has no `/`, so the last one splits it); a conversation key is any text, so it is hashed.
 */
export function scopedSessionId(namespace: SessionNamespace, principalId: string, name: string): string {
  if (namespace === 'http') return `${SESSION_NAMESPACES.http}${principalId}/${name}`;
  return `${SESSION_NAMESPACES[namespace]}${createHash('sha256').update(`${principalId}\u0000${name}`).digest('hex').slice(0, 32)}`;
}

export interface OpenSessionOptions extends Omit<SessionOptions, 'tools' | 'principal'> {
  principal: Principal;
  /** The namespace the id is in (the door that alone opens ids there); none for an id of no namespace. */
  namespace?: SessionNamespace;
}

export interface SessionManagerEvents {
  /** Every event of every session, for live pages and logs. */
  event: [sessionId: string, event: AgentEvent, turnId: string];
}

/** A session id in a door's namespace, asked for through another door. */
export class ReservedSessionIdError extends Error {
  readonly code = 'reserved_session_id';
  constructor(id: string, prefix: string) {
    super(
      `session ids starting with "${prefix}" are kept for ${prefix === CONVERSATION_ID_PREFIX ? 'the conversations of the OpenAI-compatible and Wyoming doors' : 'the sessions of the HTTP API'}; choose another id than ${JSON.stringify(id.slice(0, 80))}`,
    );
    this.name = 'ReservedSessionIdError';
  }
}

export class SessionManager extends EventEmitter<SessionManagerEvents> {
  private readonly sessions = new Map<string, AgentSession>();
  private readonly busy = new Set<string>();
  private readonly stale = new Set<string>();

  constructor(
    readonly engine: Engine,
    private readonly tools: ToolSet,
  ) {
    super();
    tools.on('changed', () => {
      for (const [id, s] of this.sessions) {
        if (this.busy.has(id)) this.stale.add(id);
        else s.setTools(this.tools.forPrincipal(s.principal));
      }
    });
  }

  async open({ namespace, ...options }: OpenSessionOptions): Promise<AgentSession> {
    const id = options.id;
    for (const [name, prefix] of Object.entries(SESSION_NAMESPACES)) {
      if (id?.startsWith(prefix) && namespace !== name) throw new ReservedSessionIdError(id, prefix);
    }
    const existing = options.id ? this.sessions.get(options.id) : undefined;
    if (existing) {
      if (existing.principal.id !== options.principal.id) throw new Error(`session ${options.id} belongs to another principal`);
      return existing;
    }
    const session = await this.engine.createSession({ ...options, tools: this.tools.forPrincipal(options.principal) });
    this.sessions.set(session.id, session);
    session.on('event', (event, turnId) => {
      if (event.type === 'step') this.busy.add(session.id);
      if (event.type === 'done' || event.type === 'error') this.settled(session);
      this.emit('event', session.id, event, turnId);
    });
    return session;
  }

  /** Prompt and keep track of the turn, so the tool set is refreshed only between turns. */
  async prompt(session: AgentSession, text: string) {
    const turn = await session.prompt(text);
    this.busy.add(session.id);
    void turn.result().then(() => this.settled(session));
    return turn;
  }

  private settled(session: AgentSession): void {
    this.busy.delete(session.id);
    if (this.stale.delete(session.id)) session.setTools(this.tools.forPrincipal(session.principal));
  }

  get(id: string): AgentSession | undefined {
    return this.sessions.get(id);
  }

  all(): AgentSession[] {
    return [...this.sessions.values()];
  }

  async close(id: string): Promise<void> {
    const s = this.sessions.get(id);
    this.sessions.delete(id);
    // An engine that keeps its own map of sessions forgets this one too (else every closed session stays in memory).
    const engine = this.engine as Partial<{ closeSession(id: string): Promise<void> }>;
    if (s && typeof engine.closeSession === 'function') await engine.closeSession(id);
    else await s?.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.close(id)));
  }
}
