// What the handler pipeline writes to the audit log.

/**
 * What is known of a call:
 * - pending: written before publishing; no outcome yet (in flight, or left by a crash);
 * - not_sent: nothing left this process (broker down, device offline, cancelled, refused by the transport);
 * - unconfirmed: sent (or maybe sent), and no matching report came in time: also when the broker
 *   connection was lost or the device reported offline after sending;
 * - confirmed: the device reported the asked state;
 * - failed: the device reported an error or a contrary state, or the call failed before it could be sent
 *   for a reason of its own (bad arguments);
 * - denied: refused by the policy, or by a person;
 * - interrupted: cancelled while waiting, or found pending at start (the process stopped).
 */
export type Outcome = 'pending' | 'confirmed' | 'unconfirmed' | 'failed' | 'denied' | 'interrupted' | 'not_sent';

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
  /** Append the outcome of a pending call (an entry of its own; the call's entry is never edited). */
  finish(id: number, completion: AuditCompletion): void;
  /**
   * Append a reconciliation of an unconfirmed or interrupted call: a report that came later
   * (`confirmed`, or `failed` for a contrary report). Throws AUDIT_NOT_PENDING when the call is in no such state.
   */
  followUp(id: number, completion: AuditCompletion): void;
  /**
   * The outcome of a pending call, off the caller's path (issue 18): appended with other outcomes in one
   * transaction on the next turn of the event loop; a crash before that leaves the call pending (marked
   * interrupted at the next start). Errors are the store's to log. Optional: finish() is used without it.
   */
  finishLater?(id: number, completion: AuditCompletion): void;
  /**
   * begin() with group commit (issue 18): resolves with the id once the pending row is durable, so the
   * caller may publish; concurrent callers share one commit and one fsync. Rejects like begin() throws.
   * Optional: begin() is used without it.
   */
  beginDurable?(entry: AuditEntry): Promise<number>;
  /**
   * Resolves once every outcome given to finishLater() so far is committed (on the next turn of the event loop),
   * so that a caller is answered only what the audit holds: a kill after the answer cannot leave the call pending.
   * Optional: a store without finishLater() commits each outcome before finish() returns.
   */
  outcomesCommitted?(): Promise<void>;
  /** One finished row at once (denied or failed before publishing). */
  record(entry: AuditEntry, completion: AuditCompletion): number;
  /** The row already written for this request id (idempotent retries), if any. */
  byRequestId(requestId: string): AuditRow | undefined;
  /**
   * Whether any call's request id starts with this prefix (a grouped call asks once for its members,
   * `<request id>#<entity>`, before asking for each). Optional: byRequestId() is asked for each without it.
   */
  anyRequestStartingWith?(prefix: string): boolean;
}
