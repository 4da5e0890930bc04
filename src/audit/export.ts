// Exporting the audit log as JSON lines or CSV (RFC 4180 quoting). Rows are
// read a page at a time, never holding a statement open across a yield: a
// slow consumer cannot keep the connection busy and block audit writes.
import type { Db } from '../db/database.js';
import { AUDIT_COLUMNS, fromDb, type DbAuditRow } from './row.js';

export type ExportFormat = 'jsonl' | 'csv';

export interface ExportOptions {
  /** Rows at or after this time (ISO string or Date). */
  since?: string | Date;
  /** Rows before this time. */
  until?: string | Date;
  /** Rows read per page (default 500). */
  pageSize?: number;
}

/** Reads up to `limit` rows with id > afterId and since <= at < until, in id order. */
export type PageReader = (afterId: number, since: string, until: string, limit: number) => DbAuditRow[];

// One row per call (the `audit` view). `+at`: walk the ids in order, a page at a time, rather than sort the whole time range for every page.
export const PAGE_SQL = 'SELECT * FROM audit WHERE id > ? AND +at >= ? AND +at < ? ORDER BY id LIMIT ?';

/** Normalise a time bound to the stored form (ISO 8601 UTC, ms). */
export function isoBound(t: string | Date | undefined, fallback: string): string {
  if (t === undefined) return fallback;
  const d = t instanceof Date ? t : new Date(t);
  if (Number.isNaN(d.getTime())) throw new RangeError(`not a time: ${String(t)}`);
  return d.toISOString();
}

/** '' sorts before and '~' after every ISO timestamp. */
export const MIN_TIME = '';
export const MAX_TIME = '~';

/** Quote one CSV field when it needs it (comma, quote, CR/LF, or edge whitespace); null is an empty field. */
export function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'string' ? v : String(v);
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvRecord(values: readonly unknown[]): string {
  return values.map(csvField).join(',');
}

/** One JSON line: the stored row with args as an object (camelCase keys, table order). */
export function jsonlLine(r: DbAuditRow): string {
  return JSON.stringify(fromDb(r));
}

/** One CSV record: the table's columns as stored (args as its canonical JSON text). May contain quoted newlines. */
export function csvLine(r: DbAuditRow): string {
  return csvRecord(AUDIT_COLUMNS.map((c) => r[c]));
}

/**
 * The export as lines (records), without line terminators: join with '\n'
 * (or '\r\n'). CSV starts with a header; a CSV record can span lines inside
 * a quoted field.
 */
export function exportLines(read: PageReader, format: ExportFormat, options: ExportOptions = {}): Generator<string> {
  // Arguments are checked now, not at the first next().
  if (format !== 'jsonl' && format !== 'csv') throw new RangeError(`unknown export format: ${String(format)} (jsonl or csv)`);
  const since = isoBound(options.since, MIN_TIME);
  const until = isoBound(options.until, MAX_TIME);
  const pageSize = Math.max(1, Math.floor(options.pageSize ?? 500));
  return pages(read, format, since, until, pageSize);
}

function* pages(read: PageReader, format: ExportFormat, since: string, until: string, pageSize: number): Generator<string> {
  if (format === 'csv') yield csvRecord(AUDIT_COLUMNS);
  let afterId = 0;
  for (;;) {
    const page = read(afterId, since, until, pageSize);
    for (const r of page) yield format === 'csv' ? csvLine(r) : jsonlLine(r);
    if (page.length < pageSize) return;
    afterId = page[page.length - 1].id;
  }
}

/** Export straight from a database (e.g. the CLI, without a store). */
export function exportAudit(db: Db, format: ExportFormat, options: ExportOptions = {}): Generator<string> {
  const stmt = db.prepare(PAGE_SQL);
  return exportLines((afterId, since, until, limit) => stmt.all(afterId, since, until, limit) as DbAuditRow[], format, options);
}
