// Bearer tokens: created once (the secret is shown only then), stored as a
// SHA-256 hash, each mapped to a principal whose roles live in the policy table.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Db } from '../db/database.js';

export interface TokenInfo {
  name: string;
  principal: string;
  /** Where the device holding it speaks from ("in here"; from_area rules), or null. */
  area: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export class TokenError extends Error {}

const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
/** An area as device files name them: letters, digits, spaces and a few marks. */
export const AREA_RE = /^[\p{L}\p{N}][\p{L}\p{N} _.'-]{0,63}$/u;

function hash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** `revoked`: a token was revoked through this store (open streams of it end at once). */
export interface TokenEvents {
  revoked: [name: string];
}

export class TokenStore extends EventEmitter<TokenEvents> {
  private readonly insert;
  private readonly byHash;
  private readonly byName;
  private readonly used;
  private readonly revokeStmt;
  private readonly listStmt;

  private readonly activeStmt;

  constructor(db: Db) {
    super();
    this.setMaxListeners(0);
    this.activeStmt = db.prepare('SELECT revoked_at FROM tokens WHERE name = ?').pluck();
    this.insert = db.prepare('INSERT INTO tokens (name, principal, hash, created_at, area) VALUES (?, ?, ?, ?, ?)');
    this.byHash = db.prepare('SELECT * FROM tokens WHERE hash = ?');
    this.byName = db.prepare('SELECT * FROM tokens WHERE name = ?');
    this.used = db.prepare('UPDATE tokens SET last_used_at = ? WHERE name = ?');
    this.revokeStmt = db.prepare('UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL');
    this.listStmt = db.prepare('SELECT * FROM tokens ORDER BY created_at');
  }

  /** Create a token; returns the secret, which is never stored or shown again. */
  create(name: string, principal = `http:${name}`, area?: string): { secret: string; info: TokenInfo } {
    if (!NAME_RE.test(name)) throw new TokenError(`token name ${JSON.stringify(name)}: use letters, digits, _ . - (at most 64)`);
    if (area !== undefined && !AREA_RE.test(area.trim()))
      throw new TokenError(`area ${JSON.stringify(area)}: an area name has 1 to 64 letters, digits, spaces, _ . ' - (e.g. Kitchen, Living room)`);
    if (this.byName.get(name)) throw new TokenError(`a token named ${JSON.stringify(name)} exists already (revoke it first)`);
    const secret = `hearth_${randomBytes(24).toString('base64url')}`;
    this.insert.run(name, principal, hash(secret), new Date().toISOString(), area?.trim() ?? null);
    return { secret, info: this.info(name)! };
  }

  /**
   * A token row for an OAuth grant (src/auth/oauth.ts): listed and revoked like any token, but its stored hash
   * is of a secret nobody is given, so it is never a bearer token itself (the grant's own tokens are).
   */
  createForGrant(name: string, principal: string): TokenInfo {
    if (!NAME_RE.test(name)) throw new TokenError(`token name ${JSON.stringify(name)}: use letters, digits, _ . - (at most 64)`);
    this.insert.run(name, principal, hash(`unheld:${randomBytes(32).toString('base64url')}`), new Date().toISOString(), null);
    return this.info(name)!;
  }

  /** The principal of a valid token, or undefined. */
  verify(secret: string | undefined): TokenInfo | undefined {
    if (!secret?.startsWith('hearth_') || secret.length > 200) return undefined;
    const digest = hash(secret);
    const row = this.byHash.get(digest) as Record<string, string | null> | undefined;
    if (!row || row.revoked_at) return undefined;
    if (!timingSafeEqual(Buffer.from(String(row.hash)), Buffer.from(digest))) return undefined;
    this.used.run(new Date().toISOString(), row.name);
    return toInfo(row);
  }

  revoke(name: string): boolean {
    const revoked = this.revokeStmt.run(new Date().toISOString(), name).changes > 0;
    if (revoked) this.emit('revoked', name);
    return revoked;
  }

  /** Is the named token there and not revoked (another process may have revoked it)? */
  isActive(name: string): boolean {
    const revokedAt = this.activeStmt.get(name) as string | null | undefined;
    return revokedAt === null;
  }

  info(name: string): TokenInfo | undefined {
    const row = this.byName.get(name) as Record<string, string | null> | undefined;
    return row ? toInfo(row) : undefined;
  }

  list(): TokenInfo[] {
    return (this.listStmt.all() as Array<Record<string, string | null>>).map(toInfo);
  }
}

function toInfo(row: Record<string, string | null>): TokenInfo {
  return {
    name: String(row.name),
    principal: String(row.principal),
    area: row.area ?? null,
    createdAt: String(row.created_at),
    lastUsedAt: row.last_used_at ?? null,
    revokedAt: row.revoked_at ?? null,
  };
}
