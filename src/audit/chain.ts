// The audit log's hash chain: canonical JSON, the two hashes of a row, the
// walk that verifies them, and the digest file that anchors the tail.
//
//   hash      = sha256(prev_hash + canonical JSON of the insert-time fields)
//   done_hash = sha256(hash + canonical JSON of the completion fields)
//
// prev_hash is the previous row's `hash` (id order), 64 zeros for the first
// row. Ids are contiguous from 1 (AUTOINCREMENT, never reused), so a deleted
// row is a gap even when the chain was later continued from the row before it.
import { hash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Db } from '../db/database.js';
import { digestMac, macMatches } from './key.js';
import { OUTCOMES, type DbAuditRow } from './row.js';

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

export function rowHash(prevHash: string, fields: InsertFields): string {
  return sha256(prevHash + canonicalJson(insertFieldsOf(fields)));
}

export function doneHash(hash: string, completion: CompletionFields): string {
  return sha256(hash + canonicalJson(completionFieldsOf(completion)));
}

// ---------------------------------------------------------------- digest

/** The tail anchor, kept outside the database. `count` rows with ids 1..lastId; row lastId has hash lastHash. */
export interface Digest {
  count: number;
  lastId: number;
  lastHash: string;
  /** When the digest was written (ISO). */
  at: string;
  /** HMAC-SHA256 of the fields above with the audit key (audit.keyFile), when there is one. */
  mac?: string;
}

/** Write JSON to `path` atomically: a temporary file, fsync, rename (then fsync the directory, best effort). */
export function writeFileAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
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
    (d.mac !== undefined && (typeof d.mac !== 'string' || !/^[0-9a-f]{64}$/.test(d.mac)))
  ) {
    throw new Error(`${path} is not an audit digest ({count, lastId, lastHash, at})`);
  }
  return d as Digest;
}

/** The digest of the table as it is now (a full count: for tools; the store keeps its own count). */
export function computeDigest(db: Db, at = new Date()): Digest {
  const last = db.prepare('SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1').get() as { id: number; hash: string } | undefined;
  const { n } = db.prepare('SELECT count(*) AS n FROM audit').get() as { n: number };
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
  /** The insert-time fields (or `hash`) were edited. */
  | 'content'
  /** The completion fields (or `done_hash`) were edited, or a finished row was made pending. */
  | 'outcome'
  /** Fewer rows than the digest says: the tail was cut off. */
  | 'truncated'
  /** The digest does not match the table (or cannot be read). */
  | 'digest';

export interface ChainBreak {
  /** The first broken row (for `deleted`/`truncated`: the first missing id; 0: not a row, e.g. an unreadable digest). */
  id: number;
  kind: BreakKind;
  reason: string;
}

export interface VerifyResult {
  ok: boolean;
  /** Rows in the table (all of them, also past a break). */
  rows: number;
  /** Rows still pending (in flight, or left by a crash until markInterrupted). */
  pending: number;
  lastId: number;
  firstBroken?: ChainBreak;
  /** The digest checked against, when one was given and readable. */
  digest?: Digest;
}

export interface VerifyOptions {
  /** The digest file written by the store (`digestFile`): lets verify detect a cut-off tail. */
  digestFile?: string;
  /** The audit key (audit.keyFile): the digest must carry its signature. */
  key?: Buffer;
}

/** Check one row against the hash of the row before it; returns the break or undefined. */
export function checkRow(r: DbAuditRow, prevId: number, prevHash: string): ChainBreak | undefined {
  if (r.id !== prevId + 1) {
    const missing = r.id > prevId + 1 ? prevId + 1 : r.id;
    const what = r.id > prevId + 2 ? `rows ${prevId + 1}..${r.id - 1} are missing` : r.id === prevId + 2 ? `row ${prevId + 1} is missing` : `id ${r.id} is out of sequence`;
    return { id: missing, kind: 'deleted', reason: `${what}: row ${r.id} follows ${prevId ? `row ${prevId}` : 'the start of the log'} (deleted rows)` };
  }
  if (r.prev_hash !== prevHash) {
    return {
      id: r.id,
      kind: 'linkage',
      reason: `row ${r.id}: prev_hash does not link to ${prevId ? `row ${prevId}` : 'the genesis hash'} (rows deleted, inserted or reordered)`,
    };
  }
  if (rowHash(r.prev_hash, r) !== r.hash) {
    return { id: r.id, kind: 'content', reason: `row ${r.id}: hash does not match its insert-time fields (edited)` };
  }
  if (r.outcome === 'pending') {
    if (r.done_hash !== null || r.completed_at !== null || r.error !== null || r.latency_ms !== null || r.echo !== null) {
      return { id: r.id, kind: 'outcome', reason: `row ${r.id}: pending, but carries completion fields (edited)` };
    }
  } else if (!OUTCOMES.includes(r.outcome as never) || r.done_hash === null || doneHash(r.hash, r) !== r.done_hash) {
    return { id: r.id, kind: 'outcome', reason: `row ${r.id}: done_hash does not match its outcome fields (edited)` };
  }
  return undefined;
}

/**
 * Walk the whole chain in id order and name the first broken row. With a
 * digest file, also check that the rows it vouches for are all still there
 * and end in the hash it recorded (a cut-off tail leaves a clean chain).
 */
export function verify(db: Db, options: VerifyOptions = {}): VerifyResult {
  // The digest first: it is written after commits, so the rows read next are at least as new as it is.
  let digest: Digest | undefined;
  let digestProblem: string | undefined;
  if (options.digestFile) {
    try {
      digest = readDigest(options.digestFile);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      digestProblem = e.code === 'ENOENT' ? `digest file ${options.digestFile} is missing` : `digest file ${options.digestFile}: ${e.message}`;
    }
    // A rewritten chain needs a rewritten digest: without the key, it cannot carry a valid signature.
    if (digest && options.key && !macMatches(options.key, digest)) {
      digestProblem = digest.mac
        ? `digest file ${options.digestFile} carries a signature the audit key did not make (rewritten, or another key)`
        : `digest file ${options.digestFile} is not signed, but there is an audit key (rewritten, or written without audit.keyFile)`;
      digest = undefined;
    }
  }

  let rows = 0;
  let pending = 0;
  let prevId = 0;
  let prevHash = GENESIS_HASH;
  let firstBroken: ChainBreak | undefined;
  let upToDigest = 0;
  let hashAtDigest: string | undefined;
  // One statement: one consistent snapshot. Synchronous, so the connection is busy only for this call.
  for (const r of db.prepare('SELECT * FROM audit ORDER BY id').iterate() as IterableIterator<DbAuditRow>) {
    rows++;
    if (r.outcome === 'pending') pending++;
    if (digest && r.id <= digest.lastId) {
      upToDigest++;
      if (r.id === digest.lastId) hashAtDigest = r.hash;
    }
    if (!firstBroken) firstBroken = checkRow(r, prevId, prevHash);
    prevId = r.id;
    prevHash = r.hash;
  }

  if (!firstBroken && digestProblem && rows > 0) firstBroken = { id: 0, kind: 'digest', reason: digestProblem };
  if (!firstBroken && digest) {
    if (prevId < digest.lastId || upToDigest < digest.count) {
      firstBroken = {
        id: Math.min(prevId, digest.lastId) + 1,
        kind: 'truncated',
        reason: `the log ends at row ${prevId} with ${upToDigest} rows up to id ${digest.lastId}, but the digest of ${digest.at} vouches for ${digest.count} rows up to id ${digest.lastId} (rows cut off the tail)`,
      };
    } else if (upToDigest > digest.count) {
      firstBroken = { id: digest.lastId, kind: 'digest', reason: `${upToDigest} rows up to id ${digest.lastId}, but the digest of ${digest.at} says ${digest.count} (rows inserted)` };
    } else if (hashAtDigest !== digest.lastHash) {
      firstBroken = {
        id: digest.lastId,
        kind: 'digest',
        reason: `row ${digest.lastId}: hash differs from the digest of ${digest.at} (the chain was rewritten up to there)`,
      };
    }
  }
  return { ok: !firstBroken, rows, pending, lastId: prevId, ...(firstBroken ? { firstBroken } : {}), ...(digest ? { digest } : {}) };
}
