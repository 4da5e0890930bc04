// Everything that waits for a person, in one place per bridge:
// - permission requests of agent sessions (the turn waits for an answer), and
// - confirm-policy holds (SqliteApprovals: the call was refused with an
//   approval id; once granted, the same call goes through).
// hearth-approval nodes show them (event `requested`) and decide them.
// Holds written by another process on the same database (`hearth start`,
// `hearth call`) are found by polling while someone is listening.
import { EventEmitter } from 'node:events';
import type { Approval, SqliteApprovals } from '../../dist/policy/approvals.js';
import { PermissionWaits } from './permission-waits.js';

export type Decision = 'allow_once' | 'allow_always' | 'deny';
export const DECISIONS: readonly Decision[] = ['allow_once', 'allow_always', 'deny'];

export interface ApprovalRequest {
  /** The id to answer with: a session's permission request id, or an approval id. */
  id: string;
  /** permission: a session asks before an action; confirm: a policy rule holds a call. */
  kind: 'permission' | 'confirm';
  principal: string;
  tool: string;
  args: Record<string, unknown>;
  reason: string;
  session: string | null;
  offersAlways: boolean;
  createdAt: string;
  expiresAt: string;
}

export interface ApprovalOutcome {
  id: string;
  kind: 'permission' | 'confirm';
  /** What happened: a decision, or expired / cancelled (the turn ended) / decided elsewhere. */
  status: Decision | 'granted' | 'denied' | 'expired' | 'cancelled' | 'used' | 'pending';
  by: string | null;
  request?: ApprovalRequest;
}

export class NotPendingError extends Error {
  readonly code = 'not_pending';
  constructor(id: string, detail = '') {
    super(`no pending approval or permission request ${JSON.stringify(id)}${detail ? `: ${detail}` : ''}`);
    this.name = 'NotPendingError';
  }
}

export interface ApprovalHubEvents {
  requested: [ApprovalRequest];
  decided: [ApprovalOutcome];
}

export interface ApprovalHubOptions {
  /** How long a permission request waits for a person before it is denied; default 5 min. */
  permissionTtlMs?: number;
  /** How often to look for holds written by other processes while approvers listen; default 2 s. */
  pollMs?: number;
}

function fromApproval(a: Approval): ApprovalRequest {
  return {
    id: a.id,
    kind: 'confirm',
    principal: a.principal,
    tool: a.tool,
    args: a.args,
    reason: a.reason,
    session: null,
    offersAlways: false,
    createdAt: new Date(a.createdAt).toISOString(),
    expiresAt: new Date(a.expiresAt).toISOString(),
  };
}

export class ApprovalHub extends EventEmitter<ApprovalHubEvents> {
  private readonly permissions = new PermissionWaits(() => this.permissionTtlMs, {
    requested: (r) => this.emit('requested', r),
    decided: (o) => this.emit('decided', o),
  });
  private readonly holds = new Map<string, ApprovalRequest>();
  private approvers = 0;
  private pollTimer?: NodeJS.Timeout;
  private readonly permissionTtlMs: number;
  private readonly pollMs: number;
  private closed = false;

  private readonly onRequested = (a: Approval) => this.hold(a);
  private readonly onDecided = (a: Approval) => this.released(a);

  constructor(
    private readonly approvals: SqliteApprovals,
    options: ApprovalHubOptions = {},
  ) {
    super();
    this.permissionTtlMs = options.permissionTtlMs ?? approvals.ttlMs ?? 5 * 60_000;
    this.pollMs = options.pollMs ?? 2000;
    approvals.on('requested', this.onRequested);
    approvals.on('decided', this.onDecided);
  }

  /** A hearth-approval node starts listening; returns its detach. */
  attach(): () => void {
    this.approvers++;
    if (this.approvers === 1) this.startPolling();
    let attached = true;
    return () => {
      if (!attached) return;
      attached = false;
      this.approvers--;
      if (this.approvers === 0) this.stopPolling();
    };
  }

  /** Is any hearth-approval node listening? */
  get hasApprovers(): boolean {
    return this.approvers > 0;
  }

  /** Everything waiting for a person, oldest first. */
  pending(): ApprovalRequest[] {
    const all = [...this.permissions.requests(), ...this.holds.values()];
    return all.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** A session asks a person before an action; `respond` answers the session. */
  askPermission(request: Omit<ApprovalRequest, 'kind' | 'createdAt' | 'expiresAt'>, respond: (decision: Decision) => void): ApprovalRequest {
    return this.permissions.ask(request, respond);
  }

  /** The turn ended (or the session closed) before anyone answered. */
  cancelPermission(id: string): void {
    this.permissions.cancel(id);
  }

  /** Answer a request by id. Throws NotPendingError when there is nothing to answer. */
  decide(id: string, decision: Decision, by: string): ApprovalOutcome {
    if (!DECISIONS.includes(decision)) throw new TypeError(`decision must be one of ${DECISIONS.join(', ')}, got ${JSON.stringify(decision)}`);
    const waiting = this.permissions.get(id);
    if (waiting) {
      this.permissions.finish(id, decision, decision, by);
      return { id, kind: 'permission', status: decision, by, request: waiting };
    }
    const before = this.approvals.get(id);
    if (!before) throw new NotPendingError(id);
    if (before.status !== 'pending') throw new NotPendingError(id, `it is ${before.status}${before.decidedBy ? ` (by ${before.decidedBy})` : ''}`);
    const request = this.holds.get(id) ?? fromApproval(before);
    const ok = decision === 'deny' ? this.approvals.deny(id, by) : this.approvals.grant(id, by);
    if (!ok) {
      const after = this.approvals.get(id);
      throw new NotPendingError(id, after?.refused ? `it was not granted: ${after.refused}` : `it is ${after?.status ?? 'gone'}`);
    }
    // SqliteApprovals emitted `decided`: released() already told the listeners.
    this.holds.delete(id);
    return { id, kind: 'confirm', status: decision, by, request };
  }

  private hold(a: Approval): void {
    if (this.holds.has(a.id) || a.status !== 'pending') return;
    const request = fromApproval(a);
    this.holds.set(a.id, request);
    this.emit('requested', request);
  }

  private released(a: Approval): void {
    const request = this.holds.get(a.id) ?? fromApproval(a);
    this.holds.delete(a.id);
    this.emit('decided', {
      id: a.id,
      kind: 'confirm',
      status: a.status === 'granted' ? 'granted' : a.status === 'denied' ? 'denied' : a.status,
      by: a.decidedBy,
      request,
    });
  }

  /** Holds of other processes, and holds that expired or were decided elsewhere. */
  poll(): void {
    if (this.closed) return;
    let pending: Approval[];
    try {
      pending = this.approvals.list({ status: 'pending', limit: 200 });
    } catch {
      return;
    }
    const ids = new Set(pending.map((a) => a.id));
    for (const a of [...pending].reverse()) this.hold(a);
    for (const [id, request] of this.holds) {
      if (ids.has(id)) continue;
      this.holds.delete(id);
      const now = this.approvals.get(id);
      this.emit('decided', {
        id,
        kind: 'confirm',
        status: now?.status === 'granted' ? 'granted' : now?.status === 'denied' ? 'denied' : (now?.status ?? 'expired'),
        by: now?.decidedBy ?? null,
        request,
      });
    }
  }

  private startPolling(): void {
    if (this.pollTimer || this.closed) return;
    this.poll();
    this.pollTimer = setInterval(() => this.poll(), this.pollMs);
    this.pollTimer.unref();
  }

  private stopPolling(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
  }

  close(): void {
    this.closed = true;
    this.stopPolling();
    this.approvals.off('requested', this.onRequested);
    this.approvals.off('decided', this.onDecided);
    this.permissions.denyAll('cancelled');
    this.holds.clear();
  }
}
