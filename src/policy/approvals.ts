// Approvals for `confirm` rules: a pending request bound to one exact call
// (principal + the entity it acts on + sha256 of the canonical JSON of its
// arguments + what it would publish, topics and payloads; the tool name only
// for calls on no entity, since a tool name can move to another entity),
// granted or denied by a person, used up by the one call it was for, expiring.
// A grant for a call whose messages changed since it was asked (a new
// discovery config moved the lock's command topic) is refused and audited.
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { AuditLog } from '../audit/types.js';
import type { Db } from '../db/database.js';
import type { Principal } from '../core/principal.js';
import type { ApprovalBinding, ApprovalStore, ApprovalTarget, PolicyDecision, PolicyEngine, PolicyRequest, SentMessage } from './types.js';

export type { ApprovalBinding, SentMessage } from './types.js';

export type ApprovalStatus = 'pending' | 'granted' | 'denied' | 'used' | 'expired';

/** What a held call would publish now (its messages), or why it can publish nothing (the entity is gone). */
export type SendsNow = { sends: readonly SentMessage[] } | { gone: string };

export interface Approval {
  id: string;
  principal: string;
  tool: string;
  /** The entity the call acts on (what the approval is bound to), or null for a call on no entity. */
  entityId: string | null;
  args: Record<string, unknown>;
  argsHash: string;
  /** What the call would publish when it was asked (null: not known ahead, a call on no entity). */
  sends: SentMessage[] | null;
  reason: string;
  status: ApprovalStatus;
  /** Why Hearth refused a person's grant (what the call would send changed since it was asked), else null. */
  refused: string | null;
  /** Milliseconds since the epoch. */
  createdAt: number;
  expiresAt: number;
  decidedBy: string | null;
  decidedAt: number | null;
  usedAt: number | null;
}

export interface ApprovalsOptions {
  /** How long a request stays pending; default 5 minutes. */
  ttlMs?: number;
  /** How long a granted approval stays usable after the grant; default: ttlMs. */
  grantTtlMs?: number;
  /** Clock (tests). */
  now?: () => number;
  /**
   * Where a person's refusal is written (one denied row: who refused, the held
   * call). Every door decides through deny() here, so none can skip the row.
   */
  audit?: Pick<AuditLog, 'record'>;
}

/** The audit action of a refused approval (the row's tool, entity and arguments are the held call's). */
export const APPROVAL_DENIED_ACTION = 'deny_approval';
/** The audit action of a grant Hearth refused because what the call would send changed since it was asked. */
export const APPROVAL_GRANT_REFUSED_ACTION = 'grant_refused';

export interface ApprovalEvents {
  requested: [Approval];
  decided: [Approval];
}

/** JSON with object keys sorted at every level (undefined members dropped, as JSON.stringify does). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortKeys(v)));
  if (value !== null && typeof value === 'object') {
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return sortKeys((value as { toJSON(): unknown }).toJSON());
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined && typeof v !== 'function') out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function argsHash(args: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}

/** The canonical text and hash of what a call would publish (both null when it is not known ahead). */
function sendsBinding(sends: readonly SentMessage[] | null | undefined): { text: string | null; hash: string | null } {
  if (!sends) return { text: null, hash: null };
  const text = canonicalJson(sends.map((m) => ({ topic: m.topic, payload: m.payload })));
  return { text, hash: createHash('sha256').update(text).digest('hex') };
}

/** Why the messages a call would send now are not the ones it was asked with, in words (topics named, payloads not: they may be long). */
export function sendsChange(asked: readonly SentMessage[], now: SendsNow): string | undefined {
  if ('gone' in now) return now.gone;
  if (sendsBinding(asked).hash === sendsBinding(now.sends).hash) return undefined;
  const topics = (ms: readonly SentMessage[]) => ms.map((m) => m.topic).join(', ');
  if (topics(asked) !== topics(now.sends)) return `its command would now go to ${topics(now.sends)}, not to ${topics(asked)} as when it was asked`;
  return `what it would send to ${topics(asked)} is no longer what it was asked for`;
}

interface ApprovalRow {
  id: string;
  principal: string;
  tool: string;
  entity_id: string | null;
  args_hash: string;
  args: string;
  sends: string | null;
  reason: string;
  status: ApprovalStatus;
  refused: string | null;
  created_at: number;
  expires_at: number;
  decided_by: string | null;
  decided_at: number | null;
  used_at: number | null;
}

function fromRow(r: ApprovalRow): Approval {
  return {
    id: r.id,
    principal: r.principal,
    tool: r.tool,
    entityId: r.entity_id ?? null,
    args: JSON.parse(r.args) as Record<string, unknown>,
    argsHash: r.args_hash,
    sends: r.sends === null ? null : (JSON.parse(r.sends) as SentMessage[]),
    reason: r.reason,
    status: r.status,
    refused: r.refused ?? null,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    decidedBy: r.decided_by,
    decidedAt: r.decided_at,
    usedAt: r.used_at,
  };
}

export const DEFAULT_APPROVAL_TTL_MS = 5 * 60_000;

export class SqliteApprovals extends EventEmitter<ApprovalEvents> implements ApprovalStore {
  readonly ttlMs: number;
  readonly grantTtlMs: number;
  private readonly now: () => number;
  private readonly audit?: Pick<AuditLog, 'record'>;
  private readonly stmts;

  constructor(
    private readonly db: Db,
    options: ApprovalsOptions = {},
  ) {
    super();
    this.ttlMs = options.ttlMs ?? DEFAULT_APPROVAL_TTL_MS;
    this.grantTtlMs = options.grantTtlMs ?? this.ttlMs;
    if (!(this.ttlMs > 0) || !(this.grantTtlMs > 0)) throw new RangeError('approval ttlMs and grantTtlMs must be positive');
    this.now = options.now ?? Date.now;
    this.audit = options.audit;
    this.stmts = {
      // The same call: same principal, entity (or, on no entity, tool) and arguments.
      findPending: db.prepare(
        `SELECT * FROM approvals WHERE principal = @principal AND entity_id IS @entity AND (@entity IS NOT NULL OR tool = @tool)
           AND args_hash = @hash AND sends_hash IS @sends AND status = 'pending' AND expires_at > @now
         ORDER BY created_at DESC LIMIT 1`,
      ),
      insert: db.prepare(
        `INSERT INTO approvals (id, principal, tool, entity_id, args_hash, args, sends, sends_hash, reason, status, created_at, expires_at)
         VALUES (@id, @principal, @tool, @entity, @argsHash, @args, @sends, @sendsHash, @reason, 'pending', @createdAt, @expiresAt)`,
      ),
      get: db.prepare('SELECT * FROM approvals WHERE id = ?'),
      refuseGrant: db.prepare(
        `UPDATE approvals SET status = 'denied', decided_by = @by, decided_at = @now, refused = @why
         WHERE id = @id AND status = 'pending' AND expires_at > @now`,
      ),
      decide: db.prepare(
        `UPDATE approvals SET status = @status, decided_by = @by, decided_at = @now, expires_at = MAX(expires_at, @until)
         WHERE id = @id AND status = 'pending' AND expires_at > @now`,
      ),
      granted: db.prepare(
        `SELECT id FROM approvals
         WHERE principal = @principal AND entity_id IS @entity AND (@entity IS NOT NULL OR tool = @tool)
           AND args_hash = @hash AND sends_hash IS @sends AND status = 'granted' AND expires_at > @now
         LIMIT 1`,
      ),
      consume: db
        .prepare(
          `UPDATE approvals SET status = 'used', used_at = @now
         WHERE id = (SELECT id FROM approvals
                     WHERE principal = @principal AND entity_id IS @entity AND (@entity IS NOT NULL OR tool = @tool)
                       AND args_hash = @hash AND sends_hash IS @sends AND status = 'granted' AND expires_at > @now
                     ORDER BY decided_at LIMIT 1)
         RETURNING id`,
        )
        .pluck(),
      expire: db.prepare(`UPDATE approvals SET status = 'expired' WHERE status IN ('pending', 'granted') AND expires_at <= ?`),
      listAll: db.prepare('SELECT * FROM approvals ORDER BY created_at DESC, id LIMIT ?'),
      listStatus: db.prepare('SELECT * FROM approvals WHERE status = ? ORDER BY created_at DESC, id LIMIT ?'),
    };
  }

  /** Mark pending or granted approvals past their expiry as expired; returns how many. */
  expireStale(): number {
    return this.stmts.expire.run(this.now()).changes;
  }

  request(call: ApprovalBinding & { reason: string }): {
    id: string;
    expiresAt: number;
  } {
    const now = this.now();
    const canonical = canonicalJson(call.args ?? {});
    const hash = createHash('sha256').update(canonical).digest('hex');
    const entity = call.entityId ?? null;
    const sends = sendsBinding(call.sends);
    const created = this.db
      .transaction((): Approval | { id: string; expiresAt: number } => {
        const existing = this.stmts.findPending.get({ principal: call.principal, entity, tool: call.tool, hash, sends: sends.hash, now }) as
          | ApprovalRow
          | undefined;
        if (existing) return { id: existing.id, expiresAt: existing.expires_at };
        this.stmts.expire.run(now);
        for (let attempt = 0; ; attempt++) {
          const id = randomBytes(6).toString('hex');
          try {
            this.stmts.insert.run({
              id,
              principal: call.principal,
              tool: call.tool,
              entity,
              argsHash: hash,
              args: canonical,
              sends: sends.text,
              sendsHash: sends.hash,
              reason: call.reason ?? '',
              createdAt: now,
              expiresAt: now + this.ttlMs,
            });
            return fromRow(this.stmts.get.get(id) as ApprovalRow);
          } catch (err) {
            if (attempt < 3 && (err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') continue;
            throw err;
          }
        }
      })
      .immediate();
    if ('status' in created) {
      this.emit('requested', created);
      return { id: created.id, expiresAt: created.expiresAt };
    }
    return created;
  }

  private decide(id: string, by: string, status: 'granted' | 'denied'): boolean {
    const now = this.now();
    const changed = this.stmts.decide.run({ id, by, now, status, until: status === 'granted' ? now + this.grantTtlMs : 0 }).changes > 0;
    if (!changed) return false;
    const decided = this.get(id)!;
    this.emit('decided', decided);
    // A grant leaves its row when the call runs; a refusal is the end of the call, so it is the row.
    // (A failed write throws to the door that refused: the refusal stands, the person hears the row is missing.)
    if (status === 'denied' && this.audit) this.recordRefusal(decided, by);
    return true;
  }

  private recordRefusal(a: Approval, by: string): void {
    this.audit!.record(
      {
        requestId: `approval:${a.id}:denied`,
        principal: by,
        session: null,
        runId: null,
        tool: a.tool,
        entityId: a.entityId,
        action: APPROVAL_DENIED_ACTION,
        args: a.args,
        decision: 'deny',
        ruleId: null,
        reason: `${by} refused approval ${a.id}, asked by ${a.principal}${a.reason ? ` (${a.reason})` : ''}`,
      },
      { outcome: 'denied', error: null },
    );
  }

  /**
   * What a held call would publish now, asked at the grant (set by the assembly, which knows the devices).
   * Without it a grant is not checked here, and the call still uses it only if it sends what was asked.
   */
  sendsNow?: (approval: Approval) => SendsNow | undefined;

  /**
   * Grant a pending, unexpired approval. Refused (false; the approval is then denied with the reason in
   * `refused`, and an audit row says who tried) when what the call would send changed since it was asked.
   */
  grant(id: string, by: string): boolean {
    const before = this.get(id);
    if (before?.status === 'pending' && before.sends) {
      const now = this.sendsNow?.(before);
      const why = now ? sendsChange(before.sends, now) : undefined;
      if (why) return this.refuseGrant(before, by, why);
    }
    return this.decide(id, by, 'granted');
  }

  private refuseGrant(a: Approval, by: string, why: string): false {
    const now = this.now();
    if (this.stmts.refuseGrant.run({ id: a.id, by, now, why }).changes === 0) return false;
    const decided = this.get(a.id)!;
    this.emit('decided', decided);
    this.audit?.record(
      {
        requestId: `approval:${a.id}:grant-refused`,
        principal: by,
        session: null,
        runId: null,
        tool: a.tool,
        entityId: a.entityId,
        action: APPROVAL_GRANT_REFUSED_ACTION,
        args: a.args,
        decision: 'deny',
        ruleId: null,
        reason: `Hearth refused ${by}'s grant of approval ${a.id}, asked by ${a.principal}: ${why}`,
      },
      { outcome: 'denied', error: null },
    );
    return false;
  }

  /** Deny a pending, unexpired approval (written to the audit log as a denied row by `by`, when it has one; a failed write throws). */
  deny(id: string, by: string): boolean {
    return this.decide(id, by, 'denied');
  }

  /** Whether a granted approval waits for exactly this call (without using it up). */
  isGranted(call: ApprovalBinding): boolean {
    return !!this.stmts.granted.get({
      principal: call.principal,
      entity: call.entityId ?? null,
      tool: call.tool,
      hash: argsHash(call.args ?? {}),
      sends: sendsBinding(call.sends).hash,
      now: this.now(),
    });
  }

  /** Use up a granted, unexpired approval for exactly this call, sending exactly what was asked (single use); its id, or null. */
  consume(call: ApprovalBinding): string | null {
    const id = this.stmts.consume.get({
      principal: call.principal,
      entity: call.entityId ?? null,
      tool: call.tool,
      hash: argsHash(call.args ?? {}),
      sends: sendsBinding(call.sends).hash,
      now: this.now(),
    }) as string | undefined;
    return id ?? null;
  }

  get(id: string): Approval | undefined {
    this.expireStale();
    const row = this.stmts.get.get(id) as ApprovalRow | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** Newest first. */
  list(filter: { status?: ApprovalStatus; limit?: number } = {}): Approval[] {
    this.expireStale();
    const limit = filter.limit ?? 100;
    const rows = (filter.status ? this.stmts.listStatus.all(filter.status, limit) : this.stmts.listAll.all(limit)) as ApprovalRow[];
    return rows.map(fromRow);
  }

  /**
   * Raise `requested` and `decided` for approvals another process asked for or
   * decided on this database (`hearth call`, `hearth approve`, a Node-RED
   * runtime), so a page or flow listening here hears of them at once. Every
   * intervalMs it reads PRAGMA data_version, which changes only when another
   * connection commits, and only then looks at the approvals of the last
   * ttl. Returns a stop function.
   */
  watchOtherProcesses(intervalMs = 500): () => void {
    const recent = this.db.prepare('SELECT * FROM approvals WHERE created_at >= ? OR decided_at >= ?');
    const seen = new Map<string, ApprovalStatus>();
    const note = (a: Approval) => seen.set(a.id, a.status);
    // This process's own events are already out: remember them so they are not raised twice.
    this.on('requested', note);
    this.on('decided', note);
    const window = () => this.now() - Math.max(this.ttlMs, this.grantTtlMs);
    for (const r of recent.all(window(), window()) as ApprovalRow[]) seen.set(r.id, r.status);
    let version = this.db.pragma('data_version', { simple: true });
    const timer = setInterval(() => {
      let rows: ApprovalRow[];
      try {
        const now = this.db.pragma('data_version', { simple: true });
        if (now === version) return;
        version = now;
        rows = recent.all(window(), window()) as ApprovalRow[];
      } catch {
        return; // closed or busy: the next tick tries again
      }
      const live = new Set<string>();
      for (const r of rows) {
        live.add(r.id);
        const before = seen.get(r.id);
        if (before === r.status) continue;
        seen.set(r.id, r.status);
        if (r.status === 'pending' && before === undefined) this.emit('requested', fromRow(r));
        else if ((r.status === 'granted' || r.status === 'denied') && (before === undefined || before === 'pending')) this.emit('decided', fromRow(r));
      }
      for (const id of seen.keys()) if (!live.has(id)) seen.delete(id);
    }, intervalMs);
    timer.unref();
    return () => {
      clearInterval(timer);
      this.off('requested', note);
      this.off('decided', note);
    };
  }
}

// ---------------------------------------------------------------- confirm rules, at every door

/** A person's answer given in band, for this very call (a session's allow_once). */
export interface InBandAnswer {
  /** In words, for the audit: `session s1 permission r7 (allow_once)`. */
  note: string;
  /** Who answered: the session's principal, or the person the door knows answered. */
  by: Principal;
}

export type ConfirmOutcome = { ok: true; approvedBy: string } | { ok: false; text: string; approvalId?: string; decision: PolicyDecision };

function targetOf(request: PolicyRequest): ApprovalTarget {
  return {
    tool: request.tool,
    capability: request.capability,
    action: request.action,
    ...(request.entityId !== undefined ? { entityId: request.entityId } : {}),
    ...(request.area !== undefined ? { area: request.area } : {}),
    ...(request.kind !== undefined ? { kind: request.kind } : {}),
    ...(request.deviceClass !== undefined ? { deviceClass: request.deviceClass } : {}),
  };
}

/**
 * The one place a `confirm` decision is satisfied, for every door (sessions
 * over HTTP, rpc, chat, Node-RED; MCP; `hearth call`; flow tools).
 * Satisfied by: an in-band answer from a principal who may grant approvals
 * (policy.mayApprove), or a stored approval granted by one, for this exact
 * call (principal, entity, arguments). Otherwise the call is held as an
 * approval, and the text says who may approve it and how. An approved call
 * then counts against its rate-limited rule (decision.limitedBy), atomically.
 */
export function settleConfirm(
  gate: { policy: PolicyEngine; approvals?: ApprovalStore; now?: () => number },
  request: PolicyRequest,
  decision: PolicyDecision,
  answer?: InBandAnswer,
  /** What the call would publish: an approval binds to it as to the arguments. */
  sends?: readonly SentMessage[],
): ConfirmOutcome {
  const target = targetOf(request);
  const approvers = (gate.policy.approversFor?.(target) ?? ['role:owner']).join(', ');
  let approvedBy: string | undefined;
  let refusedAnswer = '';
  if (answer) {
    // Fail closed: an engine that cannot say who approves takes no in-band answer.
    if (gate.policy.mayApprove?.(answer.by, target)) approvedBy = answer.by.id === request.principal.id ? answer.note : `${answer.note} by ${answer.by.id}`;
    else refusedAnswer = ` The answer given (${answer.note}) does not count: ${answer.by.id} may not approve this call (approvers: ${approvers}).`;
  }
  const binding: ApprovalBinding = { principal: request.principal.id, tool: request.tool, entityId: request.entityId ?? null, args: request.args, sends };
  approvedBy ??= gate.approvals?.consume(binding) ?? undefined;
  if (!approvedBy) {
    const pending = gate.approvals?.request({ ...binding, reason: decision.reason });
    const now = (gate.now ?? Date.now)();
    const how = pending
      ? ` Approval ${pending.id} is waiting: a person can grant it with \`hearth approve ${pending.id}\` (or in the web page or a Node-RED flow) within ${Math.max(1, Math.round((pending.expiresAt - now) / 60000))} min (approvers: ${approvers}); then make the same call again.`
      : ` Only ${approvers} may approve it.`;
    return { ok: false, text: `needs approval: ${decision.reason}.${refusedAnswer}${how}`, decision, ...(pending ? { approvalId: pending.id } : {}) };
  }
  if (decision.limitedBy !== undefined && gate.policy.takeHit && !gate.policy.takeHit(decision.limitedBy, request)) {
    return {
      ok: false,
      text: `not allowed: rate limit of rule #${decision.limitedBy} reached before this approved call could run`,
      decision: { effect: 'deny', ruleId: decision.limitedBy, reason: `rate limit (rule #${decision.limitedBy})` },
    };
  }
  return { ok: true, approvedBy };
}
