// The audit log's hash chain: canonical JSON, the hash of an entry, the walk
// that verifies them, and the digest file that anchors the tail.
//
// The log is append-only (migration 0009): calls, their outcomes and any
// later reconciliation are separate entries, never edited.
//   hash = sha256(prev_hash + canonical JSON of every other stored column)
// prev_hash is the previous entry's `hash` (id order), 64 zeros for the first.
// Ids are contiguous from 1 (AUTOINCREMENT, never reused), so a deleted entry
// is a gap even when the chain was later continued from the one before it,
// and a deleted tail shows as the id sequence running past the last id.
// Rows written before 0009 (v = 1) keep their old hashes (insert-time fields,
// plus done_hash over the completion) and are bound by a seal entry.
import { createHash, hash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Db } from '../db/database.js';
import { digestMac, macMatches } from './key.js';
import { CALL_COLUMNS, OUTCOMES, type DbAuditEntry, type DbAuditRow } from './row.js';

export const GENESIS_HASH = '0'.repeat(64);

/** Keys sorted (by UTF-16 code unit, recursively), no whitespace, otherwise JSON.stringify's rules. */
export function canonicalJson(value: unknown): string {
  const out = encode(value, new Set());
  if (out === undefined) throw new TypeError('canonicalJson: value has no JSON form');
  return out;
}

function encode(value: unknown, seen: Set<object>): string | undefined {
  let v = value;
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(): unknown }).toJSON();
  }
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? JSON.stringify(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('canonicalJson: BigInt has no JSON form');
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (v === null) return 'null';
  const obj = v as object;
  if (seen.has(obj)) throw new TypeError('canonicalJson: circular structure');
  seen.add(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = `[${obj.map((x) => encode(x, seen) ?? 'null').join(',')}]`;
  } else {
    const parts: string[] = [];
    for (const key of Object.keys(obj).sort()) {
      const enc = encode((obj as Record<string, unknown>)[key], seen);
      if (enc !== undefined) parts.push(`${JSON.stringify(key)}:${enc}`);
    }
    out = `{${parts.join(',')}}`;
  }
  seen.delete(obj);
  return out;
}

/** SQLite stores UTF-8: a lone surrogate would come back as U+FFFD and break its own hash. Store what comes back. */
export function wellFormed(s: string): string;
export function wellFormed(s: string | null): string | null;
export function wellFormed(s: string | null): string | null {
  return s === null ? null : s.replace(/[\uD800-\uDFFF]/gu, '\uFFFD');
}

export type InsertFields = Pick<
  DbAuditRow,
  'id' | 'at' | 'request_id' | 'principal' | 'session' | 'run_id' | 'tool' | 'entity_id' | 'action' | 'args' | 'decision' | 'rule_id' | 'reason'
>;
export type CompletionFields = Pick<DbAuditRow, 'outcome' | 'error' | 'latency_ms' | 'echo' | 'completed_at'>;

// crypto.hash: the one-shot form, half the cost of createHash() for a short string.
const sha256 = (s: string): string => hash('sha256', s, 'hex');

/** The v1 (pre-0009) insert-time fields. */
export function insertFieldsOf(r: InsertFields): InsertFields {
  return {
    id: r.id,
    at: r.at,
    request_id: r.request_id,
    principal: r.principal,
    session: r.session,
    run_id: r.run_id,
    tool: r.tool,
    entity_id: r.entity_id,
    action: r.action,
    args: r.args,
    decision: r.decision,
    rule_id: r.rule_id,
    reason: r.reason,
  };
}

export function completionFieldsOf(r: CompletionFields): CompletionFields {
  return { outcome: r.outcome, error: r.error, latency_ms: r.latency_ms, echo: r.echo, completed_at: r.completed_at };
}

/** v1 rows only: the hash of the insert-time fields. */
export function rowHash(prevHash: string, fields: InsertFields): string {
  return sha256(prevHash + canonicalJson(insertFieldsOf(fields)));
}

/** v1 rows only: the seal of the completion fields. */
export function doneHash(hash: string, completion: CompletionFields): string {
  return sha256(hash + canonicalJson(completionFieldsOf(completion)));
}

/** The columns an entry's hash covers: every stored column but `hash` itself (`prev_hash` leads the hashed text). */
export const HASHED_COLUMNS = ['id', 'at', 'v', 'kind', 'call_id', ...CALL_COLUMNS, 'done_hash'] as const satisfies ReadonlyArray<keyof DbAuditEntry>;

const KNOWN_COLUMNS = new Set<string>([...HASHED_COLUMNS, 'prev_hash', 'hash']);

/** v2 entries: sha256(prev_hash + canonical JSON of every other stored column). */
export function entryHash(prevHash: string, e: Omit<DbAuditEntry, 'hash' | 'prev_hash'>): string {
  // The canonical JSON of {column: value ?? null} for every hashed column, written directly: every call
  // and outcome pays this, and the general encoder (an object, a key sort, a Set) cost 3x as much.
  let text = prevHash;
  for (let i = 0; i < SORTED_HASHED.length; i++) {
    const c = SORTED_HASHED[i]!;
    const v = e[c] ?? null;
    text += `${i ? ',' : '{'}${COLUMN_KEY[i]}${typeof v === 'string' ? JSON.stringify(v) : v === null ? 'null' : canonicalJson(v)}`;
  }
  return sha256(`${text}}`);
}

/** The hashed columns in canonicalJson's key order, and their JSON keys. */
const SORTED_HASHED = [...HASHED_COLUMNS].sort();
const COLUMN_KEY = SORTED_HASHED.map((c) => `${JSON.stringify(c)}:`);

/** The seal over the rows written before migration 0009: every stored column of each, in id order. */
export class LegacySeal {
  private readonly h = createHash('sha256');
  count = 0;
  lastId = 0;
  add(r: DbAuditEntry): void {
    this.h.update(`${canonicalJson(r)}\n`);
    this.count++;
    this.lastId = r.id;
  }
  digest(): { count: number; lastId: number; sha256: string } {
    return { count: this.count, lastId: this.lastId, sha256: this.h.copy().digest('hex') };
  }
}

// ---------------------------------------------------------------- digest

/** The tail anchor, kept outside the database. `count` rows with ids 1..lastId; row lastId has hash lastHash. */
export interface Digest {
  count: number;
  lastId: number;
  lastHash: string;
  /** When the digest was written (ISO). */
  at: string;
  /**
   * The digest's number: each one written gets the next, and the highest is also kept beside the audit key
   * (`<key file>.seq`), so an older digest put back with the log cut to match is seen as a rollback.
   */
  seq?: number;
  /** HMAC-SHA256 of the fields above with the audit key (audit.keyFile), when there is one. */
  mac?: string;
}

/** Write JSON to `path` atomically: a temporary file, fsync, rename (then fsync the directory, best effort). */
export function writeFileAtomic(path: string, text: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', mode);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  try {
    const dfd = openSync(dirname(path), 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic.
  }
}

/** Write a digest file; signed when there is an audit key. */
export function writeDigestFile(path: string, digest: Digest, key?: Buffer): void {
  const { mac: _old, ...fields } = digest;
  if (fields.seq === undefined) delete fields.seq;
  writeFileAtomic(path, `${JSON.stringify(key ? { ...fields, mac: digestMac(key, fields) } : fields)}\n`);
}

/** Read and check a digest file. Throws (ENOENT included) when it cannot. */
export function readDigest(path: string): Digest {
  const d = JSON.parse(readFileSync(path, 'utf8')) as Partial<Digest>;
  if (
    !d ||
    typeof d !== 'object' ||
    !Number.isSafeInteger(d.count) ||
    !Number.isSafeInteger(d.lastId) ||
    typeof d.lastHash !== 'string' ||
    !/^[0-9a-f]{64}$/.test(d.lastHash) ||
    typeof d.at !== 'string' ||
    (d.mac !== undefined && (typeof d.mac !== 'string' || !/^[0-9a-f]{64}$/.test(d.mac))) ||
    (d.seq !== undefined && (!Number.isSafeInteger(d.seq) || d.seq < 1))
  ) {
    throw new Error(`${path} is not an audit digest ({count, lastId, lastHash, at})`);
  }
  return d as Digest;
}

/** What the sequence file beside the key says: the highest digest number written (0: none yet, since the key was made). */
export type SequenceRead = { seq: number } | { missing: true } | { problem: string };

export function readSequence(path: string): SequenceRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return e.code === 'ENOENT' ? { missing: true } : { problem: `cannot be read (${e.code ?? e.message})` };
  }
  const t = text.trim();
  const n = Number(t);
  return /^\d{1,15}$/.test(t) && Number.isSafeInteger(n) ? { seq: n } : { problem: `does not hold a digest number (${JSON.stringify(text.slice(0, 40))})` };
}

export function writeDigestSequence(path: string, seq: number): void {
  writeFileAtomic(path, `${seq}\n`);
}

/** The database's own note that signed digests were written for it (migration 0020), if any. */
export interface DigestMark {
  firstSeq: number;
  at: string;
}

export function readDigestMark(db: Db): DigestMark | undefined {
  try {
    return db.prepare('SELECT first_seq AS firstSeq, at FROM audit_digest_mark WHERE id = 1').get() as DigestMark | undefined;
  } catch {
    return undefined; // a database from before migration 0020 (a reader): no note
  }
}

/** The files the audit's trust rests on, as they are now, and what is wrong with them. */
export interface AnchorState {
  /** The digest: read, and (with a key) carrying its signature; undefined when it is missing or cannot be trusted. */
  digest?: Digest;
  /** The digest as read and signed, findings or not (a digest put back is one): what an owner is shown. */
  read?: Digest;
  /** The highest digest number known to have been written: the sequence file, the digest, the database's note. */
  highest: number;
  /**
   * What is wrong, each a sentence with its evidence: a digest missing or unreadable though digests were written, a
   * sequence file missing or unreadable, a digest numbered below one written since (a rollback), a signature the key
   * did not make. Each is tampering until an owner has looked (`hearth audit accept`); none is a fresh start.
   */
  findings: string[];
}

export interface AnchorFiles {
  digestFile: string;
  key?: Buffer;
  /** Beside the key (`<key file>.seq`): the highest digest number written. */
  sequenceFile?: string;
}

/** What anchorState asks the database (a store passes its prepared statements). */
export interface AnchorLookups {
  mark(): DigestMark | undefined;
  hasEntries(): boolean;
}

/** Read the digest, the sequence file and the database's note, and say what is wrong with them. */
export function anchorState(db: Db, files: AnchorFiles, lookups?: AnchorLookups): AnchorState {
  const { digestFile, key, sequenceFile } = files;
  const findings: string[] = [];
  // The note says signed digests were written: it means something only to a reader who can check signatures.
  const mark = !key ? undefined : lookups ? lookups.mark() : readDigestMark(db);
  const sequence: SequenceRead | undefined = sequenceFile ? readSequence(sequenceFile) : undefined;
  let digest: Digest | undefined;
  let digestMissing = false;
  try {
    digest = readDigest(digestFile);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') digestMissing = true;
    else
      findings.push(`digest file ${digestFile} ${e.code ? `cannot be read (${e.code})` : `cannot be used (emptied, cut short or overwritten): ${e.message}`}`);
  }
  if (digest && key && !macMatches(key, digest)) {
    findings.push(
      digest.mac
        ? `digest file ${digestFile} carries a signature the audit key did not make (rewritten, or another key)`
        : `digest file ${digestFile} is not signed, but there is an audit key (rewritten, or written without audit.key_file)`,
    );
    digest = undefined;
  }
  const fromFile = sequence && 'seq' in sequence ? sequence.seq : 0;
  const highest = Math.max(fromFile, digest?.seq ?? 0, mark?.firstSeq ?? 0);
  const written = [
    fromFile > 0 ? `the sequence file ${sequenceFile} says digest #${fromFile} was written` : '',
    mark ? `the database notes signed digests since #${mark.firstSeq} (${mark.at})` : '',
  ].filter(Boolean);
  if (digestMissing && written.length) findings.push(`digest file ${digestFile} is missing, but ${written.join(', and ')}`);
  if (sequence && 'problem' in sequence) findings.push(`sequence file ${sequenceFile} ${sequence.problem}`);
  // Missing: a finding unless nothing was ever signed here (no digest, no note, an empty log), or the digest is
  // one an older Hearth wrote before digests were numbered.
  if (sequence && 'missing' in sequence && (digest?.seq !== undefined || mark || (digestMissing && (lookups ? lookups.hasEntries() : hasEntries(db))))) {
    findings.push(
      `sequence file ${sequenceFile} is missing${digest?.seq !== undefined ? `, but the digest is #${digest.seq}` : mark ? `, but the database notes signed digests since #${mark.firstSeq}` : ', but the log has entries'}`,
    );
  }
  if (digest && highest > (digest.seq ?? 0)) {
    findings.push(
      `digest file ${digestFile} is digest #${digest.seq ?? 0} of ${digest.at}, but #${highest} was written since: an older digest was put back (a rollback, with the log cut to match)`,
    );
  }
  return { ...(digest && !findings.length ? { digest } : {}), ...(digest ? { read: digest } : {}), highest, findings };
}

function hasEntries(db: Db): boolean {
  return db.prepare('SELECT 1 FROM audit_entry LIMIT 1').get() !== undefined;
}

/** The digest of the table as it is now (a full count: for tools; the store keeps its own count). */
export function computeDigest(db: Db, at = new Date()): Digest {
  const last = db.prepare('SELECT id, hash FROM audit_entry ORDER BY id DESC LIMIT 1').get() as { id: number; hash: string } | undefined;
  const { n } = db.prepare('SELECT count(*) AS n FROM audit_entry').get() as { n: number };
  return { count: n, lastId: last?.id ?? 0, lastHash: last?.hash ?? GENESIS_HASH, at: at.toISOString() };
}

/** Compute and write the digest of `db` to `path` (atomically). */
export function writeDigest(db: Db, path: string): Digest {
  const d = computeDigest(db);
  writeDigestFile(path, d);
  return d;
}

// ---------------------------------------------------------------- verify

export type BreakKind =
  /** A row is missing: ids jump (a middle or tail row was deleted). */
  | 'deleted'
  /** prev_hash does not link to the row before (rows reordered, replaced, or inserted). */
  | 'linkage'
  /** A stored field (or `hash`) of an entry was edited (pre-0009 rows: an insert-time field). */
  | 'content'
  /** An outcome entry that does not follow from the call it names, a pre-0009 row's completion edited, or those rows no longer matching their seal. */
  | 'outcome'
  /** Fewer rows than the digest says: the tail was cut off. */
  | 'truncated'
  /** The digest does not match the table (or cannot be read). */
  | 'digest'
  /**
   * The readers' call index (migration 0014) does not match the log: a call's request id, principal, entity or time
   * differs there, or a call is missing from it, so lists filtered by them would hide or misplace it. The log itself
   * verifies; the index is derived from it, and Hearth rebuilds it at its next start.
   */
  | 'index';

export interface ChainBreak {
  /** The first broken row (for `deleted`/`truncated`: the first missing id; 0: not a row, e.g. an unreadable digest). */
  id: number;
  kind: BreakKind;
  reason: string;
}

export interface VerifyResult {
  ok: boolean;
  /** Entries in the log (calls, outcomes, seal; all of them, also past a break). */
  rows: number;
  /** Of them, the calls: what `hearth audit tail` and the page list, one row each. */
  calls: number;
  /** Calls still pending (in flight, or left by a crash until markInterrupted). */
  pending: number;
  lastId: number;
  firstBroken?: ChainBreak;
  /** The digest checked against, when one was given and readable. */
  digest?: Digest;
  /**
   * Entries after the last signed digest: nothing vouches for them (a Hearth writes its digest within a
   * moment of each call; entries appended by whoever can write the file are never signed).
   */
  unvouched?: { from: number; to: number; count: number };
  /** What is wrong with the digest, the sequence file or the database's note (see anchorState): tampering until accepted. */
  findings?: string[];
  /** The highest digest number known to have been written (with a digest file). */
  highestSeq?: number;
}

export interface VerifyOptions {
  /** The digest file written by the store (`digestFile`): lets verify detect a cut-off tail. */
  digestFile?: string;
  /** The audit key (audit.keyFile): the digest must carry its signature. */
  key?: Buffer;
  /** The digest sequence file (beside the key): a digest numbered below it was put back (a rollback). */
  sequenceFile?: string;
}

/** The id and linkage of an entry against the one before it (every version). */
function checkLink(r: DbAuditEntry, prevId: number, prevHash: string): ChainBreak | undefined {
  if (r.id !== prevId + 1) {
    const missing = Math.min(r.id, prevId + 1);
    const what =
      r.id > prevId + 2
        ? `rows ${prevId + 1}..${r.id - 1} are missing`
        : r.id === prevId + 2
          ? `row ${prevId + 1} is missing`
          : `id ${r.id} is out of sequence`;
    return { id: missing, kind: 'deleted', reason: `${what}: row ${r.id} follows ${prevId ? `row ${prevId}` : 'the start of the log'} (deleted rows)` };
  }
  if (r.prev_hash !== prevHash) {
    return {
      id: r.id,
      kind: 'linkage',
      reason: `row ${r.id}: prev_hash does not link to ${prevId ? `row ${prevId}` : 'the genesis hash'} (rows deleted, inserted or reordered)`,
    };
  }
  return undefined;
}

/** A row written before migration 0009: insert-time hash plus done_hash, as it was verified then. */
function checkLegacyRow(r: DbAuditEntry): ChainBreak | undefined {
  const row = r as unknown as DbAuditRow;
  if (r.kind !== 'call' || r.call_id !== null || rowHash(r.prev_hash, row) !== r.hash) {
    return { id: r.id, kind: 'content', reason: `row ${r.id}: hash does not match its insert-time fields (edited)` };
  }
  if (r.outcome === 'pending') {
    if (r.done_hash !== null || r.completed_at !== null || r.error !== null || r.latency_ms !== null || r.echo !== null) {
      return { id: r.id, kind: 'outcome', reason: `row ${r.id}: pending, but carries completion fields (edited)` };
    }
  } else if (!OUTCOMES.includes(r.outcome as never) || r.done_hash === null || doneHash(r.hash, row) !== r.done_hash) {
    return { id: r.id, kind: 'outcome', reason: `row ${r.id}: done_hash does not match its outcome fields (edited)` };
  }
  return undefined;
}

/** Outcomes a call can still move on from: pending (its outcome), unconfirmed and interrupted (a late report). */
export const OPEN_OUTCOMES: ReadonlySet<string> = new Set(['pending', 'unconfirmed', 'interrupted']);
/** What a follow-up (reconciliation) entry may say of an unconfirmed or interrupted call. */
export const FOLLOW_UP_OUTCOMES: ReadonlySet<string> = new Set(['confirmed', 'failed']);

/** Walks the entries in id order, checking each against what came before. */
class ChainWalk {
  prevId = 0;
  prevHash = GENESIS_HASH;
  rows = 0;
  calls = 0;
  private readonly legacy = new LegacySeal();
  private v2 = false;
  /** Calls whose outcome can still change, and their outcome now. */
  readonly open = new Map<number, string>();

  check(r: DbAuditEntry): ChainBreak | undefined {
    const link = checkLink(r, this.prevId, this.prevHash);
    if (link) return link;
    if (r.v === 1) {
      if (this.v2) return { id: r.id, kind: 'content', reason: `row ${r.id}: a pre-0009 row after the append-only log began (edited)` };
      const broken = checkLegacyRow(r);
      if (broken) return broken;
      this.legacy.add(r);
      if (OPEN_OUTCOMES.has(r.outcome ?? '')) this.open.set(r.id, r.outcome!);
      return undefined;
    }
    if (r.v !== 2) return { id: r.id, kind: 'content', reason: `row ${r.id}: unknown entry version ${String(r.v)} (edited)` };
    for (const [k, v] of Object.entries(r)) {
      if (!KNOWN_COLUMNS.has(k) && v !== null) return { id: r.id, kind: 'content', reason: `row ${r.id}: column ${k} is not covered by the chain (added)` };
    }
    if (entryHash(r.prev_hash, r) !== r.hash) return { id: r.id, kind: 'content', reason: `row ${r.id}: hash does not match its stored fields (edited)` };
    const first = !this.v2;
    this.v2 = true;
    if (first && this.legacy.count > 0) {
      // The rows before the append-only log are bound by a seal entry, written before anything else.
      if (r.kind !== 'seal') return { id: r.id, kind: 'content', reason: `row ${r.id}: the rows before it (written before migration 0009) are not sealed` };
      const want = this.legacy.digest();
      let got: unknown;
      try {
        got = JSON.parse(r.args ?? '');
      } catch {
        got = undefined;
      }
      if (r.call_id !== want.lastId || canonicalJson(got ?? null) !== canonicalJson(want)) {
        return { id: r.id, kind: 'outcome', reason: `rows 1..${want.lastId} (written before migration 0009) do not match their seal in row ${r.id} (edited)` };
      }
      return undefined;
    }
    switch (r.kind) {
      case 'seal':
        return { id: r.id, kind: 'content', reason: `row ${r.id}: a seal entry out of place (inserted)` };
      case 'call':
        if (OPEN_OUTCOMES.has(r.outcome ?? '')) this.open.set(r.id, r.outcome!);
        return undefined;
      case 'outcome': {
        const now = r.call_id === null ? undefined : this.open.get(r.call_id);
        const outcome = r.outcome ?? '';
        if (now === undefined) {
          return {
            id: r.id,
            kind: 'outcome',
            reason: `row ${r.id}: an outcome for call ${String(r.call_id)}, which is not an earlier call awaiting one (inserted or edited)`,
          };
        }
        if (outcome === 'pending' || !OUTCOMES.includes(outcome as never) || (now !== 'pending' && !FOLLOW_UP_OUTCOMES.has(outcome))) {
          return { id: r.id, kind: 'outcome', reason: `row ${r.id}: call ${r.call_id} cannot go from ${now} to ${outcome} (edited)` };
        }
        if (OPEN_OUTCOMES.has(outcome)) this.open.set(r.call_id!, outcome);
        else this.open.delete(r.call_id!);
        return undefined;
      }
      default:
        return { id: r.id, kind: 'content', reason: `row ${r.id}: unknown entry kind ${String(r.kind)} (edited)` };
    }
  }

  advance(r: DbAuditEntry): void {
    this.rows++;
    if (r.v === 1 || r.kind === 'call') this.calls++;
    this.prevId = r.id;
    this.prevHash = r.hash;
  }

  /** The seal the rows before 0009 need (none: there are none, or they are sealed already). */
  unsealed(): { count: number; lastId: number; sha256: string } | undefined {
    return this.v2 || this.legacy.count === 0 ? undefined : this.legacy.digest();
  }

  get pending(): number {
    let n = 0;
    for (const o of this.open.values()) if (o === 'pending') n++;
    return n;
  }
}

/** The seal a writer must append before its first entry, if rows from before migration 0009 are not sealed yet. */
export function legacySealNeeded(db: Db): { count: number; lastId: number; sha256: string } | undefined {
  // Old rows all come first, and the seal before any new entry: the two ends of the log tell.
  const first = db.prepare('SELECT v FROM audit_entry ORDER BY id LIMIT 1').get() as { v: number } | undefined;
  const last = db.prepare('SELECT v FROM audit_entry ORDER BY id DESC LIMIT 1').get() as { v: number } | undefined;
  if (first?.v !== 1 || last?.v !== 1) return undefined;
  const walk = new ChainWalk();
  for (const r of db.prepare('SELECT * FROM audit_entry ORDER BY id').iterate() as IterableIterator<DbAuditEntry>) {
    walk.check(r);
    walk.advance(r);
  }
  return walk.unsealed();
}

/**
 * Walk the whole chain in id order and name the first broken entry. With a
 * digest file, also check that the entries it vouches for are all still there
 * and end in the hash it recorded (a cut-off tail leaves a clean chain). The
 * table's AUTOINCREMENT sequence past the last id also shows a cut tail.
 */
/**
 * The first call where the readers' index and the log disagree, up to where the index goes (the calls after it are
 * read from the log itself): an index row with no call entry of its id, or with another request id, principal,
 * entity or time, or a call entry the index skipped. Undefined when they agree (or before migration 0014).
 */
function callIndexBreak(db: Db): ChainBreak | undefined {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_call_index'").get()) return undefined;
  const edited = db
    .prepare(
      `SELECT i.id AS id FROM audit_call_index i LEFT JOIN audit_entry e ON e.id = i.id
       WHERE e.id IS NULL OR e.kind <> 'call' OR e.request_id IS NOT i.request_id OR e.principal IS NOT i.principal
         OR e.entity_id IS NOT i.entity_id OR e.at IS NOT i.at
       ORDER BY i.id LIMIT 1`,
    )
    .get() as { id: number } | undefined;
  const skipped = db
    .prepare(
      `SELECT e.id AS id FROM audit_entry e
       WHERE e.kind = 'call' AND e.id <= (SELECT coalesce(max(id), 0) FROM audit_call_index)
         AND NOT EXISTS (SELECT 1 FROM audit_call_index i WHERE i.id = e.id)
       ORDER BY e.id LIMIT 1`,
    )
    .get() as { id: number } | undefined;
  if (!edited && !skipped) return undefined;
  const id = Math.min(edited?.id ?? Number.POSITIVE_INFINITY, skipped?.id ?? Number.POSITIVE_INFINITY);
  const what =
    id === edited?.id ? `its request id, principal, entity or time differ from call ${id}'s, or no call ${id} exists` : `call ${id} is missing from it`;
  return {
    id,
    kind: 'index',
    reason: `row ${id}: the readers' call index does not match the log (${what}): lists filtered by principal, entity or time read it. The log itself verifies; Hearth rebuilds the index from it at its next start`,
  };
}

export function verify(db: Db, options: VerifyOptions = {}): VerifyResult {
  // The digest first: it is written after commits, so the rows read next are at least as new as it is.
  let digest: Digest | undefined;
  let digestProblem: string | undefined;
  let anchor: AnchorState | undefined;
  if (options.digestFile) {
    anchor = anchorState(db, {
      digestFile: options.digestFile,
      ...(options.key ? { key: options.key } : {}),
      ...(options.sequenceFile ? { sequenceFile: options.sequenceFile } : {}),
    });
    digest = anchor.digest;
    if (anchor.findings.length) digestProblem = anchor.findings.join('; ');
    // No digest yet, and nothing says one was written: a cut tail cannot be seen (broken only once there are rows).
    else if (!digest) digestProblem = `digest file ${options.digestFile} is missing`;
  }

  const walk = new ChainWalk();
  let firstBroken: ChainBreak | undefined;
  let upToDigest = 0;
  // A digest of the empty log (a home stopped before its first call) vouches for the genesis hash.
  let hashAtDigest: string | undefined = digest?.lastId === 0 ? GENESIS_HASH : undefined;
  let seq = 0;
  let index: ChainBreak | undefined;
  // One read transaction: the entries and the sequence from one snapshot. Synchronous, so the connection is busy only for this call.
  db.transaction(() => {
    index = callIndexBreak(db);
    for (const r of db.prepare('SELECT * FROM audit_entry ORDER BY id').iterate() as IterableIterator<DbAuditEntry>) {
      if (digest && r.id <= digest.lastId) {
        upToDigest++;
        if (r.id === digest.lastId) hashAtDigest = r.hash;
      }
      const broken = walk.check(r);
      firstBroken ??= broken;
      walk.advance(r);
    }
    seq = (db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'audit_entry'").get() as { seq: number } | undefined)?.seq ?? 0;
  })();
  const prevId = walk.prevId;
  const rows = walk.rows;

  if (!firstBroken && seq > prevId) {
    firstBroken = {
      id: prevId + 1,
      kind: 'truncated',
      reason: `the log ends at row ${prevId}, but its id sequence is at ${seq}: ${seq - prevId === 1 ? `row ${seq} was` : `rows ${prevId + 1}..${seq} were`} cut off the tail`,
    };
  }
  // A finding about the files the trust rests on stands even over an empty log (the log may have been replaced).
  if (!firstBroken && digestProblem && (rows > 0 || anchor?.findings.length)) firstBroken = { id: 0, kind: 'digest', reason: digestProblem };
  if (!firstBroken && digest) {
    if (prevId < digest.lastId || upToDigest < digest.count) {
      firstBroken = {
        id: Math.min(prevId, digest.lastId) + 1,
        kind: 'truncated',
        reason: `the log ends at row ${prevId} with ${upToDigest} rows up to id ${digest.lastId}, but the digest of ${digest.at} vouches for ${digest.count} rows up to id ${digest.lastId} (rows cut off the tail)`,
      };
    } else if (upToDigest > digest.count) {
      firstBroken = {
        id: digest.lastId,
        kind: 'digest',
        reason: `${upToDigest} rows up to id ${digest.lastId}, but the digest of ${digest.at} says ${digest.count} (rows inserted)`,
      };
    } else if (hashAtDigest !== digest.lastHash) {
      firstBroken = {
        id: digest.lastId,
        kind: 'digest',
        reason: `row ${digest.lastId}: hash differs from the digest of ${digest.at} (the chain was rewritten up to there)`,
      };
    }
  }
  // The index is derived from the log: what is wrong with the log, or with the files vouching for it, is said first.
  if (!firstBroken && index) firstBroken = index;
  const beyond = digest ? rows - upToDigest : 0;
  const signed = !!digest && !!options.key;
  return {
    ok: !firstBroken,
    rows,
    calls: walk.calls,
    pending: walk.pending,
    lastId: prevId,
    ...(firstBroken ? { firstBroken } : {}),
    ...(digest ? { digest } : {}),
    ...(signed && beyond > 0 ? { unvouched: { from: digest!.lastId + 1, to: prevId, count: beyond } } : {}),
    ...(anchor?.findings.length ? { findings: anchor.findings } : {}),
    ...(anchor ? { highestSeq: anchor.highest } : {}),
  };
}
