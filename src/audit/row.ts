// One audit row as SQLite holds it and as the rest of Hearth sees it, and the
// mapping between the two.
import type { AuditRow, Outcome } from './types.js';

export const OUTCOMES: readonly Outcome[] = ['pending', 'confirmed', 'unconfirmed', 'failed', 'denied', 'interrupted', 'not_sent'];

/** The columns a call carries, in this order, both in the `audit` view and in the `audit_entry` table. */
export const CALL_COLUMNS = [
  'request_id',
  'principal',
  'session',
  'run_id',
  'tool',
  'entity_id',
  'action',
  'args',
  'decision',
  'rule_id',
  'reason',
  'outcome',
  'error',
  'latency_ms',
  'echo',
  'completed_at',
] as const;

/** The columns of the `audit` view (one row per call), in order (also the CSV header). */
export const AUDIT_COLUMNS = ['id', 'at', ...CALL_COLUMNS, 'prev_hash', 'hash', 'done_hash'] as const;

export type AuditColumn = (typeof AUDIT_COLUMNS)[number];

/** A row of the `audit` view exactly as better-sqlite3 returns it. */
export interface DbAuditRow {
  id: number;
  at: string;
  request_id: string;
  principal: string;
  session: string | null;
  run_id: string | null;
  tool: string;
  entity_id: string | null;
  action: string;
  args: string;
  decision: string;
  rule_id: number | null;
  reason: string;
  outcome: string;
  error: string | null;
  latency_ms: number | null;
  echo: string | null;
  completed_at: string | null;
  prev_hash: string;
  hash: string;
  done_hash: string | null;
}

/** One entry of the append-only `audit_entry` table (see migrations/0009_audit_entries.sql). */
export interface DbAuditEntry {
  id: number;
  at: string;
  /** 1: written before migration 0009 (old hashes); 2: every column hashed. */
  v: number;
  kind: 'call' | 'outcome' | 'seal';
  /** outcome: the call it completes; seal: the last row sealed. */
  call_id: number | null;
  request_id: string | null;
  principal: string | null;
  session: string | null;
  run_id: string | null;
  tool: string | null;
  entity_id: string | null;
  action: string | null;
  args: string | null;
  decision: string | null;
  rule_id: number | null;
  reason: string | null;
  outcome: string | null;
  error: string | null;
  latency_ms: number | null;
  echo: string | null;
  completed_at: string | null;
  prev_hash: string;
  hash: string;
  done_hash: string | null;
}

/** A stored row: the interface's AuditRow plus the completion time and its seal. */
export interface StoredAuditRow extends AuditRow {
  session: string | null;
  runId: string | null;
  entityId: string | null;
  error: string | null;
  latencyMs: number | null;
  echo: string | null;
  /** When the row was completed (null while pending). */
  completedAt: string | null;
  prevHash: string;
  hash: string;
  /** The hash of the entry that gave the current outcome (v1 rows: sha256(hash + canonical completion)); null while pending. */
  doneHash: string | null;
}

/** Parse the stored args; a row whose args were edited into non-JSON still reads (as `{_unparsable: text}`). */
export function parseArgs(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    return { _value: v };
  } catch {
    return { _unparsable: text };
  }
}

export function fromDb(r: DbAuditRow): StoredAuditRow {
  return {
    id: r.id,
    at: r.at,
    requestId: r.request_id,
    principal: r.principal,
    session: r.session,
    runId: r.run_id,
    tool: r.tool,
    entityId: r.entity_id,
    action: r.action,
    args: parseArgs(r.args),
    decision: r.decision,
    ruleId: r.rule_id,
    reason: r.reason,
    outcome: r.outcome as Outcome,
    error: r.error,
    latencyMs: r.latency_ms,
    echo: r.echo,
    completedAt: r.completed_at,
    prevHash: r.prev_hash,
    hash: r.hash,
    doneHash: r.done_hash,
  };
}
