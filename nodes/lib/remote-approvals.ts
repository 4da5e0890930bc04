// The approvals hub of a bridge connected to a daemon: the daemon's confirm
// holds (whoever's call was held: an agent, the CLI, this flow) as
// hearth-approval nodes see them, found on the daemon's event stream and by
// asking now and then while an approval node listens (a hold written by
// another process on the daemon's database has no event); decided through
// POST /api/approvals/:id as the token's principal, so only a token the
// policy lets approve may decide. Permission requests of sessions this
// bridge runs on the daemon wait here (the answer goes back to the daemon's
// session, which lets it satisfy a confirm rule only if the token's principal
// may grant approvals). Same events and answers as ApprovalHub.
import { EventEmitter } from 'node:events';
import { PermissionWaits } from './permission-waits.js';
import { DECISIONS, NotPendingError, type ApprovalHubEvents, type ApprovalOutcome, type ApprovalRequest, type Decision } from './approvals.js';
import { DaemonError, type DaemonClient, type RemoteApproval } from './daemon.js';

function fromRemote(a: RemoteApproval): ApprovalRequest {
  return {
    id: a.id,
    kind: 'confirm',
    principal: a.principal,
    tool: a.tool,
    args: a.args ?? {},
    reason: String(a.reason ?? ''),
    session: null,
    offersAlways: false,
    createdAt: String(a.createdAt ?? new Date().toISOString()),
    expiresAt: String(a.expiresAt ?? ''),
  };
}

function statusOf(s: string | undefined): ApprovalOutcome['status'] {
  return s === 'granted' || s === 'denied' || s === 'used' || s === 'expired' || s === 'pending' ? s : 'expired';
}

export class RemoteApprovalHub extends EventEmitter<ApprovalHubEvents> {
  private readonly holds = new Map<string, ApprovalRequest>();
  private readonly permissions = new PermissionWaits(() => this.permissionTtlMs, {
    requested: (r) => this.emit('requested', r),
    decided: (o) => this.emit('decided', o),
  });
  /** How long a permission request waits for a person before it is denied. */
  permissionTtlMs = 5 * 60_000;
  private approvers = 0;
  private pollTimer?: NodeJS.Timeout;
  private closed = false;
  private polling?: Promise<void>;

  private readonly onEvent = (e: RemoteApproval & { event: string }) => {
    if (e.event === 'requested' && e.status === 'pending') this.hold(fromRemote(e));
    else this.poll();
  };

  constructor(
    private readonly daemon: DaemonClient,
    private readonly pollMs = 2000,
  ) {
    super();
    daemon.on('approval', this.onEvent);
  }

  attach(): () => void {
    this.approvers++;
    if (this.approvers === 1 && !this.pollTimer && !this.closed) {
      void this.poll();
      this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
      this.pollTimer.unref();
    }
    let attached = true;
    return () => {
      if (!attached) return;
      attached = false;
      this.approvers--;
      if (this.approvers === 0 && this.pollTimer) {
        clearInterval(this.pollTimer);
        this.pollTimer = undefined;
      }
    };
  }

  get hasApprovers(): boolean {
    return this.approvers > 0;
  }

  pending(): ApprovalRequest[] {
    const all = [...this.permissions.requests(), ...this.holds.values()];
    return all.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** A daemon session of this bridge asks a person before an action; `respond` answers the session. */
  askPermission(request: Omit<ApprovalRequest, 'kind' | 'createdAt' | 'expiresAt'>, respond: (decision: Decision) => void): ApprovalRequest {
    return this.permissions.ask(request, respond);
  }

  /** The turn ended before anyone answered. */
  cancelPermission(id: string): void {
    this.permissions.cancel(id);
  }

  private hold(request: ApprovalRequest): void {
    if (this.holds.has(request.id)) return;
    this.holds.set(request.id, request);
    this.emit('requested', request);
  }

  /** What waits now, and what stopped waiting (decided elsewhere, expired). One poll at a time. */
  poll(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.polling ??= (async () => {
      try {
        const pending = await this.daemon.approvals('pending');
        const ids = new Set(pending.map((a) => a.id));
        for (const a of [...pending].reverse()) this.hold(fromRemote(a));
        for (const [id, request] of [...this.holds]) {
          if (ids.has(id)) continue;
          // Gone (404): expired and swept. Another failure: ask again at the next poll.
          const now = await this.daemon.approval(id).catch((err: Error) => (err instanceof DaemonError && err.status === 404 ? null : undefined));
          if (now === undefined || !this.holds.has(id)) continue;
          this.holds.delete(id);
          this.emit('decided', { id, kind: 'confirm', status: now ? statusOf(now.status) : 'expired', by: now?.decidedBy ?? null, request });
        }
      } catch {
        // the daemon is away: the bridge's status says so; the next poll tries again
      } finally {
        this.polling = undefined;
      }
    })();
    return this.polling;
  }

  async decide(id: string, decision: Decision, by: string): Promise<ApprovalOutcome> {
    if (!DECISIONS.includes(decision)) throw new TypeError(`decision must be one of ${DECISIONS.join(', ')}, got ${JSON.stringify(decision)}`);
    const waiting = this.permissions.get(id);
    if (waiting) {
      this.permissions.finish(id, decision, decision, by);
      return { id, kind: 'permission', status: decision, by, request: waiting };
    }
    let after: RemoteApproval;
    try {
      after = await this.daemon.decide(id, decision === 'deny' ? 'deny' : 'grant');
    } catch (err) {
      if (err instanceof DaemonError && (err.status === 404 || err.status === 409)) throw new NotPendingError(id, err.message);
      throw err;
    }
    const request = this.holds.get(id) ?? fromRemote(after);
    this.holds.delete(id);
    const outcome: ApprovalOutcome = { id, kind: 'confirm', status: decision, by: after.decidedBy ?? null, request };
    this.emit('decided', { ...outcome, status: statusOf(after.status) });
    return outcome;
  }

  close(): void {
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.daemon.off('approval', this.onEvent);
    this.permissions.denyAll('cancelled');
    this.holds.clear();
  }
}
