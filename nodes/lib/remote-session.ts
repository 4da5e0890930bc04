// hearth-session on a bridge connected to a daemon: the same prompts, outputs
// and status as the embedded controller, but every turn runs in the daemon
// (POST /api/sessions, then /prompt answered as an event stream) as the
// principal of the bridge's token, so policy, approvals and audit are the
// daemon's. A permission request is previewed with the daemon's policy
// (POST /api/policy/test) and, when a confirm rule holds it, asked of a
// person through the bridge's hearth-approval nodes; the answer goes back as
// the token's principal, and the daemon lets it satisfy a confirm rule only if
// that principal may grant approvals.
import { randomUUID } from 'node:crypto';
import type { AgentEvent, Permissions, TurnResult } from '../../dist/agent/types.js';
import type { BridgeController } from './bridge.js';
import { DaemonError, type DaemonClient } from './daemon.js';
import type { RemoteApprovalHub } from './remote-approvals.js';
import {
  SessionController,
  SessionError,
  TurnSummary,
  type EventInfo,
  type PromptRequest,
  type SessionHooks,
  type SessionSettings,
  type TurnOutcome,
} from './session.js';

interface RemoteSlot {
  sessionId: string;
  queue: Promise<unknown>;
  queued: number;
  /** Set while a turn of this session runs: stops it. */
  interrupt?: () => void;
  lastUsed: number;
}

const path = (id: string) => `/api/sessions/${encodeURIComponent(id)}`;

export class RemoteSessionController {
  /** The embedded controller's rules for principals and session ids, shared so both modes name sessions alike. */
  private readonly naming: SessionController;
  private readonly remoteSlots = new Map<string, RemoteSlot>();
  private readonly running = new Set<() => void>();
  private turnCount = 0;
  private waitingCount = 0;
  private isClosed = false;

  constructor(
    private readonly remoteBridge: BridgeController,
    private readonly daemon: DaemonClient,
    private readonly remoteSettings: SessionSettings,
    private readonly remoteHooks: SessionHooks = {},
  ) {
    this.naming = new SessionController(remoteBridge, remoteSettings);
  }

  private get askMode() {
    return this.remoteSettings.ask ?? 'confirm';
  }

  private activityNow(last?: 'done' | 'error' | 'interrupted', error?: string): void {
    this.remoteHooks.activity?.({ turns: this.turnCount, waiting: this.waitingCount, ...(last ? { last } : {}), ...(error ? { error } : {}) });
  }

  /** The daemon decides who the token is: msg.principal may only name that principal. */
  private tokenPrincipal(raw: unknown): string {
    const own = this.daemon.principal;
    if (raw === undefined || raw === null || raw === '') return own ?? '';
    const asked = this.naming.principalOf(raw).id;
    if (own && asked !== own) {
      throw new SessionError(
        `on a bridge connected to a daemon, sessions run as the token's principal (${own}); msg.principal ${JSON.stringify(asked)} cannot change that (use a token of that principal)`,
        'bad_principal',
      );
    }
    return asked;
  }

  private permissionsNow(): Permissions {
    if (this.askMode === 'never') return 'host';
    if (this.askMode === 'always') return 'jan';
    return this.remoteBridge.hasApprovers ? 'jan' : 'host';
  }

  private openBody(extra: Record<string, unknown>): Record<string, unknown> {
    const prompt = this.remoteSettings.systemPrompt?.trim() ? { systemPrompt: this.remoteSettings.systemPrompt } : {};
    return { permissions: this.permissionsNow(), ...prompt, ...extra };
  }

  async prompt(req: PromptRequest): Promise<TurnOutcome> {
    if (this.isClosed) throw new SessionError('the node is closing', 'closed');
    const text = typeof req.text === 'string' ? req.text : req.text === undefined || req.text === null ? '' : JSON.stringify(req.text);
    if (!text.trim()) throw new SessionError('msg.payload must be the prompt: a non-empty string', 'bad_prompt');
    if (text.length > 32_000) throw new SessionError('the prompt is longer than 32000 characters', 'bad_prompt');
    const principal = this.tokenPrincipal(req.principal);

    if (this.remoteSettings.ephemeral) {
      const opened = await this.daemon.request<{ id: string }>('POST', '/api/sessions', this.openBody({ ephemeral: true }));
      try {
        return await this.run(
          opened.id,
          principal,
          text,
          (stop) => this.running.add(stop),
          (stop) => this.running.delete(stop),
        );
      } finally {
        await this.daemon.request('DELETE', path(opened.id)).catch(() => undefined);
      }
    }

    const sessionId = this.naming.sessionIdOf(req.session, req.topic);
    let slot = this.remoteSlots.get(sessionId);
    if (!slot) {
      slot = { sessionId, queue: Promise.resolve(), queued: 0, lastUsed: Date.now() };
      this.remoteSlots.set(sessionId, slot);
      await this.evict();
    }
    const s = slot;
    s.queued++;
    const mine = s.queue.then(async () => {
      if (this.isClosed) throw new SessionError('the node is closing', 'closed');
      await this.daemon.request('POST', '/api/sessions', this.openBody({ id: sessionId }));
      return this.run(
        sessionId,
        principal,
        text,
        (stop) => (s.interrupt = stop),
        () => (s.interrupt = undefined),
      );
    });
    s.queue = mine
      .catch(() => undefined)
      .finally(() => {
        s.queued--;
        s.lastUsed = Date.now();
      });
    return mine;
  }

  /** The daemon stopped (or the connection broke) while a turn ran. */
  private wentAway(detail: string): SessionError {
    return new SessionError(`the hearth daemon at ${this.daemon.base} went away during the turn (${detail}); what was done is in its audit log`, 'daemon');
  }

  /** Close the least recently used idle sessions in the daemon beyond the node's limit, as the embedded node does. */
  private async evict(): Promise<void> {
    const max = this.remoteSettings.maxSessions ?? 100;
    if (this.remoteSlots.size <= max) return;
    const idle = [...this.remoteSlots.values()].filter((s) => s.queued === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const s of idle.slice(0, this.remoteSlots.size - max)) {
      this.remoteSlots.delete(s.sessionId);
      await this.daemon.request('DELETE', path(s.sessionId)).catch(() => undefined);
    }
  }

  private async run(
    sessionId: string,
    principalId: string,
    text: string,
    started: (stop: () => void) => void,
    ended: (stop: () => void) => void,
  ): Promise<TurnOutcome> {
    const turnId = randomUUID();
    const abort = new AbortController();
    const stop = () => {
      // Ask the daemon to stop the turn (it answers with the turn's end); the stream stays open for it.
      this.daemon.request('POST', `${path(sessionId)}/interrupt`).catch(() => abort.abort());
    };
    started(stop);
    const summary = new TurnSummary();
    const asked = new Set<string>();
    let result: TurnResult | undefined;
    let failure: unknown;
    let principal = principalId || this.daemon.principal || '';
    const hub = (await this.remoteBridge.approvalHub()) as RemoteApprovalHub;
    this.turnCount++;
    this.activityNow();
    try {
      await this.daemon.stream(
        `${path(sessionId)}/prompt`,
        { text },
        (name, data) => {
          if (name === 'result') {
            const r = data as { stopReason?: TurnResult['stopReason']; error?: string };
            result = { stopReason: r.stopReason ?? 'error', ...(r.error !== undefined ? { error: r.error } : {}) };
            return;
          }
          const event = data as AgentEvent;
          if (!event || typeof event !== 'object' || typeof event.type !== 'string') return;
          principal ||= this.daemon.principal ?? '';
          summary.add(event);
          const info: EventInfo = { sessionId, turnId, principal };
          try {
            this.remoteHooks.event?.(event, info);
          } catch {
            // a dashboard's failure is not the turn's
          }
          if (event.type === 'permission_request') void this.onPermission(hub, sessionId, principal, event, asked);
          if (event.type === 'tool_request_cancelled' && asked.delete(event.request_id)) {
            hub.cancelPermission(event.request_id);
            this.waitingCount--;
            this.activityNow();
          }
        },
        abort.signal,
      );
    } catch (err) {
      failure = err;
    } finally {
      this.turnCount--;
      for (const id of asked) {
        hub.cancelPermission(id);
        this.waitingCount--;
      }
      asked.clear();
      ended(stop);
    }
    if (failure !== undefined && abort.signal.aborted) result = { stopReason: 'interrupted' };
    else if (failure !== undefined || result === undefined) {
      const err =
        failure === undefined
          ? this.wentAway("its answer ended before the turn's result")
          : failure instanceof DaemonError
            ? new SessionError(failure.message, failure.status === 401 || failure.status === 403 ? 'refused' : 'daemon')
            : this.wentAway((failure as Error).message);
      this.activityNow('error', (err as Error).message);
      throw err;
    }
    const done = result ?? { stopReason: 'interrupted' as const };
    this.activityNow(done.stopReason === 'completed' ? 'done' : done.stopReason, done.error);
    return {
      text: summary.text,
      sessionId,
      turnId,
      principal,
      stopReason: done.stopReason,
      ...(done.error !== undefined ? { error: done.error } : {}),
      toolCalls: summary.toolCalls,
      auditIds: summary.auditIds,
      approvalIds: summary.approvalIds,
    };
  }

  private async onPermission(
    hub: RemoteApprovalHub,
    sessionId: string,
    principal: string,
    event: Extract<AgentEvent, { type: 'permission_request' }>,
    asked: Set<string>,
  ): Promise<void> {
    const name = event.tool_name.replace(/^host__/, '');
    const respond = (decision: 'allow_once' | 'allow_always' | 'deny') => {
      this.daemon.request('POST', `${path(sessionId)}/permissions/${encodeURIComponent(event.request_id)}`, { decision }).catch((err: Error) => {
        // not pending any more: the turn ended meanwhile
        if (!(err instanceof DaemonError && err.status === 404)) this.remoteHooks.warn?.(`${name}: the answer did not reach the daemon: ${err.message}`);
      });
    };
    // The daemon's policy for the token's principal: allow and deny the handler decides alone;
    // a confirm rule (or a preview that failed) needs a person.
    const preview =
      this.askMode === 'always'
        ? undefined
        : await this.daemon
            .request<{ decision?: { effect?: string; reason?: string } }>('POST', '/api/policy/test', { tool: name, args: event.args ?? {} })
            .catch(() => undefined);
    const effect = preview?.decision?.effect;
    const reason = preview?.decision?.reason;
    const needsPerson = this.askMode === 'always' || (effect !== 'allow' && effect !== 'deny');
    if (!needsPerson) return respond('allow_once');
    if (!hub.hasApprovers) {
      this.remoteHooks.warn?.(`${name}: nobody to ask (no hearth-approval node on this bridge): denied`);
      return respond('deny');
    }
    asked.add(event.request_id);
    this.waitingCount++;
    this.activityNow();
    hub.askPermission(
      {
        id: event.request_id,
        principal,
        tool: name,
        args: event.args ?? {},
        reason: effect === 'confirm' && reason ? reason : `session ${sessionId} asks before ${name}`,
        session: sessionId,
        offersAlways: event.offers_always,
      },
      (decision) => {
        if (asked.delete(event.request_id)) {
          this.waitingCount--;
          this.activityNow();
        }
        respond(decision);
      },
    );
  }

  interrupt(req: { session?: unknown; topic?: unknown }): number {
    if (this.remoteSettings.ephemeral) {
      for (const stop of this.running) stop();
      return this.running.size;
    }
    const slot = this.remoteSlots.get(this.naming.sessionIdOf(req.session, req.topic));
    if (!slot?.interrupt) return 0;
    slot.interrupt();
    return 1;
  }

  async reset(req: { session?: unknown; topic?: unknown }): Promise<boolean> {
    const id = this.naming.sessionIdOf(req.session, req.topic);
    const slot = this.remoteSlots.get(id);
    if (!slot) return false;
    slot.interrupt?.();
    await slot.queue;
    this.remoteSlots.delete(id);
    await this.daemon.request('DELETE', path(id)).catch(() => undefined);
    return true;
  }

  async close(): Promise<void> {
    this.isClosed = true;
    for (const stop of this.running) stop();
    for (const s of this.remoteSlots.values()) s.interrupt?.();
    await Promise.all([...this.remoteSlots.values()].map((s) => s.queue));
    // The daemon keeps a saved session's thread; closing frees its memory there.
    await Promise.all([...this.remoteSlots.keys()].map((id) => this.daemon.request('DELETE', path(id)).catch(() => undefined)));
    this.remoteSlots.clear();
  }
}
