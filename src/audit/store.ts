// The audit log in SQLite, append-only and hash-chained (see chain.ts and
// migrations/0009_audit_entries.sql). begin() appends a pending call entry
// before a command is published; finish() appends the call's outcome as an
// entry of its own, and followUp() a later reconciliation; record() appends a
// call finished at once (denied, not sent). Nothing is ever edited. Readers see
// one row per call with its current outcome (the `audit` view). A call entry is written to the log alone, whose
// only key is the append order (migration 0014): the index readers look calls up by (audit_call_index) follows
// when the calls pause (indexSoon), at start and at close, and right after an outcome's commit once the entries
// after it are many or not all this process's own; readers read it with the entries after it (the `audit_call_ids` view).
// Every write is its own synchronous transaction (or part of a group()). How a commit reaches the disk is the
// `durability` option: `full` makes every row durable before the caller goes on (synchronous=FULL
// semantics); `grouped` returns once the row is in the write-ahead log (safe
// from a crash of the process) and fsyncs on the thread pool while the caller
// publishes. A write that fails throws AUDIT_UNAVAILABLE: the caller fails closed.
//
// Group commit (issue 18), `full` on a WAL file: the connection runs at
// synchronous=NORMAL and the store fdatasyncs the write-ahead log itself.
// beginDurable(), the pipeline's one unavoidable write, queues the pending row;
// at the end of the turn every row queued in it is committed in one
// transaction and fdatasynced once on this thread (a lone caller: one commit,
// one fsync, as synchronous=FULL would do). Nobody is resolved before the
// fsync covering its own row is done.
// The synchronous writes (begin, record, finish, ...) fsync on this thread
// before they return, as synchronous=FULL would. Outcomes from finishLater()
// are committed once the calls pause (never while a command travels: that
// commit delayed its echo), at most OUTCOME_MAX_WAIT_MS later, and fsynced
// lazily (the next pending row's fsync covers them, or a timer): a crash or a
// power cut may lose an outcome, never a pending row, and a lost outcome
// leaves the call pending, marked interrupted at the next start.
import { EventEmitter } from 'node:events';
import type Database from 'better-sqlite3';
import type { Db } from '../db/database.js';
import { WalSync, type WalSyncOptions } from '../db/wal-sync.js';
import { makePrivate } from '../util/private-file.js';
import { silentLogger, type Logger } from '../log.js';
import {
  FOLLOW_UP_OUTCOMES,
  GENESIS_HASH,
  canonicalJson,
  entryHash,
  legacySealNeeded,
  anchorState,
  verify,
  writeDigestSequence,
  wellFormed,
  writeDigestFile,
  type AnchorState,
  type CompletionFields,
  type Digest,
  type DigestMark,
  type VerifyOptions,
  type VerifyResult,
} from './chain.js';
import { AuditError, unavailable } from './errors.js';
import { exportLines, isoBound, MAX_TIME, MIN_TIME, PAGE_SQL, type ExportFormat, type ExportOptions } from './export.js';
import { fromDb, OUTCOMES, type DbAuditEntry, type DbAuditRow, type StoredAuditRow } from './row.js';
import type { AuditCompletion, AuditEntry, AuditLog, Outcome } from './types.js';

export interface AuditLogOptions {
  log?: Logger;
  /** Where to keep the tail digest (written atomically after each completed row); verify() uses it to detect truncation. */
  digestFile?: string;
  /** The clock (tests). */
  now?: () => Date;
  /**
   * How commits reach the disk (it applies to every write on the connection):
   * - `full` (default): PRAGMA synchronous=FULL, each commit waits for its fsync.
   * - `grouped`: synchronous=NORMAL, and an fsync of the WAL on the thread pool after
   *   each commit, shared by every commit made while one runs; durable() waits for it.
   *   A crash of the process loses nothing; a power cut can lose the last fsync's worth.
   * - `connection`: leave the connection as it is (readers).
   */
  durability?: AuditDurability;
  /** The grouped fsync (tests count or fail it). */
  walSync?: WalSyncOptions;
  /** The audit key (audit.keyFile): digests are signed with it, and verify() requires the signature. */
  key?: Buffer;
  /** Where the highest digest number is kept (beside the key: `<key file>.seq`), so a rollback is seen. */
  sequenceFile?: string;
}

export type AuditDurability = 'full' | 'grouped' | 'connection';

/** What `hearth audit accept` shows an owner before it vouches for the log (see SqliteAuditLog.acceptEvidence). */
export interface AcceptEvidence {
  /** What is wrong with the digest, the sequence file or the database's note. */
  findings: string[];
  /** The highest digest number known to have been written. */
  highestSeq: number;
  /** The log's last entry. */
  lastId: number;
  /** The entries no signed digest vouches for. */
  unvouched?: { from: number; to: number; count: number };
}

export interface AuditLogEvents {
  /** A call got an outcome (finish, finishLater, followUp, markInterrupted) or was recorded: after the commit, as readers now see it. */
  row: [row: StoredAuditRow];
}

export interface AuditListFilter {
  principal?: string;
  entityId?: string;
  outcome?: Outcome;
  /** at >= since. */
  since?: string | Date;
  /** at < until. */
  until?: string | Date;
  /** id > afterId (paging forward). */
  afterId?: number;
  /** id < beforeId (paging backward). */
  beforeId?: number;
  /** Default 100, at most 10000. */
  limit?: number;
  /** By id; default 'asc'. */
  order?: 'asc' | 'desc';
}

export const INTERRUPTED_ERROR = 'interrupted: Hearth stopped before the call completed';

/** What a caller gives for a call entry (the rest is the store's). */
type NewRow = Pick<
  DbAuditRow,
  'request_id' | 'principal' | 'session' | 'run_id' | 'tool' | 'entity_id' | 'action' | 'args' | 'decision' | 'rule_id' | 'reason'
>;
type Statement<P extends unknown[], R = unknown> = Database.Statement<P, R>;
/** The insert's parameters, in its column order. */
type E = DbAuditEntry;
type InsertParams = [
  E['id'],
  E['at'],
  E['v'],
  E['kind'],
  E['call_id'],
  E['request_id'],
  E['principal'],
  E['session'],
  E['run_id'],
  E['tool'],
  E['entity_id'],
  E['action'],
  E['args'],
  E['decision'],
  E['rule_id'],
  E['reason'],
  E['outcome'],
  E['error'],
  E['latency_ms'],
  E['echo'],
  E['completed_at'],
  E['prev_hash'],
  E['hash'],
  E['done_hash'],
];
type Completion = Omit<CompletionFields, 'completed_at'>;
/** An entry before the store numbers and chains it. */
type Unchained = Omit<DbAuditEntry, 'id' | 'at' | 'prev_hash' | 'hash'>;

/**
 * An entry that is no call (an outcome, the legacy seal), every field written out in one literal: one object shape
 * for all of them (a spread of a template and the fields gave each outcome a shape of its own, ~4 us, and slowed its
 * hash and insert).
 */
function bareEntry(kind: 'outcome' | 'seal', callId: number): Unchained {
  return {
    v: 2,
    kind,
    call_id: callId,
    request_id: null,
    principal: null,
    session: null,
    run_id: null,
    tool: null,
    entity_id: null,
    action: null,
    args: null,
    decision: null,
    rule_id: null,
    reason: null,
    outcome: null,
    error: null,
    latency_ms: null,
    echo: null,
    completed_at: null,
    done_hash: null,
  };
}

/** An outcome entry of a call. */
function outcomeEntry(callId: number, outcome: Completion['outcome'], error: string | null, latencyMs: number | null, echo: string | null): Unchained {
  const e = bareEntry('outcome', callId);
  e.outcome = outcome;
  e.error = error;
  e.latency_ms = latencyMs;
  e.echo = echo;
  return e;
}

/** Most pending calls of its own a store remembers (pendingOwn). */
const MAX_PENDING_KNOWN = 10_000;

/** A pending call's entry as the `audit` view returns it (its columns only; no outcome entry yet). */
function asPendingRow(e: DbAuditRow): DbAuditRow {
  return {
    id: e.id,
    at: e.at,
    request_id: e.request_id,
    principal: e.principal,
    session: e.session,
    run_id: e.run_id,
    tool: e.tool,
    entity_id: e.entity_id,
    action: e.action,
    args: e.args,
    decision: e.decision,
    rule_id: e.rule_id,
    reason: e.reason,
    outcome: e.outcome,
    error: e.error,
    latency_ms: e.latency_ms,
    echo: e.echo,
    completed_at: e.completed_at,
    prev_hash: e.prev_hash,
    hash: e.hash,
    done_hash: null,
  };
}

/** The call as readers see it once an outcome entry is appended (what the `audit` view then returns). */
function folded(call: DbAuditRow, o: DbAuditEntry): DbAuditRow {
  return { ...call, outcome: o.outcome!, error: o.error, latency_ms: o.latency_ms, echo: o.echo, completed_at: o.at, done_hash: o.hash };
}

export class SqliteAuditLog extends EventEmitter<AuditLogEvents> implements AuditLog {
  private readonly log: Logger;
  private readonly now: () => Date;
  readonly digestFile?: string;
  private readonly key?: Buffer;
  /** What commits do now: a failed grouped fsync falls back to `full`. */
  durability: AuditDurability;
  private walSync?: WalSync;
  /** Pending rows waiting for the next group commit (beginDurable). */
  private beginQueue: Array<{ row: NewRow; resolve: (id: number) => void; reject: (err: unknown) => void }> = [];
  private groupScheduled = false;
  /** Commits made by beginDurable: one per group of pending rows (tests read it; timings are not needed). */
  pendingCommits = 0;
  /** fsyncs made for those commits, before their callers went on (fsyncs counts every one, outcomes' too). */
  pendingSyncs = 0;
  /** The lazy fsync for outcomes (full durability on a WAL file). */
  private lazySyncTimer?: NodeJS.Timeout;
  private readonly beginTx: Database.Transaction<(rows: NewRow[]) => Array<{ id?: number; err?: unknown }>>;
  /** The fsync covering the newest commit (grouped), until it is done. */
  private syncing?: Promise<void>;

  private readonly stmt: {
    last: Statement<[], { id: number; hash: string }>;
    hashOf: Statement<[number], { hash: string }>;
    seq: Statement<[], { seq: number }>;
    byId: Statement<[number], DbAuditRow>;
    entryById: Statement<[number], { kind: string; callId: number | null }>;
    byRequest: Statement<[string], DbAuditRow>;
    requestTaken: Statement<[string], { id: number }>;
    requestLookup: Statement<[string], { indexed: number | null; upTo: number; last: number }>;
    indexBounds: Statement<[], { upTo: number; last: number }>;
    indexedRequests: Statement<[string], { request_id: string; id: number }>;
    requestPrefixTaken: Statement<[string, string], { id: number }>;
    indexedUpTo: Statement<[], { id: number }>;
    lastId: Statement<[], { id: number }>;
    indexCalls: Statement<[]>;
    insert: Statement<InsertParams>;
    pendingBefore: Statement<[string], DbAuditRow>;
    tail: Statement<[number], DbAuditRow>;
    page: Statement<[number, string, string, number], DbAuditRow>;
    count: Statement<[], { n: number }>;
    countBetween: Statement<[number, number], { n: number }>;
  };
  private readonly listStatements = new Map<string, Statement<unknown[], DbAuditRow>>();
  /** The chain's last entry while a multi-entry transaction writes (it holds the write lock: no one else appends meanwhile). */
  private tip?: { id: number; hash: string; seq: number };
  private readonly callTx: Database.Transaction<(row: NewRow, completion: Completion | null) => DbAuditRow>;
  private readonly outcomeTx: Database.Transaction<(items: Array<{ id: number; completion: Completion; followUp: boolean }>) => DbAuditRow[]>;
  private readonly interruptTx: Database.Transaction<(cutoff: string) => DbAuditRow[]>;

  /** The highest id this store wrote: a table that ends before it lost its tail. */
  private lastWrittenId = 0;
  /** Rows up to countedUpTo (for the digest, without a full count each time). */
  private counted?: { n: number; upTo: number };
  /** Completed rows waiting for the commit of the current group(). */
  private queue: DbAuditRow[] | null = null;
  /** Outcomes given to finishLater(), appended together on the next turn of the event loop. */
  private laterQueue: Array<{ id: number; completion: Completion }> = [];
  private laterTimer?: NodeJS.Timeout;
  private laterImmediate?: NodeJS.Immediate;
  /** When the oldest queued outcome was queued, and when the store last saw a call begin or end (ms). */
  private laterSince = 0;
  private lastActivity = 0;
  /** Calls whose pending row beginDurable() granted and whose outcome has not come: their commands are travelling. */
  private readonly inFlight = new Map<number, number>();

  constructor(
    private readonly db: Db,
    options: AuditLogOptions = {},
  ) {
    super();
    this.log = options.log ?? silentLogger;
    this.now = options.now ?? (() => new Date());
    if (options.digestFile) this.digestFile = options.digestFile;
    this.key = options.key;
    this.sequenceFile = options.sequenceFile;
    this.durability = options.durability ?? 'full';
    // No write-ahead log to fsync (in memory, or not WAL): each commit syncs itself (synchronous=FULL).
    const wal = !db.memory && String(db.pragma('journal_mode', { simple: true })) === 'wal';
    if (this.durability === 'grouped' && !wal) this.durability = 'full';
    if (this.durability !== 'connection' && wal) this.walSync = new WalSync(db.name, options.walSync);
    if (this.durability !== 'connection') {
      try {
        db.pragma(`synchronous = ${this.walSync ? 'NORMAL' : 'FULL'}`);
      } catch (err) {
        this.log.warn({ err }, `audit: cannot set synchronous on the database connection`);
      }
    }
    try {
      this.stmt = {
        last: db.prepare('SELECT id, hash FROM audit_entry ORDER BY id DESC LIMIT 1'),
        hashOf: db.prepare('SELECT hash FROM audit_entry WHERE id = ?'),
        seq: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'audit_entry'"),
        byId: db.prepare('SELECT * FROM audit WHERE id = ?'),
        entryById: db.prepare('SELECT kind, call_id AS callId FROM audit_entry WHERE id = ?'),
        byRequest: db.prepare('SELECT * FROM audit WHERE id = (SELECT id FROM audit_call_ids WHERE request_id = ? LIMIT 1)'),
        // The call index and the entries after it, without folding outcomes in: every call asks it, and a new
        // request has no row (migration 0014).
        requestTaken: db.prepare('SELECT id FROM audit_call_ids WHERE request_id = ? LIMIT 1'),
        // One statement: the request in the index, how far the index goes, and the log's last entry.
        requestLookup: db.prepare(
          'SELECT (SELECT id FROM audit_call_index WHERE request_id = ?) AS indexed, (SELECT coalesce(max(id), 0) FROM audit_call_index) AS upTo, (SELECT coalesce(max(id), 0) FROM audit_entry) AS last',
        ),
        // A batch's look-ups at once: how far the index goes and the log's last entry, then its request ids (a JSON list).
        indexBounds: db.prepare('SELECT (SELECT coalesce(max(id), 0) FROM audit_call_index) AS upTo, (SELECT coalesce(max(id), 0) FROM audit_entry) AS last'),
        indexedRequests: db.prepare('SELECT request_id, id FROM audit_call_index WHERE request_id IN (SELECT value FROM json_each(?))'),
        // Any call whose request id starts with a prefix (>= prefix, < the prefix with its last character raised).
        requestPrefixTaken: db.prepare('SELECT id FROM audit_call_ids WHERE request_id >= ? AND request_id < ? LIMIT 1'),
        indexedUpTo: db.prepare('SELECT coalesce(max(id), 0) AS id FROM audit_call_index'),
        lastId: db.prepare('SELECT coalesce(max(id), 0) AS id FROM audit_entry'),
        // Copy the calls appended since the index's last one (OR IGNORE: a copy never stops on a bad entry).
        indexCalls: db.prepare(`INSERT OR IGNORE INTO audit_call_index (id, request_id, principal, entity_id, at)
          SELECT id, request_id, principal, entity_id, at FROM audit_entry
          WHERE id > (SELECT coalesce(max(id), 0) FROM audit_call_index) AND kind = 'call' ORDER BY id`),
        insert: db.prepare(`INSERT INTO audit_entry (id, at, v, kind, call_id, request_id, principal, session, run_id, tool, entity_id, action,
            args, decision, rule_id, reason, outcome, error, latency_ms, echo, completed_at, prev_hash, hash, done_hash)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
        pendingBefore: db.prepare("SELECT * FROM audit WHERE outcome = 'pending' AND at < ? ORDER BY id"),
        tail: db.prepare('SELECT * FROM (SELECT * FROM audit ORDER BY id DESC LIMIT ?) ORDER BY id'),
        page: db.prepare(PAGE_SQL),
        count: db.prepare('SELECT count(*) AS n FROM audit_entry'),
        countBetween: db.prepare('SELECT count(*) AS n FROM audit_entry WHERE id > ? AND id <= ?'),
      };
    } catch (err) {
      throw new AuditError(
        `audit log unavailable: cannot prepare its statements (are migrations 0002, 0009 and 0014 applied?): ${(err as Error).message}`,
        'AUDIT_UNAVAILABLE',
        {
          cause: err,
        },
      );
    }

    if (this.digestFile && this.durability !== 'connection') this.loadAnchor();

    // Every entry goes through here: numbered after the highest id ever used, chained to the last one.
    // Every entry goes through append() (always inside a transaction).
    this.callTx = db.transaction((row: NewRow, completion: Completion | null): DbAuditRow => this.callRow(row, completion));

    this.outcomeTx = db.transaction((items: Array<{ id: number; completion: Completion; followUp: boolean }>): DbAuditRow[] =>
      this.withTip(() => {
        const out: DbAuditRow[] = [];
        for (const { id, completion, followUp } of items) {
          const call = this.pendingOwn.get(id) ?? this.stmt.byId.get(id);
          if (!call) throw new AuditError(`audit: no call ${id}`, 'AUDIT_NOT_FOUND');
          if (followUp) {
            if (call.outcome !== 'unconfirmed' && call.outcome !== 'interrupted') {
              throw new AuditError(`audit: call ${id} is ${call.outcome}: only an unconfirmed or interrupted call takes a follow-up`, 'AUDIT_NOT_PENDING');
            }
            if (!FOLLOW_UP_OUTCOMES.has(completion.outcome)) throw bad(`a follow-up says confirmed or failed, not ${completion.outcome}`);
          } else if (call.outcome !== 'pending') {
            throw new AuditError(`audit: call ${id} is already ${call.outcome}`, 'AUDIT_NOT_PENDING');
          }
          const e = this.append(outcomeEntry(id, completion.outcome, completion.error, completion.latency_ms, completion.echo));
          this.pendingOwn.delete(id);
          out.push(folded(call, e));
        }
        return out;
      }),
    );

    // One commit for every pending row of a group. A duplicate is found before anything of its row is written, and one INSERT fails whole: no savepoint needed.
    this.beginTx = db.transaction((rows: NewRow[]) =>
      this.withTip(() => {
        const taken = this.requestsTaken(rows);
        return rows.map((row) => {
          try {
            return { id: this.callRow(row, null, taken).id };
          } catch (err) {
            // One row refused (a duplicate request id) leaves the others; a failure SQLite answered by
            // rolling the whole transaction back (a full disk) fails the group with its own error.
            if (!db.inTransaction) throw err;
            return { err };
          }
        });
      }),
    );

    // The pending calls are read from the log itself (the `audit` view), never from the derived index: the index's copy
    // is not part of this transaction, so a disk with no room for it still takes the interrupted outcomes.
    this.interruptTx = db.transaction((cutoff: string): DbAuditRow[] => {
      const out: DbAuditRow[] = [];
      for (const call of this.stmt.pendingBefore.all(cutoff)) {
        const e = this.append(outcomeEntry(call.id, 'interrupted', INTERRUPTED_ERROR, null, null));
        this.pendingOwn.delete(call.id);
        out.push(folded(call, e));
      }
      return out;
    });

    if (this.durability !== 'connection') {
      this.sealLegacy();
      this.indexCalls();
    }
  }

  private indexTimer?: NodeJS.Timeout;

  /**
   * Bring the readers' call index up to the log (its own transaction, not fsynced: it is derived, and rebuilt
   * from the log if a power cut loses it). Runs when the calls pause (indexSoon), at start and at close.
   */
  indexCalls(): void {
    if (this.indexTimer) clearTimeout(this.indexTimer);
    this.indexTimer = undefined;
    try {
      this.db.transaction(() => this.copyIndex()).immediate();
    } catch (err) {
      this.log.warn({ err }, 'audit: the call index could not follow the log; readers read the entries after it');
    }
  }

  /**
   * Rebuild the readers' call index from the log: verify found them disagreeing (an edited index could hide a call
   * from lists filtered by principal, entity or time). The log is the record; the index is derived from it.
   */
  rebuildIndex(): void {
    this.flushOutcomes();
    this.write(() =>
      this.db
        .transaction(() => {
          this.db.prepare('DELETE FROM audit_call_index').run();
          this.copyIndex();
        })
        .immediate(),
    );
  }

  /** Inside a transaction: copy the calls after the index into it, and forget this process's entries it now holds. */
  private copyIndex(): void {
    this.stmt.indexCalls.run();
    const upTo = this.stmt.indexedUpTo.get()?.id ?? 0;
    this.own = { valid: this.own.valid, ids: this.own.ids.filter((id) => id > upTo), calls: new Map([...this.own.calls].filter(([, id]) => id > upTo)) };
    // Nothing after the index that this process does not know of: its own list answers for the tail again.
    if ((this.stmt.lastId.get()?.id ?? 0) - upTo === this.own.ids.length) this.own.valid = true;
  }

  /**
   * The entries this process appended after the call index (ids, and its calls by request id), so that the
   * duplicate check and byRequestId() need not scan the tail: when the tail is exactly these entries (no
   * other writer appended, nothing was rolled back or deleted), they answer for it. Otherwise the tail is read.
   */
  private own: { valid: boolean; ids: number[]; calls: Map<string, number> } = { valid: false, ids: [], calls: new Map() };

  /** A transaction rolled back (or may have): the tail is read from the log until an index copy accounts for it. */
  private forgetOwn(): void {
    this.own = { valid: false, ids: [], calls: new Map() };
    this.pendingOwn.clear();
  }

  /**
   * The pending calls this process wrote, as the `audit` view has them, while no other writer has appended since:
   * their outcomes need not read each call back through the view (a scene's 50 outcomes read 50 calls). Only
   * what was committed and is still pending is here; anything else is read from the log.
   */
  private readonly pendingOwn = new Map<number, DbAuditRow>();

  /**
   * The log's last entry before this process appends: another writer's entries since ours, or a deleted tail, and
   * what it knows of its pending calls is read again, and its own list no longer answers for the tail, so the index
   * is copied after the next outcome's commit (else every call of this process scanned the tail until a pause).
   */
  private noteTail(lastId: number): void {
    if (lastId === this.lastWrittenId) return;
    this.pendingOwn.clear();
    this.own.valid = false;
  }

  /** The call with this request id, if any: the index, then the entries after it. Inside or outside a transaction. */
  private callWithRequest(requestId: string): number | undefined {
    const { indexed, upTo, last } = this.stmt.requestLookup.get(requestId)!;
    if (indexed !== null) return indexed;
    if (this.own.valid) {
      // own.ids ascend: how many are after the index.
      const ids = this.own.ids;
      let lo = 0;
      let hi = ids.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (ids[mid]! > upTo) hi = mid;
        else lo = mid + 1;
      }
      if (last - upTo === ids.length - lo) {
        const id = this.own.calls.get(requestId);
        return id !== undefined && id > upTo ? id : undefined;
      }
    }
    return this.stmt.requestTaken.get(requestId)?.id;
  }

  /**
   * callWithRequest() for a batch about to be appended, inside its write transaction: the index is asked
   * once for every request id (one statement, not one per row), and the tail after it answered from this
   * process's own list, which the batch's own appends extend. When the tail is not all this process's
   * (another writer appended), each row is looked up as before.
   */
  private requestsTaken(rows: NewRow[]): (requestId: string) => number | undefined {
    if (rows.length < 2) return (requestId) => this.callWithRequest(requestId);
    const { upTo, last } = this.stmt.indexBounds.get()!;
    const ids = this.own.ids;
    let after = 0;
    for (let i = ids.length - 1; i >= 0 && ids[i]! > upTo; i--) after++;
    if (!this.own.valid || last - upTo !== after) return (requestId) => this.callWithRequest(requestId);
    const indexed = new Map<string, number>();
    for (const r of this.stmt.indexedRequests.all(JSON.stringify(rows.map((r) => r.request_id)))) indexed.set(r.request_id, r.id);
    return (requestId) => {
      const id = indexed.get(requestId);
      if (id !== undefined) return id;
      const own = this.own.calls.get(requestId);
      return own !== undefined && own > upTo ? own : undefined;
    };
  }

  /**
   * Whether any call's request id starts with `prefix` (a grouped call's members are `<request id>#<entity>`):
   * one look-up before asking for each member. False for a new request, the usual case.
   */
  anyRequestStartingWith(prefix: string): boolean {
    const last = prefix.charCodeAt(prefix.length - 1);
    // Not a plain last character (none, a surrogate): say maybe, and let the caller ask for each.
    if (!prefix || (last >= 0xd800 && last <= 0xdfff) || last === 0xffff) return true;
    // The first string after every one that starts with the prefix: its last character raised by one
    // (UTF-8, as SQLite compares, keeps the order of code points).
    const end = prefix.slice(0, -1) + String.fromCharCode(last + 1);
    try {
      return this.stmt.requestPrefixTaken.get(prefix, end) !== undefined;
    } catch (err) {
      throw unavailable(err);
    }
  }

  /**
   * indexCalls() once the calls pause for INDEX_IDLE_MS. Copying each call into the index's five b-trees in the
   * outcome's commit (issue 45) more than doubled that commit, which the caller waits for, and the pages it
   * dirtied went into the next call's fsync; readers meanwhile find the calls after the index in the log's tail.
   */
  private indexSoon(): void {
    if (this.indexTimer) {
      this.indexTimer.refresh();
      return;
    }
    this.indexTimer = setTimeout(() => this.indexCalls(), INDEX_IDLE_MS);
    this.indexTimer.unref();
  }

  /** Number and chain one entry after the highest id ever used; inside a transaction. */
  private append(entry: Unchained, at = this.now().toISOString()): DbAuditEntry {
    const tip = this.tip;
    const last = tip ?? this.stmt.last.get();
    const lastId = last?.id ?? 0;
    // withTip() noted the tail when its transaction began (its first entry would note it again, after the copy).
    if (!tip) this.noteTail(lastId);
    if (lastId < this.lastWrittenId) {
      this.log.error(
        { lastId, lastWrittenId: this.lastWrittenId },
        `audit: the log ends at row ${lastId}, but this process wrote up to row ${this.lastWrittenId}: rows were deleted`,
      );
    }
    // AUTOINCREMENT's high-water mark: a deleted tail row's id is not reused, so verify sees the gap.
    const id = Math.max(lastId, tip ? tip.seq : (this.stmt.seq.get()?.seq ?? 0)) + 1;
    // The caller's entry is a fresh object: numbered and chained in place (copying its 24 fields twice per
    // entry, and binding them by name, was a third of a group commit's time).
    const out = entry as DbAuditEntry;
    out.id = id;
    out.at = at;
    out.prev_hash = last?.hash ?? GENESIS_HASH;
    out.hash = entryHash(out.prev_hash, out);
    this.stmt.insert.run(
      out.id,
      out.at,
      out.v,
      out.kind,
      out.call_id,
      out.request_id,
      out.principal,
      out.session,
      out.run_id,
      out.tool,
      out.entity_id,
      out.action,
      out.args,
      out.decision,
      out.rule_id,
      out.reason,
      out.outcome,
      out.error,
      out.latency_ms,
      out.echo,
      out.completed_at,
      out.prev_hash,
      out.hash,
      out.done_hash,
    );
    this.own.ids.push(id);
    if (entry.kind === 'call' && entry.request_id) this.own.calls.set(entry.request_id, id);
    this.lastWrittenId = Math.max(this.lastWrittenId, id);
    if (tip) this.tip = { id, hash: out.hash, seq: id };
    return out;
  }

  /** A call entry (pending, or finished at once); inside a transaction. Throws AUDIT_DUPLICATE before writing anything. */
  private callRow(row: NewRow, completion: Completion | null, taken?: (requestId: string) => number | undefined): DbAuditRow {
    const dup = taken ? taken(row.request_id) : this.callWithRequest(row.request_id);
    if (dup !== undefined) {
      throw new AuditError(`audit: request ${row.request_id} already has row ${dup}`, 'AUDIT_DUPLICATE', { existingId: dup });
    }
    // A call finished at once carries its outcome, and its own time as completed_at.
    const at = this.now().toISOString();
    // Every field written out (not spread from a template and the row): one object of one shape per call.
    const e = this.append(
      {
        v: 2,
        kind: 'call',
        call_id: null,
        request_id: row.request_id,
        principal: row.principal,
        session: row.session,
        run_id: row.run_id,
        tool: row.tool,
        entity_id: row.entity_id,
        action: row.action,
        args: row.args,
        decision: row.decision,
        rule_id: row.rule_id,
        reason: row.reason,
        outcome: completion?.outcome ?? 'pending',
        error: completion?.error ?? null,
        latency_ms: completion?.latency_ms ?? null,
        echo: completion?.echo ?? null,
        completed_at: completion ? at : null,
        done_hash: null,
      },
      at,
    ) as unknown as DbAuditRow;
    // Readers see a call finished at once as sealed by its own hash (the `audit` view's done_hash).
    if (completion) e.done_hash = e.hash;
    // As the view has it until its outcome (forgotten if this transaction rolls back: forgetOwn). Bounded: calls
    // begun and never finished by this process are read from the log.
    else {
      if (this.pendingOwn.size >= MAX_PENDING_KNOWN) this.pendingOwn.clear();
      this.pendingOwn.set(e.id, asPendingRow(e));
    }
    return e;
  }

  /** Run fn with the chain's tip kept in memory between its entries (one read of the tail per transaction, not per entry). */
  private withTip<T>(fn: () => T): T {
    const last = this.stmt.last.get();
    this.noteTail(last?.id ?? 0);
    this.tip = { id: last?.id ?? 0, hash: last?.hash ?? GENESIS_HASH, seq: Math.max(last?.id ?? 0, this.stmt.seq.get()?.seq ?? 0) };
    try {
      return fn();
    } finally {
      this.tip = undefined;
    }
  }

  /**
   * Rows written before migration 0009 (v1) had their outcome outside the
   * chain. The first writer binds them with a seal entry: a hash over every
   * stored field of each, so any later change to them breaks the chain.
   */
  private sealLegacy(): void {
    try {
      this.db
        .transaction(() => {
          const seal = legacySealNeeded(this.db);
          if (!seal) return;
          const e = bareEntry('seal', seal.lastId);
          e.args = canonicalJson(seal);
          e.reason = `sealed ${seal.count} rows written before the audit became append-only (migration 0009)`;
          this.append(e);
          this.log.info({ rows: seal.count, upTo: seal.lastId }, 'audit: sealed the rows written before the append-only audit');
        })
        .immediate();
      this.committed();
    } catch (err) {
      this.forgetOwn();
      this.log.error({ err }, 'audit: cannot seal the rows written before the append-only audit; `hearth audit verify` will report them');
    }
  }

  // ------------------------------------------------------------ writing

  /** One write transaction; a rolled-back one leaves no trace in lastWrittenId. Database errors become AUDIT_UNAVAILABLE. */
  private write<T>(fn: () => T): T {
    const lastWrittenId = this.lastWrittenId;
    try {
      return fn();
    } catch (err) {
      this.forgetOwn();
      if (!this.queue) this.lastWrittenId = lastWrittenId;
      throw unavailable(err);
    }
  }

  /** Write a pending row before anything is published; returns its id. Throws AuditError (fail closed). */
  begin(entry: AuditEntry): number {
    return this.beginRow(normalizeEntry(entry));
  }

  private beginRow(row: NewRow): number {
    const r = this.write(() => this.callTx.immediate(row, null));
    this.committed();
    this.log.debug({ audit: r.id, requestId: r.request_id, principal: r.principal, tool: r.tool, entity: r.entity_id, action: r.action }, 'audit: begin');
    return r.id;
  }

  /**
   * begin() with group commit: resolves with the row's id once the row is on disk (with `full`
   * durability), so the caller may publish. The rows that arrive in one turn of the event loop share
   * one commit and one fsync (a lone caller pays exactly one of each). Rejects with an
   * AuditError like begin() throws (fail closed); a row whose fsync failed gets a `not_sent` outcome.
   * With `grouped` durability it resolves after the commit, as begin() returns.
   */
  beginDurable(entry: AuditEntry): Promise<number> {
    let row: NewRow;
    try {
      row = normalizeEntry(entry);
      if (this.durability !== 'full' || !this.walSync) {
        const id = this.beginRow(row);
        // Its command travels from now: outcomes queued meanwhile wait (see finishLater).
        this.lastActivity = performance.now();
        if (this.inFlight.size < 100_000) this.inFlight.set(id, this.lastActivity);
        return Promise.resolve(id);
      }
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<number>((resolve, reject) => {
      this.beginQueue.push({ row, resolve, reject });
      // Every caller of this turn joins the group (a scene's calls arrive together).
      if (!this.groupScheduled) {
        this.groupScheduled = true;
        setImmediate(() => this.runGroup());
      }
      // Outcomes queued earlier wait until the calls pause: this call's command is about to travel.
      this.lastActivity = performance.now();
    });
  }

  /**
   * The pending rows that arrived in this turn of the event loop, in one commit and one fdatasync
   * of the write-ahead log on this thread (measured here: a thread-pool fsync and its wake-ups cost
   * 2-3x a synchronous=FULL commit for a lone caller). Callers are resolved after it, in order.
   */
  private runGroup(): void {
    this.groupScheduled = false;
    const batch = this.beginQueue;
    this.beginQueue = [];
    if (!batch.length) return;
    const ws = this.walSync;
    if (!ws || this.durability !== 'full') {
      // The fsync failed earlier: every commit syncs itself now.
      for (const b of batch) {
        try {
          b.resolve(this.beginRow(b.row));
        } catch (err) {
          b.reject(err);
        }
      }
      return;
    }
    let results: Array<{ id?: number; err?: unknown }>;
    try {
      results = this.write(() => this.beginTx.immediate(batch.map((b) => b.row)));
    } catch (err) {
      for (const b of batch) b.reject(err);
      return;
    }
    this.pendingCommits++;
    // This fsync covers every outcome committed before it.
    if (this.lazySyncTimer) clearTimeout(this.lazySyncTimer);
    this.lazySyncTimer = undefined;
    try {
      ws.syncNow();
      this.pendingSyncs++;
    } catch (err) {
      this.syncFailed(ws, err as Error);
      this.notDurable(
        results.filter((r) => r.id !== undefined).map((r) => r.id!),
        err,
      );
      for (const [i, b] of batch.entries()) b.reject(results[i]!.err !== undefined ? rethrown(results[i]!.err) : unavailable(err));
      return;
    }
    for (const [i, b] of batch.entries()) {
      const r = results[i]!;
      if (r.id === undefined) {
        b.reject(rethrown(r.err));
        continue;
      }
      if (this.inFlight.size < 100_000) this.inFlight.set(r.id, performance.now());
      this.log.debug(
        {
          audit: r.id,
          requestId: b.row.request_id,
          principal: b.row.principal,
          tool: b.row.tool,
          entity: b.row.entity_id,
          action: b.row.action,
          group: batch.length,
        },
        'audit: begin',
      );
      b.resolve(r.id);
    }
  }

  /** Pending rows whose fsync failed: nothing will be published for them; say so in the log (now synchronous=FULL). */
  private notDurable(ids: number[], err: unknown): void {
    if (!ids.length) return;
    try {
      this.appendOutcomes(
        ids.map((id) => ({
          id,
          completion: {
            outcome: 'not_sent' as const,
            error: `the audit row could not be made durable (${(err as Error).message}); nothing was sent`,
            latency_ms: null,
            echo: null,
          },
          followUp: false,
        })),
      );
    } catch (e) {
      this.log.error({ err: e, ids }, 'audit: calls whose row could not be made durable stay pending until the next start');
    }
  }

  /**
   * Append the outcome of a pending call. Throws AUDIT_NOT_FOUND / AUDIT_NOT_PENDING,
   * or AUDIT_UNAVAILABLE when the database refuses (the call then stays
   * pending until markInterrupted at the next start).
   */
  finish(id: number, completion: AuditCompletion): void {
    this.inFlight.delete(id);
    this.flushOutcomes();
    this.appendOutcomes([{ id, completion: normalizeCompletion(completion), followUp: false }]);
  }

  /** Append a reconciliation of an unconfirmed or interrupted call (a late report). Throws like finish(). */
  followUp(id: number, completion: AuditCompletion): void {
    this.flushOutcomes();
    this.appendOutcomes([{ id, completion: normalizeCompletion(completion), followUp: true }]);
  }

  /**
   * The outcome off the caller's path (issues 18, 33): queued, and appended with every other outcome queued
   * meanwhile in one transaction on the next turn when no call is starting or travelling; else once the calls
   * pause (OUTCOME_IDLE_MS without a call beginning or ending, none travelling), or when OUTCOME_BATCH are
   * queued or the oldest has waited OUTCOME_MAX_WAIT_MS. (Always committed on the next turn, it ran while the
   * next call's command travelled and delayed its echo: ~0.1 ms of a 0.2 ms round trip.) A failure is logged;
   * the call stays pending until the next start marks it interrupted. Every read in this process, durable(),
   * close() and flushOutcomes() commit the queue first.
   */
  finishLater(id: number, completion: AuditCompletion): void {
    const now = performance.now();
    if (!this.laterQueue.length) this.laterSince = now;
    this.laterQueue.push({ id, completion: normalizeCompletion(completion) });
    this.inFlight.delete(id);
    this.lastActivity = now;
    if (this.laterQueue.length >= OUTCOME_BATCH) {
      if (this.laterTimer) clearTimeout(this.laterTimer);
      this.laterTimer = setTimeout(() => this.flushOutcomes(), 0);
    } else if (!this.laterTimer && !this.laterImmediate) {
      // On the next turn when no call is starting or travelling (a lone call: its outcome is readable at once,
      // from any process); else once the calls pause.
      this.laterImmediate = setImmediate(() => {
        this.laterImmediate = undefined;
        if (!this.beginQueue.length && !this.travelling()) return this.flushOutcomes();
        this.laterTimer ??= setTimeout(() => this.outcomesDue(), OUTCOME_IDLE_MS);
      });
    }
  }

  /** Callers waiting for the outcomes queued so far to be committed (outcomesCommitted). */
  private committedWaiters: Array<() => void> = [];
  private committedImmediate?: NodeJS.Immediate;

  /**
   * Resolves once every outcome queued by finishLater() so far is committed: the pipeline answers its caller only
   * then (issue 40: answered "confirmed", the process killed before the outcome's commit, the audit said
   * "interrupted"). A waiter commits the queue on the next turn, with every outcome queued in this one, instead of
   * waiting for a pause in the calls; a failed append is logged and resolves too (the call then stays pending).
   */
  outcomesCommitted(): Promise<void> {
    if (!this.laterQueue.length) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.committedWaiters.push(resolve);
      this.committedImmediate ??= setImmediate(() => {
        this.committedImmediate = undefined;
        this.flushOutcomes();
      });
    });
  }

  /** Whether a command is travelling; one granted longer ago than any confirmation waits was lost (a bug, not a call). */
  private travelling(): boolean {
    if (!this.inFlight.size) return false;
    const stale = performance.now() - IN_FLIGHT_MAX_MS;
    for (const [id, at] of this.inFlight) if (at < stale) this.inFlight.delete(id);
    return this.inFlight.size > 0;
  }

  /** The outcome timer: commit now if the calls paused or the oldest waited long enough, else look again later. */
  private outcomesDue(): void {
    this.laterTimer = undefined;
    if (!this.laterQueue.length) return;
    const now = performance.now();
    // A pause with a command still travelling is no pause: the commit would delay its echo.
    const idleAt = Math.max(this.lastActivity + OUTCOME_IDLE_MS, this.travelling() ? now + OUTCOME_IDLE_MS : 0);
    const deadline = this.laterSince + OUTCOME_MAX_WAIT_MS;
    if (now >= idleAt || now >= deadline) return this.flushOutcomes();
    this.laterTimer = setTimeout(() => this.outcomesDue(), Math.max(1, Math.min(idleAt, deadline) - now));
  }

  /** Commit every outcome given to finishLater() (one transaction; one by one if that fails). */
  flushOutcomes(): void {
    if (this.laterTimer) clearTimeout(this.laterTimer);
    this.laterTimer = undefined;
    if (this.laterImmediate) clearImmediate(this.laterImmediate);
    this.laterImmediate = undefined;
    const items = this.laterQueue.map((x) => ({ ...x, followUp: false }));
    this.laterQueue = [];
    const waiters = this.committedWaiters;
    this.committedWaiters = [];
    if (this.committedImmediate) clearImmediate(this.committedImmediate);
    this.committedImmediate = undefined;
    try {
      this.appendLater(items);
    } finally {
      for (const w of waiters) w();
    }
  }

  private appendLater(items: Array<{ id: number; completion: Completion; followUp: boolean }>): void {
    if (!items.length) return;
    try {
      this.appendOutcomes(items, true);
    } catch {
      // One bad item must not cost the others their outcome.
      for (const item of items) {
        try {
          this.appendOutcomes([item], true);
        } catch (err) {
          this.log.error({ err, audit: item.id }, 'audit: the outcome of a call could not be appended; it stays pending until the next start');
        }
      }
    }
  }

  private appendOutcomes(items: Array<{ id: number; completion: Completion; followUp: boolean }>, lazy = false): void {
    const rows = this.write(() => this.outcomeTx.immediate(items));
    if (lazy) this.committedLazily(items.length);
    else this.committed();
    // The readers' index follows the log when the calls pause (indexSoon), never in a pending row's commit; here
    // once the tail after it is long (a bounded tail for readers to scan), or not all this process's own. In a
    // transaction of its own, after the outcomes': a copy the disk has no room for (a long tail in five b-trees)
    // makes SQLite undo its whole transaction, and the derived index must not cost the outcomes their entries.
    if ((!this.own.valid || this.own.ids.length >= INDEX_BATCH) && !this.db.inTransaction) this.indexCalls();
    this.completed(rows);
    if (this.own.ids.length) this.indexSoon();
  }

  /** Write one finished row at once (denied, or not sent); returns its id. Throws AuditError. */
  record(entry: AuditEntry, completion: AuditCompletion): number {
    const row = normalizeEntry(entry);
    const c = normalizeCompletion(completion);
    const r = this.write(() => this.callTx.immediate(row, c));
    this.committed();
    this.completed([r]);
    this.indexSoon();
    return r.id;
  }

  /** On start: pending calls begun more than olderThanMs ago get an `interrupted` outcome. Returns how many. */
  markInterrupted(olderThanMs: number): number {
    this.flushOutcomes();
    const cutoff = new Date(this.now().getTime() - Math.max(0, olderThanMs)).toISOString();
    const rows = this.write(() => this.interruptTx.immediate(cutoff));
    this.committed();
    this.indexCalls();
    if (rows.length) {
      this.log.warn({ count: rows.length, ids: rows.map((r) => r.id) }, `audit: ${rows.length} call(s) left pending by an earlier run marked interrupted`);
      this.completed(rows);
    }
    return rows.length;
  }

  /**
   * Run several writes in one transaction (group commit: one fsync). Events,
   * log lines and the digest follow the commit; on a throw everything in the
   * group is rolled back and the error is rethrown (database errors as
   * AUDIT_UNAVAILABLE). Nested groups join the outer one.
   */
  group<T>(fn: () => T): T {
    if (this.queue) return fn();
    this.queue = [];
    const lastWrittenId = this.lastWrittenId;
    let result: T;
    let done: DbAuditRow[];
    try {
      result = this.db.transaction(fn).immediate();
      this.committed();
      done = this.queue;
    } catch (err) {
      this.forgetOwn();
      this.lastWrittenId = lastWrittenId;
      throw err instanceof AuditError || !isDbError(err) ? err : unavailable(err);
    } finally {
      this.queue = null;
    }
    if (done.length) this.completed(done);
    return result;
  }

  /** After a commit: emit, log, and write the digest. Inside a group(): after the group's commit. */
  private completed(rows: DbAuditRow[]): void {
    if (this.queue) {
      this.queue.push(...rows);
      return;
    }
    // The row as listeners see it (its args parsed) only when someone listens: a scene's 50 outcomes parsed 50 args for nobody.
    const listened = this.listenerCount('row') > 0;
    for (const r of rows) {
      this.log.info(
        {
          audit: r.id,
          requestId: r.request_id,
          principal: r.principal,
          tool: r.tool,
          entity: r.entity_id,
          action: r.action,
          outcome: r.outcome,
          latencyMs: r.latency_ms,
          ...(r.error ? { error: r.error } : {}),
        },
        `audit: ${r.tool} ${r.action} ${r.outcome}`,
      );
      if (!listened) continue;
      try {
        this.emit('row', fromDb(r));
      } catch (err) {
        this.log.error({ err, audit: r.id }, 'audit: a row listener threw');
      }
    }
    if (this.digestFile) this.scheduleDigest();
  }

  // ------------------------------------------------------------ durability

  /**
   * After a commit. Full: fsync the write-ahead log on this thread before going on (what
   * synchronous=FULL does; a failed fsync throws AUDIT_UNAVAILABLE). Grouped: start (or join)
   * the fsync that puts it on disk.
   */
  private committed(): void {
    const ws = this.walSync;
    if (!ws) {
      // A synchronous=FULL commit has synced the whole log, earlier rows included.
      this.syncing = undefined;
      return;
    }
    if (this.durability === 'full') {
      if (this.lazySyncTimer) clearTimeout(this.lazySyncTimer);
      this.lazySyncTimer = undefined;
      try {
        ws.syncNow();
      } catch (err) {
        this.syncFailed(ws, err as Error);
        throw unavailable(err);
      }
      return;
    }
    void this.startSync(ws).catch(() => undefined);
  }

  /** After an outcome's commit (finishLater): full durability fsyncs it soon, off every caller's path. */
  private committedLazily(outcomes: number): void {
    const ws = this.walSync;
    if (!ws || this.durability !== 'full') return this.committed();
    // A scene's outcomes (and their call index copies) are many pages: left for the next pending row's
    // fsync, they doubled it. Their own fsync starts now on the thread pool, off every caller's path.
    if (outcomes >= EARLY_SYNC_OUTCOMES) {
      if (this.lazySyncTimer) clearTimeout(this.lazySyncTimer);
      this.lazySyncTimer = undefined;
      void this.startSync(ws).catch(() => undefined);
      return;
    }
    this.lazySyncTimer ??= setTimeout(() => {
      this.lazySyncTimer = undefined;
      void this.startSync(ws).catch(() => undefined);
    }, LAZY_SYNC_MS);
    this.lazySyncTimer.unref();
  }

  /** Start (or join) an fsync on the thread pool covering every commit made so far. */
  private startSync(ws: WalSync): Promise<void> {
    const p = ws.sync();
    this.syncing = p;
    p.then(
      () => {
        if (this.syncing === p) this.syncing = undefined;
      },
      (err: Error) => this.syncFailed(ws, err),
    );
    return p;
  }

  /** fsyncs of the write-ahead log done so far (0 when each commit syncs itself). */
  get fsyncs(): number {
    return this.walSync?.flushes ?? 0;
  }

  /** A failed fsync: say so, and make every later commit wait for the disk (a broken disk then fails calls closed). */
  private syncFailed(ws: WalSync, err: Error): void {
    if (this.walSync !== ws) return;
    this.walSync = undefined;
    this.durability = 'full';
    this.log.error(
      { err, wal: ws.walPath },
      'audit: fsync of the write-ahead log failed; rows since the last good fsync may not be on disk. Every audit commit now waits for the disk (synchronous=FULL)',
    );
    try {
      this.db.pragma('synchronous = FULL');
    } catch {
      // The next commit reports the database's state itself.
    }
    void ws.close();
  }

  /**
   * Resolves when every row given so far (outcomes queued by finishLater included) is on disk: at once with `full`
   * durability, after the running group fsync with `grouped`. Rejects when
   * that fsync failed.
   */
  durable(): Promise<void> {
    // Outcomes still waiting for a pause in the calls are written first: everything given to the store so far.
    this.flushOutcomes();
    if (this.lazySyncTimer && this.walSync) {
      clearTimeout(this.lazySyncTimer);
      this.lazySyncTimer = undefined;
      return this.startSync(this.walSync);
    }
    return this.syncing ?? Promise.resolve();
  }

  /** Make everything written durable, write the digest, and let go of the log file. The database stays open. */
  async close(): Promise<void> {
    this.flushOutcomes();
    this.runGroup();
    if (this.indexTimer) this.indexCalls();
    if (this.lazySyncTimer) {
      clearTimeout(this.lazySyncTimer);
      this.lazySyncTimer = undefined;
      if (this.walSync) void this.startSync(this.walSync).catch(() => undefined);
    }
    this.flushDigest();
    if (this.syncing) await this.syncing.catch(() => undefined);
    await this.walSync?.close();
  }

  private digestTimer?: NodeJS.Timeout;
  /** The newest row a written digest vouches for: an older digest never overwrites a newer one. */
  private digestUpTo = 0;

  /**
   * The digest costs a file write, an fsync and a rename: write it at most
   * every 200 ms (and on flushDigest/close), and only for rows already on
   * disk. A lagging digest vouches for fewer rows; it never raises a false alarm.
   */
  private scheduleDigest(): void {
    if (this.digestTimer) return;
    this.digestTimer = setTimeout(() => {
      this.digestTimer = undefined;
      const ws = this.walSync;
      if (!ws) return this.flushDigest();
      let d: Digest;
      try {
        d = this.digest();
      } catch (err) {
        return this.log.error({ err, digestFile: this.digestFile }, 'audit: cannot read the digest');
      }
      // The fsync asked for after reading covers every row the digest counts.
      ws.sync().then(
        () => this.writeDigestOnce(d),
        () => undefined, // syncFailed said it; the next digest comes after a synchronous commit
      );
    }, 200);
    this.digestTimer.unref();
  }

  /**
   * The entry the last digest vouched for (read from the file at start, when its signature holds).
   * A new digest is signed only while that entry still has that hash: whoever rewrites the chain
   * below it does not get the forgery signed by the next digest.
   */
  private anchor?: { lastId: number; lastHash: string };
  private anchorChecked = false;
  private anchorBroken = false;
  private readonly sequenceFile?: string;
  /** The last digest's number; the next one written gets the one after it. */
  private digestSeq = 0;
  /**
   * Entries found after the last signed digest when this process started: no Hearth vouched for them (a crash
   * within a digest's moment, or entries appended by whoever can write the file). No digest is signed over
   * them until an owner accepts them (`hearth audit accept`), which writes a digest that covers them.
   */
  private unvouched?: { from: number; to: number };
  /**
   * What is wrong with the digest, the sequence file or the database's note (chain.ts, anchorState): a digest
   * missing or garbage though digests were written, a rollback, a missing sequence file. Tampering, never a
   * fresh start: nothing is signed until an owner accepts (then the files say so, and this is cleared).
   */
  private findings: string[] = [];
  /** The findings already logged (each is said once per process). */
  private readonly findingsSaid = new Set<string>();
  /** Whether the database's note that signed digests are written here exists (written once). */
  private marked = false;

  /** The database's note that signed digests are written here (prepared on first use: a reader never asks). */
  private markStatements?: { read: Statement<[], DigestMark>; write: Statement<[number, string]> };
  private get marks(): { read: Statement<[], DigestMark>; write: Statement<[number, string]> } {
    this.markStatements ??= {
      read: this.db.prepare('SELECT first_seq AS firstSeq, at FROM audit_digest_mark WHERE id = 1'),
      write: this.db.prepare('INSERT OR IGNORE INTO audit_digest_mark (id, first_seq, at) VALUES (1, ?, ?)'),
    };
    return this.markStatements;
  }

  /** The files the trust rests on, as they are now. */
  private assess(): AnchorState {
    const files = { digestFile: this.digestFile!, ...(this.key ? { key: this.key } : {}), ...(this.sequenceFile ? { sequenceFile: this.sequenceFile } : {}) };
    return anchorState(this.db, files, { mark: () => this.marks.read.get(), hasEntries: () => this.stmt.last.get() !== undefined });
  }

  private loadAnchor(): void {
    this.anchorChecked = true;
    if (!this.digestFile) return;
    for (const f of [this.digestFile, this.sequenceFile]) if (f) tighten(f, this.log);
    const lastAtStart = this.stmt.last.get()?.id ?? 0;
    const state = this.assess();
    this.digestSeq = state.highest;
    this.marked = this.marks.read.get() !== undefined;
    const d = state.digest;
    if (d) {
      if (d.lastId > 0) this.anchor = { lastId: d.lastId, lastHash: d.lastHash };
      if (this.key && lastAtStart > d.lastId) this.unvouched = { from: d.lastId + 1, to: lastAtStart };
    } else if (state.findings.length && lastAtStart > 0) {
      this.unvouched = { from: (state.read?.lastId ?? 0) + 1, to: lastAtStart };
    }
    this.noteFindings(state.findings);
    if (this.unvouched && !this.findings.length) {
      const { from, to } = this.unvouched;
      this.log.error(
        { digestFile: this.digestFile, from, to },
        `audit: entries ${from}..${to} come after the last signed digest: no Hearth vouched for them (a crash just after a call, or entries added to the file). No digest is signed over them until an owner has checked them: \`hearth audit verify\`, then \`hearth audit accept --through ${to}\``,
      );
    }
  }

  /** Keep the findings (signing stops while there are any), and log each new one once. */
  private noteFindings(findings: string[]): void {
    this.findings = findings;
    const fresh = findings.filter((f) => !this.findingsSaid.has(f));
    if (!fresh.length) return;
    for (const f of fresh) this.findingsSaid.add(f);
    this.log.error(
      { digestFile: this.digestFile, sequenceFile: this.sequenceFile, findings: fresh },
      `audit: a file the audit's trust rests on was tampered with: ${fresh.join('; ')}. No digest is signed until an owner has looked: \`hearth audit verify\` says what is wrong, and \`hearth audit accept\` prints the evidence and vouches for the log as it is now`,
    );
  }

  /**
   * Whether a digest may be signed now: no findings, and the entries found unvouched at start covered by a
   * digest an owner wrote since (`hearth audit accept`). The files are read again each time, so tampering
   * while Hearth runs (a digest deleted or put back) stops signing too.
   */
  private maySign(): AnchorState | undefined {
    const state = this.assess();
    if (state.findings.length) {
      this.noteFindings(state.findings);
      return undefined;
    }
    const d = state.digest;
    if (this.findings.length || this.unvouched) {
      // Accepted only by a digest (signed, when there is a key) that covers every entry found unvouched.
      if (!d || (this.unvouched && d.lastId < this.unvouched.to)) return undefined;
      this.findings = [];
      this.unvouched = undefined;
      this.anchor = { lastId: d.lastId, lastHash: d.lastHash };
      this.anchorBroken = false;
    } else if (d && (d.seq ?? 0) > this.digestSeq) {
      // A signed digest newer than this process's last (an owner's \`hearth audit accept\`, another Hearth process):
      // what it vouches for is the anchor now.
      this.digestSeq = d.seq!;
      this.anchor = { lastId: d.lastId, lastHash: d.lastHash };
      this.anchorBroken = false;
    }
    return state;
  }

  private writeDigestOnce(d: Digest): void {
    if (!this.digestFile || d.lastId < this.digestUpTo) return;
    if (!this.anchorChecked) this.loadAnchor();
    const state = this.maySign();
    if (!state) return;
    const a = this.anchor;
    if (a && a.lastId <= d.lastId && this.stmt.hashOf.get(a.lastId)?.hash !== a.lastHash) {
      if (!this.anchorBroken) {
        this.log.error(
          { digestFile: this.digestFile, anchorId: a.lastId },
          `audit: entry ${a.lastId} no longer has the hash the last digest vouched for: the log was changed below it. No digest is signed over it: \`hearth audit verify\` says where; an owner who has accounted for the log runs \`hearth audit accept\`, which prints the evidence and vouches for the log as it is now`,
        );
      }
      this.anchorBroken = true;
      return;
    }
    try {
      this.writeNumbered(this.digestFile, d, state.highest);
      this.digestUpTo = d.lastId;
      if (d.lastId > 0) this.anchor = { lastId: d.lastId, lastHash: d.lastHash };
    } catch (err) {
      this.log.error({ err, digestFile: this.digestFile }, 'audit: cannot write the digest file');
    }
  }

  /** Write the pending digest now (at shutdown), after an fsync on this thread when commits are grouped. */
  flushDigest(): void {
    if (this.digestTimer) clearTimeout(this.digestTimer);
    this.digestTimer = undefined;
    if (!this.digestFile) return;
    try {
      this.walSync?.syncNow();
      this.writeDigestOnce(this.digest());
    } catch (err) {
      this.log.error({ err, digestFile: this.digestFile }, 'audit: cannot write the digest file');
    }
  }

  /** Write the tail digest ({count, lastId, lastHash, at}) atomically; default: the configured digestFile. */
  writeDigest(path: string | undefined = this.digestFile): Digest {
    if (!path) throw new Error('audit: no digest file configured');
    return this.writeNumbered(path, this.digest(), this.digestSeq);
  }

  /**
   * What an owner is asked to accept: what is wrong with the files the trust rests on, the highest digest
   * number known, and the entries no signed digest vouches for (all of them when there is no digest to trust).
   */
  acceptEvidence(): AcceptEvidence {
    if (!this.digestFile) throw new AuditError('audit: there is no digest file to write (audit.digest_file)', 'AUDIT_NO_DIGEST');
    const state = this.assess();
    const lastId = this.stmt.last.get()?.id ?? 0;
    // Entries after the last digest that still holds (signed, and its entry unchanged), else all of them.
    const d = state.read;
    const held = d && (d.lastId === 0 || this.stmt.hashOf.get(d.lastId)?.hash === d.lastHash) ? d.lastId : 0;
    const count = lastId > held ? (this.stmt.countBetween.get(held, lastId)?.n ?? 0) : 0;
    // A chain rewritten below the digest (its hashes recomputed) is no finding about the files, but it is evidence.
    const files = { digestFile: this.digestFile, ...(this.key ? { key: this.key } : {}), ...(this.sequenceFile ? { sequenceFile: this.sequenceFile } : {}) };
    const broken = state.findings.length ? undefined : verify(this.db, files).firstBroken;
    return {
      findings: broken ? [broken.reason] : state.findings,
      highestSeq: state.highest,
      lastId,
      ...(count > 0 ? { unvouched: { from: held + 1, to: lastId, count } } : {}),
    };
  }

  /**
   * An owner has checked the entries up to `throughId` (default: all), and what is wrong with the files
   * (acceptEvidence): write a signed digest numbered after every one known, that vouches for them, so that
   * a Hearth signs again. Refused when the chain up to there does not verify.
   */
  accept(throughId?: number): Digest {
    if (!this.digestFile) throw new AuditError('audit: there is no digest file to write (audit.digest_file)', 'AUDIT_NO_DIGEST');
    const last = this.stmt.last.get();
    const upTo = throughId ?? last?.id ?? 0;
    if (!last || upTo > last.id || upTo < 1)
      throw new AuditError(`audit: there is no entry ${upTo} to accept through (the last is ${last?.id ?? 0})`, 'AUDIT_NO_ENTRY');
    const check = verify(this.db);
    if (check.firstBroken && check.firstBroken.id <= upTo && check.firstBroken.kind !== 'digest' && check.firstBroken.kind !== 'index')
      throw new AuditError(`audit: entry ${check.firstBroken.id} is broken (${check.firstBroken.reason}): nothing is accepted over it`, 'AUDIT_BROKEN');
    const hash = this.stmt.hashOf.get(upTo)?.hash;
    const count = this.stmt.countBetween.get(0, upTo)?.n ?? 0;
    if (!hash) throw new AuditError(`audit: entry ${upTo} is missing`, 'AUDIT_NO_ENTRY');
    const d = this.writeNumbered(this.digestFile, { count, lastId: upTo, lastHash: hash, at: this.now().toISOString() }, this.assess().highest);
    this.findings = [];
    this.unvouched = undefined;
    this.anchor = { lastId: upTo, lastHash: hash };
    this.anchorBroken = false;
    return d;
  }

  /**
   * Give the digest the number after every one known (`highest`: the sequence file, the digest, the database's
   * note), sign and write it, then raise the number kept beside the key, and note in the database (once) that
   * signed digests are written for it.
   */
  private writeNumbered(path: string, d: Digest, highest: number): Digest {
    const numbered = { ...d, seq: (this.digestSeq = Math.max(this.digestSeq, highest) + 1) };
    writeDigestFile(path, numbered, this.key);
    if (this.sequenceFile) writeDigestSequence(this.sequenceFile, numbered.seq);
    if (this.key && !this.marked) {
      try {
        this.marks.write.run(numbered.seq, numbered.at);
        this.marked = true;
      } catch (err) {
        this.log.warn({ err }, 'audit: cannot note in the database that signed digests are written (tried again with the next digest)');
      }
    }
    return numbered;
  }

  /** The digest of the table now. Counts only the rows added since the last one. */
  digest(): Digest {
    this.flushOutcomes();
    const at = this.now().toISOString();
    const last = this.stmt.last.get();
    if (!last) return { count: 0, lastId: 0, lastHash: GENESIS_HASH, at };
    if (!this.counted || last.id < this.counted.upTo) {
      this.counted = { n: this.stmt.count.get()?.n ?? 0, upTo: last.id };
    } else if (last.id > this.counted.upTo) {
      this.counted = { n: this.counted.n + (this.stmt.countBetween.get(this.counted.upTo, last.id)?.n ?? 0), upTo: last.id };
    }
    return { count: this.counted.n, lastId: last.id, lastHash: last.hash, at };
  }

  // ------------------------------------------------------------ reading
  // Every read first commits the outcomes finishLater() queued: this process reads its own writes.

  byRequestId(requestId: string): StoredAuditRow | undefined {
    // Every call asks this first (idempotent retries), and a new request has no row: no outcome of
    // its own can be queued, so the queue is committed only when there is a row to read it into.
    if (this.callWithRequest(requestId) === undefined) return undefined;
    this.flushOutcomes();
    const r = this.stmt.byRequest.get(requestId);
    return r && fromDb(r);
  }

  get(id: number): StoredAuditRow | undefined {
    this.flushOutcomes();
    const r = this.stmt.byId.get(id);
    return r && fromDb(r);
  }

  /** What an entry id that is no call's row is (an outcome names its call), for a reader who asked for it. */
  entryKind(id: number): { kind: string; callId: number | null } | undefined {
    return this.stmt.entryById.get(id);
  }

  /** The last n rows, oldest first. */
  tail(n = 20): StoredAuditRow[] {
    this.flushOutcomes();
    return this.stmt.tail.all(Math.max(0, Math.floor(n))).map(fromDb);
  }

  list(filter: AuditListFilter = {}): StoredAuditRow[] {
    this.flushOutcomes();
    // Principal, entity and time are looked up in the call index (and the entries after it: audit_call_ids);
    // the outcome and the id bounds on the calls themselves.
    const indexed: string[] = [];
    const where: string[] = [];
    const indexParams: unknown[] = [];
    const params: unknown[] = [];
    const key: string[] = [];
    const add = (name: string, sql: string, value: unknown, byIndex: boolean) => {
      if (value === undefined || value === null) return;
      (byIndex ? indexed : where).push(sql);
      (byIndex ? indexParams : params).push(value);
      key.push(name);
    };
    add('principal', 'principal = ?', filter.principal, true);
    add('entity', 'entity_id = ?', filter.entityId, true);
    add('since', 'at >= ?', filter.since === undefined ? undefined : isoBound(filter.since, MIN_TIME), true);
    add('until', 'at < ?', filter.until === undefined ? undefined : isoBound(filter.until, MAX_TIME), true);
    add('outcome', 'outcome = ?', filter.outcome, false);
    add('after', 'id > ?', filter.afterId, false);
    add('before', 'id < ?', filter.beforeId, false);
    if (indexed.length) where.unshift(`id IN (SELECT id FROM audit_call_ids WHERE ${indexed.join(' AND ')})`);
    const order = filter.order === 'desc' ? 'DESC' : 'ASC';
    key.push(order);
    const k = key.join(',');
    let stmt = this.listStatements.get(k);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], DbAuditRow>(`SELECT * FROM audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${order} LIMIT ?`);
      this.listStatements.set(k, stmt);
    }
    const limit = Math.min(10_000, Math.max(1, Math.floor(filter.limit ?? 100)));
    return stmt.all(...indexParams, ...params, limit).map(fromDb);
  }

  /** The log (or the part since a time) as JSON lines or CSV records, read a page at a time. */
  export(format: ExportFormat, options: ExportOptions = {}): Generator<string> {
    this.flushOutcomes();
    return exportLines((afterId, since, until, limit) => this.stmt.page.all(afterId, since, until, limit), format, options);
  }

  /** Verify the chain (and the configured digest file, unless another is given). */
  verify(options: VerifyOptions = {}): VerifyResult {
    this.flushOutcomes();
    return verify(this.db, {
      digestFile: options.digestFile ?? this.digestFile,
      key: options.key ?? this.key,
      sequenceFile: options.sequenceFile ?? this.sequenceFile,
    });
  }
}

// ------------------------------------------------------------ input

/** Digest and sequence files are the owner's alone (0600); older ones were written 0644. */
function tighten(path: string, log: Logger): void {
  try {
    makePrivate(path);
  } catch (err) {
    log.warn({ err, path }, 'audit: cannot make the file private (0600)');
  }
}

/** Entries of this process after the readers' call index before an outcome's commit copies them (the tail readers scan). */
const INDEX_BATCH = 256;
/** The call index follows the log once no outcome or refused call has been appended for this long. */
const INDEX_IDLE_MS = 250;
/** How long an outcome committed off the caller's path may wait for an fsync of its own (the next pending row's fsync usually covers it first). */
const LAZY_SYNC_MS = 50;
/** A batch of at least this many outcomes is fsynced at once on the thread pool (see committedLazily). */
const EARLY_SYNC_OUTCOMES = 8;
/** Outcomes wait for a pause this long in the calls (none beginning or ending) before they are committed. */
export const OUTCOME_IDLE_MS = 5;
/** ... but no longer than this, */
export const OUTCOME_MAX_WAIT_MS = 100;
/** ... and no more than this many. */
const OUTCOME_BATCH = 200;
/** A granted call with no outcome after this long is no longer counted as travelling. */
const IN_FLIGHT_MAX_MS = 5 * 60_000;

function rethrown(err: unknown): unknown {
  return err instanceof AuditError || !isDbError(err) ? err : unavailable(err);
}

function isDbError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return (typeof code === 'string' && code.startsWith('SQLITE_')) || err instanceof TypeError;
}

function bad(message: string): AuditError {
  return new AuditError(`audit: ${message}`, 'AUDIT_BAD_ENTRY');
}

function str(name: string, v: unknown): string {
  if (typeof v !== 'string') throw bad(`${name} must be a string`);
  return wellFormed(v);
}

function optStr(name: string, v: unknown): string | null {
  if (v === undefined || v === null) return null;
  return str(name, v);
}

function normalizeEntry(e: AuditEntry): NewRow {
  if (!e || typeof e !== 'object') throw bad('entry must be an object');
  const requestId = str('requestId', e.requestId);
  if (!requestId) throw bad('requestId must not be empty');
  if (!e.args || typeof e.args !== 'object' || Array.isArray(e.args)) throw bad('args must be an object');
  let args: string;
  try {
    args = canonicalJson(e.args);
  } catch (err) {
    throw bad(`args cannot be stored: ${(err as Error).message}`);
  }
  if (e.ruleId !== null && e.ruleId !== undefined && !Number.isSafeInteger(e.ruleId)) throw bad('ruleId must be an integer or null');
  return {
    request_id: requestId,
    principal: str('principal', e.principal),
    session: optStr('session', e.session),
    run_id: optStr('runId', e.runId),
    tool: str('tool', e.tool),
    entity_id: optStr('entityId', e.entityId),
    action: str('action', e.action),
    args,
    decision: str('decision', e.decision),
    rule_id: e.ruleId ?? null,
    reason: str('reason', e.reason ?? ''),
  };
}

/** Completions are taken leniently (the command may already be out): only the outcome must be right. */
function normalizeCompletion(c: AuditCompletion): Completion {
  if (!c || typeof c !== 'object' || c.outcome === ('pending' as string) || !OUTCOMES.includes(c.outcome)) {
    throw bad(`outcome must be one of ${OUTCOMES.filter((o) => o !== 'pending').join(', ')}`);
  }
  const text = (v: unknown): string | null => (v === undefined || v === null ? null : wellFormed(typeof v === 'string' ? v : String(v)));
  const latency = typeof c.latencyMs === 'number' && Number.isFinite(c.latencyMs) ? Math.max(0, Math.round(c.latencyMs)) : null;
  return { outcome: c.outcome, error: text(c.error), latency_ms: latency, echo: text(c.echo) };
}
