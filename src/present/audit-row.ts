// How an audit row reads: one vocabulary for its outcome everywhere (the CLI, the page, the HTTP API).
import type { StoredAuditRow } from '../audit/row.js';

/**
 * The outcome as a person should read it. A call a confirm rule held is stored as `denied` with the decision
 * `confirm` (nothing was sent; the approval decides what happens next): it reads `held`, waiting for approval.
 */
export function outcomeWord(r: Pick<StoredAuditRow, 'outcome' | 'decision'>): string {
  if (r.outcome === 'denied' && r.decision === 'confirm') return 'held';
  return r.outcome;
}

/** What each word means, for help texts and legends. */
export const OUTCOME_MEANINGS: Record<string, string> = {
  pending: 'sent or being sent; no outcome recorded yet',
  confirmed: 'the device reported the state asked for',
  unconfirmed: 'sent, but the device did not report the state asked for in time',
  failed: 'it did not work (the device reported otherwise, or the tool failed)',
  denied: 'the policy refused it; nothing was sent',
  held: 'a confirm rule held it; nothing was sent; waiting for approval',
  interrupted: 'Hearth stopped before the outcome was known',
  not_sent: 'refused before anything was sent (offline, bad arguments, no broker)',
};

export type AuditRowJson = StoredAuditRow & { outcomeWord: string };

/** A row as JSON for readers: as stored, plus the word it reads as. */
export function auditRowJson(r: StoredAuditRow): AuditRowJson {
  return { ...r, outcomeWord: outcomeWord(r) };
}
