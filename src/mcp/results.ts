// A Hearth tool result as an MCP CallToolResult: text -> text content,
// images (data URLs) -> image content, isError -> isError. `details` (topics,
// echo payloads, latency) stay on the host; only the ids a client may need
// to follow up (the approval to ask for, the audit row) go in `_meta`.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolResultObject } from '../tools/types.js';

export const META_APPROVAL_ID = 'hearth/approvalId';
export const META_AUDIT_ID = 'hearth/auditId';
/** A client that retries a request sends the same key; the pipeline then acts once. */
export const META_IDEMPOTENCY_KEY = 'hearth/idempotencyKey';

export function toCallToolResult(result: ToolResultObject): CallToolResult {
  const content: CallToolResult['content'] = [];
  const text = result.text ?? result.error;
  if (text !== undefined || !result.images?.length) content.push({ type: 'text', text: text ?? (result.isError ? 'failed' : 'done') });
  for (const image of result.images ?? []) {
    const comma = image.url.indexOf(',');
    const data = image.url.startsWith('data:') && comma > 0 ? image.url.slice(comma + 1) : image.url;
    content.push({ type: 'image', data, mimeType: image.mimeType });
  }
  const meta: Record<string, unknown> = {};
  const approvalId = result.details?.approvalId;
  const auditId = result.details?.auditId;
  if (typeof approvalId === 'string') meta[META_APPROVAL_ID] = approvalId;
  if (typeof auditId === 'number') meta[META_AUDIT_ID] = auditId;
  return {
    content,
    ...(result.isError ? { isError: true } : {}),
    ...(Object.keys(meta).length ? { _meta: meta } : {}),
  };
}

/** The idempotency key a client put in a request's `_meta`, if it is a sane one. */
export function idempotencyKeyOf(meta: Record<string, unknown> | undefined): string | undefined {
  const raw = meta?.[META_IDEMPOTENCY_KEY] ?? meta?.idempotencyKey;
  if (typeof raw !== 'string') return undefined;
  return /^[A-Za-z0-9_.:-]{1,128}$/.test(raw) ? raw : undefined;
}
