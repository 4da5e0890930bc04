// How an approval reads, in words and as JSON (CLI, HTTP API, SSE events, the control protocol).
import type { Approval } from '../policy/approvals.js';
import { inWords } from './duration.js';
import { principalWords } from './principal.js';

export type ApprovalJson = ReturnType<typeof approvalJson>;

/** The most of a held call's payload an approval shows. */
const SHOWN_PAYLOAD = 500;

/** ISO times, and how long it still holds. */
export function approvalJson(a: Approval, now = Date.now()) {
  return {
    ...a,
    // Where the command goes and what it says, as the approver sees it (a long payload cut).
    sends: a.sends?.map((m) => ({ topic: m.topic, payload: m.payload.length > SHOWN_PAYLOAD ? `${m.payload.slice(0, SHOWN_PAYLOAD)}…` : m.payload })) ?? null,
    createdAt: new Date(a.createdAt).toISOString(),
    expiresAt: new Date(a.expiresAt).toISOString(),
    decidedAt: a.decidedAt !== null ? new Date(a.decidedAt).toISOString() : null,
    usedAt: a.usedAt !== null ? new Date(a.usedAt).toISOString() : null,
    expiresInMs: a.status === 'pending' || a.status === 'granted' ? Math.max(0, a.expiresAt - now) : null,
    /** Who asked and who decided, as a person reads them. */
    principalName: principalWords(a.principal),
    decidedByName: a.decidedBy !== null ? principalWords(a.decidedBy) : null,
  };
}

/** Why an approval can no longer be decided. */
export function notDecidableText(a: Pick<Approval, 'id' | 'status' | 'decidedBy' | 'expiresAt'> & { refused?: string | null }): string {
  if (a.refused) return `approval ${a.id} was not granted: ${a.refused}; the caller can make the call again to ask anew`;
  switch (a.status) {
    case 'expired':
      return `approval ${a.id} expired at ${new Date(a.expiresAt).toISOString()} without a decision; the caller can make the call again to ask anew`;
    case 'granted':
      return `approval ${a.id} was already granted by ${a.decidedBy ?? '?'}; it waits for the caller to make the call again`;
    case 'used':
      return `approval ${a.id} was granted by ${a.decidedBy ?? '?'} and has been used`;
    case 'denied':
      return `approval ${a.id} was already denied by ${a.decidedBy ?? '?'}`;
    default:
      return `approval ${a.id} is no longer pending`;
  }
}

/** Where an approval stands, in a few words. */
export function approvalStatusWords(a: Pick<ApprovalJson, 'status' | 'decidedBy' | 'usedAt' | 'expiresAt' | 'expiresInMs' | 'refused'>): string {
  if (a.refused) return `not granted: ${a.refused}`;
  switch (a.status) {
    case 'pending':
      return `expires in ${inWords(a.expiresInMs ?? 0)}`;
    case 'granted':
      return `granted by ${a.decidedBy ?? '?'}; usable for ${inWords(a.expiresInMs ?? 0)}`;
    case 'denied':
      return `denied by ${a.decidedBy ?? '?'}`;
    case 'used':
      return `granted by ${a.decidedBy ?? '?'}, used ${a.usedAt ?? ''}`;
    case 'expired':
      return `expired ${a.expiresAt}`;
  }
}
