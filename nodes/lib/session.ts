// The controller behind hearth-session: one agent session per key
// (msg.session, else msg.topic), kept between messages unless ephemeral;
// prompts to one session run one after another; a person is asked through
// the bridge's approval hub when a confirm rule applies (or always).
import type { AgentEvent, AgentSession, Permissions, Turn, TurnResult } from '../../dist/agent/types.js';
import type { SessionManager } from '../../dist/agent/sessions.js';
import type { Hearth } from '../../dist/hearth.js';
import type { Principal } from '../../dist/tools/types.js';
import type { BridgeController } from './bridge.js';
import { TurnSummary, type ToolCallSummary } from '../../dist/agent/turn-summary.js';
export { TurnSummary, type ToolCallSummary };

export type AskMode = 'confirm' | 'always' | 'never';

export const PRINCIPAL_RE = /^(voice|chat|flow|mcp|cli|http|agent):[A-Za-z0-9_.@:-]{1,100}$/;
const SESSION_ID_RE = /^[A-Za-z0-9_.:-]{1,128}$/;
const ROLE_RE = /^[\p{L}\p{N}_.-]{1,64}$/u;
const MAX_PROMPT = 32_000;

export interface SessionSettings {
  nodeId: string;
  /** Who asks when msg.principal does not say; default flow:<node id>. */
  principal?: string;
  /** Roles for the principal, besides its stored ones (hearth policy roles). */
  roles?: string[];
  /** A fresh session per message, nothing saved. */
  ephemeral?: boolean;
  /** Replaces Hearth's system prompt. */
  systemPrompt?: string;
  /** confirm: ask a person when a confirm rule holds the action; always: before every action; never: the policy decides alone. */
  ask?: AskMode;
  /** Sessions kept per node (least recently used ones are closed beyond it); default 100. */
  maxSessions?: number;
}

export interface PromptRequest {
  text: unknown;
  principal?: unknown;
  session?: unknown;
  topic?: unknown;
}

export interface TurnOutcome {
  text: string;
  sessionId: string;
  turnId: string;
  principal: string;
  stopReason: TurnResult['stopReason'];
  error?: string;
  toolCalls: ToolCallSummary[];
  auditIds: number[];
  /** Approval ids of calls a confirm rule held (grant them, then ask again). */
  approvalIds: string[];
}

export interface EventInfo {
  sessionId: string;
  turnId: string;
  principal: string;
}

export interface Activity {
  turns: number;
  waiting: number;
  last?: 'done' | 'error' | 'interrupted';
  error?: string;
}

export interface SessionHooks {
  /** Every event of every turn (the node's second output). */
  event?(event: AgentEvent, info: EventInfo): void;
  /** Turns running and permission requests waiting changed (the node's status). */
  activity?(activity: Activity): void;
  warn?(text: string): void;
}

export class SessionError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'SessionError';
  }
}

interface Slot {
  sessionId: string;
  principal: string;
  /** The chain of prompts to this session. */
  queue: Promise<unknown>;
  queued: number;
  turn?: Turn;
  lastUsed: number;
}

export class SessionController {
  private readonly slots = new Map<string, Slot>();
  private readonly ephemeralTurns = new Set<Turn>();
  private turns = 0;
  private waiting = 0;
  private closed = false;

  constructor(
    private readonly bridge: BridgeController,
    private readonly settings: SessionSettings,
    private readonly hooks: SessionHooks = {},
  ) {}

  private get ask(): AskMode {
    return this.settings.ask ?? 'confirm';
  }

  /** Who asks: msg.principal (an id, or {id, roles}), else the node's principal. */
  principalOf(raw: unknown): Principal {
    let id = this.settings.principal || `flow:${this.settings.nodeId}`;
    let roles = this.settings.roles ?? [];
    if (typeof raw === 'string' && raw.trim()) id = raw.trim();
    else if (raw && typeof raw === 'object' && typeof (raw as { id?: unknown }).id === 'string') {
      id = (raw as { id: string }).id.trim();
      const r = (raw as { roles?: unknown }).roles;
      if (Array.isArray(r)) roles = r.filter((x): x is string => typeof x === 'string');
    } else if (raw !== undefined && raw !== null && raw !== '') {
      throw new SessionError('msg.principal must be a principal id (chat:alice) or {id, roles}', 'bad_principal');
    }
    if (!PRINCIPAL_RE.test(id)) {
      throw new SessionError(`principal ${JSON.stringify(id)}: a principal looks like chat:alice, voice:kitchen or flow:<node id>`, 'bad_principal');
    }
    const bad = roles.find((r) => !ROLE_RE.test(r));
    if (bad !== undefined) throw new SessionError(`role ${JSON.stringify(bad)}: roles are letters, digits, _ . -`, 'bad_principal');
    return { id, roles: [...new Set(roles)] };
  }

  /** The session id for a message: msg.session as given, else one per msg.topic of this node. */
  sessionIdOf(session: unknown, topic: unknown): string {
    if (session !== undefined && session !== null && session !== '') {
      const id = String(session);
      if (!SESSION_ID_RE.test(id)) throw new SessionError('msg.session: a session id has 1 to 128 letters, digits, _ . : -', 'bad_session');
      return id;
    }
    const key = topic === undefined || topic === null || topic === '' ? 'default' : String(topic);
    const slug = key.replace(/[^A-Za-z0-9_.:-]+/g, '_').slice(0, 80) || 'default';
    return `flow-${this.settings.nodeId.replace(/[^A-Za-z0-9_.:-]+/g, '_')}-${slug}`;
  }

  private emitActivity(last?: Activity['last'], error?: string): void {
    this.hooks.activity?.({ turns: this.turns, waiting: this.waiting, ...(last ? { last } : {}), ...(error ? { error } : {}) });
  }

  private permissions(): Permissions {
    if (this.ask === 'never') return 'host';
    if (this.ask === 'always') return 'jan';
    return this.bridge.hasApprovers ? 'jan' : 'host';
  }

  /** Run one prompt; resolves when the turn is over (also when interrupted). Rejects on bad input or an engine error. */
  async prompt(req: PromptRequest): Promise<TurnOutcome> {
    if (this.closed) throw new SessionError('the node is closing', 'closed');
    const text = typeof req.text === 'string' ? req.text : req.text === undefined || req.text === null ? '' : JSON.stringify(req.text);
    if (!text.trim()) throw new SessionError('msg.payload must be the prompt: a non-empty string', 'bad_prompt');
    if (text.length > MAX_PROMPT) throw new SessionError(`the prompt is longer than ${MAX_PROMPT} characters`, 'bad_prompt');
    const principal = this.principalOf(req.principal);
    const hearth = await this.bridge.ready();
    const agent = await hearth.agent();

    if (this.settings.ephemeral) {
      const session = await agent.open({ principal, permissions: this.permissions(), ephemeral: true, ...this.systemPrompt() });
      let mine: Turn | undefined;
      try {
        return await this.run(hearth, agent, session, text, (turn) => {
          mine = turn;
          this.ephemeralTurns.add(turn);
        });
      } finally {
        if (mine) this.ephemeralTurns.delete(mine);
        await agent.close(session.id).catch(() => undefined);
      }
    }

    const sessionId = this.sessionIdOf(req.session, req.topic);
    let slot = this.slots.get(sessionId);
    if (slot && slot.principal !== principal.id) {
      throw new SessionError(`session ${sessionId} belongs to ${slot.principal}, not ${principal.id}`, 'wrong_principal');
    }
    if (!slot) {
      slot = { sessionId, principal: principal.id, queue: Promise.resolve(), queued: 0, lastUsed: Date.now() };
      this.slots.set(sessionId, slot);
      await this.evict(agent);
    }
    const s = slot;
    s.queued++;
    const mine = s.queue.then(async () => {
      if (this.closed) throw new SessionError('the node is closing', 'closed');
      const session = await agent.open({ principal, permissions: this.permissions(), id: sessionId, ...this.systemPrompt() });
      return this.run(hearth, agent, session, text, (turn) => (s.turn = turn));
    });
    s.queue = mine
      .catch(() => undefined)
      .finally(() => {
        s.queued--;
        s.turn = undefined;
        s.lastUsed = Date.now();
      });
    return mine;
  }

  private systemPrompt(): { systemPrompt?: string } {
    return this.settings.systemPrompt?.trim() ? { systemPrompt: this.settings.systemPrompt } : {};
  }

  /** Close the least recently used idle sessions beyond the limit. */
  private async evict(agent: SessionManager): Promise<void> {
    const max = this.settings.maxSessions ?? 100;
    if (this.slots.size <= max) return;
    const idle = [...this.slots.values()].filter((s) => s.queued === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const s of idle.slice(0, this.slots.size - max)) {
      this.slots.delete(s.sessionId);
      await agent.close(s.sessionId).catch(() => undefined);
    }
  }

  private async run(hearth: Hearth, agent: SessionManager, session: AgentSession, text: string, started: (turn: Turn) => void): Promise<TurnOutcome> {
    const turn = await agent.prompt(session, text);
    started(turn);
    this.turns++;
    this.emitActivity();
    const info: EventInfo = { sessionId: session.id, turnId: turn.id, principal: session.principal.id };
    const summary = new TurnSummary();
    const asked = new Set<string>();
    const hub = await this.bridge.approvals();
    let result: TurnResult;
    try {
      for await (const event of turn) {
        summary.add(event);
        try {
          this.hooks.event?.(event, info);
        } catch {
          // a dashboard's failure is not the turn's
        }
        if (event.type === 'permission_request') this.onPermission(hearth, hub, session, event, asked);
        if (event.type === 'tool_request_cancelled' && asked.delete(event.request_id)) {
          hub.cancelPermission(event.request_id);
          this.waiting--;
          this.emitActivity();
        }
      }
      result = await turn.result();
    } finally {
      for (const id of asked) {
        hub.cancelPermission(id);
        this.waiting--;
      }
      this.turns--;
    }
    const last = result.stopReason === 'completed' ? 'done' : result.stopReason;
    this.emitActivity(last, result.error);
    return {
      text: summary.text,
      sessionId: session.id,
      turnId: turn.id,
      principal: session.principal.id,
      stopReason: result.stopReason,
      ...(result.error !== undefined ? { error: result.error } : {}),
      toolCalls: summary.toolCalls,
      auditIds: summary.auditIds,
      approvalIds: summary.approvalIds,
    };
  }

  private onPermission(
    hearth: Hearth,
    hub: Awaited<ReturnType<BridgeController['approvals']>>,
    session: AgentSession,
    event: Extract<AgentEvent, { type: 'permission_request' }>,
    asked: Set<string>,
  ): void {
    const name = event.tool_name.replace(/^host__/, '');
    const preview = hearth.tools.preview(name, event.args, session.principal);
    const respond = (d: 'allow_once' | 'allow_always' | 'deny') => {
      try {
        session.respondPermission(event.request_id, d);
      } catch {
        // the turn ended meanwhile
      }
    };
    // Only a person's answer may approve a call a confirm rule holds (or one the
    // policy cannot preview); allow and deny the policy decides in the handler.
    const needsPerson = this.ask === 'always' || (preview?.effect !== 'allow' && preview?.effect !== 'deny');
    if (!needsPerson) return respond('allow_once');
    if (!hub.hasApprovers) {
      this.hooks.warn?.(`${name}: nobody to ask (no hearth-approval node on this bridge): denied`);
      return respond('deny');
    }
    asked.add(event.request_id);
    this.waiting++;
    this.emitActivity();
    hub.askPermission(
      {
        id: event.request_id,
        principal: session.principal.id,
        tool: name,
        args: event.args,
        reason: preview?.effect === 'confirm' ? preview.reason : `session ${session.id} asks before ${name}`,
        session: session.id,
        offersAlways: event.offers_always,
      },
      (decision) => {
        if (asked.delete(event.request_id)) {
          this.waiting--;
          this.emitActivity();
        }
        respond(decision);
      },
    );
  }

  /** Stop the running turn of the message's session (all of this node's turns when ephemeral). Returns how many. */
  interrupt(req: { session?: unknown; topic?: unknown }): number {
    if (this.settings.ephemeral) {
      let n = 0;
      for (const t of this.ephemeralTurns) {
        t.interrupt();
        n++;
      }
      return n;
    }
    const slot = this.slots.get(this.sessionIdOf(req.session, req.topic));
    if (!slot?.turn) return 0;
    slot.turn.interrupt();
    return 1;
  }

  /** Forget a session (msg.reset): the next message starts a new conversation. */
  async reset(req: { session?: unknown; topic?: unknown }): Promise<boolean> {
    const id = this.sessionIdOf(req.session, req.topic);
    const slot = this.slots.get(id);
    if (!slot) return false;
    slot.turn?.interrupt();
    await slot.queue;
    this.slots.delete(id);
    const hearth = await this.bridge.ready().catch(() => undefined);
    const agent = hearth ? await hearth.agent().catch(() => undefined) : undefined;
    await agent?.close(id).catch(() => undefined);
    return true;
  }

  /** Interrupt every turn and close this node's sessions. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.ephemeralTurns) t.interrupt();
    for (const s of this.slots.values()) s.turn?.interrupt();
    await Promise.all([...this.slots.values()].map((s) => s.queue));
    const hearth = await Promise.race([this.bridge.ready().catch(() => undefined), new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))]);
    const agent = hearth ? await hearth.agent().catch(() => undefined) : undefined;
    if (agent) await Promise.all([...this.slots.keys()].map((id) => agent.close(id).catch(() => undefined)));
    this.slots.clear();
  }
}
