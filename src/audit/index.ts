// The audit log: store, chain verification, export.
export type { AuditCompletion, AuditEntry, AuditLog, AuditRow, Outcome } from './types.js';
export { SqliteAuditLog, INTERRUPTED_ERROR, type AuditListFilter, type AuditLogEvents, type AuditLogOptions } from './store.js';
export { AuditError, type AuditErrorCode } from './errors.js';
export {
  GENESIS_HASH,
  canonicalJson,
  computeDigest,
  entryHash,
  readDigest,
  verify,
  writeDigest,
  type BreakKind,
  type ChainBreak,
  type Digest,
  type VerifyOptions,
  type VerifyResult,
} from './chain.js';
export { exportAudit, type ExportFormat, type ExportOptions } from './export.js';
export { AUDIT_COLUMNS, type DbAuditEntry, type StoredAuditRow } from './row.js';
