// The audit log's errors. The handler pipeline fails closed on any of them
// from begin()/record(): nothing is published that the log could not record.

export type AuditErrorCode =
  /** `accept` with no digest file configured. */
  | 'AUDIT_NO_DIGEST'
  /** `accept --through` an entry that is not there. */
  | 'AUDIT_NO_ENTRY'
  /** `accept` over a broken chain. */
  | 'AUDIT_BROKEN'
  /** The database refused the write (read-only, locked, full, closed...). */
  | 'AUDIT_UNAVAILABLE'
  /** A row already exists for this request id (see byRequestId). */
  | 'AUDIT_DUPLICATE'
  /** finish() of an id that does not exist. */
  | 'AUDIT_NOT_FOUND'
  /** finish() of a row that is no longer pending (finished twice, or marked interrupted). */
  | 'AUDIT_NOT_PENDING'
  /** The entry or completion cannot be stored (not a string where one is needed, args without a JSON form...). */
  | 'AUDIT_BAD_ENTRY';

export class AuditError extends Error {
  /** The SQLite error code behind an AUDIT_UNAVAILABLE (`SQLITE_READONLY`, `SQLITE_BUSY`, `SQLITE_FULL`...). */
  readonly sqliteCode?: string;
  /** AUDIT_DUPLICATE: the row already written for the request id. */
  readonly existingId?: number;

  constructor(
    message: string,
    readonly code: AuditErrorCode,
    extra: { cause?: unknown; sqliteCode?: string; existingId?: number } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'AuditError';
    if (extra.sqliteCode !== undefined) this.sqliteCode = extra.sqliteCode;
    if (extra.existingId !== undefined) this.existingId = extra.existingId;
  }
}

/** Wrap whatever the database threw as AUDIT_UNAVAILABLE (an AuditError passes through). */
export function unavailable(err: unknown): AuditError {
  if (err instanceof AuditError) return err;
  const e = err as { message?: unknown; code?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const sqliteCode = typeof e?.code === 'string' && e.code.startsWith('SQLITE_') ? e.code : undefined;
  return new AuditError(`audit log unavailable: ${message}`, 'AUDIT_UNAVAILABLE', { cause: err, ...(sqliteCode ? { sqliteCode } : {}) });
}
