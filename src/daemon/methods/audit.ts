// `audit.tail`: the latest audit rows, filtered, oldest first.
import type { SqliteAuditLog } from '../../audit/store.js';
import { auditRowJson, type AuditRowJson } from '../../present/audit-row.js';
import type { TailParams } from '../schema.js';

export function auditTail(store: SqliteAuditLog, p: TailParams): AuditRowJson[] {
  const rows = store.list({
    ...(p.principal ? { principal: p.principal } : {}),
    ...(p.entity ? { entityId: p.entity } : {}),
    ...(p.outcome ? { outcome: p.outcome } : {}),
    ...(p.since ? { since: new Date(p.since) } : {}),
    order: 'desc',
    limit: p.lines ?? 20,
  });
  return rows.reverse().map(auditRowJson);
}
