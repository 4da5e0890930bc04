// The controller behind hearth-audit: every completed audit row, once, as it
// is written. Rows this process writes arrive at once (the audit log's `row`
// event); rows of other processes on the same database (`hearth start`,
// `hearth call`) are found by polling, and a row still pending is emitted
// when it completes.
import type { SqliteAuditLog } from '../../dist/audit/store.js';
import type { StoredAuditRow } from '../../dist/audit/row.js';

export const OUTCOMES = ['confirmed', 'unconfirmed', 'failed', 'not_sent', 'denied', 'interrupted'] as const;

export interface AuditFilter {
  /** Only these outcomes (none: all). */
  outcomes?: string[];
  /** A principal id or glob (`chat:*`). */
  principal?: string;
  /** An entity id or glob (`garage_door.*`). */
  entity?: string;
  /** A tool name or glob. */
  tool?: string;
}

function glob(pattern: string | undefined): ((v: string | null) => boolean) | undefined {
  const p = pattern?.trim();
  if (!p) return undefined;
  const alternatives = p.split('|').map(
    (alt) =>
      new RegExp(
        `^${alt
          .trim()
          .replace(/[.+?^${}()[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')}$`,
        'i',
      ),
  );
  return (v) => v !== null && alternatives.some((re) => re.test(v));
}

export function rowFilter(filter: AuditFilter): (row: StoredAuditRow) => boolean {
  const outcomes = filter.outcomes?.length ? new Set(filter.outcomes) : undefined;
  const principal = glob(filter.principal);
  const entity = glob(filter.entity);
  const tool = glob(filter.tool);
  return (row) =>
    (!outcomes || outcomes.has(row.outcome)) && (!principal || principal(row.principal)) && (!entity || entity(row.entityId)) && (!tool || tool(row.tool));
}

export interface AuditFeedOptions {
  /** How often to look for rows of other processes; default 1 s; 0: only this process's rows. */
  pollMs?: number;
  /** Also emit rows written before the feed started, from this id on. */
  fromId?: number;
}

export class AuditFeed {
  /** Every row with an id at or below this one has been seen (emitted or skipped). */
  private cursor = 0;
  /** Rows above the cursor already emitted (this process's, or completed out of order). */
  private readonly emitted = new Set<number>();
  /** Rows seen pending: emitted when they complete. */
  private readonly pending = new Set<number>();
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly onRow = (row: StoredAuditRow) => this.offer(row);

  constructor(
    private readonly audit: SqliteAuditLog,
    private readonly emit: (row: StoredAuditRow) => void,
    private readonly options: AuditFeedOptions = {},
  ) {}

  start(): void {
    const last = this.audit.tail(1)[0];
    this.cursor = this.options.fromId !== undefined ? Math.max(0, this.options.fromId - 1) : (last?.id ?? 0);
    this.audit.on('row', this.onRow);
    const pollMs = this.options.pollMs ?? 1000;
    if (this.options.fromId !== undefined) this.poll();
    if (pollMs > 0) {
      this.timer = setInterval(() => this.poll(), pollMs);
      this.timer.unref();
    }
  }

  private offer(row: StoredAuditRow): void {
    if (this.stopped || row.outcome === 'pending') return;
    if (row.id <= this.cursor && !this.pending.has(row.id)) return;
    if (this.emitted.has(row.id)) return;
    this.emitted.add(row.id);
    this.pending.delete(row.id);
    try {
      this.emit(row);
    } catch {
      // the node's problem, not the feed's
    }
  }

  /** Catch up with the table: new rows, and pending ones that completed. */
  poll(): void {
    if (this.stopped) return;
    try {
      for (const id of [...this.pending]) {
        const row = this.audit.get(id);
        if (!row) this.pending.delete(id);
        else if (row.outcome !== 'pending') this.offer(row);
      }
      for (;;) {
        const rows = this.audit.list({ afterId: this.cursor, limit: 500, order: 'asc' });
        for (const row of rows) {
          if (row.outcome === 'pending') this.pending.add(row.id);
          else this.offer(row);
          this.cursor = row.id;
        }
        if (rows.length < 500) break;
      }
      for (const id of this.emitted) if (id <= this.cursor && !this.pending.has(id)) this.emitted.delete(id);
    } catch {
      // the database is busy or closing: next time
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.audit.off('row', this.onRow);
  }
}
