// What the handler pipeline writes to the audit log.

export type Outcome = 'pending' | 'confirmed' | 'unconfirmed' | 'failed' | 'denied' | 'interrupted';

export interface AuditEntry {
  requestId: string;
  principal: string;
  session: string | null;
  runId: string | null;
  tool: string;
  entityId: string | null;
  action: string;
  args: Record<string, unknown>;
  /** allow | deny | confirm, and the rule that made it (null: the default). */
  decision: string;
  ruleId: number | null;
  reason: string;
}

export interface AuditCompletion {
  outcome: Exclude<Outcome, 'pending'>;
  error?: string | null;
  latencyMs?: number | null;
  /** The state payload that confirmed (or the last one seen). */
  echo?: string | null;
}

export interface AuditRow extends AuditEntry, Omit<AuditCompletion, 'outcome'> {
  id: number;
  at: string;
  outcome: Outcome;
  hash: string;
  prevHash: string;
}

export interface AuditLog {
  /** Write a pending row before anything is published. Throws if it cannot (the call then fails closed). */
  begin(entry: AuditEntry): number;
  /** Complete a pending row. */
  finish(id: number, completion: AuditCompletion): void;
  /** One finished row at once (denied or failed before publishing). */
  record(entry: AuditEntry, completion: AuditCompletion): number;
  /** The row already written for this request id (idempotent retries), if any. */
  byRequestId(requestId: string): AuditRow | undefined;
}
