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
  text: string | null;
  isError: boolean;
  error: string | null;
  details: Record<string, unknown>;
  images: Array<{ mimeType: string; bytes: number }>;
  image?: { mimeType: string; data: string };
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
    text: result.text ?? null,
    isError: !!result.isError,
    error: result.error ?? null,
    details: result.details ?? {},
    images: (result.images ?? []).map((i) => ({ mimeType: i.mimeType, bytes: i.bytes })),
    ...(options.withImage && first ? { image: { mimeType: first.mimeType, data: first.url.slice(first.url.indexOf(',') + 1) } } : {}),
  };
}
