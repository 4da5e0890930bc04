// A session's permission requests waiting for a hearth-approval node: the same bookkeeping whether the session
// runs in this Node-RED (ApprovalHub) or in the daemon (RemoteApprovalHub). Each waits at most `ttlMs`, then
// is answered deny (expired); every end is announced as a 'decided' outcome.
import type { ApprovalOutcome, ApprovalRequest, Decision } from './approvals.js';

interface PermissionWait {
  request: ApprovalRequest;
  respond: (decision: Decision) => void;
  timer: NodeJS.Timeout;
}

export class PermissionWaits {
  private readonly waits = new Map<string, PermissionWait>();

  constructor(
    private readonly ttlMs: () => number,
    private readonly announce: { requested(request: ApprovalRequest): void; decided(outcome: ApprovalOutcome): void },
  ) {}

  requests(): ApprovalRequest[] {
    return [...this.waits.values()].map((w) => w.request);
  }

  get(id: string): ApprovalRequest | undefined {
    return this.waits.get(id)?.request;
  }

  ask(request: Omit<ApprovalRequest, 'kind' | 'createdAt' | 'expiresAt'>, respond: (decision: Decision) => void): ApprovalRequest {
    const now = Date.now();
    const ttl = this.ttlMs();
    const full: ApprovalRequest = { ...request, kind: 'permission', createdAt: new Date(now).toISOString(), expiresAt: new Date(now + ttl).toISOString() };
    const timer = setTimeout(() => this.finish(full.id, 'deny', 'expired', null), ttl);
    timer.unref();
    this.waits.set(full.id, { request: full, respond, timer });
    this.announce.requested(full);
    return full;
  }

  /** The turn ended (or the session closed) before anyone answered. */
  cancel(id: string): void {
    const wait = this.waits.get(id);
    if (!wait) return;
    clearTimeout(wait.timer);
    this.waits.delete(id);
    this.announce.decided({ id, kind: 'permission', status: 'cancelled', by: null, request: wait.request });
  }

  /** Answer the session and say so; false when nothing waits under that id. */
  finish(id: string, decision: Decision, status: ApprovalOutcome['status'], by: string | null): boolean {
    const wait = this.waits.get(id);
    if (!wait) return false;
    clearTimeout(wait.timer);
    this.waits.delete(id);
    try {
      wait.respond(decision);
    } catch {
      // the turn is gone: the answer has no one to go to
    }
    this.announce.decided({ id, kind: 'permission', status, by, request: wait.request });
    return true;
  }

  /** Every wait answered deny (the hub closes). */
  denyAll(status: ApprovalOutcome['status']): void {
    for (const id of [...this.waits.keys()]) this.finish(id, 'deny', status, null);
  }
}
