// The audit key: a secret kept outside the database that signs the digest
// file. The hash chain shows an edit to anyone, but whoever can write the
// database can also recompute every hash after an edit; the digest (last hash
// and row count, written elsewhere) catches that, and a signed digest cannot
// be rewritten to match without the key.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class AuditKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditKeyError';
  }
}

/** Where the highest digest number is kept: beside the key, as safe as it (a rollback is seen against it). */
export function sequenceFileOf(keyFile: string): string {
  return `${keyFile}.seq`;
}

/**
 * Read the key (64 hex characters). With `create`, a missing file is made with
 * a fresh random key, readable by its owner only, and its sequence file beside
 * it says no digest was written yet (0): from then on, a missing sequence file
 * is a finding, not a fresh start. Returns whether it was created.
 */
export function loadAuditKey(path: string, options: { create?: boolean } = {}): { key: Buffer; created: boolean } {
  if (!existsSync(path)) {
    if (!options.create) throw new AuditKeyError(`audit.key_file: ${path} does not exist`);
    mkdirSync(dirname(path), { recursive: true });
    const key = randomBytes(32);
    // wx: never overwrite a key another process made a moment ago.
    try {
      writeFileSync(path, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      // wx: a sequence file kept from an earlier key stays (its digests no longer verify: a finding).
      try {
        writeFileSync(sequenceFileOf(path), '0\n', { mode: 0o600, flag: 'wx' });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      return { key, created: true };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new AuditKeyError(`audit.key_file: cannot create ${path}: ${(err as Error).message}`);
    }
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new AuditKeyError(`audit.key_file: cannot read ${path}: ${(err as Error).message}`);
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new AuditKeyError(`audit.key_file: ${path} must hold 64 hex characters (32 random bytes)`);
  return { key: Buffer.from(text, 'hex'), created: false };
}

/** The signature of a digest's fields (without `mac`). */
export function digestMac(key: Buffer, digest: { count: number; lastId: number; lastHash: string; at: string; seq?: number }): string {
  // The sequence number is signed too (digests before it had none), so a digest cannot be renumbered.
  const seq = digest.seq === undefined ? '' : `\n${digest.seq}`;
  return createHmac('sha256', key).update(`${digest.count}\n${digest.lastId}\n${digest.lastHash}\n${digest.at}${seq}`).digest('hex');
}

export function macMatches(key: Buffer, digest: { count: number; lastId: number; lastHash: string; at: string; seq?: number; mac?: string }): boolean {
  if (typeof digest.mac !== 'string' || !/^[0-9a-f]{64}$/.test(digest.mac)) return false;
  return timingSafeEqual(Buffer.from(digest.mac, 'hex'), Buffer.from(digestMac(key, digest), 'hex'));
}
