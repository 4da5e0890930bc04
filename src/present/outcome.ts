// How a tool call's result reads as data: its text, error, host-only details and images (sizes; the bytes only
// when asked for). The control protocol's `call` answer and `hearth call --json`.
import type { StoredAuditRow } from '../audit/row.js';
import type { ToolResultObject } from '../tools/types.js';
import { outcomeWord } from './audit-row.js';

export interface CallResultJson {
  /** The call's audit row, when it has one (reads are not audited), and what the audit says happened. */
  auditId: number | null;
  outcome: string | null;
  /** The outcome as a person reads it (`held`: waiting for approval). */
  outcomeWord: string | null;
  /** What became of the call, for a program to act on (callStatus). */
  status: CallStatus;
  text: string | null;
  isError: boolean;
  error: string | null;
  details: Record<string, unknown>;
  images: Array<{ mimeType: string; bytes: number }>;
  image?: { mimeType: string; data: string };
}

/**
 * What became of a call, in one word a program can act on (`hearth call`'s exit code, `--json`'s `status`):
 * `done` (confirmed, or a read answered), `unconfirmed` (sent; the device did not report the asked state in time,
 * or reports none), `partial` (a grouped call: some members done, not all), `held` (a confirm rule holds it for an
 * approval), `refused` (the policy or the transport said no), `invalid` (bad arguments), `not_sent` (the device is
 * offline or the broker unreachable: nothing left Hearth), `failed` (anything else that did not work).
 * From the audit's outcome and the decision where the result carries them, else from the first words every result
 * starts with (the pipeline's contract: `confirmed:`, `needs approval:`, `not allowed:`, `invalid arguments:` ...).
 * A read refused as "unknown entity" (a read deny) says `failed`, as an entity that does not exist does.
 */
export type CallStatus = 'done' | 'unconfirmed' | 'partial' | 'held' | 'refused' | 'invalid' | 'not_sent' | 'failed';

export function callStatus(result: ToolResultObject, outcome: string | undefined): CallStatus {
  const text = (result.text ?? result.error ?? '').trimStart();
  if (!result.isError) {
    if (text.startsWith('partly done:')) return 'partial';
    return outcome === 'unconfirmed' || /^(unconfirmed|sent):/.test(text) ? 'unconfirmed' : 'done';
  }
  // A call run after its approval carries `decision: confirm` too: held is the hold's own answer, not the rule.
  if (text.startsWith('needs approval:') || typeof result.details?.approvalId === 'string') return 'held';
  if (result.details?.decision === 'deny' || text.startsWith('not allowed') || text.startsWith('refused at the transport')) return 'refused';
  if (outcome === 'not_sent') return 'not_sent';
  if (text.startsWith('invalid arguments:')) return 'invalid';
  return 'failed';
}

export function callResultJson(
  result: ToolResultObject,
  options: { withImage?: boolean; row?: Pick<StoredAuditRow, 'id' | 'outcome' | 'decision'> } = {},
): CallResultJson {
  const first = result.images?.[0];
  const row = options.row;
  return {
    auditId: row?.id ?? null,
    outcome: row?.outcome ?? null,
    outcomeWord: row ? outcomeWord(row) : null,
    status: callStatus(result, row?.outcome),
    text: result.text ?? null,
    isError: !!result.isError,
    error: result.error ?? null,
    details: result.details ?? {},
    images: (result.images ?? []).map((i) => ({ mimeType: i.mimeType, bytes: i.bytes })),
    ...(options.withImage && first ? { image: { mimeType: first.mimeType, data: first.url.slice(first.url.indexOf(',') + 1) } } : {}),
  };
}
